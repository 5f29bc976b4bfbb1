/* spawn.h — agents started on this host from a spawn profile, and stopped.
 *
 * fl_gw_spawn (gw.h) mints the new agent's gid, opens a terminal for it
 * through the profile's backend (inject.h's open), and then waits for the
 * readiness gate: an MCP session attaching with FLEET_GID = that gid. The
 * core's session.c tells this file of every attach (fl_spawn_attached);
 * gw.c closes what is left at shutdown. fl_gw_stop closes a spawned
 * agent's terminal and takes it out of the roster for good.
 *
 * Internal to gateway/. Loop thread only; nothing blocks (the terminal is
 * opened and closed by child processes). */
#ifndef FL_SPAWN_H
#define FL_SPAWN_H

#include "gateway/gw.h"

typedef struct fl_entity fl_entity;
typedef struct fl_spawn fl_spawn;

/* e has just attached (online, persisted): if a spawn waits for its gid,
 * the spawn completes (the caller hears `ready`, the brief is held for e). */
void fl_spawn_attached(fl_gw *gw, fl_entity *e);

/* Shutdown: every spawn still waiting lets go (its terminal stays open);
 * run the loop afterwards. */
void fl_spawn_shutdown(fl_gw *gw);

#endif
