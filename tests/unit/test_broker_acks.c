/* test_broker_acks.c — unit tests for gateway/broker/broker_acks.c.
 *
 * A multiple ack up to lo - 1 must never cover a delivery that was not
 * settled: lo moves only over settled tags, in order, whatever order the
 * settles come in; a second settle of a tag is told apart; a settle that
 * cannot be remembered stops coalescing rather than guess. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* After the four above: cmocka.h uses them without including them. */
#include <cmocka.h>

#include "gateway/broker/broker_acks.h"

static void test_in_order(void **state) {
  (void)state;
  fl_broker_acks a = {0};
  fl_broker_acks_reset(&a);
  assert_int_equal(a.lo, 1);
  assert_false(fl_broker_acks_covered(&a, 1));
  for (uint64_t t = 1; t <= 100; t++)
    assert_int_equal(fl_broker_acks_settle(&a, t), 0);
  assert_int_equal(a.lo, 101);
  assert_true(fl_broker_acks_covered(&a, 100));
  assert_false(fl_broker_acks_covered(&a, 101));
  fl_broker_acks_free(&a);
}

static void test_hole_holds_lo(void **state) {
  (void)state;
  fl_broker_acks a = {0};
  fl_broker_acks_reset(&a);
  /* 1 is held (its client has not drained it); 2..50 are settled. */
  for (uint64_t t = 2; t <= 50; t++)
    assert_int_equal(fl_broker_acks_settle(&a, t), 0);
  assert_int_equal(a.lo, 1);
  assert_false(fl_broker_acks_covered(&a, 2));
  /* 1 settles: lo jumps over everything settled after it. */
  assert_int_equal(fl_broker_acks_settle(&a, 1), 0);
  assert_int_equal(a.lo, 51);
  assert_true(fl_broker_acks_covered(&a, 50));
  fl_broker_acks_free(&a);
}

static void test_reverse_and_gaps(void **state) {
  (void)state;
  fl_broker_acks a = {0};
  fl_broker_acks_reset(&a);
  assert_int_equal(fl_broker_acks_settle(&a, 5), 0);
  assert_int_equal(fl_broker_acks_settle(&a, 3), 0);
  assert_int_equal(fl_broker_acks_settle(&a, 1), 0);
  assert_int_equal(a.lo, 2); /* 2 is not settled */
  assert_int_equal(fl_broker_acks_settle(&a, 2), 0);
  assert_int_equal(a.lo, 4); /* 4 is not */
  assert_int_equal(fl_broker_acks_settle(&a, 4), 0);
  assert_int_equal(a.lo, 6);
  fl_broker_acks_free(&a);
}

static void test_duplicate(void **state) {
  (void)state;
  fl_broker_acks a = {0};
  fl_broker_acks_reset(&a);
  assert_int_equal(fl_broker_acks_settle(&a, 1), 0);
  assert_int_equal(fl_broker_acks_settle(&a, 1), 1);
  fl_broker_acks_free(&a);
}

static void test_window_wraps(void **state) {
  (void)state;
  fl_broker_acks a = {0};
  fl_broker_acks_reset(&a);
  /* Many times round the ring, with a hole trailing by half a window. */
  uint64_t n = 10 * FL_BROKER_ACKS_WINDOW, lag = FL_BROKER_ACKS_WINDOW / 2;
  for (uint64_t t = 1; t <= n; t++) {
    assert_int_equal(fl_broker_acks_settle(&a, t), 0);
    if (t > lag)
      assert_int_equal(a.lo, t + 1);
  }
  assert_int_equal(a.lo, n + 1);
  fl_broker_acks_free(&a);
}

static void test_beyond_window_stops_coalescing(void **state) {
  (void)state;
  fl_broker_acks a = {0};
  fl_broker_acks_reset(&a);
  /* 1 held; settles up to the window's end are remembered. */
  for (uint64_t t = 2; t <= FL_BROKER_ACKS_WINDOW; t++)
    assert_int_equal(fl_broker_acks_settle(&a, t), 0);
  assert_int_equal(fl_broker_acks_settle(&a, FL_BROKER_ACKS_WINDOW + 1), -1);
  /* Lost: nothing more is remembered, lo never moves again. */
  assert_int_equal(fl_broker_acks_settle(&a, 1), -1);
  assert_int_equal(a.lo, 1);
  assert_false(fl_broker_acks_covered(&a, 2));
  /* A reopened channel starts over. */
  fl_broker_acks_reset(&a);
  assert_int_equal(fl_broker_acks_settle(&a, 1), 0);
  assert_int_equal(a.lo, 2);
  fl_broker_acks_free(&a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_in_order),
      cmocka_unit_test(test_hole_holds_lo),
      cmocka_unit_test(test_reverse_and_gaps),
      cmocka_unit_test(test_duplicate),
      cmocka_unit_test(test_window_wraps),
      cmocka_unit_test(test_beyond_window_stops_coalescing),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
