/* test_ids.c — fleet's ids: v4 UUIDs, and the time-ordered v7 ones that
 * msgIds are, which must rise with the clock so the stores' msgId indexes
 * are written at their end, and still carry their random part. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka needs the four headers above first. */
#include <cmocka.h>

#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/ids.h"
#include "common/time.h"

static void test_v4(void **state) {
  (void)state;
  char a[FL_ID_LEN], b[FL_ID_LEN];
  fl_uuid(a);
  fl_uuid(b);
  assert_true(fl_is_uuid(a));
  assert_int_equal(a[14], '4');
  assert_true(strchr("89ab", a[19]) != NULL);
  assert_string_not_equal(a, b);
}

/* The first 48 bits are the wall clock's milliseconds, as hex. */
static long long id_ms(const char *id) {
  char hex[13];
  memcpy(hex, id, 8);
  memcpy(hex + 8, id + 9, 4);
  hex[12] = '\0';
  return strtoll(hex, NULL, 16);
}

static void test_msg_ids_rise_with_time(void **state) {
  (void)state;
  char prev[FL_ID_LEN], id[FL_ID_LEN];
  long long before = fl_now_ms();
  fl_uuid_msg(prev);
  assert_true(fl_is_uuid(prev));
  assert_int_equal(prev[14], '7');
  assert_true(strchr("89ab", prev[19]) != NULL);
  assert_true(id_ms(prev) >= before && id_ms(prev) <= fl_now_ms());
  for (int i = 0; i < 5; i++) {
    struct timespec ts = {0, 2 * 1000 * 1000};
    nanosleep(&ts, NULL);
    fl_uuid_msg(id);
    /* A later millisecond sorts after, as text too. */
    assert_true(strcmp(id, prev) > 0);
    memcpy(prev, id, sizeof prev);
  }
  /* Within one millisecond the random part tells ids apart. */
  char a[FL_ID_LEN], b[FL_ID_LEN];
  fl_uuid_msg(a);
  fl_uuid_msg(b);
  assert_string_not_equal(a, b);
  assert_string_not_equal(a + 14, b + 14);
}

int main(void) {
  if (sodium_init() < 0)
    return 1;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_v4),
      cmocka_unit_test(test_msg_ids_rise_with_time),
  };
  return cmocka_run_group_tests_name("ids", tests, NULL, NULL);
}
