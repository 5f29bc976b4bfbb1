/* test_refusals.c — unit tests for gateway/fabric/refusals.c.
 *
 * A host refused again and again gets one line, then one per window with
 * the count folded into it; a new reason is a first line again; the table
 * is bounded (the host refused longest ago makes room); the names a host's
 * refused beats announced are found while fresh, and forgotten with it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* After the four above: cmocka.h uses them without including them. */
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/fabric/refusals.h"

#define WINDOW 60000

static void test_one_line_per_window(void **state) {
  (void)state;
  fl_refusals *r = calloc(1, sizeof *r);
  assert_non_null(r);
  unsigned long n = 0;
  long long span = -1;
  /* The first refusal is logged at once. */
  assert_int_equal(fl_refusals_note(r, "trialB", 7, 1000, WINDOW, &n, &span), 1);
  assert_int_equal(n, 1);
  assert_int_equal(span, 0);
  /* A beat every 500 ms for the rest of the minute: folded, not logged. */
  int lines = 0;
  for (long long t = 1500; t < 1000 + WINDOW; t += 500)
    lines += fl_refusals_note(r, "trialB", 7, t, WINDOW, &n, &span);
  assert_int_equal(lines, 0);
  /* The first one past the window carries them all. */
  assert_int_equal(fl_refusals_note(r, "trialB", 7, 1000 + WINDOW, WINDOW, &n, &span), 1);
  assert_int_equal(n, WINDOW / 500);
  assert_int_equal(span, WINDOW);
  /* Then the count starts again. */
  assert_int_equal(fl_refusals_note(r, "trialB", 7, 2000 + WINDOW, WINDOW, &n, &span), 0);
  assert_int_equal(fl_refusals_note(r, "trialB", 7, 1000 + 3 * WINDOW, WINDOW, &n, &span), 1);
  assert_int_equal(n, 2);
  assert_int_equal(span, 2 * WINDOW);
  /* Another host is its own line; a new reason for one is a first line. */
  assert_int_equal(fl_refusals_note(r, "trialC", 7, 1001 + 3 * WINDOW, WINDOW, &n, &span), 1);
  assert_int_equal(fl_refusals_note(r, "trialB", 8, 1002 + 3 * WINDOW, WINDOW, &n, &span), 1);
  assert_int_equal(n, 1);
  assert_int_equal(span, 0);
  assert_int_equal(r->n, 2);
  /* Forgotten (its beats are taken now): the next refusal is a first. */
  fl_refusals_forget(r, "trialB");
  assert_int_equal(r->n, 1);
  assert_int_equal(fl_refusals_note(r, "trialB", 8, 1003 + 3 * WINDOW, WINDOW, &n, &span), 1);
  assert_int_equal(span, 0);
  fl_refusals_forget(r, "nobody"); /* harmless */
  fl_refusals_forget(r, NULL);
  free(r);
}

static void test_bounded(void **state) {
  (void)state;
  fl_refusals *r = calloc(1, sizeof *r);
  assert_non_null(r);
  unsigned long n;
  long long span;
  char host[32];
  for (int i = 0; i < FL_MAX_REFUSING_HOSTS; i++) {
    snprintf(host, sizeof host, "h%d", i);
    assert_int_equal(fl_refusals_note(r, host, 1, 100 + i, WINDOW, &n, &span), 1);
  }
  assert_int_equal(r->n, FL_MAX_REFUSING_HOSTS);
  /* h0 is refused again, so h1 is now the one refused longest ago. */
  assert_int_equal(fl_refusals_note(r, "h0", 1, 500, WINDOW, &n, &span), 0);
  assert_int_equal(fl_refusals_note(r, "new", 1, 600, WINDOW, &n, &span), 1);
  assert_int_equal(r->n, FL_MAX_REFUSING_HOSTS);
  /* h0 is still folding; h1 was evicted, so it is a first line again. */
  assert_int_equal(fl_refusals_note(r, "h0", 1, 700, WINDOW, &n, &span), 0);
  assert_int_equal(fl_refusals_note(r, "h1", 1, 800, WINDOW, &n, &span), 1);
  assert_int_equal(span, 0);
  free(r);
}

static void test_claims(void **state) {
  (void)state;
  fl_refusals *r = calloc(1, sizeof *r);
  assert_non_null(r);
  unsigned long n;
  long long span;
  char host[64] = "";
  /* A host never noted keeps no names. */
  fl_refusals_claim(r, "trialB", "bob");
  assert_int_equal(fl_refusals_claimed(r, "bob", 0, 1000, host, sizeof host), 0);

  fl_refusals_note(r, "trialB", 1, 5000, WINDOW, &n, &span);
  fl_refusals_claim(r, "trialB", "bob");
  fl_refusals_claim(r, "trialB", "bob"); /* once is enough */
  assert_int_equal(fl_refusals_claimed(r, "bob", 5500, 1000, host, sizeof host), 1);
  assert_string_equal(host, "trialB");
  assert_int_equal(fl_refusals_claimed(r, "carol", 5500, 1000, host, sizeof host), 0);
  assert_int_equal(fl_refusals_claimed(r, NULL, 5500, 1000, host, sizeof host), 0);
  /* Stale: its host has not beaten for longer than the caller allows. */
  assert_int_equal(fl_refusals_claimed(r, "bob", 7000, 1000, host, sizeof host), 0);

  /* At most FL_REFUSAL_NAMES names: the oldest goes first. */
  char name[32];
  for (int i = 0; i < FL_REFUSAL_NAMES; i++) {
    snprintf(name, sizeof name, "agent%d", i);
    fl_refusals_claim(r, "trialB", name);
  }
  assert_int_equal(fl_refusals_claimed(r, "bob", 5500, 1000, host, sizeof host), 0);
  assert_int_equal(fl_refusals_claimed(r, "agent0", 5500, 1000, host, sizeof host), 1);
  fl_refusals_forget(r, "trialB");
  assert_int_equal(fl_refusals_claimed(r, "agent0", 5500, 1000, host, sizeof host), 0);
  free(r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_one_line_per_window),
      cmocka_unit_test(test_bounded),
      cmocka_unit_test(test_claims),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
