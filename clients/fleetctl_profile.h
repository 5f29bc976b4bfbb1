/* fleetctl_profile.h — `fleetctl profile claude|opencode|codex`: prints a
 * ready spawn profile for an agent CLI, the files it needs (its MCP config
 * for fleet-mcp, its settings) and notes on what they do. */
#ifndef FL_FLEETCTL_PROFILE_H
#define FL_FLEETCTL_PROFILE_H

/* Prints the profile of agent ("claude", "opencode" or "codex") on stdout:
 * with json != 0 one object {profile, files:[{path, content}], notes:[]},
 * else the same for a reader. dir is where the files go (NULL: <fleet state
 * dir>/profiles/<agent>), cwd the agent's working directory (NULL: the
 * current one); relative paths are made absolute. Writes no file and needs
 * no fleetd. Returns an exit status (FL_EXIT_OK, FL_EXIT_FAIL, or
 * FL_EXIT_USAGE for an unknown agent). */
int fl_ctl_profile(const char *agent, const char *dir, const char *cwd, int json);

#endif
