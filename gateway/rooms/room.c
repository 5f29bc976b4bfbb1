/* room.c — the registered rooms, their verbs, and the route that serves
 * them (see room.h). */
#include "gateway/rooms/room.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/log.h"
#include "gateway/rooms/claims.h"
#include "gateway/rooms/room_internal.h"

/* A watch waiting for a room's next message. */
struct fl_room_watch {
  fl_room_watch *next;
  fl_rooms *r;
  fl_wait *wait;
  char room_id[FL_ROOM_ID_SIZE];
  long long after;
  size_t max;
};

static json_t *fl_degraded(void) {
  return json_pack("{s:b, s:s}", "degraded", 1, "reason",
                   "rooms are not configured on this host (set \"rooms\" in fleetd.json)");
}

fl_room *fl_rooms_find(fl_rooms *r, const char *room) {
  if (!r || !room)
    return NULL;
  char id[FL_ROOM_ID_SIZE];
  if (!fl_room_id_valid(room) && fl_room_id(room, id) != 0)
    return NULL;
  const char *want = fl_room_id_valid(room) ? room : id;
  for (size_t i = 0; i < r->nrooms; i++)
    if (strcmp(r->rooms[i].id, want) == 0)
      return &r->rooms[i];
  return NULL;
}

fl_room_peer *fl_rooms_peer(fl_rooms *r, const char *host) {
  for (fl_room_peer *p = r->peers; p; p = p->next)
    if (strcmp(p->host, host) == 0)
      return p;
  fl_room_peer *p = fl_calloc(1, sizeof *p);
  if (!p)
    return NULL;
  fl_copy(p->host, sizeof p->host, host);
  p->next = r->peers;
  r->peers = p;
  return p;
}

/* ---- reading a room ---------------------------------------------------------- */

typedef struct fl_read {
  json_t *messages;
  long long cursor;
} fl_read;

static void fl_read_row(void *ctx, long long seq, const char *item, int hops) {
  fl_read *rd = ctx;
  rd->cursor = seq;
  fl_room_msg m;
  json_t *o = fl_room_item_load(item, &m);
  if (!o)
    return; /* stored only after these checks: cannot happen */
  json_t *from = m.env.from[0] ? json_pack("{s:s, s:s, s:s}", "gid", m.env.from, "name",
                                           m.env.from_name, "host", m.env.host)
                               : NULL;
  json_array_append_new(
      rd->messages, json_pack("{s:s, s:s, s:o*, s:s, s:O, s:s, s:i, s:I}", "msgId", m.env.msg_id,
                              "origin", m.env.host, "from", from, "msgType", m.msg_type, "payload",
                              m.payload, "ts", m.env.ts, "hops", hops, "seq", (json_int_t)seq));
  fl_room_msg_clear(&m);
  json_decref(o);
}

/* {messages, cursor} of room_id after after, at most max; NULL on a store
 * failure. */
static json_t *fl_read_room(fl_rooms *r, const char *room_id, long long after, size_t max) {
  fl_read rd = {json_array(), after};
  if (fl_store_room_after(r->gw->store, room_id, after, max, fl_read_row, &rd) < 0) {
    fl_gw_count(r->gw, FL_C_STORE_ERRORS);
    json_decref(rd.messages);
    return NULL;
  }
  return json_pack("{s:s, s:o, s:I}", "roomId", room_id, "messages", rd.messages, "cursor",
                   (json_int_t)rd.cursor);
}

/* ---- watches ----------------------------------------------------------------- */

static void fl_watch_unlink(fl_room_watch *w) {
  for (fl_room_watch **pp = &w->r->watches; *pp; pp = &(*pp)->next)
    if (*pp == w) {
      *pp = w->next;
      return;
    }
}

static void fl_watch_timeout(fl_wait *wt) {
  fl_room_watch *w = wt->ext;
  json_t *res = fl_read_room(w->r, w->room_id, w->after, w->max);
  fl_wait_complete(wt, res, res ? NULL : "the room store failed; see fleetd's log");
}

static void fl_watch_forget(fl_wait *wt) {
  fl_room_watch *w = wt->ext;
  if (!w)
    return;
  fl_watch_unlink(w);
  fl_free(w);
}

static const fl_wait_ops fl_watch_ops = {.timeout = fl_watch_timeout, .forget = fl_watch_forget};

void fl_rooms_appended(fl_rooms *r, const char *room_id) {
  fl_room_watch *w = r->watches;
  while (w) {
    fl_room_watch *next = w->next;
    if (strcmp(w->room_id, room_id) == 0)
      fl_watch_timeout(w->wait); /* completes and frees w */
    w = next;
  }
}

/* ---- the store ---------------------------------------------------------------- */

int fl_rooms_append(fl_rooms *r, const fl_room_msg *m, int hops) {
  char *item = fl_room_msg_item(m);
  if (!item)
    return FL_ENOMEM;
  long long seq = 0;
  size_t dropped = 0;
  int rc = fl_store_room_append(r->gw->store, m->room_id, m->env.msg_id, item, hops,
                                r->gw->cfg.rooms_max_messages, &seq, &dropped);
  fl_free(item);
  if (rc == FL_ESTORE || rc == FL_EDISKFULL)
    fl_gw_count(r->gw, FL_C_STORE_ERRORS);
  if (rc == 0) {
    r->gw->counters[FL_C_ROOM_CAPPED] += dropped;
    fl_rooms_appended(r, m->room_id);
  }
  return rc;
}

static void fl_load_room(void *ctx, const char *room_id, const char *label, long long count,
                         long long dropped) {
  (void)count;
  (void)dropped;
  fl_rooms *r = ctx;
  if (r->nrooms < FL_ROOM_MAX_ROOMS && fl_room_id_valid(room_id)) {
    fl_copy(r->rooms[r->nrooms].id, sizeof r->rooms[r->nrooms].id, room_id);
    fl_copy(r->rooms[r->nrooms].label, sizeof r->rooms[r->nrooms].label, label);
    r->nrooms++;
  }
}

/* ---- serving ------------------------------------------------------------------ */

/* A query argument as a whole number, or def. */
static long long fl_query_num(const char *q, const char *key, long long def) {
  size_t kl = strlen(key);
  for (const char *p = q; p && *p;) {
    if (strncmp(p, key, kl) == 0 && p[kl] == '=') {
      char *end;
      long long v = strtoll(p + kl + 1, &end, 10);
      return (end != p + kl + 1 && (*end == '&' || *end == '\0') && v >= 0) ? v : -1;
    }
    p = strchr(p, '&');
    if (p)
      p++;
  }
  return def;
}

typedef struct fl_page {
  char *buf;
  size_t len, cap;
  long long cursor;
  size_t n;
  int more, failed;
} fl_page;

static int fl_page_add(fl_page *pg, const char *s, size_t n) {
  if (pg->len + n + 1 > pg->cap) {
    size_t cap = pg->cap ? pg->cap * 2 : 65536;
    while (cap < pg->len + n + 1)
      cap *= 2;
    char *nb = fl_realloc(pg->buf, cap);
    if (!nb) {
      pg->failed = 1;
      return -1;
    }
    pg->buf = nb;
    pg->cap = cap;
  }
  memcpy(pg->buf + pg->len, s, n);
  pg->len += n;
  pg->buf[pg->len] = '\0';
  return 0;
}

static void fl_page_row(void *ctx, long long seq, const char *item, int hops) {
  fl_page *pg = ctx;
  size_t n = strlen(item);
  if (pg->more || pg->failed || n < 2)
    return;
  /* Room for this item, the tail, and what precedes it. */
  if (pg->len + n + 64 > FL_ROOM_MAX_BODY - 256) {
    pg->more = 1;
    return;
  }
  char tail[32];
  int tl = snprintf(tail, sizeof tail, ",\"hops\":%d}", hops);
  if ((pg->n && fl_page_add(pg, ",", 1)) || fl_page_add(pg, item, n - 1) ||
      fl_page_add(pg, tail, (size_t)tl))
    return;
  pg->n++;
  pg->cursor = seq;
}

static void fl_serve_room(void *ctx, const fl_http_req *req, fl_http_resp *resp) {
  fl_rooms *r = ctx;
  const char *id = req->path + strlen("/v1/rooms/");
  const fl_room *room = fl_room_id_valid(id) ? fl_rooms_find(r, id) : NULL;
  char *text = NULL;
  if (!room) {
    resp->status = 404;
    text = "{\"error\":\"no such room on this host\"}";
  }
  long long after = fl_query_num(req->query, "after", 0);
  long long limit = fl_query_num(req->query, "limit", 100);
  if (room && (after < 0 || limit < 1 || limit > FL_ROOM_MAX_PAGE)) {
    resp->status = 400;
    text = "{\"error\":\"after must be a whole number and limit 1..500\"}";
  }
  if (text) {
    resp->content_type = "application/json";
    resp->body = fl_strdup(text);
    resp->len = resp->body ? strlen(resp->body) : 0;
    return;
  }
  fl_page pg = {0};
  pg.cursor = after;
  char head[512];
  int hl = snprintf(head, sizeof head,
                    "{\"host\":\"%s\",\"publicKey\":\"%s\",\"roomId\":\"%s\",\"messages\":[",
                    r->gw->cfg.host_id, r->gw->id.pk_b64, room->id);
  fl_page_add(&pg, head, (size_t)hl);
  /* One more than asked tells whether more wait. */
  if (fl_store_room_after(r->gw->store, room->id, after, (size_t)limit, fl_page_row, &pg) < 0)
    pg.failed = 1;
  if (!pg.more && pg.n == (size_t)limit) {
    long long probe = pg.cursor;
    fl_page tmp = {0};
    tmp.cursor = probe;
    fl_store_room_after(r->gw->store, room->id, probe, 1, fl_page_row, &tmp);
    pg.more = tmp.n > 0;
    fl_free(tmp.buf);
  }
  char tail[96];
  int tl = snprintf(tail, sizeof tail, "],\"cursor\":%lld,\"more\":%s}", pg.cursor,
                    pg.more ? "true" : "false");
  fl_page_add(&pg, tail, (size_t)tl);
  if (pg.failed) {
    fl_free(pg.buf);
    resp->status = 500;
    resp->content_type = "application/json";
    resp->body = fl_strdup("{\"error\":\"the room store failed\"}");
    resp->len = resp->body ? strlen(resp->body) : 0;
    return;
  }
  resp->status = 200;
  resp->content_type = "application/json";
  resp->body = pg.buf;
  resp->len = pg.len;
  r->gw->counters[FL_C_ROOM_SERVED] += pg.n;
}

/* ---- life cycle --------------------------------------------------------------- */

int fl_rooms_start(fl_gw *gw, char *err, size_t errlen) {
  /* With a broker but no rooms, the store still keeps #claims. */
  if (!gw->cfg.rooms_on && !gw->cfg.broker_uri[0])
    return 0;
  fl_rooms *r = fl_calloc(1, sizeof *r);
  if (!r) {
    fl_errf(err, errlen, "out of memory");
    return FL_ENOMEM;
  }
  r->gw = gw;
  r->claims_only = !gw->cfg.rooms_on;
  gw->rooms = r;
  int rc;
  if ((rc = fl_store_rooms_open(gw->store)) ||
      (rc = fl_store_room_each(gw->store, fl_load_room, r)) < 0) {
    fl_errf(err, errlen, "cannot open the room tables of the hold store");
    return rc < 0 ? rc : FL_ESTORE;
  }
  if (r->claims_only) /* nothing to pull: libcurl stays unloaded (http_libs.h) */
    return 0;
  if ((rc = fl_http_pull_new(gw->loop, &r->puller, err, errlen)))
    return rc;
  uv_timer_init(gw->loop, &r->sync_timer);
  r->sync_timer.data = r;
  fl_rooms_sync_timer(r);
  if (gw->cfg.rooms_listen[0]) {
    rc = fl_http_server_start(gw->loop, gw->cfg.rooms_listen, &r->server, err, errlen);
    if (rc)
      return rc;
    fl_http_route route = {"/v1/rooms/", fl_serve_room, r};
    fl_http_server_route(r->server, &route);
    fl_info(NULL, "rooms: serving %zu room(s) on http://%s", r->nrooms,
            fl_http_server_addr(r->server));
  }
  return 0;
}

void fl_rooms_stop(fl_gw *gw) {
  fl_rooms *r = gw->rooms;
  if (!r || r->stopping)
    return;
  r->stopping = 1;
  while (r->watches)
    fl_watch_timeout(r->watches->wait);
  if (r->puller) { /* the sync timer exists once the puller does */
    fl_rooms_sync_stop(r);
    fl_http_pull_stop(r->puller);
  }
  if (r->server)
    fl_http_server_stop(r->server);
}

void fl_rooms_free(fl_gw *gw) {
  fl_rooms *r = gw->rooms;
  if (!r)
    return;
  fl_http_pull_free(&r->puller);
  fl_http_server_free(&r->server);
  fl_claims_log_free(gw);
  while (r->peers) {
    fl_room_peer *p = r->peers;
    r->peers = p->next;
    fl_free(p);
  }
  fl_free(r);
  gw->rooms = NULL;
}

/* ---- verbs -------------------------------------------------------------------- */

int fl_rooms_register(fl_gw *gw, const char *label, char room_id[FL_ROOM_ID_SIZE], char *err,
                      size_t errlen) {
  fl_rooms *r = gw->rooms;
  if (!label || fl_room_id(label, room_id) != 0) {
    fl_errf(err, errlen, "a room label is 1 to %d bytes, e.g. \"#coordination\"",
            FL_ROOM_MAX_LABEL);
    return FL_EINVAL;
  }
  if (fl_rooms_find(r, room_id))
    return 0;
  if (r->nrooms >= FL_ROOM_MAX_ROOMS) {
    fl_errf(err, errlen, "this host has registered %d rooms, the most it serves",
            FL_ROOM_MAX_ROOMS);
    return FL_EFULL;
  }
  int rc = fl_store_room_put(gw->store, room_id, label);
  if (rc) {
    fl_errf(err, errlen, "the room store failed; see fleetd's log");
    return rc;
  }
  fl_copy(r->rooms[r->nrooms].id, sizeof r->rooms[r->nrooms].id, room_id);
  fl_copy(r->rooms[r->nrooms].label, sizeof r->rooms[r->nrooms].label, label);
  r->nrooms++;
  fl_info(NULL, "rooms: registered %s as %s", label, room_id);
  return 0;
}

int fl_gw_room_register(fl_gw *gw, fl_client *c, const char *label, json_t **result, char *err,
                        size_t errlen) {
  (void)c;
  if (FL_ROOMS_OFF(gw)) {
    *result = fl_degraded();
    return 0;
  }
  char id[FL_ROOM_ID_SIZE];
  int rc = fl_rooms_register(gw, label, id, err, errlen);
  if (rc)
    return rc;
  const fl_room *room = fl_rooms_find(gw->rooms, id);
  *result = json_pack("{s:s, s:s}", "roomId", id, "label", room->label);
  return 0;
}

static const fl_room *fl_room_arg(fl_rooms *r, const char *room, char *err, size_t errlen) {
  const fl_room *found = fl_rooms_find(r, room);
  if (!found)
    fl_errf(err, errlen,
            "room \"%s\" is not registered on this host; register it first with "
            "fleet_room_register {label}",
            room ? room : "");
  return found;
}

int fl_rooms_publish(fl_gw *gw, fl_client *c, const char *room, const char *msg_type,
                     json_t *payload, char *msg_id, char **item_out, char *err, size_t errlen) {
  const fl_room *rm = fl_room_arg(gw->rooms, room, err, errlen);
  if (!rm)
    return FL_ENOTFOUND;
  char *item = NULL;
  int rc = fl_room_msg_build(gw->cfg.host_id, c && c->entity ? c->entity->gid : "",
                             c && c->entity ? c->entity->name : "", rm->id, msg_type, payload,
                             gw->id.sk, &item, msg_id);
  if (rc == FL_ETOOBIG) {
    fl_errf(err, errlen, "the message is over %u bytes; send a smaller payload",
            FL_ROOM_MAX_ENVELOPE);
    return rc;
  }
  if (rc) {
    fl_errf(err, errlen, "msgType must be 1 to %d bytes and payload a JSON object",
            FL_ROOM_MAX_MSG_TYPE);
    return rc;
  }
  fl_room_msg m;
  json_t *o = fl_room_item_load(item, &m);
  if (!o) {
    fl_free(item);
    fl_errf(err, errlen, "out of memory");
    return FL_ENOMEM;
  }
  rc = fl_rooms_append(gw->rooms, &m, 0);
  fl_room_msg_clear(&m);
  json_decref(o);
  if (rc) {
    fl_free(item);
    fl_errf(err, errlen, "the room store failed; see fleetd's log");
    return rc;
  }
  fl_gw_count(gw, FL_C_ROOM_PUBLISHED);
  if (item_out)
    *item_out = item;
  else
    fl_free(item);
  return 0;
}

int fl_gw_room_publish(fl_gw *gw, fl_client *c, const char *room, const char *msg_type,
                       json_t *payload, json_t **result, char *err, size_t errlen) {
  if (FL_ROOMS_OFF(gw)) {
    *result = fl_degraded();
    return 0;
  }
  char msg_id[FL_ID_LEN];
  int rc = fl_rooms_publish(gw, c, room, msg_type, payload, msg_id, NULL, err, errlen);
  if (rc)
    return rc;
  const fl_room *rm = fl_rooms_find(gw->rooms, room);
  *result = json_pack("{s:s, s:s}", "msgId", msg_id, "roomId", rm->id);
  return 0;
}

int fl_gw_room_watch(fl_gw *gw, fl_client *c, const char *room, long long after, double wait_s,
                     size_t max, fl_gw_cb cb, void *ctx, json_t **result, fl_wait **wait, char *err,
                     size_t errlen) {
  if (FL_ROOMS_OFF(gw)) {
    *result = fl_degraded();
    return 0;
  }
  const fl_room *rm = fl_room_arg(gw->rooms, room, err, errlen);
  if (!rm)
    return FL_ENOTFOUND;
  if (max == 0 || max > FL_ROOM_MAX_PAGE)
    max = max ? FL_ROOM_MAX_PAGE : 100;
  if (after < 0)
    after = 0;
  json_t *res = fl_read_room(gw->rooms, rm->id, after, max);
  if (!res) {
    fl_errf(err, errlen, "the room store failed; see fleetd's log");
    return FL_ESTORE;
  }
  if (wait_s <= 0 || json_array_size(json_object_get(res, "messages")) > 0 || !c) {
    *result = res;
    return 0;
  }
  json_decref(res);
  fl_room_watch *w = fl_calloc(1, sizeof *w);
  if (!w) {
    fl_errf(err, errlen, "out of memory");
    return FL_ENOMEM;
  }
  int rc = fl_wait_new(gw, c, FL_WAIT_POLL, &fl_watch_ops, wait_s, cb, ctx, &w->wait, err, errlen);
  if (rc) {
    fl_free(w);
    return rc;
  }
  w->r = gw->rooms;
  fl_copy(w->room_id, sizeof w->room_id, rm->id);
  w->after = after;
  w->max = max;
  w->wait->ext = w;
  w->next = gw->rooms->watches;
  gw->rooms->watches = w;
  *wait = w->wait;
  return 0;
}

int fl_gw_room_sync(fl_gw *gw, fl_client *c, const char *room, fl_gw_cb cb, void *ctx,
                    json_t **result, fl_wait **wait, char *err, size_t errlen) {
  if (FL_ROOMS_OFF(gw)) {
    *result = fl_degraded();
    return 0;
  }
  const fl_room *rm = NULL;
  if (room && !(rm = fl_room_arg(gw->rooms, room, err, errlen)))
    return FL_ENOTFOUND;
  return fl_rooms_sync_verb(gw->rooms, c, rm, cb, ctx, result, wait, err, errlen);
}

json_t *fl_rooms_peer_json(fl_gw *gw, const char *host) {
  if (FL_ROOMS_OFF(gw))
    return NULL;
  for (size_t i = 0; i < fl_peers_count(gw->peers); i++) {
    const fl_peer *p = fl_peers_at(gw->peers, i);
    if (strcmp(p->host, host) != 0)
      continue;
    fl_room_peer *st = fl_rooms_peer(gw->rooms, p->host);
    json_t *dropped = json_object();
    for (int k = 0; st && k < FL_ROOM_DROP_COUNT; k++)
      json_object_set_new(dropped, fl_room_drop_name((fl_room_drop)k),
                          json_integer((json_int_t)st->dropped[k]));
    char ts[FL_TS_LEN] = "";
    if (st && st->last_sync_ms)
      fl_rfc3339(st->last_sync_ms, ts);
    return json_pack("{s:s, s:s*, s:s*, s:b, s:s*, s:I, s:I, s:o}", "host", p->host, "url",
                     p->url[0] ? p->url : NULL, "lastSync", ts[0] ? ts : NULL, "ok",
                     st && st->last_ok, "error", st && st->last_error[0] ? st->last_error : NULL,
                     "merged", (json_int_t)(st ? st->merged : 0), "refused",
                     (json_int_t)(st ? st->refused : 0), "dropped", dropped);
  }
  return NULL;
}

void fl_rooms_http_stats(fl_gw *gw, struct fl_http_stats *add) {
  if (gw && gw->rooms)
    fl_http_server_stats(gw->rooms->server, add);
}

json_t *fl_gw_room_peers(fl_gw *gw) {
  if (FL_ROOMS_OFF(gw))
    return fl_degraded();
  json_t *arr = json_array();
  for (size_t i = 0; i < fl_peers_count(gw->peers); i++) {
    json_t *p = fl_rooms_peer_json(gw, fl_peers_at(gw->peers, i)->host);
    if (p)
      json_array_append_new(arr, p);
  }
  return json_pack("{s:o}", "peers", arr);
}

typedef struct fl_rooms_view {
  fl_gw *gw;
  json_t *arr;
} fl_rooms_view;

static void fl_view_cursor(void *ctx, const char *peer, long long cursor) {
  json_array_append_new(ctx, json_pack("{s:s, s:I}", "peer", peer, "cursor", (json_int_t)cursor));
}

static void fl_view_room(void *ctx, const char *room_id, const char *label, long long count,
                         long long dropped) {
  fl_rooms_view *v = ctx;
  json_t *cursors = json_array();
  fl_store_room_cursor_each(v->gw->store, room_id, fl_view_cursor, cursors);
  json_array_append_new(v->arr, json_pack("{s:s, s:s, s:I, s:I, s:o}", "roomId", room_id, "label",
                                          label, "messages", (json_int_t)count, "dropped",
                                          (json_int_t)dropped, "cursors", cursors));
}

json_t *fl_gw_rooms(fl_gw *gw) {
  if (FL_ROOMS_OFF(gw))
    return fl_degraded();
  fl_rooms_view v = {gw, json_array()};
  fl_store_room_each(gw->store, fl_view_room, &v);
  return json_pack("{s:s*, s:I, s:o}", "listen",
                   gw->rooms->server ? fl_http_server_addr(gw->rooms->server) : NULL,
                   "syncIntervalS", (json_int_t)gw->cfg.rooms_sync_interval_s, "rooms", v.arr);
}
