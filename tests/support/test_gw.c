/* test_gw.c — a real gateway for C tests (see test_gw.h). */
#include "tests/support/test_gw.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/log.h"
#include "tests/support/test_util.h"

int fl_test_init(void) {
  fl_alloc_init();
  fl_log_set_level(FL_LOG_ERROR);
  return sodium_init() < 0 ? -1 : 0;
}

int fl_test_gw_start(fl_test_gw *t) {
  char err[512];
  int rc = fl_gw_new(&t->loop, &t->cfg, &t->gw, err, sizeof err);
  if (rc)
    fprintf(stderr, "fl_gw_new: %s\n", err);
  return rc;
}

void fl_test_gw_stop(fl_test_gw *t) {
  if (!t->gw)
    return;
  fl_gw_shutdown(t->gw);
  uv_run(&t->loop, UV_RUN_DEFAULT);
  fl_gw_free(&t->gw);
}

int fl_test_gw_open(fl_test_gw *t, const char *tag) {
  memset(t, 0, sizeof *t);
  if (fl_test_tmpdir(tag, t->dir, sizeof t->dir) != 0) {
    fprintf(stderr, "cannot make a temp dir for %s\n", tag);
    return -1;
  }
  uv_loop_init(&t->loop);
  snprintf(t->cfg.host_id, sizeof t->cfg.host_id, "hostA");
  snprintf(t->cfg.state_dir, sizeof t->cfg.state_dir, "%s", t->dir);
  if (fl_test_gw_start(t) != 0) {
    uv_loop_close(&t->loop);
    fl_test_rmtree(t->dir);
    return -1;
  }
  return 0;
}

int fl_test_gw_close(fl_test_gw *t) {
  fl_test_gw_stop(t);
  uv_run(&t->loop, UV_RUN_DEFAULT);
  int rc = uv_loop_close(&t->loop);
  fl_test_rmtree(t->dir);
  return rc;
}

void *fl_test_fixture_new(size_t size, const char *tag) {
  if (size < sizeof(fl_test_gw))
    return NULL;
  fl_test_gw *t = calloc(1, size);
  if (!t || fl_test_init() != 0 || fl_test_gw_open(t, tag) != 0) {
    free(t);
    return NULL;
  }
  return t;
}

int fl_test_fixture_free(void *fixture) {
  int rc = fl_test_gw_close(fixture);
  free(fixture);
  return rc == 0 ? 0 : -1;
}

void *fl_test_fixture_profiles(size_t size, const char *tag) {
  fl_test_gw *t = fl_test_fixture_new(size, tag);
  if (!t)
    return NULL;
  fl_test_gw_stop(t);
  fl_test_add_profile(&t->cfg, "claude", "tmux");
  fl_test_add_profile(&t->cfg, "runner", "exec");
  if (fl_test_gw_start(t) != 0) {
    fl_test_fixture_free(t);
    return NULL;
  }
  return t;
}

void fl_test_add_profile(fl_gw_config *cfg, const char *name, const char *backend) {
  fl_profile *p = &cfg->profiles[cfg->nprofiles++];
  memset(p, 0, sizeof *p);
  snprintf(p->name, sizeof p->name, "%s", name);
  snprintf(p->backend, sizeof p->backend, "%s", backend);
  snprintf(p->role, sizeof p->role, "worker");
  p->ready_timeout_s = 5;
  snprintf(p->launch, sizeof p->launch, "{\"command\":[\"true\"],\"env\":{}}");
}

/* ---- a cross-host backend that does nothing ------------------------------------ */

static int stub_publish(void *ctx, fl_client *c, fl_entity *dst, const fl_msg *m, double w,
                        json_t *on_confirm, fl_gw_cb cb, void *cb_ctx, fl_wait **wait, char *err,
                        size_t errlen) {
  (void)ctx, (void)c, (void)dst, (void)m, (void)w, (void)cb, (void)cb_ctx, (void)wait;
  json_decref(on_confirm);
  fl_errf(err, errlen, "stub");
  return FL_EBROKER;
}
static int stub_broadcast(void *ctx, fl_client *c, const fl_msg *m, const char *group,
                          json_t *on_confirm, fl_gw_cb cb, void *cb_ctx, fl_wait **wait, char *err,
                          size_t errlen) {
  (void)group;
  return stub_publish(ctx, c, NULL, m, 0, on_confirm, cb, cb_ctx, wait, err, errlen);
}
static void stub_entity_changed(void *ctx, fl_entity *e) { (void)ctx, (void)e; }
static void stub_drained(void *ctx, const char *to, const char *id) {
  (void)ctx, (void)to, (void)id;
}
static void stub_void(void *ctx) { (void)ctx; }
static const char *stub_status(void *ctx, const fl_entity *e) {
  (void)ctx, (void)e;
  return "online";
}
static json_t *stub_describe(void *ctx) {
  (void)ctx;
  return NULL;
}
static int stub_claim(void *ctx, const char *name, char *host, size_t n) {
  (void)ctx, (void)name, (void)host, (void)n;
  return 0;
}

const fl_remote_ops fl_test_stub_ops = {
    .publish = stub_publish,
    .broadcast = stub_broadcast,
    .entity_changed = stub_entity_changed,
    .drained = stub_drained,
    .sweep = stub_void,
    .status = stub_status,
    .describe = stub_describe,
    .unpinned_claim = stub_claim,
    .stop = stub_void,
    .free = stub_void,
};
