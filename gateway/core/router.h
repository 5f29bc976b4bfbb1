/* router.h — local delivery: accepting a message and waking its recipient.
 *
 * Every message goes one way: fl_router_accept commits it to the hold store,
 * then fl_router_wake hands it to a waiting call of the recipient that
 * matches (a send waiting for this reply, else a long poll), taking it out
 * of the store in the same step, or arms the recipient's nudge. So a
 * message the gateway accepted is either in the store or in a result on its
 * way to the client, never only in memory. The verbs of gw.h (send, reply,
 * poll, broadcast, list) live in router.c on top of these; so does the trace
 * ring that lets a reply join its flow's trace.
 *
 * Internal to gateway/: the cross-host side calls these for what it
 * receives. Loop thread only; nothing blocks but local store commits. */
#ifndef FL_ROUTER_H
#define FL_ROUTER_H

#include <stddef.h>

#include "gateway/core/result_write.h"
#include "gateway/gw.h"
#include "gateway/proto/envelope.h"
#include "gateway/store/store.h"

typedef struct fl_entity fl_entity;

/* Recent messages kept so a reply carries its flow's trace. */
#define FL_TRACE_RING 1024

typedef struct fl_trace_ring {
  struct {
    char msg_id[FL_ID_LEN];
    char trace_id[FL_ID_LEN];
    char from_gid[FL_ID_LEN];
    char to_gid[FL_ID_LEN];
    int is_send;
  } at[FL_TRACE_RING];
  size_t next;
} fl_trace_ring;

/* Commits m (content copied) for its recipient to. 0; FL_EDUP (seen
 * before), FL_EFULL (to holds its cap) or the store's code, counted, with
 * err saying what happened and what to do. */
int fl_router_accept(fl_gw *gw, fl_entity *to, fl_msg *m, char *err, size_t errlen);
/* As fl_router_accept, for a caller that calls fl_router_wake(to, m) right
 * after, with nothing between that could end a call of to: when a waiting
 * call of to will take m and to holds nothing, m is not held at all, only
 * its msgId is recorded (one small write instead of a store and a take),
 * and m->handed is set; the wake hands m itself to the call. A message is
 * then either in the store or in that call's result, as before. */
int fl_router_deliver(fl_gw *gw, fl_entity *to, fl_msg *m, char *err, size_t errlen);
/* Takes the just-accepted m of to out of the store into *buf and returns
 * buf, or returns m itself when it was handed (never held); NULL when the
 * store has it no more or failed. The caller frees buf->content (NULL when
 * m was returned) either way. */
const fl_msg *fl_router_take(fl_gw *gw, fl_entity *to, const fl_msg *m, fl_msg *buf);
/* Hands the just-accepted m to a waiting call of to if one matches, else
 * arms to's nudge. Returns 1 if a call took it. */
int fl_router_wake(fl_gw *gw, fl_entity *to, const fl_msg *m);
/* Turns a confirmed CONFIRM waiter into a SEND waiter for the reply, for
 * wait_s seconds. The caller has already let go of w->ext. */
void fl_router_expect_reply(fl_wait *w, double wait_s);

/* Sends the SEND m to dst: the one path of fleet_send (c, the sender's
 * session) and of a spawn's brief (c NULL). m is filled by the caller
 * (fl_router_msg_init, its traceId; content borrowed). A worker with a
 * terminal gets it typed in (forward.h), another host's entity through the
 * broker, any other entity holds it and is woken; the trace ring learns it,
 * so a reply without inReplyTo answers it. With c: as fl_gw_send (*result
 * now, or *wait completes later through cb). With c NULL nobody waits: dst
 * must be local, a brief's outcome goes to sender_host ("" or NULL = this
 * host, where nobody waits for it), and result and wait may be NULL. 0, or
 * a negative code with err (nothing was sent). */
int fl_router_send(fl_gw *gw, fl_client *c, fl_entity *dst, fl_msg *m, double wait_s,
                   const char *sender_host, fl_gw_cb cb, void *ctx, json_t **result, fl_wait **wait,
                   char *err, size_t errlen);

/* What the verbs share with the ones in other files (ask.c, fanout.c):
 * fl_router_msg_json, m as a poll shows it, is result_write.h's. */
/* A new message of kind from -> to with a fresh msgId, now; content borrowed. */
void fl_router_msg_init(fl_msg *m, fl_envelope_kind kind, const fl_entity *from,
                        const fl_entity *to, const char *content);
/* 0 when c is a named session and content is within the cap, else the
 * code with err saying what to fix. */
int fl_router_check_sender(fl_client *c, const char *content, char *err, size_t errlen);
/* wait_s within 0..FL_MAX_WAIT_S (NaN and negatives read 0). */
double fl_router_clamp_wait(double wait_s);
/* {msgId, traceId, to, status} of m sent to dst: a new object. */
json_t *fl_router_sent_result(const fl_msg *m, const fl_entity *dst, const char *status);
/* The trace of the newest SEND from_gid sent to_gid that this gateway saw,
 * or NULL: an ask about a brief joins the brief's trace. */
const char *fl_router_flow_trace(fl_gw *gw, const char *from_gid, const char *to_gid);
/* Puts m in the trace ring (a message published rather than accepted). */
void fl_router_remember(fl_gw *gw, const fl_msg *m);

#endif
