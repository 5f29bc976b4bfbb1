/* test_log.c — the line logger: one event is one line, whatever it quotes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka needs the four headers above first. */
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/limits.h"
#include "common/log.h"

static char found[FL_LOG_LINE_MAX];

static void keep(void *ctx, const char *line) {
  (void)ctx;
  snprintf(found, sizeof found, "%s", line);
}

static void test_control_bytes_cannot_break_a_line(void **state) {
  (void)state;
  /* As a host id read off the wire could say. */
  const char *host = "evil\n2026-01-01T00:00:00.000Z INFO forged\r\x1b[31mred\x7f";
  fl_warn("t-log-1", "dead-lettered from host '%s': %s", host, "tab\there");
  fl_log_find_trace("t-log-1", keep, NULL);
  assert_non_null(strstr(found, "host 'evil?2026-01-01T00:00:00.000Z INFO forged??[31mred?'"));
  assert_non_null(strstr(found, "tab?here"));
  for (const char *p = found; *p; p++)
    assert_true((unsigned char)*p >= 0x20 && *p != 0x7f);
}

static int hits;
static void count(void *ctx, const char *line) {
  (void)line;
  hits++;
  if (ctx)
    snprintf(found, sizeof found, "%.*s", (int)(sizeof found - 1), line);
}

static int kept(const char *trace) {
  hits = 0;
  fl_log_find_trace(trace, count, NULL);
  return hits;
}

/* Short lines: the ring keeps the newest FL_LOG_TRACE_LINES, whole. */
static void test_ring_keeps_the_newest_lines(void **state) {
  (void)state;
  char trace[32];
  for (int i = 0; i < FL_LOG_TRACE_LINES + 500; i++) {
    snprintf(trace, sizeof trace, "short-%d", i);
    fl_info(trace, "line %d", i);
  }
  assert_int_equal(kept("short-0"), 0);
  assert_int_equal(kept("short-499"), 0);
  assert_int_equal(kept("short-500"), 1);
  assert_int_equal(kept("short-4595"), 1);
  hits = 0;
  fl_log_find_trace("short-4000", count, found);
  assert_int_equal(hits, 1);
  assert_non_null(strstr(found, "[trace=short-4000] line 4000"));
  char tr[64];
  assert_int_equal(fl_log_trace_of("line 4001", tr, sizeof tr), 0);
  assert_string_equal(tr, "short-4001");
}

/* Long lines: as many as fit in FL_LOG_TRACE_BYTES, the newest, each whole
 * across the wrap. */
static void test_ring_bounds_bytes_not_lines(void **state) {
  (void)state;
  char trace[32], pad[900];
  memset(pad, 'x', sizeof pad - 1);
  pad[sizeof pad - 1] = '\0';
  int n = 3 * (int)(FL_LOG_TRACE_BYTES / 900);
  for (int i = 0; i < n; i++) {
    snprintf(trace, sizeof trace, "long-%d", i);
    fl_info(trace, "%s %d", pad, i);
  }
  int fit = (int)(FL_LOG_TRACE_BYTES / 1024); /* surely kept: each line is < 1 KiB */
  for (int i = n - fit; i < n; i++) {
    snprintf(trace, sizeof trace, "long-%d", i);
    hits = 0;
    fl_log_find_trace(trace, count, found);
    assert_int_equal(hits, 1);
    char tail[32];
    snprintf(tail, sizeof tail, "x %d", i);
    assert_non_null(strstr(found, tail));
  }
  int total = 0;
  for (int i = 0; i < n; i++) {
    snprintf(trace, sizeof trace, "long-%d", i);
    total += kept(trace);
  }
  assert_true(total >= fit);
  assert_true(total <= (int)(FL_LOG_TRACE_BYTES / 900) + 1);
  assert_int_equal(kept("long-0"), 0);
}

/* A per-message event is kept for `fleetctl trace` at every level, but
 * written to stderr only at debug; an info line below the level is neither. */
static void test_events_reach_the_ring_not_the_log(void **state) {
  (void)state;
  char path[] = "/tmp/fl-test-log-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  assert_non_null(freopen(path, "w", stderr));
  fl_log_set_level(FL_LOG_INFO);
  fl_event("t-ev-1", "SEND m1 from 'a' held for 'b'");
  fl_info("t-ev-1", "an info line");
  fl_log_set_level(FL_LOG_WARN);
  fl_event("t-ev-1", "SEND m2 from 'a' held for 'b'");
  fl_info("t-ev-1", "an info line below the level");
  fl_log_set_level(FL_LOG_DEBUG);
  fl_event("t-ev-1", "SEND m3 from 'a' held for 'b'");
  fl_log_set_level(FL_LOG_INFO);
  fflush(stderr);
  assert_int_equal(kept("t-ev-1"), 4); /* m1, the info line, m2, m3 */
  char log[4096] = "";
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  size_t n = fread(log, 1, sizeof log - 1, f);
  log[n] = '\0';
  fclose(f);
  unlink(path);
  assert_non_null(freopen("/dev/null", "w", stderr));
  assert_null(strstr(log, "m1"));
  assert_null(strstr(log, "m2"));
  assert_null(strstr(log, "below the level"));
  assert_non_null(strstr(log, "INFO [trace=t-ev-1] an info line"));
  assert_non_null(strstr(log, "DEBUG [trace=t-ev-1] SEND m3"));
}

int main(void) {
  /* Thousands of lines: not to the test's output. */
  if (!freopen("/dev/null", "w", stderr))
    return 1;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_control_bytes_cannot_break_a_line),
      cmocka_unit_test(test_ring_keeps_the_newest_lines),
      cmocka_unit_test(test_ring_bounds_bytes_not_lines),
      cmocka_unit_test(test_events_reach_the_ring_not_the_log),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
