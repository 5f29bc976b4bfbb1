/* room_sync.c — pulling rooms from peers (see room.h): on the sync timer
 * and on fleet_room_sync, one GET per (room, peer with a URL) at a time,
 * from that peer's cursor, page after page up to FL_ROOM_MAX_PAGES_PER_SYNC.
 * A failed pull is recorded on the peer and retried at the next sync. */
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/log.h"
#include "gateway/rooms/room_internal.h"

/* A GET's bound, and the longest a sync call waits for its pulls. */
#define FL_ROOM_PULL_TIMEOUT_MS 10000

/* One fleet_room_sync call waiting for its pulls. */
struct fl_room_batch {
  fl_rooms *r;
  fl_wait *wait;
  size_t pending;
  json_t *results;
};

/* One pull in flight: a room from a peer. */
struct fl_room_pull {
  fl_room_pull *next;
  fl_rooms *r;
  char room_id[FL_ROOM_ID_SIZE];
  char peer[FL_HOST_ID_SIZE];
  char url[FL_PEER_URL_SIZE];
  unsigned pages;
  fl_merge_result total;
  fl_room_batch *batch; /* or NULL */
};

static void fl_batch_end(fl_room_batch *b) {
  json_t *res = json_pack("{s:O}", "results", b->results);
  fl_wait_complete(b->wait, res, NULL);
}

static void fl_batch_timeout(fl_wait *w) {
  fl_room_batch *b = w->ext;
  fl_batch_end(b);
}

static void fl_batch_forget(fl_wait *w) {
  fl_room_batch *b = w->ext;
  if (!b)
    return;
  for (fl_room_pull *p = b->r->pulls; p; p = p->next)
    if (p->batch == b)
      p->batch = NULL;
  json_decref(b->results);
  fl_free(b);
}

static const fl_wait_ops fl_batch_ops = {.timeout = fl_batch_timeout, .forget = fl_batch_forget};

static void fl_pull_unlink(fl_room_pull *p) {
  for (fl_room_pull **pp = &p->r->pulls; *pp; pp = &(*pp)->next)
    if (*pp == p) {
      *pp = p->next;
      return;
    }
}

static int fl_pull_send(fl_room_pull *p);

/* The pull ended (err NULL: fine): record it, tell its batch, free it. */
static void fl_pull_end(fl_room_pull *p, const char *err) {
  fl_rooms *r = p->r;
  fl_room_peer *st = fl_rooms_peer(r, p->peer);
  if (st) {
    st->last_sync_ms = fl_now_ms();
    st->last_ok = err == NULL;
    fl_copy(st->last_error, sizeof st->last_error, err);
  }
  if (err)
    fl_gw_count(r->gw, FL_C_ROOM_PULLS_FAILED);
  if (p->batch) {
    json_t *dropped = json_object();
    size_t nd = 0;
    for (int k = 0; k < FL_ROOM_DROP_COUNT; k++) {
      nd += p->total.dropped[k];
      if (p->total.dropped[k])
        json_object_set_new(dropped, fl_room_drop_name((fl_room_drop)k),
                            json_integer((json_int_t)p->total.dropped[k]));
    }
    long long cursor = 0;
    fl_store_room_cursor(r->gw->store, p->room_id, p->peer, &cursor);
    json_array_append_new(p->batch->results,
                          json_pack("{s:s, s:s, s:s, s:b, s:s*, s:I, s:I, s:o, s:I}", "peer",
                                    p->peer, "url", p->url, "roomId", p->room_id, "ok", !err,
                                    "error", err, "merged", (json_int_t)p->total.merged,
                                    "droppedTotal", (json_int_t)nd, "dropped", dropped, "cursor",
                                    (json_int_t)cursor));
    if (--p->batch->pending == 0)
      fl_batch_end(p->batch);
  }
  fl_pull_unlink(p);
  fl_free(p);
}

static void fl_pull_done(void *ctx, long status, const char *body, size_t len, const char *err) {
  fl_room_pull *p = ctx;
  fl_rooms *r = p->r;
  char msg[1024];
  if (err || status != 200) {
    if (err)
      snprintf(msg, sizeof msg, "GET %s: %s", p->url, err);
    else
      snprintf(msg, sizeof msg, "GET %s: HTTP %ld", p->url, status);
    if (!r->stopping)
      fl_warn(NULL, "rooms: pulling room %.12s… from '%s' failed: %s", p->room_id, p->peer, msg);
    fl_pull_end(p, msg);
    return;
  }
  fl_merge_result res;
  int rc = fl_rooms_merge(r->gw, p->peer, p->room_id, body, len, &res, msg, sizeof msg);
  if (rc) {
    fl_pull_end(p, msg);
    return;
  }
  p->total.merged += res.merged;
  for (int k = 0; k < FL_ROOM_DROP_COUNT; k++)
    p->total.dropped[k] += res.dropped[k];
  long long old = 0;
  fl_store_room_cursor(r->gw->store, p->room_id, p->peer, &old);
  if (res.cursor > old &&
      fl_store_room_cursor_put(r->gw->store, p->room_id, p->peer, res.cursor) != 0)
    fl_gw_count(r->gw, FL_C_STORE_ERRORS);
  if (res.more && res.cursor > old && ++p->pages < FL_ROOM_MAX_PAGES_PER_SYNC && !r->stopping &&
      fl_pull_send(p) == 0)
    return;
  fl_pull_end(p, res.cursor < 0 ? "the room store failed; see fleetd's log" : NULL);
}

static int fl_pull_send(fl_room_pull *p) {
  long long cursor = 0;
  fl_store_room_cursor(p->r->gw->store, p->room_id, p->peer, &cursor);
  char url[FL_PEER_URL_SIZE + 160];
  const char *base = p->url;
  size_t bl = strlen(base);
  while (bl && base[bl - 1] == '/')
    bl--;
  snprintf(url, sizeof url, "%.*s/v1/rooms/%s?after=%lld&limit=%d", (int)bl, base, p->room_id,
           cursor, FL_ROOM_MAX_PAGE);
  unsigned timeout = FL_ROOM_PULL_TIMEOUT_MS;
  return fl_http_pull_get(p->r->puller, url, FL_ROOM_MAX_BODY, timeout, fl_pull_done, p);
}

static int fl_pull_busy(fl_rooms *r, const char *room_id, const char *peer) {
  for (fl_room_pull *p = r->pulls; p; p = p->next)
    if (strcmp(p->room_id, room_id) == 0 && strcmp(p->peer, peer) == 0)
      return 1;
  return 0;
}

size_t fl_rooms_sync_start(fl_rooms *r, const fl_room *room, fl_room_batch *batch) {
  size_t started = 0;
  if (r->stopping || r->claims_only)
    return 0;
  r->syncs++;
  for (size_t i = 0; i < r->nrooms; i++) {
    if (room && strcmp(r->rooms[i].id, room->id) != 0)
      continue;
    for (size_t k = 0; k < fl_peers_count(r->gw->peers); k++) {
      const fl_peer *peer = fl_peers_at(r->gw->peers, k);
      if (!peer->url[0] || fl_pull_busy(r, r->rooms[i].id, peer->host))
        continue;
      fl_room_pull *p = fl_calloc(1, sizeof *p);
      if (!p)
        return started;
      p->r = r;
      fl_copy(p->room_id, sizeof p->room_id, r->rooms[i].id);
      fl_copy(p->peer, sizeof p->peer, peer->host);
      fl_copy(p->url, sizeof p->url, peer->url);
      p->batch = batch;
      if (fl_pull_send(p) != 0) {
        fl_room_peer *st = fl_rooms_peer(r, peer->host);
        if (st) {
          st->last_ok = 0;
          fl_copy(st->last_error, sizeof st->last_error,
                  "the pinned URL is not http:// or https://");
        }
        fl_free(p);
        continue;
      }
      p->next = r->pulls;
      r->pulls = p;
      started++;
      if (batch)
        batch->pending++;
    }
  }
  return started;
}

int fl_rooms_sync_verb(fl_rooms *r, fl_client *c, const fl_room *room, fl_gw_cb cb, void *ctx,
                       json_t **result, fl_wait **wait, char *err, size_t errlen) {
  fl_room_batch *b = fl_calloc(1, sizeof *b);
  if (!b || !(b->results = json_array())) {
    fl_free(b);
    fl_errf(err, errlen, "out of memory");
    return FL_ENOMEM;
  }
  b->r = r;
  int rc = fl_wait_new(r->gw, c, FL_WAIT_POLL, &fl_batch_ops, FL_ROOM_PULL_TIMEOUT_MS / 1000.0 + 1,
                       cb, ctx, &b->wait, err, errlen);
  if (rc) {
    json_decref(b->results);
    fl_free(b);
    return rc;
  }
  b->wait->ext = b;
  if (fl_rooms_sync_start(r, room, b) == 0) {
    /* Nothing to pull (no peer with a URL, or all busy): answer now. */
    *result = json_pack("{s:O}", "results", b->results);
    fl_wait_release(b->wait);
    return 0;
  }
  *wait = b->wait;
  return 0;
}

static void fl_sync_tick(uv_timer_t *t) {
  fl_rooms *r = t->data;
  fl_rooms_sync_start(r, NULL, NULL);
}

void fl_rooms_sync_timer(fl_rooms *r) {
  uint64_t ms = (uint64_t)r->gw->cfg.rooms_sync_interval_s * 1000;
  if (ms == 0)
    ms = 20000;
  uv_timer_start(&r->sync_timer, fl_sync_tick, ms, ms);
  uv_unref((uv_handle_t *)&r->sync_timer);
}

void fl_rooms_sync_stop(fl_rooms *r) {
  uv_timer_stop(&r->sync_timer);
  uv_close((uv_handle_t *)&r->sync_timer, NULL);
  /* The puller's stop ends every pull (fl_pull_done with an error). */
}
