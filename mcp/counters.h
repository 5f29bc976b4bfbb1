/* counters.h — what the MCP layer counts: requests, tool calls, sessions.
 *
 * One counter set per MCP server (mcp/server.c makes it; every session of
 * that server bumps it). The gateway counts messages, the broker and trust;
 * this set counts what only the MCP layer sees: lines that are not JSON-RPC,
 * tools/call outcomes, connections accepted, refused and dropped.
 * fleet/status merges them into the gateway's "counters" object under the
 * names below. Loop thread only; nothing here blocks. */
#ifndef FL_MCP_COUNTERS_H
#define FL_MCP_COUNTERS_H

#include <jansson.h>

/* The counters and their names in fleet/status, in one list: a counter cannot
 * be added without its name. */
#define FL_MCP_COUNTERS(X)                                                                         \
  X(REQUESTS_UNPARSABLE, "requests_unparsable")         /* lines that were not JSON */             \
  X(REQUESTS_INVALID, "requests_invalid")               /* not JSON-RPC, or before init */         \
  X(REQUESTS_UNKNOWN_METHOD, "requests_unknown_method") /* a method fleetd does not serve */       \
  X(REQUESTS_OVERSIZE, "requests_oversize")             /* lines over FL_MAX_LINE */               \
  X(CALLS, "calls")                                     /* every tools/call */                     \
  X(CALLS_UNKNOWN_TOOL, "calls_unknown_tool")           /* a tool not in tools/list */             \
  X(CALLS_BAD_ARGUMENTS, "calls_bad_arguments")         /* arguments failed the schema */          \
  X(SESSIONS_REFUSED, "sessions_refused")               /* wrong uid, full, or initialize */       \
  X(SESSIONS_ACCEPTED, "sessions_accepted")             /* connections accepted */                 \
  X(SESSIONS_DROPPED_SLOW, "sessions_dropped_slow")     /* over FL_MAX_OUTQ unread */              \
  X(SESSIONS_REFUSED_FDS, "sessions_refused_fds")       /* out of file descriptors */              \
  X(SESSIONS_RESUMED, "sessions_resumed")               /* fleet-mcp back after a lost link */     \
  X(RESULTS_OFF_SCHEMA, "results_off_schema") /* FLEET_CHECK_RESULTS=1: off outputSchema */

#define FL_MCP_COUNTER_ENUM(name, json) FL_MCP_C_##name,
enum fl_mcp_counter { FL_MCP_COUNTERS(FL_MCP_COUNTER_ENUM) FL_MCP_C_COUNT };
#undef FL_MCP_COUNTER_ENUM

typedef struct fl_mcp_counters fl_mcp_counters;

/* A zeroed set, or NULL when out of memory. */
fl_mcp_counters *fl_mcp_counters_new(void);
/* NULL-safe; sets *c to NULL. */
void fl_mcp_counters_free(fl_mcp_counters **c);

/* Adds one to counter which. NULL-safe (a session without a server, as in
 * the fuzz target, counts nothing). */
void fl_mcp_counters_bump(fl_mcp_counters *c, enum fl_mcp_counter which);
/* The current value of counter which (0 for a NULL set). */
unsigned long long fl_mcp_counters_get(const fl_mcp_counters *c, enum fl_mcp_counter which);
/* The name fleet/status shows for counter which. */
const char *fl_mcp_counters_name(enum fl_mcp_counter which);

/* Sets every counter of c into obj (borrowed; a JSON object) under its
 * name. Returns 0, FL_EINVAL when obj is not an object, or FL_ENOMEM. */
int fl_mcp_counters_to_json(const fl_mcp_counters *c, json_t *obj);

#endif
