/* inject.h — typing into an agent's terminal, as a table of operations per
 * backend.
 *
 * In the manner of redis's ConnectionType (src/connection.h): each way of
 * reaching a terminal is one const fl_inject_type, found by name with
 * fl_inject_lookup, and callers go through its function pointers only. The
 * backends are "tmux" (inject_tmux.c: keys typed into a pane), "exec"
 * (inject_exec.c: a command run per message, given it on stdin) and "none"
 * (inject_none.c: nothing is typed; messages are held for a pull). Another
 * is a new row in inject.c's table; nothing else changes.
 *
 * Threading: loop thread only. No operation blocks: typing runs as a child
 * process; if an operation that takes a callback fails, the callback never
 * runs, else it runs exactly once, from the loop. */
#ifndef FL_INJECT_H
#define FL_INJECT_H

#include <uv.h>

/* Where to type; every string is borrowed for the call. */
typedef struct fl_inject_target {
  const char *pane;   /* the terminal, as the backend names it (tmux: %N) */
  const char *socket; /* tmux: the server's socket path, "" for the default */
  const char *label;  /* who sits there, for log lines */
  /* For status: a POSIX ERE matching the cursor line of an idle agent whose
   * input is empty (NULL or "" = no prompt test), and how long the screen
   * must stay unchanged to count as idle (0 = no quiet test). */
  const char *prompt;
  unsigned quiet_ms;
  /* For status: a POSIX ERE for a line an agent shows only while it is at
   * work; any line of the screen matching it makes the target busy, even
   * with an empty prompt on a still screen (NULL or "" = no busy test). */
  const char *busy;
  /* For deliver: the leading characters the agent treats as commands (a
   * text starting with one is neutralized, inject_text.h); NULL = the
   * default "!/#", "" = none. */
  const char *command_chars;
  /* For deliver: a line fleet wrote (printable ASCII, no newline; the
   * provenance line of a brief), delivered on its own line before the
   * text, which is then typed as one paste; NULL or "" = none. It is not
   * made safe again and counts in no note. */
  const char *head;
  /* exec: the command run for each message, NULL-terminated; cwd and env
   * (NAME=VALUE, NULL-terminated) may be NULL. */
  const char *const *argv;
  const char *cwd;
  const char *const *env;
  /* Test-only: deliver pauses this long between the text and its Enter
   * (0 = none), so a test can stop fleetd while a brief is being typed. */
  unsigned pause_ms;
} fl_inject_target;

/* What a backend can tell of a target. */
enum fl_inject_state {
  FL_INJECT_UNKNOWN, /* cannot tell */
  FL_INJECT_READY,   /* there and idle: typing now lands on an empty prompt */
  FL_INJECT_BUSY,    /* there, but in the middle of something */
  FL_INJECT_DRAFT,   /* at its prompt, but with text typed after it: hands off */
  FL_INJECT_GONE     /* not there any more */
};

/* The state of the target, once the backend has looked. */
typedef void (*fl_inject_status_cb)(void *ctx, enum fl_inject_state state);

/* A word for state, for log lines ("ready", "busy", "draft", ...). */
const char *fl_inject_state_name(enum fl_inject_state state);

/* A started operation finished: status 0, or a negative code when the
 * backend says the keys did not go in. */
typedef void (*fl_inject_done_cb)(void *ctx, int status);

/* A delivery finished. status 0: the text went in whole and was submitted;
 * why is then "" or a note of how the backend changed the text so that no
 * byte of it could act as a key (inject_text.h), for the sender.
 * FL_INJECT_NOT_TYPED: nothing was typed, because the target was not idle
 * when deliver looked (seen says how it was: busy, draft, gone); the caller
 * may try again later. Any other (negative) code: delivery failed, maybe
 * after keys went in; why (borrowed for the call) says what happened. */
#define FL_INJECT_NOT_TYPED 1
typedef void (*fl_inject_delivered_cb)(void *ctx, int status, enum fl_inject_state seen,
                                       const char *why);

/* What to open a new terminal for (fl_inject_type.open); every string is
 * borrowed for the call. */
typedef struct fl_inject_launch {
  const char *socket;      /* tmux: the server's socket path, "" for the default */
  const char *cwd;         /* "" or NULL = the gateway's working directory */
  const char *const *env;  /* NAME=VALUE strings, NULL-terminated */
  const char *const *argv; /* the command, NULL-terminated, at least one */
} fl_inject_launch;

/* A terminal opened: status 0 with the new pane's id, or a negative code with
 * what the backend said (its stderr, "" when it said nothing). Both strings
 * are borrowed for the call. */
typedef void (*fl_inject_opened_cb)(void *ctx, int status, const char *pane, const char *said);

typedef struct fl_inject_type {
  const char *name;
  /* Is the target there, and idle with an empty input? Looks (which may
   * take t->quiet_ms and a child process or two), then calls done with the
   * state. 0 and done runs later, or a negative code (FL_EINVAL: t or its
   * prompt is not usable). */
  int (*status)(uv_loop_t *loop, const fl_inject_target *t, fl_inject_status_cb done, void *ctx);
  /* Delivers text to the target as one input and checks it landed (tmux:
   * typed literally, seen on the screen, one Enter, seen submitted; exec:
   * the command exited 0). 0 and done runs later, or a negative code
   * (FL_EINVAL: t is not usable by this backend). NULL = the backend never
   * delivers (messages for its targets are held for a pull). The one
   * typing path: briefs and nudge lines both go through it. */
  int (*deliver)(uv_loop_t *loop, const fl_inject_target *t, const char *text, size_t len,
                 fl_inject_delivered_cb done, void *ctx);
  /* Opens a new terminal (tmux: a detached window) running l->argv with
   * l->env added. 0 and done runs later with the pane, or a negative code
   * (FL_EINVAL: l is not usable). NULL = the backend cannot open one. */
  int (*open)(uv_loop_t *loop, const fl_inject_launch *l, fl_inject_opened_cb done, void *ctx);
  /* Closes the target's terminal (tmux: kill-pane), ending what runs in it.
   * 0 and done (may be NULL) runs later, or a negative code. */
  int (*close)(uv_loop_t *loop, const fl_inject_target *t, fl_inject_done_cb done, void *ctx);
} fl_inject_type;

/* The backend called name ("tmux", "exec", "none"), or NULL. */
const fl_inject_type *fl_inject_lookup(const char *name);

/* The backends inject.c lists; each lives in its own inject_<name>.c. */
extern const fl_inject_type fl_inject_tmux;
extern const fl_inject_type fl_inject_exec;
extern const fl_inject_type fl_inject_none;

#endif
