/* hook_deliver.c — briefs and nudge lines handed to a worker through its
 * agent's hooks (hook_deliver.h).
 *
 * Three small tables, all bounded:
 *   - the parked waiters (fleet/hook calls with wake, parked by
 *     hook_park.h), each with the worker's gid as its peer_gid; at most
 *     FL_HOOK_WAKES_PER_WORKER per worker, oldest first;
 *   - the hand-overs whose answer is being written (FL_HOOK_HANDOFFS_MAX):
 *     the brief is marked typing before its answer is made, and ends when
 *     fl_gw_hook_handed says how the write went (or, with no word within
 *     FL_HOOK_HAND_STALE_MS, failed: never typed after);
 *   - the workers a waiter just woke (one per worker, FL_MAX_CLIENTS): until
 *     their hooks report again (the woken turn's UserPromptSubmit), their
 *     briefs are held, not typed into the turn starting up.
 *
 * Where the hooks say idle and a waiter is parked, the newest waiter gets
 * the brief; the others stay. The text is what typing would put in
 * (fl_forward_hand, fl_forward_text): the same stand-ins for control bytes,
 * the same prefix for a leading command character. */
#include "gateway/verbs/hook_deliver.h"

#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/ids.h"
#include "common/limits.h"
#include "common/log.h"
#include "common/time.h"
#include "gateway/core/forward.h"
#include "gateway/core/gw_internal.h"
#include "gateway/core/module.h"
#include "gateway/verbs/hook.h"
#include "gateway/verbs/hook_park.h"

/* A hand-over with no word of its write this long is taken as failed: a
 * write is settled within a loop turn or two. */
#define FL_HOOK_HAND_STALE_MS 60000
/* A woken worker's briefs wait this long at most for its turn's first
 * report; past it they go by the other rules again. */
#define FL_HOOK_WOKEN_MS 30000

typedef struct fl_door_hand {
  char id[FL_ID_LEN];
  char gid[FL_ID_LEN];
  char msg_id[FL_ID_LEN];
  char note[256];
  long long at_ms; /* monotonic */
} fl_door_hand;

typedef struct fl_door_woken {
  char gid[FL_ID_LEN];
  long long at_ms; /* monotonic */
} fl_door_woken;

struct fl_hook_doors {
  fl_wait **wakes; /* oldest first */
  size_t nwakes, cap;
  fl_door_hand hands[FL_HOOK_HANDOFFS_MAX];
  size_t nhands;
  fl_door_woken *woken;
  size_t nwoken, woken_cap;
  unsigned long long briefs, lines, failed, replaced, parked;
};

static struct fl_hook_doors *fl_doors_of(fl_gw *gw) {
  if (!gw->hook_doors)
    gw->hook_doors = fl_calloc(1, sizeof *gw->hook_doors);
  return gw->hook_doors;
}

/* ---- woken workers ---------------------------------------------------------------- */

static fl_door_woken *fl_woken_find(struct fl_hook_doors *d, const char *gid) {
  for (size_t i = 0; i < d->nwoken; i++)
    if (strcmp(d->woken[i].gid, gid) == 0)
      return &d->woken[i];
  return NULL;
}

static void fl_woken_set(struct fl_hook_doors *d, const char *gid) {
  fl_door_woken *w = fl_woken_find(d, gid);
  if (!w) {
    if (d->nwoken == FL_MAX_CLIENTS) {
      size_t old = 0; /* the longest woken makes room */
      for (size_t i = 1; i < d->nwoken; i++)
        if (d->woken[i].at_ms < d->woken[old].at_ms)
          old = i;
      d->woken[old] = d->woken[--d->nwoken];
    }
    if (d->nwoken == d->woken_cap) {
      size_t cap = d->woken_cap ? d->woken_cap * 2 : 16;
      fl_door_woken *v = fl_realloc(d->woken, cap * sizeof *v);
      if (!v)
        return; /* then its briefs go by the other rules */
      d->woken = v;
      d->woken_cap = cap;
    }
    w = &d->woken[d->nwoken++];
    fl_copy(w->gid, sizeof w->gid, gid);
  }
  w->at_ms = fl_mono_ms();
}

static int fl_woken(struct fl_hook_doors *d, const char *gid) {
  fl_door_woken *w = fl_woken_find(d, gid);
  return w && fl_mono_ms() - w->at_ms < FL_HOOK_WOKEN_MS;
}

void fl_hook_doors_report(fl_gw *gw, const char *gid) {
  struct fl_hook_doors *d = gw->hook_doors;
  fl_door_woken *w = d && gid ? fl_woken_find(d, gid) : NULL;
  if (w)
    *w = d->woken[--d->nwoken];
}

/* ---- hand-overs ------------------------------------------------------------------- */

static void fl_hand_end(fl_gw *gw, size_t i, int status) {
  struct fl_hook_doors *d = gw->hook_doors;
  fl_door_hand h = d->hands[i];
  d->hands[i] = d->hands[--d->nhands];
  if (status != 0)
    d->failed++;
  fl_forward_handed(gw, h.gid, h.msg_id, status == 0,
                    status == 0 ? h.note
                                : "the hook's connection closed before the brief was handed "
                                  "over; it is not typed again",
                    "hook");
}

/* Ends the hand-overs that never heard how their write went. */
static void fl_hand_sweep(fl_gw *gw) {
  struct fl_hook_doors *d = gw->hook_doors;
  long long now = fl_mono_ms();
  for (size_t i = 0; d && i < d->nhands;) {
    if (now - d->hands[i].at_ms >= FL_HOOK_HAND_STALE_MS)
      fl_hand_end(gw, i, FL_ETIMEDOUT);
    else
      i++;
  }
}

void fl_gw_hook_handed(fl_gw *gw, const char *handoff, int status) {
  struct fl_hook_doors *d = gw->hook_doors;
  for (size_t i = 0; d && handoff && i < d->nhands; i++) {
    if (strcmp(d->hands[i].id, handoff) == 0) {
      fl_hand_end(gw, i, status);
      return;
    }
  }
}

/* Takes e's oldest queued brief for a hand-over: *res is {action, text,
 * handoff}. FL_DOOR_TAKEN, FL_DOOR_HOLD (try later) or FL_DOOR_NONE
 * (nothing queued). */
static int fl_hand_brief(fl_gw *gw, fl_entity *e, const char *action, json_t **res) {
  struct fl_hook_doors *d = gw->hook_doors;
  *res = NULL;
  fl_hand_sweep(gw);
  if (d->nhands == FL_HOOK_HANDOFFS_MAX)
    return FL_DOOR_HOLD;
  fl_handoff h;
  int rc = fl_forward_hand(gw, e, &h);
  if (rc == FL_ENOTFOUND)
    return FL_DOOR_NONE;
  if (rc)
    return FL_DOOR_HOLD; /* one being typed, or the store: later */
  fl_door_hand *x = &d->hands[d->nhands];
  memset(x, 0, sizeof *x);
  fl_uuid(x->id);
  fl_copy(x->gid, sizeof x->gid, e->gid);
  fl_copy(x->msg_id, sizeof x->msg_id, h.msg_id);
  fl_copy(x->note, sizeof x->note, h.note);
  x->at_ms = fl_mono_ms();
  *res = json_pack("{s:s, s:s%, s:s}", "action", action, "text", h.text, h.len, "handoff", x->id);
  if (!*res) {
    /* Marked typing, and nothing can carry it: it fails, never typed. */
    fl_handoff_clear(&h);
    fl_forward_handed(gw, e->gid, x->msg_id, 0, "out of memory handing it to the hook", "hook");
    d->failed++;
    return FL_DOOR_NONE;
  }
  d->nhands++;
  d->briefs++;
  fl_info(h.trace_id, "brief %s for '%s' goes to its hooks as %s", h.msg_id, e->name, action);
  fl_handoff_clear(&h);
  return FL_DOOR_TAKEN;
}

int fl_hook_doors_context(fl_gw *gw, fl_entity *e, json_t **result) {
  *result = NULL;
  struct fl_hook_doors *d = fl_doors_of(gw);
  if (d && e && !e->remote && fl_forward_injects(gw, e) &&
      fl_hand_brief(gw, e, "context", result) == FL_DOOR_TAKEN)
    return 0;
  *result = fl_hook_park_none();
  return *result ? 0 : FL_ENOMEM;
}

/* ---- parked waiters --------------------------------------------------------------- */

/* Takes w out of the table. */
static void fl_wake_gone(void *owner, fl_wait *w) {
  struct fl_hook_doors *d = ((fl_gw *)owner)->hook_doors;
  for (size_t i = 0; d && i < d->nwakes; i++) {
    if (d->wakes[i] == w) {
      memmove(&d->wakes[i], &d->wakes[i + 1], (d->nwakes - i - 1) * sizeof d->wakes[0]);
      d->nwakes--;
      return;
    }
  }
}

/* Answers waiter w with result (stolen): out of the table first. */
static void fl_wake_answer(fl_gw *gw, fl_wait *w, json_t *result) {
  fl_wake_gone(gw, w);
  fl_hook_park_answer(w, result);
}

/* The newest waiter of gid, or NULL; *n (may be NULL) how many it has. */
static fl_wait *fl_wake_newest(struct fl_hook_doors *d, const char *gid, size_t *n) {
  fl_wait *w = NULL;
  size_t k = 0;
  for (size_t i = 0; d && i < d->nwakes; i++) {
    if (strcmp(d->wakes[i]->peer_gid, gid) == 0) {
      w = d->wakes[i];
      k++;
    }
  }
  if (n)
    *n = k;
  return w;
}

int fl_hook_doors_park(fl_gw *gw, fl_client *c, const char *gid, fl_gw_cb cb, void *ctx,
                       fl_wait **wait, char *err, size_t errlen) {
  struct fl_hook_doors *d = fl_doors_of(gw);
  *wait = NULL;
  if (!d || !c)
    return fl_errf(err, errlen, "fleet/hook: cannot park the waiter"), FL_ENOMEM;
  if (d->nwakes == d->cap) {
    size_t cap = d->cap ? d->cap * 2 : 16;
    fl_wait **v = fl_realloc(d->wakes, cap * sizeof *v);
    if (!v)
      return fl_errf(err, errlen, "out of memory"), FL_ENOMEM;
    d->wakes = v;
    d->cap = cap;
  }
  fl_wait *w;
  int rc = fl_hook_park(gw, c, FL_HOOK_WAKE_S, fl_wake_gone, gw, cb, ctx, &w, err, errlen);
  if (rc)
    return rc;
  fl_copy(w->peer_gid, sizeof w->peer_gid, gid);
  /* The oldest make room: each turn's Stop brings a new waiter. */
  size_t n = 0;
  fl_wake_newest(d, gid, &n);
  for (size_t i = 0; n >= FL_HOOK_WAKES_PER_WORKER && i < d->nwakes;) {
    if (strcmp(d->wakes[i]->peer_gid, gid) != 0) {
      i++;
      continue;
    }
    d->replaced++;
    n--;
    fl_wake_answer(gw, d->wakes[i], fl_hook_park_none()); /* exits 0, nothing said */
  }
  d->wakes[d->nwakes++] = w;
  d->parked++;
  *wait = w;
  /* Something may be queued for it: the forward path looks (after this
   * call is parked: its answer must not come before). */
  fl_entity *e = fl_entity_by_gid(gw, gid);
  if (e && !e->remote)
    fl_forward_kick(gw, e);
  return 0;
}

/* ---- the module row --------------------------------------------------------------- */

int fl_hook_doors_offer(fl_gw *gw, fl_entity *e, const char *line, size_t len) {
  struct fl_hook_doors *d = gw->hook_doors;
  if (e->remote)
    return FL_DOOR_NONE;
  const char *state = fl_hooks_state(gw, e->gid);
  if (!state)
    return FL_DOOR_NONE; /* no reports, or gone silent: the screen decides */
  if (strcmp(state, "idle") != 0)
    return FL_DOOR_HOLD; /* busy: at its UserPromptSubmit, or its next Stop's waiter */
  fl_wait *w = fl_wake_newest(d, e->gid, NULL);
  if (!w)
    return d && fl_woken(d, e->gid) ? FL_DOOR_HOLD : FL_DOOR_NONE;
  json_t *res = NULL;
  int door;
  if (line) {
    res = json_pack("{s:s, s:s%}", "action", "wake", "text", line, len);
    door = res ? FL_DOOR_TAKEN : FL_DOOR_NONE;
    if (res)
      d->lines++;
  } else {
    door = fl_hand_brief(gw, e, "wake", &res);
  }
  if (door != FL_DOOR_TAKEN)
    return door;
  fl_woken_set(d, e->gid);
  fl_wake_answer(gw, w, res);
  return FL_DOOR_TAKEN;
}

json_t *fl_hook_doors_describe(fl_gw *gw) {
  struct fl_hook_doors *d = gw->hook_doors;
  if (!d)
    return NULL;
  fl_hand_sweep(gw);
  return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}", "waiters", (json_int_t)d->nwakes, "parked",
                   (json_int_t)d->parked, "replaced", (json_int_t)d->replaced, "briefs",
                   (json_int_t)d->briefs, "lines", (json_int_t)d->lines, "failed",
                   (json_int_t)d->failed);
}

void fl_hook_doors_free(fl_gw *gw) {
  struct fl_hook_doors *d = gw->hook_doors;
  if (!d)
    return;
  fl_free(d->wakes);
  fl_free(d->woken);
  fl_free(d);
  gw->hook_doors = NULL;
}
