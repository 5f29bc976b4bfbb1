/* control.h — the control plane: spawn, stop and approve across hosts.
 *
 * A gateway asked to spawn on (or stop an agent of) another host sends a
 * signed SPAWN (or STOP) to that host's control queue (fleet.control, key =
 * the host id) and keeps the caller's call waiting. The requester mints the
 * spawnId, which the target uses as the new agent's gid, so a SPAWN that
 * comes again (a retry, a redelivery, a replay) is answered from what the
 * target already knows and starts nothing new, also after its restart
 * (spawn.c's records in the store). The target answers with SPAWNED or
 * STOPPED to the requester's control queue: {gid, name, host, profile,
 * status} or {error}. A SPAWN is answered twice when it launches: pending
 * once the terminal is open, then ready (or the failure) when the agent
 * registers or its readyTimeoutS runs out.
 *
 * Every control delivery passes the receive checks first (version, the
 * signature under the pinned key of its host, not expired, the sender not
 * claimed by another host); one that fails, or that is malformed, is
 * refused with a log line and a counter, and dead-lettered.
 *
 * fabric.c owns this and hands it the deliveries of control.<host>; this
 * file publishes through fabric.c's one publish path (fl_control_ops).
 * Threading: loop thread only; nothing blocks. */
#ifndef FL_CONTROL_H
#define FL_CONTROL_H

#include <stddef.h>

#include "gateway/broker/broker.h"
#include "gateway/fabric/presence.h"
#include "gateway/gw.h"
#include "gateway/verbs/spawn.h"

typedef struct fl_control fl_control;

/* How the control plane publishes, set by fabric.c. */
typedef struct fl_control_ops {
  /* Signs env (host, v, ts filled by the caller) over body and publishes it
   * to fleet.control with key host, mandatory. req_id "" for an answer (a
   * failure is only logged), else the request whose waiting call hears of a
   * failure through fl_control_published. 0 or a negative code. */
  int (*emit)(void *ctx, const char *host, fl_envelope *env, const char *body, size_t len,
              const char *req_id);
} fl_control_ops;

/* New control plane for gw; ops borrowed, ctx passed to them; presence
 * (borrowed) says which hosts exist and who lives where. 0 or FL_ENOMEM. */
int fl_control_new(fl_gw *gw, const fl_control_ops *ops, void *ctx, fl_presence *presence,
                   fl_control **out);
/* Forgets pending requests (their calls were released with their sessions
 * or at shutdown) and frees c. NULL-safe; sets *c NULL. */
void fl_control_free(fl_control **c);

/* A delivery from control.<host> (lent for the call). Returns 0 when the
 * caller should ack it, 1 when it should dead-letter it (refused). */
int fl_control_receive(fl_control *c, const fl_broker_delivery *d);
/* The broker's outcome for request req_id's publish. */
void fl_control_published(fl_control *c, const char *req_id, int status, const char *why);

/* remote.h's spawn_remote, stop_remote and spawn_answer. */
int fl_control_spawn(fl_control *c, fl_client *cl, const char *host, const char *profile,
                     const char *name, const char *brief, double wait_s, fl_gw_cb cb, void *ctx,
                     fl_wait **wait, char *err, size_t errlen);
int fl_control_stop(fl_control *c, fl_client *cl, fl_entity *e, fl_gw_cb cb, void *ctx,
                    fl_wait **wait, char *err, size_t errlen);
/* remote.h's approve_remote: an APPROVE to e's host; *wait completes with
 * that host's APPROVED. */
int fl_control_approve(fl_control *c, fl_client *cl, fl_entity *e, const char *request_id,
                       const char *decision, const char *reason, fl_gw_cb cb, void *ctx,
                       fl_wait **wait, char *err, size_t errlen);
void fl_control_answer_spawn(fl_control *c, const fl_spawn_origin *o, const json_t *result,
                             const char *err);

/* Pure: parses a SPAWN body ({"profile", optional "name", "brief"}) into
 * borrowed pointers into *o (a new object the caller decrefs). 0, or
 * FL_EPROTO with err saying what is wrong. */
int fl_control_parse_spawn(const char *body, size_t len, json_t **o, const char **profile,
                           const char **name, const char **brief, char *err, size_t errlen);
/* Pure: parses an answer body: 0 with *result (new, an object with a gid
 * and a status) or err filled from its "error"; FL_EPROTO when it is
 * neither. */
int fl_control_parse_answer(const char *body, size_t len, json_t **result, char *err,
                            size_t errlen);

#endif
