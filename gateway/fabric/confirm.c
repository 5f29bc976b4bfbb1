/* confirm.c — a call waiting for the broker's confirm (see confirm.h). */
#include "gateway/fabric/confirm.h"

#include <stdio.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/log.h"
#include "gateway/core/gw_internal.h"

/* How long a call may wait for the broker's confirm before it is told it is
 * unknown whether the message arrived. Confirms take milliseconds; 10 s
 * means the broker is in trouble. */
#define FL_CONFIRM_TIMEOUT_S 10.0

struct fl_confirm {
  fl_wait *wait;           /* NULL once the waiting call went away */
  double then_wait_s;      /* > 0: after the confirm, wait this long for the reply */
  json_t *on_confirm;      /* the result to give once confirmed (owned) */
  char where[160];         /* where it went, for errors ("" = the roster's name) */
  fl_confirm_note_cb note; /* a publish nobody waits on: who hears how it went */
  void *note_ctx;
  long long sent_ms; /* when it was made, just before its publish */
  /* Copies still to be settled (fl_confirm_copy), and the first failure. */
  size_t npending;
  int status;
  char why[256];
};

void fl_confirm_copy(fl_confirm *req) { req->npending++; }

long long fl_confirm_sent_ms(const fl_confirm *req) { return req->sent_ms; }

void fl_confirm_fail_later(fl_confirm *req, int status, const char *why) {
  if (req->status)
    return;
  req->status = status;
  fl_copy(req->why, sizeof req->why, why);
}

fl_confirm *fl_confirm_note(fl_confirm_note_cb cb, void *ctx) {
  fl_confirm *r = fl_calloc(1, sizeof *r);
  if (r) {
    r->note = cb;
    r->note_ctx = ctx;
    r->sent_ms = fl_now_ms();
  }
  return r;
}

/* The waiting call went away before the confirm: the publish forgets it. */
static void fl_confirm_forget(fl_wait *w) {
  fl_confirm *req = w->ext;
  if (!req)
    return;
  req->wait = NULL;
  json_decref(req->on_confirm);
  req->on_confirm = NULL;
  w->ext = NULL;
}

static void fl_confirm_timeout(fl_wait *w) {
  fl_warn(w->trace_id, "publish of %s: no confirm from the broker in time", w->msg_id);
  fl_wait_complete(w, NULL,
                   w->gw->shutting_down
                       ? "fleetd is shutting down before the broker confirmed the message; "
                         "it may or may not have been delivered"
                       : "the broker did not confirm the message in time; it may or may "
                         "not have been delivered (check fleetctl status)");
}

static const fl_wait_ops fl_confirm_ops = {.timeout = fl_confirm_timeout,
                                           .forget = fl_confirm_forget};

int fl_confirm_new(fl_gw *gw, fl_client *c, const fl_msg *m, const char *peer_gid,
                   const char *where, double then_wait_s, json_t *on_confirm, fl_gw_cb cb,
                   void *ctx, fl_wait **w, fl_confirm **req, char *err, size_t errlen) {
  *w = NULL;
  *req = NULL;
  int rc = fl_wait_new(gw, c, FL_WAIT_CONFIRM, &fl_confirm_ops, FL_CONFIRM_TIMEOUT_S, cb, ctx, w,
                       err, errlen);
  if (rc) {
    json_decref(on_confirm);
    return rc;
  }
  fl_confirm *r = fl_calloc(1, sizeof *r);
  if (!r) {
    json_decref(on_confirm);
    fl_gw_cancel(gw, w);
    fl_errf(err, errlen, "out of memory");
    return FL_ENOMEM;
  }
  r->wait = *w;
  r->sent_ms = fl_now_ms();
  r->then_wait_s = then_wait_s;
  r->on_confirm = on_confirm;
  fl_copy(r->where, sizeof r->where, where);
  (*w)->ext = r;
  (*w)->wants_reply = then_wait_s > 0;
  fl_copy((*w)->msg_id, sizeof(*w)->msg_id, m->msg_id);
  fl_copy((*w)->trace_id, sizeof(*w)->trace_id, m->trace_id);
  fl_copy((*w)->peer_gid, sizeof(*w)->peer_gid, peer_gid);
  *req = r;
  return 0;
}

void fl_confirm_abort(fl_gw *gw, fl_wait **w, fl_confirm *req) {
  fl_gw_cancel(gw, w); /* forgets req, freeing on_confirm */
  if (req)
    json_decref(req->on_confirm);
  fl_free(req);
}

void fl_confirm_done(fl_gw *gw, fl_confirm *req, int status, const char *why) {
  if (status)
    fl_confirm_fail_later(req, status, why);
  if (req->npending > 1) {
    req->npending--;
    return; /* more copies to come */
  }
  char first[256];
  status = req->status;
  fl_copy(first, sizeof first, req->why);
  why = first;
  if (req->note) {
    fl_confirm_note_cb cb = req->note;
    void *ctx = req->note_ctx;
    fl_free(req);
    cb(ctx, status, why);
    return;
  }
  fl_wait *w = req->wait;
  double then_wait_s = req->then_wait_s;
  json_t *r = req->on_confirm;
  char where[160];
  fl_copy(where, sizeof where, req->where);
  fl_free(req);
  if (!w) {
    json_decref(r);
    return;
  }
  w->ext = NULL;
  if (status != 0) {
    json_decref(r);
    if (!where[0]) {
      fl_entity *dst = fl_entity_by_gid(gw, w->peer_gid);
      snprintf(where, sizeof where, "%s%s%s", dst ? dst->name : "the group", dst ? "@" : "",
               dst ? dst->host : "");
    }
    char msg[512];
    snprintf(msg, sizeof msg, "could not deliver to %s: %s", where,
             why && *why ? why : fl_strerror(status));
    fl_warn(w->trace_id, "publish of %s failed: %s", w->msg_id, msg);
    fl_wait_complete(w, NULL, msg);
    return;
  }
  if (then_wait_s > 0) {
    json_decref(r);
    fl_router_expect_reply(w, then_wait_s);
    return;
  }
  fl_wait_complete(w, r, NULL);
}
