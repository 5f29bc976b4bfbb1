/* claims.c — the claim verbs over the #claims room (see claims.h). */
#include "gateway/rooms/claims.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/json_read.h"
#include "common/log.h"
#include "gateway/core/remote.h"
#include "gateway/rooms/claim_rules.h"
#include "gateway/rooms/room_internal.h"

#define FL_MSG_ISSUED "ClaimIssued"
#define FL_MSG_RELEASED "ClaimReleased"
#define FL_MSG_HANDOFF "ClaimHandoff"

int fl_claims_start(fl_gw *gw, char *err, size_t errlen) {
  if (!gw->rooms)
    return 0;
  char id[FL_ROOM_ID_SIZE];
  return fl_rooms_register(gw, FL_CLAIMS_ROOM, id, err, errlen);
}

/* The broker carries a claim within milliseconds; a room within a sync. */
#define FL_CLAIMS_BROKER_SETTLE_MS 500

static long long fl_settle_ms(const fl_gw *gw) {
  if (gw->cfg.claims_settle_ms)
    return gw->cfg.claims_settle_ms;
  if (!gw->cfg.rooms_on)
    return FL_CLAIMS_BROKER_SETTLE_MS;
  return (long long)gw->cfg.rooms_sync_interval_s * 1000;
}

void fl_claims_receive(fl_gw *gw, const char *host, const char *body, size_t len) {
  if (!gw->rooms || !host || strcmp(host, gw->cfg.host_id) == 0)
    return; /* our own claim, back from the fanout: already in the room */
  const fl_room *room = fl_rooms_find(gw->rooms, FL_CLAIMS_ROOM);
  json_t *item = fl_json_loadb(body ? body : "", len, JSON_REJECT_DUPLICATES, NULL);
  fl_room_drop why = FL_ROOM_DROP_MALFORMED;
  /* Published as stored, without hops: one hop from its origin. */
  if (json_is_object(item) && !json_object_get(item, "hops"))
    json_object_set_new(item, "hops", json_integer(0));
  int rc = room && item ? fl_rooms_merge_item(gw, room->id, item, &why) : -1;
  json_decref(item);
  /* Per-host numbers only for pinned hosts: the envelope's host is the
   * publisher's word, and the table must not grow with made-up names. */
  unsigned char pk[FL_SIGN_PK_BYTES];
  fl_room_peer *st =
      fl_peers_lookup(gw->peers, host, pk) == 0 ? fl_rooms_peer(gw->rooms, host) : NULL;
  if (rc == 0) {
    gw->counters[FL_C_ROOM_MERGED]++;
    if (st)
      st->merged++;
    return;
  }
  if (rc != -1) {
    fl_gw_count(gw, FL_C_STORE_ERRORS);
    return;
  }
  if (st)
    st->dropped[why]++;
  gw->counters[FL_C_ROOM_DROPPED]++;
  if (why != FL_ROOM_DROP_DUPLICATE)
    fl_warn(NULL, "claims: dropped a claim that came over the broker from '%s': %s", host,
            fl_room_drop_name(why));
}

/* ---- the events ------------------------------------------------------------- */

typedef struct fl_events {
  fl_claim_event *v;
  size_t n, cap;
  long long seq; /* the last row read */
  int failed;
} fl_events;

/* The #claims events admitted so far, kept between admissions so that a
 * pulled page does not re-read the whole room for each item: the rows after
 * seq are read on each use, and the whole room again once it holds more
 * than the cap (the store dropped the oldest). */
struct fl_claims_log {
  fl_events ev;
};

static void fl_agent_from_json(fl_claim_agent *a, json_t *o) {
  fl_copy(a->gid, sizeof a->gid, json_string_value(json_object_get(o, "gid")));
  fl_copy(a->name, sizeof a->name, json_string_value(json_object_get(o, "name")));
  fl_copy(a->host, sizeof a->host, json_string_value(json_object_get(o, "host")));
}

/* The claim event m carries, into *e: 1, or 0 when it carries none. */
static int fl_event_from_msg(const fl_room_msg *m, fl_claim_event *e) {
  memset(e, 0, sizeof *e);
  const char *res = json_string_value(json_object_get(m->payload, "resource"));
  int ok = res && strlen(res) <= FL_CLAIM_MAX_RESOURCE && m->env.from[0] &&
           fl_rfc3339_parse(m->env.ts, &e->ts_ms) == 0;
  if (ok && strcmp(m->msg_type, FL_MSG_ISSUED) == 0) {
    e->op = FL_CLAIM_ISSUE;
    json_t *ttl = json_object_get(m->payload, "ttl_s");
    ok = json_is_number(ttl) && json_number_value(ttl) > 0 &&
         json_number_value(ttl) <= FL_CLAIM_MAX_TTL_S;
    if (ok)
      e->ttl_ms = (long long)(json_number_value(ttl) * 1000);
  } else if (ok && strcmp(m->msg_type, FL_MSG_RELEASED) == 0) {
    e->op = FL_CLAIM_RELEASE;
  } else if (ok && strcmp(m->msg_type, FL_MSG_HANDOFF) == 0) {
    e->op = FL_CLAIM_HANDOFF;
    fl_agent_from_json(&e->to, json_object_get(m->payload, "to"));
  } else {
    ok = 0;
  }
  if (!ok)
    return 0;
  fl_copy(e->msg_id, sizeof e->msg_id, m->env.msg_id);
  fl_copy(e->resource, sizeof e->resource, res);
  fl_copy(e->from.gid, sizeof e->from.gid, m->env.from);
  fl_copy(e->from.name, sizeof e->from.name, m->env.from_name);
  fl_copy(e->from.host, sizeof e->from.host, m->env.host);
  return 1;
}

/* Room for one more event in ev; 0 or FL_ENOMEM. */
static int fl_events_grow(fl_events *ev) {
  if (ev->n < ev->cap)
    return 0;
  size_t cap = ev->cap ? ev->cap * 2 : 64;
  fl_claim_event *nv = fl_realloc(ev->v, cap * sizeof *nv);
  if (!nv)
    return FL_ENOMEM;
  ev->v = nv;
  ev->cap = cap;
  return 0;
}

static void fl_event_row(void *ctx, long long seq, const char *item, int hops) {
  (void)hops;
  fl_events *ev = ctx;
  ev->seq = seq;
  fl_room_msg m;
  json_t *o = fl_room_item_load(item, &m);
  if (!o)
    return;
  fl_claim_event e;
  if (fl_event_from_msg(&m, &e)) {
    if (fl_events_grow(ev))
      ev->failed = 1;
    else
      ev->v[ev->n++] = e;
  }
  fl_room_msg_clear(&m);
  json_decref(o);
}

/* The #claims events after ev->seq appended to *ev; 0 or FL_ESTORE. */
static int fl_events_read(fl_gw *gw, fl_events *ev) {
  const fl_room *room = fl_rooms_find(gw->rooms, FL_CLAIMS_ROOM);
  if (!room)
    return FL_ENOTFOUND;
  if (fl_store_room_after(gw->store, room->id, ev->seq, gw->cfg.rooms_max_messages, fl_event_row,
                          ev) < 0 ||
      ev->failed)
    return FL_ESTORE;
  return 0;
}

/* Every claim event of the #claims room into *ev (fl_free ev->v). */
static int fl_events_load(fl_gw *gw, fl_events *ev) {
  memset(ev, 0, sizeof *ev);
  int rc = fl_events_read(gw, ev);
  if (rc) {
    fl_free(ev->v);
    ev->v = NULL;
  }
  return rc;
}

void fl_claims_log_free(fl_gw *gw) {
  fl_rooms *r = gw->rooms;
  if (r && r->claims_log) {
    fl_free(r->claims_log->ev.v);
    fl_free(r->claims_log);
    r->claims_log = NULL;
  }
}

int fl_claims_admit(fl_gw *gw, const char *room_id, const fl_room_msg *m, fl_room_drop *why) {
  const fl_room *room = fl_rooms_find(gw->rooms, FL_CLAIMS_ROOM);
  fl_claim_event e;
  if (!room || strcmp(room->id, room_id) != 0 || !fl_event_from_msg(m, &e))
    return 0; /* not a claim: the rules ignore it */
  long long now = fl_now_ms(), settle = fl_settle_ms(gw);
  if (e.ts_ms > now - settle && e.ts_ms <= now + settle)
    return 0; /* dated in the window: it cannot unseat a settled owner */
  fl_rooms *r = gw->rooms;
  if (r->claims_log && r->claims_log->ev.n > (size_t)gw->cfg.rooms_max_messages + FL_ROOM_MAX_PAGE)
    fl_claims_log_free(gw);
  if (!r->claims_log && !(r->claims_log = fl_calloc(1, sizeof *r->claims_log)))
    return FL_ENOMEM;
  fl_events *ev = &r->claims_log->ev;
  int rc = fl_events_read(gw, ev);
  if (!rc)
    rc = fl_events_grow(ev); /* the spare slot fl_claim_admit uses */
  if (rc) {
    fl_claims_log_free(gw);
    fl_warn(NULL, "claims: cannot read the #claims room to check a claim from '%s' (%s)",
            m->env.host, fl_strerror(rc));
    return rc;
  }
  fl_claim_admit_rc a = fl_claim_admit(ev->v, ev->n, &e, now, settle);
  if (a == FL_CLAIM_ADMITTED)
    return 0;
  *why = a == FL_CLAIM_FUTURE ? FL_ROOM_DROP_CLAIM_FUTURE : FL_ROOM_DROP_CLAIM_LATE;
  fl_warn(NULL,
          "claims: refused a claim on '%s' from %s@%s dated %s, %lld ms %s this host's clock "
          "(the settle window is %lld ms): %s",
          e.resource, e.from.name, e.from.host, m->env.ts, llabs(e.ts_ms - now),
          e.ts_ms > now ? "ahead of" : "behind", settle,
          a == FL_CLAIM_FUTURE ? "dated in the future"
                               : "it would take the resource from an owner settled here");
  return -1;
}

static json_t *fl_agent_json(const fl_claim_agent *a) {
  return json_pack("{s:s, s:s, s:s}", "gid", a->gid, "name", a->name, "host", a->host);
}

static void fl_me(fl_gw *gw, fl_client *c, fl_claim_agent *me) {
  memset(me, 0, sizeof *me);
  fl_copy(me->gid, sizeof me->gid, c->entity->gid);
  fl_copy(me->name, sizeof me->name, c->entity->name);
  fl_copy(me->host, sizeof me->host, gw->cfg.host_id);
}

/* The state of resource now; 0 or a store error (err filled). */
static int fl_state(fl_gw *gw, const char *resource, fl_claim_state *st, char *err, size_t errlen) {
  fl_events ev;
  int rc = fl_events_load(gw, &ev);
  if (rc) {
    fl_errf(err, errlen, "cannot read the #claims room (%s); see fleetd's log", fl_strerror(rc));
    return rc;
  }
  fl_claim_compute(ev.v, ev.n, resource, fl_now_ms(), st);
  fl_free(ev.v);
  return 0;
}

/* {status, resource, owner, expiresAt, since} as c sees resource. */
static json_t *fl_claim_result(fl_gw *gw, fl_client *c, const char *resource,
                               const fl_claim_state *st) {
  fl_claim_agent me;
  fl_me(gw, c, &me);
  long long now = fl_now_ms();
  const char *status = "tentative";
  if (st->owned && !fl_claim_agent_is(&st->owner, &me))
    status = "held_by_other";
  else if (st->owned && now >= st->since_ms + fl_settle_ms(gw))
    status = "owned";
  char exp[FL_TS_LEN] = "", since[FL_TS_LEN] = "";
  if (st->owned) {
    fl_rfc3339(st->expires_ms, exp);
    fl_rfc3339(st->since_ms, since);
  }
  return json_pack("{s:s, s:s, s:o*, s:s*, s:s*, s:I}", "status", status, "resource", resource,
                   "owner", st->owned ? fl_agent_json(&st->owner) : NULL, "expiresAt",
                   st->owned ? exp : NULL, "since", st->owned ? since : NULL, "settleMs",
                   (json_int_t)fl_settle_ms(gw));
}

/* ---- verbs -------------------------------------------------------------------- */

static json_t *fl_degraded(void) {
  return json_pack("{s:b, s:s}", "degraded", 1, "reason",
                   "claims travel over rooms or a broker, and neither is configured on this "
                   "host (set \"rooms\" or a broker in fleetd.json)");
}

static int fl_check_args(fl_gw *gw, fl_client *c, const char *resource, char *err, size_t errlen) {
  if (!c || !c->entity) {
    fl_errf(err, errlen, "claims are owned by agents: call this from a named session");
    return FL_EINVAL;
  }
  if (!resource || !*resource || strlen(resource) > FL_CLAIM_MAX_RESOURCE) {
    fl_errf(err, errlen, "resource must be 1 to %d bytes", FL_CLAIM_MAX_RESOURCE);
    return FL_EINVAL;
  }
  (void)gw;
  return 0;
}

/* Adds the claim message to #claims here (which peers pull when rooms are
 * on) and hands it to the broker (when one is configured); the same msgId
 * on both, so a host that gets both keeps one. */
static int fl_publish(fl_gw *gw, fl_client *c, const char *type, json_t *payload, char *err,
                      size_t errlen) {
  char msg_id[FL_ID_LEN], *item = NULL;
  int rc = fl_rooms_publish(gw, c, FL_CLAIMS_ROOM, type, payload, msg_id, &item, err, errlen);
  json_decref(payload);
  if (rc)
    return rc;
  rc = fl_remote_publish_claim(gw, msg_id, item, strlen(item));
  fl_free(item);
  if (rc && gw->rooms->claims_only) {
    fl_errf(err, errlen,
            "the claim is recorded here but could not go to the broker (%s): other hosts do not "
            "see it yet; try again when the broker is back",
            fl_strerror(rc));
    return rc;
  }
  if (rc)
    fl_warn(NULL, "claims: %s went into #claims but not to the broker (%s)", type, fl_strerror(rc));
  return 0;
}

typedef struct fl_claim_wait {
  fl_gw *gw;
  char resource[FL_CLAIM_MAX_RESOURCE + 1];
} fl_claim_wait;

static void fl_claim_timeout(fl_wait *w) {
  fl_claim_wait *cw = w->ext;
  fl_claim_state st;
  char err[256];
  if (fl_state(cw->gw, cw->resource, &st, err, sizeof err) != 0)
    fl_wait_complete(w, NULL, err);
  else
    fl_wait_complete(w, fl_claim_result(cw->gw, w->client, cw->resource, &st), NULL);
}

static void fl_claim_forget(fl_wait *w) { fl_free(w->ext); }

static const fl_wait_ops fl_claim_wait_ops = {.timeout = fl_claim_timeout,
                                              .forget = fl_claim_forget};

int fl_gw_claim(fl_gw *gw, fl_client *c, const char *resource, double ttl_s, double wait_s,
                fl_gw_cb cb, void *ctx, json_t **result, fl_wait **wait, char *err, size_t errlen) {
  if (!gw->rooms) {
    *result = fl_degraded();
    return 0;
  }
  int rc = fl_check_args(gw, c, resource, err, errlen);
  if (rc)
    return rc;
  if (!(ttl_s >= 1 && ttl_s <= FL_CLAIM_MAX_TTL_S)) {
    fl_errf(err, errlen, "ttl_s must be 1 to %d seconds", FL_CLAIM_MAX_TTL_S);
    return FL_EINVAL;
  }
  fl_claim_state st;
  if ((rc = fl_state(gw, resource, &st, err, errlen)))
    return rc;
  fl_claim_agent me;
  fl_me(gw, c, &me);
  /* Held by another: no message, the answer is known. */
  if (!(st.owned && !fl_claim_agent_is(&st.owner, &me))) {
    if ((rc = fl_publish(gw, c, FL_MSG_ISSUED,
                         json_pack("{s:s, s:f}", "resource", resource, "ttl_s", ttl_s), err,
                         errlen)))
      return rc;
    if ((rc = fl_state(gw, resource, &st, err, errlen)))
      return rc;
  }
  json_t *res = fl_claim_result(gw, c, resource, &st);
  const char *status = json_string_value(json_object_get(res, "status"));
  if (wait_s <= 0 || strcmp(status, "tentative") != 0) {
    *result = res;
    return 0;
  }
  json_decref(res);
  double left = (double)(st.since_ms + fl_settle_ms(gw) - fl_now_ms()) / 1000.0 + 0.05;
  if (left > wait_s)
    left = wait_s;
  fl_claim_wait *cw = fl_calloc(1, sizeof *cw);
  if (!cw) {
    fl_errf(err, errlen, "out of memory");
    return FL_ENOMEM;
  }
  cw->gw = gw;
  fl_copy(cw->resource, sizeof cw->resource, resource);
  if ((rc = fl_wait_new(gw, c, FL_WAIT_POLL, &fl_claim_wait_ops, left > 0 ? left : 0.01, cb, ctx,
                        wait, err, errlen))) {
    fl_free(cw);
    return rc;
  }
  (*wait)->ext = cw;
  return 0;
}

/* Refuses unless c's agent owns resource now. */
static int fl_must_own(fl_gw *gw, fl_client *c, const char *resource, const char *verb, char *err,
                       size_t errlen) {
  fl_claim_state st;
  int rc = fl_state(gw, resource, &st, err, errlen);
  if (rc)
    return rc;
  fl_claim_agent me;
  fl_me(gw, c, &me);
  if (!st.owned) {
    fl_errf(err, errlen, "cannot %s '%s': nobody holds it (claim it with fleet_claim)", verb,
            resource);
    return FL_EINVAL;
  }
  if (!fl_claim_agent_is(&st.owner, &me)) {
    fl_errf(err, errlen, "cannot %s '%s': it is held by %s@%s, not by you; only the owner may",
            verb, resource, st.owner.name, st.owner.host);
    return FL_EINVAL;
  }
  return 0;
}

int fl_gw_release(fl_gw *gw, fl_client *c, const char *resource, json_t **result, char *err,
                  size_t errlen) {
  if (!gw->rooms) {
    *result = fl_degraded();
    return 0;
  }
  int rc;
  if ((rc = fl_check_args(gw, c, resource, err, errlen)) ||
      (rc = fl_must_own(gw, c, resource, "release", err, errlen)) ||
      (rc = fl_publish(gw, c, FL_MSG_RELEASED, json_pack("{s:s}", "resource", resource), err,
                       errlen)))
    return rc;
  *result = json_pack("{s:s, s:b}", "resource", resource, "released", 1);
  return 0;
}

int fl_gw_handoff(fl_gw *gw, fl_client *c, const char *resource, const char *to, json_t **result,
                  char *err, size_t errlen) {
  if (!gw->rooms) {
    *result = fl_degraded();
    return 0;
  }
  int rc;
  if ((rc = fl_check_args(gw, c, resource, err, errlen)) ||
      (rc = fl_must_own(gw, c, resource, "hand off", err, errlen)))
    return rc;
  fl_claim_agent target;
  memset(&target, 0, sizeof target);
  fl_entity *e = NULL;
  const char *at = to ? strchr(to, '@') : NULL;
  if (to && fl_roster_resolve(gw, to, &e, err, errlen) == 0 && e) {
    fl_copy(target.gid, sizeof target.gid, e->gid);
    fl_copy(target.name, sizeof target.name, e->name);
    fl_copy(target.host, sizeof target.host, e->remote ? e->host : gw->cfg.host_id);
  } else if (at && at != to && at[1] && (size_t)(at - to) <= FL_MAX_NAME) {
    /* An agent of a host this gateway hears only through rooms. */
    snprintf(target.name, sizeof target.name, "%.*s", (int)(at - to), to);
    fl_copy(target.host, sizeof target.host, at + 1);
  } else {
    fl_errf(err, errlen,
            "cannot hand '%s' to '%s': no such agent here (give a name, a gid, or name@host)",
            resource, to ? to : "");
    return FL_ENOTFOUND;
  }
  if ((rc = fl_publish(gw, c, FL_MSG_HANDOFF,
                       json_pack("{s:s, s:o}", "resource", resource, "to", fl_agent_json(&target)),
                       err, errlen)))
    return rc;
  fl_claim_state st;
  if ((rc = fl_state(gw, resource, &st, err, errlen)))
    return rc;
  *result = json_pack("{s:s, s:o, s:b}", "resource", resource, "owner", fl_agent_json(&st.owner),
                      "handedOff", 1);
  return 0;
}

int fl_gw_claims(fl_gw *gw, fl_client *c, const char *resource, json_t **result, char *err,
                 size_t errlen) {
  (void)c;
  if (!gw->rooms) {
    *result = fl_degraded();
    return 0;
  }
  fl_events ev;
  int rc = fl_events_load(gw, &ev);
  if (rc) {
    fl_errf(err, errlen, "cannot read the #claims room (%s); see fleetd's log", fl_strerror(rc));
    return rc;
  }
  json_t *arr = json_array();
  long long now = fl_now_ms();
  fl_claim_state st;
  fl_claim_compute(ev.v, ev.n, "", now, &st); /* sorts once: the order is total */
  /* Each resource once, in the order of its first event. */
  for (size_t i = 0; i < ev.n; i++) {
    const char *r = ev.v[i].resource;
    if (resource && strcmp(r, resource) != 0)
      continue;
    int seen = 0;
    for (size_t k = 0; k < i && !seen; k++)
      seen = strcmp(ev.v[k].resource, r) == 0;
    if (seen)
      continue;
    char name[FL_CLAIM_MAX_RESOURCE + 1];
    fl_copy(name, sizeof name, r);
    fl_claim_compute(ev.v, ev.n, name, now, &st);
    if (!st.owned)
      continue;
    char exp[FL_TS_LEN], since[FL_TS_LEN];
    fl_rfc3339(st.expires_ms, exp);
    fl_rfc3339(st.since_ms, since);
    json_array_append_new(arr, json_pack("{s:s, s:o, s:s, s:s, s:b}", "resource", name, "owner",
                                         fl_agent_json(&st.owner), "expiresAt", exp, "since", since,
                                         "settled", now >= st.since_ms + fl_settle_ms(gw)));
  }
  fl_free(ev.v);
  *result = json_pack("{s:o}", "claims", arr);
  return 0;
}
