/* presence.c — presence beats sent and taken, remote status, and the
 * parking of deliveries that overtake their sender's first beat.
 *
 * Sending: each interval, and when the link comes up, one host beat under
 * roster.<host>._gateway carries this fleetd's version, its profiles and
 * its local entities (beat.h); an entity is announced alone under
 * roster.<host>.<gid> when it joins, changes or leaves, and every interval
 * too while some peer's host beat lists no entities (a gateway that expects
 * one beat per entity). Beats are signed like messages and expire after the
 * TTL.
 *
 * Taking: a beat from another host is checked (key and kind match the host,
 * the signature verifies under its pinned key, the body parses, it is fresh,
 * its gid lives nowhere else, the roster has room) and upserts a remote
 * entity, or, for a host beat, every entity it lists. Who lives where is remembered in the store
 * (only when it changed, not every beat), so a message that waited in an inbox while this gateway
 * was down can be checked against it after a restart. Remote entities are
 * soft state: offline once the TTL passes, unknown while the link is down.
 * A refused beat is counted every time but logged once per host per minute
 * (a host that is not pinned refuses the same way every beat of every
 * entity); the names an unpinned host announced are kept as a hint for a
 * sender who names one. An entity dropped when its host was unpinned comes
 * back with its host's next verified beat.
 *
 * Parking: a message whose sender no beat has announced yet waits here,
 * unacked, for at most an interval and a second; the beat releases it into
 * the receive checks again, the timer dead-letters it. */
#include "gateway/fabric/presence.h"

#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/json_writer.h"
#include "common/log.h"
#include "gateway/config/config.h"
#include "gateway/core/forward.h"
#include "gateway/core/gw_internal.h"
#include "gateway/fabric/refusals.h"
#include "gateway/fabric/wire.h"
#include "gateway/proto/sign.h"
#include "gateway/proto/topology.h"
#include "gateway/store/store_gids.h"

/* How often parked deliveries are checked for their time being up. */
#define FL_PARK_TICK_MS 250
/* Grace past one presence interval before a parked delivery gives up: the
 * beat it waits for is sent at most an interval after the agent joined. */
#define FL_PARK_GRACE_MS 1000
/* A host whose beats keep being refused (not pinned, wrong key) is logged
 * once, then once a window with the count of beats refused meanwhile. */
#define FL_REFUSAL_LOG_WINDOW_MS 60000
/* How long the names a refused host announced stay a hint for errors. */
#define FL_REFUSAL_CLAIM_TTL_MS (5 * 60000)

/* A delivery whose sender no presence has announced yet. */
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

/* Another host as its last taken _gateway beat said. */
typedef struct fl_host_seen {
  struct fl_host_seen *next;
  char host[FL_MAX_NAME + 1];
  long long ts_ms;         /* the beat's own stamp, against replays */
  long long expires_ms;    /* when it reads unknown, on our monotonic clock */
  fl_profile_ad *profiles; /* owned; nprofiles of them, as its last beat said */
  size_t nprofiles;
  int lists_agents; /* its host beat lists its entities (beat.h) */
  int minor;        /* its host beat's envelope minor (of our major; else -1): the forms it reads */
} fl_host_seen;

struct fl_presence {
  fl_gw *gw;
  fl_inbound *in;    /* where released parked deliveries go */
  fl_broker *broker; /* borrowed; NULL until started */
  int up;            /* the link is up, as last reported */
  int started;       /* the timers are open */
  unsigned interval_ms, ttl_ms;
  uv_timer_t beat_timer;
  fl_parked *parked;
  size_t nparked;
  uv_timer_t park_timer;
  fl_refusals refusals; /* hosts whose beats are refused, for the log */
  fl_host_seen *hosts;  /* other hosts' _gateway beats, at most FL_MAX_HOSTS */
  size_t nhosts;
  /* Refused gid claims are logged once a window (a rogue host repeats them
   * every beat, for every gid it lists): when the last line went out, and
   * how many were refused since. */
  long long gid_log_ms;
  unsigned long gid_unlogged;
};

/* ---- life cycle ------------------------------------------------------------- */

int fl_presence_new(fl_gw *gw, fl_inbound *in, unsigned interval_ms, unsigned ttl_ms,
                    fl_presence **out) {
  *out = NULL;
  fl_presence *p = fl_calloc(1, sizeof *p);
  if (!p)
    return FL_ENOMEM;
  p->gw = gw;
  p->in = in;
  p->interval_ms = interval_ms;
  p->ttl_ms = ttl_ms;
  *out = p;
  return 0;
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
  /* Its host was unpinned while we were down: not believed until then. */
  fl_entity_set_dropped(e, !fl_roster_host_trusted(gw, r->host));
  fl_copy(e->role, sizeof e->role, r->role);
  fl_entity_set_groups(e, r->groups);
}

void fl_presence_load(fl_presence *p) {
  if (fl_store_remote_each(p->gw->store, fl_remote_load_cb, p->gw) != 0)
    fl_gw_count(p->gw, FL_C_STORE_ERRORS);
}

static void fl_presence_tick(uv_timer_t *t);
static void fl_park_tick(uv_timer_t *t);

void fl_presence_start(fl_presence *p, fl_broker *b) {
  p->broker = b;
  uv_timer_init(p->gw->loop, &p->park_timer);
  p->park_timer.data = p;
  uv_timer_init(p->gw->loop, &p->beat_timer);
  p->beat_timer.data = p;
  uv_timer_start(&p->beat_timer, fl_presence_tick, p->interval_ms, p->interval_ms);
  p->started = 1;
}

static void fl_park_clear(fl_presence *p);

void fl_presence_stop(fl_presence *p) {
  if (!p || !p->started)
    return;
  uv_close((uv_handle_t *)&p->beat_timer, NULL);
  uv_close((uv_handle_t *)&p->park_timer, NULL);
  p->started = 0;
  p->up = 0;
  p->broker = NULL;
}

void fl_presence_free(fl_presence **pp) {
  if (!pp || !*pp)
    return;
  fl_park_clear(*pp);
  while ((*pp)->hosts) {
    fl_host_seen *n = (*pp)->hosts->next;
    fl_free((*pp)->hosts->profiles);
    fl_free((*pp)->hosts);
    (*pp)->hosts = n;
  }
  fl_free(*pp);
  *pp = NULL;
}

/* ---- sending ---------------------------------------------------------------- */

/* Signs body (stolen) as a PRESENCE envelope from `from` and publishes it
 * under key. A beat that does not go out is followed by the next one. */
static void fl_presence_send(fl_presence *p, const char *key, const char *from, const char *name,
                             json_t *body) {
  fl_gw *gw = p->gw;
  char *text = json_dumps(body, JSON_COMPACT);
  json_decref(body);
  if (!text)
    return;
  fl_envelope env;
  memset(&env, 0, sizeof env);
  fl_copy(env.v, sizeof env.v, FL_ENVELOPE_VERSION);
  fl_copy(env.kind, sizeof env.kind, fl_envelope_kind_name(FL_KIND_PRESENCE));
  fl_uuid(env.msg_id);
  fl_copy(env.from, sizeof env.from, from);
  fl_copy(env.from_name, sizeof env.from_name, name);
  fl_copy(env.host, sizeof env.host, gw->cfg.host_id);
  long long now = fl_now_ms();
  fl_rfc3339(now, env.ts);
  fl_rfc3339(now + p->ttl_ms, env.expires_at);
  /* Presence stays readable (no recipient host): signed, not sealed. */
  int rc = fl_wire_publish(gw, p->broker, FL_EX_ROSTER, key, 0, &env, text, strlen(text), NULL,
                           NULL, NULL, 0);
  if (rc)
    fl_debug(NULL, "presence for %s not sent: %s", key, fl_strerror(rc));
  fl_free(text);
}

/* The body of local entity e's beat (beat.h). */
static json_t *fl_entity_beat(fl_gw *gw, const fl_entity *e) {
  json_t *body =
      fl_beat_json(e->name, e->role, (const char(*)[FL_MAX_GROUP_NAME + 1]) e->groups, e->ngroups,
                   e->client ? "online" : "offline", fl_forward_delivery(gw, e));
  /* Senders on other hosts refuse to send into an inbox not consumed. */
  if (body && e->inbox_degraded)
    json_object_set_new(body, "inbox", json_string("degraded"));
  return body;
}

void fl_presence_entity(fl_presence *p, fl_entity *e) {
  if (!p->up || !p->broker || e->remote || e->removed)
    return;
  fl_gw *gw = p->gw;
  char key[256];
  if (fl_topology_roster_key(key, sizeof key, gw->cfg.host_id, e->gid) != 0)
    return;
  fl_presence_send(p, key, e->gid, e->name, fl_entity_beat(gw, e));
}

void fl_presence_gone(fl_presence *p, const fl_entity *e) {
  if (!p->up || !p->broker || e->remote)
    return;
  char key[256];
  if (fl_topology_roster_key(key, sizeof key, p->gw->cfg.host_id, e->gid) != 0)
    return;
  fl_presence_send(p, key, e->gid, e->name, fl_beat_json(e->name, e->role, NULL, 0, "gone", NULL));
}

void fl_presence_forget(fl_presence *p, const char *host, const char *gid, long long beat_ts_ms) {
  fl_gw *gw = p->gw;
  fl_entity *e = fl_entity_by_gid(gw, gid);
  if (!e || !e->remote || strcmp(e->host, host) != 0)
    return;
  if (!e->dropped)
    fl_info(NULL, "roster: '%s' on host '%s' is gone (gid %s)", e->name, host, gid);
  fl_entity_set_dropped(e, 1);
  e->presence.online = 0;
  e->presence.expires_ms = 0;
  if (beat_ts_ms > e->presence.ts_ms)
    e->presence.ts_ms = beat_ts_ms;
  if (fl_store_remote_delete(gw->store, gid) != 0)
    fl_gw_count(gw, FL_C_STORE_ERRORS);
}

int fl_presence_host_minor(const fl_presence *p, const char *host) {
  /* Asked once per publish (a broadcast, once per host): the list is
   * sorted by host, so the walk stops where host would be. */
  for (const fl_host_seen *h = p ? p->hosts : NULL; h; h = h->next) {
    int cmp = strcmp(h->host, host);
    if (cmp >= 0)
      return cmp == 0 ? h->minor : -1;
  }
  return -1;
}

int fl_presence_peers_need_entity_beats(const fl_presence *p) {
  long long now = fl_mono_ms();
  for (const fl_host_seen *h = p->hosts; h; h = h->next)
    if (!h->lists_agents && now <= h->expires_ms && fl_roster_host_trusted(p->gw, h->host))
      return 1;
  return 0;
}

/* The interval's beats: one host beat listing the local entities (up to
 * FL_MAX_BEAT_AGENTS; any past that beat alone), or, while some peer still
 * expects them, an entity beat for each as well. */
static void fl_presence_all(fl_presence *p) {
  if (!p->up || !p->broker)
    return;
  fl_gw *gw = p->gw;
  int each = fl_presence_peers_need_entity_beats(p);
  json_t *agents = json_array();
  size_t local = 0;
  for (fl_entity *e = gw->entities; agents && e; e = e->next) {
    if (e->remote || e->removed)
      continue;
    local++;
    if (each || json_array_size(agents) >= FL_MAX_BEAT_AGENTS)
      fl_presence_entity(p, e);
    if (json_array_size(agents) < FL_MAX_BEAT_AGENTS &&
        fl_beat_list(agents, e->gid, fl_entity_beat(gw, e)) != 0) {
      json_decref(agents);
      agents = NULL;
    }
  }
  char key[256];
  if (!agents || fl_topology_roster_key(key, sizeof key, gw->cfg.host_id, FL_GID_GATEWAY) != 0) {
    json_decref(agents);
    return;
  }
  /* The profiles make an agentless host visible as a spawn target. */
  fl_presence_send(p, key, "", FL_GID_GATEWAY,
                   fl_beat_gateway_json(gw->cfg.host_id, FLEET_VERSION, local,
                                        fl_config_profiles_json(&gw->cfg), agents));
}

static void fl_presence_tick(uv_timer_t *t) { fl_presence_all(t->data); }

void fl_presence_link(fl_presence *p, int up) {
  p->up = up;
  if (up)
    fl_presence_all(p);
  else
    fl_park_clear(p); /* unacked: they come back with the reconnect */
}

const char *fl_presence_status(const fl_presence *p, const fl_entity *e) {
  if (!p->up)
    return "unknown";
  if (e->dropped || fl_mono_ms() > e->presence.expires_ms)
    return "offline";
  return e->presence.online ? "online" : "offline";
}

/* ---- other hosts ------------------------------------------------------------ */

static void fl_ad_write(fl_jw *w, const fl_profile_ad *ad) {
  fl_jw_obj_open(w);
  fl_jw_key(w, "name");
  fl_jw_str(w, ad->name);
  fl_jw_key(w, "backend");
  fl_jw_str(w, ad->backend);
  fl_jw_key(w, "role");
  fl_jw_str(w, ad->role);
  fl_jw_key(w, "groups");
  fl_jw_arr_open(w);
  for (size_t i = 0; i < ad->ngroups; i++)
    fl_jw_str(w, ad->groups[i]);
  fl_jw_arr_close(w);
  fl_jw_obj_close(w);
}

/* Written, not built as trees: a fleet_list of 200 hosts built them all
 * on every call. */
void fl_presence_hosts_write(fl_presence *p, fl_jw *w) {
  long long now = fl_mono_ms();
  for (fl_host_seen *h = p->hosts; h; h = h->next) {
    if (!fl_roster_host_trusted(p->gw, h->host))
      continue; /* unpinned since: not believed */
    fl_jw_obj_open(w);
    fl_jw_key(w, "host");
    fl_jw_str(w, h->host);
    fl_jw_key(w, "self");
    fl_jw_bool(w, 0);
    fl_jw_key(w, "status");
    fl_jw_str(w, p->up && now <= h->expires_ms ? "online" : "unknown");
    fl_jw_key(w, "profiles");
    fl_jw_arr_open(w);
    for (size_t i = 0; i < h->nprofiles; i++)
      fl_ad_write(w, &h->profiles[i]);
    fl_jw_arr_close(w);
    fl_jw_obj_close(w);
  }
}

static void fl_hosts_write_cb(void *ctx, fl_jw *w) { fl_presence_hosts_write(ctx, w); }

json_t *fl_presence_hosts(fl_presence *p) { return fl_jw_array_of(fl_hosts_write_cb, p); }

static void fl_presence_take_listed(fl_presence *p, const char *host, const fl_listed_beat *l,
                                    long long ts_ms);

/* Takes a verified _gateway beat of host: its profiles replace the ones
 * its last beat announced (the hosts are kept sorted), and every entity it
 * lists is taken as its own beat would be. */
static void fl_presence_take_gateway(fl_presence *p, const fl_broker_delivery *d) {
  const fl_envelope *env = d->env;
  fl_host_seen **at = &p->hosts;
  while (*at && strcmp((*at)->host, env->host) < 0)
    at = &(*at)->next;
  fl_host_seen *h = (*at && strcmp((*at)->host, env->host) == 0) ? *at : NULL;
  long long ts = 0;
  if (fl_beat_fresh(env->ts, env->expires_at, fl_now_ms(), h ? &h->ts_ms : NULL, &ts) != 0) {
    fl_gw_count(p->gw, FL_C_PRESENCE_REFUSED);
    fl_warn(NULL,
            "gateway presence from host '%s' is expired or older than one already taken: "
            "ignored",
            env->host);
    return;
  }
  fl_gateway_beat *b = fl_malloc(sizeof *b);
  if (!b)
    return;
  int rc = fl_beat_parse_gateway(d->body, d->len, env->host, b);
  if (rc != 0) {
    if (rc == FL_EINVAL) {
      fl_gw_count(p->gw, FL_C_PRESENCE_REFUSED);
      fl_warn(NULL, "gateway presence from host '%s' is malformed: ignored", env->host);
    }
    fl_free(b);
    return;
  }
  /* Only the profiles it announced are kept, not room for FL_MAX_PROFILES:
   * most hosts offer a few, or none. */
  fl_profile_ad *ads = NULL;
  if (b->nprofiles && !(ads = fl_malloc(b->nprofiles * sizeof *ads))) {
    fl_beat_gateway_clear(b);
    fl_free(b);
    return;
  }
  if (b->nprofiles)
    memcpy(ads, b->profiles, b->nprofiles * sizeof *ads);
  if (!h) {
    if (p->nhosts >= FL_MAX_HOSTS || !(h = fl_calloc(1, sizeof *h))) {
      fl_gw_count(p->gw, FL_C_PRESENCE_REFUSED);
      fl_warn(NULL, "%d hosts are known already: the gateway presence of host '%s' is ignored",
              FL_MAX_HOSTS, env->host);
      fl_free(ads);
      fl_beat_gateway_clear(b);
      fl_free(b);
      return;
    }
    fl_copy(h->host, sizeof h->host, env->host);
    h->next = *at;
    *at = h;
    p->nhosts++;
    fl_info(NULL, "host '%s' announces %zu spawn profile(s)", env->host, b->nprofiles);
  }
  fl_free(h->profiles);
  h->profiles = ads;
  h->nprofiles = b->nprofiles;
  h->lists_agents = b->lists_agents;
  h->minor = fl_envelope_major(env) == FL_ENVELOPE_MAJOR ? fl_envelope_minor(env) : -1;
  h->ts_ms = ts;
  h->expires_ms = fl_mono_ms() + p->ttl_ms;
  for (size_t i = 0; i < b->nagents; i++)
    fl_presence_take_listed(p, env->host, &b->agents[i], ts);
  if (b->agents_dropped) {
    for (size_t i = 0; i < b->agents_dropped; i++)
      fl_gw_count(p->gw, FL_C_PRESENCE_REFUSED);
    fl_warn(NULL,
            "gateway presence from host '%s' lists %zu malformed entr%s (or more than %d): "
            "ignored",
            env->host, b->agents_dropped, b->agents_dropped == 1 ? "y" : "ies", FL_MAX_BEAT_AGENTS);
  }
  fl_beat_gateway_clear(b);
  fl_free(b);
}

/* ---- taking ----------------------------------------------------------------- */

static void fl_unpark(fl_presence *p, const char *gid);

/* A gid belongs for good to the host that first announced it (store_gids.h):
 * 1 (counted and logged) when host's claim on gid must be refused. The store
 * is asked only when the roster does not already place gid on host, which
 * is every beat but a host's first of each entity. Should the store fail,
 * the roster alone judges: a gid that lives here, or on another host whose
 * presence is live, is refused. */
static int fl_presence_gid_refused(fl_presence *p, const char *host, const char *gid,
                                   const fl_entity *e) {
  fl_gw *gw = p->gw;
  if (e && e->remote && !e->dropped && strcmp(e->host, host) == 0)
    return 0;
  char owner[FL_MAX_NAME + 1] = "";
  int rc = fl_store_gid_owner(gw->store, gid, owner, sizeof owner);
  int refused;
  if (rc == 0) {
    refused = strcmp(owner, host) != 0;
  } else {
    if (rc != FL_ENOTFOUND)
      fl_gw_count(gw, FL_C_STORE_ERRORS);
    /* Released (or unreadable): another host's live claim still stands. */
    refused = e && (!e->remote || (strcmp(e->host, host) != 0 && !e->dropped &&
                                   e->presence.expires_ms > fl_mono_ms()));
    if (refused)
      fl_copy(owner, sizeof owner, e->remote ? e->host : "");
  }
  if (!refused)
    return 0;
  fl_gw_count(gw, FL_C_PRESENCE_REFUSED);
  fl_gw_count(gw, FL_C_PRESENCE_GID_REFUSED);
  long long now = fl_mono_ms();
  if (p->gid_log_ms && now - p->gid_log_ms < FL_REFUSAL_LOG_WINDOW_MS) {
    p->gid_unlogged++;
    return 1;
  }
  fl_warn(NULL,
          "host '%s' claims gid %s, which belongs to host '%s': refused (a gid stays with the "
          "host that first announced it; `fleetctl gid release %s` on this host lets it move); "
          "%lu more refused since the last such line, further ones logged once a minute",
          host, gid, owner[0] ? owner : gw->cfg.host_id, gid, p->gid_unlogged);
  p->gid_log_ms = now;
  p->gid_unlogged = 0;
  return 1;
}

int fl_presence_take(fl_presence *p, const char *host, const char *gid, const fl_beat *b,
                     long long beat_ts_ms) {
  fl_gw *gw = p->gw;
  long long now = fl_now_ms();
  fl_entity *e = fl_entity_by_gid(gw, gid);
  if (fl_presence_gid_refused(p, host, gid, e))
    return FL_EINVAL;
  if (!e && gw->nentities >= FL_MAX_ENTITIES &&
      fl_roster_reclaim(gw, FL_ROSTER_RECLAIM_BATCH) == 0) {
    fl_gw_count(gw, FL_C_PRESENCE_REFUSED);
    fl_warn(NULL, "roster is full (%d entities): presence of '%s' on host '%s' ignored",
            FL_MAX_ENTITIES, b->name, host);
    return FL_EFULL;
  }
  fl_entity_rec before;
  if (e)
    fl_entity_rec_of(e, &before);
  else
    memset(&before, 0, sizeof before);
  if (e && e->dropped) {
    /* Dropped when its host was unpinned; pinned again, it is back. */
    fl_entity_set_dropped(e, 0);
    memset(&before, 0, sizeof before); /* the store forgot it: write it again */
    fl_info(NULL, "roster: '%s' on host '%s' is back (gid %s)", b->name, host, gid);
  }
  if (!e) {
    e = fl_entity_new(gw, gid, b->name);
    if (!e)
      return FL_ENOMEM;
    e->remote = 1;
    fl_info(NULL, "roster: '%s' on host '%s' (gid %s)", b->name, host, gid);
  }
  fl_entity_set_name(e, b->name);
  fl_copy(e->host, sizeof e->host, host);
  fl_copy(e->role, sizeof e->role, b->role);
  e->ngroups = 0;
  for (size_t i = 0; i < b->ngroups && i < FL_MAX_GROUPS; i++)
    fl_copy(e->groups[e->ngroups++], FL_MAX_GROUP_NAME + 1, b->groups[i]);
  e->presence.online = b->online;
  e->delivery_inject = b->inject;
  e->inbox_degraded = b->inbox_degraded;
  e->presence.ts_ms = beat_ts_ms;
  e->presence.expires_ms = fl_mono_ms() + p->ttl_ms;
  e->last_seen_ms = now;
  /* Remember who lives where (only when it changed, not every beat). */
  fl_entity_rec after;
  fl_entity_rec_of(e, &after);
  if (memcmp(&before, &after, sizeof after) != 0) {
    fl_entity_listed_forget(e);
    if (fl_store_remote_put(gw->store, &after) != 0)
      fl_gw_count(gw, FL_C_STORE_ERRORS);
  }
  if (p->parked)
    fl_unpark(p, gid);
  return 0;
}

/* Takes one entity a host beat of host (stamped ts_ms) lists, as an
 * entity beat of its own would be taken. Older than a beat of it already
 * taken, it is a replay: counted and ignored (the host beat's own log line
 * covers it). */
static void fl_presence_take_listed(fl_presence *p, const char *host, const fl_listed_beat *l,
                                    long long ts_ms) {
  fl_gw *gw = p->gw;
  fl_gw_count(gw, FL_C_PRESENCE_RECEIVED);
  const fl_entity *e = fl_entity_by_gid(gw, l->gid);
  if (e && e->remote && ts_ms < e->presence.ts_ms) {
    fl_gw_count(gw, FL_C_PRESENCE_REFUSED);
    return;
  }
  if (l->b.gone)
    fl_presence_forget(p, host, l->gid, ts_ms);
  else
    fl_presence_take(p, host, l->gid, &l->b, ts_ms);
}

/* A beat failed the origin checks (counter bad, why says which): logs it,
 * once per host per window with the count (every beat of every entity of
 * such a host fails the same way), and remembers the name an unpinned host
 * announced, as a hint for a sender who names it. */
static void fl_presence_refused(fl_presence *p, const fl_broker_delivery *d, const char *gid,
                                int bad, const char *why) {
  const char *host = d->env->host;
  long long now = fl_mono_ms();
  unsigned long n = 0;
  long long span = 0;
  if (fl_refusals_note(&p->refusals, host, bad, now, FL_REFUSAL_LOG_WINDOW_MS, &n, &span)) {
    if (span == 0)
      fl_warn(NULL,
              "presence from host '%s' ignored: %s; further beats refused for this reason are "
              "counted and logged once a minute",
              host, why);
    else
      fl_warn(NULL, "presence from host '%s' ignored: %s; %lu beats refused in the last %lld s",
              host, why, n, span / 1000);
  }
  if (bad != FL_C_VERIFY_UNPINNED || !host[0])
    return;
  if (strcmp(gid, FL_GID_GATEWAY) != 0) {
    fl_beat b;
    if (fl_beat_parse(d->body, d->len, &b) == 0)
      fl_refusals_claim(&p->refusals, host, b.name);
    return;
  }
  fl_gateway_beat *gb = fl_malloc(sizeof *gb);
  if (gb && fl_beat_parse_gateway(d->body, d->len, host, gb) == 0) {
    for (size_t i = 0; i < gb->nagents; i++)
      fl_refusals_claim(&p->refusals, host, gb->agents[i].b.name);
    fl_beat_gateway_clear(gb);
  }
  fl_free(gb);
}

int fl_presence_unpinned_claim(fl_presence *p, const char *name, char *host, size_t hostlen) {
  return fl_refusals_claimed(&p->refusals, name, fl_mono_ms(), FL_REFUSAL_CLAIM_TTL_MS, host,
                             hostlen);
}

void fl_presence_receive(fl_presence *p, const fl_broker_delivery *d) {
  fl_gw *gw = p->gw;
  const fl_envelope *env = d->env;
  if (strcmp(env->host, gw->cfg.host_id) == 0)
    return; /* our own beat, back from roster.# */
  const char *key = d->routing_key;
  const char *gid = env->host[0] ? fl_topology_roster_key_gid(key, env->host) : NULL;
  if (!gid || !fl_envelope_is_kind(env->kind, FL_KIND_PRESENCE)) {
    fl_gw_count(gw, FL_C_PRESENCE_REFUSED);
    fl_warn(NULL, "presence on key %s claims host '%s': ignored", key, env->host);
    return;
  }
  char why[160];
  int bad = fl_inbound_verify_origin(gw, d, why, sizeof why);
  if (bad) {
    fl_gw_count(gw, bad);
    fl_gw_count(gw, FL_C_PRESENCE_REFUSED);
    fl_presence_refused(p, d, gid, bad, why);
    return;
  }
  if (p->refusals.n)
    fl_refusals_forget(&p->refusals, env->host);
  if (strcmp(gid, FL_GID_GATEWAY) == 0) {
    fl_presence_take_gateway(p, d);
    return;
  }
  fl_gw_count(gw, FL_C_PRESENCE_RECEIVED);
  if (!fl_is_uuid(gid) || strcmp(gid, env->from) != 0) {
    fl_gw_count(gw, FL_C_PRESENCE_REFUSED);
    fl_warn(NULL, "presence from host '%s' for '%s' is malformed: ignored", env->host, gid);
    return;
  }
  fl_beat b;
  if (fl_beat_parse(d->body, d->len, &b) != 0) {
    fl_gw_count(gw, FL_C_PRESENCE_REFUSED);
    fl_warn(NULL, "presence from host '%s' for %s has no valid name/status: ignored", env->host,
            gid);
    return;
  }
  fl_entity *e = fl_entity_by_gid(gw, gid);
  long long beat_ts = 0;
  if (fl_beat_fresh(env->ts, env->expires_at, fl_now_ms(),
                    (e && e->remote) ? &e->presence.ts_ms : NULL, &beat_ts) != 0) {
    /* Signed but stale: an old beat replayed must not revive an entity. */
    fl_gw_count(gw, FL_C_PRESENCE_REFUSED);
    fl_warn(NULL,
            "presence from host '%s' for %s is expired or older than one already "
            "taken: ignored",
            env->host, gid);
    return;
  }
  if (b.gone) {
    fl_presence_forget(p, env->host, gid, beat_ts);
    return;
  }
  fl_presence_take(p, env->host, gid, &b, beat_ts);
}

/* ---- parking ---------------------------------------------------------------- */

static void fl_parked_delivery(const fl_parked *pk, fl_broker_delivery *d) {
  memset(d, 0, sizeof *d);
  d->tag = pk->tag;
  d->source = FL_BROKER_INBOX;
  d->gid = pk->gid;
  d->exchange = FL_EX_MSG;
  d->routing_key = pk->key;
  d->redelivered = pk->redelivered;
  d->env = &pk->env;
  d->body = pk->body;
  d->len = pk->len;
}

static void fl_parked_free(fl_parked *pk) {
  if (pk) {
    fl_free(pk->body);
    fl_free(pk);
  }
}

int fl_presence_park(fl_presence *p, const fl_broker_delivery *d) {
  if (!p->started || p->nparked >= FL_MAX_PARKED)
    return FL_EFULL;
  if (strlen(d->routing_key) >= sizeof(((fl_parked *)0)->key))
    return FL_ETOOBIG;
  fl_parked *pk = fl_calloc(1, sizeof *pk);
  if (!pk || (d->len && !(pk->body = fl_malloc(d->len)))) {
    fl_free(pk);
    return FL_ENOMEM;
  }
  if (d->len)
    memcpy(pk->body, d->body, d->len);
  pk->len = d->len;
  pk->tag = d->tag;
  pk->redelivered = d->redelivered;
  pk->env = *d->env;
  fl_copy(pk->gid, sizeof pk->gid, d->gid);
  fl_copy(pk->key, sizeof pk->key, d->routing_key);
  pk->until_ms = fl_mono_ms() + p->interval_ms + FL_PARK_GRACE_MS;
  pk->next = p->parked;
  p->parked = pk;
  p->nparked++;
  if (!uv_is_active((uv_handle_t *)&p->park_timer))
    uv_timer_start(&p->park_timer, fl_park_tick, FL_PARK_TICK_MS, FL_PARK_TICK_MS);
  fl_info(pk->env.trace_id, "%s %s from unannounced %s@%s waits for its presence", pk->env.kind,
          pk->env.msg_id, pk->env.from, pk->env.host);
  return 0;
}

/* Takes out the parked deliveries that match (from gid, or every one whose
 * time is up when gid is NULL) and runs them through the receive path. */
static void fl_unpark(fl_presence *p, const char *gid) {
  long long now = fl_mono_ms();
  fl_parked *ready = NULL;
  for (fl_parked **pp = &p->parked; *pp;) {
    fl_parked *pk = *pp;
    if (gid ? strcmp(pk->env.from, gid) == 0 : pk->until_ms <= now) {
      *pp = pk->next;
      p->nparked--;
      pk->next = ready;
      ready = pk;
    } else {
      pp = &pk->next;
    }
  }
  while (ready) {
    fl_parked *pk = ready;
    ready = pk->next;
    fl_broker_delivery d;
    fl_parked_delivery(pk, &d);
    if (gid)
      fl_inbound_receive(p->in, &d);
    else
      fl_inbound_dead_letter(p->in, &d, FL_C_VERIFY_MISATTRIBUTED,
                             "no presence ever announced `from` on the signing host");
    fl_parked_free(pk);
  }
  if (!p->parked && p->started)
    uv_timer_stop(&p->park_timer);
}

static void fl_park_tick(uv_timer_t *t) { fl_unpark(t->data, NULL); }

static void fl_park_clear(fl_presence *p) {
  while (p->parked) {
    fl_parked *n = p->parked->next;
    fl_parked_free(p->parked);
    p->parked = n;
  }
  p->nparked = 0;
}
