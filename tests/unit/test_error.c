/* test_error.c — unit tests for common/error.c.
 *
 * Every fleet code must have its own message: a code added to error.h
 * without one would reach a user as "unknown fleet error", so this test
 * walks the whole reserved range. It also checks that a negative errno gets
 * the C library's text and that 0 reads as success. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* After the four above: cmocka.h uses them without including them. */
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "common/error.h"

static void test_every_code_has_a_message(void **state) {
  (void)state;
  for (int code = FL_EBASE; code < FL_ELAST; code++) {
    const char *msg = fl_strerror(code);
    assert_non_null(msg);
    if (strcmp(msg, "unknown fleet error") == 0 || msg[0] == '\0')
      fail_msg("fleet error code %d has no message in FL_ERRORS", code);
  }
}

static void test_codes_are_distinct(void **state) {
  (void)state;
  /* Two codes sharing a message would make a log line ambiguous. */
  for (int a = FL_EBASE; a < FL_ELAST; a++)
    for (int b = a + 1; b < FL_ELAST; b++)
      if (strcmp(fl_strerror(a), fl_strerror(b)) == 0)
        fail_msg("codes %d and %d share the message '%s'", a, b, fl_strerror(a));
}

static void test_errno_and_success(void **state) {
  (void)state;
  assert_string_equal(fl_strerror(0), "success");
  assert_string_equal(fl_strerror(-ENOENT), strerror(ENOENT));
  assert_string_equal(fl_strerror(-EACCES), strerror(EACCES));
  /* Outside both ranges: the generic text, never NULL or another code's. */
  assert_string_equal(fl_strerror(FL_ELAST), "unknown error");
  assert_string_equal(fl_strerror(FL_EBASE - 1), "unknown error");
  assert_string_equal(fl_strerror(1), "unknown error");
  /* The first and last codes map to their own messages (the table's ends). */
  assert_string_equal(fl_strerror(FL_ENOTFOUND), "no such entity");
  assert_string_equal(fl_strerror(FL_ELAST - 1), "host is pinned to a different key");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_code_has_a_message),
      cmocka_unit_test(test_codes_are_distinct),
      cmocka_unit_test(test_errno_and_success),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
