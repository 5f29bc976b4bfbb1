/* remote.h — the gateway core's one door to the cross-host side.
 *
 * The core (gw.c, session.c, roster.c, router.c, wait.c, nudge.c) never
 * calls the cross-host code (fabric.c, presence.c, inbound.c) by name. A
 * cross-host backend, once started, registers a table of operations on the
 * gateway with fl_gw_set_remote; the core reaches it only through the
 * fl_remote_* calls below, which read "no broker" when nothing is
 * registered (single-host mode). The cross-host side may call the core's
 * internal API (gw_internal.h) freely; the dependency runs one way.
 *
 * Which backend starts is decided in one place, the composition root's
 * module table (gateway/gateway.c), in the manner of redis's connection
 * types: a new kind of link is a new row.
 *
 * Threading: everything here runs on the loop thread; no call blocks. */
#ifndef FL_REMOTE_H
#define FL_REMOTE_H

#include <jansson.h>
#include <stddef.h>

#include "common/json_writer.h"
#include "gateway/gw.h"
#include "gateway/store/store.h"

typedef struct fl_entity fl_entity;
struct fl_spawn_origin; /* spawn.h */

/* What a cross-host backend does for the core. ctx is the backend's own
 * state, given to fl_gw_set_remote. Every member must be set, but hosts. */
typedef struct fl_remote_ops {
  /* Hands m (filled by the core) to dst, an entity of another host. On
   * success *wait is a CONFIRM waiter of c: once the next hop took the
   * message it completes with on_confirm, or, when then_wait_s > 0, turns
   * into a SEND waiter for the reply. on_confirm is stolen either way; on
   * failure no callback runs and err says why. */
  int (*publish)(void *ctx, fl_client *c, fl_entity *dst, const fl_msg *m, double then_wait_s,
                 json_t *on_confirm, fl_gw_cb cb, void *cb_ctx, fl_wait **wait, char *err,
                 size_t errlen);
  /* Hands a broadcast (group NULL = everyone) once to every other host;
   * completes like publish with then_wait_s 0. */
  int (*broadcast)(void *ctx, fl_client *c, const fl_msg *m, const char *group, json_t *on_confirm,
                   fl_gw_cb cb, void *cb_ctx, fl_wait **wait, char *err, size_t errlen);
  /* A local entity came online, changed or went offline. */
  void (*entity_changed)(void *ctx, fl_entity *e);
  /* A held message was handed to its client: settle what carried it. */
  void (*drained)(void *ctx, const char *to_gid, const char *msg_id);
  /* The sweeper dropped expired held messages: settle what carried them. */
  void (*sweep)(void *ctx);
  /* "online", "offline" or "unknown" for a remote entity (static string). */
  const char *(*status)(void *ctx, const fl_entity *e);
  /* Every other (pinned) host heard from, with its spawn profiles, for
   * fl_gw_list: each a {host, self, status, profiles} written to w, in the
   * array its caller opened (errors stay in w). The one optional member:
   * unset reads as no other host. */
  void (*hosts)(void *ctx, fl_jw *w);
  /* The link's state for fl_gw_status: a new object, or NULL. */
  json_t *(*describe)(void *ctx);
  /* Did a host that is not pinned announce an entity called name? Its
   * presence was refused unread, so this is a hint for an error message,
   * never a route: 1 with host (hostlen bytes) set, else 0. */
  int (*unpinned_claim)(void *ctx, const char *name, char *host, size_t hostlen);
  /* A local entity left for good (fleet_stop): delete its inbox. Optional:
   * unset reads as nothing to delete. */
  void (*remove_inbox)(void *ctx, const char *gid);
  /* Hands a signed claim (a room item of #claims, len bytes) to every other
   * gateway (fleet.claims). Optional: unset reads as no broker. */
  int (*publish_claim)(void *ctx, const char *msg_id, const char *item, size_t len);
  /* The control plane (each optional: unset reads as "no broker").
   * spawn_remote asks host's gateway to spawn from its profile (arguments
   * as fl_gw_spawn): *wait is set and completes with {gid, name, host,
   * profile, status} or the error that host gave. stop_remote asks the
   * gateway of remote entity e to stop it; *wait completes with {gid, name,
   * host, status: stopped} or the refusal. */
  int (*spawn_remote)(void *ctx, fl_client *c, const char *host, const char *profile,
                      const char *name, const char *brief, double wait_s, fl_gw_cb cb, void *cb_ctx,
                      fl_wait **wait, char *err, size_t errlen);
  int (*stop_remote)(void *ctx, fl_client *c, fl_entity *e, fl_gw_cb cb, void *cb_ctx,
                     fl_wait **wait, char *err, size_t errlen);
  /* approve_remote hands c's decision on permission request request_id of
   * remote entity e to e's gateway (an APPROVE); *wait completes with that
   * gateway's {gid, name, host, requestId, decision, status} or refusal. */
  int (*approve_remote)(void *ctx, fl_client *c, fl_entity *e, const char *request_id,
                        const char *decision, const char *reason, fl_gw_cb cb, void *cb_ctx,
                        fl_wait **wait, char *err, size_t errlen);
  /* A spawn another host asked for has news: result (borrowed; status
   * pending or ready) or err. Goes back to o->host. */
  void (*spawn_answer)(void *ctx, const struct fl_spawn_origin *o, const json_t *result,
                       const char *err);
  /* Hands a receipt of the forward path (m->kind INJECTED or FAILED, m->to_gid
   * the brief's sender on another host) to the link without waiting for a
   * confirm. 0 once handed on, else a negative code (try again later).
   * Optional: unset reads as no link. */
  int (*receipt)(void *ctx, const fl_msg *m);
  /* Hands m to dst, an entity of another host, without waiting for the
   * broker: for the notices a turn sends back (NO_WAITER, TOO_LATE, the
   * verdict on an answer, the copies of a parallel brief), which no call
   * waits on. done (NULL = nobody asks) runs once with the broker's
   * answer, only when post returned 0. 0, or a negative code with err
   * saying why. Optional: unset reads as no broker. */
  int (*post)(void *ctx, fl_entity *dst, const fl_msg *m,
              void (*done)(void *done_ctx, int status, const char *why), void *done_ctx, char *err,
              size_t errlen);
  /* Runs one fleet.dlq command (broker.h's fl_broker_dlq); dlq.c's
   * fl_dlq_done gets the outcome with req. Optional: unset reads as no
   * broker (FL_EBROKER). */
  int (*dlq)(void *ctx, int op, const char *msg_id, long long older_than_ms, void *req);
  /* The gateway is shutting down: close handles; no callback after the
   * loop has run once more. */
  void (*stop)(void *ctx);
  /* Frees ctx (after stop and a loop run). */
  void (*free)(void *ctx);
} fl_remote_ops;

/* A kind of cross-host link, as the composition root (gateway/gateway.c)
 * lists them in its module table. */
typedef struct fl_remote_type {
  const char *name; /* "broker" */
  /* Starts the backend for gw and registers it with fl_gw_set_remote. 0,
   * or a negative code with err saying what to fix (nothing registered). */
  int (*start)(fl_gw *gw, char *err, size_t errlen);
} fl_remote_type;

/* Registers the backend on gw (ops is borrowed for gw's life, ctx until
 * ops->free). Called by a backend's start, at most once. */
void fl_gw_set_remote(fl_gw *gw, const fl_remote_ops *ops, void *ctx);

/* Starts backend t when gw's configuration names a broker URI and no
 * backend is registered yet; else does nothing. 0, or a negative code with
 * err saying what to fix. */
int fl_remote_start(fl_gw *gw, const fl_remote_type *t, char *err, size_t errlen);
/* After the modules started: FL_ECONFIG (err says why) when the
 * configuration names a broker and no backend registered, else 0. */
int fl_remote_check(fl_gw *gw, char *err, size_t errlen);

/* 1 when a backend is registered (other hosts exist), else 0. */
int fl_remote_on(const fl_gw *gw);

/* The core's calls into the backend; without one, each is a no-op or says
 * that no broker is configured. Arguments as in fl_remote_ops. */
int fl_remote_publish(fl_gw *gw, fl_client *c, fl_entity *dst, const fl_msg *m, double then_wait_s,
                      json_t *on_confirm, fl_gw_cb cb, void *ctx, fl_wait **wait, char *err,
                      size_t errlen);
int fl_remote_broadcast(fl_gw *gw, fl_client *c, const fl_msg *m, const char *group,
                        json_t *on_confirm, fl_gw_cb cb, void *ctx, fl_wait **wait, char *err,
                        size_t errlen);
void fl_remote_entity_changed(fl_gw *gw, fl_entity *e);
void fl_remote_drained(fl_gw *gw, const char *to_gid, const char *msg_id);
void fl_remote_sweep(fl_gw *gw);
const char *fl_remote_status(fl_gw *gw, const fl_entity *e);
json_t *fl_remote_describe(fl_gw *gw);
int fl_remote_dlq(fl_gw *gw, int op, const char *msg_id, long long older_than_ms, void *req);
/* The other hosts (the hosts member above), written to w, or as a new
 * array (empty without a backend; NULL on out-of-memory). */
void fl_remote_hosts_write(fl_gw *gw, fl_jw *w);
json_t *fl_remote_hosts(fl_gw *gw);
int fl_remote_unpinned_claim(fl_gw *gw, const char *name, char *host, size_t hostlen);
void fl_remote_remove_inbox(fl_gw *gw, const char *gid);
/* 0 when handed on (or no broker: nothing to do), else a negative code. */
int fl_remote_publish_claim(fl_gw *gw, const char *msg_id, const char *item, size_t len);
int fl_remote_spawn(fl_gw *gw, fl_client *c, const char *host, const char *profile,
                    const char *name, const char *brief, double wait_s, fl_gw_cb cb, void *ctx,
                    fl_wait **wait, char *err, size_t errlen);
int fl_remote_stop_agent(fl_gw *gw, fl_client *c, fl_entity *e, fl_gw_cb cb, void *ctx,
                         fl_wait **wait, char *err, size_t errlen);
int fl_remote_approve(fl_gw *gw, fl_client *c, fl_entity *e, const char *request_id,
                      const char *decision, const char *reason, fl_gw_cb cb, void *ctx,
                      fl_wait **wait, char *err, size_t errlen);
void fl_remote_spawn_answer(fl_gw *gw, const struct fl_spawn_origin *o, const json_t *result,
                            const char *err);
int fl_remote_receipt(fl_gw *gw, const fl_msg *m);
int fl_remote_post(fl_gw *gw, fl_entity *dst, const fl_msg *m,
                   void (*done)(void *done_ctx, int status, const char *why), void *done_ctx,
                   char *err, size_t errlen);
void fl_remote_stop(fl_gw *gw);
void fl_remote_free(fl_gw *gw);

#endif
