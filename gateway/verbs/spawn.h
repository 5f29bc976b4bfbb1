/* spawn.h — agents started on this host from a spawn profile, and stopped.
 *
 * fl_gw_spawn (gw.h) mints the new agent's gid, opens a terminal for it
 * through the profile's backend (inject.h's open), and then waits for the
 * readiness gate: an MCP session attaching with FLEET_GID = that gid. The
 * core tells this file of every attach (fl_spawn_attached, this module's
 * entity_attached row in gateway.c) and closes what is left at shutdown
 * (fl_spawn_shutdown, its stop). fl_gw_stop closes a spawned
 * agent's terminal and takes it out of the roster for good.
 *
 * Internal to gateway/. Loop thread only; nothing blocks (the terminal is
 * opened and closed by child processes). */
#ifndef FL_SPAWN_H
#define FL_SPAWN_H

#include <jansson.h>

#include "common/ids.h"
#include "common/limits.h"
#include "gateway/config/gw_config.h"
#include "gateway/gw.h"

typedef struct fl_entity fl_entity;
typedef struct fl_spawn fl_spawn;

/* Who asked for a spawn from another host, so that its answers go back:
 * the SPAWN's host, msgId and traceId, and the spawner's gid and name there
 * (its brief comes from them). */
typedef struct fl_spawn_origin {
  char host[64];
  char msg_id[FL_ID_LEN];
  char trace_id[FL_ID_LEN];
  char by[FL_ID_LEN];
  char by_name[FL_MAX_NAME + 1];
  char spawn_id[FL_ID_LEN];
  int auth; /* enum fl_msg_auth: how host was proven (the SPAWN's form) */
} fl_spawn_origin;

/* A SPAWN from another host (control.c): launches profile on this host with
 * gid = spawn_id, on the default tmux server of fleetd's environment. Its
 * outcomes go back through fl_remote_spawn_answer: {.., status: pending}
 * once the terminal is open, then {.., status: ready} when the agent
 * registered, or the failure text. 0 when launched (answers follow), else
 * a negative code with err (nothing is open; the caller answers err). */
int fl_spawn_for_host(fl_gw *gw, const fl_spawn_origin *o, const char *spawn_id,
                      const char *profile, const char *name, const char *brief, char *err,
                      size_t errlen);

/* What this host knows of spawn gid, for a SPAWN that repeats a spawnId:
 * 1 with *result (a new {gid, name, host, profile, status}) or err set, or 0
 * when it never ran it. Reads the armed spawns, the roster and the store's
 * record, so it holds across a restart. */
int fl_spawn_known(fl_gw *gw, const char *gid, json_t **result, char *err, size_t errlen);
/* 1 when a spawn of this host waits for the agent with gid to register. */
int fl_spawn_pending(fl_gw *gw, const char *gid);

/* Authority comes from this host's config, never from what a session
 * says of itself. An entry of an authority list a (fl_gw_config) matches a
 * session name on host with role: "<host>" any session of host, "<name>@<host>"
 * that one, "role:<role>" a session of this host that declares role (pass
 * role NULL for a session of another host: its role is only its host's
 * say-so, so it never matches). 1 if some entry matches. */
int fl_authority_grants(const fl_gw *gw, const fl_authority *a, const char *name, const char *host,
                        const char *role);

/* May who (an entity of this or another host) stop local entity e? Its
 * spawner (remembered in the store), this host's operator (a local
 * fleetctl session: operator_session) and whom authority.stop names may;
 * nobody else, whatever role it declares. */
int fl_spawn_may_stop(fl_gw *gw, const fl_entity *who, int operator_session, const fl_entity *e);

/* May the session name on host (role as for fl_authority_grants) spawn
 * here? With authority.spawn unset, every local session and every pinned
 * host may (the setting before authority existed); with it set, this host's
 * operator and whom it names. */
int fl_spawn_may_spawn(fl_gw *gw, const char *name, const char *host, const char *role,
                       int operator_session);

/* Stops local entity e on who's behalf: closes the terminal fleetd opened
 * for it (none when it registered a pane of its own: that pane stays), takes
 * it out of the roster and the store, deletes its inbox and tells other
 * hosts it is gone (through remote.h). Result {gid, name, host, status:
 * stopped, terminalClosed}; a caller who may not stop it gets FL_EINVAL
 * with err saying who may (counted: stops_refused). */
int fl_spawn_stop(fl_gw *gw, const fl_entity *who, int operator_session, fl_entity *e,
                  json_t **result, char *err, size_t errlen);

/* e has just attached (online, persisted): if a spawn waits for its gid,
 * the spawn completes (the caller hears `ready`; the brief goes to e as a
 * SEND from the spawner, with the msgId the result named as briefMsgId). */
void fl_spawn_attached(fl_gw *gw, fl_entity *e);

/* Shutdown: every spawn still waiting lets go (its terminal stays open);
 * run the loop afterwards. */
void fl_spawn_shutdown(fl_gw *gw);

#endif
