/* test_inbound.c — unit tests for the duplicate rule of gateway/fabric/inbound.c.
 *
 * A delivery whose msgId was seen before is settled by two facts: is it
 * still held here, and did the broker flag it redelivered. Only the broker
 * sets the flag, so an unflagged copy is a replay whatever the store says. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* After the four above: cmocka.h uses them without including them. */
#include <cmocka.h>

#include "gateway/fabric/inbound.h"

static void test_redelivery_of_a_held_message_keeps_it(void **state) {
  (void)state;
  assert_int_equal(fl_inbound_dup_rule(1, 1), FL_DUP_REHOLD);
}

static void test_redelivery_after_drain_is_acked(void **state) {
  (void)state;
  /* Drained and acked, but the ack was lost: handled already. */
  assert_int_equal(fl_inbound_dup_rule(0, 1), FL_DUP_ACK);
}

static void test_fresh_copy_is_a_replay(void **state) {
  (void)state;
  assert_int_equal(fl_inbound_dup_rule(0, 0), FL_DUP_REJECT);
  /* Even while the original is still held. */
  assert_int_equal(fl_inbound_dup_rule(1, 0), FL_DUP_REJECT);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_redelivery_of_a_held_message_keeps_it),
      cmocka_unit_test(test_redelivery_after_drain_is_acked),
      cmocka_unit_test(test_fresh_copy_is_a_replay),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
