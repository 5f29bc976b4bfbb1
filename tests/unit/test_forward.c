/* test_forward.c — unit tests for the forward path's pure parts: the brief
 * record's state machine (gateway/store_forward.c) and the exec backend
 * (gateway/inject_exec.c).
 *
 * The record: a brief is queued once (a second put of its key is refused,
 * whatever state it is in, also after a close and reopen, so a redelivered
 * or replayed copy is never typed twice); briefs of one entity come out
 * oldest first; a finished brief drops its content and stops being queued;
 * a brief left "typing" (fleetd died mid-typing) becomes failed on
 * fail_typing and is never handed out again; unreported outcomes are
 * listed until marked; pruning by age removes only finished briefs.
 *
 * The exec backend: the command gets the message byte for byte on stdin
 * and exit 0 is delivered; a non-zero exit is a failure with a reason; a
 * command that cannot start is an error at once; the backend needs argv. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "gateway/inject.h"
#include "gateway/store_forward.h"
#include "tests/support/test_util.h"

typedef struct fixture {
  char dir[64];
  char path[128];
  fl_store *s;
} fixture;

static int setup(void **state) {
  fl_alloc_init();
  fixture *f = calloc(1, sizeof *f);
  if (!f || fl_test_tmpdir("forward", f->dir, sizeof f->dir) != 0) {
    free(f);
    return -1;
  }
  snprintf(f->path, sizeof f->path, "%s/holds.db", f->dir);
  if (fl_store_open(f->path, &f->s) != 0) {
    fl_test_rmtree(f->dir);
    free(f);
    return -1;
  }
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  fl_store_close(&f->s);
  fl_test_rmtree(f->dir);
  free(f);
  return 0;
}

static fl_fwd brief(const char *id, const char *to, const char *text, int64_t at) {
  fl_fwd b;
  memset(&b, 0, sizeof b);
  snprintf(b.msg_id, sizeof b.msg_id, "%s", id);
  snprintf(b.to_gid, sizeof b.to_gid, "%s", to);
  snprintf(b.from_gid, sizeof b.from_gid, "sender");
  snprintf(b.sender_host, sizeof b.sender_host, "hostA");
  b.at_ms = at;
  b.deadline_ms = at + 1000;
  b.content = (char *)text;
  b.content_len = strlen(text);
  return b;
}

static void test_queue_order_and_dedup(void **state) {
  fixture *f = *state;
  fl_fwd a = brief("m1", "w", "first", 100), b = brief("m2", "w", "second", 101),
         c = brief("m3", "other", "elsewhere", 102);
  assert_int_equal(fl_store_fwd_put(f->s, &a), 0);
  assert_int_equal(fl_store_fwd_put(f->s, &b), 0);
  assert_int_equal(fl_store_fwd_put(f->s, &c), 0);
  assert_int_equal(fl_store_fwd_put(f->s, &a), FL_EDUP);

  fl_fwd got;
  assert_int_equal(fl_store_fwd_next(f->s, "w", &got), 0);
  assert_string_equal(got.msg_id, "m1");
  assert_string_equal(got.content, "first");
  assert_int_equal(got.state, FL_FWD_QUEUED);
  assert_string_equal(got.sender_host, "hostA");
  fl_fwd_clear(&got);

  assert_int_equal(fl_store_fwd_set(f->s, "m1", "w", FL_FWD_TYPING, NULL), 0);
  assert_int_equal(fl_store_fwd_next(f->s, "w", &got), 0);
  assert_string_equal(got.msg_id, "m2"); /* m1 is in hand, not queued */
  fl_fwd_clear(&got);
  assert_int_equal(fl_store_fwd_set(f->s, "m1", "w", FL_FWD_INJECTED, NULL), 0);
  assert_int_equal(fl_store_fwd_get(f->s, "m1", "w", &got), 0);
  assert_int_equal(got.state, FL_FWD_INJECTED);
  assert_int_equal(got.content_len, 0); /* finished: content dropped */
  fl_fwd_clear(&got);
  /* Finished, it still refuses a second copy. */
  assert_int_equal(fl_store_fwd_put(f->s, &a), FL_EDUP);
  assert_int_equal(fl_store_fwd_set(f->s, "nope", "w", FL_FWD_FAILED, "x"), FL_ENOTFOUND);
}

static void test_restart_fails_typing_and_keeps_dedup(void **state) {
  fixture *f = *state;
  fl_fwd a = brief("m1", "w", "typed half", 100), b = brief("m2", "w", "not started", 101);
  assert_int_equal(fl_store_fwd_put(f->s, &a), 0);
  assert_int_equal(fl_store_fwd_put(f->s, &b), 0);
  assert_int_equal(fl_store_fwd_set(f->s, "m1", "w", FL_FWD_TYPING, NULL), 0);

  /* kill -9 stands in for a close; the reopened store is the next fleetd. */
  fl_store_close(&f->s);
  assert_int_equal(fl_store_open(f->path, &f->s), 0);
  size_t n = 0;
  assert_int_equal(fl_store_fwd_fail_typing(f->s, "gateway restarted while typing", &n), 0);
  assert_int_equal(n, 1);
  fl_fwd got;
  assert_int_equal(fl_store_fwd_get(f->s, "m1", "w", &got), 0);
  assert_int_equal(got.state, FL_FWD_FAILED);
  assert_string_equal(got.reason, "gateway restarted while typing");
  fl_fwd_clear(&got);
  /* The one never started is still queued; the typed one never comes back. */
  assert_int_equal(fl_store_fwd_next(f->s, "w", &got), 0);
  assert_string_equal(got.msg_id, "m2");
  fl_fwd_clear(&got);
  assert_int_equal(fl_store_fwd_put(f->s, &a), FL_EDUP);
}

static int nreported;
static void count_unreported(void *ctx, const fl_fwd *f) {
  (void)ctx;
  (void)f;
  nreported++;
}

static void test_unreported_and_prune(void **state) {
  fixture *f = *state;
  fl_fwd a = brief("m1", "w", "a", 100), b = brief("m2", "w", "b", 5000);
  assert_int_equal(fl_store_fwd_put(f->s, &a), 0);
  assert_int_equal(fl_store_fwd_put(f->s, &b), 0);
  assert_int_equal(fl_store_fwd_set(f->s, "m1", "w", FL_FWD_FAILED, "no"), 0);
  nreported = 0;
  assert_int_equal(fl_store_fwd_each_unreported(f->s, 10, count_unreported, NULL), 0);
  assert_int_equal(nreported, 1); /* m2 is still queued: nothing to report */
  assert_int_equal(fl_store_fwd_reported(f->s, "m1", "w"), 0);
  nreported = 0;
  assert_int_equal(fl_store_fwd_each_unreported(f->s, 10, count_unreported, NULL), 0);
  assert_int_equal(nreported, 0);

  size_t n = 0;
  assert_int_equal(fl_store_fwd_prune(f->s, 10000, &n), 0);
  assert_int_equal(n, 1); /* only the finished one, however old the queued one is */
  fl_fwd got;
  assert_int_equal(fl_store_fwd_get(f->s, "m1", "w", &got), FL_ENOTFOUND);
  assert_int_equal(fl_store_fwd_get(f->s, "m2", "w", &got), 0);
  fl_fwd_clear(&got);
}

/* ---- exec backend ---- */

typedef struct exec_result {
  int done;
  int status;
  char why[160];
} exec_result;

static void exec_done(void *ctx, int status, enum fl_inject_state seen, const char *why) {
  exec_result *r = ctx;
  (void)seen;
  r->done++;
  r->status = status;
  snprintf(r->why, sizeof r->why, "%s", why ? why : "");
}

static void run_loop(uv_loop_t *loop) { uv_run(loop, UV_RUN_DEFAULT); }

static void test_exec_gets_stdin(void **state) {
  fixture *f = *state;
  const fl_inject_type *b = fl_inject_lookup("exec");
  assert_non_null(b);
  assert_null(b->status);
  char out[160], script[256];
  snprintf(out, sizeof out, "%s/got.txt", f->dir);
  snprintf(script, sizeof script, "cat > '%s'", out);
  const char *argv[] = {"/bin/sh", "-c", script, NULL};
  fl_inject_target t = {.label = "x", .argv = argv};
  const char text[] = "line one \"q\" $(no)\nline\ttwo\\\n";
  uv_loop_t loop;
  uv_loop_init(&loop);
  exec_result r = {0};
  assert_int_equal(b->deliver(&loop, &t, text, sizeof text - 1, exec_done, &r), 0);
  run_loop(&loop);
  assert_int_equal(r.done, 1);
  assert_int_equal(r.status, 0);
  FILE *fp = fopen(out, "rb");
  assert_non_null(fp);
  char got[256];
  size_t n = fread(got, 1, sizeof got, fp);
  fclose(fp);
  assert_int_equal(n, sizeof text - 1);
  assert_memory_equal(got, text, n);

  const char *fail_argv[] = {"/bin/sh", "-c", "cat >/dev/null; exit 3", NULL};
  t.argv = fail_argv;
  memset(&r, 0, sizeof r);
  assert_int_equal(b->deliver(&loop, &t, "x", 1, exec_done, &r), 0);
  run_loop(&loop);
  assert_int_equal(r.done, 1);
  assert_true(r.status < 0);
  assert_non_null(strstr(r.why, "status 3"));

  const char *missing[] = {"/nonexistent/agent-runner", NULL};
  t.argv = missing;
  memset(&r, 0, sizeof r);
  assert_true(b->deliver(&loop, &t, "x", 1, exec_done, &r) < 0);
  run_loop(&loop);
  assert_int_equal(r.done, 0); /* failed to start: done never runs */

  t.argv = NULL;
  assert_int_equal(b->deliver(&loop, &t, "x", 1, exec_done, &r), FL_EINVAL);
  assert_int_equal(uv_loop_close(&loop), 0);
}

static void test_backend_table(void **state) {
  (void)state;
  assert_non_null(fl_inject_lookup("tmux"));
  assert_non_null(fl_inject_lookup("tmux")->deliver);
  const fl_inject_type *none = fl_inject_lookup("none");
  assert_non_null(none);
  assert_null(none->deliver); /* held for a pull */
  assert_null(fl_inject_lookup("herdr"));
  assert_null(fl_inject_lookup(NULL));
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_queue_order_and_dedup), T(test_restart_fails_typing_and_keeps_dedup),
      T(test_unreported_and_prune),  T(test_exec_gets_stdin),
      T(test_backend_table),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
