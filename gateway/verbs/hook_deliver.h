/* hook_deliver.h — briefs and nudge lines handed to a worker through its
 * agent's hooks instead of typed into its pane.
 *
 * A worker whose hooks report (hook.h) has two doors besides its terminal:
 *
 *   - the waiter of its idle session (fleet-hook --wake, an asyncRewake
 *     hook run at SessionStart and Stop): its fleet/hook call is parked
 *     here; when a brief is queued for the worker and the hooks say idle,
 *     the call is answered {action: "wake", text}, fleet-hook prints the
 *     text and exits 2, and the agent starts a turn with it;
 *   - UserPromptSubmit: the oldest queued brief goes in with that turn,
 *     answered {action: "context", text} (additionalContext).
 *
 * The module row's offer (module.h) says, for the forward path and the
 * nudge: taken (handed to a parked waiter), hold (the hooks say busy or
 * blocked, or a waiter was just answered and its turn has not reported
 * yet: nothing is typed), or none (no reports, hooks gone silent, idle with
 * no waiter: typed as before). A brief is taken with fl_forward_hand
 * (marked typing first) and its answer carries a "handoff" id; the caller
 * writes the answer and says how the write went (fl_gw_hook_handed), which
 * ends the brief injected or failed, via "hook".
 *
 * At most FL_HOOK_WAKES_PER_WORKER waiters are parked per worker (the
 * oldest is answered "none"); a waiter whose connection closed is dropped
 * with its session (the wait's forget), so it is never handed anything.
 *
 * Internal to gateway/. Loop thread only. */
#ifndef FL_HOOK_DELIVER_H
#define FL_HOOK_DELIVER_H

#include <jansson.h>
#include <stddef.h>

#include "gateway/gw.h"

typedef struct fl_entity fl_entity;

/* Parks the waiter (a fleet/hook call with wake) of gid's agent on client
 * c: *wait set, cb answers later. Then the forward path looks at once. */
int fl_hook_doors_park(fl_gw *gw, fl_client *c, const char *gid, fl_gw_cb cb, void *ctx,
                       fl_wait **wait, char *err, size_t errlen);
/* UserPromptSubmit of local e (may be NULL): *result is {action:
 * "context", text, handoff} with e's oldest queued brief, else {action:
 * "none"}. 0 or FL_ENOMEM. */
int fl_hook_doors_context(fl_gw *gw, fl_entity *e, json_t **result);
/* Any report of gid's hooks: a turn a waiter started has reported. */
void fl_hook_doors_report(fl_gw *gw, const char *gid);

/* The module row's members (gateway.c). */
int fl_hook_doors_offer(fl_gw *gw, fl_entity *e, const char *line, size_t len);
json_t *fl_hook_doors_describe(fl_gw *gw);
void fl_hook_doors_free(fl_gw *gw);

#endif
