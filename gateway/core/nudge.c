/* nudge.c — reminding an idle session that messages wait for it.
 *
 * When a message is held for an entity with a live session, its nudge is
 * armed. When it fires and messages are still held, a session that is not
 * inside a waiting call (one that is, is busy: that step is skipped) gets a
 * notification and, if it gave a terminal, the nudge line typed into it
 * through that terminal's backend (inject.h; this file calls no backend by
 * name). Reminders follow with a gap that starts at cfg.nudge.backoff_ms and
 * doubles up to cfg.nudge.max_ms, until the entity has drained (then
 * fl_nudge_stop resets the backoff) or its session ends.
 *
 * The line passes the same gate as injection: it is typed only when the
 * backend's status says the pane is READY (idle, its input empty, per the
 * entity's spawn profile's prompt, busy and quietMs, else cfg.nudge.prompt
 * and cfg.nudge.quiet_ms), and it is typed by the same checked delivery as a
 * brief (inject.h's deliver: type, see it in the input line, then Enter as
 * a separate key; a line Enter did not submit is erased, so it never stays
 * behind as a draft that blocks the next brief). A busy pane, or one holding a
 * draft a human is typing, is left alone: the line stays pending and the
 * pane is looked at again every quiet_ms until it is ready, the entity
 * drains or its session ends. At most one line is pending: reminders that
 * come due meanwhile join it rather than queue more. A deferral is counted
 * (nudges_deferred) and logged once per pending line, not per look. The MCP
 * notification is not typed and does not wait. While a brief is being typed
 * into the same pane (forward.h), the line waits too, and the forward path
 * waits for a line being typed: one typist at a time. An agent with its own
 * door (module.h's offer: its hooks) gets the line there instead, as the
 * text typing would put in; while that door is held (busy, blocked), the
 * line waits as for a busy pane. */
#include "gateway/core/nudge.h"

#include <string.h>

#include "common/error.h"
#include "common/log.h"
#include "gateway/core/forward.h"
#include "gateway/core/gw_internal.h"
#include "gateway/core/histo.h"
#include "gateway/core/module.h"
#include "gateway/inject/inject.h"

/* The shortest gap between two looks at a pane that is not idle. */
#define FL_NUDGE_MIN_RECHECK_MS 50

void fl_nudge_init(fl_entity *e) {
  uv_timer_init(e->gw->loop, &e->nudge.timer);
  e->nudge.timer.data = e;
  uv_timer_init(e->gw->loop, &e->nudge.recheck);
  e->nudge.recheck.data = e;
}

void fl_nudge_close(fl_entity *e, uv_close_cb done) {
  e->nudge.pending = 0;
  uv_close((uv_handle_t *)&e->nudge.timer, done);
  uv_close((uv_handle_t *)&e->nudge.recheck, done);
}

void fl_nudge_stop(fl_entity *e) {
  if (e->nudge.armed) {
    uv_timer_stop(&e->nudge.timer);
    e->nudge.armed = 0;
  }
  e->nudge.step = 0;
  /* A line still waiting for the pane is dropped; a look in flight finds
   * nothing pending and does nothing. */
  e->nudge.pending = 0;
  e->nudge.deferred = 0;
  uv_timer_stop(&e->nudge.recheck);
}

static void fl_nudge_look(fl_entity *e);

/* The nudge line's delivery has ended: submitted, not typed (the pane
 * changed between the look and the typing: pending again), or failed (a
 * line Enter did not submit was erased by the backend). */
static void fl_nudge_typed(void *ctx, int status, enum fl_inject_state seen, const char *why) {
  fl_entity *e = ctx; /* entities live as long as the gateway */
  fl_gw *gw = e->gw;
  e->nudge.typing = 0;
  if (status == 0) {
    fl_gw_observe(gw, FL_H_INJECT, fl_now_ms() - e->nudge.typed_at_ms);
    return;
  }
  if (status == FL_INJECT_NOT_TYPED && seen != FL_INJECT_GONE) {
    if (e->client && !gw->shutting_down) {
      e->nudge.pending = 1;
      fl_nudge_look(e);
    }
    return;
  }
  fl_gw_count(gw, FL_C_NUDGE_FAILURES);
  fl_warn(NULL, "nudge: the line for '%s' did not go in: %s", e->name,
          why && *why ? why : fl_strerror(status));
}

/* Types the nudge line into the entity's own terminal: the same checked
 * delivery as a brief (type, see it in the input line, then Enter). */
static void fl_nudge_type(fl_entity *e) {
  fl_gw *gw = e->gw;
  fl_inject_target t;
  fl_forward_target(gw, e, &t);
  e->nudge.typed_at_ms = fl_now_ms();
  const char *text = gw->cfg.nudge.text;
  int rc = e->inject->deliver(gw->loop, &t, text, strlen(text), fl_nudge_typed, e);
  e->nudge.typing = rc == 0;
  if (rc) {
    fl_gw_count(gw, FL_C_NUDGE_FAILURES);
    fl_warn(NULL, "nudge: cannot run %s for '%s': %s", e->inject->name, e->name, fl_strerror(rc));
  }
}

static void fl_nudge_recheck(uv_timer_t *t) { fl_nudge_look(t->data); }

/* Offers the pending line to the agent's own door (module.h: its hooks),
 * as the text typing would put in. Taken: nothing is pending any more. */
static int fl_nudge_offer(fl_entity *e) {
  fl_gw *gw = e->gw;
  const char *text = gw->cfg.nudge.text;
  fl_inject_text safe; /* cleared by make, also when it fails */
  int door = FL_DOOR_NONE;
  if (fl_forward_text(gw, e, NULL, text, strlen(text), &safe) == 0)
    door = fl_modules_offer(gw, e, safe.buf, safe.len);
  fl_inject_text_free(&safe);
  if (door == FL_DOOR_TAKEN) {
    e->nudge.pending = 0;
    e->nudge.deferred = 0;
    fl_info(NULL, "nudge: the line went to '%s' through its hooks", e->name);
  }
  return door;
}

/* The backend has looked at the pane: type the pending line if it is ready,
 * else look again later. */
static void fl_nudge_seen(void *ctx, enum fl_inject_state st) {
  fl_entity *e = ctx; /* entities live as long as the gateway */
  fl_gw *gw = e->gw;
  e->nudge.checking = 0;
  if (!e->nudge.pending || !e->client || gw->shutting_down)
    return; /* drained, gone offline or shutting down meanwhile */
  if (st == FL_INJECT_READY && fl_forward_busy(e))
    st = FL_INJECT_BUSY; /* a brief is being typed there: one typist at a time */
  if (st == FL_INJECT_READY) {
    int door = fl_nudge_offer(e); /* the agent's own door first */
    if (door == FL_DOOR_TAKEN)
      return;
    if (door == FL_DOOR_HOLD)
      st = FL_INJECT_BUSY; /* busy or blocked by its hooks: later */
  }
  if (st == FL_INJECT_READY) {
    if (e->nudge.deferred)
      fl_info(NULL, "nudge: the pane %s of '%s' is idle again: typing the nudge line", e->pane,
              e->name);
    e->nudge.pending = 0;
    e->nudge.deferred = 0;
    fl_nudge_type(e);
    return;
  }
  if (st == FL_INJECT_GONE) {
    e->nudge.pending = 0;
    e->nudge.deferred = 0;
    fl_gw_count(gw, FL_C_NUDGE_FAILURES);
    fl_warn(NULL, "nudge: the pane %s of '%s' is gone: nothing typed", e->pane, e->name);
    return;
  }
  if (!e->nudge.deferred) {
    e->nudge.deferred = 1;
    fl_gw_count(gw, FL_C_NUDGES_DEFERRED);
    fl_info(NULL,
            "nudge: the pane %s of '%s' is not at an empty prompt (%s): the nudge line waits "
            "until it is",
            e->pane, e->name, st == FL_INJECT_DRAFT ? "a draft is typed there" : "it is busy");
  }
  unsigned gap = gw->cfg.nudge.quiet_ms;
  if (gap < FL_NUDGE_MIN_RECHECK_MS)
    gap = FL_NUDGE_MIN_RECHECK_MS;
  uv_timer_start(&e->nudge.recheck, fl_nudge_recheck, gap, 0);
}

/* Asks the pane's backend whether the pending line may be typed now. */
static void fl_nudge_look(fl_entity *e) {
  fl_gw *gw = e->gw;
  if (!e->nudge.pending || e->nudge.checking)
    return;
  if (fl_nudge_offer(e) == FL_DOOR_TAKEN)
    return;
  if (!e->inject->status || !e->inject->deliver) { /* no screen to check: nothing is typed */
    e->nudge.pending = 0;
    return;
  }
  fl_inject_target t;
  fl_forward_target(gw, e, &t);
  int rc = e->inject->status(gw->loop, &t, fl_nudge_seen, e);
  if (rc) {
    e->nudge.pending = 0;
    e->nudge.deferred = 0;
    fl_gw_count(gw, FL_C_NUDGE_FAILURES);
    fl_warn(NULL, "nudge: cannot look at the pane %s of '%s' (%s): %s", e->pane, e->name,
            e->inject->name, fl_strerror(rc));
    return;
  }
  uv_timer_stop(&e->nudge.recheck);
  e->nudge.checking = 1;
}

static void fl_nudge_fire(uv_timer_t *t) {
  fl_entity *e = t->data;
  fl_gw *gw = e->gw;
  e->nudge.armed = 0;
  size_t held = 0;
  if (!e->client || fl_store_count(gw->store, e->gid, fl_now_ms(), &held) != 0 || held == 0) {
    e->nudge.step = 0;
    return;
  }
  /* A session inside a waiting call is busy: skip this step, keep reminding. */
  if (e->client->nwaits == 0) {
    fl_gw_count(gw, FL_C_NUDGES);
    fl_info(NULL, "nudge: '%s' has %zu held message(s)", e->name, held);
    if (e->client->ops && e->client->ops->notify) {
      json_t *data = json_pack("{s:s, s:I, s:s}", "event", "messages_waiting", "held",
                               (json_int_t)held, "hint", "messages are waiting: poll to read them");
      if (data)
        e->client->ops->notify(e->client->ctx, data);
    }
    if (e->inject && e->pane[0]) {
      e->nudge.pending = 1; /* joins a line still pending, if any */
      fl_nudge_look(e);
    }
  }
  unsigned long long gap = gw->cfg.nudge.backoff_ms;
  for (unsigned i = 0; i < e->nudge.step && gap < gw->cfg.nudge.max_ms; i++)
    gap *= 2;
  if (gap > gw->cfg.nudge.max_ms)
    gap = gw->cfg.nudge.max_ms;
  e->nudge.step++;
  e->nudge.armed = 1;
  uv_timer_start(&e->nudge.timer, fl_nudge_fire, gap, 0);
}

void fl_nudge_arm(fl_entity *e) {
  fl_gw *gw = e->gw;
  if (!gw->cfg.nudge.enabled || !e->client || e->nudge.armed || gw->shutting_down)
    return;
  e->nudge.armed = 1;
  uv_timer_start(&e->nudge.timer, fl_nudge_fire, gw->cfg.nudge.first_ms, 0);
}
