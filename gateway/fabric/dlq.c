/* dlq.c — fleetctl dlq on the loop (see dlq.h). */
#include "gateway/fabric/dlq.h"

#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/log.h"
#include "common/time.h"
#include "gateway/broker/broker.h"
#include "gateway/core/gw_internal.h"
#include "gateway/core/remote.h"
#include "gateway/fabric/inbound.h"
#include "gateway/fabric/wire.h"
#include "gateway/proto/envelope.h"
#include "gateway/proto/topology.h"

/* Reasons remembered, newest last; older ones read as x-death's alone. */
#define FL_DLQ_NOTES 512
/* How long a fleetctl dlq command waits for the broker. */
#define FL_DLQ_TIMEOUT_S 30

struct fl_dlq {
  struct {
    char msg_id[FL_ID_LEN];
    char why[256];
  } notes[FL_DLQ_NOTES];
  size_t next;
  json_t *snap; /* the last background list, or NULL */
  char snap_at[32];
  int refreshing; /* a background list is on its way */
};

enum fl_dlq_verb { FL_DLQ_LIST, FL_DLQ_SHOW, FL_DLQ_REPLAY, FL_DLQ_PURGE };

/* One command in flight; it lives until the broker answers, also when the
 * call that asked went away (wait NULL). */
typedef struct fl_dlq_req {
  fl_gw *gw;
  fl_wait *wait;
  enum fl_dlq_verb verb;
  int replaying; /* replay: the check passed and the thread republishes */
  int snapshot;  /* a background list for the dashboard, no caller */
  char id[FL_ID_LEN];
  long long older_than_ms;
} fl_dlq_req;

static struct fl_dlq *fl_dlq_of(fl_gw *gw) {
  if (!gw->dlq)
    gw->dlq = fl_calloc(1, sizeof *gw->dlq);
  return gw->dlq;
}

void fl_dlq_note(fl_gw *gw, const char *msg_id, const char *why) {
  if (!gw || !msg_id || !*msg_id)
    return;
  struct fl_dlq *q = fl_dlq_of(gw);
  if (!q)
    return;
  fl_copy(q->notes[q->next].msg_id, FL_ID_LEN, msg_id);
  fl_copy(q->notes[q->next].why, sizeof q->notes[0].why, why);
  q->next = (q->next + 1) % FL_DLQ_NOTES;
}

static const char *fl_dlq_reason_of(fl_gw *gw, const char *msg_id) {
  struct fl_dlq *q = gw->dlq;
  for (size_t k = 1; q && msg_id[0] && k <= FL_DLQ_NOTES; k++) {
    size_t i = (q->next + FL_DLQ_NOTES - k) % FL_DLQ_NOTES;
    if (strcmp(q->notes[i].msg_id, msg_id) == 0)
      return q->notes[i].why;
  }
  return NULL;
}

void fl_dlq_free(fl_gw *gw) {
  if (!gw)
    return;
  if (gw->dlq)
    json_decref(gw->dlq->snap);
  fl_free(gw->dlq);
  gw->dlq = NULL;
}

/* ---- answers ------------------------------------------------------------------- */

/* The checks a receiving gateway runs first, on d as it is now: its origin
 * (signature under the pinned key), then its body as the sealing policy
 * takes it (sealed to this host and opening, or in clear only where that is
 * accepted). A signed body sealed to another host is that host's to open;
 * its signature is checked here. A pair-sealed message carries no
 * signature: only its recipient host can check it at all (*elsewhere is
 * set to 1 and why says so). 0, or the failed check's counter with why. */
static int fl_dead_verify(fl_gw *gw, const fl_broker_dead *d, char *why, size_t n, int *elsewhere) {
  fl_broker_delivery del = {
      .env = &d->env, .body = d->body, .len = d->len, .routing_key = d->routing_key};
  *elsewhere = 0;
  if (d->env.sealed_to[0] && strcmp(d->env.sealed_to, gw->cfg.host_id) != 0) {
    if (!fl_envelope_is_pair_sealed(&d->env))
      return fl_inbound_verify_origin(gw, &del, why, n);
    *elsewhere = 1;
    snprintf(why, n,
             "it is pair-sealed to host '%s': only that host can check who sent it (run fleetctl "
             "dlq there)",
             d->env.sealed_to);
    return FL_C_VERIFY_SEALED_ELSEWHERE;
  }
  fl_broker_delivery pd;
  char *opened = NULL;
  int bad = fl_inbound_open(gw, &del, 1, &pd, &opened, why, n);
  fl_free(opened);
  return bad == FL_C_COUNT ? 0 : bad; /* out of memory says nothing of the message */
}

static json_t *fl_dead_json(fl_gw *gw, const fl_broker_dead *d, int with_body) {
  const char *fleet = d->env_ok ? fl_dlq_reason_of(gw, d->env.msg_id) : NULL;
  char reason[512], now[384] = "";
  int elsewhere = 0;
  int fails_now = d->env_ok && fl_dead_verify(gw, d, now, sizeof now, &elsewhere) != 0;
  if (fleet)
    snprintf(reason, sizeof reason, "%s", fleet);
  else if (fails_now && !elsewhere) /* another gateway rejected it; this one says why it would */
    snprintf(reason, sizeof reason, "%s", now);
  else if (!d->env_ok)
    snprintf(reason, sizeof reason, "malformed: %s", d->bad);
  else if (strcmp(d->reason, "maxlen") == 0)
    snprintf(reason, sizeof reason, "the inbox %s was full", d->queue);
  else if (strcmp(d->reason, "expired") == 0)
    snprintf(reason, sizeof reason, "it waited in %s past its time to live", d->queue);
  else
    snprintf(reason, sizeof reason, "%s by a gateway (its log line names why)",
             d->reason[0] ? d->reason : "dead-lettered");
  json_t *env = json_object();
  for (size_t i = 0; env && d->env_ok && i < FL_ENVELOPE_NFIELDS; i++) {
    const char *v = fl_envelope_get(&d->env, &fl_envelope_fields[i]);
    if (v && *v)
      json_object_set_new(env, fl_envelope_fields[i].key, json_string(v));
  }
  char died[32] = "";
  if (d->time_ms)
    fl_rfc3339(d->time_ms, died);
  json_t *o = json_pack(
      "{s:s?, s:s?, s:s?, s:s?, s:s, s:s?, s:o, s:{s:s, s:s, s:s, s:s, s:I, s:s?}, s:I}", "msgId",
      d->env_ok ? d->env.msg_id : NULL, "traceId", d->env_ok ? d->env.trace_id : NULL, "kind",
      d->env_ok ? d->env.kind : NULL, "fromHost", d->env_ok ? d->env.host : NULL, "reason", reason,
      "fleetReason", fleet, "envelope", env, "xDeath", "reason", d->reason, "queue", d->queue,
      "exchange", d->exchange, "routingKey", d->routing_key, "count", (json_int_t)d->count, "time",
      died[0] ? died : NULL, "bytes", (json_int_t)d->len);
  if (o)
    json_object_set_new(o, "verifiesNow",
                        elsewhere ? json_null() : json_boolean(d->env_ok && !fails_now));
  if (o && with_body)
    json_object_set_new(o, "content", d->body ? json_stringn(d->body, d->len) : json_string(""));
  return o;
}

static const fl_broker_dead *fl_find(const fl_broker_dead *dead, size_t n, const char *id) {
  for (size_t i = 0; i < n; i++)
    if (dead[i].env_ok && strcmp(dead[i].env.msg_id, id) == 0)
      return &dead[i];
  return NULL;
}

static void fl_req_finish(fl_dlq_req *r, json_t *result, const char *err) {
  if (r->wait) {
    r->wait->ext = NULL;
    fl_wait_complete(r->wait, result, err);
  } else {
    json_decref(result);
  }
  fl_free(r);
}

void fl_dlq_done(fl_gw *gw, void *req, int status, const char *why, const fl_broker_dead *dead,
                 size_t ndead, size_t affected) {
  fl_dlq_req *r = req;
  char msg[768];
  if (r->snapshot) {
    struct fl_dlq *q = gw->dlq; /* made before the request was */
    q->refreshing = 0;
    if (status == 0) {
      json_t *arr = json_array();
      for (size_t i = 0; arr && i < ndead; i++)
        json_array_append_new(arr, fl_dead_json(gw, &dead[i], 0));
      json_decref(q->snap);
      q->snap = arr;
      fl_rfc3339_now(q->snap_at, sizeof q->snap_at);
    }
    fl_free(r);
    return;
  }
  if (status == FL_ECANCELLED) {
    fl_req_finish(r, NULL, "fleetd is shutting down; nothing was changed in fleet.dlq");
    return;
  }
  if (status && !(r->replaying && status == FL_ENOTFOUND)) {
    snprintf(msg, sizeof msg, "%s: %s", r->replaying ? "replay failed" : "cannot read fleet.dlq",
             why && *why ? why : fl_strerror(status));
    fl_req_finish(r, NULL, msg);
    return;
  }
  if (r->verb == FL_DLQ_PURGE) {
    fl_info(NULL, "dlq: purged %zu message(s) from fleet.dlq", affected);
    fl_req_finish(r, json_pack("{s:I}", "purged", (json_int_t)affected), NULL);
    return;
  }
  if (r->replaying) {
    if (status == FL_ENOTFOUND || affected == 0) {
      snprintf(msg, sizeof msg, "%s left fleet.dlq before it could be replayed", r->id);
      fl_req_finish(r, NULL, msg);
      return;
    }
    fl_info(NULL, "dlq: replayed %s into its inbox", r->id);
    fl_req_finish(r, json_pack("{s:s, s:b}", "msgId", r->id, "replayed", 1), NULL);
    return;
  }
  if (r->verb == FL_DLQ_LIST) {
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < ndead; i++)
      json_array_append_new(arr, fl_dead_json(gw, &dead[i], 0));
    fl_req_finish(r, json_pack("{s:o, s:b}", "messages", arr, "more", ndead >= FL_BROKER_DLQ_MAX),
                  NULL);
    return;
  }
  const fl_broker_dead *d = fl_find(dead, ndead, r->id);
  if (!d) {
    snprintf(msg, sizeof msg, "no message %s in fleet.dlq (fleetctl dlq list shows what is there)",
             r->id);
    fl_req_finish(r, NULL, msg);
    return;
  }
  if (r->verb == FL_DLQ_SHOW) {
    fl_req_finish(r, fl_dead_json(gw, d, 1), NULL);
    return;
  }
  /* Replay: only a message sent to one inbox, by the key that names it,
   * and only when it now passes the origin check. */
  char want[FL_ID_LEN + 32];
  if (fl_topology_inbox_queue(want, sizeof want, d->routing_key) != 0 ||
      strcmp(want, d->queue) != 0) {
    snprintf(msg, sizeof msg,
             "cannot replay %s: it was sent to '%s', not to the one inbox it died in (%s); a "
             "broadcast is not replayed",
             r->id, d->routing_key, d->queue);
    fl_req_finish(r, NULL, msg);
    return;
  }
  char vwhy[384] = "";
  int elsewhere = 0;
  if (fl_dead_verify(gw, d, vwhy, sizeof vwhy, &elsewhere) != 0) {
    snprintf(msg, sizeof msg, "refused to replay %s: %s%s", r->id,
             elsewhere ? "" : "it still fails verification: ", vwhy);
    fl_warn(d->env.trace_id, "dlq: %s", msg);
    fl_req_finish(r, NULL, msg);
    return;
  }
  r->replaying = 1;
  int rc = fl_remote_dlq(gw, FL_BROKER_DLQ_REPLAY, r->id, 0, r);
  if (rc) {
    snprintf(msg, sizeof msg, "cannot replay %s: %s", r->id, fl_strerror(rc));
    fl_req_finish(r, NULL, msg);
  }
}

/* ---- the command --------------------------------------------------------------- */

static void fl_dlq_forget(fl_wait *w) {
  fl_dlq_req *r = w->ext;
  if (r)
    r->wait = NULL; /* the broker's answer frees it */
  w->ext = NULL;
}

static void fl_dlq_timeout(fl_wait *w) {
  fl_wait_complete(w, NULL, "the broker did not answer about fleet.dlq in time");
}

static const fl_wait_ops fl_dlq_ops = {.timeout = fl_dlq_timeout, .forget = fl_dlq_forget};

int fl_gw_dlq(fl_gw *gw, fl_client *c, const char *op, const char *id, double older_than_s,
              fl_gw_cb cb, void *ctx, fl_wait **wait, char *err, size_t errlen) {
  *wait = NULL;
  enum fl_dlq_verb verb;
  if (op && strcmp(op, "list") == 0)
    verb = FL_DLQ_LIST;
  else if (op && strcmp(op, "show") == 0)
    verb = FL_DLQ_SHOW;
  else if (op && strcmp(op, "replay") == 0)
    verb = FL_DLQ_REPLAY;
  else if (op && strcmp(op, "purge") == 0)
    verb = FL_DLQ_PURGE;
  else {
    fl_errf(err, errlen, "dlq op must be list, show, replay or purge, not '%s'", op ? op : "");
    return FL_EINVAL;
  }
  if ((verb == FL_DLQ_SHOW || verb == FL_DLQ_REPLAY) && (!id || !*id || strlen(id) >= FL_ID_LEN)) {
    fl_errf(err, errlen, "dlq %s needs the msgId of a message in fleet.dlq", op);
    return FL_EINVAL;
  }
  if (!(older_than_s >= 0)) {
    fl_errf(err, errlen, "--older-than must be a duration of 0 or more seconds");
    return FL_EINVAL;
  }
  if (!gw->cfg.broker_uri[0]) {
    fl_errf(err, errlen, "single-host mode has no fleet.dlq (it lives on the broker)");
    return FL_EBROKER;
  }
  fl_dlq_req *r = fl_calloc(1, sizeof *r);
  if (!r) {
    fl_errf(err, errlen, "out of memory");
    return FL_ENOMEM;
  }
  r->gw = gw;
  r->verb = verb;
  fl_copy(r->id, sizeof r->id, id);
  if (older_than_s > 0)
    r->older_than_ms = fl_now_ms() - (long long)(older_than_s * 1000.0);
  fl_wait *w;
  int rc =
      fl_wait_new(gw, c, FL_WAIT_ADMIN, &fl_dlq_ops, FL_DLQ_TIMEOUT_S, cb, ctx, &w, err, errlen);
  if (rc) {
    fl_free(r);
    return rc;
  }
  rc = fl_remote_dlq(gw, verb == FL_DLQ_PURGE ? FL_BROKER_DLQ_PURGE : FL_BROKER_DLQ_LIST, NULL,
                     r->older_than_ms, r);
  if (rc) {
    fl_gw_cancel(gw, &w);
    fl_free(r);
    fl_errf(err, errlen, "%s",
            rc == FL_EBROKER ? "the broker is unreachable, so fleet.dlq cannot be read now"
                             : fl_strerror(rc));
    return rc;
  }
  r->wait = w;
  w->ext = r;
  *wait = w;
  return 0;
}

void fl_dlq_refresh(fl_gw *gw) {
  struct fl_dlq *q = gw->cfg.broker_uri[0] ? fl_dlq_of(gw) : NULL;
  if (!q || q->refreshing)
    return;
  fl_dlq_req *r = fl_calloc(1, sizeof *r);
  if (!r)
    return;
  r->gw = gw;
  r->verb = FL_DLQ_LIST;
  r->snapshot = 1;
  if (fl_remote_dlq(gw, FL_BROKER_DLQ_LIST, NULL, 0, r) != 0)
    fl_free(r);
  else
    q->refreshing = 1;
}

json_t *fl_dlq_snapshot(fl_gw *gw) {
  if (!gw->cfg.broker_uri[0])
    return json_pack("{s:b, s:s}", "available", 0, "why",
                     "single-host mode: fleet.dlq lives on the broker");
  struct fl_dlq *q = gw->dlq;
  if (!q || !q->snap)
    return json_pack("{s:b, s:s}", "available", 0, "why", "not read yet");
  return json_pack("{s:b, s:O, s:s}", "available", 1, "messages", q->snap, "at", q->snap_at);
}
