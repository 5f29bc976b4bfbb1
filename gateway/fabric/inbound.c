/* inbound.c — the receive checks of a delivery from one of our inboxes.
 *
 * A message another gateway published reaches us on the inbox of the local
 * entity it is for. Before the core sees it, it must pass, in this order
 * (docs/wire-format.md): a version we understand; a signature that verifies
 * under the pinned key of the envelope's host and a body sealed to this host
 * that opens (or, while broker.acceptUnsealed holds, one in clear; wire.c),
 * or, in the pair-sealed form, a seal that opens under the pair key of that
 * host and this one with every envelope field as associated data;
 * a kind we deliver and UUIDs
 * where UUIDs belong; a `from` that lives on that host as signed presence
 * says (a sender not announced yet is parked, not refused: its first beat
 * may be a moment behind); a `to` that matches the key it arrived on; not
 * expired; a body that is UTF-8 within the size cap. A delivery that fails
 * is dead-lettered to fleet.dlq with its reason and a counter. One that
 * passes is committed to the hold store (fl_router_accept: dedup by msgId) and
 * woken like a local message; its broker ack waits until the client drained
 * it, so a crash before the drain gets a redelivery, which the store's
 * seen-set dedups. A brief for a worker with a terminal takes the forward
 * path instead (forward.h): recorded, acknowledged, then typed; and the
 * word of a brief this host sent (INJECTED, FAILED) ends its sender's wait. */
#include "gateway/fabric/inbound.h"

#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/limits.h"
#include "common/log.h"
#include "common/utf8.h"
#include "gateway/core/forward.h"
#include "gateway/core/gw_internal.h"
#include "gateway/fabric/dlq.h"
#include "gateway/fabric/wire.h"
#include "gateway/proto/sign.h"
#include "gateway/proto/topology.h"
#include "gateway/store/store.h"
#include "gateway/verbs/ask.h"

struct fl_inbound {
  fl_gw *gw;
  const fl_inbound_ops *ops;
  void *ctx;
};

int fl_inbound_new(fl_gw *gw, const fl_inbound_ops *ops, void *ctx, fl_inbound **out) {
  *out = NULL;
  fl_inbound *in = fl_calloc(1, sizeof *in);
  if (!in)
    return FL_ENOMEM;
  in->gw = gw;
  in->ops = ops;
  in->ctx = ctx;
  *out = in;
  return 0;
}

void fl_inbound_free(fl_inbound **in) {
  if (!in || !*in)
    return;
  fl_free(*in);
  *in = NULL;
}

/* 0 for a timestamp that does not parse: callers treat it as absent. */
static long long fl_ts_ms(const char *s) {
  long long ms = 0;
  return fl_rfc3339_parse(s, &ms) == 0 ? ms : 0;
}

/* Message bodies become JSON strings: they must be UTF-8 without NUL. */
static int fl_utf8_ok(const char *s, size_t n) { return !memchr(s, 0, n) && fl_utf8_valid(s, n); }

/* The version rule, the first check of every delivery. 0, or the
 * fl_counter of the failure with why. */
static int fl_inbound_check_version(const fl_envelope *env, char *why, size_t whylen) {
  int vrc = fl_envelope_check_version(env);
  if (vrc == FL_EVERSION) {
    fl_errf(why, whylen, "envelope major version is newer than this fleetd understands");
    return FL_C_VERIFY_NEWER_MAJOR;
  }
  if (vrc) {
    fl_errf(why, whylen, "envelope version is not MAJOR.MINOR");
    return FL_C_VERIFY_MALFORMED;
  }
  return 0;
}

int fl_inbound_verify_origin(fl_gw *gw, const fl_broker_delivery *d, char *why, size_t whylen) {
  const fl_envelope *env = d->env;
  int bad = fl_inbound_check_version(env, why, whylen);
  if (bad)
    return bad;
  unsigned char pk[FL_SIGN_PK_BYTES];
  if (strcmp(env->host, gw->cfg.host_id) == 0) {
    memcpy(pk, gw->id.pk, sizeof pk);
  } else if (!env->host[0]) {
    fl_errf(why, whylen, "it names no host, so no pinned key can verify it");
    return FL_C_VERIFY_UNPINNED;
  } else if (fl_peers_lookup(gw->peers, env->host, pk) != 0) {
    fl_errf(why, whylen, "its host is not pinned here (fleetctl peer add %s KEY)", env->host);
    return FL_C_VERIFY_UNPINNED;
  }
  if (fl_verify_envelope(env, d->body, d->len, pk) != 0) {
    fl_errf(why, whylen, "the signature does not verify under the host's pinned key");
    return FL_C_VERIFY_BAD_SIGNATURE;
  }
  return 0;
}

void fl_inbound_dead_letter(fl_inbound *in, const fl_broker_delivery *d, int counter,
                            const char *why) {
  fl_gw_count(in->gw, FL_C_REMOTE_DEAD_LETTERED);
  fl_gw_count(in->gw, counter);
  /* A message's routing key is its recipient's gid; a broadcast's names
   * what it was sent to. */
  const char *key = d->routing_key ? d->routing_key : "";
  fl_warn(d->env->trace_id, "dead-lettered %s from host '%s' (%s %s): %s",
          d->env->msg_id[0] ? d->env->msg_id : "(no msgId)", d->env->host,
          fl_is_uuid(key) ? "recipient gid" : "routing key", key, why);
  fl_dlq_note(in->gw, d->env->msg_id, why);
  in->ops->reject(in->ctx, d->tag, 0);
}

/* Is e's inbox bound to key: broadcast[.<this host>].all, or
 * broadcast[.<this host>].<one of its groups>? */
static int fl_bound_to(const fl_gw *gw, const fl_entity *e, const char *key) {
  const char *group = fl_topology_host_broadcast_key_group(key, gw->cfg.host_id);
  if (!group)
    group = fl_topology_broadcast_key_group(key);
  if (!group)
    return 0;
  if (strcmp(group, &FL_KEY_BROADCAST_ALL[strlen(FL_KEY_BROADCAST_PREFIX)]) == 0)
    return 1;
  for (size_t i = 0; i < e->ngroups; i++)
    if (strcmp(e->groups[i], group) == 0)
      return 1;
  return 0;
}

/* Does gid live on host, as far as signed presence (or, for our own host,
 * our own roster) says? */
static int fl_lives_on(fl_gw *gw, const char *gid, const char *host) {
  fl_entity *e = fl_entity_by_gid(gw, gid);
  if (!e)
    return 0;
  if (strcmp(host, gw->cfg.host_id) == 0)
    return !e->remote;
  return e->remote && strcmp(e->host, host) == 0;
}

/* The checks passed: build the message, commit it and wake its recipient. */
static void fl_inbound_take(fl_inbound *in, const fl_broker_delivery *d, fl_entity *to,
                            long long expires, long long now) {
  fl_gw *gw = in->gw;
  const fl_envelope *env = d->env;
  fl_msg m;
  memset(&m, 0, sizeof m);
  fl_copy(m.msg_id, sizeof m.msg_id, env->msg_id);
  fl_copy(m.trace_id, sizeof m.trace_id, env->trace_id[0] ? env->trace_id : env->msg_id);
  fl_copy(m.kind, sizeof m.kind, env->kind);
  fl_copy(m.from_gid, sizeof m.from_gid, env->from);
  fl_entity *from = fl_entity_by_gid(gw, env->from);
  fl_copy(m.from_name, sizeof m.from_name,
          env->from_name[0] ? env->from_name
          : from            ? from->name
                            : "");
  fl_copy(m.to_gid, sizeof m.to_gid, to->gid);
  if (fl_is_uuid(env->in_reply_to))
    fl_copy(m.in_reply_to, sizeof m.in_reply_to, env->in_reply_to);
  if (fl_is_uuid(env->turn_id))
    fl_copy(m.turn_id, sizeof m.turn_id, env->turn_id);
  m.ts_ms = env->ts[0] ? fl_ts_ms(env->ts) : now;
  if (m.ts_ms == 0)
    m.ts_ms = now;
  m.expires_ms = expires;
  /* It passed fl_inbound_open: a seal that opened, or a signature checked. */
  m.auth = fl_envelope_is_pair_sealed(env) ? FL_AUTH_PAIR_SEALED : FL_AUTH_SIGNED;
  char *content = fl_malloc(d->len + 1);
  if (!content) {
    in->ops->reject(in->ctx, d->tag, 1);
    return;
  }
  if (d->len)
    memcpy(content, d->body, d->len);
  content[d->len] = '\0';
  m.content = content;
  m.content_len = d->len;

  if (fl_ask_kind(m.kind, m.turn_id)) {
    /* A turn is live only: handled now, never held. */
    fl_ask_receive(gw, to, &m);
    in->ops->ack(in->ctx, d->tag);
    fl_free(content);
    return;
  }
  char err[256];
  if (fl_envelope_is_kind(m.kind, FL_KIND_SEND) && fl_forward_injects(gw, to)) {
    /* A brief for a worker with a terminal: recorded, then acknowledged
     * (after the burst's commit), then typed: at most once. */
    int frc = fl_forward_take(gw, to, &m, env->host, err, sizeof err);
    if (frc == 0 || (frc == FL_EDUP && d->redelivered))
      in->ops->ack(in->ctx, d->tag);
    else if (frc == FL_EDUP)
      fl_inbound_dead_letter(in, d, FL_C_VERIFY_DUPLICATE, "already seen (duplicate brief msgId)");
    else
      in->ops->requeue(in->ctx, d, err); /* not recorded: let the broker keep it, in order */
    fl_free(content);
    return;
  }
  int rc = fl_router_deliver(gw, to, &m, err, sizeof err);
  if (rc == 0) {
    /* Remember the tag first: waking may drain it, which acks. */
    in->ops->hold(in->ctx, to->gid, m.msg_id, d->tag);
    fl_router_wake(gw, to, &m);
  } else if (rc == FL_EDUP) {
    int held = 0;
    fl_store_is_held(gw->store, to->gid, m.msg_id, &held);
    switch (fl_inbound_dup_rule(held, d->redelivered)) {
    case FL_DUP_REHOLD:
      in->ops->hold(in->ctx, to->gid, m.msg_id, d->tag);
      break;
    case FL_DUP_ACK:
      fl_gw_count(gw, FL_C_REDELIVERIES_ACKED);
      fl_info(m.trace_id, "%s %s for '%s' was redelivered after it was drained; acked", m.kind,
              m.msg_id, to->name);
      in->ops->ack(in->ctx, d->tag);
      break;
    case FL_DUP_REJECT:
      fl_inbound_dead_letter(in, d, FL_C_VERIFY_DUPLICATE, "already seen (duplicate msgId)");
      break;
    }
  } else if (rc == FL_EDISKFULL || rc == FL_ESTORE) {
    /* Not durable, and not the message's fault: it comes again, in order. */
    in->ops->requeue(in->ctx, d, err);
  } else {
    fl_inbound_dead_letter(in, d, FL_C_COUNT, err); /* fl_router_accept counted why */
  }
  fl_free(content);
}

enum fl_inbound_dup fl_inbound_dup_rule(int held, int redelivered) {
  /* The broker giving back a delivery we hold but have not acked (after a
   * reconnect or a crash) is the same message. One flagged redelivered that
   * is no longer held was drained, but its ack did not reach the broker (a
   * broker crash, a link lost): handled already, so ack it. Any unflagged
   * copy of a seen msgId is a replay. */
  if (!redelivered)
    return FL_DUP_REJECT;
  return held ? FL_DUP_REHOLD : FL_DUP_ACK;
}

/* The checks after the body was opened: d is the delivery as it came (to
 * park), pd the same with its clear body. */
static void fl_inbound_check(fl_inbound *in, const fl_broker_delivery *d,
                             const fl_broker_delivery *pd, fl_entity *to);

int fl_inbound_open(fl_gw *gw, const fl_broker_delivery *d, int pair_ok, fl_broker_delivery *pd,
                    char **opened, char *why, size_t whylen) {
  *opened = NULL;
  int bad;
  if (fl_envelope_is_pair_sealed(d->env)) {
    /* No signature: opening the seal under the pair key is the origin
     * check (wire.c), and only a message to one host may take this form. */
    if ((bad = fl_inbound_check_version(d->env, why, whylen)))
      return bad;
    if (!pair_ok) {
      fl_errf(why, whylen, "it carries no signature, and this kind of message must be signed");
      return FL_C_VERIFY_BAD_SIGNATURE;
    }
  } else if ((bad = fl_inbound_verify_origin(gw, d, why, whylen))) {
    return bad;
  }
  *pd = *d;
  return fl_wire_open(gw, d, &pd->body, &pd->len, opened, why, whylen);
}

void fl_inbound_receive(fl_inbound *in, const fl_broker_delivery *d) {
  fl_gw *gw = in->gw;
  fl_entity *to = fl_entity_by_gid(gw, d->gid);
  if (!to || to->remote || !fl_entity_in_roster(to)) {
    fl_inbound_dead_letter(in, d, FL_C_VERIFY_WRONG_RECIPIENT, "no local entity owns this inbox");
    return;
  }
  /* The receive checks, in the documented order. */
  char why[160];
  fl_broker_delivery pd;
  char *opened;
  int bad = fl_inbound_open(gw, d, 1, &pd, &opened, why, sizeof why);
  if (bad == FL_C_COUNT) {
    in->ops->reject(in->ctx, d->tag, 1); /* out of memory: it comes again */
    return;
  }
  if (bad) {
    fl_inbound_dead_letter(in, d, bad, why);
    return;
  }
  fl_inbound_check(in, d, &pd, to);
  fl_free(opened);
}

static void fl_inbound_check(fl_inbound *in, const fl_broker_delivery *d,
                             const fl_broker_delivery *pd, fl_entity *to) {
  fl_gw *gw = in->gw;
  const fl_envelope *env = d->env;
  int broadcast = fl_envelope_is_kind(env->kind, FL_KIND_BROADCAST);
  /* An ask's turn (ASK, ANSWER, NO_WAITER, TOO_LATE, or an INJECTED that
   * says an answer reached its turn) goes to ask.c; any other INJECTED or
   * FAILED is word of a brief this host sent. */
  int turn = fl_ask_kind(env->kind, env->turn_id);
  int receipt = !turn && (fl_envelope_is_kind(env->kind, FL_KIND_INJECTED) ||
                          fl_envelope_is_kind(env->kind, FL_KIND_FAILED));
  if (!broadcast && !turn && !receipt && !fl_envelope_is_kind(env->kind, FL_KIND_SEND) &&
      !fl_envelope_is_kind(env->kind, FL_KIND_REPLY) &&
      !fl_envelope_is_kind(env->kind, FL_KIND_BLOCKED)) {
    fl_inbound_dead_letter(in, d, FL_C_VERIFY_MALFORMED,
                           "kind is not one this fleetd delivers (SEND, REPLY, BLOCKED, "
                           "BROADCAST, INJECTED, FAILED, or a turn's ASK, ANSWER, NO_WAITER, "
                           "TOO_LATE)");
    return;
  }
  if (receipt && !fl_is_uuid(env->in_reply_to)) {
    fl_inbound_dead_letter(in, d, FL_C_VERIFY_MALFORMED,
                           "an INJECTED or FAILED must name its brief in inReplyTo");
    return;
  }
  if (turn && !fl_is_uuid(env->turn_id)) {
    fl_inbound_dead_letter(in, d, FL_C_VERIFY_MALFORMED, "a turn's turnId must be a UUID");
    return;
  }
  if (!fl_is_uuid(env->msg_id) || !fl_is_uuid(env->from)) {
    fl_inbound_dead_letter(in, d, FL_C_VERIFY_MALFORMED, "msgId and from must be UUIDs");
    return;
  }
  if (!fl_lives_on(gw, env->from, env->host)) {
    /* A sender nobody announced yet may just be ahead of its presence. */
    if (!fl_entity_by_gid(gw, env->from) && strcmp(env->host, gw->cfg.host_id) != 0 &&
        in->ops->park(in->ctx, d) == 0)
      return;
    fl_inbound_dead_letter(in, d, FL_C_VERIFY_MISATTRIBUTED,
                           "`from` does not live on the signing host per its presence");
    return;
  }
  if (broadcast ? !fl_bound_to(gw, to, d->routing_key)
                : (strcmp(env->to, to->gid) != 0 || strcmp(d->routing_key, to->gid) != 0)) {
    fl_inbound_dead_letter(in, d, FL_C_VERIFY_WRONG_RECIPIENT,
                           "`to` does not match the key it arrived on");
    return;
  }
  long long now = fl_now_ms();
  long long expires = env->expires_at[0] ? fl_ts_ms(env->expires_at) : 0;
  /* A turn's expiry is the turn's business (ask.c): a late answer is told
   * too_late rather than dropped unseen. */
  /* Past its expiresAt, or a week (FL_ENVELOPE_MAX_LIFE_MS) past its ts. */
  long long until = fl_store_seen_until(fl_ts_ms(env->ts), expires);
  if (!turn && ((env->expires_at[0] && expires == 0) || until <= now)) {
    fl_inbound_dead_letter(in, d, FL_C_VERIFY_EXPIRED, "expired");
    return;
  }
  /* The seen-set forgot keys up to its horizon (store.h): a copy of one of
   * them could not be told from a first delivery. */
  if (!turn && until <= fl_store_seen_horizon(gw->store)) {
    fl_inbound_dead_letter(in, d, FL_C_VERIFY_TOO_OLD,
                           "older than the oldest msgId this host still remembers (the "
                           "seen-set's horizon, store.maxSeen): a replay could not be told apart");
    return;
  }
  if (broadcast && strcmp(env->host, gw->cfg.host_id) == 0) {
    /* Ours, back from the broker: local members got their copy already. */
    in->ops->ack(in->ctx, d->tag);
    return;
  }
  if (pd->len > FL_MAX_CONTENT || !fl_utf8_ok(pd->body ? pd->body : "", pd->len)) {
    fl_inbound_dead_letter(in, d, FL_C_VERIFY_MALFORMED,
                           "body is not UTF-8 text within the size limit");
    return;
  }
  fl_gw_count(gw, FL_C_REMOTE_RECEIVED);
  if (receipt) {
    /* Word of a brief this host sent: it ends the sender's wait; nothing
     * is held. */
    char said[FL_MAX_ERRMSG];
    size_t n = pd->len < sizeof said - 1 ? pd->len : sizeof said - 1;
    memcpy(said, pd->body ? pd->body : "", n);
    said[n] = '\0';
    fl_forward_receipt(gw, to, fl_envelope_is_kind(env->kind, FL_KIND_INJECTED), env->in_reply_to,
                       said);
    in->ops->ack(in->ctx, d->tag);
    return;
  }
  fl_inbound_take(in, pd, to, expires, now);
}

int fl_inbound_utf8_ok(const char *s, size_t n) { return fl_utf8_ok(s ? s : "", n); }
