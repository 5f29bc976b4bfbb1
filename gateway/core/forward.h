/* forward.h — the forward path: a brief typed into a worker, at most once.
 *
 * An entity's delivery mode follows what it is: a worker with a terminal
 * (role worker with a pane, or spawned from a profile whose backend types)
 * gets its briefs (SEND messages) typed in; every other message, and every
 * other entity, is held for a pull. A brief walks: the recipient's gateway
 * records it durably (store_forward.h) before anything is acknowledged,
 * waits until the agent is idle at an empty prompt (one brief at a time, in
 * order), marks it "typing", types it through the terminal backend
 * (inject.h), and reports the outcome to the sender: INJECTED, or FAILED
 * with a reason. Across hosts the reports are envelopes correlated by
 * inReplyTo = the brief's msgId; on one host the same states are kept
 * without the broker.
 *
 * Each brief carries a typing deadline (its expiresAt: now +
 * inject.timeoutS): no typing starts at or after it, and a brief still
 * queued then fails. The sender waits until the deadline plus
 * FL_INJECT_MARGIN_MS and, with no word by then, is told "failed": by then
 * the brief can no longer be typed. A brief whose typing started but was
 * not confirmed when fleetd died is reported failed after the restart,
 * never typed again; finished briefs stay recorded (pruned by age) so a
 * redelivered or replayed copy is never typed twice.
 *
 * A worker whose agent has another door (its hooks: module.h's offer) has
 * its briefs handed over there instead, by the same rules (below); the
 * terminal is used only where no such door is open.
 *
 * Internal to gateway/. Loop thread only; nothing blocks but local store
 * commits (typing runs as child processes). */
#ifndef FL_FORWARD_H
#define FL_FORWARD_H

#include <stddef.h>

#include "gateway/gw.h"
#include "gateway/inject/inject.h"
#include "gateway/inject/inject_text.h"
#include "gateway/store/store.h"

typedef struct fl_entity fl_entity;

/* Opens the forward path of gw (after the store and roster are loaded):
 * briefs left "typing" by a previous run become failed ("gateway restarted
 * while typing"), queued ones are looked at again, and outcomes not yet
 * reported are sent. 0 or FL_ENOMEM. */
int fl_forward_start(fl_gw *gw);
/* Stops its timers (shutdown); deliveries in flight still record their
 * outcome. Then run the loop, then fl_forward_free. */
void fl_forward_stop(fl_gw *gw);
void fl_forward_free(fl_gw *gw);

/* 1 when messages sent to e are typed into its terminal (local: as above;
 * remote: as its presence said), else 0. */
int fl_forward_injects(fl_gw *gw, const fl_entity *e);
/* "inject" or "pull": e's delivery mode as presence announces it. */
const char *fl_forward_delivery(fl_gw *gw, const fl_entity *e);

/* 1 while a brief for local e is in hand (being looked at or typed): the
 * nudge waits meanwhile. */
int fl_forward_busy(const fl_entity *e);

/* Where and how to type into e's terminal (inject.h): its pane (the live
 * session's, else the one its spawn opened; NULL when neither), and the
 * prompt, quiet time and command characters of its spawn profile, else
 * the nudge.* defaults. Strings are borrowed from e and the configuration.
 * Briefs and nudge lines both use it. */
void fl_forward_target(fl_gw *gw, const fl_entity *e, fl_inject_target *t);

/* fleet_send to an entity that injects: m (filled by the caller, content
 * borrowed) is sent as a brief with its typing deadline. On success *wait
 * completes with status injected (or, wait_s > 0, replied / pending as a
 * send that waited for its reply) or failed with a reason. On failure no
 * callback runs and err says why. */
int fl_forward_send(fl_gw *gw, fl_client *c, fl_entity *dst, fl_msg *m, double wait_s, fl_gw_cb cb,
                    void *ctx, fl_wait **wait, char *err, size_t errlen);

/* A brief for local entity to arrived from host sender_host: records it
 * (committed before the caller acknowledges) and queues it for typing. 0;
 * FL_EDUP when it was recorded before (it is not typed again); else the
 * store's code with err filled. */
int fl_forward_take(fl_gw *gw, fl_entity *to, const fl_msg *m, const char *sender_host, char *err,
                    size_t errlen);
/* ---- another door (module.h's offer) ----
 *
 * A module with another door into a worker's agent than its terminal (its
 * hooks) takes the worker's briefs through it by the same rules: the brief
 * is marked typing (durably) before anything is handed over, handed over
 * once, and ends injected or failed, reported to the sender like a typed
 * one; the trace says which door. */

/* A brief taken for a hand-over. */
typedef struct fl_handoff {
  char msg_id[FL_ID_LEN];
  char trace_id[FL_ID_LEN];
  char *text; /* owned: exactly the text typing it would put in */
  size_t len;
  char note[256]; /* how that text was made safe, "" when it was not changed */
} fl_handoff;

/* The text typing text[0..len) would put into local e's terminal, with
 * head (NULL: none; a brief's is its provenance line) on a line before it:
 * fl_inject_text_compose with the command characters of e's profile. */
int fl_forward_text(fl_gw *gw, const fl_entity *e, const char *head, const char *text, size_t len,
                    fl_inject_text *out);
/* Takes local e's oldest queued brief for a hand-over: one past its
 * deadline fails as an untyped one would; else it is marked typing
 * (committed) and *out filled. 0; 1 when a brief of e is being typed into
 * its terminal right now (briefs go one at a time: try later);
 * FL_ENOTFOUND when none is queued; else the store's code. */
int fl_forward_hand(fl_gw *gw, fl_entity *e, fl_handoff *out);
/* The hand-over of brief msg_id to local gid ended: written to the other
 * door (ok 1; why is the note) or not (ok 0, why). The brief ends injected
 * or failed (never typed after), its sender is told, and the trace says
 * it went via `via`. */
void fl_forward_handed(fl_gw *gw, const char *gid, const char *msg_id, int ok, const char *why,
                       const char *via);
void fl_handoff_clear(fl_handoff *h);
/* Has the forward path look at local e's queued briefs soon (from a timer,
 * never inside this call): another door of e just opened. */
void fl_forward_kick(fl_gw *gw, fl_entity *e);

/* A receipt for local sender to: the brief msg_id was typed (injected 1) or
 * not (0, why says why). Ends the sender's waiting call if there is one. */
void fl_forward_receipt(fl_gw *gw, fl_entity *to, int injected, const char *msg_id,
                        const char *why);

#endif
