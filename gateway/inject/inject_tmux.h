/* inject_tmux.h — what the tmux backend's two files share (inject_tmux.c:
 * looks at a pane, opens and closes windows, types the nudge line;
 * inject_tmux_deliver.c: the verified delivery of a message). Nothing else
 * includes this. Loop thread only. */
#ifndef FL_INJECT_TMUX_H
#define FL_INJECT_TMUX_H

#include <stdint.h>
#include <uv.h>

#include "gateway/inject/inject.h"

/* One look at a pane: its state against t->prompt and t->busy (no quiet
 * test) and a hash of the whole screen, so two looks tell whether anything
 * changed. */
typedef void (*fl_tmux_looked_cb)(void *ctx, enum fl_inject_state state, uint64_t screen);

/* Starts one look at t's pane; looked runs once, later. 0 or a negative
 * code (then it never runs). */
int fl_tmux_look(uv_loop_t *loop, const fl_inject_target *t, fl_tmux_looked_cb looked, void *ctx);

/* Starts a tmux command line in args: "tmux", then "-S socket" when socket
 * names one (NULL or "" = the default server). Returns how many it wrote. */
int fl_tmux_argv(char **args, const char *socket);

/* Runs `tmux ARGS` (args NULL-terminated, args[0] "tmux"), no stdio, about
 * t (for log lines, what names the command); done (may be NULL) gets 0 or
 * FL_EOFFLINE. 0 or a negative code (then done never runs). */
int fl_tmux_run_args(uv_loop_t *loop, char **args, const char *what, const fl_inject_target *t,
                     fl_inject_done_cb done, void *ctx);

/* The verified delivery (inject.h's deliver). */
int fl_tmux_deliver(uv_loop_t *loop, const fl_inject_target *t, const char *text, size_t len,
                    fl_inject_delivered_cb done, void *ctx);

#endif
