/* hook_park.c — a fleet/hook call parked until fleet has its answer
 * (hook_park.h).
 *
 * The waiter's ext is a small record of who owns the call and what to tell
 * it when the call ends without its answer; the record goes with the
 * waiter. */
#include "gateway/verbs/hook_park.h"

#include "common/alloc.h"
#include "common/error.h"
#include "gateway/core/gw_internal.h"

typedef struct fl_hook_parked {
  fl_hook_park_gone gone;
  void *owner;
} fl_hook_parked;

json_t *fl_hook_park_none(void) { return json_pack("{s:s}", "action", "none"); }

/* Tells the owner, once, that w ends without its answer, and frees the
 * record. */
static void fl_hook_parked_drop(fl_wait *w) {
  fl_hook_parked *p = w->ext;
  w->ext = NULL;
  if (!p)
    return;
  if (p->gone)
    p->gone(p->owner, w);
  fl_free(p);
}

static void fl_hook_park_timeout(fl_wait *w) {
  fl_hook_parked_drop(w);
  fl_wait_complete(w, fl_hook_park_none(), NULL);
}

static void fl_hook_park_forget(fl_wait *w) { fl_hook_parked_drop(w); }

static const fl_wait_ops fl_hook_park_ops = {.timeout = fl_hook_park_timeout,
                                             .forget = fl_hook_park_forget};

int fl_hook_park(fl_gw *gw, fl_client *c, double wait_s, fl_hook_park_gone gone, void *owner,
                 fl_gw_cb cb, void *ctx, fl_wait **out, char *err, size_t errlen) {
  *out = NULL;
  fl_hook_parked *p = fl_calloc(1, sizeof *p);
  if (!p) {
    fl_errf(err, errlen, "out of memory");
    return FL_ENOMEM;
  }
  fl_wait *w = NULL;
  int rc = fl_wait_new(gw, c, FL_WAIT_HOOK, &fl_hook_park_ops, wait_s, cb, ctx, &w, err, errlen);
  if (rc) {
    fl_free(p);
    return rc;
  }
  p->gone = gone;
  p->owner = owner;
  w->ext = p;
  *out = w;
  return 0;
}

void fl_hook_park_answer(fl_wait *w, json_t *result) {
  fl_free(w->ext); /* the owner has let go: gone does not run */
  w->ext = NULL;
  fl_wait_complete(w, result, NULL);
}
