/* nudge.c — reminding an idle session that messages wait for it.
 *
 * When a message is held for an entity with a live session, its nudge is
 * armed. When it fires and messages are still held, a session that is not
 * inside a waiting call (one that is, is busy: that step is skipped) gets a
 * notification and, if it gave a terminal, the nudge line typed into it
 * through that terminal's backend (inject.h; this file calls no backend by
 * name). Reminders follow with a gap that starts at cfg.nudge.backoff_ms and
 * doubles up to cfg.nudge.max_ms, until the entity has drained (then
 * fl_nudge_stop resets the backoff) or its session ends. */
#include "gateway/nudge.h"

#include "common/error.h"
#include "common/log.h"
#include "gateway/gw_internal.h"
#include "gateway/inject.h"

void fl_nudge_init(fl_entity *e) {
  uv_timer_init(e->gw->loop, &e->nudge.timer);
  e->nudge.timer.data = e;
}

void fl_nudge_close(fl_entity *e) { uv_close((uv_handle_t *)&e->nudge.timer, NULL); }

void fl_nudge_stop(fl_entity *e) {
  if (e->nudge.armed) {
    uv_timer_stop(&e->nudge.timer);
    e->nudge.armed = 0;
  }
  e->nudge.step = 0;
}

/* The line typed into the terminal has gone in, or not. */
static void fl_nudge_typed(void *ctx, int status) {
  fl_entity *e = ctx; /* entities live as long as the gateway */
  if (status)
    fl_gw_count(e->gw, FL_C_NUDGE_FAILURES);
}

/* Types the nudge line into the entity's own terminal, through its backend. */
static void fl_nudge_type(fl_entity *e) {
  fl_gw *gw = e->gw;
  fl_inject_target t = {.pane = e->pane, .socket = e->tmux_socket, .label = e->name};
  int rc = e->inject->nudge(gw->loop, &t, gw->cfg.nudge.text, fl_nudge_typed, e);
  if (rc) {
    fl_gw_count(gw, FL_C_NUDGE_FAILURES);
    fl_warn(NULL, "nudge: cannot run %s for '%s': %s", e->inject->name, e->name, fl_strerror(rc));
  }
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
    if (e->inject && e->pane[0])
      fl_nudge_type(e);
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
