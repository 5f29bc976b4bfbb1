/* test_log.c — the line logger: one event is one line, whatever it quotes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka needs the four headers above first. */
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "common/log.h"

static char found[512];

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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_control_bytes_cannot_break_a_line),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
