/* beat.c — presence beat bodies: built and parsed (see beat.h). */
#include "gateway/fabric/beat.h"

#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/json_read.h"
#include "common/names.h"
#include "common/time.h"

/* ---- building ---------------------------------------------------------------- */

json_t *fl_beat_json(const char *name, const char *role,
                     const char (*groups)[FL_MAX_GROUP_NAME + 1], size_t ngroups,
                     const char *status, const char *delivery) {
  json_t *g = json_array();
  for (size_t i = 0; g && i < ngroups; i++)
    if (json_array_append_new(g, json_string(groups[i])) != 0) {
      json_decref(g);
      return NULL;
    }
  if (!g)
    return NULL;
  return json_pack("{s:s, s:s, s:o, s:s, s:s*}", "name", name, "role", role, "groups", g, "status",
                   status, "delivery", delivery);
}

json_t *fl_beat_gateway_json(const char *host, const char *version, size_t entities,
                             json_t *profiles, json_t *agents) {
  if (!profiles) {
    json_decref(agents);
    return NULL;
  }
  return json_pack("{s:s, s:s, s:I, s:o, s:o*}", "host", host, "version", version, "entities",
                   (json_int_t)entities, "profiles", profiles, "agents", agents);
}

int fl_beat_list(json_t *agents, const char *gid, json_t *body) {
  if (!body || json_object_set_new(body, "gid", json_string(gid)) != 0 ||
      json_array_append_new(agents, body) != 0) {
    json_decref(body);
    return FL_ENOMEM;
  }
  return 0;
}

/* ---- parsing ----------------------------------------------------------------- */

/* The valid group names of arr (a JSON array) into groups, at most
 * FL_MAX_GROUPS; returns how many. */
static size_t fl_parse_groups(json_t *arr, char groups[][FL_MAX_GROUP_NAME + 1]) {
  size_t n = 0, i;
  json_t *g;
  json_array_foreach(arr, i, g) {
    const char *gn = json_string_value(g);
    if (gn && fl_name_valid(gn, FL_MAX_GROUP_NAME) && n < FL_MAX_GROUPS)
      fl_copy(groups[n++], FL_MAX_GROUP_NAME + 1, gn);
  }
  return n;
}

/* An entity body already parsed as JSON (o may be anything). */
static int fl_beat_of(json_t *o, fl_beat *out) {
  memset(out, 0, sizeof *out);
  const char *name = json_string_value(json_object_get(o, "name"));
  const char *role = json_string_value(json_object_get(o, "role"));
  const char *status = json_string_value(json_object_get(o, "status"));
  if (!name || !fl_name_valid(name, FL_MAX_NAME) || !status)
    return FL_EINVAL;
  fl_copy(out->name, sizeof out->name, name);
  fl_copy(out->role, sizeof out->role, (role && fl_name_valid(role, FL_MAX_ROLE)) ? role : "agent");
  out->ngroups = fl_parse_groups(json_object_get(o, "groups"), out->groups);
  out->online = strcmp(status, "online") == 0;
  out->gone = strcmp(status, "gone") == 0;
  const char *delivery = json_string_value(json_object_get(o, "delivery"));
  out->inject = delivery && strcmp(delivery, "inject") == 0;
  const char *inbox = json_string_value(json_object_get(o, "inbox"));
  out->inbox_degraded = inbox && strcmp(inbox, "degraded") == 0;
  return 0;
}

int fl_beat_parse(const char *body, size_t len, fl_beat *out) {
  json_t *o = fl_json_loadb(body ? body : "", body ? len : 0, 0, NULL);
  int rc = fl_beat_of(o, out);
  json_decref(o);
  return rc;
}

static void fl_parse_profiles(json_t *profiles, fl_gateway_beat *out) {
  json_t *pr;
  size_t i;
  json_array_foreach(profiles, i, pr) {
    const char *name = json_string_value(json_object_get(pr, "name"));
    const char *backend = json_string_value(json_object_get(pr, "backend"));
    const char *role = json_string_value(json_object_get(pr, "role"));
    if (out->nprofiles >= FL_MAX_PROFILES || !name || !fl_name_valid(name, FL_MAX_NAME) ||
        !backend || (strcmp(backend, "tmux") != 0 && strcmp(backend, "exec") != 0))
      continue;
    int dup = 0;
    for (size_t k = 0; k < out->nprofiles && !dup; k++)
      dup = strcmp(out->profiles[k].name, name) == 0;
    if (dup)
      continue;
    fl_profile_ad *ad = &out->profiles[out->nprofiles++];
    fl_copy(ad->name, sizeof ad->name, name);
    fl_copy(ad->backend, sizeof ad->backend, backend);
    fl_copy(ad->role, sizeof ad->role,
            (role && fl_name_valid(role, FL_MAX_ROLE)) ? role : "worker");
    ad->ngroups = fl_parse_groups(json_object_get(pr, "groups"), ad->groups);
  }
}

static int fl_parse_agents(json_t *agents, fl_gateway_beat *out) {
  size_t n = json_array_size(agents);
  size_t room = n < FL_MAX_BEAT_AGENTS ? n : FL_MAX_BEAT_AGENTS;
  if (room && !(out->agents = fl_malloc(room * sizeof *out->agents)))
    return FL_ENOMEM;
  json_t *a;
  size_t i;
  json_array_foreach(agents, i, a) {
    const char *gid = json_string_value(json_object_get(a, "gid"));
    fl_listed_beat *l = out->nagents < room ? &out->agents[out->nagents] : NULL;
    if (!l || !gid || !fl_is_uuid(gid) || fl_beat_of(a, &l->b) != 0) {
      out->agents_dropped++;
      continue;
    }
    fl_copy(l->gid, sizeof l->gid, gid);
    out->nagents++;
  }
  return 0;
}

int fl_beat_parse_gateway(const char *body, size_t len, const char *host, fl_gateway_beat *out) {
  memset(out, 0, sizeof *out);
  json_t *o = fl_json_loadb(body ? body : "", body ? len : 0, 0, NULL);
  const char *h = json_string_value(json_object_get(o, "host"));
  if (!h || !host || strcmp(h, host) != 0) {
    json_decref(o);
    return FL_EINVAL;
  }
  fl_parse_profiles(json_object_get(o, "profiles"), out);
  json_t *agents = json_object_get(o, "agents");
  out->lists_agents = json_is_array(agents);
  int rc = fl_parse_agents(agents, out);
  json_decref(o);
  if (rc) {
    fl_beat_gateway_clear(out);
    memset(out, 0, sizeof *out);
  }
  return rc;
}

void fl_beat_gateway_clear(fl_gateway_beat *b) {
  if (!b)
    return;
  fl_free(b->agents);
  b->agents = NULL;
  b->nagents = 0;
}

int fl_beat_fresh(const char *ts, const char *expires_at, long long now_ms,
                  const long long *newest_ms, long long *ts_ms) {
  long long t = 0, exp = 0;
  if (!ts || fl_rfc3339_parse(ts, &t) != 0)
    t = 0;
  if (!expires_at || fl_rfc3339_parse(expires_at, &exp) != 0)
    exp = 0;
  /* 0 reads as absent, as everywhere else a stamp is parsed. */
  if (!t || !exp || exp <= now_ms)
    return FL_EINVAL;
  if (newest_ms && t < *newest_ms)
    return FL_EDUP;
  *ts_ms = t;
  return 0;
}
