/* coord.c — the coordinator link: lead-to-lead mailboxes on a vhost the
 * leads of several fleets share (see coord.h).
 *
 * A second broker link (broker.c) to the coordinator's URI. Its addresses:
 * a lead's coordId (<name>@<fleet>, or what FLEET_COORD_ID set) names a
 * mailbox gid derived from it (a hash, so every gateway derives the same
 * one), and the mailbox is that gid's durable inbox on the coordinator
 * vhost. Every online lead beats its coordId on the vhost's roster
 * exchange, signed; what this gateway hears is its list of coordinators.
 * A COORD message is signed like any envelope and checked on arrival like
 * one (pinned key of its host, the sender's mailbox gid matches its
 * coordId, the right mailbox, not expired, UTF-8); anything else in a
 * mailbox is dead-lettered: mailboxes carry coordination only. An accepted
 * one is committed to the hold store for its lead, then acked, then handed
 * to a waiting send of that lead or woken like any message (poll, nudge).
 *
 * While the link is down, sends to the coordinator fail at once; the
 * fleet's own broker link is another connection and carries on. */
#include "gateway/fabric/coord.h"

#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/log.h"
#include "gateway/broker/broker.h"
#include "gateway/core/gw_internal.h"
#include "gateway/fabric/confirm.h"
#include "gateway/fabric/fabric.h"
#include "gateway/fabric/inbound.h"
#include "gateway/fabric/wire.h"
#include "gateway/proto/envelope.h"
#include "gateway/proto/sign.h"
#include "gateway/proto/topology.h"

/* Beat period when the configuration gives no presence interval. */
#define FL_COORD_BEAT_MS 5000
/* A lead's beat is believed for this many beat periods. */
#define FL_COORD_TTL_BEATS 3
/* COORD messages remembered so an answer joins its flow. */
#define FL_COORD_RECENT 64

typedef struct fl_coord_peer {
  char coord_id[FL_MAX_COORD_ID + 1];
  char gid[FL_ID_LEN]; /* its mailbox */
  char host[64];
  long long expires_ms; /* its last beat runs out then */
} fl_coord_peer;

typedef struct fl_coord fl_coord;
struct fl_coord {
  fl_gw *gw;
  fl_broker *broker;
  int up;
  char why[256];
  uv_timer_t beat;
  unsigned interval_ms;
  char mailboxes[FL_MAX_COORDINATORS][FL_ID_LEN]; /* consumed here */
  size_t nmailboxes;
  fl_coord_peer peers[FL_MAX_COORDINATORS];
  size_t npeers;
  struct {
    char from_gid[FL_ID_LEN];
    char to_gid[FL_ID_LEN];
    char msg_id[FL_ID_LEN];
    char trace_id[FL_ID_LEN];
  } recent[FL_COORD_RECENT];
  size_t recent_next;
};

/* ---- addresses -------------------------------------------------------------------- */

/* The mailbox gid of coord_id: a UUID-shaped hash, the same everywhere. */
static void fl_coord_gid(const char *coord_id, char out[FL_ID_LEN]) {
  unsigned char h[16];
  char in[FL_MAX_COORD_ID + 32];
  int n = snprintf(in, sizeof in, "fleet-coord/1\n%s", coord_id);
  crypto_generichash(h, sizeof h, (const unsigned char *)in, (size_t)n, NULL, 0);
  h[6] = (unsigned char)((h[6] & 0x0f) | 0x80);
  h[8] = (unsigned char)((h[8] & 0x3f) | 0x80);
  snprintf(out, FL_ID_LEN, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
           h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7], h[8], h[9], h[10], h[11], h[12], h[13],
           h[14], h[15]);
}

static int fl_is_local_lead(const fl_entity *e) {
  return !e->remote && !e->removed && strcmp(e->role, "lead") == 0;
}

/* e's coordId: the one its session gave, else <name>@<fleet>. */
static void fl_coord_id_of(const fl_gw *gw, const fl_entity *e, char out[FL_MAX_COORD_ID + 1]) {
  if (e->coord_id[0])
    fl_copy(out, FL_MAX_COORD_ID + 1, e->coord_id);
  else {
    /* Past FL_MAX_COORD_ID it is cut: such a lead sets FLEET_COORD_ID. */
    char full[2 * FL_MAX_NAME + 2];
    snprintf(full, sizeof full, "%s@%s", e->name, gw->cfg.coord_fleet);
    fl_copy(out, FL_MAX_COORD_ID + 1, full);
  }
}

/* The local lead whose mailbox is gid, or NULL. */
static fl_entity *fl_lead_of_mailbox(fl_gw *gw, const char *gid) {
  for (fl_entity *e = gw->entities; e; e = e->next) {
    if (!fl_is_local_lead(e))
      continue;
    char id[FL_MAX_COORD_ID + 1], g[FL_ID_LEN];
    fl_coord_id_of(gw, e, id);
    fl_coord_gid(id, g);
    if (strcmp(g, gid) == 0)
      return e;
  }
  return NULL;
}

static fl_coord_peer *fl_peer_find(fl_coord *co, const char *ref) {
  for (size_t i = 0; ref && i < co->npeers; i++)
    if (strcmp(co->peers[i].coord_id, ref) == 0 || strcmp(co->peers[i].gid, ref) == 0)
      return &co->peers[i];
  return NULL;
}

/* Consumes gid's mailbox from now on (once). */
static void fl_mailbox_ensure(fl_coord *co, const char *gid, const char *coord_id) {
  for (size_t i = 0; i < co->nmailboxes; i++)
    if (strcmp(co->mailboxes[i], gid) == 0)
      return;
  if (co->nmailboxes == FL_MAX_COORDINATORS)
    return;
  int rc = fl_broker_add_inbox(co->broker, gid, NULL, 0);
  if (rc) {
    fl_error(NULL, "coordinator: cannot open the mailbox of %s: %s", coord_id, fl_strerror(rc));
    return;
  }
  fl_copy(co->mailboxes[co->nmailboxes++], FL_ID_LEN, gid);
  fl_info(NULL, "coordinator: mailbox of %s (%s) is consumed here", coord_id, gid);
}

/* ---- beats -------------------------------------------------------------------------- */

static void fl_coord_beat(fl_coord *co) {
  fl_gw *gw = co->gw;
  if (!co->up)
    return;
  long long now = fl_now_ms();
  for (fl_entity *e = gw->entities; e; e = e->next) {
    if (!fl_is_local_lead(e))
      continue;
    char id[FL_MAX_COORD_ID + 1], gid[FL_ID_LEN];
    fl_coord_id_of(gw, e, id);
    fl_coord_gid(id, gid);
    fl_mailbox_ensure(co, gid, id);
    if (!e->client)
      continue;
    fl_msg m;
    memset(&m, 0, sizeof m);
    fl_uuid(m.msg_id);
    fl_copy(m.kind, sizeof m.kind, fl_envelope_kind_name(FL_KIND_PRESENCE));
    fl_copy(m.from_gid, sizeof m.from_gid, gid);
    fl_copy(m.from_name, sizeof m.from_name, id);
    m.ts_ms = now;
    m.expires_ms = now + (long long)FL_COORD_TTL_BEATS * co->interval_ms;
    m.content = "";
    fl_envelope env;
    fl_env_from_msg(gw, &m, &env);
    char key[256];
    snprintf(key, sizeof key, "roster.%s.%s", gw->cfg.host_id, gid);
    if (fl_sign_envelope(&env, "", 0, gw->id.sk) == 0)
      fl_broker_publish(co->broker, FL_EX_ROSTER, key, 0, &env, "", 0, NULL);
  }
}

static void fl_coord_beat_cb(uv_timer_t *t) { fl_coord_beat(t->data); }

/* A lead's beat from the coordinator's roster. */
static void fl_coord_on_beat(fl_coord *co, const fl_broker_delivery *d) {
  const fl_envelope *env = d->env;
  char why[160];
  long long expires = 0;
  if (!fl_envelope_is_kind(env->kind, FL_KIND_PRESENCE) ||
      fl_inbound_verify_origin(co->gw, d, why, sizeof why) != 0 ||
      !fl_coord_id_valid(env->from_name) || fl_rfc3339_parse(env->expires_at, &expires) != 0) {
    fl_gw_count(co->gw, FL_C_PRESENCE_REFUSED);
    return;
  }
  char gid[FL_ID_LEN];
  fl_coord_gid(env->from_name, gid);
  if (strcmp(gid, env->from) != 0) {
    fl_gw_count(co->gw, FL_C_PRESENCE_REFUSED);
    return;
  }
  fl_coord_peer *p = fl_peer_find(co, env->from_name);
  if (!p) {
    if (co->npeers == FL_MAX_COORDINATORS)
      return;
    p = &co->peers[co->npeers++];
    memset(p, 0, sizeof *p);
    fl_copy(p->coord_id, sizeof p->coord_id, env->from_name);
    fl_copy(p->gid, sizeof p->gid, gid);
    fl_info(NULL, "coordinator: lead %s on host '%s' is heard", env->from_name, env->host);
  }
  fl_copy(p->host, sizeof p->host, env->host);
  if (expires > p->expires_ms)
    p->expires_ms = expires;
}

/* ---- mailbox deliveries --------------------------------------------------------------- */

static void fl_coord_reject(fl_coord *co, const fl_broker_delivery *d, int counter,
                            const char *why) {
  fl_gw_count(co->gw, FL_C_REMOTE_DEAD_LETTERED);
  if (counter != FL_C_COUNT)
    fl_gw_count(co->gw, counter);
  fl_warn(d->env->trace_id, "coordinator: dead-lettered %s from host '%s': %s",
          d->env->msg_id[0] ? d->env->msg_id : "(no msgId)", d->env->host, why);
  fl_broker_reject(co->broker, d->tag, 0);
}

static void fl_coord_remember(fl_coord *co, const fl_msg *m) {
  size_t i = co->recent_next;
  fl_copy(co->recent[i].from_gid, FL_ID_LEN, m->from_gid);
  fl_copy(co->recent[i].to_gid, FL_ID_LEN, m->to_gid);
  fl_copy(co->recent[i].msg_id, FL_ID_LEN, m->msg_id);
  fl_copy(co->recent[i].trace_id, FL_ID_LEN, m->trace_id);
  co->recent_next = (i + 1) % FL_COORD_RECENT;
}

/* Hands the held m to a send of lead waiting for this answer. 1 if one took it. */
static int fl_coord_resolve(fl_coord *co, fl_entity *lead, const fl_msg *m) {
  fl_gw *gw = co->gw;
  for (fl_wait *w = lead->client ? lead->client->waits : NULL; w; w = w->next) {
    int sending = w->kind == FL_WAIT_SEND || (w->kind == FL_WAIT_CONFIRM && w->wants_reply);
    if (!sending || w->turn_side || strcmp(w->peer_gid, m->from_gid) != 0 ||
        (m->in_reply_to[0] && strcmp(m->in_reply_to, w->msg_id) != 0))
      continue;
    fl_msg got;
    if (fl_store_take_id(gw->store, lead->gid, m->msg_id, &got) != 0)
      return 0;
    gw->counters[FL_C_MSGS_DRAINED]++;
    json_t *reply = fl_router_msg_json(&got);
    fl_free(got.content);
    json_t *res = json_pack("{s:s, s:s, s:{s:s, s:s}, s:s, s:s, s:o}", "msgId", w->msg_id,
                            "traceId", w->trace_id, "to", "gid", m->from_gid, "name", m->from_name,
                            "coordId", m->from_name, "status", "replied", "reply", reply);
    fl_info(m->trace_id, "coordinator: %s answered the waiting send %s of '%s'", m->from_name,
            w->msg_id, lead->name);
    fl_wait_complete(w, res, NULL);
    return 1;
  }
  return 0;
}

static void fl_coord_check(fl_coord *co, fl_entity *lead, const fl_broker_delivery *d);

static void fl_coord_on_mail(fl_coord *co, const fl_broker_delivery *d) {
  fl_gw *gw = co->gw;
  fl_entity *lead = fl_lead_of_mailbox(gw, d->gid);
  if (!lead) {
    fl_coord_reject(co, d, FL_C_VERIFY_WRONG_RECIPIENT, "no local lead owns this mailbox");
    return;
  }
  /* Sealed to this host like every body that crosses a broker; the checks
   * below read the opened body. */
  char why[160];
  fl_broker_delivery pd;
  char *opened;
  int bad = fl_inbound_open(gw, d, 0, &pd, &opened, why, sizeof why);
  if (bad == FL_C_COUNT) {
    fl_broker_reject(co->broker, d->tag, 1); /* out of memory: it comes again */
    return;
  }
  if (bad) {
    fl_coord_reject(co, d, bad, why);
    return;
  }
  fl_coord_check(co, lead, &pd);
  fl_free(opened);
}

static void fl_coord_check(fl_coord *co, fl_entity *lead, const fl_broker_delivery *d) {
  fl_gw *gw = co->gw;
  const fl_envelope *env = d->env;
  if (!fl_envelope_is_kind(env->kind, FL_KIND_COORD)) {
    fl_coord_reject(co, d, FL_C_VERIFY_MALFORMED,
                    "a mailbox carries COORD messages only (coordination, never a task)");
    return;
  }
  char from_gid[FL_ID_LEN];
  if (!fl_is_uuid(env->msg_id) || !fl_coord_id_valid(env->from_name)) {
    fl_coord_reject(co, d, FL_C_VERIFY_MALFORMED, "msgId must be a UUID and fromName a coordId");
    return;
  }
  fl_coord_gid(env->from_name, from_gid);
  fl_coord_peer *p = fl_peer_find(co, env->from_name);
  if (strcmp(from_gid, env->from) != 0 || (p && strcmp(p->host, env->host) != 0)) {
    fl_coord_reject(co, d, FL_C_VERIFY_MISATTRIBUTED,
                    "`from` is not the mailbox of its coordId on the signing host");
    return;
  }
  if (strcmp(env->to, d->gid) != 0 || strcmp(d->routing_key, d->gid) != 0) {
    fl_coord_reject(co, d, FL_C_VERIFY_WRONG_RECIPIENT, "`to` does not match the mailbox");
    return;
  }
  long long now = fl_now_ms(), expires = 0;
  if (env->expires_at[0] && (fl_rfc3339_parse(env->expires_at, &expires) != 0 || expires <= now)) {
    fl_coord_reject(co, d, FL_C_VERIFY_EXPIRED, "expired");
    return;
  }
  if (d->len > FL_MAX_CONTENT || !fl_inbound_utf8_ok(d->body, d->len)) {
    fl_coord_reject(co, d, FL_C_VERIFY_MALFORMED, "body is not UTF-8 text within the size limit");
    return;
  }
  fl_msg m;
  memset(&m, 0, sizeof m);
  fl_copy(m.msg_id, sizeof m.msg_id, env->msg_id);
  fl_copy(m.trace_id, sizeof m.trace_id, fl_is_uuid(env->trace_id) ? env->trace_id : env->msg_id);
  fl_copy(m.kind, sizeof m.kind, env->kind);
  fl_copy(m.from_gid, sizeof m.from_gid, from_gid);
  fl_copy(m.from_name, sizeof m.from_name, env->from_name);
  fl_copy(m.to_gid, sizeof m.to_gid, lead->gid);
  if (fl_is_uuid(env->in_reply_to))
    fl_copy(m.in_reply_to, sizeof m.in_reply_to, env->in_reply_to);
  long long ts = 0;
  m.ts_ms = fl_rfc3339_parse(env->ts, &ts) == 0 ? ts : now;
  m.expires_ms = expires;
  char *content = fl_malloc(d->len + 1);
  if (!content) {
    fl_broker_reject(co->broker, d->tag, 1);
    return;
  }
  if (d->len)
    memcpy(content, d->body, d->len);
  content[d->len] = '\0';
  m.content = content;
  m.content_len = d->len;
  char err[256];
  int rc = fl_router_accept(gw, lead, &m, err, sizeof err);
  if (rc == 0 || rc == FL_EDUP) {
    /* Committed (or held already): the store keeps it until pulled. */
    fl_broker_ack(co->broker, d->tag);
    if (rc == 0) {
      fl_gw_count(gw, FL_C_REMOTE_RECEIVED);
      fl_coord_remember(co, &m);
      if (!fl_coord_resolve(co, lead, &m))
        fl_router_wake(gw, lead, &m);
    }
  } else {
    fl_coord_reject(co, d, FL_C_COUNT, err);
  }
  fl_free(content);
}

/* ---- the link ----------------------------------------------------------------------- */

static void fl_coord_on_state(void *ctx, int up, const char *why) {
  fl_coord *co = ctx;
  int was = co->up;
  co->up = up;
  fl_copy(co->why, sizeof co->why, up ? "" : why);
  if (up) {
    fl_info(NULL, "coordinator link is up");
    fl_coord_beat(co);
  } else if (was) {
    fl_warn(NULL, "coordinator link is down: %s; lead-to-lead sends fail until it is back", why);
  }
}

static void fl_coord_on_delivery(void *ctx, const fl_broker_delivery *d) {
  fl_coord *co = ctx;
  if (d->bad) { /* not even an envelope */
    fl_coord_reject(co, d, FL_C_VERIFY_MALFORMED, d->bad);
    return;
  }
  switch (d->source) {
  case FL_BROKER_INBOX:
    fl_coord_on_mail(co, d); /* settles d itself */
    return;
  case FL_BROKER_ROSTER:
    fl_coord_on_beat(co, d);
    break;
  case FL_BROKER_CONTROL:
    fl_warn(d->env->trace_id,
            "coordinator: control message %s ignored: no spawn or stop "
            "goes through the coordinator",
            d->env->msg_id);
    break;
  case FL_BROKER_CLAIMS:
    /* Claims travel on each fleet's own vhost, never between fleets. */
    fl_debug(d->env->trace_id, "coordinator: claim %s ignored", d->env->msg_id);
    break;
  }
  fl_broker_ack(co->broker, d->tag);
}

static void fl_coord_on_publish_done(void *ctx, void *req, int status, const char *why) {
  fl_coord *co = ctx;
  if (!req)
    return; /* a beat: the next one follows */
  if (status == 0)
    fl_gw_count(co->gw, FL_C_REMOTE_PUBLISHED);
  else if (status != FL_ECANCELLED)
    fl_gw_count(co->gw, FL_C_REMOTE_PUBLISH_FAILED);
  fl_confirm_done(co->gw, req, status, why);
}

static void fl_coord_on_inbox(void *ctx, const char *gid, int status, const char *why) {
  if (status)
    fl_error(NULL, "coordinator: mailbox %s is not consumed: %s", gid, why);
}

int fl_coord_start(fl_gw *gw, char *err, size_t errlen) {
  const fl_gw_config *cfg = &gw->cfg;
  if (!cfg->coord_uri[0])
    return 0;
  fl_coord *co = fl_calloc(1, sizeof *co);
  if (!co) {
    fl_errf(err, errlen, "out of memory");
    return FL_ENOMEM;
  }
  co->gw = gw;
  co->interval_ms = cfg->presence_interval_ms ? cfg->presence_interval_ms : FL_COORD_BEAT_MS;
  fl_copy(co->why, sizeof co->why, "connecting");
  fl_broker_config bc = {
      .uri = cfg->coord_uri,
      .host_id = cfg->host_id,
      .ca_file = cfg->broker_ca_file[0] ? cfg->broker_ca_file : NULL,
  };
  static const fl_broker_events ev = {.on_state = fl_coord_on_state,
                                      .on_delivery = fl_coord_on_delivery,
                                      .on_publish_done = fl_coord_on_publish_done,
                                      .on_inbox = fl_coord_on_inbox};
  int rc = fl_broker_start(gw->loop, &bc, &ev, co, &co->broker);
  if (rc) {
    fl_errf(err, errlen, "cannot start the coordinator link: %s (check coordinator.uri)",
            fl_strerror(rc));
    fl_free(co);
    return rc;
  }
  uv_timer_init(gw->loop, &co->beat);
  co->beat.data = co;
  uv_timer_start(&co->beat, fl_coord_beat_cb, co->interval_ms, co->interval_ms);
  uv_unref((uv_handle_t *)&co->beat);
  gw->coord = co;
  fl_info(NULL, "coordinator: fleet '%s', connecting", cfg->coord_fleet);
  return 0;
}

void fl_coord_stop(fl_gw *gw) {
  fl_coord *co = gw->coord;
  if (!co)
    return;
  uv_close((uv_handle_t *)&co->beat, NULL);
  fl_broker_stop(co->broker);
  co->up = 0;
}

void fl_coord_free(fl_gw *gw) {
  fl_coord *co = gw->coord;
  if (!co)
    return;
  fl_broker_free(&co->broker);
  fl_free(co);
  gw->coord = NULL;
}

/* ---- what the core asks ------------------------------------------------------------ */

int fl_coord_list_id(fl_gw *gw, const fl_entity *e, char id[FL_MAX_COORD_ID + 1]) {
  if (!gw->coord || !fl_is_local_lead(e))
    return 0;
  fl_coord_id_of(gw, e, id);
  return 1;
}

void fl_coord_list_write(fl_gw *gw, fl_jw *w) {
  fl_coord *co = gw->coord;
  if (!co)
    return;
  long long now = fl_now_ms();
  fl_jw_key(w, "coordinators");
  fl_jw_arr_open(w);
  for (size_t k = 0; k < co->npeers; k++) {
    const fl_coord_peer *p = &co->peers[k];
    fl_jw_obj_open(w);
    fl_jw_key(w, "coordId");
    fl_jw_str(w, p->coord_id);
    fl_jw_key(w, "host");
    fl_jw_str(w, p->host);
    fl_jw_key(w, "status");
    fl_jw_str(w, p->expires_ms > now ? "online" : "offline");
    fl_jw_key(w, "local");
    fl_jw_bool(w, strcmp(p->host, gw->cfg.host_id) == 0);
    fl_jw_obj_close(w);
  }
  fl_jw_arr_close(w);
}

json_t *fl_coord_describe(fl_gw *gw) {
  fl_coord *co = gw->coord;
  if (!co)
    return NULL;
  return json_pack("{s:s, s:s, s:s, s:I, s:I}", "state", co->up ? "up" : "down", "why", co->why,
                   "fleet", gw->cfg.coord_fleet, "leads", (json_int_t)co->npeers, "mailboxes",
                   (json_int_t)co->nmailboxes);
}

int fl_gw_coord_owns(fl_gw *gw, const char *ref) {
  if (!gw->coord || !ref || !fl_peer_find(gw->coord, ref))
    return 0;
  /* A name@host of this fleet's roster wins over a coordId spelt the same. */
  fl_entity *e;
  char err[256];
  return fl_roster_resolve(gw, ref, &e, err, sizeof err) != 0;
}

int fl_gw_coord_send(fl_gw *gw, fl_client *c, const char *coord_id, const char *content,
                     const char *in_reply_to, double wait_s, fl_gw_cb cb, void *ctx,
                     json_t **result, fl_wait **wait, char *err, size_t errlen) {
  int rc;
  *result = NULL;
  *wait = NULL;
  fl_coord *co = gw->coord;
  if ((rc = fl_router_check_sender(c, content, err, errlen)))
    return rc;
  if (!co) {
    fl_errf(err, errlen,
            "no coordinator is configured: lead-to-lead mailboxes need a \"coordinator\": "
            "{\"uri\", \"fleet\"} block in fleetd.json");
    return FL_EBROKER;
  }
  if (!fl_is_local_lead(c->entity)) {
    fl_errf(err, errlen,
            "only a lead has a mailbox on the coordinator (this session's role is '%s'; "
            "FLEET_ROLE=lead)",
            c->entity->role);
    return FL_EINVAL;
  }
  fl_coord_peer *p = fl_peer_find(co, coord_id);
  if (!p) {
    fl_errf(err, errlen,
            "no lead with coordId '%s' is on the coordinator: fleet_list shows the leads under "
            "coordinators",
            coord_id ? coord_id : "");
    return FL_ENOTFOUND;
  }
  if (!co->up) {
    fl_errf(err, errlen,
            "the coordinator is unreachable (%s): lead-to-lead messages fail until it is back; "
            "messages within the fleet still work",
            co->why[0] ? co->why : "not connected");
    return FL_EBROKER;
  }
  char my_id[FL_MAX_COORD_ID + 1], my_gid[FL_ID_LEN];
  fl_coord_id_of(gw, c->entity, my_id);
  fl_coord_gid(my_id, my_gid);
  fl_mailbox_ensure(co, my_gid, my_id); /* the answer comes there */
  if ((rc = fl_wait_room(c, err, errlen)))
    return rc;
  fl_msg m;
  memset(&m, 0, sizeof m);
  fl_uuid(m.msg_id);
  fl_copy(m.kind, sizeof m.kind, fl_envelope_kind_name(FL_KIND_COORD));
  fl_copy(m.from_gid, sizeof m.from_gid, my_gid);
  fl_copy(m.from_name, sizeof m.from_name, my_id);
  fl_copy(m.to_gid, sizeof m.to_gid, p->gid);
  m.ts_ms = fl_now_ms();
  m.content = (char *)content;
  m.content_len = strlen(content);
  /* An answer joins its flow: the message it names, else the newest one
   * that lead wrote to this one. */
  for (size_t k = 1; k <= FL_COORD_RECENT; k++) {
    size_t i = (co->recent_next + FL_COORD_RECENT - k) % FL_COORD_RECENT;
    if (!co->recent[i].msg_id[0])
      break;
    if ((in_reply_to && *in_reply_to) ? strcmp(co->recent[i].msg_id, in_reply_to) == 0
                                      : (strcmp(co->recent[i].from_gid, p->gid) == 0 &&
                                         strcmp(co->recent[i].to_gid, c->entity->gid) == 0)) {
      fl_copy(m.in_reply_to, sizeof m.in_reply_to, co->recent[i].msg_id);
      fl_copy(m.trace_id, sizeof m.trace_id, co->recent[i].trace_id);
      break;
    }
  }
  if (!m.in_reply_to[0] && in_reply_to && fl_is_uuid(in_reply_to))
    fl_copy(m.in_reply_to, sizeof m.in_reply_to, in_reply_to);
  if (!m.trace_id[0])
    fl_uuid(m.trace_id);
  wait_s = fl_router_clamp_wait(wait_s);
  json_t *sent =
      json_pack("{s:s, s:s, s:{s:s, s:s}, s:s, s:s}", "msgId", m.msg_id, "traceId", m.trace_id,
                "to", "gid", p->gid, "name", p->coord_id, "coordId", p->coord_id, "status", "sent");
  fl_confirm *req;
  if ((rc = fl_confirm_new(gw, c, &m, p->gid, p->coord_id, wait_s, sent, cb, ctx, wait, &req, err,
                           errlen)))
    return rc;
  fl_envelope env;
  fl_env_from_msg(gw, &m, &env);
  /* Sealed to the other lead's host, signed, then published. */
  char why[256];
  if ((rc = fl_wire_publish(gw, co->broker, FL_EX_MSG, p->gid, FL_BROKER_MANDATORY, &env, m.content,
                            m.content_len, p->host, req, why, sizeof why))) {
    fl_confirm_abort(gw, wait, req);
    fl_gw_count(gw, FL_C_REMOTE_PUBLISH_FAILED);
    fl_errf(err, errlen, "the coordinator did not take the message: %s", why);
    return rc;
  }
  fl_info(m.trace_id, "COORD %s from %s to %s published to its mailbox", m.msg_id, my_id,
          p->coord_id);
  return 0;
}
