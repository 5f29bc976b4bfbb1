/* inject.c — the table of terminal backends (inject.h).
 *
 * The one place that lists them; a caller finds a backend by name and then
 * uses only its operations. */
#include "gateway/inject/inject.h"

#include <string.h>

static const fl_inject_type *const fl_inject_types[] = {
    &fl_inject_tmux,
    &fl_inject_exec,
    &fl_inject_none,
};

const fl_inject_type *fl_inject_lookup(const char *name) {
  for (size_t i = 0; name && i < sizeof fl_inject_types / sizeof fl_inject_types[0]; i++)
    if (strcmp(fl_inject_types[i]->name, name) == 0)
      return fl_inject_types[i];
  return NULL;
}

const char *fl_inject_state_name(enum fl_inject_state state) {
  switch (state) {
  case FL_INJECT_READY:
    return "ready";
  case FL_INJECT_BUSY:
    return "busy";
  case FL_INJECT_DRAFT:
    return "draft";
  case FL_INJECT_GONE:
    return "gone";
  default:
    return "unknown";
  }
}
