/* test_approve.c — the pure rules of permission requests
 * (gateway/verbs/approve_rules.h) and the cut they use (common/utf8.h:
 * fl_utf8_prefix).
 *
 * Covered: a decision is exactly "allow" or "deny" (not another case, not
 * padded, not missing); a requestId is not empty and shorter than
 * FL_ID_LEN; a reason is at most FL_MAX_APPROVE_REASON bytes; the input
 * summary passes text up to FL_HOOK_SUMMARY_MAX + 3 bytes as it is (so
 * fleet-hook's own cut, 512 bytes and "…", is not cut again), and cuts
 * longer text at 512 bytes on a character boundary (1-, 2- and 4-byte
 * characters at every alignment) with "…" added, before the first byte
 * that is not UTF-8, always leaving valid UTF-8 of at most 515 bytes; an
 * output buffer too small gets "". */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* After the four above: cmocka.h uses them without including them. */
#include <cmocka.h>

#include <string.h>

#include "common/error.h"
#include "common/limits.h"
#include "common/utf8.h"
#include "gateway/verbs/approve_rules.h"

#define CUT "\xe2\x80\xa6" /* "…" */

static void test_decision(void **state) {
  (void)state;
  char err[256];
  assert_int_equal(fl_approve_check_decision("allow", err, sizeof err), 0);
  assert_int_equal(fl_approve_check_decision("deny", err, sizeof err), 0);
  const char *bad[] = {"Allow", "DENY", "allow ", "", "maybe", "allowed", "denyx"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    err[0] = '\0';
    assert_int_equal(fl_approve_check_decision(bad[i], err, sizeof err), FL_EINVAL);
    assert_non_null(strstr(err, "decision must be \"allow\" or \"deny\""));
  }
  assert_int_equal(fl_approve_check_decision(NULL, err, sizeof err), FL_EINVAL);
  /* A long decision is quoted cut, never overflowing err. */
  char longd[300];
  memset(longd, 'x', sizeof longd - 1);
  longd[sizeof longd - 1] = '\0';
  char small[64];
  assert_int_equal(fl_approve_check_decision(longd, small, sizeof small), FL_EINVAL);
  assert_true(strlen(small) < sizeof small);
}

static void test_request_id(void **state) {
  (void)state;
  char err[256];
  assert_int_equal(
      fl_approve_check_request_id("5b1e7c2a-0000-4000-8000-000000000001", err, sizeof err), 0);
  char id[FL_ID_LEN + 1];
  memset(id, 'a', sizeof id);
  id[FL_ID_LEN - 1] = '\0'; /* FL_ID_LEN - 1 bytes: the longest */
  assert_int_equal(fl_approve_check_request_id(id, err, sizeof err), 0);
  id[FL_ID_LEN - 1] = 'a';
  id[FL_ID_LEN] = '\0'; /* FL_ID_LEN bytes: too long */
  err[0] = '\0';
  assert_int_equal(fl_approve_check_request_id(id, err, sizeof err), FL_EINVAL);
  assert_non_null(strstr(err, "requestId"));
  assert_int_equal(fl_approve_check_request_id("", err, sizeof err), FL_EINVAL);
  assert_int_equal(fl_approve_check_request_id(NULL, err, sizeof err), FL_EINVAL);
}

static void test_reason(void **state) {
  (void)state;
  char err[256];
  static char reason[FL_MAX_APPROVE_REASON + 2];
  assert_int_equal(fl_approve_check_reason(NULL, err, sizeof err), 0);
  assert_int_equal(fl_approve_check_reason("", err, sizeof err), 0);
  memset(reason, 'r', FL_MAX_APPROVE_REASON);
  reason[FL_MAX_APPROVE_REASON] = '\0';
  assert_int_equal(fl_approve_check_reason(reason, err, sizeof err), 0);
  reason[FL_MAX_APPROVE_REASON] = 'r';
  reason[FL_MAX_APPROVE_REASON + 1] = '\0';
  err[0] = '\0';
  assert_int_equal(fl_approve_check_reason(reason, err, sizeof err), FL_ETOOBIG);
  assert_non_null(strstr(err, "reason is 1001 bytes; the limit is 1000"));
}

/* A summary of in: checked to be valid UTF-8 within the bound, its length
 * returned as the text's. */
static size_t summary(const char *in, char *out, size_t outlen) {
  size_t n = fl_approve_summary(in, out, outlen);
  assert_int_equal(n, strlen(out));
  assert_true(n <= FL_HOOK_SUMMARY_MAX + 3);
  assert_true(fl_utf8_valid(out, n));
  return n;
}

static void test_summary_short_passes(void **state) {
  (void)state;
  char out[FL_HOOK_SUMMARY_MAX + 4];
  assert_int_equal(summary(NULL, out, sizeof out), 0);
  assert_string_equal(out, "");
  assert_int_equal(summary("{\"command\":\"ls\"}", out, sizeof out), 16);
  assert_string_equal(out, "{\"command\":\"ls\"}");
  /* fleet-hook's cut (512 bytes and "…": 515) passes as it is. */
  char in[FL_HOOK_SUMMARY_MAX + 8];
  memset(in, 'a', FL_HOOK_SUMMARY_MAX);
  memcpy(in + FL_HOOK_SUMMARY_MAX, CUT, 4);
  assert_int_equal(summary(in, out, sizeof out), FL_HOOK_SUMMARY_MAX + 3);
  assert_string_equal(out, in);
  /* So do 515 bytes of anything. */
  memset(in, 'b', FL_HOOK_SUMMARY_MAX + 3);
  in[FL_HOOK_SUMMARY_MAX + 3] = '\0';
  assert_int_equal(summary(in, out, sizeof out), FL_HOOK_SUMMARY_MAX + 3);
  assert_string_equal(out, in);
}

static void test_summary_cut_ascii(void **state) {
  (void)state;
  char out[FL_HOOK_SUMMARY_MAX + 4], in[2000];
  memset(in, 'c', FL_HOOK_SUMMARY_MAX + 4); /* one byte over: cut */
  in[FL_HOOK_SUMMARY_MAX + 4] = '\0';
  assert_int_equal(summary(in, out, sizeof out), FL_HOOK_SUMMARY_MAX + 3);
  assert_memory_equal(out, in, FL_HOOK_SUMMARY_MAX);
  assert_string_equal(out + FL_HOOK_SUMMARY_MAX, CUT);
  memset(in, 'd', sizeof in - 1);
  in[sizeof in - 1] = '\0';
  assert_int_equal(summary(in, out, sizeof out), FL_HOOK_SUMMARY_MAX + 3);
  assert_string_equal(out + FL_HOOK_SUMMARY_MAX, CUT);
}

/* Text of width-byte characters ch after pad ASCII bytes, long enough to
 * be cut: kept is the most whole characters that fit in 512 bytes. */
static void check_cut(const char *ch, size_t width, size_t pad) {
  char in[3000], out[FL_HOOK_SUMMARY_MAX + 4];
  size_t n = 0;
  memset(in, 'p', pad);
  n = pad;
  while (n + width < sizeof in - 1) {
    memcpy(in + n, ch, width);
    n += width;
  }
  in[n] = '\0';
  size_t want = pad + (FL_HOOK_SUMMARY_MAX - pad) / width * width;
  size_t got = summary(in, out, sizeof out);
  assert_int_equal(got, want + 3);
  assert_memory_equal(out, in, want);
  assert_string_equal(out + want, CUT);
}

static void test_summary_cut_on_a_character_boundary(void **state) {
  (void)state;
  for (size_t pad = 0; pad < 4; pad++) {
    check_cut("\xc3\xa9", 2, pad);         /* é */
    check_cut("\xe2\x82\xac", 3, pad);     /* € */
    check_cut("\xf0\x9f\x98\x80", 4, pad); /* 😀 */
  }
}

static void test_summary_stops_before_bytes_that_are_not_utf8(void **state) {
  (void)state;
  char in[700], out[FL_HOOK_SUMMARY_MAX + 4];
  memset(in, 'e', sizeof in - 1);
  in[sizeof in - 1] = '\0';
  in[10] = (char)0xff;
  assert_int_equal(summary(in, out, sizeof out), 10 + 3);
  assert_memory_equal(out, "eeeeeeeeee" CUT, 13);
  /* A character cut short by the end of the text is not kept either. */
  assert_int_equal(fl_utf8_prefix("ab\xe2\x82", 4, 100), 2);
  assert_int_equal(fl_utf8_prefix("ab\xe2\x82\xac", 5, 100), 5);
  assert_int_equal(fl_utf8_prefix("ab\xe2\x82\xac", 5, 4), 2);
  assert_int_equal(fl_utf8_prefix("abc", 3, 0), 0);
}

static void test_summary_buffer_too_small(void **state) {
  (void)state;
  char out[FL_HOOK_SUMMARY_MAX + 3];
  memset(out, 'x', sizeof out);
  assert_int_equal(fl_approve_summary("ls", out, sizeof out), 0);
  assert_string_equal(out, "");
  assert_int_equal(fl_approve_summary("ls", out, 0), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_decision),
      cmocka_unit_test(test_request_id),
      cmocka_unit_test(test_reason),
      cmocka_unit_test(test_summary_short_passes),
      cmocka_unit_test(test_summary_cut_ascii),
      cmocka_unit_test(test_summary_cut_on_a_character_boundary),
      cmocka_unit_test(test_summary_stops_before_bytes_that_are_not_utf8),
      cmocka_unit_test(test_summary_buffer_too_small),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
