/* test_alloc.c — unit tests for common/alloc.c's spare big blocks.
 *
 * A freed block of FL_BIG_MIN bytes or more is kept and handed to the next
 * fl_big_malloc it fits, whole (so a writer that grows into it grows no
 * more); a small one is not kept; of two spares the smaller that fits goes
 * first; a spare is handed out once. fleetd's writer and response lines
 * (common/json_writer.c, mcp/tool_result.c) count on each of these. */
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
  char *one = fl_big_malloc(MIB, NULL), *three = fl_big_malloc(3 * MIB, NULL);
  assert_non_null(one);
  assert_non_null(three);
  fl_big_free(three);
  fl_big_free(one);
  assert_ptr_equal(fl_big_malloc(MIB / 2, NULL), one);
  assert_ptr_equal(fl_big_malloc(MIB / 2, NULL), three);
  /* Both out: a third spare beyond the two slots replaces the smaller. */
  char *two = fl_big_malloc(2 * MIB, NULL);
  assert_non_null(two);
  fl_big_free(one);
  fl_big_free(three);
  fl_big_free(two); /* kept in place of one, which is freed */
  size_t got = 0;
  assert_ptr_equal(fl_big_malloc(MIB, &got), two);
  assert_true(got >= 2 * MIB);
  assert_ptr_equal(fl_big_malloc(MIB, NULL), three);
  fl_big_free(two);
  fl_big_free(three);
  fl_alloc_trim();
}

int main(void) {
  fl_alloc_init();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_small_is_plain),
      cmocka_unit_test(test_spare_reused_whole),
      cmocka_unit_test(test_smallest_fitting_first),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
