/* remote.c — the seam between the gateway core and its cross-host backend.
 *
 * Two things live here. Starting the backend the composition root lists
 * (gateway/gateway.c, the only place that names one: today "broker", the
 * AMQP fabric) when the configuration names a broker. And the core's calls
 * through the registered operations: with no backend
 * registered (single-host mode) they behave as the gateway always has
 * without a broker — nothing to settle, nothing to announce, and a message
 * for another host fails with "no broker is configured". */
#include "gateway/core/remote.h"

#include <string.h>

#include "common/error.h"
#include "gateway/core/gw_internal.h"

int fl_remote_start(fl_gw *gw, const fl_remote_type *t, char *err, size_t errlen) {
  /* A broker URI is the one way to reach other hosts today. */
  if (!gw->cfg.broker_uri[0] || gw->remote)
    return 0;
  return t->start(gw, err, errlen);
}

int fl_remote_check(fl_gw *gw, char *err, size_t errlen) {
  if (!gw->cfg.broker_uri[0] || gw->remote)
    return 0;
  fl_errf(err, errlen, "this fleetd was built without a broker link");
  return FL_ECONFIG;
}

void fl_gw_set_remote(fl_gw *gw, const fl_remote_ops *ops, void *ctx) {
  gw->remote = ops;
  gw->remote_ctx = ctx;
}

int fl_remote_on(const fl_gw *gw) { return gw->remote != NULL; }

/* A publish with no backend registered (single-host mode): on_confirm is
 * dropped, as a failed publish drops it. */
static int fl_no_remote(json_t *on_confirm, char *err, size_t errlen) {
  json_decref(on_confirm);
  fl_errf(err, errlen, "no broker is configured, so other hosts cannot be reached");
  return FL_EBROKER;
}

int fl_remote_publish(fl_gw *gw, fl_client *c, fl_entity *dst, const fl_msg *m, double then_wait_s,
                      json_t *on_confirm, fl_gw_cb cb, void *ctx, fl_wait **wait, char *err,
                      size_t errlen) {
  *wait = NULL;
  if (!gw->remote)
    return fl_no_remote(on_confirm, err, errlen);
  return gw->remote->publish(gw->remote_ctx, c, dst, m, then_wait_s, on_confirm, cb, ctx, wait, err,
                             errlen);
}

int fl_remote_broadcast(fl_gw *gw, fl_client *c, const fl_msg *m, const char *group,
                        json_t *on_confirm, fl_gw_cb cb, void *ctx, fl_wait **wait, char *err,
                        size_t errlen) {
  *wait = NULL;
  if (!gw->remote)
    return fl_no_remote(on_confirm, err, errlen);
  return gw->remote->broadcast(gw->remote_ctx, c, m, group, on_confirm, cb, ctx, wait, err, errlen);
}

void fl_remote_entity_changed(fl_gw *gw, fl_entity *e) {
  if (gw->remote)
    gw->remote->entity_changed(gw->remote_ctx, e);
}

void fl_remote_drained(fl_gw *gw, const char *to_gid, const char *msg_id) {
  if (gw->remote)
    gw->remote->drained(gw->remote_ctx, to_gid, msg_id);
}

void fl_remote_sweep(fl_gw *gw) {
  if (gw->remote)
    gw->remote->sweep(gw->remote_ctx);
}

const char *fl_remote_status(fl_gw *gw, const fl_entity *e) {
  return gw->remote ? gw->remote->status(gw->remote_ctx, e) : "unknown";
}

json_t *fl_remote_describe(fl_gw *gw) {
  return gw->remote ? gw->remote->describe(gw->remote_ctx) : NULL;
}

int fl_remote_dlq(fl_gw *gw, int op, const char *msg_id, long long older_than_ms, void *req) {
  return gw->remote && gw->remote->dlq
             ? gw->remote->dlq(gw->remote_ctx, op, msg_id, older_than_ms, req)
             : FL_EBROKER;
}

void fl_remote_hosts_write(fl_gw *gw, fl_jw *w) {
  if (gw->remote && gw->remote->hosts)
    gw->remote->hosts(gw->remote_ctx, w);
}

json_t *fl_remote_hosts(fl_gw *gw) {
  return gw->remote && gw->remote->hosts ? fl_jw_array_of(gw->remote->hosts, gw->remote_ctx)
                                         : json_array();
}

int fl_remote_unpinned_claim(fl_gw *gw, const char *name, char *host, size_t hostlen) {
  return gw->remote ? gw->remote->unpinned_claim(gw->remote_ctx, name, host, hostlen) : 0;
}

void fl_remote_remove_inbox(fl_gw *gw, const char *gid) {
  if (gw->remote && gw->remote->remove_inbox)
    gw->remote->remove_inbox(gw->remote_ctx, gid);
}

int fl_remote_spawn(fl_gw *gw, fl_client *c, const char *host, const char *profile,
                    const char *name, const char *brief, double wait_s, fl_gw_cb cb, void *ctx,
                    fl_wait **wait, char *err, size_t errlen) {
  *wait = NULL;
  if (!gw->remote || !gw->remote->spawn_remote) {
    fl_errf(err, errlen,
            "unknown host '%.80s': no broker is configured, so this host ('%s') is the only one "
            "to spawn on",
            host, gw->cfg.host_id);
    return FL_EBROKER;
  }
  return gw->remote->spawn_remote(gw->remote_ctx, c, host, profile, name, brief, wait_s, cb, ctx,
                                  wait, err, errlen);
}

int fl_remote_stop_agent(fl_gw *gw, fl_client *c, fl_entity *e, fl_gw_cb cb, void *ctx,
                         fl_wait **wait, char *err, size_t errlen) {
  *wait = NULL;
  if (!gw->remote || !gw->remote->stop_remote)
    return fl_no_remote(NULL, err, errlen);
  return gw->remote->stop_remote(gw->remote_ctx, c, e, cb, ctx, wait, err, errlen);
}

int fl_remote_approve(fl_gw *gw, fl_client *c, fl_entity *e, const char *request_id,
                      const char *decision, const char *reason, fl_gw_cb cb, void *ctx,
                      fl_wait **wait, char *err, size_t errlen) {
  *wait = NULL;
  if (!gw->remote || !gw->remote->approve_remote)
    return fl_no_remote(NULL, err, errlen);
  return gw->remote->approve_remote(gw->remote_ctx, c, e, request_id, decision, reason, cb, ctx,
                                    wait, err, errlen);
}

void fl_remote_spawn_answer(fl_gw *gw, const struct fl_spawn_origin *o, const json_t *result,
                            const char *err) {
  if (gw->remote && gw->remote->spawn_answer)
    gw->remote->spawn_answer(gw->remote_ctx, o, result, err);
}

int fl_remote_post(fl_gw *gw, fl_entity *dst, const fl_msg *m,
                   void (*done)(void *done_ctx, int status, const char *why), void *done_ctx,
                   char *err, size_t errlen) {
  if (!gw->remote || !gw->remote->post)
    return fl_no_remote(NULL, err, errlen);
  return gw->remote->post(gw->remote_ctx, dst, m, done, done_ctx, err, errlen);
}

void fl_remote_stop(fl_gw *gw) {
  if (gw->remote)
    gw->remote->stop(gw->remote_ctx);
}

void fl_remote_free(fl_gw *gw) {
  if (gw->remote)
    gw->remote->free(gw->remote_ctx);
  gw->remote = NULL;
  gw->remote_ctx = NULL;
}

int fl_remote_publish_claim(fl_gw *gw, const char *msg_id, const char *item, size_t len) {
  if (!gw->remote || !gw->remote->publish_claim)
    return 0;
  return gw->remote->publish_claim(gw->remote_ctx, msg_id, item, len);
}

int fl_remote_receipt(fl_gw *gw, const fl_msg *m) {
  if (!gw->remote || !gw->remote->receipt)
    return FL_EBROKER;
  return gw->remote->receipt(gw->remote_ctx, m);
}
