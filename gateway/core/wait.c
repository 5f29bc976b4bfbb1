/* wait.c — waiting calls: one timer, one callback, exactly one end.
 *
 * A waiter is created by a verb that cannot answer yet (a send waiting for
 * its reply, a long poll, a message waiting for the broker's confirm) and
 * sits in its client's list, oldest first, so the oldest call is served
 * first. It ends once: fl_wait_complete runs the callback; fl_wait_release
 * (cancel, session end) never does. Its memory lives until the timer's
 * close callback, as libuv requires for an embedded handle. What happens
 * when the time is up is the creator's, through fl_wait_ops: this file
 * knows no kind of waiting in particular. */
#include "gateway/core/wait.h"

#include "common/alloc.h"
#include "common/error.h"
#include "gateway/core/gw_internal.h"
#include "gateway/core/nudge.h"

int fl_wait_room(const fl_client *c, char *err, size_t errlen) {
  if (c->nwaits < FL_MAX_WAITERS_PER_CLIENT)
    return 0;
  fl_errf(err, errlen,
          "too many waiting calls in this session (at most %d); wait for one to finish",
          FL_MAX_WAITERS_PER_CLIENT);
  return FL_EFULL;
}

static void fl_wait_timeout_cb(uv_timer_t *t) {
  fl_wait *w = t->data;
  w->ops->timeout(w);
}

static uint64_t fl_wait_ms(double wait_s) { return (uint64_t)(wait_s * 1000.0); }

int fl_wait_new(fl_gw *gw, fl_client *c, enum fl_wait_kind kind, const fl_wait_ops *ops,
                double wait_s, fl_gw_cb cb, void *ctx, fl_wait **out, char *err, size_t errlen) {
  int rc = fl_wait_room(c, err, errlen);
  if (rc)
    return rc;
  fl_wait *w = fl_calloc(1, sizeof *w);
  if (!w) {
    fl_errf(err, errlen, "out of memory");
    return FL_ENOMEM;
  }
  w->gw = gw;
  w->client = c;
  w->kind = kind;
  w->ops = ops;
  w->cb = cb;
  w->ctx = ctx;
  uv_timer_init(gw->loop, &w->timer);
  w->timer.data = w;
  uv_timer_start(&w->timer, fl_wait_timeout_cb, fl_wait_ms(wait_s), 0);
  /* Append: the oldest waiting call is served first. */
  fl_wait **pp = &c->waits;
  while (*pp)
    pp = &(*pp)->next;
  *pp = w;
  c->nwaits++;
  *out = w;
  return 0;
}

static void fl_wait_unlink(fl_wait *w) {
  fl_client *c = w->client;
  for (fl_wait **pp = &c->waits; *pp; pp = &(*pp)->next) {
    if (*pp == w) {
      *pp = w->next;
      c->nwaits--;
      break;
    }
  }
}

static void fl_wait_close_cb(uv_handle_t *h) { fl_free(h->data); }

void fl_wait_release(fl_wait *w) {
  fl_wait_unlink(w);
  if (w->ops && w->ops->forget)
    w->ops->forget(w);
  w->ext = NULL;
  uv_timer_stop(&w->timer);
  uv_close((uv_handle_t *)&w->timer, fl_wait_close_cb);
}

/* A completed call's answer, held back until the open batch committed. */
struct fl_wait_done {
  struct fl_wait_done *next;
  fl_gw_cb cb;
  void *ctx;
  json_t *result;
  char *err;
  char gid[FL_ID_LEN]; /* whose call it was, for the nudge after it */
};

/* Gives the answer, then re-arms the nudge of what is still held. */
static void fl_wait_answer(fl_gw *gw, fl_gw_cb cb, void *ctx, json_t *result, const char *err,
                           const char *gid) {
  cb(ctx, err ? NULL : result, err);
  if (err)
    json_decref(result);
  /* Whatever is still held after this call needs a nudge again. */
  fl_entity *e = gid[0] ? fl_entity_by_gid(gw, gid) : NULL;
  size_t held = 0;
  if (e && e->client && fl_store_count(gw->store, e->gid, fl_now_ms(), &held) == 0 && held)
    fl_nudge_arm(e);
}

void fl_wait_complete(fl_wait *w, json_t *result, const char *err) {
  fl_gw *gw = w->gw;
  fl_gw_cb cb = w->cb;
  void *ctx = w->ctx;
  char gid[FL_ID_LEN] = "";
  if (w->client->entity)
    fl_copy(gid, sizeof gid, w->client->entity->gid);
  int written = !result && !err && w->out && w->out->json;
  fl_wait_release(w);
  if (!result && !err && !written)
    err = "out of memory";
  if (gw->defer_done) {
    struct fl_wait_done *d = fl_calloc(1, sizeof *d);
    if (d && (!err || (d->err = fl_strdup(err)))) {
      d->cb = cb;
      d->ctx = ctx;
      d->result = result;
      fl_copy(d->gid, sizeof d->gid, gid);
      *gw->done_tail = d;
      gw->done_tail = &d->next;
      return;
    }
    fl_free(d); /* out of memory: answer now rather than never */
  }
  fl_wait_answer(gw, cb, ctx, result, err, gid);
}

void fl_wait_defer_begin(fl_gw *gw) {
  gw->defer_done = 1;
  if (!gw->done_tail)
    gw->done_tail = &gw->done_head;
}

void fl_wait_defer_end(fl_gw *gw) {
  gw->defer_done = 0;
  struct fl_wait_done *d = gw->done_head;
  gw->done_head = NULL;
  gw->done_tail = &gw->done_head;
  while (d) {
    struct fl_wait_done *next = d->next;
    fl_wait_answer(gw, d->cb, d->ctx, d->result, d->err, d->gid);
    fl_free(d->err);
    fl_free(d);
    d = next;
  }
}

void fl_gw_wait_out(fl_wait *w, fl_json_out *out) {
  if (w)
    w->out = out;
}

void fl_wait_add_note(const fl_wait *w, json_t *result) {
  if (w && result && w->typed_note[0])
    json_object_set_new(result, "note", json_string(w->typed_note));
}

void fl_wait_restart(fl_wait *w, enum fl_wait_kind kind, const fl_wait_ops *ops, double wait_s) {
  w->kind = kind;
  w->ops = ops;
  w->ext = NULL;
  w->wants_reply = 0;
  uv_timer_start(&w->timer, fl_wait_timeout_cb, fl_wait_ms(wait_s), 0);
}

void fl_wait_expire(fl_wait *w) { w->ops->timeout(w); }

void fl_gw_cancel(fl_gw *gw, fl_wait **w) {
  if (!w || !*w)
    return;
  fl_wait_release(*w);
  *w = NULL;
}
