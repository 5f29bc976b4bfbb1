/* nudge.c — reminding an idle session that messages wait for it.
 *
 * When a message is held for an entity with a live session, its nudge is
 * armed. When it fires and messages are still held, a session that is not
 * inside a waiting call (one that is, is busy: that step is skipped) gets a
 * notification and, if it gave a terminal pane, the nudge line typed into
 * it. Reminders follow with a gap that starts at cfg.nudge.backoff_ms and
 * doubles up to cfg.nudge.max_ms, until the entity has drained (then
 * fl_nudge_stop resets the backoff) or its session ends. */
#include "gateway/nudge.h"

#include "common/alloc.h"
#include "common/log.h"
#include "gateway/gw_internal.h"

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

static void fl_tmux_exit_cb(uv_process_t *p, int64_t status, int sig) {
  fl_entity *e = p->data;
  if (status != 0 || sig != 0) {
    fl_gw_count(e->gw, FL_C_NUDGE_FAILURES);
    fl_warn(NULL, "nudge: tmux send-keys to pane %s of '%s' failed (exit %lld, signal %d)", e->pane,
            e->name, (long long)status, sig);
  }
  uv_close((uv_handle_t *)p, (uv_close_cb)fl_free);
}

/* Types the nudge text into the entity's own pane, literally, then Enter. */
static void fl_nudge_tmux(fl_entity *e) {
  fl_gw *gw = e->gw;
  char *args[16];
  int n = 0;
  args[n++] = "tmux";
  if (e->tmux_socket[0]) {
    args[n++] = "-S";
    args[n++] = e->tmux_socket;
  }
  args[n++] = "send-keys";
  args[n++] = "-t";
  args[n++] = e->pane;
  args[n++] = "-l";
  args[n++] = gw->cfg.nudge.text;
  args[n++] = ";";
  args[n++] = "send-keys";
  args[n++] = "-t";
  args[n++] = e->pane;
  args[n++] = "Enter";
  args[n] = NULL;

  uv_process_t *p = fl_calloc(1, sizeof *p);
  if (!p) {
    fl_gw_count(gw, FL_C_NUDGE_FAILURES);
    return;
  }
  uv_stdio_container_t stdio[3] = {
      {.flags = UV_IGNORE}, {.flags = UV_IGNORE}, {.flags = UV_IGNORE}};
  uv_process_options_t opt = {
      .exit_cb = fl_tmux_exit_cb, .file = "tmux", .args = args, .stdio_count = 3, .stdio = stdio};
  p->data = e;
  int rc = uv_spawn(gw->loop, p, &opt);
  if (rc) {
    fl_gw_count(gw, FL_C_NUDGE_FAILURES);
    fl_warn(NULL, "nudge: cannot run tmux for '%s': %s", e->name, uv_strerror(rc));
    uv_close((uv_handle_t *)p, (uv_close_cb)fl_free);
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
  /* A session inside a tool call is busy: skip this step, keep reminding. */
  if (e->client->nwaits == 0) {
    fl_gw_count(gw, FL_C_NUDGES);
    fl_info(NULL, "nudge: '%s' has %zu held message(s)", e->name, held);
    if (e->client->ops && e->client->ops->notify) {
      json_t *data = json_pack("{s:s, s:I, s:s}", "event", "messages_waiting", "held",
                               (json_int_t)held, "hint", "messages are waiting: poll to read them");
      if (data)
        e->client->ops->notify(e->client->ctx, data);
    }
    if (e->pane[0])
      fl_nudge_tmux(e);
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

