/* test_alloc.c — unit tests for common/alloc.c's spare big blocks and
 * fl_copy.
 *
 * A freed block of FL_BIG_MIN bytes or more is kept and handed to the next
 * fl_big_malloc it fits, whole (so a writer that grows into it grows no
 * more); a small one is not kept; of the spares the smallest that fits goes
 * first; a spare is handed out once. fleetd's writer and response lines
 * (common/json_writer.c, mcp/tool_result.c) count on each of these. And
 * fl_copy, the bounded string copy everything uses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* After the four above: cmocka.h uses them without including them. */
#include <cmocka.h>

#include <string.h>

#include "common/alloc.h"

#define MIB (1024u * 1024u)

static void test_small_is_plain(void **state) {
  (void)state;
  size_t size = 0;
  char *p = fl_big_malloc(100, &size);
  assert_non_null(p);
  assert_int_equal(size, 100);
  memset(p, 'x', size);
  fl_big_free(p);
  fl_big_free(NULL);
  /* A small freed block is not kept: a big request gets a block of its
   * own size, not a spare of another. */
  char *q = fl_big_malloc(MIB, &size);
  assert_non_null(q);
  assert_int_equal(size, MIB);
  fl_big_free(q);
  fl_alloc_trim();
}

static void test_spare_reused_whole(void **state) {
  (void)state;
  size_t size = 0;
  char *p = fl_big_malloc(2 * MIB, &size);
  assert_non_null(p);
  assert_int_equal(size, 2 * MIB);
  memset(p, 'a', size);
  fl_big_free(p);
  /* A smaller request gets the spare, and is told all it holds. */
  size_t got = 0;
  char *q = fl_big_malloc(FL_BIG_MIN, &got);
  assert_ptr_equal(q, p);
  assert_true(got >= 2 * MIB);
  memset(q, 'b', got); /* all of it is the caller's */
  /* Handed out once: the next request does not get it again. */
  char *r = fl_big_malloc(FL_BIG_MIN, NULL);
  assert_non_null(r);
  assert_ptr_not_equal(r, q);
  /* One over FL_BIG_MAX is not kept: the next request gets a block of its
   * own size, not that one. */
  fl_alloc_trim();
  char *huge = fl_big_malloc(FL_BIG_MAX + MIB, NULL);
  assert_non_null(huge);
  fl_big_free(huge);
  char *after = fl_big_malloc(FL_BIG_MIN, &got);
  assert_non_null(after);
  assert_int_equal(got, FL_BIG_MIN);
  fl_big_free(after);
  /* A request bigger than every spare gets a block of its own. */
  fl_big_free(r);
  char *s = fl_big_malloc(4 * MIB, &got);
  assert_non_null(s);
  assert_ptr_not_equal(s, r);
  assert_int_equal(got, 4 * MIB);
  fl_big_free(s);
  fl_big_free(q);
  fl_alloc_trim();
}

static void test_smallest_fitting_first(void **state) {
  (void)state;
  /* One more block than there are spares, of 1, 2, 3... MiB. */
  enum { N = FL_BIG_SPARES + 1 };
  char *b[N];
  for (size_t i = 0; i < N; i++) {
    b[i] = fl_big_malloc((i + 1) * MIB, NULL);
    assert_non_null(b[i]);
  }
  /* Every spare slot filled, biggest first: the smallest fitting goes
   * first. */
  for (size_t i = N - 1; i >= 1; i--)
    fl_big_free(b[i - 1]);
  for (size_t i = 0; i + 1 < N; i++)
    assert_ptr_equal(fl_big_malloc(MIB / 2, NULL), b[i]);
  /* All full: one more freed takes the place of the smallest, which is
   * freed. */
  for (size_t i = 0; i < N; i++)
    fl_big_free(b[i]);
  size_t got = 0;
  for (size_t i = 1; i < N; i++) {
    assert_ptr_equal(fl_big_malloc(MIB, &got), b[i]);
    assert_true(got >= (i + 1) * MIB);
  }
  for (size_t i = 1; i < N; i++)
    fl_big_free(b[i]);
  fl_alloc_trim();
}

/* fl_copy: the whole string when it fits, else what fits, always
 * terminated; NULL reads as "". */
static void test_copy(void **state) {
  (void)state;
  char d[6];
  memset(d, 'x', sizeof d);
  fl_copy(d, sizeof d, "abc");
  assert_string_equal(d, "abc");
  fl_copy(d, sizeof d, "abcde"); /* exactly fits */
  assert_string_equal(d, "abcde");
  fl_copy(d, sizeof d, "abcdefgh");
  assert_string_equal(d, "abcde");
  fl_copy(d, sizeof d, NULL);
  assert_string_equal(d, "");
  fl_copy(d, 1, "abc");
  assert_string_equal(d, "");
  d[0] = 'q';
  fl_copy(d, 0, "abc"); /* no room at all: untouched */
  assert_int_equal(d[0], 'q');
}

int main(void) {
  fl_alloc_init();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_copy),
      cmocka_unit_test(test_small_is_plain),
      cmocka_unit_test(test_spare_reused_whole),
      cmocka_unit_test(test_smallest_fitting_first),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
