/* approve.h — a worker blocked on a permission request, seen by its spawner
 * and answered with fleet_approve.
 *
 * A worker's PermissionRequest hook (hook.c) hands its request here
 * (fl_approve_request). fleet mints a requestId (a random UUID: it cannot
 * be guessed), sends the worker's spawner a BLOCKED message ({requestId,
 * tool, input, expiresAt, answer}: held for its poll, nudged like any
 * message; to a spawner on another host it travels like any message), and
 * parks the hook's call (hook_park.h) for hooks.approveTimeoutMs. The
 * spawner's fl_gw_approve (gw.h) answers it: the parked call returns
 * {action: allow | deny, reason?} and fleet-hook gives the agent its
 * decision. When no decision comes in time the call answers {action: none}
 * and the agent's own dialog stays, as if fleet were absent. A worker with
 * no spawner in the roster gets "none" at once: nobody would hear of it.
 *
 * Who may decide is set by the worker's host (fl_approve_decide), never by
 * what the caller says of itself: the spawner that spawned the worker (on
 * the host it spawned from), this host's operator (fleetctl), and whom
 * authority.approve names. A decision from another host comes through the
 * control plane (an APPROVE, signed by that host; fabric/control.c) and is
 * checked the same way. A requestId is answered once: a repeat (a replayed
 * APPROVE included) is refused and counted, and so are a decision after
 * the request ended and one from someone not entitled. fleetctl status
 * shows the counts under "approvals".
 *
 * Internal to gateway/. Loop thread only; nothing blocks. */
#ifndef FL_APPROVE_H
#define FL_APPROVE_H

#include <jansson.h>
#include <stddef.h>

#include "gateway/gw.h"

typedef struct fl_entity fl_entity;

/* A PermissionRequest hook of local entity e for tool (may be NULL), its
 * input summary input (may be NULL), from fleet-hook's session c. 0 with
 * *wait set (the answer comes through cb) or *result set ({action: none}:
 * nobody to ask), or a negative code with err. */
int fl_approve_request(fl_gw *gw, fl_client *c, fl_entity *e, const char *tool, const char *input,
                       fl_gw_cb cb, void *ctx, json_t **result, fl_wait **wait, char *err,
                       size_t errlen);

/* A decision ("allow" or "deny", reason may be NULL) on request request_id
 * of local entity e, from who (an entity of this host, or a stand-in for
 * one of another host: who->remote set, its host the one that signed)
 * with operator_session as fl_ident's. 0 with *result {gid, name, host,
 * requestId, decision, status: allowed | denied}; FL_EINVAL (not entitled,
 * or a bad decision), FL_ENOTFOUND (no such request of e), FL_EDUP
 * (answered already), FL_ETIMEDOUT (it ended unanswered), each with err
 * saying which and counted. */
int fl_approve_decide(fl_gw *gw, const fl_entity *who, int operator_session, fl_entity *e,
                      const char *request_id, const char *decision, const char *reason,
                      json_t **result, char *err, size_t errlen);

/* The module row's members (gateway.c). */
json_t *fl_approve_describe(fl_gw *gw);
void fl_approve_free(fl_gw *gw);

#endif
