/* forward_send.c — the sending side of the forward path (forward.h).
 *
 * A send to an entity that injects is a waiting call (wait.h, kind
 * FORWARD) ended by the receipt, or by its timer at the typing deadline
 * plus FL_INJECT_MARGIN_MS (its bound). To a worker on another host the
 * brief goes out through remote.h and the wait starts once the broker
 * confirmed the publish (kind CONFIRM until then; a receipt that comes
 * first is kept until the confirm). A brief for a local worker is recorded
 * and queued by the receiving side (forward.c), which reports its outcome
 * here through fl_forward_receipt. A timeout withdraws a brief still
 * queued, so it can never be typed after the sender was told "failed". */
#include "gateway/core/forward.h"

#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/log.h"
#include "gateway/core/forward_internal.h"
#include "gateway/core/gw_internal.h"
#include "gateway/core/remote.h"
#include "gateway/core/router.h"
#include "gateway/store/store_forward.h"

/* ---- results --------------------------------------------------------------------- */

static json_t *fl_fwd_result(fl_gw *gw, fl_wait *w, const char *status, const char *why) {
  fl_entity *peer = fl_entity_by_gid(gw, w->peer_gid);
  json_t *o = json_pack("{s:s, s:s, s:o, s:s}", "msgId", w->msg_id, "traceId", w->trace_id, "to",
                        peer ? fl_entity_ref_json(peer)
                             : json_pack("{s:s,s:s}", "gid", w->peer_gid, "name", ""),
                        "status", status);
  if (o && why && *why)
    json_object_set_new(o, "reason", json_string(why));
  return o;
}

/* Ends forward waiter w with the outcome. */
static void fl_fwd_settle(fl_wait *w, int injected, const char *why) {
  fl_gw *gw = w->gw;
  if (!injected) {
    fl_warn(w->trace_id, "brief %s was not typed: %s", w->msg_id, why);
    fl_wait_complete(w, fl_fwd_result(gw, w, "failed", why), NULL);
    return;
  }
  if (why && *why)
    fl_copy(w->typed_note, sizeof w->typed_note, why);
  if (w->reply_wait_s > 0) {
    /* Typed: now a send waiting for its reply (replied or pending carries
     * the note too). */
    w->forward = 0;
    w->verb = NULL;
    fl_router_expect_reply(w, w->reply_wait_s);
    return;
  }
  json_t *r = fl_fwd_result(gw, w, "injected", NULL);
  fl_wait_add_note(w, r);
  fl_wait_complete(w, r, NULL);
}

/* The forward waiter of local sender for brief msg_id, or NULL. */
fl_wait *fl_fwd_waiter(fl_entity *sender, const char *msg_id) {
  if (!sender || !sender->client)
    return NULL;
  for (fl_wait *w = sender->client->waits; w; w = w->next)
    if (w->forward && strcmp(w->msg_id, msg_id) == 0 &&
        (w->kind == FL_WAIT_FORWARD || w->kind == FL_WAIT_CONFIRM))
      return w;
  return NULL;
}

void fl_forward_receipt(fl_gw *gw, fl_entity *to, int injected, const char *msg_id,
                        const char *why) {
  fl_wait *w = fl_fwd_waiter(to, msg_id);
  if (!w) {
    fl_debug(NULL, "receipt for brief %s of '%s': nobody waits for it any more", msg_id,
             to ? to->name : "?");
    return;
  }
  if (w->kind == FL_WAIT_CONFIRM) {
    /* Word came before the broker's confirm: kept until the confirm. */
    w->receipt = injected ? 1 : 2;
    fl_copy(w->receipt_why, sizeof w->receipt_why, why);
    return;
  }
  fl_info(w->trace_id, "brief %s %s", msg_id, injected ? "was typed in" : "failed");
  fl_fwd_settle(w, injected, why);
}

/* ---- the sending side ------------------------------------------------------------ */

static double fl_fwd_bound_s(fl_gw *gw) {
  return gw->cfg.inject.timeout_s + FL_INJECT_MARGIN_MS / 1000.0;
}

static void fl_fwd_timeout(fl_wait *w) {
  fl_gw *gw = w->gw;
  fl_entity *dst = fl_entity_by_gid(gw, w->peer_gid);
  char why[512];
  if (dst && !dst->remote) {
    /* Withdraw it here, so it can never be typed after this answer. */
    fl_fwd f;
    if (fl_store_fwd_get(gw->store, w->msg_id, dst->gid, &f) == 0 && f.state == FL_FWD_QUEUED) {
      fl_store_fwd_set(gw->store, w->msg_id, dst->gid, FL_FWD_FAILED, "withdrawn");
      fl_store_fwd_reported(gw->store, w->msg_id, dst->gid);
    }
    fl_fwd_clear(&f);
  }
  if (gw->shutting_down)
    snprintf(why, sizeof why, "fleetd is shutting down before the brief was confirmed typed");
  else
    snprintf(why, sizeof why,
             "no confirmation that '%s' got the brief within inject.timeoutS (%u s): it was "
             "withdrawn and will not be typed; retry when the agent is idle (fleet_list)",
             dst ? dst->name : w->peer_gid, gw->cfg.inject.timeout_s);
  fl_gw_count(gw, FL_C_INJECT_FAILURES);
  fl_fwd_settle(w, 0, why);
}

static void fl_forward_confirmed(fl_wait *w, double wait_s);

static const fl_wait_ops fl_fwd_wait_ops = {.timeout = fl_fwd_timeout,
                                            .expect_reply = fl_forward_confirmed};

/* The broker confirmed a brief's publish: wait for the receipt (the wait
 * for the reply, reply_wait_s, comes after it). */
static void fl_forward_confirmed(fl_wait *w, double wait_s) {
  (void)wait_s;
  if (w->receipt) {
    int injected = w->receipt == 1;
    char why[sizeof w->receipt_why];
    fl_copy(why, sizeof why, w->receipt_why);
    fl_wait_restart(w, FL_WAIT_FORWARD, &fl_fwd_wait_ops, fl_fwd_bound_s(w->gw));
    fl_fwd_settle(w, injected, why);
    return;
  }
  fl_wait_restart(w, FL_WAIT_FORWARD, &fl_fwd_wait_ops, fl_fwd_bound_s(w->gw));
}

int fl_forward_send(fl_gw *gw, fl_client *c, fl_entity *dst, fl_msg *m, double wait_s, fl_gw_cb cb,
                    void *ctx, fl_wait **wait, char *err, size_t errlen) {
  int rc = fl_wait_room(c, err, errlen);
  if (rc)
    return rc;
  m->expires_ms = m->ts_ms + (long long)gw->cfg.inject.timeout_s * 1000;
  if (dst->remote) {
    json_t *sent = json_pack("{s:s, s:s, s:o, s:s}", "msgId", m->msg_id, "traceId", m->trace_id,
                             "to", fl_entity_ref_json(dst), "status", "sent");
    rc = fl_remote_publish(gw, c, dst, m, fl_fwd_bound_s(gw), sent, cb, ctx, wait, err, errlen);
    if (rc == 0) {
      (*wait)->forward = 1;
      (*wait)->verb = &fl_fwd_wait_ops;
      (*wait)->reply_wait_s = wait_s;
    }
    return rc;
  }
  fl_wait *w;
  if ((rc = fl_wait_new(gw, c, FL_WAIT_FORWARD, &fl_fwd_wait_ops, fl_fwd_bound_s(gw), cb, ctx, &w,
                        err, errlen)))
    return rc;
  w->forward = 1;
  w->reply_wait_s = wait_s;
  fl_copy(w->msg_id, sizeof w->msg_id, m->msg_id);
  fl_copy(w->trace_id, sizeof w->trace_id, m->trace_id);
  fl_copy(w->peer_gid, sizeof w->peer_gid, dst->gid);
  if ((rc = fl_forward_take(gw, dst, m, "", err, errlen))) {
    fl_gw_cancel(gw, &w);
    return rc;
  }
  *wait = w;
  return 0;
}
