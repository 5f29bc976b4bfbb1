/* test_time.c — unit tests for common/time.c's RFC 3339 timestamps.
 *
 * fl_rfc3339 writes the date with arithmetic, not the C library: it must
 * write exactly what gmtime_r and strftime write, at the edges (the epoch,
 * the ends of days, months and years, leap days of years divisible by 4,
 * 100 and 400, the last millisecond of year 9999) and at many pseudo-random
 * instants in between; times outside 1970..9999 still go through the C
 * library. fl_rfc3339_parse reads every one of them back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* After the four above: cmocka.h uses them without including them. */
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/time.h"

/* What fl_rfc3339 wrote before it did the arithmetic itself. */
static void reference(long long ms, char *out) {
  time_t s = (time_t)(ms / 1000);
  struct tm tm;
  gmtime_r(&s, &tm);
  size_t n = strftime(out, FL_TS_LEN, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(out + n, FL_TS_LEN - n, ".%03dZ", (int)(ms % 1000));
}

static void check(long long ms) {
  char want[FL_TS_LEN], got[FL_TS_LEN];
  reference(ms, want);
  memset(got, 'x', sizeof got);
  fl_rfc3339(ms, got);
  assert_string_equal(got, want);
  if (ms >= 0 && ms < 253402300800000LL) { /* four-digit years parse */
    long long back = -1;
    assert_int_equal(fl_rfc3339_parse(got, &back), 0);
    assert_true(back == ms);
  }
}

static long long utc_ms(int y, int mo, int d, int h, int mi, int s, int milli) {
  struct tm tm = {
      .tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d, .tm_hour = h, .tm_min = mi, .tm_sec = s};
  return (long long)timegm(&tm) * 1000 + milli;
}

static void test_edges(void **state) {
  (void)state;
  check(0);
  check(1);
  check(999);
  check(86399999);
  check(86400000);
  static const int years[] = {1970, 1971, 1972, 1999, 2000, 2001, 2024, 2026,
                              2038, 2100, 2399, 2400, 2401, 4000, 9999};
  for (size_t i = 0; i < sizeof years / sizeof years[0]; i++) {
    int y = years[i];
    for (int mo = 1; mo <= 12; mo++) {
      check(utc_ms(y, mo, 1, 0, 0, 0, 0));
      check(utc_ms(y, mo, 1, 0, 0, 0, 0) - 1); /* the last millisecond of the month before */
      check(utc_ms(y, mo, 28, 23, 59, 59, 999));
    }
    check(utc_ms(y, 2, 29, 12, 0, 0, 5)); /* a leap day, or March 1st */
    check(utc_ms(y, 12, 31, 23, 59, 59, 999));
  }
  check(utc_ms(9999, 12, 31, 23, 59, 59, 999));
  /* Outside 1970..9999: the C library's words. */
  check(utc_ms(10000, 1, 1, 0, 0, 0, 0));
  check(-1000);
}

static void test_many_instants(void **state) {
  (void)state;
  uint64_t x = 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < 200000; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift64 */
    check((long long)(x % 253402300800000ull));
  }
  long long now = fl_now_ms();
  for (long long ms = now - 100000; ms < now + 100000; ms += 7)
    check(ms);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_edges),
      cmocka_unit_test(test_many_instants),
  };
  return cmocka_run_group_tests_name("time", tests, NULL, NULL);
}
