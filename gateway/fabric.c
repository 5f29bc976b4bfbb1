/* fabric.c — the cross-host side of the gateway core.
 *
 * With a broker configured, this file connects the gateway to the broker
 * link (broker.c) and does three jobs on the loop thread:
 *
 *   - routing: a message for another host's entity is published to that
 *     entity's inbox on fleet.msg (key = its gid, mandatory, confirmed); the
 *     sender's tool call stays pending until the broker confirms, so an
 *     unroutable or refused publish is an error the sender sees. While the
 *     link is down, a remote send fails at once: nothing is buffered on the
 *     broker's behalf.
 *   - receiving: a delivery from one of our entities' inboxes is committed to
 *     the hold store (dedup by msgId) and then woken like a local message.
 *     Its broker ack is deferred until the client has drained it, so a crash
 *     before the drain gets a redelivery, which the store's seen-set dedups.
 *   - presence: every local entity, and a _gateway entry, is announced on
 *     fleet.roster each interval; beats from other hosts build the remote
 *     part of the roster, as soft state that reads offline once its TTL runs
 *     out and unknown while the link is down.
 *
 * In single-host mode (gw->broker == NULL) every function here is a no-op
 * or says that no broker is configured. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/alloc.h"
#include "common/error.h"
#include "gateway/gw_internal.h"
#include "common/log.h"
#include "gateway/sign.h"

/* How long a remote send may wait for the broker's confirm before the
 * sender is told it is unknown whether the message arrived. Confirms take
 * milliseconds; 10 s means the broker is in trouble. */
#define FL_CONFIRM_TIMEOUT_S 10.0
/* Envelope version this gateway writes and the major it accepts. */
#define FL_ENVELOPE_VERSION "1.0"
#define FL_ENVELOPE_MAJOR 1

/* A publish waiting for the broker's confirm, and the CONFIRM waiter of the
 * call that made it. */
struct fl_pub {
  fl_gw *gw;
  fl_wait *wait;      /* NULL once the waiting call went away */
  double then_wait_s; /* > 0: after the confirm, wait this long for the reply */
  json_t *on_confirm; /* the result to give once confirmed (owned) */
};

/* A delivery whose sender no presence has announced yet. A new agent's
 * gateway announces it as it joins, but that beat travels another queue and
 * can arrive just after the agent's first message: the message waits here
 * (unacked) for the beat, at most a presence interval and a second. */
typedef struct fl_parked {
  struct fl_parked *next;
  long long until_ms;
  uint64_t tag;
  int redelivered;
  fl_envelope env;
  char gid[FL_ID_LEN];
  char key[256];
  char *body;
  size_t len;
} fl_parked;

static void fl_inbound(fl_gw *gw, const fl_broker_delivery *d);
static void fl_park_tick(uv_timer_t *t);
static void fl_unpark(fl_gw *gw, const char *gid);

/* ---- helpers ------------------------------------------------------------- */

/* 0 for a timestamp that does not parse: callers treat it as absent. */
static long long fl_parse_rfc3339(const char *s) {
  long long ms = 0;
  return fl_rfc3339_parse(s, &ms) == 0 ? ms : 0;
}

/* Message bodies become JSON strings: they must be UTF-8 without NUL. */
static int fl_utf8_ok(const char *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    unsigned char c = (unsigned char)s[i];
    size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    if (c == 0 || len == 0 || i + len > n)
      return 0;
    for (size_t k = 1; k < len; k++)
      if (((unsigned char)s[i + k] & 0xc0) != 0x80)
        return 0;
    i += len;
  }
  return 1;
}

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

/* ---- unacked deliveries ------------------------------------------------------ */

/* Acks a delivery once what it carried is durable: inside a burst, after the
 * burst's commit (fl_on_batch), else at once. */
static void fl_ack(fl_gw *gw, uint64_t tag) {
  if (!gw->in_batch) {
    fl_broker_ack(gw->broker, tag);
    return;
  }
  if (gw->nacks_later == gw->acks_later_cap) {
    size_t cap = gw->acks_later_cap ? 2 * gw->acks_later_cap : 64;
    uint64_t *n = fl_realloc(gw->acks_later, cap * sizeof *n);
    if (!n) {
      /* No room to wait: leave it unacked; the broker redelivers it after
       * a reconnect and the store dedups it. */
      fl_warn(NULL, "out of memory holding an ack; the delivery stays unacked");
      return;
    }
    gw->acks_later = n;
    gw->acks_later_cap = cap;
  }
  gw->acks_later[gw->nacks_later++] = tag;
}

static void fl_on_batch(void *ctx, int begin) {
  fl_gw *gw = ctx;
  if (begin) {
    gw->in_batch = fl_store_batch_begin(gw->store) == 0;
    return;
  }
  if (!gw->in_batch)
    return;
  gw->in_batch = 0;
  if (fl_store_batch_end(gw->store) != 0) {
    /* Nothing of the burst is durable: ack none of it. */
    fl_gw_count(gw, FL_C_STORE_ERRORS);
    fl_error(NULL, "store: a burst of %zu broker deliveries could not be committed; they stay "
             "unacked and come again after a reconnect", gw->nacks_later);
    gw->nacks_later = 0;
    return;
  }
  for (size_t i = 0; i < gw->nacks_later; i++)
    fl_broker_ack(gw->broker, gw->acks_later[i]);
  gw->nacks_later = 0;
}

static void fl_unacked_add(fl_gw *gw, const char *to_gid, const char *msg_id, uint64_t tag) {
  for (fl_unacked *u = gw->unacked; u; u = u->next) {
    if (strcmp(u->msg_id, msg_id) == 0 && strcmp(u->to_gid, to_gid) == 0) {
      /* A redelivery of a message still held: the old tag is void. */
      u->tag = tag;
      return;
    }
  }
  fl_unacked *u = fl_calloc(1, sizeof *u);
  if (!u) {
    /* Cannot remember it: ack now; the message is committed to the store. */
    fl_ack(gw, tag);
    return;
  }
  fl_copy(u->msg_id, sizeof u->msg_id, msg_id);
  fl_copy(u->to_gid, sizeof u->to_gid, to_gid);
  u->tag = tag;
  u->next = gw->unacked;
  gw->unacked = u;
  gw->nunacked++;
}

static void fl_unacked_clear(fl_gw *gw) {
  while (gw->unacked) {
    fl_unacked *n = gw->unacked->next;
    fl_free(gw->unacked);
    gw->unacked = n;
  }
  gw->nunacked = 0;
}

void fl_fabric_drained(fl_gw *gw, const char *to_gid, const char *msg_id) {
  if (!gw->broker)
    return;
  for (fl_unacked **pp = &gw->unacked; *pp; pp = &(*pp)->next) {
    fl_unacked *u = *pp;
    if (strcmp(u->msg_id, msg_id) == 0 && strcmp(u->to_gid, to_gid) == 0) {
      fl_ack(gw, u->tag);
      *pp = u->next;
      fl_free(u);
      gw->nunacked--;
      return;
    }
  }
}

void fl_fabric_sweep(fl_gw *gw) {
  if (!gw->broker)
    return;
  /* Held messages the sweeper dropped (expired) are settled too, or their
   * deliveries would hold prefetch slots until the next reconnect. */
  for (fl_unacked **pp = &gw->unacked; *pp;) {
    fl_unacked *u = *pp;
    int held = 1;
    if (fl_store_is_held(gw->store, u->to_gid, u->msg_id, &held) == 0 && !held) {
      fl_ack(gw, u->tag);
      *pp = u->next;
      fl_free(u);
      gw->nunacked--;
    } else {
      pp = &u->next;
    }
  }
}

/* ---- presence ---------------------------------------------------------------- */

static void fl_presence_send(fl_gw *gw, const char *key, const char *from, const char *name,
                             json_t *body) {
  char *text = json_dumps(body, JSON_COMPACT);
  json_decref(body);
  if (!text)
    return;
  fl_envelope env;
  memset(&env, 0, sizeof env);
  fl_copy(env.v, sizeof env.v, FL_ENVELOPE_VERSION);
  fl_copy(env.kind, sizeof env.kind, "PRESENCE");
  fl_uuid(env.msg_id);
  fl_copy(env.from, sizeof env.from, from);
  fl_copy(env.from_name, sizeof env.from_name, name);
  fl_copy(env.host, sizeof env.host, gw->cfg.host_id);
  long long now = fl_now_ms();
  fl_rfc3339(now, env.ts);
  fl_rfc3339(now + gw->cfg.presence_ttl_ms, env.expires_at);
  if (fl_sign_envelope(&env, text, strlen(text), gw->id.sk) != 0) {
    fl_free(text);
    return;
  }
  int rc = fl_broker_publish(gw->broker, "fleet.roster", key, 0, &env, text, strlen(text), NULL);
  if (rc)
    fl_debug(NULL, "presence for %s not sent: %s", key, fl_strerror(rc));
  fl_free(text);
}

static void fl_presence_entity(fl_gw *gw, fl_entity *e) {
  if (!gw->broker_up || e->remote)
    return;
  json_t *groups = json_array();
  for (size_t i = 0; i < e->ngroups; i++)
    json_array_append_new(groups, json_string(e->groups[i]));
  json_t *body = json_pack("{s:s, s:s, s:o, s:s}", "name", e->name, "role", e->role, "groups",
                           groups, "status", e->client ? "online" : "offline");
  char key[256];
  snprintf(key, sizeof key, "roster.%s.%s", gw->cfg.host_id, e->gid);
  fl_presence_send(gw, key, e->gid, e->name, body);
}

static void fl_presence_all(fl_gw *gw) {
  if (!gw->broker_up)
    return;
  size_t local = 0;
  for (fl_entity *e = gw->entities; e; e = e->next) {
    if (!e->remote) {
      fl_presence_entity(gw, e);
      local++;
    }
  }
  char key[256];
  snprintf(key, sizeof key, "roster.%s._gateway", gw->cfg.host_id);
  fl_presence_send(gw, key, "", "_gateway",
                   json_pack("{s:s, s:s, s:I}", "host", gw->cfg.host_id, "version",
                             FLEET_VERSION, "entities", (json_int_t)local));
}

static void fl_presence_tick(uv_timer_t *t) { fl_presence_all(t->data); }

/* The first receive checks, common to messages and presence: a version we
 * understand, then a signature that verifies under the pinned key of the
 * envelope's host (our own key for our own host). Returns 0, or the counter
 * of the failed check with *why set. */
static int fl_verify_origin(fl_gw *gw, const fl_broker_delivery *d, const char **why) {
  const fl_envelope *env = d->env;
  int major = fl_envelope_major(env);
  if (major < 0) {
    *why = "envelope version is not MAJOR.MINOR";
    return FL_C_VERIFY_MALFORMED;
  }
  if (major > FL_ENVELOPE_MAJOR) {
    *why = "envelope major version is newer than this fleetd understands";
    return FL_C_VERIFY_NEWER_MAJOR;
  }
  unsigned char pk[FL_SIGN_PK_BYTES];
  if (strcmp(env->host, gw->cfg.host_id) == 0) {
    memcpy(pk, gw->id.pk, sizeof pk);
  } else if (!env->host[0] || fl_peers_lookup(gw->peers, env->host, pk) != 0) {
    *why = "its host is not pinned here (fleetctl peer add HOST KEY)";
    return FL_C_VERIFY_UNPINNED;
  }
  if (fl_verify_envelope(env, d->body, d->len, pk) != 0) {
    *why = "the signature does not verify under the host's pinned key";
    return FL_C_VERIFY_BAD_SIGNATURE;
  }
  return 0;
}

/* A beat from another gateway: refuse what does not add up, else upsert the
 * remote entity. */
static void fl_presence_in(fl_gw *gw, const fl_broker_delivery *d) {
  const fl_envelope *env = d->env;
  if (strcmp(env->host, gw->cfg.host_id) == 0)
    return; /* our own beat, back from roster.# */
  char prefix[128];
  snprintf(prefix, sizeof prefix, "roster.%s.", env->host);
  const char *key = d->routing_key;
  if (!env->host[0] || strcmp(env->kind, "PRESENCE") != 0 ||
      strncmp(key, prefix, strlen(prefix)) != 0) {
    fl_gw_count(gw, FL_C_PRESENCE_REFUSED);
    fl_warn(NULL, "presence on key %s claims host '%s': ignored", key, env->host);
    return;
  }
  const char *gid = key + strlen(prefix);
  const char *why = NULL;
  int bad = fl_verify_origin(gw, d, &why);
  if (bad) {
    fl_gw_count(gw, bad);
    fl_gw_count(gw, FL_C_PRESENCE_REFUSED);
    fl_warn(NULL, "presence from host '%s' on key %s ignored: %s", env->host, key, why);
    return;
  }
  if (strcmp(gid, "_gateway") == 0)
    return;
  fl_gw_count(gw, FL_C_PRESENCE_RECEIVED);
  if (!fl_is_uuid(gid) || strcmp(gid, env->from) != 0) {
    fl_gw_count(gw, FL_C_PRESENCE_REFUSED);
    fl_warn(NULL, "presence from host '%s' for '%s' is malformed: ignored", env->host, gid);
    return;
  }
  json_t *body = json_loadb(d->body ? d->body : "", d->len, 0, NULL);
  const char *name = json_string_value(json_object_get(body, "name"));
  const char *role = json_string_value(json_object_get(body, "role"));
  const char *status = json_string_value(json_object_get(body, "status"));
  if (!name || !fl_name_valid(name, FL_MAX_NAME) || !status) {
    fl_gw_count(gw, FL_C_PRESENCE_REFUSED);
    fl_warn(NULL, "presence from host '%s' for %s has no valid name/status: ignored",
            env->host, gid);
    json_decref(body);
    return;
  }
  long long now = fl_now_ms();
  long long beat_ts = fl_parse_rfc3339(env->ts);
  long long beat_exp = fl_parse_rfc3339(env->expires_at);
  fl_entity *e = fl_entity_by_gid(gw, gid);
  if (!beat_ts || !beat_exp || beat_exp <= now || (e && e->remote && beat_ts < e->beat_ts_ms)) {
    /* Signed but stale: an old beat replayed must not revive an entity. */
    fl_gw_count(gw, FL_C_PRESENCE_REFUSED);
    fl_warn(NULL, "presence from host '%s' for %s is expired or older than one already "
            "taken: ignored", env->host, gid);
    json_decref(body);
    return;
  }
  if (e && (!e->remote || (strcmp(e->host, env->host) != 0 && e->expires_ms > now))) {
    /* A gid lives on one host: a second claim while the first is live is
     * refused. */
    fl_gw_count(gw, FL_C_PRESENCE_REFUSED);
    fl_warn(NULL, "host '%s' claims gid %s, which lives on host '%s': ignored", env->host, gid,
            e->remote ? e->host : gw->cfg.host_id);
    json_decref(body);
    return;
  }
  if (!e && gw->nentities >= FL_MAX_ENTITIES) {
    fl_gw_count(gw, FL_C_PRESENCE_REFUSED);
    fl_warn(NULL, "roster is full (%d entities): presence of '%s' on host '%s' ignored",
            FL_MAX_ENTITIES, name, env->host);
    json_decref(body);
    return;
  }
  fl_entity_rec before;
  if (e)
    fl_entity_rec_of(e, &before);
  else
    memset(&before, 0, sizeof before);
  if (!e) {
    e = fl_entity_new(gw, gid, name);
    if (!e) {
      json_decref(body);
      return;
    }
    e->remote = 1;
    fl_info(NULL, "roster: '%s' on host '%s' (gid %s)", name, env->host, gid);
  }
  fl_copy(e->name, sizeof e->name, name);
  fl_copy(e->host, sizeof e->host, env->host);
  fl_copy(e->role, sizeof e->role, (role && fl_name_valid(role, FL_MAX_ROLE)) ? role : "agent");
  e->ngroups = 0;
  json_t *groups = json_object_get(body, "groups"), *g;
  size_t i;
  json_array_foreach(groups, i, g) {
    const char *gn = json_string_value(g);
    if (gn && fl_name_valid(gn, FL_MAX_GROUP_NAME) && e->ngroups < FL_MAX_GROUPS)
      fl_copy(e->groups[e->ngroups++], FL_MAX_GROUP_NAME + 1, gn);
  }
  e->remote_online = strcmp(status, "online") == 0;
  e->last_seen_ms = now;
  e->beat_ts_ms = beat_ts;
  e->expires_ms = now + gw->cfg.presence_ttl_ms;
  json_decref(body);
  /* Remember who lives where (only when it changed, not every beat). */
  fl_entity_rec after;
  fl_entity_rec_of(e, &after);
  if (memcmp(&before, &after, sizeof after) != 0 && fl_store_remote_put(gw->store, &after) != 0)
    fl_gw_count(gw, FL_C_STORE_ERRORS);
  if (gw->parked)
    fl_unpark(gw, gid);
}

const char *fl_fabric_status(fl_gw *gw, const fl_entity *e) {
  if (!gw->broker_up)
    return "unknown";
  if (fl_now_ms() > e->expires_ms)
    return "offline";
  return e->remote_online ? "online" : "offline";
}

/* ---- receiving ---------------------------------------------------------------- */

static void fl_dead_letter(fl_gw *gw, const fl_broker_delivery *d, int counter,
                           const char *why) {
  fl_gw_count(gw, FL_C_REMOTE_DEAD_LETTERED);
  fl_gw_count(gw, counter);
  fl_warn(d->env->trace_id, "dead-lettered %s from host '%s' (key %s): %s",
          d->env->msg_id[0] ? d->env->msg_id : "(no msgId)", d->env->host, d->routing_key, why);
  fl_broker_reject(gw->broker, d->tag, 0);
}

static int fl_bound_to(const fl_entity *e, const char *key) {
  if (strcmp(key, "broadcast.all") == 0)
    return 1;
  if (strncmp(key, "broadcast.", 10) != 0)
    return 0;
  for (size_t i = 0; i < e->ngroups; i++)
    if (strcmp(e->groups[i], key + 10) == 0)
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

static void fl_parked_delivery(const fl_parked *p, fl_broker_delivery *d) {
  memset(d, 0, sizeof *d);
  d->tag = p->tag;
  d->source = FL_BROKER_INBOX;
  d->gid = p->gid;
  d->exchange = "fleet.msg";
  d->routing_key = p->key;
  d->redelivered = p->redelivered;
  d->env = &p->env;
  d->body = p->body;
  d->len = p->len;
}

static void fl_parked_free(fl_parked *p) {
  if (p) {
    fl_free(p->body);
    fl_free(p);
  }
}

/* Parks d; 0, or -1 when it cannot be parked (full, no memory, too long). */
static int fl_park(fl_gw *gw, const fl_broker_delivery *d) {
  if (gw->nparked >= FL_MAX_PARKED || strlen(d->routing_key) >= sizeof(((fl_parked *)0)->key))
    return -1;
  fl_parked *p = fl_calloc(1, sizeof *p);
  if (!p || (d->len && !(p->body = fl_malloc(d->len)))) {
    fl_free(p);
    return -1;
  }
  if (d->len)
    memcpy(p->body, d->body, d->len);
  p->len = d->len;
  p->tag = d->tag;
  p->redelivered = d->redelivered;
  p->env = *d->env;
  fl_copy(p->gid, sizeof p->gid, d->gid);
  fl_copy(p->key, sizeof p->key, d->routing_key);
  p->until_ms = fl_now_ms() + gw->cfg.presence_interval_ms + 1000;
  p->next = gw->parked;
  gw->parked = p;
  gw->nparked++;
  if (!uv_is_active((uv_handle_t *)&gw->park_timer))
    uv_timer_start(&gw->park_timer, fl_park_tick, 250, 250);
  fl_info(p->env.trace_id, "%s %s from unannounced %s@%s waits for its presence",
          p->env.kind, p->env.msg_id, p->env.from, p->env.host);
  return 0;
}

/* Takes out the parked deliveries that match (from gid, or every one whose
 * time is up when gid is NULL) and runs them through the receive path. */
static void fl_unpark(fl_gw *gw, const char *gid) {
  long long now = fl_now_ms();
  fl_parked *ready = NULL;
  for (fl_parked **pp = &gw->parked; *pp;) {
    fl_parked *p = *pp;
    if (gid ? strcmp(p->env.from, gid) == 0 : p->until_ms <= now) {
      *pp = p->next;
      gw->nparked--;
      p->next = ready;
      ready = p;
    } else {
      pp = &p->next;
    }
  }
  while (ready) {
    fl_parked *p = ready;
    ready = p->next;
    fl_broker_delivery d;
    fl_parked_delivery(p, &d);
    if (gid)
      fl_inbound(gw, &d);
    else
      fl_dead_letter(gw, &d, FL_C_VERIFY_MISATTRIBUTED,
                     "no presence ever announced `from` on the signing host");
    fl_parked_free(p);
  }
  if (!gw->parked)
    uv_timer_stop(&gw->park_timer);
}

static void fl_park_tick(uv_timer_t *t) { fl_unpark(t->data, NULL); }

static void fl_park_clear(fl_gw *gw) {
  while (gw->parked) {
    fl_parked *n = gw->parked->next;
    fl_parked_free(gw->parked);
    gw->parked = n;
  }
  gw->nparked = 0;
}

static void fl_inbound(fl_gw *gw, const fl_broker_delivery *d) {
  const fl_envelope *env = d->env;
  fl_entity *to = fl_entity_by_gid(gw, d->gid);
  if (!to || to->remote) {
    fl_dead_letter(gw, d, FL_C_VERIFY_WRONG_RECIPIENT, "no local entity owns this inbox");
    return;
  }
  /* The receive checks, in the documented order. */
  const char *why = NULL;
  int bad = fl_verify_origin(gw, d, &why);
  if (bad) {
    fl_dead_letter(gw, d, bad, why);
    return;
  }
  int broadcast = strcmp(env->kind, "BROADCAST") == 0;
  if (!broadcast && strcmp(env->kind, "SEND") != 0 && strcmp(env->kind, "REPLY") != 0) {
    fl_dead_letter(gw, d, FL_C_VERIFY_MALFORMED,
                   "kind is not one this fleetd delivers (SEND, REPLY, BROADCAST)");
    return;
  }
  if (!fl_is_uuid(env->msg_id) || !fl_is_uuid(env->from)) {
    fl_dead_letter(gw, d, FL_C_VERIFY_MALFORMED, "msgId and from must be UUIDs");
    return;
  }
  if (!fl_lives_on(gw, env->from, env->host)) {
    /* A sender nobody announced yet may just be ahead of its presence. */
    if (!fl_entity_by_gid(gw, env->from) && strcmp(env->host, gw->cfg.host_id) != 0 &&
        fl_park(gw, d) == 0)
      return;
    fl_dead_letter(gw, d, FL_C_VERIFY_MISATTRIBUTED,
                   "`from` does not live on the signing host per its presence");
    return;
  }
  if (broadcast ? !fl_bound_to(to, d->routing_key)
                : (strcmp(env->to, to->gid) != 0 || strcmp(d->routing_key, to->gid) != 0)) {
    fl_dead_letter(gw, d, FL_C_VERIFY_WRONG_RECIPIENT, "`to` does not match the key it arrived on");
    return;
  }
  long long now = fl_now_ms();
  long long expires = env->expires_at[0] ? fl_parse_rfc3339(env->expires_at) : 0;
  if (env->expires_at[0] && (expires == 0 || expires <= now)) {
    fl_dead_letter(gw, d, FL_C_VERIFY_EXPIRED, "expired");
    return;
  }
  int own_broadcast = broadcast && strcmp(env->host, gw->cfg.host_id) == 0;
  if (own_broadcast) {
    /* Ours, back from the broker: local members got their copy already. */
    fl_ack(gw, d->tag);
    return;
  }
  if (d->len > FL_MAX_CONTENT || !fl_utf8_ok(d->body ? d->body : "", d->len)) {
    fl_dead_letter(gw, d, FL_C_VERIFY_MALFORMED, "body is not UTF-8 text within the size limit");
    return;
  }
  fl_gw_count(gw, FL_C_REMOTE_RECEIVED);

  fl_msg m;
  memset(&m, 0, sizeof m);
  fl_copy(m.msg_id, sizeof m.msg_id, env->msg_id);
  fl_copy(m.trace_id, sizeof m.trace_id, env->trace_id[0] ? env->trace_id : env->msg_id);
  fl_copy(m.kind, sizeof m.kind, env->kind);
  fl_copy(m.from_gid, sizeof m.from_gid, env->from);
  fl_entity *from = fl_entity_by_gid(gw, env->from);
  fl_copy(m.from_name, sizeof m.from_name,
          env->from_name[0] ? env->from_name : from ? from->name : "");
  fl_copy(m.to_gid, sizeof m.to_gid, to->gid);
  if (fl_is_uuid(env->in_reply_to))
    fl_copy(m.in_reply_to, sizeof m.in_reply_to, env->in_reply_to);
  m.ts_ms = env->ts[0] ? fl_parse_rfc3339(env->ts) : now;
  if (m.ts_ms == 0)
    m.ts_ms = now;
  m.expires_ms = expires;
  char *content = fl_malloc(d->len + 1);
  if (!content) {
    fl_broker_reject(gw->broker, d->tag, 1);
    return;
  }
  if (d->len)
    memcpy(content, d->body, d->len);
  content[d->len] = '\0';
  m.content = content;
  m.content_len = d->len;

  char err[256];
  int rc = fl_accept(gw, to, &m, err, sizeof err);
  if (rc == 0) {
    /* Remember the tag first: waking may drain it, which acks. */
    fl_unacked_add(gw, to->gid, m.msg_id, d->tag);
    fl_wake(gw, to, &m);
  } else if (rc == FL_EDUP) {
    /* The broker giving back a delivery we hold but have not acked (after
     * a reconnect or a crash) is the same message: keep the new tag. Any
     * other copy of a seen msgId is a replay. */
    int held = 0;
    fl_store_is_held(gw->store, to->gid, m.msg_id, &held);
    if (held && d->redelivered)
      fl_unacked_add(gw, to->gid, m.msg_id, d->tag);
    else
      fl_dead_letter(gw, d, FL_C_VERIFY_DUPLICATE, "already seen (duplicate msgId)");
  } else {
    fl_dead_letter(gw, d, FL_C_COUNT, err); /* fl_accept counted why */
  }
  fl_free(content);
}

static void fl_on_delivery(void *ctx, const fl_broker_delivery *d) {
  fl_gw *gw = ctx;
  switch (d->source) {
  case FL_BROKER_INBOX:
    fl_inbound(gw, d);
    return;
  case FL_BROKER_ROSTER:
    fl_presence_in(gw, d);
    break;
  case FL_BROKER_CONTROL:
    fl_warn(d->env->trace_id, "control message %s (%s) ignored: spawn and stop are not served "
            "by this fleetd", d->env->msg_id, d->env->kind);
    break;
  }
  fl_ack(gw, d->tag);
}

static void fl_on_state(void *ctx, int up, const char *why) {
  fl_gw *gw = ctx;
  int was = gw->broker_up;
  gw->broker_up = up;
  fl_copy(gw->broker_why, sizeof gw->broker_why, up ? "" : why);
  if (up) {
    fl_info(NULL, "broker link is up");
    fl_presence_all(gw);
  } else {
    if (was)
      fl_gw_count(gw, FL_C_BROKER_DISCONNECTS);
    fl_warn(NULL, "broker link is down: %s; remote sends fail until it is back", why);
    char control[160];
    snprintf(control, sizeof control, "control.%s", gw->cfg.host_id);
    if (strstr(why, control) && strstr(why, "exclusive")) {
      fl_error(NULL, "another gateway with host id '%s' is connected to this broker: each "
               "gateway needs its own --host-id; this one retries until the other leaves",
               gw->cfg.host_id);
      snprintf(gw->broker_why, sizeof gw->broker_why,
               "another gateway with host id '%s' holds this host's queues", gw->cfg.host_id);
    }
    /* Unacked deliveries go back to their queues with the connection; they
     * come again (and are deduped) after the reconnect. */
    fl_unacked_clear(gw);
    fl_park_clear(gw);
  }
}

static void fl_on_inbox(void *ctx, const char *gid, int status, const char *why) {
  fl_gw *gw = ctx;
  fl_entity *e = fl_entity_by_gid(gw, gid);
  if (status)
    fl_error(NULL, "inbox of '%s' (gid %s) is not consumed: %s", e ? e->name : "?", gid, why);
  else
    fl_debug(NULL, "inbox of '%s' is consumed", e ? e->name : gid);
}

/* ---- publishing ---------------------------------------------------------------- */

static void fl_on_publish_done(void *ctx, void *req, int status, const char *why) {
  fl_gw *gw = ctx;
  fl_pub *pub = req;
  if (!pub) {
    /* A presence beat: the next one follows within the interval. */
    if (status && status != FL_ECANCELLED)
      fl_debug(NULL, "presence beat not confirmed: %s", why ? why : fl_strerror(status));
    return;
  }
  if (status == 0)
    fl_gw_count(gw, FL_C_REMOTE_PUBLISHED);
  else if (status != FL_ECANCELLED)
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
    fl_wait_expect_reply(w, then_wait_s);
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

static int fl_publish(fl_gw *gw, fl_client *c, const char *key, int mandatory, const fl_msg *m,
                      const char *peer_gid, double then_wait_s, json_t *on_confirm, fl_gw_cb cb,
                      void *ctx, fl_wait **wait, char *err, size_t errlen) {
  *wait = NULL;
  if (!gw->broker) {
    json_decref(on_confirm);
    fl_errf(err, errlen, "no broker is configured, so other hosts cannot be reached");
    return FL_EBROKER;
  }
  if (!gw->broker_up) {
    json_decref(on_confirm);
    fl_errf(err, errlen,
             "the broker is unreachable (%s): messages to other hosts fail until it is back; "
             "messages on this host still work",
             gw->broker_why[0] ? gw->broker_why : "not connected");
    return FL_EBROKER;
  }
  fl_wait *w;
  int rc = fl_wait_new(gw, c, FL_WAIT_CONFIRM, &fl_confirm_ops, FL_CONFIRM_TIMEOUT_S, cb, ctx,
                       &w, err, errlen);
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
  pub->gw = gw;
  pub->wait = w;
  pub->then_wait_s = then_wait_s;
  pub->on_confirm = on_confirm;
  w->ext = pub;
  w->wants_reply = then_wait_s > 0;
  fl_copy(w->msg_id, sizeof w->msg_id, m->msg_id);
  fl_copy(w->trace_id, sizeof w->trace_id, m->trace_id);
  fl_copy(w->peer_gid, sizeof w->peer_gid, peer_gid);
  fl_envelope env;
  fl_env_from_msg(gw, m, &env);
  if ((rc = fl_sign_envelope(&env, m->content, m->content_len, gw->id.sk)) == 0)
    rc = fl_broker_publish(gw->broker, "fleet.msg", key, mandatory, &env, m->content,
                         m->content_len, pub);
  if (rc) {
    fl_gw_cancel(gw, &w); /* forgets pub, freeing on_confirm */
    fl_free(pub);
    fl_gw_count(gw, FL_C_REMOTE_PUBLISH_FAILED);
    fl_errf(err, errlen, "%s",
             rc == FL_EFULL ? "too many messages are on their way to the broker; try again "
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

int fl_fabric_publish(fl_gw *gw, fl_client *c, fl_entity *dst, const fl_msg *m,
                      double then_wait_s, json_t *on_confirm, fl_gw_cb cb, void *ctx,
                      fl_wait **wait, char *err, size_t errlen) {
  return fl_publish(gw, c, dst->gid, 1, m, dst->gid, then_wait_s, on_confirm, cb, ctx, wait,
                    err, errlen);
}

int fl_fabric_broadcast(fl_gw *gw, fl_client *c, const fl_msg *m, const char *group,
                        json_t *on_confirm, fl_gw_cb cb, void *ctx, fl_wait **wait, char *err,
                        size_t errlen) {
  char key[FL_MAX_GROUP_NAME + 16];
  snprintf(key, sizeof key, "broadcast.%s", group ? group : "all");
  /* Not mandatory: a group with no member anywhere is legal silence. */
  return fl_publish(gw, c, key, 0, m, "", 0, on_confirm, cb, ctx, wait, err, errlen);
}

/* ---- life cycle ------------------------------------------------------------------ */

void fl_fabric_entity_changed(fl_gw *gw, fl_entity *e) {
  if (!gw->broker || e->remote)
    return;
  const char *groups[FL_MAX_GROUPS];
  for (size_t i = 0; i < e->ngroups; i++)
    groups[i] = e->groups[i];
  int rc = fl_broker_add_inbox(gw->broker, e->gid, groups, e->ngroups);
  if (rc)
    fl_error(NULL, "cannot add the inbox of '%s': %s", e->name, fl_strerror(rc));
  fl_presence_entity(gw, e);
}

static void fl_remote_load_cb(void *ctx, const fl_entity_rec *r) {
  fl_gw *gw = ctx;
  if (fl_entity_by_gid(gw, r->gid) || gw->nentities >= FL_MAX_ENTITIES)
    return;
  fl_entity *e = fl_entity_new(gw, r->gid, r->name);
  if (!e)
    return;
  e->remote = 1; /* offline (expires_ms 0) until its host beats again */
  fl_copy(e->host, sizeof e->host, r->host);
  fl_copy(e->role, sizeof e->role, r->role);
  fl_entity_set_groups(e, r->groups);
}

int fl_fabric_start(fl_gw *gw) {
  if (!gw->cfg.broker_uri[0])
    return 0;
  if (gw->cfg.presence_interval_ms == 0)
    gw->cfg.presence_interval_ms = 5000;
  if (gw->cfg.presence_ttl_ms == 0)
    gw->cfg.presence_ttl_ms = 3 * gw->cfg.presence_interval_ms;
  fl_broker_config bc = {
      .uri = gw->cfg.broker_uri,
      .host_id = gw->cfg.host_id,
      .prefetch = gw->cfg.broker_prefetch,
      .queue_type = gw->cfg.broker_queue_type[0] ? gw->cfg.broker_queue_type : NULL,
      .heartbeat_s = gw->cfg.broker_heartbeat_s,
      .ca_file = gw->cfg.broker_ca_file[0] ? gw->cfg.broker_ca_file : NULL,
  };
  static const fl_broker_events ev = {.on_state = fl_on_state,
                                      .on_delivery = fl_on_delivery,
                                      .on_publish_done = fl_on_publish_done,
                                      .on_inbox = fl_on_inbox,
                                      .on_batch = fl_on_batch};
  int rc = fl_broker_start(gw->loop, &bc, &ev, gw, &gw->broker);
  if (rc) {
    fl_error(NULL, "cannot start the broker link: %s (check the broker URI and host id)",
             fl_strerror(rc));
    return rc;
  }
  fl_copy(gw->broker_why, sizeof gw->broker_why, "connecting");
  /* Who lived where, as verified presence last said: a message that waited
   * in an inbox while this gateway was down is checked against it. */
  if (fl_store_remote_each(gw->store, fl_remote_load_cb, gw) != 0)
    fl_gw_count(gw, FL_C_STORE_ERRORS);
  for (fl_entity *e = gw->entities; e; e = e->next)
    fl_fabric_entity_changed(gw, e);
  uv_timer_init(gw->loop, &gw->park_timer);
  gw->park_timer.data = gw;
  uv_timer_init(gw->loop, &gw->presence);
  gw->presence.data = gw;
  uv_timer_start(&gw->presence, fl_presence_tick, gw->cfg.presence_interval_ms,
                 gw->cfg.presence_interval_ms);
  return 0;
}

void fl_fabric_stop(fl_gw *gw) {
  if (!gw->broker)
    return;
  uv_close((uv_handle_t *)&gw->presence, NULL);
  uv_close((uv_handle_t *)&gw->park_timer, NULL);
  fl_broker_stop(gw->broker);
  gw->broker_up = 0;
}

void fl_fabric_free(fl_gw *gw) {
  fl_free(gw->acks_later);
  gw->acks_later = NULL;
  fl_unacked_clear(gw);
  fl_park_clear(gw);
  fl_broker_free(&gw->broker);
}
