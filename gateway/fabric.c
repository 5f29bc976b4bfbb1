/* fabric.c — cross-host routing over the broker: the AMQP backend of the
 * gateway core.
 *
 * With a broker configured, the core's door (remote.h) leads here. This
 * file owns the broker link (broker.c) and, on the loop thread:
 *
 *   - publishes: a message for another host's entity goes to that entity's
 *     inbox on fleet.msg (key = its gid, mandatory, confirmed); a broadcast
 *     goes once to broadcast.<group>. The sender's call stays pending until
 *     the broker confirms, so an unroutable or refused publish is an error
 *     the sender sees. While the link is down a remote send fails at once:
 *     nothing is buffered on the broker's behalf.
 *   - settles deliveries: a delivery held for a local client is acked only
 *     once the client drained it (or the sweeper dropped it); inside a burst
 *     of deliveries acks wait for the burst's one store commit.
 *   - dispatches what the link reports: inbox deliveries to the receive
 *     checks (inbound.c), beats to presence (presence.c), the link's state
 *     to both. Whether each inbox is consumed is kept here for status: a
 *     link that is up while an inbox is refused reads "degraded".
 *
 * The core never calls this file by name; it sees only fl_fabric_ops. This
 * file may call the core's internal API, presence and inbound. */
#include "gateway/fabric.h"

#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/log.h"
#include "gateway/dlq.h"
#include "gateway/gw_internal.h"
#include "gateway/inbound.h"
#include "gateway/metrics.h"
#include "gateway/presence.h"
#include "gateway/sign.h"
#include "gateway/topology.h"

/* How long a remote send may wait for the broker's confirm before the
 * sender is told it is unknown whether the message arrived. Confirms take
 * milliseconds; 10 s means the broker is in trouble. */
#define FL_CONFIRM_TIMEOUT_S 10.0
/* Presence defaults when the configuration leaves them 0: a beat every 5 s,
 * and a remote entry lives three beats. */
#define FL_PRESENCE_INTERVAL_MS 5000
#define FL_PRESENCE_TTL_BEATS 3

/* What the link last reported of one local entity's inbox consumer. */
typedef struct fl_consumer {
  char gid[FL_ID_LEN];
  int failing;   /* 1: not consumed, why says why; 0: consuming */
  char why[256]; /* as the broker said it */
} fl_consumer;

/* A broker delivery not yet acked: acked when its message is drained. */
typedef struct fl_unacked {
  struct fl_unacked *next;
  char msg_id[FL_ID_LEN];
  char to_gid[FL_ID_LEN];
  uint64_t tag;
} fl_unacked;

typedef struct fl_fabric {
  fl_gw *gw;
  fl_broker *broker;
  int up;
  char why[256]; /* why the link is down ("" when up) */
  fl_unacked *unacked;
  size_t nunacked;
  int in_batch;         /* inside a burst of broker events (one store commit) */
  uint64_t *acks_later; /* acks held until the burst's commit */
  size_t nacks_later, acks_later_cap;
  fl_presence *presence;
  fl_inbound *inbound;
  /* Inbox consumers as reported since the link last came up (at most
   * FL_BROKER_MAX_INBOXES). */
  fl_consumer *consumers;
  size_t nconsumers, consumers_cap;
} fl_fabric;

/* A publish waiting for the broker's confirm, and the CONFIRM waiter of the
 * call that made it. */
typedef struct fl_pub {
  fl_fabric *f;
  fl_wait *wait;      /* NULL once the waiting call went away */
  double then_wait_s; /* > 0: after the confirm, wait this long for the reply */
  json_t *on_confirm; /* the result to give once confirmed (owned) */
  long long sent_ms;  /* when it went to the broker link */
} fl_pub;

/* ---- settling deliveries ------------------------------------------------------ */

/* Acks a delivery once what it carried is durable: inside a burst, after the
 * burst's commit (fl_on_batch), else at once. */
static void fl_ack(fl_fabric *f, uint64_t tag) {
  if (!f->in_batch) {
    fl_broker_ack(f->broker, tag);
    return;
  }
  if (f->nacks_later == f->acks_later_cap) {
    size_t cap = f->acks_later_cap ? 2 * f->acks_later_cap : 64;
    uint64_t *n = fl_realloc(f->acks_later, cap * sizeof *n);
    if (!n) {
      /* No room to wait: leave it unacked; the broker redelivers it after
       * a reconnect and the store dedups it. */
      fl_warn(NULL, "out of memory holding an ack; the delivery stays unacked");
      return;
    }
    f->acks_later = n;
    f->acks_later_cap = cap;
  }
  f->acks_later[f->nacks_later++] = tag;
}

static void fl_on_dlq(void *ctx, void *req, int status, const char *why, const fl_broker_dead *dead,
                      size_t ndead, size_t affected) {
  fl_fabric *f = ctx;
  fl_dlq_done(f->gw, req, status, why, dead, ndead, affected);
}

static int fl_fabric_dlq(void *ctx, int op, const char *msg_id, long long older_than_ms,
                         void *req) {
  fl_fabric *f = ctx;
  return f->up ? fl_broker_dlq(f->broker, (enum fl_broker_dlq_op)op, msg_id, older_than_ms, req)
               : FL_EBROKER;
}

static void fl_on_batch(void *ctx, int begin) {
  fl_fabric *f = ctx;
  fl_gw *gw = f->gw;
  if (begin) {
    f->in_batch = fl_store_batch_begin(gw->store) == 0;
    return;
  }
  if (!f->in_batch)
    return;
  f->in_batch = 0;
  if (fl_store_batch_end(gw->store) != 0) {
    /* Nothing of the burst is durable: ack none of it. */
    fl_gw_count(gw, FL_C_STORE_ERRORS);
    fl_error(NULL,
             "store: a burst of %zu broker deliveries could not be committed; they stay "
             "unacked and come again after a reconnect",
             f->nacks_later);
    f->nacks_later = 0;
    return;
  }
  for (size_t i = 0; i < f->nacks_later; i++)
    fl_broker_ack(f->broker, f->acks_later[i]);
  f->nacks_later = 0;
}

static void fl_unacked_add(fl_fabric *f, const char *to_gid, const char *msg_id, uint64_t tag) {
  for (fl_unacked *u = f->unacked; u; u = u->next) {
    if (strcmp(u->msg_id, msg_id) == 0 && strcmp(u->to_gid, to_gid) == 0) {
      /* A redelivery of a message still held: the old tag is void. */
      u->tag = tag;
      return;
    }
  }
  fl_unacked *u = fl_calloc(1, sizeof *u);
  if (!u) {
    /* Cannot remember it: ack now; the message is committed to the store. */
    fl_ack(f, tag);
    return;
  }
  fl_copy(u->msg_id, sizeof u->msg_id, msg_id);
  fl_copy(u->to_gid, sizeof u->to_gid, to_gid);
  u->tag = tag;
  u->next = f->unacked;
  f->unacked = u;
  f->nunacked++;
}

static void fl_unacked_clear(fl_fabric *f) {
  while (f->unacked) {
    fl_unacked *n = f->unacked->next;
    fl_free(f->unacked);
    f->unacked = n;
  }
  f->nunacked = 0;
}

static void fl_fabric_drained(void *ctx, const char *to_gid, const char *msg_id) {
  fl_fabric *f = ctx;
  for (fl_unacked **pp = &f->unacked; *pp; pp = &(*pp)->next) {
    fl_unacked *u = *pp;
    if (strcmp(u->msg_id, msg_id) == 0 && strcmp(u->to_gid, to_gid) == 0) {
      fl_ack(f, u->tag);
      *pp = u->next;
      fl_free(u);
      f->nunacked--;
      return;
    }
  }
}

static void fl_fabric_sweep(void *ctx) {
  fl_fabric *f = ctx;
  /* Held messages the sweeper dropped (expired) are settled too, or their
   * deliveries would hold prefetch slots until the next reconnect. */
  for (fl_unacked **pp = &f->unacked; *pp;) {
    fl_unacked *u = *pp;
    int held = 1;
    if (fl_store_is_held(f->gw->store, u->to_gid, u->msg_id, &held) == 0 && !held) {
      fl_ack(f, u->tag);
      *pp = u->next;
      fl_free(u);
      f->nunacked--;
    } else {
      pp = &u->next;
    }
  }
}

/* The receive checks settle through these. */
static void fl_in_ack(void *ctx, uint64_t tag) { fl_ack(ctx, tag); }

static void fl_in_hold(void *ctx, const char *to_gid, const char *msg_id, uint64_t tag) {
  fl_unacked_add(ctx, to_gid, msg_id, tag);
}

static void fl_in_reject(void *ctx, uint64_t tag, int requeue) {
  fl_fabric *f = ctx;
  fl_broker_reject(f->broker, tag, requeue);
}

static int fl_in_park(void *ctx, const fl_broker_delivery *d) {
  fl_fabric *f = ctx;
  return fl_presence_park(f->presence, d);
}

static const fl_inbound_ops fl_inbound_settle = {
    .ack = fl_in_ack, .hold = fl_in_hold, .reject = fl_in_reject, .park = fl_in_park};

/* ---- what the link reports ---------------------------------------------------- */

static void fl_on_delivery(void *ctx, const fl_broker_delivery *d) {
  fl_fabric *f = ctx;
  switch (d->source) {
  case FL_BROKER_INBOX:
    fl_inbound_receive(f->inbound, d); /* settles d itself */
    return;
  case FL_BROKER_ROSTER:
    fl_presence_receive(f->presence, d);
    break;
  case FL_BROKER_CONTROL:
    fl_warn(d->env->trace_id,
            "control message %s (%s) ignored: spawn and stop are not served "
            "by this fleetd",
            d->env->msg_id, d->env->kind);
    break;
  }
  fl_ack(f, d->tag);
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
    fl_unacked_clear(f);
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
  if (status)
    fl_error(NULL, "inbox of '%s' (gid %s) is not consumed: %s", e ? e->name : "?", gid, why);
  else
    fl_debug(NULL, "inbox of '%s' is consumed", e ? e->name : gid);
}

/* ---- publishing ------------------------------------------------------------------ */

static void fl_env_from_msg(fl_gw *gw, const fl_msg *m, fl_envelope *env) {
  memset(env, 0, sizeof *env);
  fl_copy(env->v, sizeof env->v, FL_ENVELOPE_VERSION);
  fl_copy(env->kind, sizeof env->kind, m->kind);
  fl_copy(env->msg_id, sizeof env->msg_id, m->msg_id);
  fl_copy(env->trace_id, sizeof env->trace_id, m->trace_id);
  fl_copy(env->from, sizeof env->from, m->from_gid);
  fl_copy(env->to, sizeof env->to, m->to_gid);
  fl_copy(env->in_reply_to, sizeof env->in_reply_to, m->in_reply_to);
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
  fl_pub *pub = req;
  if (!pub) {
    /* A presence beat: the next one follows within the interval. */
    if (status && status != FL_ECANCELLED)
      fl_debug(NULL, "presence beat not confirmed: %s", why ? why : fl_strerror(status));
    return;
  }
  if (status == 0) {
    fl_gw_count(gw, FL_C_REMOTE_PUBLISHED);
    fl_metrics_observe(gw, FL_H_PUBLISH_CONFIRM, fl_now_ms() - pub->sent_ms);
  } else if (status != FL_ECANCELLED)
    fl_gw_count(gw, FL_C_REMOTE_PUBLISH_FAILED);
  fl_wait *w = pub->wait;
  double then_wait_s = pub->then_wait_s;
  json_t *r = pub->on_confirm;
  fl_free(pub);
  if (!w) {
    json_decref(r);
    return;
  }
  w->ext = NULL;
  if (status != 0) {
    json_decref(r);
    fl_entity *dst = fl_entity_by_gid(gw, w->peer_gid);
    char msg[512];
    snprintf(msg, sizeof msg, "could not deliver to %s%s%s: %s", dst ? dst->name : "the group",
             dst ? "@" : "", dst ? dst->host : "", why && *why ? why : fl_strerror(status));
    fl_warn(w->trace_id, "publish of %s failed: %s", w->msg_id, msg);
    fl_wait_complete(w, NULL, msg);
    return;
  }
  if (then_wait_s > 0) {
    json_decref(r);
    fl_router_expect_reply(w, then_wait_s);
    return;
  }
  fl_wait_complete(w, r, NULL);
}

/* The waiting call went away before the confirm: the publish forgets it. */
static void fl_confirm_forget(fl_wait *w) {
  fl_pub *pub = w->ext;
  if (!pub)
    return;
  pub->wait = NULL;
  json_decref(pub->on_confirm);
  pub->on_confirm = NULL;
  w->ext = NULL;
}

static void fl_confirm_timeout(fl_wait *w) {
  fl_warn(w->trace_id, "publish of %s: no confirm from the broker in time", w->msg_id);
  fl_wait_complete(w, NULL,
                   w->gw->shutting_down
                       ? "fleetd is shutting down before the broker confirmed the message; "
                         "it may or may not have been delivered"
                       : "the broker did not confirm the message in time; it may or may "
                         "not have been delivered (check fleetctl status)");
}

static const fl_wait_ops fl_confirm_ops = {.timeout = fl_confirm_timeout,
                                           .forget = fl_confirm_forget};

static int fl_publish(fl_fabric *f, fl_client *c, const char *key, int mandatory, const fl_msg *m,
                      const char *peer_gid, double then_wait_s, json_t *on_confirm, fl_gw_cb cb,
                      void *ctx, fl_wait **wait, char *err, size_t errlen) {
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
  int rc = fl_wait_new(gw, c, FL_WAIT_CONFIRM, &fl_confirm_ops, FL_CONFIRM_TIMEOUT_S, cb, ctx, &w,
                       err, errlen);
  if (rc) {
    json_decref(on_confirm);
    return rc;
  }
  fl_pub *pub = fl_calloc(1, sizeof *pub);
  if (!pub) {
    json_decref(on_confirm);
    fl_gw_cancel(gw, &w);
    fl_errf(err, errlen, "out of memory");
    return FL_ENOMEM;
  }
  pub->f = f;
  pub->wait = w;
  pub->then_wait_s = then_wait_s;
  pub->on_confirm = on_confirm;
  pub->sent_ms = fl_now_ms();
  w->ext = pub;
  w->wants_reply = then_wait_s > 0;
  fl_copy(w->msg_id, sizeof w->msg_id, m->msg_id);
  fl_copy(w->trace_id, sizeof w->trace_id, m->trace_id);
  fl_copy(w->peer_gid, sizeof w->peer_gid, peer_gid);
  fl_envelope env;
  fl_env_from_msg(gw, m, &env);
  if ((rc = fl_sign_envelope(&env, m->content, m->content_len, gw->id.sk)) == 0)
    rc = fl_broker_publish(f->broker, FL_EX_MSG, key, mandatory, &env, m->content, m->content_len,
                           pub);
  if (rc) {
    fl_gw_cancel(gw, &w); /* forgets pub, freeing on_confirm */
    fl_free(pub);
    fl_gw_count(gw, FL_C_REMOTE_PUBLISH_FAILED);
    fl_errf(err, errlen, "%s",
            rc == FL_EFULL     ? "too many messages are on their way to the broker; try again "
                                 "in a moment"
            : rc == FL_EBROKER ? "the broker is unreachable: messages to other hosts fail "
                                 "until it is back"
                               : fl_strerror(rc));
    return rc;
  }
  fl_info(m->trace_id, "%s %s from '%s' published to key %s", m->kind, m->msg_id, m->from_name,
          key);
  *wait = w;
  return 0;
}

static int fl_fabric_publish(void *ctx, fl_client *c, fl_entity *dst, const fl_msg *m,
                             double then_wait_s, json_t *on_confirm, fl_gw_cb cb, void *cb_ctx,
                             fl_wait **wait, char *err, size_t errlen) {
  return fl_publish(ctx, c, dst->gid, 1, m, dst->gid, then_wait_s, on_confirm, cb, cb_ctx, wait,
                    err, errlen);
}

static int fl_fabric_broadcast(void *ctx, fl_client *c, const fl_msg *m, const char *group,
                               json_t *on_confirm, fl_gw_cb cb, void *cb_ctx, fl_wait **wait,
                               char *err, size_t errlen) {
  char key[FL_MAX_GROUP_NAME + 16];
  int rc = fl_topology_broadcast_key(key, sizeof key, group);
  if (rc) {
    fl_errf(err, errlen, "group '%s' cannot be a broadcast key: %s", group ? group : "",
            fl_strerror(rc));
    return rc;
  }
  /* Not mandatory: a group with no member anywhere is legal silence. */
  return fl_publish(ctx, c, key, 0, m, "", 0, on_confirm, cb, cb_ctx, wait, err, errlen);
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
  int rc = fl_broker_remove_inbox(f->broker, gid);
  if (rc)
    fl_error(NULL, "cannot delete the inbox of %s: %s", gid, fl_strerror(rc));
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

static json_t *fl_fabric_hosts(void *ctx) {
  fl_fabric *f = ctx;
  return fl_presence_hosts(f->presence);
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
  fl_free(f->acks_later);
  fl_free(f->consumers);
  fl_unacked_clear(f);
  fl_presence_free(&f->presence);
  fl_inbound_free(&f->inbound);
  fl_broker_free(&f->broker);
  fl_free(f);
}

static const fl_remote_ops fl_fabric_ops = {
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
  if (!f || (rc = fl_inbound_new(gw, &fl_inbound_settle, f, &f->inbound)) ||
      (rc = fl_presence_new(gw, f->inbound, interval, ttl, &f->presence))) {
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
  };
  static const fl_broker_events ev = {.on_state = fl_on_state,
                                      .on_delivery = fl_on_delivery,
                                      .on_publish_done = fl_on_publish_done,
                                      .on_inbox = fl_on_inbox,
                                      .on_batch = fl_on_batch,
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
    fl_presence_free(&f->presence);
    fl_inbound_free(&f->inbound);
    fl_free(f);
  }
  return rc;
}

const fl_remote_type fl_fabric_type = {.name = "broker", .start = fl_fabric_start};
