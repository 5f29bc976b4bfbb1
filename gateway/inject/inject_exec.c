/* inject_exec.c — the exec backend of inject.h: one process per message.
 *
 * For an agent that is not a terminal at all (a script, a queue feeder, a
 * wrapper that starts a fresh agent run per task), delivery is running the
 * configured command with the message on its stdin: the text is written
 * whole, stdin is closed, and the command's exit status is the outcome (0 =
 * delivered). Its stdout and stderr are not read (they go nowhere). There
 * is no screen to look at, so the backend has no status: every target
 * reads as ready, and the caller does not gate on it. Without a screen to
 * check, nothing nudges through it, and it cannot open a terminal. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/log.h"
#include "gateway/inject/inject.h"

typedef struct fl_exec_run {
  uv_process_t proc;
  uv_pipe_t in;
  uv_write_t wr;
  fl_inject_delivered_cb done;
  void *ctx;
  char *text;
  int open; /* handles not yet closed */
  int exited;
  int64_t status;
  int sig;
  char label[72];
} fl_exec_run;

static void fl_exec_closed(uv_handle_t *h) {
  fl_exec_run *r = h->data;
  if (--r->open > 0)
    return;
  fl_free(r->text);
  fl_free(r);
}

static void fl_exec_close_in(fl_exec_run *r) {
  if (!uv_is_closing((uv_handle_t *)&r->in))
    uv_close((uv_handle_t *)&r->in, fl_exec_closed);
}

static void fl_exec_exit(uv_process_t *p, int64_t status, int sig) {
  fl_exec_run *r = p->data;
  fl_exec_close_in(r);
  char why[128] = "";
  int rc = 0;
  if (status != 0 || sig != 0) {
    if (sig)
      snprintf(why, sizeof why, "the exec command was killed by signal %d", sig);
    else
      snprintf(why, sizeof why, "the exec command exited with status %lld", (long long)status);
    fl_warn(NULL, "exec delivery to '%s' failed: %s", r->label, why);
    rc = FL_EOFFLINE;
  }
  r->done(r->ctx, rc, rc ? FL_INJECT_UNKNOWN : FL_INJECT_READY, why);
  uv_close((uv_handle_t *)p, fl_exec_closed);
}

static void fl_exec_written(uv_write_t *w, int status) {
  fl_exec_run *r = w->data;
  (void)status; /* a command that did not read it all says so by its exit status */
  fl_exec_close_in(r);
}

static int fl_exec_deliver(uv_loop_t *loop, const fl_inject_target *t, const char *text, size_t len,
                           fl_inject_delivered_cb done, void *ctx) {
  if (!t || !t->argv || !t->argv[0] || !text || !done)
    return FL_EINVAL;
  fl_exec_run *r = fl_calloc(1, sizeof *r);
  if (!r)
    return FL_ENOMEM;
  /* fleet's line first, on its own line (inject.h: head) */
  size_t hl = t->head && t->head[0] ? strlen(t->head) + 1 : 0;
  r->text = fl_malloc(hl + len + 1);
  if (!r->text) {
    fl_free(r);
    return FL_ENOMEM;
  }
  if (hl) {
    memcpy(r->text, t->head, hl - 1);
    r->text[hl - 1] = '\n';
  }
  memcpy(r->text + hl, text, len);
  len += hl;
  r->text[len] = '\0';
  r->done = done;
  r->ctx = ctx;
  snprintf(r->label, sizeof r->label, "%s", t->label ? t->label : "");
  uv_pipe_init(loop, &r->in, 0);
  r->in.data = r;
  r->proc.data = r;
  r->wr.data = r;
  r->open = 2;
  uv_stdio_container_t stdio[3] = {
      {.flags = UV_CREATE_PIPE | UV_READABLE_PIPE, .data.stream = (uv_stream_t *)&r->in},
      {.flags = UV_IGNORE},
      {.flags = UV_IGNORE}};
  uv_process_options_t opt = {.exit_cb = fl_exec_exit,
                              .file = t->argv[0],
                              .args = (char **)t->argv,
                              .env = (char **)t->env,
                              .cwd = (t->cwd && t->cwd[0]) ? t->cwd : NULL,
                              .stdio_count = 3,
                              .stdio = stdio};
  int rc = uv_spawn(loop, &r->proc, &opt);
  if (rc) {
    /* done never runs; both handles still need closing before the free. */
    uv_close((uv_handle_t *)&r->proc, fl_exec_closed);
    uv_close((uv_handle_t *)&r->in, fl_exec_closed);
    return rc;
  }
  uv_buf_t b = uv_buf_init(r->text, (unsigned)len);
  if (uv_write(&r->wr, (uv_stream_t *)&r->in, &b, 1, fl_exec_written) != 0) {
    /* The command gets no stdin; its exit status tells the outcome. */
    fl_exec_close_in(r);
  }
  return 0;
}

const fl_inject_type fl_inject_exec = {
    .name = "exec",
    .status = NULL,
    .deliver = fl_exec_deliver,
    .open = NULL,
    .close = NULL,
};
