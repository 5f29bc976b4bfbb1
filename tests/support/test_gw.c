/* test_gw.c — a real gateway for C tests (see test_gw.h). */
#include "tests/support/test_gw.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
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
