/* fleetctl_hooks.h — the agent hooks that run fleet-hook: the settings
 * `fleetctl profile claude` writes, and `fleetctl hooks claude [--check
 * FILE]`, which prints them or tells whether a settings file has them
 * right. */
#ifndef FL_FLEETCTL_HOOKS_H
#define FL_FLEETCTL_HOOKS_H

#include <jansson.h>

/* Claude Code's "hooks" settings object running fleet_hook (an absolute
 * path, or the bare name): a new reference, or NULL when out of memory. */
json_t *fl_hooks_claude(const char *fleet_hook);

/* The absolute path of the fleet-hook beside fleetctl, else on PATH, else
 * the bare name, into out. */
void fl_hooks_find(char *out, size_t n);

/* `fleetctl hooks AGENT [--check FILE]`: without file, prints {"hooks": ...}
 * to merge into the agent's settings; with it, checks that file and prints
 * what is wrong (--json: {file, ok, problems:[...]}). Returns an exit
 * status: FL_EXIT_OK (right), FL_EXIT_FAIL (wrong or unreadable),
 * FL_EXIT_USAGE (an agent without hooks). */
int fl_ctl_hooks(const char *agent, const char *file, int json);

#endif
