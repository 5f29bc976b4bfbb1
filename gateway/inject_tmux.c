/* inject_tmux.c — the tmux backend of inject.h: keys typed into a pane.
 *
 * Typing is one `tmux [-S socket] send-keys -t PANE -l TEXT ; send-keys -t
 * PANE Enter`, run as a child process with no stdio: -l sends the text
 * literally (no key names), and the Enter goes in the same tmux command so
 * nothing can slip between the text and its Enter. The child's exit status
 * is the outcome: tmux exits non-zero when the pane or the server is gone.
 *
 * Status would need a tmux query (#{pane_dead}, #{pane_current_command}),
 * which is a child process too; until the operation takes a callback it
 * reports "unknown". */
#include <stdint.h>
#include <stdio.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/log.h"
#include "gateway/inject.h"

/* One send-keys in flight: the process handle and who to tell. */
typedef struct fl_tmux_run {
  uv_process_t proc;
  fl_inject_done_cb done;
  void *ctx;
  char pane[72]; /* for the log line: FL_MAX_PANE and a little */
  char label[72];
} fl_tmux_run;

static void fl_tmux_close_cb(uv_handle_t *h) { fl_free(h->data); }

static void fl_tmux_exit_cb(uv_process_t *p, int64_t status, int sig) {
  fl_tmux_run *run = p->data;
  int rc = 0;
  if (status != 0 || sig != 0) {
    fl_warn(NULL, "tmux send-keys to pane %s of '%s' failed (exit %lld, signal %d)", run->pane,
            run->label, (long long)status, sig);
    rc = FL_EOFFLINE; /* the pane or its server is not there */
  }
  if (run->done)
    run->done(run->ctx, rc);
  uv_close((uv_handle_t *)p, fl_tmux_close_cb);
}

/* Types text literally into t's pane, then Enter. */
static int fl_tmux_type(uv_loop_t *loop, const fl_inject_target *t, const char *text,
                        fl_inject_done_cb done, void *ctx) {
  if (!t || !t->pane || !t->pane[0] || !text)
    return FL_EINVAL;
  char *args[16];
  int n = 0;
  args[n++] = "tmux";
  if (t->socket && t->socket[0]) {
    args[n++] = "-S";
    args[n++] = (char *)t->socket;
  }
  args[n++] = "send-keys";
  args[n++] = "-t";
  args[n++] = (char *)t->pane;
  args[n++] = "-l";
  args[n++] = (char *)text;
  args[n++] = ";";
  args[n++] = "send-keys";
  args[n++] = "-t";
  args[n++] = (char *)t->pane;
  args[n++] = "Enter";
  args[n] = NULL;

  fl_tmux_run *run = fl_calloc(1, sizeof *run);
  if (!run)
    return FL_ENOMEM;
  run->done = done;
  run->ctx = ctx;
  snprintf(run->pane, sizeof run->pane, "%s", t->pane);
  snprintf(run->label, sizeof run->label, "%s", t->label ? t->label : "");
  uv_stdio_container_t stdio[3] = {
      {.flags = UV_IGNORE}, {.flags = UV_IGNORE}, {.flags = UV_IGNORE}};
  uv_process_options_t opt = {
      .exit_cb = fl_tmux_exit_cb, .file = "tmux", .args = args, .stdio_count = 3, .stdio = stdio};
  run->proc.data = run;
  int rc = uv_spawn(loop, &run->proc, &opt);
  if (rc) {
    /* uv_spawn failed (the caller says so): the handle still needs closing
     * before it is freed, and done never runs. */
    uv_close((uv_handle_t *)&run->proc, fl_tmux_close_cb);
    return rc;
  }
  return 0;
}

static enum fl_inject_state fl_tmux_status(const fl_inject_target *t) {
  (void)t;
  return FL_INJECT_UNKNOWN;
}

const fl_inject_type fl_inject_tmux = {
    .name = "tmux",
    .status = fl_tmux_status,
    .deliver = fl_tmux_type,
    .nudge = fl_tmux_type,
};
