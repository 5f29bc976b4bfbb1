/* test_store_empty.c — unit tests for gateway/store/store_empty.c: a
 * recipient counted holding nothing is answered 0 without a query until
 * something may have changed that: a message put for it, a savepoint's
 * rollback, a transaction's rollback (explicit, or SQLite's own). The
 * statements the store runs are counted with a trace hook on its database. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* After the four above: cmocka.h uses them without including them. */
#include <cmocka.h>

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "gateway/store/store.h"
#include "gateway/store/store_internal.h"
#include "tests/support/test_store.h"
#include "tests/support/test_util.h"

typedef struct fixture {
  char dir[64];
  char path[128];
  fl_store *s;
  unsigned stmts; /* statements the store's database started */
} fixture;

static int on_trace(unsigned type, void *ctx, void *p, void *x) {
  (void)p;
  (void)x;
  if (type == SQLITE_TRACE_STMT)
    ((fixture *)ctx)->stmts++;
  return 0;
}

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  if (!f || fl_test_store_open("store-empty", f->dir, sizeof f->dir, f->path, sizeof f->path,
                               &f->s) != 0) {
    free(f);
    return -1;
  }
  sqlite3_trace_v2(f->s->db, SQLITE_TRACE_STMT, on_trace, f);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  fl_store_close(&f->s);
  fl_test_rmtree(f->dir);
  free(f);
  return 0;
}

static void put(fl_store *s, const char *id, const char *to) {
  assert_int_equal(fl_test_store_put(s, id, to), 0);
}

/* The count of to, and whether it asked SQLite for it. */
static size_t count(fixture *f, const char *to, int *asked) {
  size_t n = 99;
  unsigned before = f->stmts;
  assert_int_equal(fl_store_count(f->s, to, 0, &n), 0);
  *asked = f->stmts != before;
  return n;
}

static void take_all(fl_store *s, const char *to) {
  fl_msg *msgs = NULL;
  size_t n = 0;
  assert_int_equal(fl_store_take(s, to, NULL, 100, 0, &msgs, &n), 0);
  fl_msgs_free(msgs, n);
}

/* Empty is remembered; a put for anyone, for it or for another, asks again. */
static void test_empty_remembered(void **state) {
  fixture *f = *state;
  int asked = 0;
  assert_int_equal(count(f, "A", &asked), 0);
  assert_true(asked);
  assert_int_equal(count(f, "A", &asked), 0);
  assert_false(asked); /* the feature: no query */
  put(f->s, "m1", "A");
  assert_int_equal(count(f, "A", &asked), 1);
  assert_true(asked);
  assert_int_equal(count(f, "A", &asked), 1);
  assert_true(asked); /* only an empty count is remembered */
  take_all(f->s, "A");
  assert_int_equal(count(f, "A", &asked), 0);
  assert_true(asked);
  assert_int_equal(count(f, "B", &asked), 0);
  assert_int_equal(count(f, "A", &asked), 0);
  assert_false(asked);
  put(f->s, "m2", "B"); /* someone else's message: A still holds nothing */
  assert_int_equal(count(f, "A", &asked), 0);
  assert_false(asked);
  assert_int_equal(count(f, "B", &asked), 1);
  assert_true(asked);
  /* A message handed to its waiting call is never held: no change. */
  fl_msg h;
  memset(&h, 0, sizeof h);
  snprintf(h.msg_id, sizeof h.msg_id, "m3");
  snprintf(h.to_gid, sizeof h.to_gid, "A");
  snprintf(h.kind, sizeof h.kind, "SEND");
  h.content = (char *)"x";
  h.content_len = 1;
  assert_int_equal(fl_store_admit(f->s, &h, FL_ADMIT_HAND), 0);
  assert_int_equal(count(f, "A", &asked), 0);
  assert_false(asked);
}

/* Rows taken inside a transaction that is rolled back are held again. */
static void test_rollback_forgets(void **state) {
  fixture *f = *state;
  int asked = 0;
  put(f->s, "m1", "A");
  /* A whole transaction, rolled back. */
  assert_int_equal(
      sqlite3_exec(f->s->db, "BEGIN; DELETE FROM held WHERE to_gid = 'A'", NULL, NULL, NULL),
      SQLITE_OK);
  assert_int_equal(count(f, "A", &asked), 0);
  assert_int_equal(sqlite3_exec(f->s->db, "ROLLBACK", NULL, NULL, NULL), SQLITE_OK);
  assert_int_equal(count(f, "A", &asked), 1);
  assert_true(asked);
  /* A batch's operation undone alone (its savepoint). */
  assert_int_equal(fl_store_batch_begin(f->s), 0);
  assert_int_equal(fl_store_exec(f->s, FL_ST_SAVEPOINT, NULL, "savepoint"), 0);
  assert_int_equal(sqlite3_exec(f->s->db, "DELETE FROM held WHERE to_gid = 'A'", NULL, NULL, NULL),
                   SQLITE_OK);
  assert_int_equal(count(f, "A", &asked), 0);
  fl_store_rollback(f->s, NULL);
  assert_int_equal(count(f, "A", &asked), 1);
  assert_true(asked);
  assert_int_equal(fl_store_batch_end(f->s), 0);
  assert_int_equal(count(f, "A", &asked), 1);
}

/* More empty recipients than the cache keeps: the newest are remembered,
 * the oldest asked again, and each still counts right. */
static void test_many(void **state) {
  fixture *f = *state;
  int asked = 0;
  char gid[16];
  for (int i = 0; i < 3 * FL_STORE_EMPTY_CACHE; i++) {
    snprintf(gid, sizeof gid, "g%d", i);
    assert_int_equal(count(f, gid, &asked), 0);
  }
  put(f->s, "m1", "g0");
  assert_int_equal(count(f, "g0", &asked), 1);
  snprintf(gid, sizeof gid, "g%d", 3 * FL_STORE_EMPTY_CACHE - 1);
  assert_int_equal(count(f, gid, &asked), 0);
  assert_false(asked);
  assert_int_equal(count(f, "g1", &asked), 0);
  assert_true(asked);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_empty_remembered, setup, teardown),
      cmocka_unit_test_setup_teardown(test_rollback_forgets, setup, teardown),
      cmocka_unit_test_setup_teardown(test_many, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
