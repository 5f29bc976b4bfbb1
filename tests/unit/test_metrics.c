/* test_metrics.c — unit tests for the pure parts of gateway/dash/metrics.c and
 * gateway/dash/flows.c: a histogram's buckets and its exposition (cumulative,
 * +Inf equal to the count, the sum in seconds), label escaping, and the flow
 * ring closing a send with its reply's latency and forgetting the oldest. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* After the four above: cmocka.h uses them without including them. */
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "gateway/dash/flows.h"
#include "gateway/dash/metrics.h"

static void test_histogram(void **state) {
  (void)state;
  fl_histo h = {0};
  fl_histo_observe(&h, 0);     /* first bucket (<= 1 ms) */
  fl_histo_observe(&h, 3);     /* <= 5 ms */
  fl_histo_observe(&h, 3);     /* <= 5 ms */
  fl_histo_observe(&h, 40000); /* past the last bound: +Inf only */
  fl_histo_observe(&h, -5);    /* reads as 0 */
  assert_int_equal(h.count, 5);
  assert_int_equal(h.bucket[0], 2);
  assert_int_equal(h.bucket[2], 2);
  char *buf = NULL;
  size_t len = 0, cap = 0;
  assert_int_equal(fl_metrics_put_histo(&buf, &len, &cap, "x_seconds", "Help.", &h), 0);
  assert_int_equal(strlen(buf), len);
  assert_non_null(strstr(buf, "# HELP x_seconds Help.\n# TYPE x_seconds histogram\n"));
  assert_non_null(strstr(buf, "x_seconds_bucket{le=\"0.001\"} 2\n"));
  assert_non_null(strstr(buf, "x_seconds_bucket{le=\"0.0025\"} 2\n"));
  assert_non_null(strstr(buf, "x_seconds_bucket{le=\"0.005\"} 4\n"));
  assert_non_null(strstr(buf, "x_seconds_bucket{le=\"30\"} 4\n"));
  assert_non_null(strstr(buf, "x_seconds_bucket{le=\"+Inf\"} 5\n"));
  assert_non_null(strstr(buf, "x_seconds_sum 40.006000\n"));
  assert_non_null(strstr(buf, "x_seconds_count 5\n"));
  fl_free(buf);
}

static void test_printf_grows(void **state) {
  (void)state;
  char *buf = NULL;
  size_t len = 0, cap = 0;
  char big[6000];
  memset(big, 'a', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  assert_int_equal(fl_metrics_printf(&buf, &len, &cap, "%s", "x"), 0);
  assert_int_equal(fl_metrics_printf(&buf, &len, &cap, "%s|", big), 0);
  assert_int_equal(len, 1 + sizeof big);
  assert_true(cap > len);
  assert_int_equal(buf[0], 'x');
  assert_int_equal(buf[len - 1], '|');
  fl_free(buf);
}

static void test_label(void **state) {
  (void)state;
  char out[32];
  fl_metrics_label(out, sizeof out, "a\"b\\c\nd");
  assert_string_equal(out, "a\\\"b\\\\c\\nd");
  fl_metrics_label(out, 4, "abcdef");
  assert_string_equal(out, "ab");
}

static void test_flows(void **state) {
  (void)state;
  static fl_flows f;
  memset(&f, 0, sizeof f);
  assert_int_equal(fl_flows_add(&f, "m1", "t1", "SEND", "", "alice@a", "bob@a", 1000), -1);
  assert_int_equal(fl_flows_add(&f, "m2", "t1", "REPLY", "m1", "bob@a", "alice@a", 1250), 250);
  /* A second reply to the same send does not count again. */
  assert_int_equal(fl_flows_add(&f, "m3", "t1", "REPLY", "m1", "bob@a", "alice@a", 1300), -1);
  json_t *j = fl_flows_json(&f, 10);
  assert_int_equal(json_array_size(j), 3);
  json_t *send = json_array_get(j, 2);
  assert_string_equal(json_string_value(json_object_get(send, "msgId")), "m1");
  assert_string_equal(json_string_value(json_object_get(send, "status")), "replied");
  assert_true(json_real_value(json_object_get(send, "latencyS")) == 0.25);
  assert_string_equal(json_string_value(json_object_get(json_array_get(j, 0), "inReplyTo")), "m1");
  json_decref(j);
  /* The ring keeps the newest FL_FLOWS_RING. */
  for (int i = 0; i < FL_FLOWS_RING; i++) {
    char id[16];
    snprintf(id, sizeof id, "n%d", i);
    fl_flows_add(&f, id, "t2", "SEND", "", "a@a", "b@a", 2000 + i);
  }
  j = fl_flows_json(&f, FL_FLOWS_RING + 5);
  assert_int_equal(json_array_size(j), FL_FLOWS_RING);
  char last[16];
  snprintf(last, sizeof last, "n%d", FL_FLOWS_RING - 1);
  assert_string_equal(json_string_value(json_object_get(json_array_get(j, 0), "msgId")), last);
  assert_string_equal(
      json_string_value(json_object_get(json_array_get(j, FL_FLOWS_RING - 1), "msgId")), "n0");
  assert_true(json_is_null(json_object_get(json_array_get(j, 0), "latencyS")));
  assert_string_equal(json_string_value(json_object_get(json_array_get(j, 0), "status")), "sent");
  json_decref(j);
  /* A reply to a send that left the ring closes nothing. */
  assert_int_equal(fl_flows_add(&f, "r", "t1", "REPLY", "m1", "b@a", "a@a", 9000), -1);
}

int main(void) {
  fl_alloc_init();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_histogram),
      cmocka_unit_test(test_printf_grows),
      cmocka_unit_test(test_label),
      cmocka_unit_test(test_flows),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
