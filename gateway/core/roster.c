/* roster.c — the entities a gateway knows, their persistence, and name
 * resolution.
 *
 * The roster is a list on the gateway: this host's entities, loaded from the
 * hold store at start and written back whenever a session changes one, and
 * other hosts' entities, which presence adds. A recipient is named by gid,
 * by name, or by name@host; a bare name that lives on more than one host is
 * ambiguous, and the error lists every name@host so the caller can pick. A
 * host whose key is not pinned is not believed: a name behind one is an
 * error that says how to pin it, and unpinning a host drops its entities.
 * Local entities are never freed while the gateway lives (a name that
 * leaves may come back and resume its gid), so pointers to them stay valid;
 * remote ones are freed only by fl_roster_reclaim, in a full roster, after
 * leaving the index by gid (gid_index.h borrows their gids) and emptying the
 * kept listing order. */
#include "gateway/core/roster.h"

#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/ids.h"
#include "common/log.h"
#include "gateway/core/gw_internal.h"
#include "gateway/core/nudge.h"
#include "gateway/core/remote.h"

fl_entity *fl_entity_new(fl_gw *gw, const char *gid, const char *name) {
  fl_entity *e = fl_calloc(1, sizeof *e);
  if (!e)
    return NULL;
  e->gw = gw;
  fl_copy(e->gid, sizeof e->gid, gid);
  fl_copy(e->name, sizeof e->name, name);
  if (fl_gid_index_put(&gw->by_gid, e->gid, e) != 0) {
    fl_free(e);
    return NULL;
  }
  fl_nudge_init(e);
  e->next = gw->entities;
  gw->entities = e;
  gw->nentities++;
  e->seq = ++gw->entities_made;
  gw->sorted.n = 0; /* the kept order lacks it */
  return e;
}

fl_entity *fl_entity_by_gid(fl_gw *gw, const char *gid) {
  /* Every beat and delivery looks its entity up: an index, not a walk of
   * thousands of entities. */
  return fl_gid_index_get(&gw->by_gid, gid);
}

fl_entity *fl_entity_local_by_name(fl_gw *gw, const char *name) {
  for (fl_entity *e = gw->entities; e; e = e->next)
    if (!e->remote && !e->removed && strcmp(e->name, name) == 0)
      return e;
  return NULL;
}

/* Orders by name, then by roster position (ties keep the roster's order:
 * newest, the highest seq, first). */
static int fl_sorted_cmp(const void *a, const void *b) {
  const fl_entity *x = *(fl_entity *const *)a, *y = *(fl_entity *const *)b;
  int c = strcmp(x->name, y->name);
  return c ? c : (x->seq < y->seq) - (x->seq > y->seq);
}

int fl_entity_in_roster(const fl_entity *e) { return !(e->dropped || e->removed); }

void fl_entity_set_removed(fl_entity *e) {
  e->removed = 1;
  e->gw->sorted.n = 0;
}

void fl_entity_set_dropped(fl_entity *e, int dropped) {
  if (e->dropped == !!dropped)
    return;
  e->dropped = !!dropped;
  e->gw->sorted.n = 0;
}

void fl_entity_set_name(fl_entity *e, const char *name) {
  if (strcmp(e->name, name) == 0)
    return;
  fl_copy(e->name, sizeof e->name, name);
  e->gw->sorted.n = 0;
}

void fl_entity_prefetch(const fl_entity *e) {
  /* The fields a listing reads: gid to host, the first five lines. */
  for (size_t at = 0; at < offsetof(fl_entity, ngroups) + sizeof e->ngroups; at += 64)
    __builtin_prefetch((const char *)e + at);
}

int fl_roster_sorted(fl_gw *gw, fl_entity ***out, size_t *n) {
  *out = NULL;
  *n = 0;
  /* Emptied by every change that moves or hides an entity (roster.h), so a
   * kept order is whole and in order; no walk checks it. */
  if (gw->sorted.n == 0) {
    size_t k = 0;
    for (fl_entity *e = gw->entities; e; e = e->next)
      k += fl_entity_in_roster(e);
    gw->sorted.n = 0;
    if (!k)
      return 0;
    if (k > gw->sorted.cap) {
      fl_entity **v = fl_realloc(gw->sorted.v, k * sizeof *v);
      if (!v)
        return FL_ENOMEM;
      gw->sorted.v = v;
      gw->sorted.cap = k;
    }
    size_t i = 0;
    for (fl_entity *e = gw->entities; e; e = e->next)
      if (fl_entity_in_roster(e))
        gw->sorted.v[i++] = e;
    /* A sort, not an insertion into a sorted list: thousands of remote
     * entities are listed in milliseconds. */
    qsort(gw->sorted.v, k, sizeof *gw->sorted.v, fl_sorted_cmp);
    gw->sorted.n = k;
  }
  size_t k = gw->sorted.n;
  fl_entity **arr = fl_malloc(k * sizeof *arr);
  if (!arr)
    return FL_ENOMEM;
  memcpy(arr, gw->sorted.v, k * sizeof *arr);
  *out = arr;
  *n = k;
  return 0;
}

void fl_entity_set_groups(fl_entity *e, const char *csv) {
  e->ngroups = 0;
  const char *p = csv;
  while (p && *p && e->ngroups < FL_MAX_GROUPS) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    if (len > 0 && len <= FL_MAX_GROUP_NAME) {
      memcpy(e->groups[e->ngroups], p, len);
      e->groups[e->ngroups][len] = '\0';
      e->ngroups++;
    }
    p = comma ? comma + 1 : NULL;
  }
}

int fl_entity_in_group(const fl_entity *e, const char *group) {
  for (size_t i = 0; i < e->ngroups; i++)
    if (strcmp(e->groups[i], group) == 0)
      return 1;
  return 0;
}

const char *fl_entity_host(const fl_entity *e) { return e->remote ? e->host : e->gw->cfg.host_id; }

void fl_entity_rec_of(const fl_entity *e, fl_entity_rec *r) {
  memset(r, 0, sizeof *r);
  fl_copy(r->gid, sizeof r->gid, e->gid);
  fl_copy(r->name, sizeof r->name, e->name);
  fl_copy(r->role, sizeof r->role, e->role);
  if (e->remote)
    fl_copy(r->host, sizeof r->host, e->host);
  size_t off = 0;
  for (size_t i = 0; i < e->ngroups; i++) {
    int w = snprintf(r->groups + off, sizeof r->groups - off, "%s%s", i ? "," : "", e->groups[i]);
    if (w < 0 || (size_t)w >= sizeof r->groups - off)
      break;
    off += (size_t)w;
  }
}

int fl_entity_persist(fl_gw *gw, const fl_entity *e) {
  fl_entity_rec r;
  fl_entity_rec_of(e, &r);
  int rc = fl_store_entity_put(gw->store, &r);
  if (rc)
    fl_gw_count(gw, FL_C_STORE_ERRORS);
  return rc;
}

json_t *fl_entity_ref_json(const fl_entity *e) {
  return json_pack("{s:s, s:s}", "gid", e->gid, "name", e->name);
}

static void fl_entity_load_cb(void *ctx, const fl_entity_rec *r) {
  fl_gw *gw = ctx;
  fl_entity *e = fl_entity_new(gw, r->gid, r->name);
  if (!e)
    return;
  fl_copy(e->role, sizeof e->role, r->role);
  fl_entity_set_groups(e, r->groups);
}

int fl_roster_load(fl_gw *gw, char *err, size_t errlen) {
  int rc = fl_store_entity_each(gw->store, fl_entity_load_cb, gw);
  if (rc)
    fl_errf(err, errlen, "cannot read the roster from %s/holds.db: %s", gw->cfg.state_dir,
            fl_strerror(rc));
  return rc;
}

int fl_roster_host_trusted(fl_gw *gw, const char *host) {
  unsigned char pk[FL_SIGN_PK_BYTES];
  return strcmp(host, gw->cfg.host_id) == 0 || fl_peers_lookup(gw->peers, host, pk) == 0;
}

/* The error for a recipient behind host, which is not pinned here; name is
 * the entity it was looked up as, or NULL when `to` named the host. */
static int fl_unpinned(char *err, size_t errlen, const char *host, const char *name) {
  fl_errf(err, errlen,
          "host '%s' is not pinned here: fleetctl peer add %s KEY (run fleetctl identity on %s "
          "for its key)%s%s%s",
          host, host, host, name ? "; '" : "", name ? name : "", name ? "' is on that host" : "");
  return FL_EUNPINNED;
}

/* When no entity matched name: the unpinned host it seems to be on (a
 * dropped entity's, else one whose refused presence named it), or NULL.
 * buf (n bytes) holds the host when it comes from the backend. */
static const char *fl_behind_unpinned(fl_gw *gw, const char *name, char *buf, size_t n) {
  for (fl_entity *e = gw->entities; e; e = e->next)
    if (e->dropped && strcmp(e->name, name) == 0 && !fl_roster_host_trusted(gw, e->host))
      return e->host;
  if (fl_remote_unpinned_claim(gw, name, buf, n) && !fl_roster_host_trusted(gw, buf))
    return buf;
  return NULL;
}

int fl_roster_resolve(fl_gw *gw, const char *to, fl_entity **out, char *err, size_t errlen) {
  *out = NULL;
  if (fl_is_uuid(to)) {
    fl_entity *e = fl_entity_by_gid(gw, to);
    if (e && !e->dropped && !e->removed) {
      *out = e;
      return 0;
    }
    if (e && !fl_roster_host_trusted(gw, e->host))
      return fl_unpinned(err, errlen, e->host, e->name);
  }
  char name[FL_MAX_NAME + 1];
  const char *at = strchr(to, '@');
  const char *host = at ? at + 1 : NULL;
  size_t nlen = at ? (size_t)(at - to) : strlen(to);
  if (nlen > FL_MAX_NAME)
    nlen = FL_MAX_NAME;
  memcpy(name, to, nlen);
  name[nlen] = '\0';
  /* Another host's entities are only believed once its key is pinned. */
  if (host && *host && fl_remote_on(gw) && !fl_roster_host_trusted(gw, host))
    return fl_unpinned(err, errlen, host, NULL);
  fl_entity *found = NULL;
  size_t matches = 0;
  for (fl_entity *e = gw->entities; e; e = e->next) {
    if (e->dropped || e->removed || strcmp(e->name, name) != 0)
      continue;
    if (host && strcmp(host, fl_entity_host(e)) != 0)
      continue;
    found = e;
    matches++;
  }
  if (matches == 1) {
    *out = found;
    return 0;
  }
  if (matches == 0) {
    char claimed[FL_HOST_ID_SIZE];
    const char *behind = host ? NULL : fl_behind_unpinned(gw, name, claimed, sizeof claimed);
    if (behind)
      return fl_unpinned(err, errlen, behind, name);
    fl_errf(err, errlen,
            "no entity '%s' %s: give a gid, a name or name@host; list the roster to see who "
            "is there",
            to, fl_remote_on(gw) ? "in the roster" : "on this host");
    return FL_ENOTFOUND;
  }
  /* Candidates as name@host, as many as fit: the caller picks one. */
  char list[1024] = "";
  size_t off = 0;
  for (fl_entity *e = gw->entities; e; e = e->next) {
    if (e->dropped || e->removed || strcmp(e->name, name) != 0)
      continue;
    int w = snprintf(list + off, sizeof list - off, " %s@%s", e->name, fl_entity_host(e));
    if (w < 0 || (size_t)w >= sizeof list - off)
      break;
    off += (size_t)w;
  }
  fl_errf(err, errlen, "the name '%s' is on more than one host; use one of:%s", name, list);
  return FL_EAMBIGUOUS;
}

size_t fl_roster_drop_host(fl_gw *gw, const char *host) {
  size_t n = 0;
  for (fl_entity *e = gw->entities; e; e = e->next) {
    if (!e->remote || e->dropped || strcmp(e->host, host) != 0)
      continue;
    /* Kept (until a full roster forgets it) but no longer believed: presence
     * (presence.c) lets a fresh beat revive it, or another host claim its
     * gid. */
    fl_entity_set_dropped(e, 1);
    n++;
  }
  return n;
}

void fl_entity_listed_forget(fl_entity *e) {
  fl_free(e->listed.json);
  fl_free(e->listed.text);
  memset(&e->listed, 0, sizeof e->listed);
}

/* An entity and what it owns, its handles closed. */
static void fl_entity_free(fl_entity *e) {
  fl_entity_listed_forget(e);
  fl_free(e);
}

/* A forgotten entity is freed once both its handles have closed. */
static void fl_forgotten_closed(uv_handle_t *h) {
  fl_entity *e = h->data;
  if (++e->closed == 2)
    fl_entity_free(e);
}

typedef struct fl_stale {
  fl_entity *e;
  long long seen; /* LLONG_MIN for a dropped one: it goes first */
} fl_stale;

static int fl_stale_cmp(const void *a, const void *b) {
  const fl_stale *x = a, *y = b;
  return (x->seen > y->seen) - (x->seen < y->seen);
}

size_t fl_roster_reclaim(fl_gw *gw, size_t want) {
  long long now = fl_mono_ms(); /* presence.expires_ms is monotonic */
  size_t n = 0;
  for (fl_entity *e = gw->entities; e; e = e->next)
    n += e->remote && !e->client && (e->dropped || now > e->presence.expires_ms);
  if (!n || !want)
    return 0;
  fl_stale *v = fl_malloc(n * sizeof *v);
  if (!v)
    return 0;
  size_t k = 0;
  for (fl_entity *e = gw->entities; e && k < n; e = e->next)
    if (e->remote && !e->client && (e->dropped || now > e->presence.expires_ms))
      v[k++] = (fl_stale){e, e->dropped ? LLONG_MIN : e->last_seen_ms};
  qsort(v, k, sizeof *v, fl_stale_cmp);
  if (want > k)
    want = k;
  /* Out of the index first: the walk below tells the forgotten by that. */
  for (size_t i = 0; i < want; i++) {
    fl_gid_index_del(&gw->by_gid, v[i].e->gid);
    if (fl_store_remote_delete(gw->store, v[i].e->gid) != 0)
      fl_gw_count(gw, FL_C_STORE_ERRORS);
  }
  fl_free(v);
  gw->sorted.n = 0; /* the kept order points at the entities freed below */
  for (fl_entity **pp = &gw->entities; *pp;) {
    fl_entity *e = *pp;
    if (e->remote && fl_gid_index_get(&gw->by_gid, e->gid) != e) {
      *pp = e->next;
      gw->nentities--;
      fl_gw_count(gw, FL_C_ROSTER_FORGOTTEN);
      fl_nudge_close(e, fl_forgotten_closed);
    } else {
      pp = &e->next;
    }
  }
  fl_info(NULL,
          "roster is full (%d entities): forgot %zu remote entities that left or were offline "
          "longest",
          FL_MAX_ENTITIES, want);
  return want;
}

void fl_roster_close(fl_gw *gw) {
  for (fl_entity *e = gw->entities; e; e = e->next)
    fl_nudge_close(e, NULL);
}

void fl_roster_free(fl_gw *gw) {
  while (gw->entities) {
    fl_entity *n = gw->entities->next;
    fl_entity_free(gw->entities);
    gw->entities = n;
  }
  gw->nentities = 0;
  fl_free(gw->sorted.v);
  memset(&gw->sorted, 0, sizeof gw->sorted);
  fl_gid_index_free(&gw->by_gid);
}
