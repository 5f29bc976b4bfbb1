/* ask.c — asks and their answers, by turn (see ask.h).
 *
 * Two sides of one turn. The asker's call is a waiter (FL_WAIT_ASK) that
 * carries the turnId; it ends answered, no_waiter or expired. The asked
 * side keeps a small table of the turns put to its entities (turnId, who
 * asked, when it runs out) so that an answer by turnId finds its asker, and
 * an answer to a turn that is gone reads too_late. An answer that goes to
 * another host waits (FL_WAIT_ANSWER) for the asker's gateway to say
 * whether the turn still waited: INJECTED with the turnId when it did,
 * TOO_LATE when it did not. Nothing here touches the hold store. */
#include "gateway/verbs/ask.h"

#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/log.h"
#include "gateway/core/gw_internal.h"
#include "gateway/core/remote.h"
#include "gateway/proto/envelope.h"

/* How long an answer to another host waits to hear whether its turn still
 * waited; past it the answer reads sent (it was published). */
#define FL_VERDICT_WAIT_S 10.0
/* A turn is remembered this long past its expiry, so a late answer reads
 * too_late rather than unknown. */
#define FL_TURN_LINGER_MS (10 * 60 * 1000)
/* Notices (NO_WAITER, TOO_LATE, INJECTED) expire this long after sending. */
#define FL_NOTICE_TTL_MS (60 * 1000)

enum { FL_SIDE_ASKER = 1, FL_SIDE_ANSWERER = 2 };

/* One ask put to a local entity. */
struct fl_turns {
  struct fl_turns *next; /* newest first */
  char turn_id[FL_ID_LEN];
  char ask_id[FL_ID_LEN]; /* the ASK's msgId */
  char trace_id[FL_ID_LEN];
  char asker_gid[FL_ID_LEN];
  char asked_gid[FL_ID_LEN];
  long long expires_ms;
  int answered; /* answered, or nobody waited: a later answer is too late */
};
typedef struct fl_turns fl_turn;

int fl_ask_kind(const char *kind, const char *turn_id) {
  return fl_envelope_is_kind(kind, FL_KIND_ASK) || fl_envelope_is_kind(kind, FL_KIND_ANSWER) ||
         fl_envelope_is_kind(kind, FL_KIND_NO_WAITER) ||
         fl_envelope_is_kind(kind, FL_KIND_TOO_LATE) ||
         (fl_envelope_is_kind(kind, FL_KIND_INJECTED) && turn_id && turn_id[0]);
}

/* ---- the asked side's turns ------------------------------------------------------- */

static void fl_turns_prune(fl_gw *gw, long long now) {
  size_t n = 0;
  for (fl_turn **pp = &gw->turns; *pp;) {
    fl_turn *t = *pp;
    if (t->expires_ms + FL_TURN_LINGER_MS < now || n >= FL_MAX_TURNS) {
      *pp = t->next;
      fl_free(t);
      continue;
    }
    n++;
    pp = &t->next;
  }
}

static fl_turn *fl_turn_find(fl_gw *gw, const char *turn_id) {
  for (fl_turn *t = gw->turns; t; t = t->next)
    if (strcmp(t->turn_id, turn_id) == 0)
      return t;
  return NULL;
}

/* Remembers the ask m put to asked; NULL when out of memory. */
static fl_turn *fl_turn_add(fl_gw *gw, const fl_msg *m, const fl_entity *asked) {
  fl_turns_prune(gw, fl_now_ms());
  fl_turn *t = fl_turn_find(gw, m->turn_id);
  if (t)
    return t;
  t = fl_calloc(1, sizeof *t);
  if (!t)
    return NULL;
  fl_copy(t->turn_id, sizeof t->turn_id, m->turn_id);
  fl_copy(t->ask_id, sizeof t->ask_id, m->msg_id);
  fl_copy(t->trace_id, sizeof t->trace_id, m->trace_id);
  fl_copy(t->asker_gid, sizeof t->asker_gid, m->from_gid);
  fl_copy(t->asked_gid, sizeof t->asked_gid, asked->gid);
  t->expires_ms = m->expires_ms;
  t->next = gw->turns;
  gw->turns = t;
  return t;
}

void fl_ask_free(fl_gw *gw) {
  while (gw->turns) {
    fl_turn *n = gw->turns->next;
    fl_free(gw->turns);
    gw->turns = n;
  }
}

/* ---- results ---------------------------------------------------------------------- */

static json_t *fl_peer_ref(fl_gw *gw, const char *gid) {
  fl_entity *e = fl_entity_by_gid(gw, gid);
  return e ? fl_entity_ref_json(e) : json_pack("{s:s, s:s}", "gid", gid, "name", "");
}

/* {turnId, traceId, to, status} of a turn's waiter w. */
static json_t *fl_turn_result(fl_wait *w, const char *status) {
  return json_pack("{s:s, s:s, s:s, s:o, s:s}", "turnId", w->turn_id, "traceId", w->trace_id,
                   "msgId", w->msg_id, "to", fl_peer_ref(w->gw, w->peer_gid), "status", status);
}

static json_t *fl_answered_result(fl_wait *w, const fl_msg *answer) {
  json_t *r = fl_turn_result(w, "answered");
  if (r) {
    json_object_set_new(r, "answer",
                        json_stringn(answer->content ? answer->content : "",
                                     answer->content ? answer->content_len : 0));
    json_object_set_new(
        r, "from", json_pack("{s:s, s:s}", "gid", answer->from_gid, "name", answer->from_name));
  }
  return r;
}

static void fl_asker_timeout(fl_wait *w) {
  fl_info(w->trace_id, "ask %s (turn %s): no answer in time", w->msg_id, w->turn_id);
  fl_wait_complete(w, fl_turn_result(w, "expired"), NULL);
}

static void fl_answerer_timeout(fl_wait *w) {
  fl_info(w->trace_id, "answer %s (turn %s): published; no word back on whether it was in time",
          w->msg_id, w->turn_id);
  fl_wait_complete(w, fl_turn_result(w, "sent"), NULL);
}

static void fl_ask_expect(fl_wait *w, double wait_s);

static const fl_wait_ops fl_asker_ops = {.timeout = fl_asker_timeout,
                                         .expect_reply = fl_ask_expect};
static const fl_wait_ops fl_answerer_ops = {.timeout = fl_answerer_timeout,
                                            .expect_reply = fl_ask_expect};

static void fl_turn_mark(fl_wait *w, const fl_msg *m, int side) {
  fl_copy(w->msg_id, sizeof w->msg_id, m->msg_id);
  fl_copy(w->trace_id, sizeof w->trace_id, m->trace_id);
  fl_copy(w->peer_gid, sizeof w->peer_gid, m->to_gid);
  fl_copy(w->turn_id, sizeof w->turn_id, m->turn_id);
  w->turn_side = side;
  w->turn_expires_ms = m->expires_ms;
  w->verb = side == FL_SIDE_ANSWERER ? &fl_answerer_ops : &fl_asker_ops;
  /* A turn waits for its own answer, never for a reply of the same peer. */
  w->wants_reply = 0;
}

/* A turn's waiter whose publish the broker confirmed: waits on for the
 * answer (asker, until the turn runs out) or the verdict (answerer), not
 * for the send's wait_s. */
static void fl_ask_expect(fl_wait *w, double wait_s) {
  (void)wait_s;
  if (w->turn_side == FL_SIDE_ANSWERER) {
    fl_wait_restart(w, FL_WAIT_ANSWER, &fl_answerer_ops, FL_VERDICT_WAIT_S);
    return;
  }
  long long left = w->turn_expires_ms - fl_now_ms();
  fl_wait_restart(w, FL_WAIT_ASK, &fl_asker_ops, left > 0 ? (double)left / 1000.0 : 0);
}

/* The waiter of c on side of turn_id (in either phase), or NULL. */
static fl_wait *fl_turn_waiter(fl_client *c, const char *turn_id, int side) {
  for (fl_wait *w = c ? c->waits : NULL; w; w = w->next)
    if (w->turn_side == side && strcmp(w->turn_id, turn_id) == 0)
      return w;
  return NULL;
}

/* ---- surfacing an ask ------------------------------------------------------------- */

/* Hands the ask m to an open waiting call of asked: a send to the asker
 * (it reads "asked"), else a poll (it returns the ask). 1 when one took it. */
static int fl_ask_offer(fl_gw *gw, fl_entity *asked, const fl_msg *m) {
  fl_client *c = asked->client;
  if (!c)
    return 0;
  for (fl_wait *w = c->waits; w; w = w->next) {
    int sending = w->kind == FL_WAIT_SEND || (w->kind == FL_WAIT_CONFIRM && w->wants_reply);
    if (!sending || w->turn_side || strcmp(w->peer_gid, m->from_gid) != 0)
      continue;
    char ts[32];
    fl_rfc3339(m->expires_ms, ts);
    json_t *res =
        json_pack("{s:s, s:s, s:o, s:s, s:s, s:s%, s:{s:s, s:s}, s:s}", "msgId", w->msg_id,
                  "traceId", w->trace_id, "to", fl_peer_ref(gw, w->peer_gid), "status", "asked",
                  "turnId", m->turn_id, "question", m->content, m->content_len, "from", "gid",
                  m->from_gid, "name", m->from_name, "expiresAt", ts);
    fl_info(m->trace_id, "ask %s (turn %s) surfaced on the waiting send %s of '%s'", m->msg_id,
            m->turn_id, w->msg_id, asked->name);
    fl_wait_complete(w, res, NULL);
    return 1;
  }
  for (fl_wait *w = c->waits; w; w = w->next) {
    if (w->kind != FL_WAIT_POLL || (w->peer_gid[0] && strcmp(w->peer_gid, m->from_gid) != 0))
      continue;
    size_t held = 0;
    fl_store_count(gw->store, asked->gid, fl_now_ms(), &held);
    json_t *res =
        json_pack("{s:[o], s:I}", "messages", fl_router_msg_json(m), "remaining", (json_int_t)held);
    fl_info(m->trace_id, "ask %s (turn %s) surfaced on a waiting poll of '%s'", m->msg_id,
            m->turn_id, asked->name);
    fl_wait_complete(w, res, NULL);
    return 1;
  }
  return 0;
}

/* Sends a notice of kind about turn message m back to its sender, from
 * local entity from. Fire and forget: it is logged when it cannot go. */
static void fl_notice(fl_gw *gw, fl_envelope_kind kind, fl_entity *from, const fl_msg *m) {
  fl_entity *dst = fl_entity_by_gid(gw, m->from_gid);
  if (!dst || !dst->remote)
    return;
  fl_msg n;
  fl_router_msg_init(&n, kind, from, dst, "");
  fl_copy(n.trace_id, sizeof n.trace_id, m->trace_id);
  fl_copy(n.turn_id, sizeof n.turn_id, m->turn_id);
  fl_copy(n.in_reply_to, sizeof n.in_reply_to, m->msg_id);
  n.expires_ms = n.ts_ms + FL_NOTICE_TTL_MS;
  char err[256];
  if (fl_remote_post(gw, dst, &n, NULL, NULL, err, sizeof err) != 0)
    fl_warn(m->trace_id, "%s for turn %s could not go back to '%s': %s", n.kind, m->turn_id,
            dst->name, err);
}

/* ---- the verbs -------------------------------------------------------------------- */

int fl_gw_ask(fl_gw *gw, fl_client *c, const char *to, const char *question, double wait_s,
              fl_gw_cb cb, void *ctx, json_t **result, fl_wait **wait, char *err, size_t errlen) {
  int rc;
  *result = NULL;
  *wait = NULL;
  if ((rc = fl_router_check_sender(c, question, err, errlen)))
    return rc;
  fl_entity *dst;
  if ((rc = fl_roster_resolve(gw, to, &dst, err, errlen)))
    return rc;
  if (dst == c->entity) {
    fl_errf(err, errlen, "'%s' is you: ask someone else (usually your lead)", dst->name);
    return FL_EINVAL;
  }
  wait_s = fl_router_clamp_wait(wait_s);
  if (wait_s <= 0)
    wait_s = FL_DEFAULT_WAIT_S;
  if ((rc = fl_wait_room(c, err, errlen)))
    return rc;
  fl_msg m;
  fl_router_msg_init(&m, FL_KIND_ASK, c->entity, dst, question);
  fl_uuid(m.turn_id);
  /* An ask about a brief joins the brief's trace. */
  const char *trace = fl_router_flow_trace(gw, dst->gid, c->entity->gid);
  if (trace)
    fl_copy(m.trace_id, sizeof m.trace_id, trace);
  else
    fl_uuid(m.trace_id);
  m.expires_ms = m.ts_ms + (long long)(wait_s * 1000.0);
  fl_gw_count(gw, FL_C_ASKS);
  if (dst->remote) {
    if ((rc = fl_remote_publish(gw, c, dst, &m, wait_s, json_object(), cb, ctx, wait, err, errlen)))
      return rc;
    fl_turn_mark(*wait, &m, FL_SIDE_ASKER);
    fl_info(m.trace_id, "'%s' asks '%s' (turn %s, %.1f s)", c->entity->name, dst->name, m.turn_id,
            wait_s);
    return 0;
  }
  fl_turn *t = fl_turn_add(gw, &m, dst);
  if (!t) {
    fl_errf(err, errlen, "out of memory");
    return FL_ENOMEM;
  }
  fl_info(m.trace_id, "'%s' asks '%s' (turn %s, %.1f s)", c->entity->name, dst->name, m.turn_id,
          wait_s);
  if (!fl_ask_offer(gw, dst, &m)) {
    t->answered = 1;
    fl_gw_count(gw, FL_C_ASKS_NO_WAITER);
    fl_info(m.trace_id, "ask %s: '%s' has no open waiting call", m.msg_id, dst->name);
    *result = json_pack("{s:s, s:s, s:s, s:o, s:s}", "turnId", m.turn_id, "traceId", m.trace_id,
                        "msgId", m.msg_id, "to", fl_entity_ref_json(dst), "status", "no_waiter");
    return *result ? 0 : FL_ENOMEM;
  }
  fl_wait *w;
  if ((rc = fl_wait_new(gw, c, FL_WAIT_ASK, &fl_asker_ops, wait_s, cb, ctx, &w, err, errlen)))
    return rc;
  fl_turn_mark(w, &m, FL_SIDE_ASKER);
  *wait = w;
  return 0;
}

int fl_gw_answer(fl_gw *gw, fl_client *c, const char *turn_id, const char *content, fl_gw_cb cb,
                 void *ctx, json_t **result, fl_wait **wait, char *err, size_t errlen) {
  int rc;
  *result = NULL;
  *wait = NULL;
  if ((rc = fl_router_check_sender(c, content, err, errlen)))
    return rc;
  fl_turn *t = turn_id ? fl_turn_find(gw, turn_id) : NULL;
  if (!t || strcmp(t->asked_gid, c->entity->gid) != 0) {
    fl_errf(err, errlen,
            "no ask with turnId %s was put to you on this host; asks are live only (a restart "
            "forgets them): take the turnId from the \"asked\" result or the ASK message",
            turn_id ? turn_id : "");
    return FL_ENOTFOUND;
  }
  fl_entity *dst = fl_entity_by_gid(gw, t->asker_gid);
  fl_msg m;
  memset(&m, 0, sizeof m);
  if (dst)
    fl_router_msg_init(&m, FL_KIND_ANSWER, c->entity, dst, content);
  fl_copy(m.turn_id, sizeof m.turn_id, t->turn_id);
  fl_copy(m.trace_id, sizeof m.trace_id, t->trace_id);
  fl_copy(m.in_reply_to, sizeof m.in_reply_to, t->ask_id);
  fl_copy(m.to_gid, sizeof m.to_gid, t->asker_gid);
  m.expires_ms = t->expires_ms;
  fl_wait *asker =
      dst && !dst->remote ? fl_turn_waiter(dst->client, t->turn_id, FL_SIDE_ASKER) : NULL;
  if (!dst || t->answered || fl_now_ms() >= t->expires_ms || (!dst->remote && !asker)) {
    /* The turn no longer waits: the answer is dropped, never delivered into
     * another turn. */
    fl_gw_count(gw, FL_C_ASKS_TOO_LATE);
    fl_info(t->trace_id, "answer to turn %s from '%s' is too late: dropped", t->turn_id,
            c->entity->name);
    *result = json_pack("{s:s, s:s, s:o, s:s}", "turnId", t->turn_id, "traceId", t->trace_id, "to",
                        fl_peer_ref(gw, t->asker_gid), "status", "too_late");
    return *result ? 0 : FL_ENOMEM;
  }
  if (dst->remote) {
    json_t *sent = fl_router_sent_result(&m, dst, "sent");
    if ((rc = fl_remote_publish(gw, c, dst, &m, FL_VERDICT_WAIT_S, sent, cb, ctx, wait, err,
                                errlen)))
      return rc;
    t->answered = 1;
    fl_turn_mark(*wait, &m, FL_SIDE_ANSWERER);
    return 0;
  }
  t->answered = 1;
  fl_gw_count(gw, FL_C_ASKS_ANSWERED);
  fl_info(t->trace_id, "'%s' answered turn %s of '%s'", c->entity->name, t->turn_id, dst->name);
  json_t *res = json_pack("{s:s, s:s, s:s, s:o, s:s}", "turnId", t->turn_id, "traceId", t->trace_id,
                          "msgId", m.msg_id, "to", fl_entity_ref_json(dst), "status", "sent");
  fl_wait_complete(asker, fl_answered_result(asker, &m), NULL);
  *result = res;
  return res ? 0 : FL_ENOMEM;
}

/* ---- what other hosts send ------------------------------------------------------- */

void fl_ask_receive(fl_gw *gw, fl_entity *to, const fl_msg *m) {
  long long now = fl_now_ms();
  if (fl_envelope_is_kind(m->kind, FL_KIND_ASK)) {
    if (!m->expires_ms || m->expires_ms <= now) {
      fl_gw_count(gw, FL_C_VERIFY_EXPIRED);
      fl_warn(m->trace_id, "ask %s from '%s' arrived expired: dropped", m->msg_id, m->from_name);
      return;
    }
    fl_gw_count(gw, FL_C_ASKS);
    fl_turn *t = fl_turn_add(gw, m, to);
    if (t && fl_ask_offer(gw, to, m))
      return;
    if (t)
      t->answered = 1;
    fl_gw_count(gw, FL_C_ASKS_NO_WAITER);
    fl_info(m->trace_id, "ask %s: '%s' has no open waiting call; NO_WAITER back", m->msg_id,
            to->name);
    fl_notice(gw, FL_KIND_NO_WAITER, to, m);
    return;
  }
  int verdict = fl_envelope_is_kind(m->kind, FL_KIND_TOO_LATE) ||
                fl_envelope_is_kind(m->kind, FL_KIND_INJECTED);
  fl_wait *w = fl_turn_waiter(to->client, m->turn_id, verdict ? FL_SIDE_ANSWERER : FL_SIDE_ASKER);
  if (w && strcmp(w->peer_gid, m->from_gid) != 0)
    w = NULL; /* only the one asked (or answered) speaks for the turn */
  if (fl_envelope_is_kind(m->kind, FL_KIND_ANSWER)) {
    if (!w || w->turn_expires_ms <= now) {
      fl_gw_count(gw, FL_C_ASKS_TOO_LATE);
      fl_info(m->trace_id, "answer %s to turn %s is too late: dropped; TOO_LATE back", m->msg_id,
              m->turn_id);
      fl_notice(gw, FL_KIND_TOO_LATE, to, m);
      return;
    }
    fl_gw_count(gw, FL_C_ASKS_ANSWERED);
    fl_info(m->trace_id, "answer %s reached turn %s of '%s'", m->msg_id, m->turn_id, to->name);
    fl_wait_complete(w, fl_answered_result(w, m), NULL);
    fl_notice(gw, FL_KIND_INJECTED, to, m);
    return;
  }
  if (!w) {
    fl_info(m->trace_id, "%s for turn %s: no call waits on it any more", m->kind, m->turn_id);
    return;
  }
  const char *status = fl_envelope_is_kind(m->kind, FL_KIND_NO_WAITER)  ? "no_waiter"
                       : fl_envelope_is_kind(m->kind, FL_KIND_TOO_LATE) ? "too_late"
                                                                        : "sent";
  if (fl_envelope_is_kind(m->kind, FL_KIND_NO_WAITER))
    fl_gw_count(gw, FL_C_ASKS_NO_WAITER);
  else if (fl_envelope_is_kind(m->kind, FL_KIND_TOO_LATE))
    fl_gw_count(gw, FL_C_ASKS_TOO_LATE);
  fl_info(m->trace_id, "turn %s: %s", m->turn_id, status);
  fl_wait_complete(w, fl_turn_result(w, status), NULL);
}
