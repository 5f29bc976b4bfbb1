/* test_gid_index.c — unit tests for gateway/core/gid_index.c, the roster's index
 * by gid.
 *
 * Covered: an empty index finds nothing; every one of 10000 keys (through
 * many growths) finds its own value, in either case; a key never put is not
 * found; putting a key again (in another case) replaces its value without
 * counting twice; NULL arguments; freeing empties the index; removing
 * every other key of 10000 (in the other case) leaves every remaining key
 * found and every removed one gone, through a second round of puts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* After the four above: cmocka.h uses them without including them. */
#include <cmocka.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "gateway/core/gid_index.h"

#define N 10000

static void key_of(size_t i, char *out) {
  snprintf(out, 37, "%08zx-1111-4222-8333-%012zx", i * 2654435761u % 0xffffffffu, i);
}

static void test_empty(void **state) {
  (void)state;
  fl_gid_index ix = {0};
  assert_null(fl_gid_index_get(&ix, "0b7e3c1a-2f4d-4c8e-9a1b-3d5f7e9a1c2b"));
  assert_null(fl_gid_index_get(NULL, "x"));
  assert_null(fl_gid_index_get(&ix, NULL));
  assert_int_equal(fl_gid_index_put(&ix, NULL, &ix), FL_EINVAL);
  assert_int_equal(fl_gid_index_put(NULL, "x", &ix), FL_EINVAL);
  fl_gid_index_free(&ix);
}

static void test_many(void **state) {
  (void)state;
  static char keys[N][37];
  static int values[N];
  fl_gid_index ix = {0};
  for (size_t i = 0; i < N; i++) {
    key_of(i, keys[i]);
    assert_int_equal(fl_gid_index_put(&ix, keys[i], &values[i]), 0);
  }
  assert_int_equal(ix.n, N);
  assert_true(ix.cap >= 2 * N); /* kept at most half full */
  char upper[37];
  for (size_t i = 0; i < N; i++) {
    assert_ptr_equal(fl_gid_index_get(&ix, keys[i]), &values[i]);
    for (size_t k = 0; k < 37; k++)
      upper[k] = (char)toupper((unsigned char)keys[i][k]);
    assert_ptr_equal(fl_gid_index_get(&ix, upper), &values[i]);
  }
  char absent[37];
  key_of(N + 1, absent);
  assert_null(fl_gid_index_get(&ix, absent));
  fl_gid_index_free(&ix);
  assert_int_equal(ix.n, 0);
  assert_null(fl_gid_index_get(&ix, keys[0]));
}

static void test_replace(void **state) {
  (void)state;
  fl_gid_index ix = {0};
  int a = 1, b = 2;
  assert_int_equal(fl_gid_index_put(&ix, "0b7e3c1a-2f4d-4c8e-9a1b-3d5f7e9a1c2b", &a), 0);
  assert_int_equal(fl_gid_index_put(&ix, "0B7E3C1A-2F4D-4C8E-9A1B-3D5F7E9A1C2B", &b), 0);
  assert_int_equal(ix.n, 1);
  assert_ptr_equal(fl_gid_index_get(&ix, "0b7e3c1a-2f4d-4c8e-9a1b-3d5f7e9a1c2b"), &b);
  fl_gid_index_free(&ix);
}

static void test_del(void **state) {
  (void)state;
  static char keys[N][37];
  static int values[N];
  fl_gid_index ix = {0};
  assert_int_equal(fl_gid_index_del(&ix, "x"), 0);
  for (size_t i = 0; i < N; i++) {
    key_of(i, keys[i]);
    assert_int_equal(fl_gid_index_put(&ix, keys[i], &values[i]), 0);
  }
  char upper[37];
  for (size_t i = 0; i < N; i += 2) {
    for (size_t k = 0; k < 37; k++)
      upper[k] = (char)toupper((unsigned char)keys[i][k]);
    assert_int_equal(fl_gid_index_del(&ix, upper), 1);
    assert_int_equal(fl_gid_index_del(&ix, keys[i]), 0);
  }
  assert_int_equal(ix.n, N / 2);
  for (size_t i = 0; i < N; i++) {
    if (i % 2)
      assert_ptr_equal(fl_gid_index_get(&ix, keys[i]), &values[i]);
    else
      assert_null(fl_gid_index_get(&ix, keys[i]));
  }
  /* The removed keys go back in and are found with the others. */
  for (size_t i = 0; i < N; i += 2)
    assert_int_equal(fl_gid_index_put(&ix, keys[i], &values[i]), 0);
  assert_int_equal(ix.n, N);
  for (size_t i = 0; i < N; i++)
    assert_ptr_equal(fl_gid_index_get(&ix, keys[i]), &values[i]);
  assert_int_equal(fl_gid_index_del(NULL, keys[0]), 0);
  assert_int_equal(fl_gid_index_del(&ix, NULL), 0);
  fl_gid_index_free(&ix);
}

/* An exact index (the fabric's unacked deliveries, by msgId and recipient)
 * keeps keys that differ only in case apart, as the store does: a peer that
 * sends one msgId in two cases must not have the second delivery take the
 * first one's place. It stays exact through growing, deleting and freeing. */
static void test_exact(void **state) {
  (void)state;
  static char keys[N][37], upper[N][37];
  static int values[N], uvalues[N];
  fl_gid_index ix = {0};
  ix.exact = 1;
  for (size_t i = 0; i < N; i++) {
    key_of(i, keys[i]);
    keys[i][9] = 'a'; /* a letter in every key, so its upper case differs */
    for (size_t k = 0; k < 37; k++)
      upper[i][k] = (char)toupper((unsigned char)keys[i][k]);
    assert_int_equal(fl_gid_index_put(&ix, keys[i], &values[i]), 0);
    assert_int_equal(fl_gid_index_put(&ix, upper[i], &uvalues[i]), 0);
  }
  assert_int_equal(ix.n, 2 * N);
  for (size_t i = 0; i < N; i++) {
    assert_ptr_equal(fl_gid_index_get(&ix, keys[i]), &values[i]);
    assert_ptr_equal(fl_gid_index_get(&ix, upper[i]), &uvalues[i]);
  }
  for (size_t i = 0; i < N; i += 2)
    assert_int_equal(fl_gid_index_del(&ix, upper[i]), 1);
  for (size_t i = 0; i < N; i++) {
    assert_ptr_equal(fl_gid_index_get(&ix, keys[i]), &values[i]);
    if (i % 2)
      assert_ptr_equal(fl_gid_index_get(&ix, upper[i]), &uvalues[i]);
    else
      assert_null(fl_gid_index_get(&ix, upper[i]));
  }
  fl_gid_index_free(&ix);
  assert_int_equal(ix.exact, 1);
  assert_int_equal(fl_gid_index_put(&ix, keys[0], &values[0]), 0);
  assert_null(fl_gid_index_get(&ix, upper[0]));
  fl_gid_index_free(&ix);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_empty),   cmocka_unit_test(test_many),  cmocka_unit_test(test_del),
      cmocka_unit_test(test_replace), cmocka_unit_test(test_exact),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
