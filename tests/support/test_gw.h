/* test_gw.h — a real gateway for C tests: a temporary state dir, a libuv
 * loop and fl_gw_new with no broker (single-host mode), set up and torn
 * down the same way by every test that needs one.
 *
 * The struct is meant to be embedded in a test's own fixture. Everything
 * runs on the test's thread, which is the loop's. */
#ifndef FL_TEST_GW_H
#define FL_TEST_GW_H

#include <uv.h>

#include "gateway/core/remote.h"
#include "gateway/gateway.h"

typedef struct fl_test_gw {
  char dir[64]; /* the state dir, removed by fl_test_gw_close */
  uv_loop_t loop;
  fl_gw_config cfg; /* host "hostA", state_dir = dir; tests may change it */
  fl_gw *gw;        /* open between fl_test_gw_start and fl_test_gw_stop */
} fl_test_gw;

/* Once per test program: the allocator, a quiet log, libsodium. 0 or -1. */
int fl_test_init(void);
/* Makes /tmp/fleet-<tag>-XXXXXX, inits the loop and cfg, and starts the
 * gateway. 0, or -1 with the reason on stderr (nothing left behind). */
int fl_test_gw_open(fl_test_gw *t, const char *tag);
/* Opens t->gw from t->cfg: again after fl_test_gw_stop, to see what a
 * restart keeps. 0, or fl_gw_new's code with its message on stderr. */
int fl_test_gw_start(fl_test_gw *t);
/* Shuts the gateway down, runs the loop until its handles are closed and
 * frees it. NULL-safe on t->gw. */
void fl_test_gw_stop(fl_test_gw *t);
/* Stops the gateway, closes the loop and removes the state dir. Returns
 * uv_loop_close's status: 0 unless a handle was left open. */
int fl_test_gw_close(fl_test_gw *t);

/* A cmocka fixture whose first member is an fl_test_gw: allocates size
 * zeroed bytes, runs fl_test_init and opens the gateway (fl_test_gw_open
 * with tag). NULL on failure, nothing left behind. */
void *fl_test_fixture_new(size_t size, const char *tag);
/* Closes the fixture's gateway (fl_test_gw_close) and frees it. 0, or -1
 * when a handle was left open (a test teardown's return value). */
int fl_test_fixture_free(void *fixture);

/* Adds a spawn profile called name with backend ("tmux" or "exec") to cfg:
 * role worker, a 5 s ready timeout, and `true` as its command. */
void fl_test_add_profile(fl_gw_config *cfg, const char *name, const char *backend);
/* fl_test_fixture_new, with the gateway restarted with two spawn profiles:
 * "claude" (tmux) and "runner" (exec). NULL on failure. */
void *fl_test_fixture_profiles(size_t size, const char *tag);

/* A cross-host backend that does nothing: publishes and broadcasts fail
 * with "stub" (FL_EBROKER), every remote entity reads "online", it lists no
 * hosts, describes nothing and knows no unpinned claims. A test copies it
 * into ops that live as long as the gateway and overrides what it needs,
 * then gives them to fl_gw_set_remote. */
extern const fl_remote_ops fl_test_stub_ops;

#endif
