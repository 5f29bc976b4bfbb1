/* gw.c — the gateway object: its life cycle, status and counters, and the
 * node identity and peer pins an operator manages.
 *
 * fl_gw_open (called by the composition root's fl_gw_new, gateway.h) opens
 * what the gateway owns (the node identity, the pinned peers, the hold
 * store with the roster it holds, the sweeper of expired holds, the
 * forward path) and then starts the feature modules the root listed
 * (module.h), among them the cross-host backend the configuration names,
 * if any (remote.h): from then on the core reaches other hosts only through
 * that backend's operations, and the features only through the rows.
 * fl_gw_shutdown ends every waiting call and closes every handle; the loop
 * runs once more; fl_gw_free frees.
 *
 * All state is owned by the loop thread. */
#include "gateway/gw.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/log.h"
#include "gateway/core/forward.h"
#include "gateway/core/gw_internal.h"
#include "gateway/core/module.h"
#include "gateway/core/remote.h"
#include "gateway/http/http_serve.h"
#include "gateway/proto/pairkey.h"
#include "gateway/store/store_gids.h"

/* How often held messages past their expiry are swept. */
#define FL_SWEEP_MS 30000

#define FL_COUNTER_NAME(name, text) [FL_C_##name] = text,
static const char *const fl_counter_names[FL_C_COUNT] = {FL_COUNTERS(FL_COUNTER_NAME)};
#undef FL_COUNTER_NAME

/* ---- counters and status -------------------------------------------------- */

void fl_gw_count(fl_gw *gw, enum fl_counter c) {
  if (gw && c < FL_C_COUNT)
    gw->counters[c]++;
}

json_t *fl_gw_status(fl_gw *gw) {
  size_t held = 0, online = 0, dropped = 0;
  fl_store_total(gw->store, &held);
  for (fl_entity *e = gw->entities; e; e = e->next) {
    online += e->client != NULL;
    dropped += e->dropped || e->removed;
  }
  json_t *broker = fl_remote_describe(gw);
  json_t *counters = json_object();
  for (int i = 0; i < FL_C_COUNT; i++)
    json_object_set_new(counters, fl_counter_names[i], json_integer((json_int_t)gw->counters[i]));
  /* The HTTP servers' refusals (every module's together). */
  fl_http_stats hs = {0, 0, 0};
  fl_modules_http_stats(gw, &hs);
  json_object_set_new(counters, "http_misdirected", json_integer((json_int_t)hs.misdirected));
  json_object_set_new(counters, "http_dropped_slow", json_integer((json_int_t)hs.dropped_slow));
  json_object_set_new(counters, "http_refused_busy", json_integer((json_int_t)hs.refused_busy));
  json_t *res = json_pack(
      "{s:s, s:s, s:I, s:I, s:s, s:s, s:o?, s:s, s:I, s:I, s:I, s:I, s:o, s:{s:s}}", "hostId",
      gw->cfg.host_id, "version", FLEET_VERSION, "pid", (json_int_t)getpid(), "uptimeS",
      (json_int_t)((fl_now_ms() - gw->started_ms) / 1000), "socket", gw->cfg.socket, "stateDir",
      gw->cfg.state_dir, "broker", broker, "mode", gw->cfg.broker_uri[0] ? "broker" : "single-host",
      "clients", (json_int_t)gw->nclients, "entities", (json_int_t)(gw->nentities - dropped),
      "online", (json_int_t)online, "held", (json_int_t)held, "counters", counters, "store",
      "synchronous", gw->cfg.store_sync_full ? "full" : "normal");
  fl_modules_describe(gw, res); /* "http", "coordinator", ... */
  return res;
}

void fl_gw_set_status_source(fl_gw *gw, fl_gw_status_fn fn, void *ctx) {
  gw->status_fn = fn;
  gw->status_ctx = ctx;
}

json_t *fl_gw_status_full(fl_gw *gw) {
  return gw->status_fn ? gw->status_fn(gw->status_ctx) : fl_gw_status(gw);
}

/* ---- life cycle ------------------------------------------------------------ */

static void fl_sweep_cb(uv_timer_t *t) {
  fl_gw *gw = t->data;
  size_t dropped = 0;
  if (fl_store_check_file(gw->store) != 0 || fl_store_expire(gw->store, fl_now_ms(), &dropped) != 0)
    fl_gw_count(gw, FL_C_STORE_ERRORS);
  else if (dropped)
    fl_remote_sweep(gw);
  if (dropped) {
    gw->counters[FL_C_MSGS_EXPIRED] += dropped;
    fl_warn(NULL, "sweeper: dropped %zu held message(s) past their expiry", dropped);
  }
}

int fl_gw_open(uv_loop_t *loop, const fl_gw_config *cfg, const fl_module *const *rows, size_t n,
               fl_gw **out, char *err, size_t errlen) {
  char path[FL_MAX_PATH + 32];
  int rc;
  *out = NULL;
  fl_gw *gw = fl_calloc(1, sizeof *gw);
  if (!gw) {
    fl_errf(err, errlen, "out of memory");
    return FL_ENOMEM;
  }
  gw->loop = loop;
  gw->cfg = *cfg;
  gw->modules = rows;
  gw->nmodules = n;
  gw->started_ms = fl_now_ms();
  if ((rc = fl_identity_load(cfg->state_dir, cfg->host_id, &gw->id, err, errlen)) ||
      (rc = fl_peers_load(cfg->state_dir, &gw->peers, err, errlen)))
    goto fail;
  snprintf(path, sizeof path, "%s/holds.db", cfg->state_dir);
  if ((rc = fl_store_open(path, &gw->store)) ||
      (rc = fl_store_set_sync(gw->store, cfg->store_sync_full))) {
    fl_errf(err, errlen, "cannot open the hold store %s: %s", path, fl_strerror(rc));
    goto fail;
  }
  if (cfg->store_max_seen)
    fl_store_set_max_seen(gw->store, cfg->store_max_seen);
  if ((rc = fl_roster_load(gw, err, errlen)))
    goto fail;
  uv_timer_init(loop, &gw->sweep);
  gw->sweep.data = gw;
  uv_timer_start(&gw->sweep, fl_sweep_cb, FL_SWEEP_MS, FL_SWEEP_MS);
  uv_unref((uv_handle_t *)&gw->sweep);
  if ((rc = fl_forward_start(gw))) {
    fl_errf(err, errlen, "cannot start the forward path: %s", fl_strerror(rc));
    uv_close((uv_handle_t *)&gw->sweep, NULL);
    goto fail;
  }
  if ((rc = fl_modules_start(gw, err, errlen)) || (rc = fl_remote_check(gw, err, errlen))) {
    fl_modules_stop(gw);
    uv_close((uv_handle_t *)&gw->sweep, NULL);
    uv_run(loop, UV_RUN_NOWAIT);
    fl_modules_free(gw);
    goto fail;
  }
  *out = gw;
  return 0;

fail:
  fl_forward_stop(gw);
  uv_run(loop, UV_RUN_NOWAIT);
  fl_forward_free(gw);
  fl_store_close(&gw->store);
  fl_peers_free(&gw->peers);
  fl_identity_clear(&gw->id);
  fl_roster_close(gw);
  uv_run(loop, UV_RUN_NOWAIT);
  fl_roster_free(gw);
  fl_free(gw);
  return rc;
}

json_t *fl_gw_bounds(fl_gw *gw) {
  /* A brief's typing deadline is inject.timeoutS from its send, and its
   * sender hears "failed" FL_INJECT_MARGIN_MS after it at the latest
   * (forward.h). */
  return json_pack("{s:i, s:i, s:i}", "maxWaitS", FL_MAX_WAIT_S, "briefS",
                   (int)(gw->cfg.inject.timeout_s + FL_INJECT_MARGIN_MS / 1000), "stopS",
                   FL_REMOTE_STOP_WAIT_S);
}

json_t *fl_gw_identity(fl_gw *gw) {
  return json_pack("{s:s, s:s}", "hostId", gw->cfg.host_id, "publicKey", gw->id.pk_b64);
}

json_t *fl_gw_peers(fl_gw *gw) {
  json_t *arr = json_array();
  for (size_t i = 0; i < fl_peers_count(gw->peers); i++) {
    const fl_peer *p = fl_peers_at(gw->peers, i);
    json_array_append_new(arr,
                          json_pack("{s:s, s:s, s:s*, s:s, s:o*}", "host", p->host, "publicKey",
                                    p->pk_b64, "url", p->url[0] ? p->url : NULL, "pinnedAt",
                                    p->pinned_at, "sync", fl_modules_peer_json(gw, p->host)));
  }
  return json_pack("{s:o}", "peers", arr);
}

int fl_gw_peer_add(fl_gw *gw, const char *host, const char *pk, const char *url, char *err,
                   size_t errlen) {
  if (host && strcmp(host, gw->cfg.host_id) == 0) {
    fl_errf(err, errlen, "'%s' is this gateway's own host id; pin other hosts' keys", host);
    return FL_EINVAL;
  }
  int rc = fl_peers_add(gw->peers, host, pk, url, err, errlen);
  if (rc == FL_EPINNED)
    fl_warn(NULL, "refused to pin a different key for host '%s': %s", host, err);
  if (rc == 0 && (rc = fl_peers_save(gw->peers, err, errlen)) == 0)
    fl_info(NULL, "pinned host '%s' to key %s", host, pk);
  return rc;
}

int fl_gw_peer_remove(fl_gw *gw, const char *host, char *err, size_t errlen) {
  int rc = fl_peers_remove(gw->peers, host);
  if (rc == 0) /* its keys go with its pin; a new pin makes new ones */
    fl_pairkeys_drop(gw->pairkeys, host);
  if (rc == FL_ENOTFOUND) {
    fl_errf(err, errlen, "no pin for host '%s' (fleetctl peer list shows the pins)", host);
    return rc;
  }
  if (rc == 0 && (rc = fl_peers_save(gw->peers, err, errlen)) == 0) {
    /* Its entities are no longer believed: out of the roster now, and out
     * of the store's memory, until it is pinned again and beats. */
    size_t n = fl_roster_drop_host(gw, host);
    if (fl_store_remote_drop_host(gw->store, host) != 0)
      fl_gw_count(gw, FL_C_STORE_ERRORS);
    fl_info(NULL, "removed the pin of host '%s'; %zu of its entities left the roster", host, n);
  }
  return rc;
}

int fl_gw_gid_release(fl_gw *gw, const char *gid, char *owner, size_t ownerlen, char *err,
                      size_t errlen) {
  if (!gid || !fl_is_uuid(gid)) {
    fl_errf(err, errlen, "'%.40s' is not a gid (a UUID; fleetctl roster --json shows them)",
            gid ? gid : "");
    return FL_EINVAL;
  }
  int rc = fl_store_gid_owner(gw->store, gid, owner, ownerlen);
  if (rc == 0)
    rc = fl_store_gid_release(gw->store, gid);
  if (rc == FL_ENOTFOUND) {
    fl_errf(err, errlen, "no host owns gid %s here: any host may announce it", gid);
    return rc;
  }
  if (rc) {
    fl_errf(err, errlen, "could not release gid %s: %s", gid, fl_strerror(rc));
    return rc;
  }
  if (!owner[0])
    fl_copy(owner, ownerlen, gw->cfg.host_id);
  /* A remote entity under it is no longer believed, so the next host to
   * announce the gid owns it (its old host, if that one beats first). */
  fl_entity *e = fl_entity_by_gid(gw, gid);
  if (e && e->remote) {
    fl_entity_set_dropped(e, 1);
    if (fl_store_remote_delete(gw->store, gid) != 0)
      fl_gw_count(gw, FL_C_STORE_ERRORS);
  }
  fl_warn(NULL, "operator released gid %s from host '%s': the next host to announce it owns it",
          gid, owner);
  return 0;
}

void fl_gw_shutdown(fl_gw *gw) {
  if (!gw || gw->shutting_down)
    return;
  gw->shutting_down = 1;
  for (fl_entity *e = gw->entities; e; e = e->next) {
    if (e->client) {
      while (e->client->waits)
        fl_wait_expire(e->client->waits);
    }
  }
  /* The module rows first, in table order (module.h), while the core's
   * own parts still run; then the forward path, roster timers, sweeper. */
  fl_modules_stop(gw);
  fl_forward_stop(gw);
  fl_roster_close(gw);
  uv_close((uv_handle_t *)&gw->sweep, NULL);
}

void fl_gw_free(fl_gw **gwp) {
  if (!gwp || !*gwp)
    return;
  fl_gw *gw = *gwp;
  fl_modules_free(gw);
  fl_forward_free(gw);
  fl_peers_free(&gw->peers);
  fl_identity_clear(&gw->id);
  fl_roster_free(gw);
  fl_store_close(&gw->store);
  fl_free(gw);
  *gwp = NULL;
}
