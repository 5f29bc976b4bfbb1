/* hook_park.h — a fleet/hook call parked until fleet has an answer for the
 * agent's hook.
 *
 * Some hooks wait for fleet: a PermissionRequest for a lead's fleet_approve
 * (approve.c), the waiter of an idle session for its next message. Such a
 * call becomes a waiter of the session fleet-hook opened (wait.h, kind
 * FL_WAIT_HOOK) that ends exactly once:
 *   - fl_hook_park_answer: its owner has the answer ({action, text?,
 *     reason?}, the shape fl_gw_hook answers with);
 *   - its time runs out, or the gateway shuts down: it answers {action:
 *     "none"}, which fleet-hook reads as "no opinion" (the agent goes on
 *     as if fleet were absent);
 *   - its session ends (fleet-hook gone, the agent's hook timed out): no
 *     answer.
 * In every case but fl_hook_park_answer, the owner's gone(owner, w) runs
 * first, so it drops its pointer to w; after fl_hook_park_answer the owner
 * has already let go.
 *
 * Internal to gateway/. Loop thread only; nothing blocks. */
#ifndef FL_HOOK_PARK_H
#define FL_HOOK_PARK_H

#include <jansson.h>
#include <stddef.h>

#include "gateway/gw.h"

/* What a parked call's owner learns when the call ends without its answer
 * (timed out, session gone, shutdown): drop every pointer to w. */
typedef void (*fl_hook_park_gone)(void *owner, fl_wait *w);

/* Parks a fleet/hook call of session c for up to wait_s seconds: 0 with *out
 * set (cb runs once, later), or a negative code with err (FL_EFULL at the
 * session's cap of waiters, FL_ENOMEM); then cb never runs and gone is not
 * kept. owner is borrowed until gone runs or the call is answered. */
int fl_hook_park(fl_gw *gw, fl_client *c, double wait_s, fl_hook_park_gone gone, void *owner,
                 fl_gw_cb cb, void *ctx, fl_wait **out, char *err, size_t errlen);

/* Answers parked call w with result (stolen; {action, ...}); gone does not
 * run. w is gone afterwards. */
void fl_hook_park_answer(fl_wait *w, json_t *result);

/* A new {action: "none"}: the answer of a call nobody has anything for. */
json_t *fl_hook_park_none(void);

#endif
