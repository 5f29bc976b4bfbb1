/* list.c — fleet_list's result: every entity the roster shows, every host a
 * spawn can target, and what the coordinator adds.
 *
 * With thousands of entities (other hosts' agents, from presence) the
 * result is megabytes and is asked for far more often than the roster
 * changes, so it is written straight as JSON (common/json_writer.h), in one
 * pass over the roster in name order (roster.h), and never built as a
 * jansson tree. Its shape and key order are the contract tools and users
 * read:
 *
 *   {host, self, entities: [{gid, name, role, host, groups, status, self,
 *    held, lastSeen?, coordId?}...], hosts: [{host, self, status,
 *    profiles}...], coordinators?}
 *
 * "self" is the caller's gid (null for an anonymous session); lastSeen is
 * left out for an entity never seen, coordId for all but a local lead with a
 * coordinator, coordinators without one. The hosts are this one first, then
 * the others as their gateways' beats said (a few hundred at most, written
 * by the cross-host backend); this host's few profiles come from the tree
 * the config builds.
 * fl_gw_list gives the same result as a tree, parsed back from those bytes,
 * for the readers that want one (the dashboard, /metrics). */
#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/json_read.h"
#include "common/json_writer.h"
#include "common/limits.h"
#include "common/time.h"
#include "gateway/config/config.h"
#include "gateway/core/gw_internal.h"
#include "gateway/core/module.h"
#include "gateway/core/remote.h"
#include "gateway/core/roster.h"
#include "gateway/store/store.h"

static void fl_list_entity(fl_gw *gw, fl_client *c, const fl_entity *e, long long now, fl_jw *w) {
  size_t held = 0;
  /* Messages are held by the recipient's own fleetd: none here for a
   * remote entity, so no store query for each of thousands of them. */
  if (!e->remote)
    fl_store_count(gw->store, e->gid, now, &held);
  fl_jw_obj_open(w);
  fl_jw_key(w, "gid");
  fl_jw_str(w, e->gid);
  fl_jw_key(w, "name");
  fl_jw_str(w, e->name);
  fl_jw_key(w, "role");
  fl_jw_str(w, e->role);
  fl_jw_key(w, "host");
  fl_jw_str(w, fl_entity_host(e));
  fl_jw_key(w, "groups");
  fl_jw_arr_open(w);
  for (size_t i = 0; i < e->ngroups; i++)
    fl_jw_str(w, e->groups[i]);
  fl_jw_arr_close(w);
  fl_jw_key(w, "status");
  fl_jw_str(w, e->remote ? fl_remote_status(gw, e) : e->client ? "online" : "offline");
  fl_jw_key(w, "self");
  fl_jw_bool(w, c && c->entity == e);
  fl_jw_key(w, "held");
  fl_jw_int(w, (long long)held);
  long long seen = e->client ? now : e->last_seen_ms;
  if (seen) {
    char ts[FL_TS_LEN];
    fl_rfc3339(seen, ts);
    fl_jw_key(w, "lastSeen");
    fl_jw_str(w, ts);
  }
  if (e->inbox_degraded) {
    fl_jw_key(w, "inbox");
    fl_jw_str(w, "degraded");
  }
  char coord_id[FL_MAX_COORD_ID + 1];
  if (fl_modules_list_id(gw, e, coord_id)) {
    fl_jw_key(w, "coordId");
    fl_jw_str(w, coord_id);
  }
  fl_modules_entity_write(gw, e, w); /* "activity", from its hooks */
  fl_jw_obj_close(w);
}

/* The two outputs of a listing: the JSON, and the same escaped as the
 * text copy of the tool result (common/json_writer.h, fl_json_out). What
 * is written fresh into json is escaped into text when the next kept
 * object goes in, and at the end (fl_list_sync); a kept object goes into
 * both as it was kept, so most of a large roster is never escaped again. */
typedef struct fl_list_out {
  fl_jw json, text;
  size_t synced; /* json's bytes up to here are in text */
} fl_list_out;

static void fl_list_sync(fl_list_out *o) {
  if (o->json.err)
    return;
  fl_jw_escaped(&o->text, o->json.buf + o->synced, o->json.len - o->synced);
  o->synced = o->json.len;
}

/* Keeps e's object, w's bytes from from on, and its escaped text. */
static void fl_list_keep(fl_entity *e, const fl_jw *w, size_t from, const char *status) {
  size_t n = w->len - from, tn = fl_json_escaped_len(w->buf + from, n);
  char *json = fl_realloc(e->listed.json, n), *text;
  if (json)
    e->listed.json = json;
  text = json ? fl_realloc(e->listed.text, tn) : NULL;
  if (!text) {
    fl_entity_listed_forget(e); /* written, just not kept */
    return;
  }
  e->listed.text = text;
  memcpy(json, w->buf + from, n);
  fl_json_escape(text, json, n);
  e->listed.len = n;
  e->listed.text_len = tn;
  e->listed.status = status;
  e->listed.seen = e->last_seen_ms;
}

/* A remote entity's object: the one kept from the last listing while its
 * inputs hold (roster.h), else written now and kept. Most of a large
 * roster is other hosts' agents, listed many times between two of their
 * beats; a beat changes their lastSeen, so each is written again about
 * once an interval. A remote entity is never the caller ("self" false),
 * holds nothing here and has no coordId, so its object is the same for
 * every caller. */
static void fl_list_remote(fl_gw *gw, fl_client *c, fl_entity *e, long long now, fl_list_out *o) {
  const char *status = fl_remote_status(gw, e);
  size_t from = fl_jw_begin(&o->json); /* the ',' before it, if any */
  fl_list_sync(o);
  if (e->listed.json && e->listed.status == status && e->listed.seen == e->last_seen_ms) {
    fl_jw_raw(&o->json, e->listed.json, e->listed.len);
  } else {
    fl_list_entity(gw, c, e, now, &o->json);
    if (o->json.err)
      return;
    fl_list_keep(e, &o->json, from, status);
    if (!e->listed.json)
      return; /* not kept: escaped with the rest */
  }
  fl_jw_bytes(&o->text, e->listed.text, e->listed.text_len);
  o->synced = o->json.len;
}

/* Every host a spawn can target: this one first, then the others as their
 * gateway beats said (even with no agent on them). */
static int fl_list_hosts(fl_gw *gw, fl_jw *w) {
  json_t *mine = fl_config_profiles_json(&gw->cfg);
  if (!mine)
    return FL_ENOMEM;
  fl_jw_key(w, "hosts");
  fl_jw_arr_open(w);
  fl_jw_obj_open(w);
  fl_jw_key(w, "host");
  fl_jw_str(w, gw->cfg.host_id);
  fl_jw_key(w, "self");
  fl_jw_bool(w, 1);
  fl_jw_key(w, "status");
  fl_jw_str(w, "online");
  fl_jw_key(w, "profiles");
  fl_jw_json(w, mine);
  fl_jw_obj_close(w);
  fl_remote_hosts_write(gw, w);
  fl_jw_arr_close(w);
  json_decref(mine);
  return 0;
}

int fl_gw_list_json(fl_gw *gw, fl_client *c, fl_json_out *out) {
  memset(out, 0, sizeof *out);
  fl_entity **sorted = NULL;
  size_t nsorted = 0;
  /* Sorted by name so tables read the same every time. */
  if (fl_roster_sorted(gw, &sorted, &nsorted) != 0)
    return FL_ENOMEM;
  fl_list_out o = {.synced = 0};
  fl_jw_init(&o.json, FL_MAX_RESULT_JSON);
  fl_jw_init(&o.text, 2 * FL_MAX_RESULT_JSON); /* a JSON text escaped is at most twice as long */
  fl_jw *w = &o.json;
  fl_jw_obj_open(w);
  fl_jw_key(w, "host");
  fl_jw_str(w, gw->cfg.host_id);
  fl_jw_key(w, "self");
  fl_jw_str(w, (c && c->entity) ? c->entity->gid : NULL);
  fl_jw_key(w, "entities");
  fl_jw_arr_open(w);
  long long now = fl_now_ms();
  for (size_t k = 0; k < nsorted; k++) {
    /* Thousands of 4 KB entities are seldom in cache: each is asked for a
     * few entries before it is written, so the waits overlap. */
    if (k + FL_ENTITY_AHEAD < nsorted)
      fl_entity_prefetch(sorted[k + FL_ENTITY_AHEAD]);
    if (sorted[k]->remote)
      fl_list_remote(gw, c, sorted[k], now, &o);
    else
      fl_list_entity(gw, c, sorted[k], now, w);
  }
  fl_jw_arr_close(w);
  fl_free(sorted);
  int rc = fl_list_hosts(gw, w);
  fl_modules_list_write(gw, w); /* "coordinators", with a coordinator */
  fl_jw_obj_close(w);
  fl_list_sync(&o);
  if (rc == 0)
    rc = fl_jw_take(&o.json, &out->json, &out->len);
  if (rc == 0)
    rc = fl_jw_take(&o.text, &out->text, &out->text_len);
  if (rc != 0)
    fl_json_out_free(out);
  fl_jw_free(&o.json);
  fl_jw_free(&o.text);
  return rc;
}

int fl_gw_list(fl_gw *gw, fl_client *c, json_t **result) {
  *result = NULL;
  fl_json_out out;
  int rc = fl_gw_list_json(gw, c, &out);
  if (rc != 0)
    return rc;
  *result = fl_json_loadb(out.json, out.len, 0, NULL);
  fl_json_out_free(&out);
  return *result ? 0 : FL_ENOMEM;
}
