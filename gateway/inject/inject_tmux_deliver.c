/* inject_tmux_deliver.c — delivering one message into a tmux pane, checked
 * at every step.
 *
 * Briefs and nudge lines alike must land whole, once, and never on top of
 * what someone is typing, and no byte of them may act as a key: the text is
 * first made safe to type (inject_text.h: control bytes become visible
 * stand-ins, so nothing can press Ctrl-C, submit early or end a bracketed
 * paste, and a leading command character of the agent is neutralized).
 * Then a delivery is a small chain of child processes, each step looking
 * at the pane before the next:
 *
 *   1. look: the pane must be idle at an empty prompt (a draft or a busy
 *      agent: nothing is typed, the caller tries later);
 *   2. type the text literally: one line with `send-keys -l` (no key names,
 *      so "Enter" or "C-c" in the text are just words); several lines, a
 *      tab, a command character anywhere, or a long text through a named
 *      buffer filled from stdin and `paste-buffer -p -r`, which the pane
 *      receives as one bracketed paste when its program asked for that,
 *      with its newlines as they are;
 *   3. look until the screen shows it (changed, and no longer an empty
 *      prompt); if it never does, erase it (below) and fail;
 *   4. press Enter, once, as a tmux command of its own: an agent that reads
 *      a burst of 64 bytes or more as a paste (Claude Code) would take an
 *      Enter in the same burst as a newline;
 *   5. look until it was taken (the screen changed again and the input line
 *      holds no draft: an empty prompt again, or the agent at work). Text
 *      still in the input line then is erased (one backspace per character
 *      typed), so a failed delivery leaves no draft behind to be sent later
 *      or to block the next one.
 *
 * Each look repeats every FL_TMUX_LOOK_GAP_MS for at most
 * FL_TMUX_VERIFY_MS: a pane that shows nothing by then has failed, and the
 * caller is told why. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/ids.h"
#include "common/log.h"
#include "common/time.h"
#include "gateway/inject/inject_text.h"
#include "gateway/inject/inject_tmux.h"

/* A terminal redraws within milliseconds, but an agent on a loaded
 * machine can take seconds to echo keys or take an Enter (opencode was seen
 * past three). Each check returns as soon as the screen shows the step, so
 * the bound only decides how long a failing step waits: ten seconds before
 * calling a pane stuck. */
#define FL_TMUX_VERIFY_MS 10000
#define FL_TMUX_LOOK_GAP_MS 50
/* One line up to this long goes as a send-keys argument; longer or
 * multi-line text goes through stdin (one argv string is capped by the
 * kernel at 128 KiB). */
#define FL_TMUX_ARG_TEXT_MAX 4096

enum fl_send_step { FL_SEND_LOOK0, FL_SEND_ARRIVE, FL_SEND_SUBMIT };

typedef struct fl_tmux_send {
  uv_loop_t *loop;
  uv_timer_t timer;
  fl_inject_delivered_cb done;
  void *ctx;
  fl_inject_target t; /* strings point into the copies below */
  char pane[FL_MAX_PANE + 1];
  char socket[FL_MAX_PATH + 1];
  char label[72];
  char *prompt;
  char *busy;
  char *text; /* as typed: made safe by inject_text */
  size_t len;
  size_t chars;          /* characters in text, for erasing it */
  int multi;             /* typed as one paste */
  char note[256];        /* what inject_text changed, for the sender */
  const char *erase_why; /* why the text is being erased: the failure told */
  char buffer[48];       /* the named paste buffer */
  enum fl_send_step step;
  uint64_t before, typed; /* screen hashes: before typing, once it showed */
  long long until_ms;     /* monotonic: when the current check gives up */
  /* load-buffer's stdin */
  uv_process_t proc;
  uv_pipe_t in;
  uv_write_t wr;
  int open; /* handles not yet closed */
} fl_tmux_send;

/* Every handle of s closes through here; s goes with the last. */
static void fl_send_closed(uv_handle_t *h) {
  fl_tmux_send *s = h->data;
  if (--s->open > 0)
    return;
  fl_free(s->prompt);
  fl_free(s->busy);
  fl_free(s->text);
  fl_free(s);
}

static void fl_send_finish(fl_tmux_send *s, int status, enum fl_inject_state seen,
                           const char *why) {
  if (status < 0)
    fl_warn(NULL, "tmux: delivery to pane %s of '%s' failed: %s", s->pane, s->label, why);
  s->done(s->ctx, status, seen, why ? why : "");
  uv_close((uv_handle_t *)&s->timer, fl_send_closed);
}

static void fl_send_looked(void *ctx, enum fl_inject_state st, uint64_t screen);
static void fl_send_erase(fl_tmux_send *s);
static int fl_tmux_send_line(fl_tmux_send *s);
static int fl_tmux_send_paste(fl_tmux_send *s);

static void fl_send_look(fl_tmux_send *s) {
  int rc = fl_tmux_look(s->loop, &s->t, fl_send_looked, s);
  if (rc)
    fl_send_finish(s, rc, FL_INJECT_UNKNOWN,
                   s->step == FL_SEND_LOOK0 ? "cannot look at the pane"
                                            : "cannot look at the pane after typing");
}

static void fl_send_look_timer(uv_timer_t *t) { fl_send_look(t->data); }

/* Looks again soon, or gives up with why once the bound is reached. */
static void fl_send_again(fl_tmux_send *s, enum fl_inject_state st, const char *why) {
  if (fl_mono_ms() >= s->until_ms) {
    fl_send_finish(s, FL_ETIMEDOUT, st, why);
    return;
  }
  uv_timer_start(&s->timer, fl_send_look_timer, FL_TMUX_LOOK_GAP_MS, 0);
}

static void fl_send_entered(void *ctx, int status) {
  fl_tmux_send *s = ctx;
  if (status) {
    fl_send_finish(s, FL_EOFFLINE, FL_INJECT_GONE,
                   "the text was typed, but tmux could not press Enter (the pane is gone?)");
    return;
  }
  s->step = FL_SEND_SUBMIT;
  s->until_ms = fl_mono_ms() + FL_TMUX_VERIFY_MS;
  fl_send_look(s);
}

static void fl_send_enter(fl_tmux_send *s) {
  char *args[8];
  int n = fl_tmux_argv(args, s->socket);
  args[n++] = "send-keys";
  args[n++] = "-t";
  args[n++] = s->pane;
  args[n++] = "Enter";
  args[n] = NULL;
  int rc = fl_tmux_run_args(s->loop, args, "send-keys", &s->t, fl_send_entered, s);
  if (rc)
    fl_send_finish(s, rc, FL_INJECT_UNKNOWN, "the text was typed, but tmux could not be run");
}

static void fl_send_pause_done(uv_timer_t *t) { fl_send_enter(t->data); }

static void fl_send_erased(void *ctx, int status) {
  fl_tmux_send *s = ctx;
  fl_send_finish(s, FL_ETIMEDOUT, FL_INJECT_DRAFT,
                 status ? "typed, but it did not go in, and tmux could not erase it: the text may "
                          "still be in the input line"
                        : s->erase_why);
}

/* The text did not show, or Enter did not take: backspace over what was
 * typed, so no draft is left. */
static void fl_send_erase(fl_tmux_send *s) {
  char count[24];
  snprintf(count, sizeof count, "%zu", s->chars);
  char *args[12];
  int n = fl_tmux_argv(args, s->socket);
  args[n++] = "send-keys";
  args[n++] = "-t";
  args[n++] = s->pane;
  args[n++] = "-N";
  args[n++] = count;
  args[n++] = "BSpace";
  args[n] = NULL;
  if (fl_tmux_run_args(s->loop, args, "send-keys", &s->t, fl_send_erased, s) != 0)
    fl_send_erased(s, FL_EOFFLINE);
}

static void fl_send_looked(void *ctx, enum fl_inject_state st, uint64_t screen) {
  fl_tmux_send *s = ctx;
  int has_prompt = s->prompt && s->prompt[0];
  switch (s->step) {
  case FL_SEND_LOOK0:
    if (st != FL_INJECT_READY) {
      fl_send_finish(s, FL_INJECT_NOT_TYPED, st, "the pane is not at an empty prompt");
      return;
    }
    s->before = screen;
    break; /* on to typing, below */
  case FL_SEND_ARRIVE:
    if (screen != s->before && (!has_prompt || st != FL_INJECT_READY)) {
      s->typed = screen;
      if (s->t.pause_ms)
        uv_timer_start(&s->timer, fl_send_pause_done, s->t.pause_ms, 0);
      else
        fl_send_enter(s);
    } else if (fl_mono_ms() >= s->until_ms) {
      /* Keys reach the agent in order, so backspaces sent now come after
       * the text however late it shows: nothing is left behind. */
      s->erase_why = "typed, but the text did not show in the pane; Enter was not pressed, and "
                     "the text was erased from the input line";
      fl_send_erase(s);
    } else {
      fl_send_again(s, st, "typed, but the text did not show in the pane; Enter was not pressed");
    }
    return;
  case FL_SEND_SUBMIT:
    if (screen != s->typed && st != FL_INJECT_DRAFT && st != FL_INJECT_GONE)
      fl_send_finish(s, 0, st, s->note);
    else if (fl_mono_ms() >= s->until_ms && st == FL_INJECT_DRAFT) {
      s->erase_why = "typed, but Enter did not submit it; the text was erased from the input "
                     "line, so the agent did not get it";
      fl_send_erase(s);
    } else
      fl_send_again(s, st,
                    "typed, but Enter did not submit it: the text is still in the input line");
    return;
  }

  /* Typing. */
  s->step = FL_SEND_ARRIVE;
  s->until_ms = fl_mono_ms() + FL_TMUX_VERIFY_MS;
  int rc;
  if (!s->multi && s->len <= FL_TMUX_ARG_TEXT_MAX)
    rc = fl_tmux_send_line(s);
  else
    rc = fl_tmux_send_paste(s);
  if (rc)
    fl_send_finish(s, rc, FL_INJECT_UNKNOWN, "tmux could not be run to type the text");
}

/* The text is in (or tmux failed): look until the screen shows it. */
static void fl_send_typed(void *ctx, int status) {
  fl_tmux_send *s = ctx;
  if (status) {
    fl_send_finish(s, FL_EOFFLINE, FL_INJECT_GONE,
                   "tmux could not type into the pane (is it gone?)");
    return;
  }
  fl_send_look(s);
}

/* One line: `send-keys -l -- TEXT`. tmux reads an argument ending in ';'
 * as the end of a command (and drops the ';'), unless that ';' follows a
 * backslash, which it then drops instead: so a final ';' gets a backslash
 * put before it, and arrives as typed. */
static int fl_tmux_send_line(fl_tmux_send *s) {
  char *arg = fl_malloc(s->len + 2);
  if (!arg)
    return FL_ENOMEM;
  memcpy(arg, s->text, s->len);
  arg[s->len] = '\0';
  if (s->len && s->text[s->len - 1] == ';') {
    arg[s->len - 1] = '\\';
    arg[s->len] = ';';
    arg[s->len + 1] = '\0';
  }
  char *args[12];
  int n = fl_tmux_argv(args, s->socket);
  args[n++] = "send-keys";
  args[n++] = "-t";
  args[n++] = s->pane;
  args[n++] = "-l";
  args[n++] = "--";
  args[n++] = arg;
  args[n] = NULL;
  int rc = fl_tmux_run_args(s->loop, args, "send-keys", &s->t, fl_send_typed, s);
  fl_free(arg); /* uv_spawn copied the arguments */
  return rc;
}

static void fl_paste_close_in(fl_tmux_send *s) {
  if (!uv_is_closing((uv_handle_t *)&s->in))
    uv_close((uv_handle_t *)&s->in, fl_send_closed);
}

/* The buffer holds the text: paste it, as a bracketed paste where the pane
 * asked for one (-p), newlines kept (-r), the buffer deleted after (-d). */
static void fl_paste_loaded(uv_process_t *p, int64_t status, int sig) {
  fl_tmux_send *s = p->data;
  uv_close((uv_handle_t *)&s->proc, fl_send_closed);
  fl_paste_close_in(s);
  if (status != 0 || sig != 0) {
    fl_send_finish(s, FL_EOFFLINE, FL_INJECT_UNKNOWN, "tmux could not load the text into a buffer");
    return;
  }
  char *args[16];
  int n = fl_tmux_argv(args, s->socket);
  args[n++] = "paste-buffer";
  args[n++] = "-p";
  args[n++] = "-d";
  args[n++] = "-r";
  args[n++] = "-b";
  args[n++] = s->buffer;
  args[n++] = "-t";
  args[n++] = s->pane;
  args[n] = NULL;
  int rc = fl_tmux_run_args(s->loop, args, "paste-buffer", &s->t, fl_send_typed, s);
  if (rc)
    fl_send_finish(s, rc, FL_INJECT_UNKNOWN, "tmux could not be run to paste the text");
}

static void fl_paste_written(uv_write_t *w, int status) {
  fl_tmux_send *s = w->data;
  (void)status; /* a short write shows as a failed load-buffer, or a text that never shows */
  fl_paste_close_in(s);
}

/* Several lines (or a long one): `load-buffer -b NAME -` with the text on
 * stdin, then paste-buffer. */
static int fl_tmux_send_paste(fl_tmux_send *s) {
  char id[FL_ID_LEN];
  fl_uuid(id);
  snprintf(s->buffer, sizeof s->buffer, "fleet-%.8s", id);
  char *args[10];
  int n = fl_tmux_argv(args, s->socket);
  args[n++] = "load-buffer";
  args[n++] = "-b";
  args[n++] = s->buffer;
  args[n++] = "-";
  args[n] = NULL;
  uv_pipe_init(s->loop, &s->in, 0);
  s->in.data = s;
  s->proc.data = s;
  s->wr.data = s;
  s->open += 2;
  uv_stdio_container_t stdio[3] = {
      {.flags = UV_CREATE_PIPE | UV_READABLE_PIPE, .data.stream = (uv_stream_t *)&s->in},
      {.flags = UV_IGNORE},
      {.flags = UV_IGNORE}};
  uv_process_options_t opt = {
      .exit_cb = fl_paste_loaded, .file = "tmux", .args = args, .stdio_count = 3, .stdio = stdio};
  int rc = uv_spawn(s->loop, &s->proc, &opt);
  if (rc == 0) {
    uv_buf_t b = uv_buf_init(s->text, (unsigned)s->len);
    rc = uv_write(&s->wr, (uv_stream_t *)&s->in, &b, 1, fl_paste_written);
    if (rc) {
      uv_process_kill(&s->proc, SIGKILL); /* its exit callback reports the failure */
      fl_paste_close_in(s);
    }
    return 0;
  }
  uv_close((uv_handle_t *)&s->proc, fl_send_closed);
  uv_close((uv_handle_t *)&s->in, fl_send_closed);
  return rc;
}

int fl_tmux_deliver(uv_loop_t *loop, const fl_inject_target *t, const char *text, size_t len,
                    fl_inject_delivered_cb done, void *ctx) {
  if (!t || !t->pane || !t->pane[0] || strlen(t->pane) > FL_MAX_PANE ||
      (t->socket && strlen(t->socket) > FL_MAX_PATH) || !text || !done)
    return FL_EINVAL;
  fl_tmux_send *s = fl_calloc(1, sizeof *s);
  if (!s)
    return FL_ENOMEM;
  fl_inject_text safe; /* fleet's line first, on its own line: one paste */
  int rc = fl_inject_text_compose(t->head, text, len, t->command_chars, &safe);
  s->prompt = fl_strdup(t->prompt ? t->prompt : "");
  s->busy = fl_strdup(t->busy ? t->busy : "");
  if (rc || !s->prompt || !s->busy) {
    fl_inject_text_free(&safe);
    fl_free(s->prompt);
    fl_free(s->busy);
    fl_free(s);
    return rc ? rc : FL_ENOMEM;
  }
  fl_inject_text_note(&safe, s->note, sizeof s->note);
  s->text = safe.buf; /* s owns it now */
  s->len = safe.len;
  s->chars = safe.chars;
  s->multi = safe.multi;
  s->loop = loop;
  s->done = done;
  s->ctx = ctx;
  snprintf(s->pane, sizeof s->pane, "%s", t->pane);
  snprintf(s->socket, sizeof s->socket, "%s", t->socket ? t->socket : "");
  snprintf(s->label, sizeof s->label, "%s", t->label ? t->label : "");
  s->t.pane = s->pane;
  s->t.socket = s->socket;
  s->t.label = s->label;
  s->t.prompt = s->prompt;
  s->t.busy = s->busy;
  s->t.pause_ms = t->pause_ms;
  uv_timer_init(loop, &s->timer);
  s->timer.data = s;
  s->open = 1;
  s->step = FL_SEND_LOOK0;
  rc = fl_tmux_look(loop, &s->t, fl_send_looked, s);
  if (rc) {
    uv_close((uv_handle_t *)&s->timer, fl_send_closed); /* done never runs */
    return rc;
  }
  return 0;
}
