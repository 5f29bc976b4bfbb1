/* fabric.c — cross-host routing over the broker: the AMQP backend of the
 * gateway core.
 *
 * With a broker configured, the core's door (remote.h) leads here. This
 * file owns the broker link (broker.c) and, on the loop thread:
 *
 *   - publishes: a message for another host's entity goes to that entity's
 *     inbox on fleet.msg (key = its gid, mandatory, confirmed), its body
 *     sealed to that host (wire.c); a broadcast goes once per other host
 *     with members, sealed to that host, to broadcast.<host>.<group> (with
 *     broker.seal false: once, in clear, to broadcast.<group>). The sender's call stays pending
 * until the broker confirms, so an unroutable or refused publish is an error the sender sees. While
 * the link is down a remote send fails at once: nothing is buffered on the broker's behalf.
 *   - settles deliveries through fabric_settle.c: acked once durable and
 *     drained, or given back to the broker when the store cannot take them.
 *   - dispatches what the link reports: inbox deliveries to the receive
 *     checks (inbound.c), beats to presence (presence.c), the link's state
 *     to both. Whether each inbox is consumed is kept here for status: a
 *     link that is up while an inbox is refused reads "degraded", and the
 *     entity's beat says so, so senders on other hosts refuse to send into
 *     an inbox nobody consumes (a queue declared by someone else may drop
 *     what it is sent while the broker confirms it).
 *
 * The core never calls this file by name; it sees only fl_fabric_ops. This
 * file may call the core's internal API, presence and inbound. */
#include "gateway/fabric/fabric.h"

#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/log.h"
#include "gateway/core/gw_internal.h"
#include "gateway/core/histo.h"
#include "gateway/fabric/confirm.h"
#include "gateway/fabric/control.h"
#include "gateway/fabric/dlq.h"
#include "gateway/fabric/fabric_internal.h"
#include "gateway/fabric/inbound.h"
#include "gateway/fabric/presence.h"
#include "gateway/fabric/wire.h"
#include "gateway/proto/sign.h"
#include "gateway/proto/topology.h"
#include "gateway/rooms/claims.h"

/* Presence defaults when the configuration leaves them 0: a beat every 5 s,
 * and a remote entry lives three beats. */
#define FL_PRESENCE_INTERVAL_MS 5000
#define FL_PRESENCE_TTL_BEATS 3

/* What the link last reported of one local entity's inbox consumer. */
struct fl_consumer {
  char gid[FL_ID_LEN];
  int failing;   /* 1: not consumed, why says why; 0: consuming */
  char why[256]; /* as the broker said it */
};

/* One copy of a publish: its routing key and the host it is sealed to. */
typedef struct fl_target {
  char key[FL_MAX_GROUP_NAME + FL_HOST_ID_SIZE + 16];
  const char *host;
} fl_target;

/* ---- what the link reports ---------------------------------------------------- */

static void fl_on_delivery(void *ctx, const fl_broker_delivery *d) {
  fl_fabric *f = ctx;
  if (d->bad) { /* not even an envelope, whatever queue it came from */
    fl_inbound_dead_letter(f->inbound, d, FL_C_VERIFY_MALFORMED, d->bad);
    return;
  }
  switch (d->source) {
  case FL_BROKER_INBOX:
    if (fl_fabric_admit(f, d))
      fl_inbound_receive(f->inbound, d); /* settles d itself */
    return;
  case FL_BROKER_ROSTER:
    fl_presence_receive(f->presence, d);
    break;
  case FL_BROKER_CLAIMS:
    fl_claims_receive(f->gw, d->env->host, d->body, d->len);
    break;
  case FL_BROKER_CONTROL:
    if (fl_control_receive(f->control, d)) {
      fl_broker_reject(f->broker, d->tag, 0);
      return;
    }
    break;
  }
  fl_fabric_ack(f, d->tag);
}

static void fl_on_state(void *ctx, int up, const char *why) {
  fl_fabric *f = ctx;
  fl_gw *gw = f->gw;
  int was = f->up;
  f->up = up;
  fl_copy(f->why, sizeof f->why, up ? "" : why);
  if (up) {
    fl_info(NULL, "broker link is up");
  } else {
    if (was)
      fl_gw_count(gw, FL_C_BROKER_DISCONNECTS);
    fl_warn(NULL, "broker link is down: %s; remote sends fail until it is back", why);
    char control[160];
    fl_topology_control_queue(control, sizeof control, gw->cfg.host_id);
    if (strstr(why, control) && strstr(why, "exclusive")) {
      fl_error(NULL,
               "another gateway with host id '%s' is connected to this broker: each "
               "gateway needs its own --host-id; this one retries until the other leaves",
               gw->cfg.host_id);
      snprintf(f->why, sizeof f->why, "another gateway with host id '%s' holds this host's queues",
               gw->cfg.host_id);
    }
    /* Unacked deliveries go back to their queues with the connection; they
     * come again (and are deduped) after the reconnect. */
    fl_fabric_unacked_clear(f);
    /* Every consumer went with it; the reconnect reports each again. */
    f->nconsumers = 0;
  }
  fl_presence_link(f->presence, up);
}

/* The consumer entry of gid, added if new; NULL when there is no room. */
static fl_consumer *fl_consumer_of(fl_fabric *f, const char *gid) {
  for (size_t i = 0; i < f->nconsumers; i++)
    if (strcmp(f->consumers[i].gid, gid) == 0)
      return &f->consumers[i];
  if (f->nconsumers == f->consumers_cap) {
    size_t cap = f->consumers_cap ? 2 * f->consumers_cap : 16;
    if (cap > FL_BROKER_MAX_INBOXES)
      cap = FL_BROKER_MAX_INBOXES;
    fl_consumer *n = cap > f->consumers_cap ? fl_realloc(f->consumers, cap * sizeof *n) : NULL;
    if (!n)
      return NULL;
    f->consumers = n;
    f->consumers_cap = cap;
  }
  fl_consumer *c = &f->consumers[f->nconsumers++];
  memset(c, 0, sizeof *c);
  fl_copy(c->gid, sizeof c->gid, gid);
  return c;
}

static void fl_on_inbox(void *ctx, const char *gid, int status, const char *why) {
  fl_fabric *f = ctx;
  fl_entity *e = fl_entity_by_gid(f->gw, gid);
  fl_consumer *c = fl_consumer_of(f, gid);
  if (c) {
    c->failing = status != 0;
    fl_copy(c->why, sizeof c->why, status ? why : "");
  }
  if (status == FL_ECANCELLED || status == FL_ESTORE)
    fl_fabric_inbox_closed(f, gid); /* nothing of its channel follows this event */
  if (status == FL_ECANCELLED)
    fl_gw_count(f->gw, FL_C_INBOX_CANCELLED);
  else if (status == FL_EREFUSED)
    fl_gw_count(f->gw, FL_C_INBOX_FOREIGN);
  if (status)
    fl_error(NULL, "inbox of '%s' (gid %s) is not consumed: %s", e ? e->name : "?", gid, why);
  else
    fl_debug(NULL, "inbox of '%s' is consumed", e ? e->name : gid);
  /* A queue someone else declared may drop what the broker confirms:
   * other hosts hear it at once, and their sends to it fail meanwhile. (Our
   * own queue keeps what it is sent while it is not consumed.) */
  int foreign = status == FL_EREFUSED;
  if (e && !e->remote && e->inbox_degraded != foreign) {
    e->inbox_degraded = foreign;
    fl_presence_entity(f->presence, e);
  }
}

static void fl_on_dlq(void *ctx, void *req, int status, const char *why, const fl_broker_dead *dead,
                      size_t ndead, size_t affected) {
  fl_fabric *f = ctx;
  fl_dlq_done(f->gw, req, status, why, dead, ndead, affected);
}

/* ---- publishing ------------------------------------------------------------------ */

void fl_env_from_msg(fl_gw *gw, const fl_msg *m, fl_envelope *env) {
  memset(env, 0, sizeof *env);
  fl_copy(env->v, sizeof env->v, FL_ENVELOPE_VERSION);
  fl_copy(env->kind, sizeof env->kind, m->kind);
  fl_copy(env->msg_id, sizeof env->msg_id, m->msg_id);
  fl_copy(env->trace_id, sizeof env->trace_id, m->trace_id);
  fl_copy(env->from, sizeof env->from, m->from_gid);
  fl_copy(env->to, sizeof env->to, m->to_gid);
  fl_copy(env->in_reply_to, sizeof env->in_reply_to, m->in_reply_to);
  fl_copy(env->turn_id, sizeof env->turn_id, m->turn_id);
  fl_copy(env->from_name, sizeof env->from_name, m->from_name);
  fl_copy(env->host, sizeof env->host, gw->cfg.host_id);
  fl_rfc3339(m->ts_ms, env->ts);
  /* Every envelope expires, which bounds how long a captured one can be
   * replayed: by default when the broker's inbox TTL would drop it anyway. */
  fl_rfc3339(m->expires_ms ? m->expires_ms : m->ts_ms + FL_BROKER_DEFAULT_MESSAGE_TTL_MS,
             env->expires_at);
}

static void fl_on_publish_done(void *ctx, void *req, int status, const char *why) {
  fl_fabric *f = ctx;
  fl_gw *gw = f->gw;
  if (!req) {
    /* A presence beat or a posted notice: nobody waits on it. */
    if (status && status != FL_ECANCELLED)
      fl_debug(NULL, "beat or notice not confirmed: %s", why ? why : fl_strerror(status));
    return;
  }
  if (status == 0) {
    fl_gw_count(gw, FL_C_REMOTE_PUBLISHED);
    fl_gw_observe(gw, FL_H_PUBLISH_CONFIRM, fl_now_ms() - fl_confirm_sent_ms(req));
  } else if (status != FL_ECANCELLED)
    fl_gw_count(gw, FL_C_REMOTE_PUBLISH_FAILED);
  fl_confirm_done(gw, req, status, why);
}

/* flags, plus what the one host the publish goes to reads, as its last
 * host beat said: the envelope packed into one header (1.1), the
 * pair-sealed form (1.2, unless broker.pairSeal is false here). */
static unsigned fl_publish_flags(fl_fabric *f, unsigned flags, const char *to_host) {
  int minor = to_host ? fl_presence_host_minor(f->presence, to_host) : -1;
  if (minor >= FL_ENVELOPE_PACKED_MINOR)
    flags |= FL_BROKER_PACKED;
  if (minor >= FL_ENVELOPE_PAIRSEAL_MINOR && !f->gw->cfg.broker_no_pair_seal)
    flags |= FL_WIRE_PAIR_SEAL;
  return flags;
}

/* The one way a message leaves for fleet.msg: its envelope, sealed to
 * to_host (NULL: in clear, where the policy allows), signed, then published
 * with req as the confirm's context (NULL: nobody waits). 0, or a code with
 * why set. */
static int fl_publish_msg(fl_fabric *f, const char *key, int mandatory, const fl_msg *m,
                          const char *to_host, void *req, char *why, size_t whylen) {
  fl_envelope env;
  fl_env_from_msg(f->gw, m, &env);
  return fl_wire_publish(f->gw, f->broker, FL_EX_MSG, key,
                         fl_publish_flags(f, mandatory ? FL_BROKER_MANDATORY : 0, to_host), &env,
                         m->content, m->content_len, to_host, req, why, whylen);
}

/* A control message's publish: its outcome goes to control.c under the
 * request's id. */
typedef struct fl_ctl_note {
  fl_fabric *f;
  char id[FL_ID_LEN];
} fl_ctl_note;

static void fl_control_noted(void *ctx, int status, const char *why) {
  fl_ctl_note *n = ctx;
  if (status && status != FL_ECANCELLED)
    fl_warn(NULL, "control message not delivered: %s", why ? why : fl_strerror(status));
  fl_control_published(n->f->control, n->id, status, why);
  fl_free(n);
}

static int fl_control_emit(void *ctx, const char *host, fl_envelope *env, const char *body,
                           size_t len, const char *req_id) {
  fl_fabric *f = ctx;
  if (!f->up)
    return FL_EBROKER;
  fl_ctl_note *n = fl_calloc(1, sizeof *n);
  fl_confirm *req = n ? fl_confirm_note(fl_control_noted, n) : NULL;
  if (!req) {
    fl_free(n);
    return FL_ENOMEM;
  }
  n->f = f;
  fl_copy(n->id, sizeof n->id, req_id);
  /* Sealed to the host it is for, like every body that crosses the broker. */
  char why[256];
  int rc = fl_wire_publish(f->gw, f->broker, FL_EX_CONTROL, host,
                           fl_publish_flags(f, FL_BROKER_MANDATORY, host), env, body, len, host,
                           req, why, sizeof why);
  if (rc) {
    fl_free(req);
    fl_free(n);
    fl_gw_count(f->gw, FL_C_REMOTE_PUBLISH_FAILED);
    fl_warn(NULL, "control message to %s not sent: %s", host, why);
  }
  return rc;
}

static const fl_control_ops fl_control_emit_ops = {.emit = fl_control_emit};

/* A broadcast that reaches no other host: nothing is published, and the
 * call completes on the loop's next turn with its result (the waiter's ext). */
static void fl_none_timeout(fl_wait *w) {
  json_t *r = w->ext;
  w->ext = NULL;
  fl_wait_complete(w, r ? r : json_object(), NULL);
}

static void fl_none_forget(fl_wait *w) {
  json_decref(w->ext);
  w->ext = NULL;
}

static const fl_wait_ops fl_none_ops = {.timeout = fl_none_timeout, .forget = fl_none_forget};

/* Publishes m once per target (t[i].host NULL: in clear), all under one
 * CONFIRM waiter of c that completes once every copy is settled. */
static int fl_publish(fl_fabric *f, fl_client *c, const fl_target *t, size_t nt, int mandatory,
                      const fl_msg *m, const char *peer_gid, double then_wait_s, json_t *on_confirm,
                      fl_gw_cb cb, void *ctx, fl_wait **wait, char *err, size_t errlen) {
  fl_gw *gw = f->gw;
  *wait = NULL;
  if (!f->up) {
    json_decref(on_confirm);
    fl_errf(err, errlen,
            "the broker is unreachable (%s): messages to other hosts fail until it is back; "
            "messages on this host still work",
            f->why[0] ? f->why : "not connected");
    return FL_EBROKER;
  }
  fl_wait *w;
  if (nt == 0) {
    int rc = fl_wait_new(gw, c, FL_WAIT_CONFIRM, &fl_none_ops, 0.0, cb, ctx, &w, err, errlen);
    if (rc) {
      json_decref(on_confirm);
      return rc;
    }
    w->ext = on_confirm;
    fl_copy(w->msg_id, sizeof w->msg_id, m->msg_id);
    fl_copy(w->trace_id, sizeof w->trace_id, m->trace_id);
    *wait = w;
    return 0;
  }
  fl_confirm *req;
  int rc = fl_confirm_new(gw, c, m, peer_gid, "", then_wait_s, on_confirm, cb, ctx, &w, &req, err,
                          errlen);
  if (rc)
    return rc;
  char why[256] = "";
  size_t sent = 0;
  for (size_t i = 0; i < nt; i++) {
    if ((rc = fl_publish_msg(f, t[i].key, mandatory, m, t[i].host, req, why, sizeof why)))
      break;
    fl_confirm_copy(req);
    sent++;
    fl_event(m->trace_id, "%s %s from '%s' published to key %s%s%s", m->kind, m->msg_id,
             m->from_name, t[i].key, t[i].host ? ", sealed to " : "", t[i].host ? t[i].host : "");
  }
  if (rc) {
    fl_gw_count(gw, FL_C_REMOTE_PUBLISH_FAILED);
    const char *text = rc == FL_EFULL     ? "too many messages are on their way to the broker; try "
                                            "again in a moment"
                       : rc == FL_EBROKER ? "the broker is unreachable: messages to other hosts "
                                            "fail until it is back"
                                          : why;
    if (sent) {
      /* Copies for other hosts are on their way: the call ends with this
       * failure once they are settled. */
      fl_confirm_fail_later(req, rc, text);
      *wait = w;
      return 0;
    }
    fl_confirm_abort(gw, &w, req);
    fl_errf(err, errlen, "%s", text);
    return rc;
  }
  *wait = w;
  return 0;
}

static int fl_fabric_publish(void *ctx, fl_client *c, fl_entity *dst, const fl_msg *m,
                             double then_wait_s, json_t *on_confirm, fl_gw_cb cb, void *cb_ctx,
                             fl_wait **wait, char *err, size_t errlen) {
  fl_fabric *f = ctx;
  if (dst->inbox_degraded) {
    /* Its queue may be one its gateway did not declare, which can drop
     * what the broker confirms: never answer "sent" for that. */
    fl_gw_count(f->gw, FL_C_REMOTE_REFUSED_DEGRADED);
    fl_warn(m->trace_id, "%s %s to '%s' not sent: its inbox on host '%s' is not consumed", m->kind,
            m->msg_id, dst->name, dst->host);
    fl_errf(err, errlen,
            "'%s' cannot take messages now: its inbox on host '%s' is not consumed (degraded: "
            "its queue on the broker was declared by someone else; see fleetctl status "
            "there); not sent, send again later",
            dst->name, dst->host);
    json_decref(on_confirm);
    return FL_EREFUSED;
  }
  fl_target t = {.host = dst->host};
  fl_copy(t.key, sizeof t.key, dst->gid);
  return fl_publish(ctx, c, &t, 1, 1, m, dst->gid, then_wait_s, on_confirm, cb, cb_ctx, wait, err,
                    errlen);
}

static int fl_in_group(const fl_entity *e, const char *group) {
  if (!group)
    return 1;
  for (size_t i = 0; i < e->ngroups; i++)
    if (strcmp(e->groups[i], group) == 0)
      return 1;
  return 0;
}

/* The copies of a broadcast: sealed, one per other host that has a member
 * of group (as presence says), each under that host's key; in clear
 * (broker.seal false), one publish under the shared key. *out is a new
 * array of *n targets (fl_free; NULL when there are none). */
static int fl_broadcast_targets(fl_fabric *f, const char *group, fl_target **out, size_t *n,
                                char *err, size_t errlen) {
  fl_gw *gw = f->gw;
  *out = NULL;
  *n = 0;
  size_t cap = gw->cfg.broker_no_seal ? 1 : 0;
  for (fl_entity *e = gw->entities; e && !gw->cfg.broker_no_seal; e = e->next)
    cap += e->remote && fl_entity_in_roster(e);
  if (!cap)
    return 0;
  fl_target *t = fl_calloc(cap, sizeof *t);
  if (!t) {
    fl_errf(err, errlen, "out of memory");
    return FL_ENOMEM;
  }
  int rc = 0;
  if (gw->cfg.broker_no_seal) {
    rc = fl_topology_broadcast_key(t[0].key, sizeof t[0].key, group);
    *n = rc ? 0 : 1;
  }
  for (fl_entity *e = gw->entities; e && !rc && !gw->cfg.broker_no_seal; e = e->next) {
    if (!e->remote || !fl_entity_in_roster(e) || !fl_in_group(e, group))
      continue;
    size_t k = 0;
    while (k < *n && strcmp(t[k].host, e->host) != 0)
      k++;
    if (k < *n)
      continue;
    t[k].host = e->host;
    rc = fl_topology_host_broadcast_key(t[k].key, sizeof t[k].key, e->host, group);
    (*n)++;
  }
  if (rc) {
    fl_free(t);
    *n = 0;
    fl_errf(err, errlen, "group '%s' cannot be a broadcast key: %s", group ? group : "",
            fl_strerror(rc));
    return rc;
  }
  *out = t;
  return 0;
}

static int fl_fabric_post(void *ctx, fl_entity *dst, const fl_msg *m,
                          void (*done)(void *done_ctx, int status, const char *why), void *done_ctx,
                          char *err, size_t errlen) {
  fl_fabric *f = ctx;
  if (!f->up) {
    fl_errf(err, errlen, "the broker is unreachable (%s)", f->why[0] ? f->why : "not connected");
    return FL_EBROKER;
  }
  fl_confirm *note = done ? fl_confirm_note(done, done_ctx) : NULL;
  if (done && !note) {
    fl_errf(err, errlen, "out of memory");
    return FL_ENOMEM;
  }
  char why[256];
  int rc = fl_publish_msg(f, dst->gid, 1, m, fl_entity_host(dst), note, why, sizeof why);
  if (rc) {
    fl_free(note);
    fl_gw_count(f->gw, FL_C_REMOTE_PUBLISH_FAILED);
    fl_errf(err, errlen, "%s", why);
    return rc;
  }
  fl_info(m->trace_id, "%s %s from '%s' posted to key %s", m->kind, m->msg_id, m->from_name,
          dst->gid);
  return 0;
}

static int fl_fabric_broadcast(void *ctx, fl_client *c, const fl_msg *m, const char *group,
                               json_t *on_confirm, fl_gw_cb cb, void *cb_ctx, fl_wait **wait,
                               char *err, size_t errlen) {
  fl_fabric *f = ctx;
  fl_target *t = NULL;
  size_t nt = 0;
  int rc = fl_broadcast_targets(f, group, &t, &nt, err, errlen);
  if (rc) {
    json_decref(on_confirm);
    return rc;
  }
  /* Not mandatory: a member may have just left, and a group with no member
   * anywhere is legal silence. */
  rc = fl_publish(f, c, t, nt, 0, m, "", 0, on_confirm, cb, cb_ctx, wait, err, errlen);
  fl_free(t);
  return rc;
}

/* ---- the core's view ------------------------------------------------------------- */

static void fl_fabric_entity_changed(void *ctx, fl_entity *e) {
  fl_fabric *f = ctx;
  if (e->remote || e->removed)
    return;
  const char *groups[FL_MAX_GROUPS];
  for (size_t i = 0; i < e->ngroups; i++)
    groups[i] = e->groups[i];
  int rc = fl_broker_add_inbox(f->broker, e->gid, groups, e->ngroups);
  if (rc)
    fl_error(NULL, "cannot add the inbox of '%s': %s", e->name, fl_strerror(rc));
  fl_presence_entity(f->presence, e);
}

static void fl_fabric_remove_inbox(void *ctx, const char *gid) {
  fl_fabric *f = ctx;
  int rc = fl_broker_delete_inbox(f->broker, gid);
  if (rc)
    fl_error(NULL, "cannot delete the inbox of %s: %s", gid, fl_strerror(rc));
  /* It left for good: other hosts drop it now, not after the TTL. */
  fl_entity *e = fl_entity_by_gid(f->gw, gid);
  if (e)
    fl_presence_gone(f->presence, e);
}

static int fl_fabric_spawn_remote(void *ctx, fl_client *c, const char *host, const char *profile,
                                  const char *name, const char *brief, double wait_s, fl_gw_cb cb,
                                  void *cb_ctx, fl_wait **wait, char *err, size_t errlen) {
  fl_fabric *f = ctx;
  return fl_control_spawn(f->control, c, host, profile, name, brief, wait_s, cb, cb_ctx, wait, err,
                          errlen);
}

static int fl_fabric_stop_remote(void *ctx, fl_client *c, fl_entity *e, fl_gw_cb cb, void *cb_ctx,
                                 fl_wait **wait, char *err, size_t errlen) {
  fl_fabric *f = ctx;
  return fl_control_stop(f->control, c, e, cb, cb_ctx, wait, err, errlen);
}

static int fl_fabric_approve_remote(void *ctx, fl_client *c, fl_entity *e, const char *request_id,
                                    const char *decision, const char *reason, fl_gw_cb cb,
                                    void *cb_ctx, fl_wait **wait, char *err, size_t errlen) {
  fl_fabric *f = ctx;
  return fl_control_approve(f->control, c, e, request_id, decision, reason, cb, cb_ctx, wait, err,
                            errlen);
}

static void fl_fabric_spawn_answer(void *ctx, const fl_spawn_origin *o, const json_t *result,
                                   const char *err) {
  fl_fabric *f = ctx;
  fl_control_answer_spawn(f->control, o, result, err);
}

static const char *fl_fabric_status(void *ctx, const fl_entity *e) {
  fl_fabric *f = ctx;
  return fl_presence_status(f->presence, e);
}

static json_t *fl_fabric_describe(void *ctx) {
  fl_fabric *f = ctx;
  json_t *failing = json_array();
  size_t consuming = 0;
  const fl_consumer *first = NULL;
  /* While the link is down no inbox is consumed, whatever was last said. */
  for (size_t i = 0; f->up && i < f->nconsumers; i++) {
    const fl_consumer *c = &f->consumers[i];
    if (!c->failing) {
      consuming++;
      continue;
    }
    fl_entity *e = fl_entity_by_gid(f->gw, c->gid);
    json_array_append_new(failing, json_pack("{s:s, s:s, s:s}", "gid", c->gid, "name",
                                             e ? e->name : "", "why", c->why));
    if (!first)
      first = c;
  }
  /* Up with an inbox that is not consumed: its messages wait on the broker,
   * so "up" would hide the very thing to fix. */
  const char *state = !f->up ? "down" : first ? "degraded" : "up";
  char why[512];
  if (f->up && first) {
    fl_entity *e = fl_entity_by_gid(f->gw, first->gid);
    size_t more = json_array_size(failing) - 1;
    char others[48] = "";
    if (more)
      snprintf(others, sizeof others, " (and %zu other inbox%s)", more, more == 1 ? "" : "es");
    snprintf(why, sizeof why, "the inbox of '%s' is not consumed: %s%s", e ? e->name : first->gid,
             first->why, others);
  } else {
    fl_copy(why, sizeof why, f->why);
  }
  return json_pack("{s:s, s:s, s:{s:I, s:o}}", "state", state, "why", why, "consumers", "consuming",
                   (json_int_t)consuming, "failing", failing);
}

static int fl_fabric_unpinned_claim(void *ctx, const char *name, char *host, size_t hostlen) {
  fl_fabric *f = ctx;
  return fl_presence_unpinned_claim(f->presence, name, host, hostlen);
}

static void fl_fabric_hosts(void *ctx, fl_jw *w) {
  fl_fabric *f = ctx;
  fl_presence_hosts_write(f->presence, w);
}

static int fl_fabric_dlq(void *ctx, int op, const char *msg_id, long long older_than_ms,
                         void *req) {
  fl_fabric *f = ctx;
  return f->up ? fl_broker_dlq(f->broker, (enum fl_broker_dlq_op)op, msg_id, older_than_ms, req)
               : FL_EBROKER;
}

static void fl_fabric_stop(void *ctx) {
  fl_fabric *f = ctx;
  fl_presence_stop(f->presence);
  fl_broker_stop(f->broker);
  f->up = 0;
}

static void fl_fabric_free(void *ctx) {
  fl_fabric *f = ctx;
  if (!f)
    return;
  fl_fabric_settle_free(f);
  fl_free(f->consumers);
  fl_control_free(&f->control);
  fl_presence_free(&f->presence);
  fl_inbound_free(&f->inbound);
  fl_broker_free(&f->broker);
  fl_wire_keys_free(f->gw);
  fl_free(f);
}

/* A claim to every gateway: the room item is the body, signed again as a
 * CLAIM envelope like every publish. Not confirmed: the room copy and the
 * next claim cover a loss. */
static int fl_fabric_publish_claim(void *ctx, const char *msg_id, const char *item, size_t len) {
  fl_fabric *f = ctx;
  fl_gw *gw = f->gw;
  if (!f->up)
    return FL_EBROKER;
  fl_envelope env;
  memset(&env, 0, sizeof env);
  fl_copy(env.v, sizeof env.v, FL_ENVELOPE_VERSION);
  fl_copy(env.kind, sizeof env.kind, fl_envelope_kind_name(FL_KIND_CLAIM));
  fl_copy(env.msg_id, sizeof env.msg_id, msg_id);
  fl_uuid(env.trace_id);
  fl_copy(env.host, sizeof env.host, gw->cfg.host_id);
  fl_rfc3339(fl_now_ms(), env.ts);
  int rc = fl_sign_envelope(&env, item, len, gw->id.sk);
  if (rc == 0)
    rc = fl_broker_publish(f->broker, FL_EX_CLAIMS, FL_KEY_CLAIMS, 0, &env, item, len, NULL);
  return rc;
}

/* A receipt of the forward path: published to the sender's inbox, signed
 * like any message, without a waiter (a lost one shows as the sender's
 * timeout, and the forward path retries one that could not be handed on). */
static int fl_fabric_receipt(void *ctx, const fl_msg *m) {
  fl_fabric *f = ctx;
  if (!f->up)
    return FL_EBROKER;
  /* Sealed to the host of the brief's sender, like every body. */
  fl_entity *dst = fl_entity_by_gid(f->gw, m->to_gid);
  if (!dst || !dst->remote)
    return FL_ENOTFOUND;
  char why[256];
  int rc = fl_publish_msg(f, m->to_gid, 1, m, fl_entity_host(dst), NULL, why, sizeof why);
  if (rc)
    fl_debug(m->trace_id, "receipt for %s not sent: %s", m->in_reply_to, why);
  if (rc == 0)
    fl_gw_count(f->gw, FL_C_REMOTE_PUBLISHED);
  return rc;
}

static const fl_remote_ops fl_fabric_ops = {
    .publish_claim = fl_fabric_publish_claim,
    .receipt = fl_fabric_receipt,
    .publish = fl_fabric_publish,
    .broadcast = fl_fabric_broadcast,
    .entity_changed = fl_fabric_entity_changed,
    .drained = fl_fabric_drained,
    .sweep = fl_fabric_sweep,
    .status = fl_fabric_status,
    .hosts = fl_fabric_hosts,
    .describe = fl_fabric_describe,
    .unpinned_claim = fl_fabric_unpinned_claim,
    .remove_inbox = fl_fabric_remove_inbox,
    .spawn_remote = fl_fabric_spawn_remote,
    .stop_remote = fl_fabric_stop_remote,
    .approve_remote = fl_fabric_approve_remote,
    .spawn_answer = fl_fabric_spawn_answer,
    .post = fl_fabric_post,
    .dlq = fl_fabric_dlq,
    .stop = fl_fabric_stop,
    .free = fl_fabric_free,
};

static int fl_fabric_start(fl_gw *gw, char *err, size_t errlen) {
  const fl_gw_config *cfg = &gw->cfg;
  unsigned interval =
      cfg->presence_interval_ms ? cfg->presence_interval_ms : FL_PRESENCE_INTERVAL_MS;
  unsigned ttl = cfg->presence_ttl_ms ? cfg->presence_ttl_ms : FL_PRESENCE_TTL_BEATS * interval;
  fl_fabric *f = fl_calloc(1, sizeof *f);
  int rc = FL_ENOMEM;
  if (f)
    f->unacked_ix.exact = 1; /* msgIds and gids compare as the store compares them */
  if (!f || (rc = fl_inbound_new(gw, &fl_fabric_settle_ops, f, &f->inbound)) ||
      (rc = fl_presence_new(gw, f->inbound, interval, ttl, &f->presence)) ||
      (rc = fl_control_new(gw, &fl_control_emit_ops, f, f->presence, &f->control))) {
    fl_errf(err, errlen, "cannot start the broker link: %s", fl_strerror(rc));
    goto fail;
  }
  f->gw = gw;
  fl_broker_config bc = {
      .uri = cfg->broker_uri,
      .host_id = cfg->host_id,
      .prefetch = cfg->broker_prefetch,
      .queue_type = cfg->broker_queue_type[0] ? cfg->broker_queue_type : NULL,
      .heartbeat_s = cfg->broker_heartbeat_s,
      .ca_file = cfg->broker_ca_file[0] ? cfg->broker_ca_file : NULL,
      .clear_broadcasts = fl_wire_accepts_unsealed(gw),
  };
  if (cfg->broker_no_seal)
    fl_warn(NULL, "broker.seal is false: message bodies cross the broker in clear, readable by "
                  "the broker's operator and by every gateway's broker user; use it only on a "
                  "broker you fully control");
  static const fl_broker_events ev = {.on_state = fl_on_state,
                                      .on_delivery = fl_on_delivery,
                                      .on_publish_done = fl_on_publish_done,
                                      .on_inbox = fl_on_inbox,
                                      .on_batch = fl_fabric_on_batch,
                                      .on_dlq = fl_on_dlq};
  if ((rc = fl_broker_start(gw->loop, &bc, &ev, f, &f->broker))) {
    fl_error(NULL, "cannot start the broker link: %s (check the broker URI and host id)",
             fl_strerror(rc));
    fl_errf(err, errlen,
            "cannot start the broker link: %s (check the broker URI and the "
            "host id: letters, digits, '-' and '_')",
            fl_strerror(rc));
    goto fail;
  }
  fl_copy(f->why, sizeof f->why, "connecting");
  fl_gw_set_remote(gw, &fl_fabric_ops, f);
  /* Who lived where, as verified presence last said: a message that waited
   * in an inbox while this gateway was down is checked against it. */
  fl_presence_load(f->presence);
  for (fl_entity *e = gw->entities; e; e = e->next)
    fl_fabric_entity_changed(f, e);
  fl_presence_start(f->presence, f->broker);
  return 0;

fail:
  if (f) {
    fl_control_free(&f->control);
    fl_presence_free(&f->presence);
    fl_inbound_free(&f->inbound);
    fl_free(f);
  }
  return rc;
}

const fl_remote_type fl_fabric_type = {.name = "broker", .start = fl_fabric_start};