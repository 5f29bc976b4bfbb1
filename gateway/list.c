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
#include "common/json_writer.h"
#include "common/limits.h"
#include "common/time.h"
#include "gateway/config.h"
#include "gateway/coord.h"
#include "gateway/gw_internal.h"
#include "gateway/remote.h"
#include "gateway/roster.h"
#include "gateway/store.h"

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
  char coord_id[FL_MAX_COORD_ID + 1];
  if (fl_coord_list_id(gw, e, coord_id)) {
    fl_jw_key(w, "coordId");
    fl_jw_str(w, coord_id);
  }
  fl_jw_obj_close(w);
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

int fl_gw_list_json(fl_gw *gw, fl_client *c, char **out, size_t *len) {
  *out = NULL;
  *len = 0;
  fl_entity **sorted = NULL;
  size_t nsorted = 0;
  /* Sorted by name so tables read the same every time. */
  if (fl_roster_sorted(gw, &sorted, &nsorted) != 0)
    return FL_ENOMEM;
  fl_jw w;
  fl_jw_init(&w, FL_MAX_RESULT_JSON);
  fl_jw_obj_open(&w);
  fl_jw_key(&w, "host");
  fl_jw_str(&w, gw->cfg.host_id);
  fl_jw_key(&w, "self");
  fl_jw_str(&w, (c && c->entity) ? c->entity->gid : NULL);
  fl_jw_key(&w, "entities");
  fl_jw_arr_open(&w);
  long long now = fl_now_ms();
  for (size_t k = 0; k < nsorted; k++) {
    /* Thousands of 4 KB entities are seldom in cache: each is asked for a
     * few entries before it is written, so the waits overlap. */
    if (k + FL_ENTITY_AHEAD < nsorted)
      fl_entity_prefetch(sorted[k + FL_ENTITY_AHEAD]);
    fl_list_entity(gw, c, sorted[k], now, &w);
  }
  fl_jw_arr_close(&w);
  fl_free(sorted);
  int rc = fl_list_hosts(gw, &w);
  fl_coord_list_write(gw, &w);
  fl_jw_obj_close(&w);
  if (rc == 0)
    rc = fl_jw_take(&w, out, len);
  fl_jw_free(&w);
  return rc;
}

int fl_gw_list(fl_gw *gw, fl_client *c, json_t **result) {
  *result = NULL;
  char *s;
  size_t n;
  int rc = fl_gw_list_json(gw, c, &s, &n);
  if (rc != 0)
    return rc;
  *result = json_loadb(s, n, 0, NULL);
  fl_big_free(s);
  return *result ? 0 : FL_ENOMEM;
}
