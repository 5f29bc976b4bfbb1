/* test_fabric_settle.c — unit tests for the fabric's unacked deliveries
 * (gateway/fabric/fabric_settle.c): a delivery held for a local agent is
 * remembered by msgId and recipient, acked with its newest tag once its
 * message is drained, or by the sweep once its message is no longer held
 * (expired), and never otherwise.
 *
 * A real single-host gateway gives the store; the fabric is a bare struct
 * inside a burst, so every ack lands in its list of acks held for the
 * burst's commit, where the test reads it (no broker). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* After the four above: cmocka.h uses them without including them. */
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "gateway/core/gw_internal.h"
#include "gateway/fabric/fabric_internal.h"
#include "tests/support/test_gw.h"
#include "tests/support/test_store.h"

typedef struct fixture {
  fl_test_gw g;
  fl_fabric f;
} fixture;

static int setup(void **state) {
  fixture *x = fl_test_fixture_new(sizeof(fixture), "settle");
  if (!x)
    return -1;
  x->f.gw = x->g.gw;
  x->f.unacked_ix.exact = 1; /* as fl_fabric_start makes it */
  x->f.in_batch = 1;         /* acks wait in acks_later, read by the tests */
  *state = x;
  return 0;
}

static int teardown(void **state) {
  fixture *x = *state;
  fl_fabric_unacked_clear(&x->f);
  fl_free(x->f.acks_later);
  return fl_test_fixture_free(x);
}

static void hold(fixture *x, const char *to, const char *id, uint64_t tag) {
  fl_fabric_settle_ops.hold(&x->f, to, id, tag);
}

static void put(fixture *x, const char *id, const char *to) {
  assert_int_equal(fl_test_store_put(x->g.gw->store, id, to), 0);
}

/* The acks so far, in order, then forgets them. */
static size_t acks(fixture *x, uint64_t *out, size_t cap) {
  size_t n = x->f.nacks_later < cap ? x->f.nacks_later : cap;
  if (n)
    memcpy(out, x->f.acks_later, n * sizeof *out);
  x->f.nacks_later = 0;
  return n;
}

/* A drain acks the delivery's newest tag, once; a drain of anything else
 * acks nothing. */
static void test_drained(void **state) {
  fixture *x = *state;
  uint64_t got[8];
  hold(x, "gid-a", "01a2-m1", 11);
  hold(x, "gid-a", "01a2-m2", 12);
  hold(x, "gid-a", "01a2-m1", 13); /* redelivered while held: the old tag is void */
  assert_int_equal(x->f.nunacked, 2);
  fl_fabric_drained(&x->f, "gid-b", "01a2-m1"); /* another recipient's */
  fl_fabric_drained(&x->f, "gid-a", "01a2-m3");
  assert_int_equal(acks(x, got, 8), 0);
  fl_fabric_drained(&x->f, "gid-a", "01a2-m1");
  assert_int_equal(acks(x, got, 8), 1);
  assert_int_equal(got[0], 13);
  fl_fabric_drained(&x->f, "gid-a", "01a2-m1");
  assert_int_equal(acks(x, got, 8), 0);
  fl_fabric_drained(&x->f, "gid-a", "01a2-m2");
  assert_int_equal(acks(x, got, 8), 1);
  assert_int_equal(got[0], 12);
  assert_int_equal(x->f.nunacked, 0);
}

/* msgIds compare byte for byte, as the store's: one sent in two cases is
 * two deliveries, each acked on its own drain. */
static void test_case_apart(void **state) {
  fixture *x = *state;
  uint64_t got[8];
  hold(x, "gid-a", "01a2-abc", 21);
  hold(x, "gid-a", "01A2-ABC", 22);
  assert_int_equal(x->f.nunacked, 2);
  fl_fabric_drained(&x->f, "gid-a", "01A2-ABC");
  assert_int_equal(acks(x, got, 8), 1);
  assert_int_equal(got[0], 22);
  fl_fabric_drained(&x->f, "gid-a", "01a2-abc");
  assert_int_equal(acks(x, got, 8), 1);
  assert_int_equal(got[0], 21);
}

/* The sweep acks exactly the deliveries whose message the store no longer
 * holds (for their own recipient), and keeps the rest for their drain. */
static void test_sweep(void **state) {
  fixture *x = *state;
  uint64_t got[8];
  put(x, "01a2-kept", "gid-a");
  put(x, "01a2-other", "gid-b"); /* held, but for someone else */
  hold(x, "gid-a", "01a2-kept", 31);
  hold(x, "gid-a", "01a2-gone", 32);
  hold(x, "gid-a", "01a2-other", 33);
  fl_fabric_sweep(&x->f);
  size_t n = acks(x, got, 8);
  assert_int_equal(n, 2);
  assert_true((got[0] == 32 && got[1] == 33) || (got[0] == 33 && got[1] == 32));
  assert_int_equal(x->f.nunacked, 1);
  fl_fabric_sweep(&x->f); /* nothing new to settle */
  assert_int_equal(acks(x, got, 8), 0);
  fl_fabric_drained(&x->f, "gid-a", "01a2-kept");
  assert_int_equal(acks(x, got, 8), 1);
  assert_int_equal(got[0], 31);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_drained, setup, teardown),
      cmocka_unit_test_setup_teardown(test_case_apart, setup, teardown),
      cmocka_unit_test_setup_teardown(test_sweep, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
