/* counters.c — the MCP layer's counter set (see counters.h).
 *
 * A plain array indexed by enum fl_mcp_counter; the names come from the same
 * X-macro list, so the two cannot drift. */
#include "mcp/counters.h"

#include "common/alloc.h"
#include "common/error.h"

#define FL_MCP_COUNTER_NAME(name, json) [FL_MCP_C_##name] = json,
static const char *const fl_mcp_counter_names[] = {FL_MCP_COUNTERS(FL_MCP_COUNTER_NAME)};
#undef FL_MCP_COUNTER_NAME
_Static_assert(sizeof fl_mcp_counter_names / sizeof fl_mcp_counter_names[0] == FL_MCP_C_COUNT,
               "every MCP counter needs exactly one name in FL_MCP_COUNTERS");

struct fl_mcp_counters {
  unsigned long long n[FL_MCP_C_COUNT];
};

fl_mcp_counters *fl_mcp_counters_new(void) { return fl_calloc(1, sizeof(fl_mcp_counters)); }

void fl_mcp_counters_free(fl_mcp_counters **c) {
  if (!c || !*c)
    return;
  fl_free(*c);
  *c = NULL;
}

void fl_mcp_counters_bump(fl_mcp_counters *c, enum fl_mcp_counter which) {
  if (c && (unsigned)which < FL_MCP_C_COUNT)
    c->n[which]++;
}

unsigned long long fl_mcp_counters_get(const fl_mcp_counters *c, enum fl_mcp_counter which) {
  return (c && (unsigned)which < FL_MCP_C_COUNT) ? c->n[which] : 0;
}

const char *fl_mcp_counters_name(enum fl_mcp_counter which) {
  return (unsigned)which < FL_MCP_C_COUNT ? fl_mcp_counter_names[which] : "unknown";
}

int fl_mcp_counters_to_json(const fl_mcp_counters *c, json_t *obj) {
  if (!json_is_object(obj))
    return FL_EINVAL;
  for (int i = 0; i < FL_MCP_C_COUNT; i++) {
    json_t *v = json_integer((json_int_t)fl_mcp_counters_get(c, (enum fl_mcp_counter)i));
    if (!v || json_object_set_new(obj, fl_mcp_counter_names[i], v) != 0)
      return FL_ENOMEM;
  }
  return 0;
}
