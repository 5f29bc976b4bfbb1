/* inject_tmux.c — the tmux backend of inject.h: keys typed into a pane.
 *
 * Typing is one `tmux [-S socket] send-keys -t PANE -l TEXT ; send-keys -t
 * PANE Enter`, run as a child process with no stdio: -l sends the text
 * literally (no key names), and the Enter goes in the same tmux command so
 * nothing can slip between the text and its Enter. The child's exit status
 * is the outcome: tmux exits non-zero when the pane or the server is gone.
 *
 * Status is a look at the pane: `tmux display -p -t PANE '#{cursor_y}
 * #{pane_in_mode}' ; capture-pane -p -t PANE`, one child process whose
 * stdout comes back through a pipe. The cursor line is read against the
 * target's prompt (a POSIX ERE): the whole line matching is an empty input;
 * a start of the line matching with text after it is a draft someone typed;
 * anything else (or a pane in copy mode) is busy. An empty input is ready
 * only if a second look quiet_ms later finds the screen unchanged: an agent
 * at work (a spinner, streaming output) keeps changing it, while its input
 * line can look empty all along. A failed tmux is a gone pane. */
#include <regex.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/limits.h"
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

/* ---- status ---- */

/* One status look: up to two captures quiet_ms apart. Owned by itself; freed
 * when its timer has closed after done ran. */
typedef struct fl_tmux_probe {
  uv_loop_t *loop;
  uv_timer_t timer;
  fl_inject_status_cb done;
  void *ctx;
  regex_t re;
  int have_re;
  unsigned quiet_ms;
  int round;           /* captures started: 1, then 2 */
  uint64_t first_hash; /* of round 1's capture */
  char pane[FL_MAX_PANE + 1];
  char socket[FL_MAX_PATH + 1];
} fl_tmux_probe;

/* One capture in flight: its process and its stdout pipe. Freed when both
 * have closed. */
typedef struct fl_tmux_capture {
  fl_tmux_probe *probe;
  uv_process_t proc;
  uv_pipe_t out;
  int open;   /* handles not yet closed */
  int exited; /* the process ended ... */
  int eof;    /* ... and its stdout is drained */
  int failed; /* exited non-zero, or by a signal */
  int overflow;
  size_t len;
  char *buf; /* FL_MAX_CAPTURE + 1 bytes */
} fl_tmux_capture;

static void fl_tmux_probe_closed(uv_handle_t *h) {
  fl_tmux_probe *p = h->data;
  if (p->have_re)
    regfree(&p->re);
  fl_free(p);
}

/* The look is over: tell the caller, then let the probe go. */
static void fl_tmux_probe_finish(fl_tmux_probe *p, enum fl_inject_state st) {
  if (p->done)
    p->done(p->ctx, st);
  uv_close((uv_handle_t *)&p->timer, fl_tmux_probe_closed);
}

static uint64_t fl_tmux_hash(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (size_t i = 0; i < n; i++)
    h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return h;
}

/* What the cursor line says, against the prompt: READY (empty input), DRAFT
 * or BUSY. */
static enum fl_inject_state fl_tmux_read_line(fl_tmux_probe *p, const char *line, size_t len) {
  if (!p->have_re)
    return FL_INJECT_READY;
  char buf[FL_MAX_PROMPT_SCAN + 1];
  size_t scan = len < FL_MAX_PROMPT_SCAN ? len : FL_MAX_PROMPT_SCAN;
  if (len <= FL_MAX_PROMPT_SCAN) {
    memcpy(buf, line, len);
    buf[len] = '\0';
    if (regexec(&p->re, buf, 0, NULL, 0) == 0)
      return FL_INJECT_READY;
  }
  /* A prompt with something typed after it: some start of the line is the
   * prompt, and the rest is not blank. */
  for (size_t k = 1; k < scan; k++) {
    memcpy(buf, line, k);
    buf[k] = '\0';
    if (regexec(&p->re, buf, 0, NULL, 0) != 0)
      continue;
    for (size_t j = k; j < len; j++)
      if (line[j] != ' ' && line[j] != '\t')
        return FL_INJECT_DRAFT;
  }
  return FL_INJECT_BUSY;
}

/* What a capture (display's line, then the screen) says of the pane. */
static enum fl_inject_state fl_tmux_read(fl_tmux_probe *p, const char *out, size_t len) {
  const char *nl = memchr(out, '\n', len);
  unsigned cy = 0, in_mode = 0;
  if (!nl || sscanf(out, "%u %u", &cy, &in_mode) != 2)
    return FL_INJECT_UNKNOWN;
  if (in_mode)
    return FL_INJECT_BUSY; /* copy mode: keys would go to tmux, not the agent */
  const char *line = nl + 1, *end = out + len;
  for (unsigned y = 0; y < cy && line < end; y++) {
    const char *next = memchr(line, '\n', (size_t)(end - line));
    line = next ? next + 1 : end;
  }
  const char *eol = line < end ? memchr(line, '\n', (size_t)(end - line)) : NULL;
  size_t n = line < end ? (size_t)((eol ? eol : end) - line) : 0;
  return fl_tmux_read_line(p, line, n);
}

static int fl_tmux_capture_start(fl_tmux_probe *p);

static void fl_tmux_quiet_cb(uv_timer_t *t) {
  fl_tmux_probe *p = t->data;
  if (fl_tmux_capture_start(p) != 0)
    fl_tmux_probe_finish(p, FL_INJECT_UNKNOWN);
}

/* A capture is complete (exited and drained): judge it, then either look
 * again after quiet_ms or finish. */
static void fl_tmux_capture_done(fl_tmux_capture *c) {
  fl_tmux_probe *p = c->probe;
  if (c->failed) {
    fl_tmux_probe_finish(p, FL_INJECT_GONE);
    return;
  }
  if (c->overflow) {
    fl_tmux_probe_finish(p, FL_INJECT_UNKNOWN);
    return;
  }
  enum fl_inject_state st = fl_tmux_read(p, c->buf, c->len);
  uint64_t h = fl_tmux_hash(c->buf, c->len);
  if (st != FL_INJECT_READY || p->quiet_ms == 0) {
    fl_tmux_probe_finish(p, st);
  } else if (p->round == 1) {
    p->first_hash = h;
    uv_timer_start(&p->timer, fl_tmux_quiet_cb, p->quiet_ms, 0);
  } else {
    fl_tmux_probe_finish(p, h == p->first_hash ? FL_INJECT_READY : FL_INJECT_BUSY);
  }
}

static void fl_tmux_capture_closed(uv_handle_t *h) {
  fl_tmux_capture *c = h->data;
  if (--c->open == 0) {
    fl_free(c->buf);
    fl_free(c);
  }
}

/* Both halves seen: judge, then close the handles. */
static void fl_tmux_capture_maybe_done(fl_tmux_capture *c) {
  if (!c->exited || !c->eof)
    return;
  fl_tmux_capture_done(c);
  uv_close((uv_handle_t *)&c->proc, fl_tmux_capture_closed);
  uv_close((uv_handle_t *)&c->out, fl_tmux_capture_closed);
}

static void fl_tmux_capture_exit(uv_process_t *proc, int64_t status, int sig) {
  fl_tmux_capture *c = proc->data;
  c->exited = 1;
  c->failed = status != 0 || sig != 0;
  fl_tmux_capture_maybe_done(c);
}

static void fl_tmux_capture_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b) {
  fl_tmux_capture *c = h->data;
  (void)hint;
  if (c->len >= FL_MAX_CAPTURE) {
    /* Over the cap: read on into the last byte, only to drain the pipe. */
    c->overflow = 1;
    c->len = FL_MAX_CAPTURE;
    *b = uv_buf_init(c->buf + FL_MAX_CAPTURE, 1);
    return;
  }
  *b = uv_buf_init(c->buf + c->len, (unsigned)(FL_MAX_CAPTURE - c->len));
}

static void fl_tmux_capture_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b) {
  fl_tmux_capture *c = s->data;
  (void)b;
  if (n > 0) {
    if (!c->overflow)
      c->len += (size_t)n;
    return;
  }
  if (n == 0)
    return;
  uv_read_stop(s); /* EOF, or a read error: either way nothing more comes */
  c->eof = 1;
  fl_tmux_capture_maybe_done(c);
}

/* Starts one capture of p's pane. */
static int fl_tmux_capture_start(fl_tmux_probe *p) {
  fl_tmux_capture *c = fl_calloc(1, sizeof *c);
  if (!c)
    return FL_ENOMEM;
  c->buf = fl_malloc(FL_MAX_CAPTURE + 1);
  if (!c->buf) {
    fl_free(c);
    return FL_ENOMEM;
  }
  c->probe = p;
  char *args[16];
  int n = 0;
  args[n++] = "tmux";
  if (p->socket[0]) {
    args[n++] = "-S";
    args[n++] = p->socket;
  }
  args[n++] = "display";
  args[n++] = "-p";
  args[n++] = "-t";
  args[n++] = p->pane;
  args[n++] = "#{cursor_y} #{pane_in_mode}";
  args[n++] = ";";
  args[n++] = "capture-pane";
  args[n++] = "-p";
  args[n++] = "-t";
  args[n++] = p->pane;
  args[n] = NULL;
  uv_pipe_init(p->loop, &c->out, 0);
  c->out.data = c;
  c->proc.data = c;
  c->open = 2;
  uv_stdio_container_t stdio[3] = {
      {.flags = UV_IGNORE},
      {.flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE, .data.stream = (uv_stream_t *)&c->out},
      {.flags = UV_IGNORE}};
  uv_process_options_t opt = {.exit_cb = fl_tmux_capture_exit,
                              .file = "tmux",
                              .args = args,
                              .stdio_count = 3,
                              .stdio = stdio};
  int rc = uv_spawn(p->loop, &c->proc, &opt);
  if (rc == 0)
    rc = uv_read_start((uv_stream_t *)&c->out, fl_tmux_capture_alloc, fl_tmux_capture_read);
  if (rc) {
    if (uv_is_active((uv_handle_t *)&c->proc))
      uv_process_kill(&c->proc, SIGKILL);
    /* Neither callback comes once the handles are closed. */
    uv_close((uv_handle_t *)&c->proc, fl_tmux_capture_closed);
    uv_close((uv_handle_t *)&c->out, fl_tmux_capture_closed);
    return rc;
  }
  p->round++;
  return 0;
}

static int fl_tmux_status(uv_loop_t *loop, const fl_inject_target *t, fl_inject_status_cb done,
                          void *ctx) {
  if (!t || !t->pane || !t->pane[0] || strlen(t->pane) > FL_MAX_PANE ||
      (t->socket && strlen(t->socket) > FL_MAX_PATH))
    return FL_EINVAL;
  fl_tmux_probe *p = fl_calloc(1, sizeof *p);
  if (!p)
    return FL_ENOMEM;
  if (t->prompt && t->prompt[0]) {
    if (regcomp(&p->re, t->prompt, REG_EXTENDED | REG_NOSUB) != 0) {
      fl_free(p);
      return FL_EINVAL;
    }
    p->have_re = 1;
  }
  p->loop = loop;
  p->done = done;
  p->ctx = ctx;
  p->quiet_ms = t->quiet_ms;
  snprintf(p->pane, sizeof p->pane, "%s", t->pane);
  snprintf(p->socket, sizeof p->socket, "%s", t->socket ? t->socket : "");
  uv_timer_init(loop, &p->timer);
  p->timer.data = p;
  int rc = fl_tmux_capture_start(p);
  if (rc) {
    p->done = NULL; /* done never runs when the start fails */
    fl_tmux_probe_finish(p, FL_INJECT_UNKNOWN);
    return rc;
  }
  return 0;
}

const fl_inject_type fl_inject_tmux = {
    .name = "tmux",
    .status = fl_tmux_status,
    .deliver = fl_tmux_type,
    .nudge = fl_tmux_type,
};
