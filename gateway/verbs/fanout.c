/* fanout.c — parallel briefs: one brief to several recipients, their
 * replies gathered into one result.
 *
 * fl_gw_send_many (gw.h) sends the same content to each recipient as a
 * separate SEND, all sharing one traceId, and parks one waiter
 * (FL_WAIT_FANOUT) that collects the replies in arrival order until every
 * recipient answered or the wait ran out. Replies that come later are held
 * for a poll like any other. The waiter takes the replies it expects
 * through its take operation (wait.h), which the router asks first.
 *
 * Every recipient is resolved before anything is sent, so a name that
 * resolves to nobody fails the whole call. Recipients on other hosts are
 * handed to the cross-host backend first: while the broker is unreachable
 * the first of them fails the call before any copy went out; a copy the
 * broker refuses later reads as pending with its error. The one waiter
 * holds which recipient got which msgId and the replies so far; the state
 * lives until both the waiter and every such publish let go of it. */
#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/log.h"
#include "gateway/core/gw_internal.h"
#include "gateway/core/remote.h"
#include "gateway/core/router.h"
#include "gateway/gw.h"
#include "gateway/proto/envelope.h"

typedef struct fl_fanout fl_fanout;
struct fl_fanout {
  int refs;  /* the call, plus each copy the broker has not answered yet */
  int ended; /* the call has its result: later news is only logged */
  char trace_id[FL_ID_LEN];
  size_t n, nreplied;
  struct fl_fanout_to {
    fl_fanout *fo;
    char to_gid[FL_ID_LEN];
    char msg_id[FL_ID_LEN];
    char error[256]; /* why its copy could not go, or "" */
    int replied;
  } at[FL_MAX_FANOUT];
  json_t *replies; /* in arrival order */
};

static void fl_fanout_unref(fl_fanout *fo) {
  if (--fo->refs > 0)
    return;
  json_decref(fo->replies);
  fl_free(fo);
}

/* The broker's answer on a copy for another host. */
static void fl_fanout_confirmed(void *ctx, int status, const char *why) {
  struct fl_fanout_to *to = ctx;
  fl_fanout *fo = to->fo;
  if (status && status != FL_ECANCELLED) {
    fl_warn(fo->trace_id, "parallel brief: the copy %s was not delivered: %s", to->msg_id,
            why && *why ? why : fl_strerror(status));
    if (!fo->ended)
      fl_copy(to->error, sizeof to->error, why && *why ? why : fl_strerror(status));
  }
  fl_fanout_unref(fo);
}

static json_t *fl_fanout_result(fl_gw *gw, const fl_fanout *fo, const char *trace_id, int waited) {
  json_t *pending = json_array();
  for (size_t i = 0; i < fo->n; i++) {
    if (fo->at[i].replied)
      continue;
    fl_entity *e = fl_entity_by_gid(gw, fo->at[i].to_gid);
    json_t *p = json_pack("{s:o, s:s}", "to",
                          e ? fl_entity_ref_json(e)
                            : json_pack("{s:s, s:s}", "gid", fo->at[i].to_gid, "name", ""),
                          "msgId", fo->at[i].msg_id);
    if (p && fo->at[i].error[0])
      json_object_set_new(p, "error", json_string(fo->at[i].error));
    json_array_append_new(pending, p);
  }
  const char *status = !waited ? "sent" : fo->nreplied == fo->n ? "replied" : "pending";
  return json_pack("{s:s, s:s, s:O, s:o}", "traceId", trace_id, "status", status, "replies",
                   fo->replies, "pending", pending);
}

static void fl_fanout_timeout(fl_wait *w) {
  fl_fanout *fo = w->ext;
  fl_info(w->trace_id, "parallel brief: %zu of %zu replied in time; the rest go to fleet_poll",
          fo->nreplied, fo->n);
  fl_wait_complete(w, fl_fanout_result(w->gw, fo, w->trace_id, 1), NULL);
}

static void fl_fanout_forget(fl_wait *w) {
  fl_fanout *fo = w->ext;
  if (!fo)
    return;
  w->ext = NULL;
  fo->ended = 1;
  fl_fanout_unref(fo);
}

/* Which recipient of w's parallel brief the reply m answers, or -1. */
static long fl_fanout_match(fl_wait *w, const fl_msg *m) {
  fl_fanout *fo = w->ext;
  if (!fo || !fl_envelope_is_kind(m->kind, FL_KIND_REPLY))
    return -1;
  for (size_t i = 0; i < fo->n; i++) {
    if (fo->at[i].replied || strcmp(fo->at[i].to_gid, m->from_gid) != 0 ||
        (m->in_reply_to[0] && strcmp(m->in_reply_to, fo->at[i].msg_id) != 0))
      continue;
    return (long)i;
  }
  return -1;
}

/* The just-accepted m for w's entity: a reply w's brief expects is taken
 * out of the store into its result (wait.h's take). */
static int fl_fanout_take(fl_wait *w, const fl_msg *m, int commit) {
  long i = fl_fanout_match(w, m);
  if (i < 0 || !commit)
    return i >= 0;
  fl_gw *gw = w->gw;
  fl_entity *to = w->client->entity;
  fl_fanout *fo = w->ext;
  fl_msg buf;
  const fl_msg *got = fl_router_take(gw, to, m, &buf);
  if (!got)
    return 0;
  gw->counters[FL_C_MSGS_DRAINED]++;
  fl_remote_drained(gw, to->gid, got->msg_id);
  char ts[32];
  fl_rfc3339(got->ts_ms, ts);
  json_array_append_new(
      fo->replies,
      json_pack("{s:{s:s, s:s}, s:s, s:s%, s:s, s:s}", "from", "gid", got->from_gid, "name",
                got->from_name, "msgId", got->msg_id, "content", got->content ? got->content : "",
                got->content ? got->content_len : 0, "ts", ts, "inReplyTo", fo->at[i].msg_id));
  fl_free(buf.content);
  fo->at[i].replied = 1;
  fo->nreplied++;
  fl_info(m->trace_id, "parallel brief: reply %s from '%s' (%zu of %zu)", m->msg_id, m->from_name,
          fo->nreplied, fo->n);
  if (fo->nreplied == fo->n)
    fl_wait_complete(w, fl_fanout_result(gw, fo, w->trace_id, 1), NULL);
  return 1;
}

static const fl_wait_ops fl_fanout_ops = {
    .timeout = fl_fanout_timeout, .forget = fl_fanout_forget, .take = fl_fanout_take};

int fl_gw_send_many(fl_gw *gw, fl_client *c, const char *const *to, size_t nto, const char *content,
                    double wait_s, fl_gw_cb cb, void *ctx, json_t **result, fl_wait **wait,
                    char *err, size_t errlen) {
  int rc;
  *result = NULL;
  *wait = NULL;
  if ((rc = fl_router_check_sender(c, content, err, errlen)))
    return rc;
  if (nto < FL_MIN_FANOUT || nto > FL_MAX_FANOUT) {
    fl_errf(err, errlen, "a parallel brief goes to %d to %d recipients; `to` lists %zu",
            FL_MIN_FANOUT, FL_MAX_FANOUT, nto);
    return FL_EINVAL;
  }
  fl_entity *dst[FL_MAX_FANOUT];
  for (size_t i = 0; i < nto; i++) {
    char why[384];
    if ((rc = fl_roster_resolve(gw, to[i] ? to[i] : "", &dst[i], why, sizeof why))) {
      fl_errf(err, errlen, "nothing was sent: recipient '%s' (to[%zu]): %s", to[i] ? to[i] : "", i,
              why);
      return rc;
    }
    for (size_t k = 0; k < i; k++) {
      if (dst[k] == dst[i]) {
        fl_errf(err, errlen, "nothing was sent: '%s' is listed twice in `to`", dst[i]->name);
        return FL_EINVAL;
      }
    }
  }
  wait_s = fl_router_clamp_wait(wait_s);
  if (wait_s > 0 && (rc = fl_wait_room(c, err, errlen)))
    return rc;
  fl_fanout *fo = fl_calloc(1, sizeof *fo);
  if (!fo || !(fo->replies = json_array())) {
    fl_free(fo);
    fl_errf(err, errlen, "out of memory");
    return FL_ENOMEM;
  }
  fo->refs = 1;
  fl_uuid(fo->trace_id);
  const char *trace_id = fo->trace_id;
  fl_gw_count(gw, FL_C_FANOUTS);
  /* Other hosts first: an unreachable broker then fails the call before
   * any copy went out. Local copies are committed, then woken together. */
  fl_msg m[FL_MAX_FANOUT];
  size_t sent = 0;
  for (int pass = 0; pass < 2; pass++) {
    for (size_t i = 0; i < nto; i++) {
      if (dst[i]->remote != (pass == 0))
        continue;
      fl_msg *mi = &m[fo->n];
      fl_router_msg_init(mi, FL_KIND_SEND, c->entity, dst[i], content);
      fl_copy(mi->trace_id, sizeof mi->trace_id, trace_id);
      struct fl_fanout_to *to_i = &fo->at[fo->n];
      to_i->fo = fo;
      fl_copy(to_i->to_gid, FL_ID_LEN, dst[i]->gid);
      fl_copy(to_i->msg_id, FL_ID_LEN, mi->msg_id);
      char why[256];
      rc = dst[i]->remote
               ? fl_remote_post(gw, dst[i], mi, fl_fanout_confirmed, to_i, why, sizeof why)
               : fl_router_accept(gw, dst[i], mi, why, sizeof why);
      if (rc == 0 && dst[i]->remote)
        fo->refs++;
      if (rc && sent == 0 && dst[i]->remote) {
        fl_errf(err, errlen, "nothing was sent: could not reach '%s@%s': %s", dst[i]->name,
                dst[i]->host, why);
        fl_fanout_unref(fo);
        return rc;
      }
      if (rc) {
        fl_copy(fo->at[fo->n].error, sizeof fo->at[fo->n].error, why);
        fl_warn(trace_id, "parallel brief: copy for '%s' not sent: %s", dst[i]->name, why);
      } else {
        sent++;
        if (dst[i]->remote)
          fl_router_remember(gw, mi);
      }
      fo->n++;
    }
  }
  fl_info(trace_id, "parallel brief from '%s' to %zu recipients (%zu sent)", c->entity->name, fo->n,
          sent);
  fl_wait *w = NULL;
  if (wait_s > 0 &&
      fl_wait_new(gw, c, FL_WAIT_FANOUT, &fl_fanout_ops, wait_s, cb, ctx, &w, err, errlen) == 0) {
    w->ext = fo;
    fl_copy(w->trace_id, sizeof w->trace_id, trace_id);
    fl_copy(w->msg_id, sizeof w->msg_id, fo->at[0].msg_id);
  }
  for (size_t i = 0; i < fo->n; i++) {
    fl_entity *e = fl_entity_by_gid(gw, fo->at[i].to_gid);
    if (e && !e->remote && !fo->at[i].error[0])
      fl_router_wake(gw, e, &m[i]);
  }
  if (w) {
    *wait = w;
    return 0;
  }
  /* Not waiting (or no room to wait: the copies are committed either way). */
  *result = fl_fanout_result(gw, fo, trace_id, 0);
  fo->ended = 1;
  fl_fanout_unref(fo);
  return *result ? 0 : FL_ENOMEM;
}
