/* router.c — local delivery and the verbs: send, reply, poll, broadcast
 * (fleet_list is list.c).
 *
 * Every message goes one way: it is committed to the hold store first
 * (fl_router_accept), then the recipient is woken (fl_router_wake). Waking
 * hands the message to a waiting call of the recipient if one matches (a
 * send waiting for this reply, else a long poll), taking it out of the
 * store in the same step; otherwise it stays held, the session's held
 * callback (if it has one) sees it, and the recipient's nudge is armed.
 * So a message the gateway accepted is either in the store or in a result
 * on its way to the client, never only in memory. fl_router_deliver is the
 * hot paths' accept: a message a waiting call will take, for a recipient
 * that holds nothing, is handed over with only its msgId recorded.
 *
 * The routing fork: a recipient on another host is handed to the cross-host
 * backend (remote.h) instead, and the sender's call waits for it to be
 * confirmed. A send to a worker with a terminal leaves this path for the
 * forward path (forward.h): typed in, at most once. A reply without inReplyTo answers the oldest
 * send still waiting on the replier, else the newest message the recipient sent it; a small ring of
 * recent messages lets it join that flow's trace. */
#include "gateway/core/router.h"

#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/log.h"
#include "gateway/core/forward.h"
#include "gateway/core/gw_internal.h"
#include "gateway/core/module.h"
#include "gateway/core/nudge.h"
#include "gateway/core/remote.h"
#include "gateway/core/result_write.h"
#include "gateway/proto/envelope.h"

/* ---- trace ring ---------------------------------------------------------------- */

static void fl_trace_remember(fl_gw *gw, const fl_msg *m) {
  size_t i = gw->traces.next;
  fl_copy(gw->traces.at[i].msg_id, FL_ID_LEN, m->msg_id);
  fl_copy(gw->traces.at[i].trace_id, FL_ID_LEN, m->trace_id);
  fl_copy(gw->traces.at[i].from_gid, FL_ID_LEN, m->from_gid);
  fl_copy(gw->traces.at[i].to_gid, FL_ID_LEN, m->to_gid);
  gw->traces.at[i].is_send = fl_envelope_is_kind(m->kind, FL_KIND_SEND);
  gw->traces.next = (i + 1) % FL_TRACE_RING;
  fl_modules_msg_routed(gw, m);
}

static const char *fl_trace_lookup(fl_gw *gw, const char *msg_id) {
  for (size_t i = 0; i < FL_TRACE_RING; i++)
    if (gw->traces.at[i].msg_id[0] && strcmp(gw->traces.at[i].msg_id, msg_id) == 0)
      return gw->traces.at[i].trace_id;
  return NULL;
}

/* The newest SEND from from_gid to to_gid this gateway saw, or -1. */
static long fl_trace_last_send(fl_gw *gw, const char *from_gid, const char *to_gid) {
  for (size_t k = 1; k <= FL_TRACE_RING; k++) {
    size_t i = (gw->traces.next + FL_TRACE_RING - k) % FL_TRACE_RING;
    if (!gw->traces.at[i].msg_id[0])
      return -1;
    if (gw->traces.at[i].is_send && strcmp(gw->traces.at[i].from_gid, from_gid) == 0 &&
        strcmp(gw->traces.at[i].to_gid, to_gid) == 0)
      return (long)i;
  }
  return -1;
}

/* ---- delivery ------------------------------------------------------------------ */

static void fl_msg_view_of(const fl_msg *m, fl_msg_view *v) {
  v->msg_id = m->msg_id;
  v->kind = m->kind;
  v->from_gid = m->from_gid;
  v->from_name = m->from_name;
  v->trace_id = m->trace_id;
  v->in_reply_to = m->in_reply_to;
  v->ts_ms = m->ts_ms;
  v->content = m->content ? m->content : "";
  v->content_len = m->content ? m->content_len : 0;
}

int fl_gw_each_held(fl_gw *gw, fl_client *c, size_t max, fl_gw_held_cb cb, void *ctx) {
  if (!gw || !c || !c->entity || !cb)
    return 0;
  fl_msg *msgs = NULL;
  size_t n = 0;
  int rc = fl_store_peek(gw->store, c->entity->gid, max, fl_now_ms(), &msgs, &n);
  if (rc) {
    fl_gw_count(gw, FL_C_STORE_ERRORS);
    return rc;
  }
  for (size_t i = 0; i < n; i++) {
    fl_msg_view v;
    fl_msg_view_of(&msgs[i], &v);
    cb(ctx, &v);
  }
  fl_msgs_free(msgs, n);
  return 0;
}

/* Takes up to max held messages of e (from one sender, or any) into a poll
 * result. A handed message (fl_router_deliver) is the whole result: its
 * recipient held nothing when it came. With out, the result is written
 * there and NULL returned, unless the writer failed: then, as without out,
 * it is returned as a new tree. */
static json_t *fl_poll_result(fl_gw *gw, fl_entity *e, const char *from, size_t max,
                              const fl_msg *handed, fl_json_out *out, size_t *ntaken) {
  fl_msg *msgs = NULL;
  size_t n = 0, remaining = 0;
  long long now = fl_now_ms();
  int trc = handed ? 0 : fl_store_take(gw->store, e->gid, from, max, now, &msgs, &n);
  if (handed) {
    n = 1;
  } else if (trc != 0) {
    fl_gw_count(gw, FL_C_STORE_ERRORS);
    if (trc == FL_EDISKFULL)
      fl_gw_count(gw, FL_C_STORE_DISK_FULL);
    n = 0;
  }
  for (size_t i = 0; i < n; i++) {
    const fl_msg *m = handed ? handed : &msgs[i];
    fl_remote_drained(gw, e->gid, m->msg_id);
    fl_debug(m->trace_id, "drained %s for '%s'", m->msg_id, e->name);
  }
  gw->counters[FL_C_MSGS_DRAINED] += n;
  if (ntaken)
    *ntaken = n;
  if (!handed)
    fl_store_count(gw->store, e->gid, now, &remaining);
  if (remaining == 0)
    fl_nudge_stop(e);
  const fl_msg *taken = handed ? handed : msgs;
  json_t *res = NULL;
  if (!out || fl_poll_write(out, taken, n, remaining) != 0) {
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++)
      json_array_append_new(arr, fl_router_msg_json(&taken[i]));
    res = json_pack("{s:o, s:I}", "messages", arr, "remaining", (json_int_t)remaining);
  }
  fl_msgs_free(msgs, handed ? 0 : n);
  return res;
}

static json_t *fl_send_pending(fl_gw *gw, fl_wait *w) {
  fl_entity *peer = fl_entity_by_gid(gw, w->peer_gid);
  json_t *r = json_pack("{s:s, s:s, s:o, s:s}", "msgId", w->msg_id, "traceId", w->trace_id, "to",
                        peer ? fl_entity_ref_json(peer)
                             : json_pack("{s:s,s:s}", "gid", w->peer_gid, "name", ""),
                        "status", "pending");
  fl_wait_add_note(w, r);
  return r;
}

/* A send's time is up: it reads pending, and the reply waits for a poll. */
static void fl_send_timeout(fl_wait *w) {
  fl_info(w->trace_id, "send %s: no reply in time; the reply will be held for a poll", w->msg_id);
  fl_wait_complete(w, fl_send_pending(w->gw, w), NULL);
}

/* A long poll's time is up: it returns what is held (likely nothing). */
static void fl_poll_timeout(fl_wait *w) {
  fl_wait_complete(w,
                   fl_poll_result(w->gw, w->client->entity, w->peer_gid[0] ? w->peer_gid : NULL,
                                  w->max, NULL, w->out, NULL),
                   NULL);
}

static const fl_wait_ops fl_send_wait_ops = {.timeout = fl_send_timeout};
static const fl_wait_ops fl_poll_wait_ops = {.timeout = fl_poll_timeout};

void fl_router_expect_reply(fl_wait *w, double wait_s) {
  /* A brief waits for its receipt first (forward.c), an ask's turn for its
   * answer (ask.c): their verbs say. */
  if (w->verb && w->verb->expect_reply) {
    w->verb->expect_reply(w, wait_s);
    return;
  }
  fl_wait_restart(w, FL_WAIT_SEND, &fl_send_wait_ops, wait_s);
}

/* Whether a waiter of c takes m by its own rule (wait.h's take: a brief
 * sent to several, fanout.c); commit as there. */
static int fl_waiter_takes(fl_client *c, const fl_msg *m, int commit) {
  for (fl_wait *w = c->waits; w; w = w->next)
    if (w->ops->take && w->ops->take(w, m, commit))
      return 1; /* w may be gone: no further step */
  return 0;
}

/* The send of c waiting for the reply m, or NULL. A send still waiting for
 * the broker's confirm can already get its reply: the confirm and the
 * reply race on separate channels. */
static fl_wait *fl_reply_waiter(fl_client *c, const fl_msg *m) {
  if (!fl_envelope_is_kind(m->kind, FL_KIND_REPLY))
    return NULL;
  for (fl_wait *w = c->waits; w; w = w->next) {
    int wants_reply =
        w->kind == FL_WAIT_SEND ||
        (w->kind == FL_WAIT_CONFIRM && w->wants_reply && (!w->forward || w->reply_wait_s > 0)) ||
        (w->kind == FL_WAIT_FORWARD && w->reply_wait_s > 0);
    if (wants_reply && strcmp(w->peer_gid, m->from_gid) == 0 &&
        (!m->in_reply_to[0] || strcmp(m->in_reply_to, w->msg_id) == 0))
      return w;
  }
  return NULL;
}

/* The long poll of c that m would answer, or NULL. */
static fl_wait *fl_poll_waiter(fl_client *c, const fl_msg *m) {
  for (fl_wait *w = c->waits; w; w = w->next)
    if (w->kind == FL_WAIT_POLL && (!w->peer_gid[0] || strcmp(w->peer_gid, m->from_gid) == 0))
      return w;
  return NULL;
}

const fl_msg *fl_router_take(fl_gw *gw, fl_entity *to, const fl_msg *m, fl_msg *buf) {
  buf->content = NULL;
  if (m->handed)
    return m;
  return fl_store_take_id(gw->store, to->gid, m->msg_id, buf) == 0 ? buf : NULL;
}

int fl_router_wake(fl_gw *gw, fl_entity *to, const fl_msg *m) {
  fl_client *c = to->client;
  if (!c)
    return 0; /* fl_router_deliver hands nothing to an entity without a session */
  /* A waiter with its own rule first: e.g. a brief sent to several. */
  if (fl_waiter_takes(c, m, 1))
    return 1;
  fl_wait *w = fl_reply_waiter(c, m);
  fl_msg buf;
  const fl_msg *got = w ? fl_router_take(gw, to, m, &buf) : NULL;
  if (got) {
    gw->counters[FL_C_MSGS_DRAINED]++;
    fl_remote_drained(gw, to->gid, got->msg_id);
    fl_entity *peer = fl_entity_by_gid(gw, w->peer_gid);
    json_t *res = NULL;
    if (!w->out || fl_replied_write(w->out, w, peer ? peer : to, got) != 0) {
      res = json_pack("{s:s, s:s, s:o, s:s, s:o}", "msgId", w->msg_id, "traceId", w->trace_id, "to",
                      fl_entity_ref_json(peer ? peer : to), "status", "replied", "reply",
                      fl_router_msg_json(got));
      fl_wait_add_note(w, res);
    }
    fl_free(buf.content);
    fl_event(m->trace_id, "reply %s resolved the waiting send %s of '%s'", m->msg_id, w->msg_id,
             to->name);
    fl_wait_complete(w, res, NULL);
    return 1;
  }
  if ((w = fl_poll_waiter(c, m))) {
    json_t *res = fl_poll_result(gw, to, w->peer_gid[0] ? w->peer_gid : NULL, w->max,
                                 m->handed ? m : NULL, w->out, NULL);
    fl_wait_complete(w, res, NULL);
    return 1;
  }
  if (m->handed) {
    /* fl_router_deliver found a call that would take m, and nothing ran in
     * between that could end it; should that ever change, m is held now
     * rather than lost. */
    fl_msg keep = *m;
    if (fl_store_admit(gw->store, &keep, FL_ADMIT_SEEN_ALREADY) != 0) {
      fl_gw_count(gw, FL_C_STORE_ERRORS);
      fl_error(m->trace_id,
               "%s %s for '%s' was to be handed to a waiting call that is gone, and "
               "holding it failed",
               m->kind, m->msg_id, to->name);
      return 0;
    }
    fl_warn(m->trace_id, "%s %s for '%s': its waiting call was gone; held", m->kind, m->msg_id,
            to->name);
  }
  if (c->ops && c->ops->held) {
    fl_msg_view v;
    fl_msg_view_of(m, &v);
    c->ops->held(c->ctx, &v);
  }
  fl_nudge_arm(to);
  return 0;
}

/* Admits m for to as how says (store.h), counting and wording refusals. */
static int fl_router_admit(fl_gw *gw, fl_entity *to, fl_msg *m, enum fl_admit how, char *err,
                           size_t errlen) {
  int rc = fl_store_admit(gw->store, m, how);
  if (rc == FL_EDUP) {
    fl_gw_count(gw, FL_C_MSGS_DUPLICATE);
    fl_errf(err, errlen, "message %s was already delivered to '%s'", m->msg_id, to->name);
    return rc;
  }
  if (rc == FL_EFULL) {
    fl_gw_count(gw, FL_C_MSGS_REFUSED_FULL);
    fl_warn(m->trace_id, "'%s' holds %d messages; refused %s", to->name, FL_MAX_HELD_PER_ENTITY,
            m->msg_id);
    fl_errf(err, errlen,
            "'%s' already has %d messages waiting and takes no more until it polls; try "
            "again later",
            to->name, FL_MAX_HELD_PER_ENTITY);
    return rc;
  }
  if (rc) {
    fl_gw_count(gw, FL_C_STORE_ERRORS);
    if (rc == FL_EDISKFULL) {
      fl_gw_count(gw, FL_C_STORE_DISK_FULL);
      fl_errf(err, errlen,
              "could not store the message: the disk is full where fleetd keeps its state; it was "
              "not sent (free space there, then send again)");
      return rc;
    }
    fl_errf(err, errlen, "could not store the message (%s); see fleetd's log", fl_strerror(rc));
    return rc;
  }
  fl_gw_count(gw, FL_C_MSGS_ACCEPTED);
  fl_trace_remember(gw, m);
  if (m->handed) {
    fl_gw_count(gw, FL_C_MSGS_HANDED);
    fl_event(m->trace_id, "%s %s from '%s' handed to a waiting call of '%s'", m->kind, m->msg_id,
             m->from_name, to->name);
  } else {
    fl_event(m->trace_id, "%s %s from '%s' held for '%s'", m->kind, m->msg_id, m->from_name,
             to->name);
  }
  return 0;
}

int fl_router_accept(fl_gw *gw, fl_entity *to, fl_msg *m, char *err, size_t errlen) {
  return fl_router_admit(gw, to, m, FL_ADMIT_HOLD, err, errlen);
}

int fl_router_deliver(fl_gw *gw, fl_entity *to, fl_msg *m, char *err, size_t errlen) {
  fl_client *c = to->client;
  int taker = c && (fl_waiter_takes(c, m, 0) || fl_reply_waiter(c, m) || fl_poll_waiter(c, m));
  return fl_router_admit(gw, to, m, taker ? FL_ADMIT_HAND : FL_ADMIT_HOLD, err, errlen);
}

/* ---- verbs --------------------------------------------------------------------- */

static void fl_msg_init(fl_msg *m, fl_envelope_kind kind, const fl_entity *from,
                        const fl_entity *to, const char *content) {
  memset(m, 0, sizeof *m);
  fl_uuid_msg(m->msg_id);
  fl_copy(m->kind, sizeof m->kind, fl_envelope_kind_name(kind));
  fl_copy(m->from_gid, sizeof m->from_gid, from->gid);
  fl_copy(m->from_name, sizeof m->from_name, from->name);
  fl_copy(m->to_gid, sizeof m->to_gid, to->gid);
  m->ts_ms = fl_now_ms();
  m->content = (char *)content;
  m->content_len = strlen(content);
}

static int fl_need_entity(fl_client *c, char *err, size_t errlen) {
  if (c && c->entity)
    return 0;
  fl_errf(err, errlen,
          "this session has no identity (it attached without a name): only a named session "
          "can send and receive");
  return FL_EINVAL;
}

static int fl_check_content(const char *content, char *err, size_t errlen) {
  if (strlen(content) > FL_MAX_CONTENT) {
    fl_errf(err, errlen, "content is %zu bytes; the limit is %u: split it or send a path",
            strlen(content), FL_MAX_CONTENT);
    return FL_ETOOBIG;
  }
  return 0;
}

/* {msgId, traceId, to: {gid, name}, status}: what send and reply answer
 * once the message is on its way (new reference). */
static json_t *fl_sent_result(const fl_msg *m, const fl_entity *dst, const char *status) {
  return json_pack("{s:s, s:s, s:o, s:s}", "msgId", m->msg_id, "traceId", m->trace_id, "to",
                   fl_entity_ref_json(dst), "status", status);
}

static double fl_clamp_wait(double wait_s) {
  if (!(wait_s > 0)) /* also catches NaN */
    return 0;
  return wait_s > FL_MAX_WAIT_S ? FL_MAX_WAIT_S : wait_s;
}

int fl_gw_send(fl_gw *gw, fl_client *c, const char *to, const char *content, double wait_s,
               fl_gw_cb cb, void *ctx, json_t **result, fl_wait **wait, char *err, size_t errlen) {
  int rc;
  *result = NULL;
  *wait = NULL;
  if ((rc = fl_need_entity(c, err, errlen)) || (rc = fl_check_content(content, err, errlen)))
    return rc;
  fl_entity *dst;
  if ((rc = fl_roster_resolve(gw, to, &dst, err, errlen)))
    return rc;
  wait_s = fl_clamp_wait(wait_s);
  /* Checked before the message is committed: a waiter must be possible. */
  if ((wait_s > 0 || dst->remote) && (rc = fl_wait_room(c, err, errlen)))
    return rc;
  fl_msg m;
  fl_msg_init(&m, FL_KIND_SEND, c->entity, dst, content);
  fl_uuid(m.trace_id);
  return fl_router_send(gw, c, dst, &m, wait_s, "", cb, ctx, result, wait, err, errlen);
}

int fl_router_send(fl_gw *gw, fl_client *c, fl_entity *dst, fl_msg *m, double wait_s,
                   const char *sender_host, fl_gw_cb cb, void *ctx, json_t **result, fl_wait **wait,
                   char *err, size_t errlen) {
  int rc;
  if (!c && dst->remote) {
    fl_errf(err, errlen, "a message nobody waits on goes to this host's agents only");
    return FL_EINVAL;
  }
  if (fl_forward_injects(gw, dst)) {
    /* A worker with a terminal: the brief is typed in (forward.c); a caller
     * waits for word of it, else its outcome goes to sender_host. */
    rc = c ? fl_forward_send(gw, c, dst, m, wait_s, cb, ctx, wait, err, errlen)
           : fl_forward_take(gw, dst, m, sender_host ? sender_host : "", err, errlen);
    if (rc == 0)
      fl_trace_remember(gw, m);
    return rc;
  }
  if (dst->remote) {
    /* Routing fork: another host's entity goes through the broker. */
    json_t *sent = fl_sent_result(m, dst, "sent");
    rc = fl_remote_publish(gw, c, dst, m, wait_s, sent, cb, ctx, wait, err, errlen);
    if (rc == 0)
      fl_trace_remember(gw, m);
    return rc;
  }
  if ((rc = fl_router_deliver(gw, dst, m, err, errlen)))
    return rc;
  if (c && wait_s > 0) {
    fl_wait *w;
    rc = fl_wait_new(gw, c, FL_WAIT_SEND, &fl_send_wait_ops, wait_s, cb, ctx, &w, err, errlen);
    if (rc == 0) {
      fl_copy(w->msg_id, sizeof w->msg_id, m->msg_id);
      fl_copy(w->trace_id, sizeof w->trace_id, m->trace_id);
      fl_copy(w->peer_gid, sizeof w->peer_gid, dst->gid);
      fl_router_wake(gw, dst, m);
      *wait = w;
      return 0;
    }
    /* The message is committed: report it as sent rather than fail. */
  }
  fl_router_wake(gw, dst, m);
  if (result)
    *result = fl_sent_result(m, dst, "sent");
  return 0;
}

int fl_gw_reply(fl_gw *gw, fl_client *c, const char *to, const char *content,
                const char *in_reply_to, fl_gw_cb cb, void *ctx, json_t **result, fl_wait **wait,
                char *err, size_t errlen) {
  int rc;
  *result = NULL;
  *wait = NULL;
  if ((rc = fl_need_entity(c, err, errlen)) || (rc = fl_check_content(content, err, errlen)))
    return rc;
  fl_entity *dst;
  if ((rc = fl_roster_resolve(gw, to, &dst, err, errlen)))
    return rc;
  fl_msg m;
  fl_msg_init(&m, FL_KIND_REPLY, c->entity, dst, content);
  /* Without inReplyTo, answer the oldest send of dst still waiting on us. */
  const char *answered = (in_reply_to && *in_reply_to) ? in_reply_to : NULL;
  const char *trace = NULL;
  if (dst->client) {
    for (fl_wait *w = dst->client->waits; w; w = w->next) {
      if (w->kind == FL_WAIT_SEND && strcmp(w->peer_gid, c->entity->gid) == 0 &&
          (!answered || strcmp(answered, w->msg_id) == 0)) {
        answered = w->msg_id;
        trace = w->trace_id;
        break;
      }
    }
  }
  if (!answered) {
    /* Else the newest message dst sent us: the reply joins its flow. */
    long i = fl_trace_last_send(gw, dst->gid, c->entity->gid);
    if (i >= 0) {
      answered = gw->traces.at[i].msg_id;
      trace = gw->traces.at[i].trace_id;
    }
  }
  if (answered) {
    fl_copy(m.in_reply_to, sizeof m.in_reply_to, answered);
    if (!trace)
      trace = fl_trace_lookup(gw, answered);
  }
  if (trace)
    fl_copy(m.trace_id, sizeof m.trace_id, trace);
  else
    fl_uuid(m.trace_id);
  if (dst->remote) {
    json_t *sent = fl_sent_result(&m, dst, "sent");
    return fl_remote_publish(gw, c, dst, &m, 0, sent, cb, ctx, wait, err, errlen);
  }
  if ((rc = fl_router_deliver(gw, dst, &m, err, errlen)))
    return rc;
  int taken = fl_router_wake(gw, dst, &m);
  *result = fl_sent_result(&m, dst, taken ? "delivered" : "held");
  return 0;
}

int fl_gw_poll(fl_gw *gw, fl_client *c, const char *from, double wait_s, size_t max, fl_gw_cb cb,
               void *ctx, fl_json_out *out, json_t **result, fl_wait **wait, char *err,
               size_t errlen) {
  int rc;
  *result = NULL;
  *wait = NULL;
  if ((rc = fl_need_entity(c, err, errlen)))
    return rc;
  const char *from_gid = NULL;
  if (from && *from) {
    fl_entity *src;
    if ((rc = fl_roster_resolve(gw, from, &src, err, errlen)))
      return rc;
    from_gid = src->gid;
  }
  if (max == 0)
    max = FL_DEFAULT_POLL;
  if (max > FL_MAX_POLL)
    max = FL_MAX_POLL;
  wait_s = fl_clamp_wait(wait_s);
  size_t n = 0;
  json_t *res = fl_poll_result(gw, c->entity, from_gid, max, NULL, out, &n);
  if (!res && !(out && out->json)) {
    fl_errf(err, errlen, "out of memory");
    return FL_ENOMEM;
  }
  if (wait_s > 0 && n == 0) {
    /* Nothing yet: park the call until a message for it arrives. */
    json_decref(res);
    if (out)
      fl_json_out_free(out);
    fl_wait *w;
    if ((rc =
             fl_wait_new(gw, c, FL_WAIT_POLL, &fl_poll_wait_ops, wait_s, cb, ctx, &w, err, errlen)))
      return rc;
    w->max = max;
    if (from_gid)
      fl_copy(w->peer_gid, sizeof w->peer_gid, from_gid);
    *wait = w;
    return 0;
  }
  *result = res;
  return 0;
}

int fl_gw_broadcast(fl_gw *gw, fl_client *c, const char *group, const char *content, fl_gw_cb cb,
                    void *ctx, json_t **result, fl_wait **wait, char *err, size_t errlen) {
  int rc;
  *result = NULL;
  *wait = NULL;
  if ((rc = fl_need_entity(c, err, errlen)) || (rc = fl_check_content(content, err, errlen)))
    return rc;
  if (group && !*group)
    group = NULL;
  char msg_id[FL_ID_LEN], trace_id[FL_ID_LEN];
  fl_uuid_msg(msg_id);
  fl_uuid(trace_id);
  size_t recipients = 0, failed = 0;
  fl_msg m;
  for (fl_entity *e = gw->entities; e; e = e->next) {
    /* Remote members get their copy from the broker, bound to the key; a
     * stopped agent is no member at all. */
    if (e == c->entity || e->remote || !fl_entity_in_roster(e) ||
        (group && !fl_entity_in_group(e, group)))
      continue;
    fl_msg_init(&m, FL_KIND_BROADCAST, c->entity, e, content);
    fl_copy(m.msg_id, sizeof m.msg_id, msg_id);
    fl_copy(m.trace_id, sizeof m.trace_id, trace_id);
    char why[256];
    if (fl_router_accept(gw, e, &m, why, sizeof why) != 0) {
      failed++;
      continue;
    }
    recipients++;
    fl_router_wake(gw, e, &m);
  }
  fl_info(trace_id, "broadcast %s from '%s' to %s: %zu local recipient(s), %zu refused", msg_id,
          c->entity->name, group ? group : "everyone", recipients, failed);
  json_t *res =
      json_pack("{s:s, s:s, s:s?, s:I, s:I}", "msgId", msg_id, "traceId", trace_id, "group", group,
                "recipients", (json_int_t)recipients, "refused", (json_int_t)failed);
  if (!fl_remote_on(gw)) {
    *result = res;
    return 0;
  }
  /* One publish reaches every other host's members; the broker copies it. */
  fl_msg_init(&m, FL_KIND_BROADCAST, c->entity, c->entity, content);
  fl_copy(m.msg_id, sizeof m.msg_id, msg_id);
  fl_copy(m.trace_id, sizeof m.trace_id, trace_id);
  m.to_gid[0] = '\0';
  json_object_set_new(res, "remote", json_string("published"));
  rc = fl_remote_broadcast(gw, c, &m, group, res, cb, ctx, wait, err, errlen);
  if (rc != 0 && recipients > 0) {
    /* The local copies are committed: say so, loudly, rather than fail. */
    res = json_pack("{s:s, s:s, s:s?, s:I, s:I, s:s}", "msgId", msg_id, "traceId", trace_id,
                    "group", group, "recipients", (json_int_t)recipients, "refused",
                    (json_int_t)failed, "remote", err);
    *result = res;
    return 0;
  }
  return rc;
}

/* ---- for the verbs in other files (ask.c, fanout.c) ---------------------------- */

void fl_router_msg_init(fl_msg *m, fl_envelope_kind kind, const fl_entity *from,
                        const fl_entity *to, const char *content) {
  fl_msg_init(m, kind, from, to, content);
}

int fl_router_check_sender(fl_client *c, const char *content, char *err, size_t errlen) {
  int rc = fl_need_entity(c, err, errlen);
  return rc ? rc : fl_check_content(content, err, errlen);
}

double fl_router_clamp_wait(double wait_s) { return fl_clamp_wait(wait_s); }

json_t *fl_router_sent_result(const fl_msg *m, const fl_entity *dst, const char *status) {
  return fl_sent_result(m, dst, status);
}

const char *fl_router_flow_trace(fl_gw *gw, const char *from_gid, const char *to_gid) {
  long i = fl_trace_last_send(gw, from_gid, to_gid);
  return i >= 0 ? gw->traces.at[i].trace_id : NULL;
}

void fl_router_remember(fl_gw *gw, const fl_msg *m) { fl_trace_remember(gw, m); }
