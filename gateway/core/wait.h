/* wait.h — waiting calls: a verb whose answer comes later.
 *
 * A waiter belongs to one client (session), holds a timer, and ends exactly
 * once: completed with a result or an error (its callback runs), or released
 * without a word (cancelled, or its session ended: the callback never runs).
 * What the waiter waits for is its creator's business: the creator gives
 * the operations that run when the time is up and when the waiter goes
 * away, and may hang its own state on ext. A client has at most
 * FL_MAX_WAITERS_PER_CLIENT waiters.
 *
 * Internal to gateway/. Loop thread only; nothing blocks. */
#ifndef FL_WAIT_H
#define FL_WAIT_H

#include <stddef.h>
#include <uv.h>

#include "common/limits.h"
#include "gateway/gw.h"

struct fl_msg;

enum fl_wait_kind {
  FL_WAIT_SEND,    /* a send waiting for its reply */
  FL_WAIT_POLL,    /* a long poll */
  FL_WAIT_CONFIRM, /* a message handed on, waiting for the next hop to take it */
  FL_WAIT_SPAWN,   /* a spawn waiting for its agent to register */
  FL_WAIT_FORWARD, /* a brief waiting for word that it was typed (forward.c) */
  FL_WAIT_ASK,     /* a fleet_ask waiting for its answer (ask.c) */
  FL_WAIT_ANSWER,  /* an answer waiting to hear whether its turn still waited (ask.c) */
  FL_WAIT_FANOUT,  /* a brief to several recipients waiting for their replies (fanout.c) */
  FL_WAIT_ADMIN,   /* an operator's command waiting for the broker (fleetctl dlq) */
  FL_WAIT_HOOK     /* an agent's hook waiting for fleet's answer (hook_park.h) */
};

/* What a waiter does when its time is up, and what its owner must drop when
 * it goes away. Set by whoever creates the waiter; borrowed for its life. */
typedef struct fl_wait_ops {
  /* The timer ran out, or the gateway is shutting down: must end w with
   * fl_wait_complete (or re-arm it with fl_wait_restart). */
  void (*timeout)(fl_wait *w);
  /* w is being released (completed, cancelled, or its session ended): drop
   * every pointer to it. NULL = nothing to drop. */
  void (*forget)(fl_wait *w);
  /* w's message was handed on (the broker confirmed it, or a brief was
   * typed) and w now waits for what answers it, wait_s at most: re-arms w
   * (fl_wait_restart) as its verb's kind of waiting. Read from w->verb;
   * NULL = a send waiting wait_s for its reply (router.c). */
  void (*expect_reply)(fl_wait *w, double wait_s);
  /* m was just accepted for w's entity: 1 when w takes it into its own
   * result (out of the store, fl_router_take), else 0. With commit 0 it
   * only says whether it would, and changes nothing. Asked before the
   * router's own matching of sends and polls. NULL = takes nothing. */
  int (*take)(fl_wait *w, const struct fl_msg *m, int commit);
} fl_wait_ops;

struct fl_wait {
  fl_gw *gw;
  fl_client *client;
  fl_wait *next; /* in the client's list, oldest first */
  enum fl_wait_kind kind;
  const fl_wait_ops *ops;
  /* The ops of the verb that made w, kept while another phase runs (a
   * CONFIRM of the broker link's): their expect_reply says what w waits for
   * once its message is handed on. NULL = a plain send. */
  const fl_wait_ops *verb;
  void *ext;       /* the creator's state for ops (a CONFIRM: its publish), or NULL */
  int wants_reply; /* a CONFIRM of a send that then waits for its reply */
  uv_timer_t timer;
  fl_gw_cb cb;
  void *ctx;
  /* SEND, CONFIRM: the message sent, and to whom; POLL: the from filter and max. */
  char msg_id[FL_ID_LEN];
  char trace_id[FL_ID_LEN];
  char peer_gid[FL_ID_LEN];
  size_t max;
  /* A brief on the forward path (forward.c): then wait this long for the
   * reply once it is typed (0 = answer "injected" at once), and its outcome
   * if word of it came before the broker's confirm (0 none, 1 injected, 2
   * failed, with why). */
  int forward;
  double reply_wait_s;
  int receipt;
  char receipt_why[FL_MAX_ERRMSG];
  /* How a brief was typed when the backend had to change it so that no
   * byte acts as a key (inject_text.h), for the result's "note"; "" when
   * nothing was changed. Kept here for a send that goes on waiting for the
   * reply once the brief is typed. */
  char typed_note[256];
  /* An ask's turn (ask.c): its id, which side of it this call is (1 the
   * asker, 2 the answerer, 0 none) and when it runs out (ms since epoch). */
  char turn_id[FL_ID_LEN];
  int turn_side;
  long long turn_expires_ms;
  /* Where the result may be written as JSON (fl_gw_wait_out), or NULL. */
  fl_json_out *out;
};

/* 0 when c may start one more waiting call, else FL_EFULL with err saying so. */
int fl_wait_room(const fl_client *c, char *err, size_t errlen);
/* Starts a waiter of c that times out after wait_s seconds. On success *out
 * is owned by c's list until it ends. FL_EFULL (the per-client cap) or
 * FL_ENOMEM, with err filled; then no callback ever runs. */
int fl_wait_new(fl_gw *gw, fl_client *c, enum fl_wait_kind kind, const fl_wait_ops *ops,
                double wait_s, fl_gw_cb cb, void *ctx, fl_wait **out, char *err, size_t errlen);
/* Ends w: releases it, then runs its callback with result (stolen) or err.
 * result NULL and err NULL reads as out of memory, unless the result was
 * written into w->out (then the callback gets both NULL). Afterwards, a
 * nudge is armed again if the client's entity still holds messages. */
void fl_wait_complete(fl_wait *w, json_t *result, const char *err);

/* Adds w's typed_note to a send's result (borrowed, may be NULL) as
 * "note", when there is one. */
void fl_wait_add_note(const fl_wait *w, json_t *result);
/* Ends w without a callback: unlinks it, runs ops->forget, and frees it once
 * its timer is closed. */
void fl_wait_release(fl_wait *w);
/* Gives w a new kind and ops (ext is cleared: the old owner let go) and
 * restarts its timer for wait_s seconds. */
void fl_wait_restart(fl_wait *w, enum fl_wait_kind kind, const fl_wait_ops *ops, double wait_s);
/* Runs w's timeout now (shutdown). */
void fl_wait_expire(fl_wait *w);

/* A burst of broker events is taken into one store transaction (fabric.c):
 * between these two calls, the results of calls completed meanwhile are
 * held back, and given out at fl_wait_defer_end, after the commit. So no
 * client is handed a message (a poll's, a send's reply) that the store could
 * still roll back, which a crash before the commit would hand out again. */
void fl_wait_defer_begin(fl_gw *gw);
void fl_wait_defer_end(fl_gw *gw);

#endif
