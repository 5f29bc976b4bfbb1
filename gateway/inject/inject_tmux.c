/* inject_tmux.c — the tmux backend of inject.h: keys typed into a pane.
 *
 * Typing (briefs and nudge lines alike) is inject_tmux_deliver.c's checked
 * delivery; this file runs tmux commands as child processes with no stdio,
 * whose exit status is the outcome: tmux exits non-zero when the pane or
 * the server is gone.
 *
 * Status is a look at the pane: `tmux display -p -t PANE '#{cursor_y}
 * #{pane_in_mode}' ; capture-pane -p -t PANE`, one child process whose
 * stdout comes back through a pipe. The cursor line is read against the
 * target's prompt (a POSIX ERE): the whole line matching is an empty input;
 * a start of the line matching with text after it is a draft someone typed;
 * anything else (or a pane in copy mode) is busy. An empty input is ready
 * only if a second look quiet_ms later finds the screen unchanged: an agent
 * at work (a spinner, streaming output) keeps changing it, while its input
 * line can look empty all along. When the target has a busy pattern, an
 * empty input is busy instead if any line of the screen matches it: an
 * agent whose input line stays live while it works (Codex) can keep a
 * still screen for longer than quiet_ms, but shows its status line all
 * along. A failed tmux is a gone pane. */
#include <regex.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/limits.h"
#include "common/log.h"
#include "gateway/inject/inject.h"
#include "gateway/inject/inject_tmux.h"

/* One send-keys in flight: the process handle and who to tell. */
typedef struct fl_tmux_run {
  uv_process_t proc;
  fl_inject_done_cb done;
  void *ctx;
  char pane[72]; /* for the log line: FL_MAX_PANE and a little */
  char label[72];
  const char *what; /* "send-keys", "kill-pane" */
} fl_tmux_run;

static void fl_tmux_close_cb(uv_handle_t *h) { fl_free(h->data); }

static void fl_tmux_exit_cb(uv_process_t *p, int64_t status, int sig) {
  fl_tmux_run *run = p->data;
  int rc = 0;
  if (status != 0 || sig != 0) {
    fl_warn(NULL, "tmux %s to pane %s of '%s' failed (exit %lld, signal %d)", run->what, run->pane,
            run->label, (long long)status, sig);
    rc = FL_EOFFLINE; /* the pane or its server is not there */
  }
  if (run->done)
    run->done(run->ctx, rc);
  uv_close((uv_handle_t *)p, fl_tmux_close_cb);
}

/* Closes t's pane: kill-pane, which ends what runs in it. */
static int fl_tmux_close(uv_loop_t *loop, const fl_inject_target *t, fl_inject_done_cb done,
                         void *ctx) {
  if (!t || !t->pane || !t->pane[0])
    return FL_EINVAL;
  char *args[8];
  int n = fl_tmux_argv(args, t->socket);
  args[n++] = "kill-pane";
  args[n++] = "-t";
  args[n++] = (char *)t->pane;
  args[n] = NULL;
  return fl_tmux_run_args(loop, args, "kill-pane", t, done, ctx);
}

/* Runs one tmux command (args, NULL-terminated) with no stdio about t;
 * done gets its outcome. */
int fl_tmux_argv(char **args, const char *socket) {
  int n = 0;
  args[n++] = "tmux";
  if (socket && socket[0]) {
    args[n++] = "-S";
    args[n++] = (char *)socket;
  }
  return n;
}

int fl_tmux_run_args(uv_loop_t *loop, char **args, const char *what, const fl_inject_target *t,
                     fl_inject_done_cb done, void *ctx) {
  fl_tmux_run *run = fl_calloc(1, sizeof *run);
  if (!run)
    return FL_ENOMEM;
  run->what = what;
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
  regex_t busy; /* the target's busy pattern, when have_busy */
  int have_busy;
  unsigned quiet_ms;
  int round;                /* captures started: 1, then 2 */
  uint64_t first_hash;      /* of round 1's capture */
  uint64_t last_hash;       /* of the latest capture */
  fl_tmux_looked_cb looked; /* instead of done: a look that wants the hash too */
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
  if (p->have_busy)
    regfree(&p->busy);
  fl_free(p);
}

/* The look is over: tell the caller, then let the probe go. */
static void fl_tmux_probe_finish(fl_tmux_probe *p, enum fl_inject_state st) {
  if (p->looked)
    p->looked(p->ctx, st, p->last_hash);
  else if (p->done)
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

/* Whether a line of the screen [from, end) matches the busy pattern (lines
 * longer than FL_MAX_PROMPT_SCAN are tested by their start). */
static int fl_tmux_shows_busy(const fl_tmux_probe *p, const char *from, const char *end) {
  if (!p->have_busy)
    return 0;
  char buf[FL_MAX_PROMPT_SCAN + 1];
  while (from < end) {
    const char *eol = memchr(from, '\n', (size_t)(end - from));
    size_t n = (size_t)((eol ? eol : end) - from);
    size_t k = n < FL_MAX_PROMPT_SCAN ? n : FL_MAX_PROMPT_SCAN;
    memcpy(buf, from, k);
    buf[k] = '\0';
    if (regexec(&p->busy, buf, 0, NULL, 0) == 0)
      return 1;
    from = eol ? eol + 1 : end;
  }
  return 0;
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
  enum fl_inject_state st = fl_tmux_read_line(p, line, n);
  if (st == FL_INJECT_READY && fl_tmux_shows_busy(p, nl + 1, end))
    return FL_INJECT_BUSY;
  return st;
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
  p->last_hash = h;
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
  int n = fl_tmux_argv(args, p->socket);
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

/* Starts a look at t's pane: done (or looked, when set) runs once. */
static int fl_tmux_probe_start(uv_loop_t *loop, const fl_inject_target *t, unsigned quiet_ms,
                               fl_inject_status_cb done, fl_tmux_looked_cb looked, void *ctx) {
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
  if (t->busy && t->busy[0]) {
    if (regcomp(&p->busy, t->busy, REG_EXTENDED | REG_NOSUB) != 0) {
      if (p->have_re)
        regfree(&p->re);
      fl_free(p);
      return FL_EINVAL;
    }
    p->have_busy = 1;
  }
  p->loop = loop;
  p->done = done;
  p->looked = looked;
  p->ctx = ctx;
  p->quiet_ms = quiet_ms;
  snprintf(p->pane, sizeof p->pane, "%s", t->pane);
  snprintf(p->socket, sizeof p->socket, "%s", t->socket ? t->socket : "");
  uv_timer_init(loop, &p->timer);
  p->timer.data = p;
  int rc = fl_tmux_capture_start(p);
  if (rc) {
    p->done = NULL; /* done never runs when the start fails */
    p->looked = NULL;
    fl_tmux_probe_finish(p, FL_INJECT_UNKNOWN);
    return rc;
  }
  return 0;
}

static int fl_tmux_status(uv_loop_t *loop, const fl_inject_target *t, fl_inject_status_cb done,
                          void *ctx) {
  return fl_tmux_probe_start(loop, t, t ? t->quiet_ms : 0, done, NULL, ctx);
}

int fl_tmux_look(uv_loop_t *loop, const fl_inject_target *t, fl_tmux_looked_cb looked, void *ctx) {
  return fl_tmux_probe_start(loop, t, 0, NULL, looked, ctx);
}

/* ---- opening a window ---- */

/* One new-window in flight: its process and its stdout (the pane id) and
 * stderr (what tmux said) pipes. Freed when all three handles have closed. */
typedef struct fl_tmux_open {
  uv_process_t proc;
  uv_pipe_t out, errp;
  fl_inject_opened_cb done;
  void *ctx;
  int open;    /* handles not yet closed */
  int pending; /* of exit, stdout EOF, stderr EOF: still to come */
  int failed;
  size_t outlen, errlen;
  char outbuf[FL_MAX_PANE + 2];
  char errbuf[512];
} fl_tmux_open;

static void fl_tmux_open_closed(uv_handle_t *h) {
  fl_tmux_open *o = h->data;
  if (--o->open == 0)
    fl_free(o);
}

/* Exit and both EOFs seen: tell the caller, close the handles. */
static void fl_tmux_open_step(fl_tmux_open *o) {
  if (--o->pending > 0)
    return;
  o->outbuf[o->outlen] = '\0';
  o->errbuf[o->errlen] = '\0';
  o->outbuf[strcspn(o->outbuf, "\r\n")] = '\0';
  size_t n = strlen(o->errbuf);
  while (n && (o->errbuf[n - 1] == '\n' || o->errbuf[n - 1] == '\r'))
    o->errbuf[--n] = '\0';
  int ok = !o->failed && o->outbuf[0] == '%';
  if (o->done)
    o->done(o->ctx, ok ? 0 : FL_EOFFLINE, ok ? o->outbuf : "", o->errbuf);
  uv_close((uv_handle_t *)&o->proc, fl_tmux_open_closed);
  uv_close((uv_handle_t *)&o->out, fl_tmux_open_closed);
  uv_close((uv_handle_t *)&o->errp, fl_tmux_open_closed);
}

static void fl_tmux_open_exit(uv_process_t *p, int64_t status, int sig) {
  fl_tmux_open *o = p->data;
  o->failed = status != 0 || sig != 0;
  fl_tmux_open_step(o);
}

static void fl_tmux_open_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b) {
  fl_tmux_open *o = h->data;
  (void)hint;
  static char sink[64]; /* past a buffer's end: read only to drain */
  int is_out = h == (uv_handle_t *)&o->out;
  char *buf = is_out ? o->outbuf : o->errbuf;
  size_t cap = (is_out ? sizeof o->outbuf : sizeof o->errbuf) - 1;
  size_t len = is_out ? o->outlen : o->errlen;
  *b = len < cap ? uv_buf_init(buf + len, (unsigned)(cap - len)) : uv_buf_init(sink, sizeof sink);
}

static void fl_tmux_open_read(uv_stream_t *st, ssize_t n, const uv_buf_t *b) {
  fl_tmux_open *o = st->data;
  int is_out = st == (uv_stream_t *)&o->out;
  char *buf = is_out ? o->outbuf : o->errbuf;
  if (n > 0) {
    if (b->base >= buf && b->base < buf + (is_out ? sizeof o->outbuf : sizeof o->errbuf))
      *(is_out ? &o->outlen : &o->errlen) += (size_t)n;
    return;
  }
  if (n == 0)
    return;
  uv_read_stop(st);
  fl_tmux_open_step(o);
}

/* `tmux [-S socket] new-window -d -P -F '#{pane_id}' [-c cwd] [-e NAME=VALUE]...
 * -- argv...`: the new pane's id comes back on stdout. */
static int fl_tmux_window_open(uv_loop_t *loop, const fl_inject_launch *l, fl_inject_opened_cb done,
                               void *ctx) {
  if (!l || !l->argv || !l->argv[0])
    return FL_EINVAL;
  size_t nenv = 0, nargv = 0;
  while (l->env && l->env[nenv])
    nenv++;
  while (l->argv[nargv])
    nargv++;
  char **args = fl_calloc(16 + 2 * nenv + nargv, sizeof *args);
  fl_tmux_open *o = fl_calloc(1, sizeof *o);
  int rc = FL_ENOMEM;
  if (!args || !o)
    goto fail;
  size_t n = (size_t)fl_tmux_argv(args, l->socket);
  args[n++] = "new-window";
  args[n++] = "-d";
  args[n++] = "-P";
  args[n++] = "-F";
  args[n++] = "#{pane_id}";
  if (l->cwd && l->cwd[0]) {
    args[n++] = "-c";
    args[n++] = (char *)l->cwd;
  }
  for (size_t i = 0; i < nenv; i++) {
    args[n++] = "-e";
    args[n++] = (char *)l->env[i];
  }
  args[n++] = "--";
  for (size_t i = 0; i < nargv; i++)
    args[n++] = (char *)l->argv[i];
  args[n] = NULL;

  o->done = done;
  o->ctx = ctx;
  o->proc.data = o;
  uv_pipe_init(loop, &o->out, 0);
  uv_pipe_init(loop, &o->errp, 0);
  o->out.data = o;
  o->errp.data = o;
  o->open = 3;
  o->pending = 3;
  uv_stdio_container_t stdio[3] = {
      {.flags = UV_IGNORE},
      {.flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE, .data.stream = (uv_stream_t *)&o->out},
      {.flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE, .data.stream = (uv_stream_t *)&o->errp}};
  uv_process_options_t opt = {
      .exit_cb = fl_tmux_open_exit, .file = "tmux", .args = args, .stdio_count = 3, .stdio = stdio};
  rc = uv_spawn(loop, &o->proc, &opt);
  if (rc == 0)
    rc = uv_read_start((uv_stream_t *)&o->out, fl_tmux_open_alloc, fl_tmux_open_read);
  if (rc == 0)
    rc = uv_read_start((uv_stream_t *)&o->errp, fl_tmux_open_alloc, fl_tmux_open_read);
  if (rc) {
    if (uv_is_active((uv_handle_t *)&o->proc))
      uv_process_kill(&o->proc, SIGKILL);
    uv_close((uv_handle_t *)&o->proc, fl_tmux_open_closed);
    uv_close((uv_handle_t *)&o->out, fl_tmux_open_closed);
    uv_close((uv_handle_t *)&o->errp, fl_tmux_open_closed);
    o = NULL; /* freed by the close callbacks; done never runs */
    goto fail;
  }
  fl_free(args);
  return 0;

fail:
  fl_free(args);
  fl_free(o);
  return rc;
}

const fl_inject_type fl_inject_tmux = {
    .name = "tmux",
    .status = fl_tmux_status,
    .deliver = fl_tmux_deliver,
    .open = fl_tmux_window_open,
    .close = fl_tmux_close,
};
