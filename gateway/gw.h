/* gw.h — the gateway core: the one narrow header the MCP layer calls into.
 *
 * The gateway owns the roster of entities on this host, the durable hold
 * store, the waiting calls (a send waiting for its reply, a long poll) and the
 * nudges. A frontend (the MCP server in mcp/) attaches one fl_client per
 * session and calls the verbs below from the loop thread. Nothing here blocks
 * on the network; store calls are local SQLite commits.
 *
 * With a broker configured, the roster also holds the entities other
 * gateways announce, and a message for one of them is published to its
 * inbox on the broker (fabric.c, behind remote.h); the verbs below are the
 * same either way.
 *
 * Results are jansson objects shaped as the tool outputs in schema/tools.json.
 * Verbs that may wait return either a result now or a waiter whose callback
 * runs later, exactly once, unless the waiter is cancelled first (then it
 * never runs). If a verb fails, no callback runs and err holds a message that
 * says what to fix. */
#ifndef FL_GW_H
#define FL_GW_H

#include <jansson.h>
#include <stddef.h>
#include <uv.h>

#include "common/json_writer.h"
#include "common/limits.h"

typedef struct fl_gw fl_gw;
typedef struct fl_client fl_client;
typedef struct fl_wait fl_wait;

/* Who a session says it is (from fleet-mcp's environment). All strings are
 * borrowed for the call. name NULL = an anonymous session (fleetctl status,
 * raw sockets): it can list and ping but not send or receive. */
typedef struct fl_ident {
  const char *name;
  const char *role;
  const char *gid;         /* pre-minted gid of a spawned worker, or NULL */
  const char *pane;        /* tmux pane id (%N), or NULL */
  const char *tmux_socket; /* tmux server socket path, or NULL */
  const char *groups[16];
  size_t ngroups;
  int groups_given;     /* 0: keep the entity's groups (role NULL: keep its role) */
  const char *coord_id; /* a lead's coordId (FLEET_COORD_ID), or NULL: <name>@<fleet> */
  long pid;
  /* This host's operator: a session that introduced itself as fleetctl on
   * the socket (which admits only the owning uid). It may stop any local
   * agent and spawn; see spawn.h. */
  int operator_session;
} fl_ident;

/* A held message, borrowed for one callback: every string NUL-terminated,
 * in_reply_to "" when it answers nothing. */
typedef struct fl_msg_view {
  const char *msg_id;
  const char *kind; /* SEND, REPLY, BROADCAST */
  const char *from_gid;
  const char *from_name;
  const char *trace_id;
  const char *in_reply_to;
  long long ts_ms; /* accepted at, ms since epoch */
  const char *content;
  size_t content_len;
} fl_msg_view;

typedef void (*fl_gw_held_cb)(void *ctx, const fl_msg_view *m);

/* Callbacks from the gateway into a session. */
typedef struct fl_client_ops {
  /* A nudge for this session: data (stolen) becomes the payload of an MCP
   * notifications/message. */
  void (*notify)(void *ctx, json_t *data);
  /* Optional (NULL = none): a message was just held for this session and no
   * waiting call took it. It stays held until a poll drains it. */
  fl_gw_held_cb held;
} fl_client_ops;

/* fl_gw_new, which creates the gateway, is the composition root's
 * (gateway/gateway.h). */
/* Finishes every waiting call now (sends read "pending", polls return what
 * is held) and closes the gateway's handles; run the loop afterwards, then
 * fl_gw_free. */
void fl_gw_shutdown(fl_gw *gw);
/* Frees everything. NULL-safe; sets *gw to NULL. */
void fl_gw_free(fl_gw **gw);

/* Registers a session. On success *out is the client (owned by the gateway
 * until fl_gw_detach). FL_ENAMETAKEN when a live session holds the name,
 * FL_EINVAL for a malformed identity; err says which and what to do. */
int fl_gw_attach(fl_gw *gw, const fl_ident *id, const fl_client_ops *ops, void *ctx,
                 fl_client **out, char *err, size_t errlen);
/* Ends a session: cancels its waiting calls (their callbacks never run) and
 * marks its entity offline. NULL-safe; sets *c to NULL. */
void fl_gw_detach(fl_gw *gw, fl_client **c);

/* The entity a session speaks for: gid and name, or NULL for anonymous. */
const char *fl_client_gid(const fl_client *c);
const char *fl_client_name(const fl_client *c);

/* A waiting call's outcome: result (stolen) on success, else NULL and err
 * (borrowed for the call) says what failed and what to do. Both NULL: the
 * result was written as JSON into the out its call gave (fl_gw_wait_out). */
typedef void (*fl_gw_cb)(void *ctx, json_t *result, const char *err);
/* Where w's result may be written as JSON rather than built as a tree: a
 * long poll's messages and a send's reply are (the hot path: no tree that
 * copies each body, then a dump of it), other results stay trees. out
 * (borrowed) must outlive w; it is written only just before the callback,
 * which then gets result and err NULL. NULL-safe. */
void fl_gw_wait_out(fl_wait *w, fl_json_out *out);

/* Each returns 0 with *result (new reference) set, or 0 with *wait set and
 * the callback to come, or a negative code with err filled. A recipient
 * (`to`, or poll's `from`) is a gid, a name or name@host: FL_ENOTFOUND when
 * nobody has it, FL_EAMBIGUOUS when a bare name is on more than one host
 * (err lists each name@host), FL_EUNPINNED when it is on (or names) a host
 * whose key is not pinned here (err says how to pin it). */
int fl_gw_list(fl_gw *gw, fl_client *c, json_t **result);
/* fleet_list's result written as compact JSON (gateway/core/list.c says its
 * shape), with its escaped text: 0 with *out filled (the caller frees it,
 * fl_json_out_free), or FL_ENOMEM, or FL_ETOOBIG past FL_MAX_RESULT_JSON.
 * fl_gw_list is the same result as a tree. */
int fl_gw_list_json(fl_gw *gw, fl_client *c, fl_json_out *out);
json_t *fl_gw_status(fl_gw *gw);
/* Where fleetctl status's whole JSON comes from: the layer that owns every
 * counter (mcp/server.h's fl_server_status adds the sessions' and tool
 * calls'). The dashboard and /metrics read it; until one is set, they read
 * fl_gw_status. fn may be NULL (back to fl_gw_status). */
typedef json_t *(*fl_gw_status_fn)(void *ctx);
void fl_gw_set_status_source(fl_gw *gw, fl_gw_status_fn fn, void *ctx);
/* The longest this gateway makes a call wait, for a client that bounds its
 * own wait on the answer (fleetctl): {maxWaitS: a wait_s is cut to it,
 * briefS: a send to a worker in a terminal waits up to this for word of its
 * typing before its own wait_s, stopS: a stop of another host's agent}. A
 * new object. */
json_t *fl_gw_bounds(fl_gw *gw);
int fl_gw_send(fl_gw *gw, fl_client *c, const char *to, const char *content, double wait_s,
               fl_gw_cb cb, void *ctx, json_t **result, fl_wait **wait, char *err, size_t errlen);
int fl_gw_reply(fl_gw *gw, fl_client *c, const char *to, const char *content,
                const char *in_reply_to, fl_gw_cb cb, void *ctx, json_t **result, fl_wait **wait,
                char *err, size_t errlen);
/* A poll answered at once is written into out when out is given (then
 * *result stays NULL), else built as *result. */
int fl_gw_poll(fl_gw *gw, fl_client *c, const char *from, double wait_s, size_t max, fl_gw_cb cb,
               void *ctx, fl_json_out *out, json_t **result, fl_wait **wait, char *err,
               size_t errlen);
int fl_gw_broadcast(fl_gw *gw, fl_client *c, const char *group, const char *content, fl_gw_cb cb,
                    void *ctx, json_t **result, fl_wait **wait, char *err, size_t errlen);
/* Parallel briefs: the same content to each of the nto (2..FL_MAX_FANOUT)
 * recipients in to, as separate messages sharing one traceId. Any recipient
 * that does not resolve fails the call before anything is sent (err names
 * it). Waits up to wait_s for every reply; the result is {traceId, status:
 * replied | pending | sent, replies: [{from, msgId, content, ts}] in arrival
 * order, pending: [{to, msgId}]}. A reply after the wait is held for a poll. */
int fl_gw_send_many(fl_gw *gw, fl_client *c, const char *const *to, size_t nto, const char *content,
                    double wait_s, fl_gw_cb cb, void *ctx, json_t **result, fl_wait **wait,
                    char *err, size_t errlen);
/* Asks `to` a question mid-turn and waits up to wait_s (<= 0: the default)
 * for the answer: {turnId, traceId, to, status: answered (with answer and
 * from) | no_waiter | expired}. Live only: never held, a restart forgets it. */
int fl_gw_ask(fl_gw *gw, fl_client *c, const char *to, const char *question, double wait_s,
              fl_gw_cb cb, void *ctx, json_t **result, fl_wait **wait, char *err, size_t errlen);
/* Answers the ask turn_id put to c: {turnId, traceId, to, msgId, status:
 * sent | too_late}. too_late: the turn no longer waited, and the answer was
 * dropped. FL_ENOTFOUND for a turn never asked of c here. */
int fl_gw_answer(fl_gw *gw, fl_client *c, const char *turn_id, const char *content, fl_gw_cb cb,
                 void *ctx, json_t **result, fl_wait **wait, char *err, size_t errlen);
/* Sends content to another fleet's lead by its coordId, through the
 * coordinator's mailboxes (config "coordinator"); waits up to wait_s for
 * its answer. {msgId, traceId, coordId, status: sent | replied | pending}.
 * in_reply_to (NULL: the newest COORD from that lead) is what it answers.
 * Only a lead may; FL_ENOTFOUND for a coordId no lead announced; FL_EBROKER
 * while the coordinator is unreachable or not configured. */
int fl_gw_coord_send(fl_gw *gw, fl_client *c, const char *coord_id, const char *content,
                     const char *in_reply_to, double wait_s, fl_gw_cb cb, void *ctx,
                     json_t **result, fl_wait **wait, char *err, size_t errlen);
/* 1 when ref (a coordId, or the gid a COORD message came from) names a lead
 * on the coordinator and nobody in the roster, so fleet_reply answers it
 * there; else 0. */
int fl_gw_coord_owns(fl_gw *gw, const char *ref);

/* Calls cb for each message held for c now, oldest first, at most max,
 * without draining any. 0, or the store's code. */
int fl_gw_each_held(fl_gw *gw, fl_client *c, size_t max, fl_gw_held_cb cb, void *ctx);

/* Starts an agent from spawn profile `profile` on this host (host NULL or
 * this host's id), or asks host's gateway to (through the broker's control
 * plane, remote.h): name NULL = <profile>-<n>.
 * Waits up to wait_s seconds (< 0 = the profile's readyTimeoutS, capped at
 * FL_MAX_WAIT_S; for another host FL_MAX_WAIT_S) for it to register; the result is {gid, name,
 * host, profile, status: ready | pending}. brief (may be NULL) is held for the agent as a message
 * from c once it is ready. Needs a named session. */
int fl_gw_spawn(fl_gw *gw, fl_client *c, const char *profile, const char *host, const char *name,
                const char *brief, double wait_s, fl_gw_cb cb, void *ctx, json_t **result,
                fl_wait **wait, char *err, size_t errlen);
/* Stops agent `to`: closes its terminal, takes it out of the roster and the
 * store, deletes its inbox on the broker and tells other hosts it is gone.
 * An agent of another host is stopped by its gateway (a STOP through the
 * control plane; then *wait is set and cb answers). Only its spawner, the
 * operator or whom the agent's host's authority.stop names may (spawn.h).
 * Result {gid, name, host, status: stopped, terminalClosed}. */
int fl_gw_stop(fl_gw *gw, fl_client *c, const char *to, fl_gw_cb cb, void *ctx, json_t **result,
               fl_wait **wait, char *err, size_t errlen);
/* Node identity and pinned peers (fleetctl identity / peer). */
/* fleetctl dlq: op "list", "show" (id: a msgId), "replay" (id) or "purge"
 * (older_than_s > 0: only what died longer ago) on fleet.dlq, through the
 * broker link (dlq.c). Answers later through cb, like fl_gw_send with a
 * wait; FL_EBROKER at once in single-host mode or while the link is
 * down. */
int fl_gw_dlq(fl_gw *gw, fl_client *c, const char *op, const char *id, double older_than_s,
              fl_gw_cb cb, void *ctx, fl_wait **wait, char *err, size_t errlen);

/* What an agent's hook reported (fleet/hook, from clients/fleet-hook.c)
 * for the local entity gid: event as the agent names it, hook the summary
 * of its input ({sessionId?, notificationType?, message?, tool?, input?};
 * borrowed, may be NULL). Updates the entity's activity (verbs/hook.h),
 * except for a waiter's reconnect (reconnect: it asks again after a fleetd
 * restart, and its event is old news), which is only parked.
 * The answer is {action, text?, handoff?} for fleet-hook to answer the hook
 * with: now in *result, or, for the waiter of an idle session (wake), later
 * through cb (*wait set; the call is parked on c: verbs/hook_park.h; a
 * permission request waiting for a lead's fleet_approve, or the waiter
 * until something is handed to it, a newer waiter takes over, or
 * FL_HOOK_WAKE_S). An answer with
 * "handoff" carries a brief (verbs/hook_deliver.h): the caller takes that
 * member out, writes the rest, and calls fl_gw_hook_handed once with how
 * the write went. FL_ENOTFOUND when gid is no agent of this host. */
int fl_gw_hook(fl_gw *gw, fl_client *c, const char *gid, const char *event, int wake, int reconnect,
               json_t *hook, fl_gw_cb cb, void *ctx, json_t **result, fl_wait **wait, char *err,
               size_t errlen);
/* The answer that carried handoff was written to the hook's connection
 * (status 0), or could not be (a negative code): the brief in it ends
 * injected, or failed and never typed after. */
void fl_gw_hook_handed(fl_gw *gw, const char *handoff, int status);

/* fleet_approve: c's decision ("allow" or "deny", reason may be NULL) on
 * permission request request_id of worker `to` (a BLOCKED message gave
 * it). For a worker of this host *result is {gid, name, host, requestId,
 * decision, status: allowed | denied}; for one of another host the
 * decision goes through the control plane and *wait answers. Who may
 * decide is the worker's host's say (verbs/approve.h); FL_ENOTFOUND for an
 * unknown worker or requestId, FL_EDUP for one answered already,
 * FL_ETIMEDOUT for one that ended unanswered, FL_EINVAL for a bad decision
 * or a caller not entitled; err says which. */
int fl_gw_approve(fl_gw *gw, fl_client *c, const char *to, const char *request_id,
                  const char *decision, const char *reason, fl_gw_cb cb, void *ctx, json_t **result,
                  fl_wait **wait, char *err, size_t errlen);
/* fleetctl approvals: the permission requests of this host's workers that
 * wait for a decision, oldest first: {host, requests: [{requestId, gid,
 * name, tool, input, expiresAt, spawner: {gid, name, host}}]}; NULL when
 * out of memory. */
json_t *fl_gw_approvals(fl_gw *gw);

json_t *fl_gw_identity(fl_gw *gw);
json_t *fl_gw_peers(fl_gw *gw);
/* Pins host to the base64 Ed25519 key pk (url may be NULL) and saves the
 * pins. FL_EPINNED when another key is pinned for host. */
int fl_gw_peer_add(fl_gw *gw, const char *host, const char *pk, const char *url, char *err,
                   size_t errlen);
/* Unpins host and drops its entities from the roster (and the store's
 * memory of them) until it is pinned again and beats. FL_ENOTFOUND when
 * host is not pinned. */
int fl_gw_peer_remove(fl_gw *gw, const char *host, char *err, size_t errlen);
/* The operator's release of gid (`fleetctl gid release`): forgets which
 * host owns it (store_gids.h), so the next host to announce it owns it, and
 * sets owner to the host that did. FL_ENOTFOUND when no host owns it,
 * FL_EINVAL for a gid that is not a UUID; err says which. */
int fl_gw_gid_release(fl_gw *gw, const char *gid, char *owner, size_t ownerlen, char *err,
                      size_t errlen);

/* Rooms (room.h). With rooms off each answers {degraded: true}. room is a
 * roomId or a label. Results as the room tools in schema/tools.json. */
int fl_gw_room_register(fl_gw *gw, fl_client *c, const char *label, json_t **result, char *err,
                        size_t errlen);
int fl_gw_room_publish(fl_gw *gw, fl_client *c, const char *room, const char *msg_type,
                       json_t *payload, json_t **result, char *err, size_t errlen);
int fl_gw_room_watch(fl_gw *gw, fl_client *c, const char *room, long long after, double wait_s,
                     size_t max, fl_gw_cb cb, void *ctx, json_t **result, fl_wait **wait, char *err,
                     size_t errlen);
int fl_gw_room_sync(fl_gw *gw, fl_client *c, const char *room, fl_gw_cb cb, void *ctx,
                    json_t **result, fl_wait **wait, char *err, size_t errlen);
/* The pinned peers with their URL, last sync and drops by reason. */
json_t *fl_gw_room_peers(fl_gw *gw);
/* The registered rooms with their sizes and the peers' cursors. */
json_t *fl_gw_rooms(fl_gw *gw);

/* Claims (claims.h). resource is 1..128 bytes; the caller must be a named
 * session. claim: ttl_s 1..FL_CLAIM_MAX_TTL_S; with wait_s > 0 a tentative
 * answer waits out the settle window (at most wait_s). handoff: to is a gid,
 * a name or name@host. Results as the claim tools in schema/tools.json;
 * without rooms {degraded: true}. */
int fl_gw_claim(fl_gw *gw, fl_client *c, const char *resource, double ttl_s, double wait_s,
                fl_gw_cb cb, void *ctx, json_t **result, fl_wait **wait, char *err, size_t errlen);
int fl_gw_release(fl_gw *gw, fl_client *c, const char *resource, json_t **result, char *err,
                  size_t errlen);
int fl_gw_handoff(fl_gw *gw, fl_client *c, const char *resource, const char *to, json_t **result,
                  char *err, size_t errlen);
int fl_gw_claims(fl_gw *gw, fl_client *c, const char *resource, json_t **result, char *err,
                 size_t errlen);

/* Cancels a waiting call: its callback never runs. NULL-safe; sets *w NULL. */
void fl_gw_cancel(fl_gw *gw, fl_wait **w);

#endif
