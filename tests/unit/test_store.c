/* test_store.c — unit tests for gateway/store/store.c.
 *
 * Every test opens a fresh store in its own mkdtemp directory and removes it
 * afterwards. Covered: take order (oldest first), the from filter, max,
 * take by id, dedup by (msgId, to) including after a drain and across two
 * recipients, the per-entity cap, expiry (skipped by take, removed by
 * expire), the seen-set trim, counts, entities, persistence across a
 * close/reopen, the 0600 file mode, argument errors, and allocation failure
 * injected through fl_alloc_fail_after(). The cap and seen-trim tests fill
 * tables through a second SQLite connection in one transaction, so they stay
 * fast under ASan while still exercising the store's own checks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* After the four above: cmocka.h uses them without including them. */
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/error.h"
#include "gateway/store/store.h"
#include "gateway/store/store_forward.h"
#include "gateway/store/store_internal.h" /* the journal, the statements */
#include "tests/support/test_store.h"
#include "tests/support/test_util.h"

typedef struct fixture {
  char dir[64];
  char path[128];
  fl_store *s;
} fixture;

/* Closes the store and removes the temp dir with everything in it (the
 * database, its -wal and -shm, and files a test made). */
static void fixture_free(fixture *f) {
  fl_alloc_fail_after(-1);
  fl_store_close(&f->s);
  fl_test_rmtree(f->dir);
  free(f);
}

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  if (!f ||
      fl_test_store_open("store", f->dir, sizeof f->dir, f->path, sizeof f->path, &f->s) != 0) {
    free(f);
    return -1;
  }
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture_free(*state);
  return 0;
}

/* Fills m as a message; content is borrowed (put copies it). */
static void mk(fl_msg *m, const char *id, const char *to, const char *from, const char *content,
               int64_t expires_ms) {
  memset(m, 0, sizeof *m);
  snprintf(m->msg_id, sizeof m->msg_id, "%s", id);
  snprintf(m->to_gid, sizeof m->to_gid, "%s", to);
  snprintf(m->from_gid, sizeof m->from_gid, "%s", from);
  snprintf(m->from_name, sizeof m->from_name, "name-%s", from);
  snprintf(m->trace_id, sizeof m->trace_id, "trace-%s", id);
  snprintf(m->kind, sizeof m->kind, "SEND");
  m->ts_ms = 1000;
  m->expires_ms = expires_ms;
  m->content = (char *)content;
  m->content_len = strlen(content);
}

static int put(fl_store *s, const char *id, const char *to, const char *from, const char *content,
               int64_t expires_ms) {
  fl_msg m;
  mk(&m, id, to, from, content, expires_ms);
  return fl_store_put(s, &m);
}

static size_t count(fl_store *s, const char *to, int64_t now) {
  size_t n = 99;
  assert_int_equal(fl_store_count(s, to, now, &n), 0);
  return n;
}

static size_t total(fl_store *s) {
  size_t n = 99;
  assert_int_equal(fl_store_total(s, &n), 0);
  return n;
}

/* Runs one SQL script on a second connection to the store's file. */
static void side_exec(const fixture *f, const char *sql) {
  sqlite3 *db = NULL;
  assert_int_equal(sqlite3_open(f->path, &db), SQLITE_OK);
  sqlite3_busy_timeout(db, 3000);
  char *err = NULL;
  int rc = sqlite3_exec(db, sql, NULL, NULL, &err);
  if (rc != SQLITE_OK)
    fprintf(stderr, "side_exec: %s\n", err ? err : "?");
  sqlite3_free(err);
  sqlite3_close(db);
  assert_int_equal(rc, SQLITE_OK);
}

static int64_t side_count(const fixture *f, const char *sql) {
  sqlite3 *db = NULL;
  sqlite3_stmt *st = NULL;
  assert_int_equal(sqlite3_open(f->path, &db), SQLITE_OK);
  assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
  assert_int_equal(sqlite3_step(st), SQLITE_ROW);
  int64_t v = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
  return v;
}

/* The per-recipient counter the store keeps by trigger agrees with the rows
 * actually held. */
static void assert_counts_agree(fixture *f) {
  assert_int_equal(side_count(f, "SELECT count(*) FROM held"), total(f->s));
  assert_int_equal(side_count(f, "SELECT count(*) FROM (SELECT to_gid, count(*) AS c FROM held "
                                 "GROUP BY to_gid EXCEPT SELECT to_gid, n FROM held_count)"),
                   0);
}

/* ---- put / take ---------------------------------------------------------- */

static void test_put_take_oldest_first(void **state) {
  fixture *f = *state;
  fl_msg m;
  int64_t last = 0;
  const char *ids[] = {"m1", "m2", "m3"};
  for (int i = 0; i < 3; i++) {
    mk(&m, ids[i], "A", "X", ids[i], 0);
    assert_int_equal(fl_store_put(f->s, &m), 0);
    assert_true(m.seq > last);
    last = m.seq;
  }
  assert_int_equal(put(f->s, "b1", "B", "X", "for B", 0), 0);

  fl_msg *out = NULL;
  size_t n = 0;
  assert_int_equal(fl_store_take(f->s, "A", NULL, 10, 2000, &out, &n), 0);
  assert_int_equal(n, 3);
  for (size_t i = 0; i < n; i++) {
    assert_string_equal(out[i].msg_id, ids[i]);
    assert_string_equal(out[i].to_gid, "A");
    assert_string_equal(out[i].from_gid, "X");
    assert_string_equal(out[i].from_name, "name-X");
    assert_string_equal(out[i].kind, "SEND");
    assert_string_equal(out[i].in_reply_to, "");
    assert_int_equal(out[i].ts_ms, 1000);
    assert_int_equal(out[i].content_len, strlen(ids[i]));
    assert_int_equal(out[i].content[out[i].content_len], '\0');
    assert_string_equal(out[i].content, ids[i]);
    if (i)
      assert_true(out[i].seq > out[i - 1].seq);
  }
  fl_msgs_free(out, n);

  out = (fl_msg *)&m;
  assert_int_equal(fl_store_take(f->s, "A", NULL, 10, 2000, &out, &n), 0);
  assert_int_equal(n, 0);
  assert_null(out);
  assert_int_equal(count(f->s, "B", 2000), 1);
}

/* A peek copies the oldest held messages and leaves every one held. */
static void test_peek_leaves_held(void **state) {
  fixture *f = *state;
  assert_int_equal(put(f->s, "p1", "A", "X", "first", 0), 0);
  assert_int_equal(put(f->s, "p2", "A", "Y", "second", 0), 0);
  assert_int_equal(put(f->s, "p3", "B", "X", "for B", 0), 0);
  fl_msg *out = NULL;
  size_t n = 0;
  assert_int_equal(fl_store_peek(f->s, "A", 10, 2000, &out, &n), 0);
  assert_int_equal(n, 2);
  assert_string_equal(out[0].msg_id, "p1");
  assert_string_equal(out[0].content, "first");
  assert_string_equal(out[1].msg_id, "p2");
  fl_msgs_free(out, n);
  assert_int_equal(fl_store_peek(f->s, "A", 1, 2000, &out, &n), 0);
  assert_int_equal(n, 1);
  fl_msgs_free(out, n);
  assert_int_equal(count(f->s, "A", 2000), 2);
  assert_int_equal(fl_store_take(f->s, "A", NULL, 10, 2000, &out, &n), 0);
  assert_int_equal(n, 2);
  fl_msgs_free(out, n);
  assert_int_equal(fl_store_peek(f->s, "A", 10, 2000, &out, &n), 0);
  assert_int_equal(n, 0);
  assert_null(out);
}

static void test_take_from_filter(void **state) {
  fixture *f = *state;
  assert_int_equal(put(f->s, "1", "A", "X", "x1", 0), 0);
  assert_int_equal(put(f->s, "2", "A", "Y", "y1", 0), 0);
  assert_int_equal(put(f->s, "3", "A", "X", "x2", 0), 0);
  assert_int_equal(put(f->s, "4", "A", "Y", "y2", 0), 0);

  fl_msg *out = NULL;
  size_t n = 0;
  assert_int_equal(fl_store_take(f->s, "A", "X", 10, 0, &out, &n), 0);
  assert_int_equal(n, 2);
  assert_string_equal(out[0].content, "x1");
  assert_string_equal(out[1].content, "x2");
  fl_msgs_free(out, n);

  assert_int_equal(fl_store_take(f->s, "A", "Z", 10, 0, &out, &n), 0);
  assert_int_equal(n, 0);
  assert_null(out);

  /* "" means any sender, like NULL. */
  assert_int_equal(fl_store_take(f->s, "A", "", 10, 0, &out, &n), 0);
  assert_int_equal(n, 2);
  assert_string_equal(out[0].content, "y1");
  assert_string_equal(out[1].content, "y2");
  fl_msgs_free(out, n);
}

static void test_take_max(void **state) {
  fixture *f = *state;
  char id[8];
  for (int i = 0; i < 5; i++) {
    snprintf(id, sizeof id, "%d", i);
    assert_int_equal(put(f->s, id, "A", "X", id, 0), 0);
  }
  fl_msg *out = NULL;
  size_t n = 7;
  assert_int_equal(fl_store_take(f->s, "A", NULL, 0, 0, &out, &n), 0);
  assert_int_equal(n, 0);
  assert_null(out);
  assert_int_equal(count(f->s, "A", 0), 5);

  const size_t want[] = {2, 2, 1, 0};
  int next = 0;
  for (size_t r = 0; r < 4; r++) {
    assert_int_equal(fl_store_take(f->s, "A", NULL, 2, 0, &out, &n), 0);
    assert_int_equal(n, want[r]);
    for (size_t i = 0; i < n; i++) {
      snprintf(id, sizeof id, "%d", (next++) % 10);
      assert_string_equal(out[i].msg_id, id);
    }
    fl_msgs_free(out, n);
  }
  /* A max far past the cap is clamped, not an error. */
  assert_int_equal(put(f->s, "9", "A", "X", "9", 0), 0);
  assert_int_equal(fl_store_take(f->s, "A", NULL, SIZE_MAX, 0, &out, &n), 0);
  assert_int_equal(n, 1);
  fl_msgs_free(out, n);
}

static void test_take_id(void **state) {
  fixture *f = *state;
  assert_int_equal(put(f->s, "1", "A", "X", "one", 0), 0);
  assert_int_equal(put(f->s, "2", "A", "X", "two", 0), 0);
  assert_int_equal(put(f->s, "3", "A", "X", "three", 0), 0);
  assert_int_equal(put(f->s, "2", "B", "X", "two for B", 0), 0);

  fl_msg got;
  assert_int_equal(fl_store_take_id(f->s, "A", "2", &got), 0);
  assert_string_equal(got.msg_id, "2");
  assert_string_equal(got.to_gid, "A");
  assert_string_equal(got.trace_id, "trace-2");
  assert_int_equal(got.content_len, 3);
  assert_string_equal(got.content, "two");
  fl_free(got.content);

  assert_int_equal(fl_store_take_id(f->s, "A", "2", &got), FL_ENOTFOUND);
  assert_null(got.content);
  assert_int_equal(fl_store_take_id(f->s, "A", "nope", &got), FL_ENOTFOUND);
  assert_null(got.content);
  /* B's copy of the same msgId is its own. */
  assert_int_equal(count(f->s, "B", 0), 1);

  fl_msg *out = NULL;
  size_t n = 0;
  assert_int_equal(fl_store_take(f->s, "A", NULL, 10, 0, &out, &n), 0);
  assert_int_equal(n, 2);
  assert_string_equal(out[0].content, "one");
  assert_string_equal(out[1].content, "three");
  fl_msgs_free(out, n);
}

/* ---- dedup --------------------------------------------------------------- */

static void test_dedup(void **state) {
  fixture *f = *state;
  assert_int_equal(put(f->s, "dup", "A", "X", "first", 0), 0);
  assert_int_equal(put(f->s, "dup", "A", "X", "second", 0), FL_EDUP);
  assert_int_equal(count(f->s, "A", 0), 1);

  /* The same msgId for another recipient is a different key. */
  assert_int_equal(put(f->s, "dup", "B", "X", "first", 0), 0);
  assert_int_equal(count(f->s, "B", 0), 1);

  fl_msg *out = NULL;
  size_t n = 0;
  assert_int_equal(fl_store_take(f->s, "A", NULL, 10, 0, &out, &n), 0);
  assert_int_equal(n, 1);
  assert_string_equal(out[0].content, "first");
  fl_msgs_free(out, n);

  /* Drained: still refused, and nothing is stored. */
  assert_int_equal(put(f->s, "dup", "A", "X", "again", 0), FL_EDUP);
  assert_int_equal(count(f->s, "A", 0), 0);

  fl_msg got;
  assert_int_equal(fl_store_take_id(f->s, "B", "dup", &got), 0);
  fl_free(got.content);
  assert_int_equal(put(f->s, "dup", "B", "X", "again", 0), FL_EDUP);

  /* A sweep within its envelope's life does not forget it either. */
  assert_int_equal(fl_store_expire(f->s, 1000 + FL_ENVELOPE_MAX_LIFE_MS - 1, NULL), 0);
  assert_int_equal(put(f->s, "dup", "A", "X", "again", 0), FL_EDUP);
  assert_int_equal(total(f->s), 0);
}

/* ---- the per-entity cap -------------------------------------------------- */

static void test_full(void **state) {
  fixture *f = *state;
  /* All but one of the cap through a side connection, in one transaction;
   * the last through fl_store_put so the store's own path fills it. Two of
   * them are expired: unswept, they still take room. */
  char sql[512];
  snprintf(sql, sizeof sql,
           "BEGIN;"
           "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < %d) "
           "INSERT INTO held (msg_id, to_gid, ts_ms, expires_ms, content) "
           "SELECT 'fill-' || i, 'A', i, CASE WHEN i <= 2 THEN 5 ELSE 0 END, x'41' FROM c;"
           "COMMIT;",
           FL_MAX_HELD_PER_ENTITY - 1);
  side_exec(f, sql);
  assert_int_equal(total(f->s), FL_MAX_HELD_PER_ENTITY - 1);
  assert_int_equal(put(f->s, "last", "A", "X", "fits", 0), 0);
  assert_int_equal(count(f->s, "A", 0), FL_MAX_HELD_PER_ENTITY);

  assert_int_equal(put(f->s, "over", "A", "X", "no room", 0), FL_EFULL);
  assert_int_equal(total(f->s), FL_MAX_HELD_PER_ENTITY);
  /* Other recipients are unaffected. */
  assert_int_equal(put(f->s, "over", "B", "X", "room", 0), 0);

  /* A refused put left no seen entry: once there is room it goes in. */
  fl_msg *out = NULL;
  size_t n = 0;
  assert_int_equal(fl_store_take(f->s, "A", NULL, 1, 100, &out, &n), 0);
  assert_int_equal(n, 1);
  assert_string_equal(out[0].msg_id, "fill-3"); /* 1 and 2 have expired */
  fl_msgs_free(out, n);
  assert_int_equal(put(f->s, "over", "A", "X", "now fits", 0), 0);
  assert_int_equal(put(f->s, "over2", "A", "X", "full again", 0), FL_EFULL);

  /* The sweep frees the room the two expired ones took. */
  size_t dropped = 0;
  assert_int_equal(fl_store_expire(f->s, 100, &dropped), 0);
  assert_int_equal(dropped, 2);
  assert_int_equal(put(f->s, "over2", "A", "X", "fits", 0), 0);
  assert_counts_agree(f);
}

/* ---- expiry -------------------------------------------------------------- */

static void test_expiry(void **state) {
  fixture *f = *state;
  assert_int_equal(put(f->s, "e1", "A", "X", "soon", 1500), 0);
  assert_int_equal(put(f->s, "e2", "A", "X", "never", 0), 0);
  assert_int_equal(put(f->s, "e3", "A", "X", "later", 5000), 0);
  assert_int_equal(put(f->s, "e4", "A", "X", "exactly now", 2000), 0);

  assert_int_equal(count(f->s, "A", 1000), 4);
  /* expires_ms <= now is expired. */
  assert_int_equal(count(f->s, "A", 2000), 2);

  fl_msg *out = NULL;
  size_t n = 0;
  assert_int_equal(fl_store_take(f->s, "A", NULL, 10, 2000, &out, &n), 0);
  assert_int_equal(n, 2);
  assert_string_equal(out[0].msg_id, "e2");
  assert_string_equal(out[1].msg_id, "e3");
  assert_int_equal(out[1].expires_ms, 5000);
  fl_msgs_free(out, n);

  /* The expired ones are still stored until the sweep. */
  assert_int_equal(total(f->s), 2);
  assert_int_equal(count(f->s, "A", 2000), 0);
  size_t dropped = 99;
  assert_int_equal(fl_store_expire(f->s, 1000, &dropped), 0);
  assert_int_equal(dropped, 0);
  assert_int_equal(fl_store_expire(f->s, 2000, &dropped), 0);
  assert_int_equal(dropped, 2);
  assert_int_equal(total(f->s), 0);
  assert_int_equal(fl_store_expire(f->s, 2000, NULL), 0);
  assert_counts_agree(f);
  assert_int_equal(side_count(f, "SELECT count(*) FROM held_count"), 0);

  /* An expired msgId is forgotten (the receive checks refuse its
   * envelope as expired); one with no expiry stays seen for its life. */
  assert_int_equal(put(f->s, "e1", "A", "X", "soon", 0), 0);
  assert_int_equal(put(f->s, "e2", "A", "X", "never", 0), FL_EDUP);
}

static void test_seen_trim(void **state) {
  fixture *f = *state;
  fl_msg got;
  /* By time: "gone", drained, is kept until its envelope expires. */
  assert_int_equal(put(f->s, "gone", "A", "X", "drained", 1000), 0);
  assert_int_equal(fl_store_take_id(f->s, "A", "gone", &got), 0);
  fl_free(got.content);
  assert_int_equal(fl_store_expire(f->s, 999, NULL), 0);
  assert_int_equal(put(f->s, "gone", "A", "X", "again", 0), FL_EDUP);
  assert_int_equal(fl_store_expire(f->s, 1000, NULL), 0);
  assert_int_equal(side_count(f, "SELECT count(*) FROM seen"), 0);
  assert_int_equal(fl_store_seen_horizon(f->s), 0);

  /* By count: "kept" expires first but is held, so the trim spares it; of
   * the bulk keys (expiring at 1..N) the newest FL_MIN_SEEN stay, and the
   * horizon moves to the last expiry dropped. */
  fl_store_set_max_seen(f->s, FL_MIN_SEEN);
  assert_int_equal(put(f->s, "kept", "A", "X", "held", 1), 0);
  char sql[512];
  snprintf(sql, sizeof sql,
           "BEGIN;"
           "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < %d) "
           "INSERT INTO seen (msg_id, to_gid, at_ms, exp_ms) SELECT 'bulk-' || i, 'A', 0, i "
           "FROM c;"
           "COMMIT;",
           FL_MIN_SEEN + 50);
  side_exec(f, sql);
  assert_int_equal(fl_store_trim_seen(f->s, 0), 0);
  assert_int_equal(side_count(f, "SELECT count(*) FROM seen"), FL_MIN_SEEN + 1);
  assert_int_equal(fl_store_seen_horizon(f->s), 50);
  assert_int_equal(put(f->s, "kept", "A", "X", "again", 0), FL_EDUP);
  assert_int_equal(put(f->s, "bulk-51", "A", "X", "again", 0), FL_EDUP);
  assert_int_equal(put(f->s, "bulk-50", "A", "X", "forgotten: the horizon refuses it", 0), 0);

  /* The horizon survives a restart and never moves back. */
  fl_store_close(&f->s);
  assert_int_equal(fl_store_open(f->path, &f->s), 0);
  assert_int_equal(fl_store_seen_horizon(f->s), 50);
  assert_int_equal(fl_store_trim_seen(f->s, 0), 0);
  assert_int_equal(fl_store_seen_horizon(f->s), 50);

  /* A key's life: its expiresAt, at most FL_ENVELOPE_MAX_LIFE_MS after ts. */
  assert_int_equal(fl_store_seen_until(1000, 0), 1000 + FL_ENVELOPE_MAX_LIFE_MS);
  assert_int_equal(fl_store_seen_until(1000, 5000), 5000);
  assert_int_equal(fl_store_seen_until(1000, 1000 + 2 * FL_ENVELOPE_MAX_LIFE_MS),
                   1000 + FL_ENVELOPE_MAX_LIFE_MS);
}

/* SQLite as the store sets it up: single-thread mode (its mutexes are
 * no-ops: two "new" mutexes are then one and the same stand-in, where real
 * ones are two allocations), no allocation count (its mutex around every
 * malloc and free) and sub-journals in memory, never in a temp dir. */
static void test_sqlite_settings(void **state) {
  fixture *f = *state;
  assert_int_equal(put(f->s, "m1", "A", "X", "hello", 0), 0);
  sqlite3_mutex *m1 = sqlite3_mutex_alloc(SQLITE_MUTEX_FAST);
  sqlite3_mutex *m2 = sqlite3_mutex_alloc(SQLITE_MUTEX_FAST);
  int distinct = m1 != m2;
  sqlite3_mutex_free(m1);
  sqlite3_mutex_free(m2);
  assert_false(distinct);
  assert_int_equal(sqlite3_memory_used(), 0);
  sqlite3_stmt *st = NULL;
  assert_int_equal(sqlite3_prepare_v2(f->s->db, "PRAGMA temp_store", -1, &st, NULL), SQLITE_OK);
  assert_int_equal(sqlite3_step(st), SQLITE_ROW);
  assert_int_equal(sqlite3_column_int(st, 0), 2); /* MEMORY */
  sqlite3_finalize(st);
}

/* The commit notices by itself, without the sweeper's look-up of the path:
 * a delete, a file renamed over the path, and a batch's commit. */
static void test_file_gone_commit(void **state) {
  fixture *f = *state;
  assert_int_equal(unlink(f->path), 0);
  assert_int_equal(put(f->s, "after", "A", "X", "refused", 0), FL_ESTORE);
  assert_int_equal(count(f->s, "A", 0), 0);

  fl_store_close(&f->s);
  assert_int_equal(fl_store_open(f->path, &f->s), 0);
  char other[sizeof f->path + 8];
  snprintf(other, sizeof other, "%s.new", f->path);
  FILE *o = fopen(other, "w");
  assert_non_null(o);
  fclose(o);
  assert_int_equal(fl_store_batch_begin(f->s), 0);
  assert_int_equal(put(f->s, "in-batch", "A", "X", "refused", 0), 0); /* a savepoint only */
  assert_int_equal(rename(other, f->path), 0);
  assert_int_equal(fl_store_batch_end(f->s), FL_ESTORE);
  assert_int_equal(count(f->s, "A", 0), 0);
  assert_int_equal(put(f->s, "later", "A", "X", "refused", 0), FL_ESTORE);
}

/* holds.db deleted or replaced under an open store: every commit is
 * refused, since the unlinked file would be gone after a restart. */
static void test_file_deleted(void **state) {
  fixture *f = *state;
  assert_int_equal(fl_store_check_file(f->s), 0);
  assert_int_equal(put(f->s, "before", "A", "X", "kept", 0), 0);
  assert_int_equal(unlink(f->path), 0);
  assert_int_equal(fl_store_check_file(f->s), FL_ESTORE);
  assert_int_equal(put(f->s, "after", "A", "X", "refused", 0), FL_ESTORE);
  assert_int_equal(count(f->s, "A", 0), 1); /* nothing half-written */
  /* Another file at the same path is not the database either. */
  FILE *o = fopen(f->path, "w");
  assert_non_null(o);
  fclose(o);
  assert_int_equal(fl_store_check_file(f->s), FL_ESTORE);
  assert_int_equal(put(f->s, "after", "A", "X", "refused", 0), FL_ESTORE);
}

/* Replaces the fixture's store by a file an older fleetd could have left:
 * closed, deleted, then made by sql on a connection of its own (not opened). */
static void older_store(fixture *f, const char *sql) {
  fl_store_close(&f->s);
  assert_int_equal(unlink(f->path), 0);
  side_exec(f, sql);
}

/* 1 while the seen table still has rowids. */
#define SEEN_HAS_ROWID                                                                             \
  "SELECT instr(upper(sql), 'WITHOUT ROWID') = 0 FROM sqlite_master WHERE name = 'seen'"

/* A store written before the seen-set kept expiries: each key gets a full
 * envelope life from when it was seen. */
static void test_seen_migrates(void **state) {
  fixture *f = *state;
  older_store(f, "CREATE TABLE seen (msg_id TEXT NOT NULL, to_gid TEXT NOT NULL,"
                 " at_ms INTEGER NOT NULL, PRIMARY KEY (msg_id, to_gid));"
                 "INSERT INTO seen VALUES ('old', 'A', 5000);"
                 "PRAGMA user_version=1;");
  assert_int_equal(fl_store_open(f->path, &f->s), 0);
  assert_int_equal(put(f->s, "old", "A", "X", "again", 0), FL_EDUP);
  assert_int_equal(fl_store_expire(f->s, 5000 + FL_ENVELOPE_MAX_LIFE_MS - 1, NULL), 0);
  assert_int_equal(put(f->s, "old", "A", "X", "again", 0), FL_EDUP);
  assert_int_equal(side_count(f, "SELECT exp_ms FROM seen WHERE msg_id = 'old'"),
                   5000 + FL_ENVELOPE_MAX_LIFE_MS);
  /* ... and the table was rebuilt without rowids, its expiry index with it. */
  assert_int_equal(side_count(f, SEEN_HAS_ROWID), 0);
  assert_int_equal(side_count(f, "SELECT count(*) FROM sqlite_master WHERE name = 'seen_exp'"), 1);
}

/* A seen table that already had expiries but still had rowids keeps every key
 * through the rebuild; a new store's seen table has no rowids. */
static void test_seen_rebuilt_without_rowid(void **state) {
  fixture *f = *state;
  assert_int_equal(side_count(f, SEEN_HAS_ROWID), 0);
  older_store(f, "CREATE TABLE seen (msg_id TEXT NOT NULL, to_gid TEXT NOT NULL,"
                 " at_ms INTEGER NOT NULL, exp_ms INTEGER NOT NULL DEFAULT 0,"
                 " PRIMARY KEY (msg_id, to_gid));"
                 "CREATE INDEX seen_exp ON seen (exp_ms);"
                 "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 500)"
                 " INSERT INTO seen SELECT 'k' || i, 'A', 1, 4102444800000 FROM n;"
                 "PRAGMA user_version=1;");
  assert_int_equal(side_count(f, SEEN_HAS_ROWID), 1);
  assert_int_equal(fl_store_open(f->path, &f->s), 0);
  assert_int_equal(side_count(f, SEEN_HAS_ROWID), 0);
  assert_int_equal(side_count(f, "SELECT count(*) FROM seen WHERE exp_ms = 4102444800000"), 500);
  assert_int_equal(put(f->s, "k1", "A", "X", "again", 0), FL_EDUP);
  assert_int_equal(put(f->s, "k500", "A", "X", "again", 0), FL_EDUP);
  assert_int_equal(put(f->s, "k501", "A", "X", "new", 0), 0);
  /* Opening it again finds nothing to rebuild. */
  fl_store_close(&f->s);
  assert_int_equal(fl_store_open(f->path, &f->s), 0);
  assert_int_equal(side_count(f, "SELECT count(*) FROM seen"), 501);
}

/* A forward table written before briefs kept how their sender's host was
 * proven: its rows read as not recorded (FL_AUTH_NONE), new rows keep it. */
static void test_forward_auth_migrates(void **state) {
  fixture *f = *state;
  older_store(f, "CREATE TABLE forward (seq INTEGER PRIMARY KEY AUTOINCREMENT,"
                 " msg_id TEXT NOT NULL, to_gid TEXT NOT NULL, from_gid TEXT NOT NULL DEFAULT '',"
                 " from_name TEXT NOT NULL DEFAULT '', trace_id TEXT NOT NULL DEFAULT '',"
                 " sender_host TEXT NOT NULL DEFAULT '', pane TEXT NOT NULL DEFAULT '',"
                 " socket TEXT NOT NULL DEFAULT '', deadline_ms INTEGER NOT NULL,"
                 " at_ms INTEGER NOT NULL, state INTEGER NOT NULL DEFAULT 0,"
                 " reported INTEGER NOT NULL DEFAULT 0, reason TEXT NOT NULL DEFAULT '',"
                 " content BLOB NOT NULL, UNIQUE (msg_id, to_gid));"
                 "INSERT INTO forward (msg_id, to_gid, sender_host, deadline_ms, at_ms, content)"
                 " VALUES ('old', 'A', 'hostB', 9, 1, 'x');");
  assert_int_equal(fl_store_open(f->path, &f->s), 0);
  fl_fwd got;
  assert_int_equal(fl_store_fwd_get(f->s, "old", "A", &got), 0);
  assert_string_equal(got.sender_host, "hostB");
  assert_int_equal(got.auth, FL_AUTH_NONE);
  fl_fwd_clear(&got);
  fl_fwd nw;
  memset(&nw, 0, sizeof nw);
  snprintf(nw.msg_id, sizeof nw.msg_id, "new");
  snprintf(nw.to_gid, sizeof nw.to_gid, "A");
  snprintf(nw.sender_host, sizeof nw.sender_host, "hostB");
  nw.auth = FL_AUTH_PAIR_SEALED;
  nw.deadline_ms = 9;
  nw.content = "y";
  nw.content_len = 1;
  assert_int_equal(fl_store_fwd_put(f->s, &nw), 0);
  assert_int_equal(fl_store_fwd_get(f->s, "new", "A", &got), 0);
  assert_int_equal(got.auth, FL_AUTH_PAIR_SEALED);
  fl_fwd_clear(&got);
}

/* ---- counts -------------------------------------------------------------- */

static void test_count_total(void **state) {
  fixture *f = *state;
  assert_int_equal(total(f->s), 0);
  assert_int_equal(count(f->s, "A", 0), 0);
  assert_int_equal(put(f->s, "1", "A", "X", "a", 0), 0);
  assert_int_equal(put(f->s, "2", "A", "X", "a", 0), 0);
  assert_int_equal(put(f->s, "3", "B", "X", "b", 0), 0);
  assert_int_equal(count(f->s, "A", 0), 2);
  assert_int_equal(count(f->s, "B", 0), 1);
  assert_int_equal(count(f->s, "C", 0), 0);
  assert_int_equal(total(f->s), 3);
  assert_counts_agree(f);
  fl_msg got;
  assert_int_equal(fl_store_take_id(f->s, "A", "1", &got), 0);
  fl_free(got.content);
  assert_int_equal(total(f->s), 2);
  assert_counts_agree(f);
}

/* The VM steps one fl_store_count of to takes. */
static int count_steps(fixture *f, const char *to, int64_t now, size_t *n) {
  sqlite3_stmt *st = f->s->st[FL_ST_COUNT];
  sqlite3_stmt_status(st, SQLITE_STMTSTATUS_VM_STEP, 1);
  assert_int_equal(fl_store_count(f->s, to, now, n), 0);
  return sqlite3_stmt_status(st, SQLITE_STMTSTATUS_VM_STEP, 1);
}

/* A count is asked on every call of an agent with something held, after
 * every poll (what remains) and for every local entity in fleet_list: its
 * work must not grow with how much is held. It read every held row of the
 * recipient (each with its content) to check its expiry: with 200 messages
 * held, every send of that agent cost its gateway ten times as much. Rows
 * expired and not yet swept still do not count. */
static void test_count_cost_flat(void **state) {
  fixture *f = *state;
  char id[32];
  size_t n = 0;
  for (int i = 0; i < 10; i++) {
    snprintf(id, sizeof id, "m%d", i);
    assert_int_equal(put(f->s, id, "A", "X", "a message of some length", 0), 0);
  }
  int few = count_steps(f, "A", 1000, &n);
  assert_int_equal(n, 10);
  for (int i = 10; i < 400; i++) {
    snprintf(id, sizeof id, "m%d", i);
    assert_int_equal(put(f->s, id, "A", "X", "a message of some length", i % 2 ? 0 : 90000), 0);
  }
  int many = count_steps(f, "A", 1000, &n);
  assert_int_equal(n, 400);
  assert_true(many <= few + 8);
  /* Expired, not yet swept: left out, whoever else holds what. */
  assert_int_equal(put(f->s, "old1", "A", "X", "expired", 500), 0);
  assert_int_equal(put(f->s, "old2", "B", "X", "expired", 500), 0);
  assert_int_equal(put(f->s, "new", "B", "X", "live", 0), 0);
  count_steps(f, "A", 1000, &n);
  assert_int_equal(n, 400);
  count_steps(f, "B", 1000, &n);
  assert_int_equal(n, 1);
  /* At 90000 the 195 with that expiry are gone too. */
  count_steps(f, "A", 90000, &n);
  assert_int_equal(n, 205);
  assert_counts_agree(f);
}

/* ---- entities ------------------------------------------------------------ */

static void mk_entity(fl_entity_rec *e, const char *gid, const char *name, const char *role,
                      const char *groups) {
  memset(e, 0, sizeof *e);
  snprintf(e->gid, sizeof e->gid, "%s", gid);
  snprintf(e->name, sizeof e->name, "%s", name);
  snprintf(e->role, sizeof e->role, "%s", role);
  snprintf(e->groups, sizeof e->groups, "%s", groups);
}

typedef struct roster {
  fl_entity_rec e[8];
  size_t n;
} roster;

static void roster_cb(void *ctx, const fl_entity_rec *e) {
  roster *r = ctx;
  if (r->n < 8)
    r->e[r->n] = *e;
  r->n++;
}

static void test_entities(void **state) {
  fixture *f = *state;
  fl_entity_rec e, got;
  mk_entity(&e, "gid-a", "alice", "lead", "core,ops");
  assert_int_equal(fl_store_entity_put(f->s, &e), 0);
  mk_entity(&e, "gid-b", "bob", "", "");
  assert_int_equal(fl_store_entity_put(f->s, &e), 0);

  assert_int_equal(fl_store_entity_by_name(f->s, "alice", &got), 0);
  assert_string_equal(got.gid, "gid-a");
  assert_string_equal(got.role, "lead");
  assert_string_equal(got.groups, "core,ops");
  assert_int_equal(fl_store_entity_by_name(f->s, "carol", &got), FL_ENOTFOUND);

  roster r = {0};
  assert_int_equal(fl_store_entity_each(f->s, roster_cb, &r), 0);
  assert_int_equal(r.n, 2);
  assert_string_equal(r.e[0].name, "alice");
  assert_string_equal(r.e[1].name, "bob");
  assert_string_equal(r.e[1].role, "");

  /* Update by gid: role, groups and even the name follow. */
  mk_entity(&e, "gid-a", "alice2", "worker", "ops");
  assert_int_equal(fl_store_entity_put(f->s, &e), 0);
  assert_int_equal(fl_store_entity_by_name(f->s, "alice", &got), FL_ENOTFOUND);
  assert_int_equal(fl_store_entity_by_name(f->s, "alice2", &got), 0);
  assert_string_equal(got.gid, "gid-a");
  assert_string_equal(got.role, "worker");
  assert_string_equal(got.groups, "ops");

  /* A name another gid has is refused and nothing changes. */
  mk_entity(&e, "gid-c", "bob", "", "");
  assert_int_equal(fl_store_entity_put(f->s, &e), FL_ENAMETAKEN);
  mk_entity(&e, "gid-a", "bob", "", "");
  assert_int_equal(fl_store_entity_put(f->s, &e), FL_ENAMETAKEN);
  assert_int_equal(fl_store_entity_by_name(f->s, "bob", &got), 0);
  assert_string_equal(got.gid, "gid-b");

  r.n = 0;
  assert_int_equal(fl_store_entity_each(f->s, roster_cb, &r), 0);
  assert_int_equal(r.n, 2);
}

/* ---- persistence --------------------------------------------------------- */

/* Remote entities live in their own table, with their host, and survive a
 * reopen; an update by gid replaces the row, and they never mix with the
 * local roster (whose names they may share). */
static void test_remote_entities(void **state) {
  fixture *f = *state;
  fl_entity_rec e;
  mk_entity(&e, "gid-r", "alice", "worker", "ops");
  snprintf(e.host, sizeof e.host, "hostA");
  assert_int_equal(fl_store_remote_put(f->s, &e), 0);
  snprintf(e.host, sizeof e.host, "hostC");
  assert_int_equal(fl_store_remote_put(f->s, &e), 0);
  fl_entity_rec local;
  mk_entity(&local, "gid-l", "alice", "lead", "");
  assert_int_equal(fl_store_entity_put(f->s, &local), 0);
  fl_entity_rec nohost;
  mk_entity(&nohost, "gid-x", "x", "worker", "");
  assert_int_equal(fl_store_remote_put(f->s, &nohost), FL_EINVAL);

  fl_store_close(&f->s);
  assert_int_equal(fl_store_open(f->path, &f->s), 0);
  roster r = {.n = 0};
  assert_int_equal(fl_store_remote_each(f->s, roster_cb, &r), 0);
  assert_int_equal(r.n, 1);
  assert_string_equal(r.e[0].gid, "gid-r");
  assert_string_equal(r.e[0].host, "hostC");
  assert_string_equal(r.e[0].groups, "ops");
  roster l = {.n = 0};
  assert_int_equal(fl_store_entity_each(f->s, roster_cb, &l), 0);
  assert_int_equal(l.n, 1);
  assert_string_equal(l.e[0].gid, "gid-l");
}

/* A batch is one transaction: a failing call inside it (a duplicate) is
 * undone alone, a take inside it sees the batch's puts, and nothing is
 * durable until the batch ends (closing mid-batch loses the batch). */
static void test_batch(void **state) {
  fixture *f = *state;
  assert_int_equal(fl_store_batch_begin(f->s), 0);
  assert_int_equal(fl_store_batch_begin(f->s), FL_EINVAL);
  assert_int_equal(put(f->s, "b1", "A", "X", "one", 0), 0);
  assert_int_equal(put(f->s, "b1", "A", "X", "one again", 0), FL_EDUP);
  assert_int_equal(put(f->s, "b2", "A", "X", "two", 0), 0);
  fl_msg got;
  assert_int_equal(fl_store_take_id(f->s, "A", "b1", &got), 0);
  fl_free(got.content);
  assert_int_equal(fl_store_batch_end(f->s), 0);
  assert_int_equal(fl_store_batch_end(f->s), FL_EINVAL);
  assert_int_equal(count(f->s, "A", 0), 1);

  assert_int_equal(fl_store_batch_begin(f->s), 0);
  assert_int_equal(put(f->s, "b3", "A", "X", "lost with the batch", 0), 0);
  fl_store_close(&f->s);
  assert_int_equal(fl_store_open(f->path, &f->s), 0);
  assert_int_equal(count(f->s, "A", 0), 1);
  assert_int_equal(put(f->s, "b3", "A", "X", "not seen before", 0), 0);
}

static void test_persistence(void **state) {
  fixture *f = *state;
  fl_entity_rec e, got;
  mk_entity(&e, "gid-a", "alice", "lead", "core");
  assert_int_equal(fl_store_entity_put(f->s, &e), 0);
  fl_msg m;
  mk(&m, "p1", "gid-a", "X", "survives", 0);
  snprintf(m.in_reply_to, sizeof m.in_reply_to, "q0");
  assert_int_equal(fl_store_put(f->s, &m), 0);
  int64_t seq1 = m.seq;
  assert_int_equal(put(f->s, "p2", "gid-a", "X", "drained", 0), 0);
  fl_msg got_m;
  assert_int_equal(fl_store_take_id(f->s, "gid-a", "p2", &got_m), 0);
  fl_free(got_m.content);

  fl_store_close(&f->s);
  assert_null(f->s);
  assert_int_equal(fl_store_open(f->path, &f->s), 0);

  assert_int_equal(fl_store_entity_by_name(f->s, "alice", &got), 0);
  assert_string_equal(got.gid, "gid-a");
  assert_string_equal(got.groups, "core");
  /* Dedup survives the restart, for held and for drained keys. */
  assert_int_equal(put(f->s, "p1", "gid-a", "X", "again", 0), FL_EDUP);
  assert_int_equal(put(f->s, "p2", "gid-a", "X", "again", 0), FL_EDUP);
  /* seq keeps rising across a restart, past the deleted p2's too. */
  mk(&m, "p3", "gid-a", "X", "after restart", 0);
  assert_int_equal(fl_store_put(f->s, &m), 0);
  assert_true(m.seq > seq1 + 1);

  fl_msg *out = NULL;
  size_t n = 0;
  assert_int_equal(fl_store_take(f->s, "gid-a", NULL, 10, 0, &out, &n), 0);
  assert_int_equal(n, 2);
  assert_string_equal(out[0].msg_id, "p1");
  assert_string_equal(out[0].in_reply_to, "q0");
  assert_string_equal(out[0].content, "survives");
  assert_int_equal(out[0].seq, seq1);
  assert_string_equal(out[1].msg_id, "p3");
  fl_msgs_free(out, n);

  /* A file from a newer fleet (higher schema version) is refused. */
  fl_store_close(&f->s);
  side_exec(f, "PRAGMA user_version=99");
  fl_store *s2 = (fl_store *)f;
  assert_int_equal(fl_store_open(f->path, &s2), FL_ESTORE);
  assert_null(s2);
}

/* ---- the file ------------------------------------------------------------ */

static void test_file_mode(void **state) {
  fixture *f = *state;
  struct stat st;
  assert_int_equal(stat(f->path, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0600);

  /* A permissive umask does not widen a new file... */
  char path[160];
  snprintf(path, sizeof path, "%s/other.db", f->dir);
  mode_t old = umask(0);
  fl_store *s2 = NULL;
  int rc = fl_store_open(path, &s2);
  umask(old);
  assert_int_equal(rc, 0);
  assert_int_equal(put(s2, "w", "A", "X", "wal", 0), 0);
  fl_store_close(&s2);
  assert_int_equal(stat(path, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0600);

  /* ...and an existing, readable file is narrowed. */
  assert_int_equal(chmod(path, 0644), 0);
  assert_int_equal(fl_store_open(path, &s2), 0);
  assert_int_equal(stat(path, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0600);
  char wal[192];
  snprintf(wal, sizeof wal, "%s-wal", path);
  assert_int_equal(put(s2, "w2", "A", "X", "wal", 0), 0);
  assert_int_equal(stat(wal, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0600);
  fl_store_close(&s2);
}

static void test_open_errors(void **state) {
  fixture *f = *state;
  fl_store *s2 = (fl_store *)f;
  char path[160];
  snprintf(path, sizeof path, "%s/no/such/dir/holds.db", f->dir);
  assert_int_equal(fl_store_open(path, &s2), -ENOENT);
  assert_null(s2);
  assert_int_equal(fl_store_open(NULL, &s2), FL_EINVAL);
  assert_int_equal(fl_store_open("", &s2), FL_EINVAL);
  assert_int_equal(fl_store_open(f->path, NULL), FL_EINVAL);

  /* Not a database: an error, not a crash. */
  snprintf(path, sizeof path, "%s/junk.db", f->dir);
  FILE *fp = fopen(path, "w");
  assert_non_null(fp);
  for (int i = 0; i < 512; i++)
    fputs("this is not sqlite ", fp);
  fclose(fp);
  assert_int_equal(fl_store_open(path, &s2), FL_ESTORE);
  assert_null(s2);

  fl_store_close(NULL);
  s2 = NULL;
  fl_store_close(&s2);
  fl_msgs_free(NULL, 3);
}

/* ---- arguments ----------------------------------------------------------- */

/* FL_ADMIT_HAND: for a recipient holding nothing only the msgId is kept
 * (it dedups from then on); for one holding something the message is held,
 * behind what came first. FL_ADMIT_SEEN_ALREADY holds a handed message
 * whose call went away, with no second dedup. */
static void test_admit_hand(void **state) {
  fixture *f = *state;
  fl_msg m;
  mk(&m, "h1", "alice", "bob", "first", 0);
  assert_int_equal(fl_store_admit(f->s, &m, FL_ADMIT_HAND), 0);
  assert_int_equal(m.handed, 1);
  assert_int_equal(count(f->s, "alice", 2000), 0);
  fl_msg again;
  mk(&again, "h1", "alice", "bob", "first", 0);
  assert_int_equal(fl_store_admit(f->s, &again, FL_ADMIT_HAND), FL_EDUP);
  assert_int_equal(fl_store_put(f->s, &again), FL_EDUP);
  assert_int_equal(count(f->s, "alice", 2000), 0);

  /* The call went away: kept as held, no dedup refusal. */
  assert_int_equal(fl_store_admit(f->s, &m, FL_ADMIT_SEEN_ALREADY), 0);
  assert_int_equal(m.handed, 0);
  assert_int_equal(count(f->s, "alice", 2000), 1);

  /* alice holds one now: the next is held behind it, not handed. */
  fl_msg next;
  mk(&next, "h2", "alice", "carol", "second", 0);
  assert_int_equal(fl_store_admit(f->s, &next, FL_ADMIT_HAND), 0);
  assert_int_equal(next.handed, 0);
  assert_int_equal(count(f->s, "alice", 2000), 2);
  fl_msg *got = NULL;
  size_t n = 0;
  assert_int_equal(fl_store_take(f->s, "alice", NULL, 10, 2000, &got, &n), 0);
  assert_int_equal(n, 2);
  assert_string_equal(got[0].msg_id, "h1");
  assert_string_equal(got[1].msg_id, "h2");
  fl_msgs_free(got, n);
}

/* In a burst of deliveries (a batch), a message for a waiting call of a
 * recipient the store knows holds nothing is handed with one statement, its
 * dedup check and record in one: the same outcomes as the general path. */
/* The seen journal's file as a string (fl_free), or NULL. */
static char *journal_text(const fixture *f) {
  char jp[160];
  snprintf(jp, sizeof jp, "%s-seen", f->path);
  FILE *fp = fopen(jp, "r");
  if (!fp)
    return NULL;
  char *buf = fl_calloc(1, 65536);
  size_t n = buf ? fread(buf, 1, 65535, fp) : 0;
  (void)n;
  fclose(fp);
  return buf;
}

/* Hands msg_id to `to` (from bob) in the open batch: the store says handed. */
static void hand(fixture *f, const char *msg_id, const char *to) {
  fl_msg m;
  mk(&m, msg_id, to, "bob", "x", 0);
  assert_int_equal(fl_store_admit(f->s, &m, FL_ADMIT_HAND), 0);
  assert_int_equal(m.handed, 1);
}

static void test_admit_hand_batch(void **state) {
  fixture *f = *state;
  assert_int_equal(count(f->s, "alice", 2000), 0); /* now known to hold nothing */
  sqlite3_stmt *known = f->s->st[FL_ST_KNOWN];
  int runs = sqlite3_stmt_status(known, SQLITE_STMTSTATUS_RUN, 0);
  int changes = sqlite3_total_changes(f->s->db);
  assert_int_equal(fl_store_batch_begin(f->s), 0);
  fl_msg m, again;
  mk(&m, "h1", "alice", "bob", "first", 0);
  assert_int_equal(fl_store_admit(f->s, &m, FL_ADMIT_HAND), 0);
  assert_int_equal(m.handed, 1);
  /* No fingerprint of it: the table was not asked. */
  assert_int_equal(sqlite3_stmt_status(known, SQLITE_STMTSTATUS_RUN, 0), runs);
  mk(&again, "h1", "alice", "bob", "first", 0);
  assert_int_equal(fl_store_admit(f->s, &again, FL_ADMIT_HAND), FL_EDUP);
  assert_int_equal(fl_store_batch_end(f->s), 0);
  /* The key went to the journal, and the burst wrote nothing to SQLite. */
  assert_int_equal(sqlite3_total_changes(f->s->db), changes);
  char *j = journal_text(f);
  assert_non_null(j);
  assert_non_null(strstr(j, "h1 alice "));
  fl_free(j);
  assert_int_equal(side_count(f, "SELECT count(*) FROM seen WHERE msg_id = 'h1'"), 0);
  assert_int_equal(count(f->s, "alice", 2000), 0);
  /* Deduplicated outside a batch too, on either path. */
  assert_int_equal(fl_store_admit(f->s, &again, FL_ADMIT_HAND), FL_EDUP);
  assert_int_equal(fl_store_put(f->s, &again), FL_EDUP);
  /* Folded into the table (as before a trim), and still refused after it. */
  assert_int_equal(fl_seenlog_fold(f->s), 0);
  assert_int_equal(side_count(f, "SELECT count(*) FROM seen WHERE msg_id = 'h1'"), 1);
  j = journal_text(f);
  assert_string_equal(j, "");
  fl_free(j);
  assert_int_equal(fl_store_put(f->s, &again), FL_EDUP);
  /* Its fingerprint is there now, so the handed path asks the table. */
  runs = sqlite3_stmt_status(known, SQLITE_STMTSTATUS_RUN, 0);
  assert_int_equal(fl_store_batch_begin(f->s), 0);
  assert_int_equal(fl_store_admit(f->s, &again, FL_ADMIT_HAND), FL_EDUP);
  assert_int_equal(fl_store_batch_end(f->s), 0);
  assert_int_equal(sqlite3_stmt_status(known, SQLITE_STMTSTATUS_RUN, 0), runs + 1);

  /* A recipient holding something is not handed to, in a batch either. */
  fl_msg held, next;
  mk(&held, "h2", "alice", "bob", "held", 0);
  assert_int_equal(fl_store_put(f->s, &held), 0);
  assert_int_equal(fl_store_batch_begin(f->s), 0);
  mk(&next, "h3", "alice", "bob", "behind it", 0);
  assert_int_equal(fl_store_admit(f->s, &next, FL_ADMIT_HAND), 0);
  assert_int_equal(next.handed, 0);
  assert_int_equal(fl_store_batch_end(f->s), 0);
  assert_int_equal(count(f->s, "alice", 2000), 2);

  /* A batch whose commit fails (its deliveries come again) still makes its
   * handed keys durable, for its calls are answered all the same: the
   * redelivery of what was handed is refused. */
  assert_int_equal(count(f->s, "carol", 2000), 0);
  assert_int_equal(fl_store_batch_begin(f->s), 0);
  fl_msg c;
  mk(&c, "c1", "carol", "bob", "handed", 0);
  assert_int_equal(fl_store_admit(f->s, &c, FL_ADMIT_HAND), 0);
  assert_int_equal(c.handed, 1);
  assert_int_equal(sqlite3_exec(f->s->db, "ROLLBACK", NULL, NULL, NULL), SQLITE_OK);
  assert_int_not_equal(fl_store_batch_end(f->s), 0); /* no transaction left to commit */
  j = journal_text(f);
  assert_non_null(j);
  assert_non_null(strstr(j, "c1 carol "));
  fl_free(j);
  mk(&c, "c1", "carol", "bob", "again", 0);
  assert_int_equal(fl_store_admit(f->s, &c, FL_ADMIT_HAND), FL_EDUP);
}

/* A handed message's key reaches the journal at its batch's end, not when
 * it is handed: fleetd killed in between (the call not answered yet) must
 * leave no key, or the message's redelivery would be taken for one already
 * drained, acked and lost. */
static void test_seen_journal_at_batch_end(void **state) {
  fixture *f = *state;
  assert_int_equal(count(f->s, "ivan", 2000), 0);
  assert_int_equal(fl_store_batch_begin(f->s), 0);
  hand(f, "i1", "ivan");
  hand(f, "i2", "ivan");
  char *j = journal_text(f);
  assert_non_null(j);
  assert_string_equal(j, "");
  fl_free(j);
  /* Refused inside the batch all the same. */
  fl_msg m;
  mk(&m, "i2", "ivan", "bob", "again", 0);
  assert_int_equal(fl_store_admit(f->s, &m, FL_ADMIT_HAND), FL_EDUP);
  assert_int_equal(fl_store_batch_end(f->s), 0);
  j = journal_text(f);
  assert_non_null(j);
  assert_non_null(strstr(j, "i1 ivan "));
  assert_non_null(strstr(j, "i2 ivan "));
  fl_free(j);
}

/* A key written to the table by the held path has its fingerprint too: a
 * redelivery of a message taken already, arriving while its recipient
 * (now holding nothing) waits, is refused by the handed path. */
static void test_seen_fingerprint_of_held(void **state) {
  fixture *f = *state;
  fl_msg m;
  mk(&m, "p1", "hank", "bob", "held first", 0);
  assert_int_equal(fl_store_put(f->s, &m), 0);
  fl_msg *out = NULL;
  size_t n = 0;
  assert_int_equal(fl_store_take(f->s, "hank", NULL, 10, 0, &out, &n), 0);
  assert_int_equal(n, 1);
  fl_msgs_free(out, n);
  assert_int_equal(count(f->s, "hank", 2000), 0);
  assert_int_equal(fl_store_batch_begin(f->s), 0);
  mk(&m, "p1", "hank", "bob", "redelivered", 0);
  assert_int_equal(fl_store_admit(f->s, &m, FL_ADMIT_HAND), FL_EDUP);
  assert_int_equal(m.handed, 0);
  assert_int_equal(fl_store_batch_end(f->s), 0);
  /* And from a table the store found at open. */
  fl_store_close(&f->s);
  assert_int_equal(fl_store_open(f->path, &f->s), 0);
  assert_int_equal(count(f->s, "hank", 2000), 0);
  assert_int_equal(fl_store_batch_begin(f->s), 0);
  assert_int_equal(fl_store_admit(f->s, &m, FL_ADMIT_HAND), FL_EDUP);
  assert_int_equal(fl_store_batch_end(f->s), 0);
}

/* Keys a crash left in the journal are folded when the store opens; a torn
 * last line and lines not of its form are skipped. */
static void test_seen_journal_recovery(void **state) {
  fixture *f = *state;
  assert_int_equal(count(f->s, "dave", 2000), 0);
  assert_int_equal(fl_store_batch_begin(f->s), 0);
  hand(f, "k1", "dave");
  hand(f, "k2", "dave");
  assert_int_equal(fl_store_batch_end(f->s), 0);
  fl_msg m;
  char *j = journal_text(f);
  assert_non_null(j);
  /* The crash: the journal as it was, the table without the keys (closing
   * folded them; a crash would not have). */
  fl_store_close(&f->s);
  assert_null(f->s);
  sqlite3 *db;
  assert_int_equal(sqlite3_open(f->path, &db), SQLITE_OK);
  assert_int_equal(sqlite3_exec(db, "DELETE FROM seen WHERE to_gid = 'dave'", NULL, NULL, NULL),
                   SQLITE_OK);
  sqlite3_close(db);
  char jp[160];
  snprintf(jp, sizeof jp, "%s-seen", f->path);
  FILE *fp = fopen(jp, "w");
  assert_non_null(fp);
  fprintf(fp, "%snot a line of ours\n%s", j, "k3 dave 17");
  fclose(fp);
  fl_free(j);
  assert_int_equal(fl_store_open(f->path, &f->s), 0);
  assert_int_equal(side_count(f, "SELECT count(*) FROM seen WHERE to_gid = 'dave'"), 2);
  /* The fingerprints were read from the table: the handed path refuses it. */
  assert_int_equal(count(f->s, "dave", 2000), 0);
  assert_int_equal(fl_store_batch_begin(f->s), 0);
  mk(&m, "k1", "dave", "bob", "again", 0);
  assert_int_equal(fl_store_admit(f->s, &m, FL_ADMIT_HAND), FL_EDUP);
  assert_int_equal(fl_store_batch_end(f->s), 0);
  assert_int_equal(fl_store_put(f->s, &m), FL_EDUP);
  mk(&m, "k2", "dave", "bob", "again", 0);
  assert_int_equal(fl_store_put(f->s, &m), FL_EDUP);
  mk(&m, "k3", "dave", "bob", "the torn one was never handed", 0);
  assert_int_equal(fl_store_put(f->s, &m), 0);
  j = journal_text(f);
  assert_string_equal(j, "");
  fl_free(j);
}

/* When the journal cannot take a key (full, a write failing, or
 * synchronous=FULL), the key goes to the table, or the admit fails. */
static void test_seen_journal_limits(void **state) {
  fixture *f = *state;
  assert_int_equal(count(f->s, "erin", 2000), 0);
  assert_int_equal(fl_store_batch_begin(f->s), 0);
  fl_msg m;
  char id[32];
  for (int i = 0; i <= FL_SEENLOG_CAP; i++) {
    snprintf(id, sizeof id, "e%d", i);
    mk(&m, id, "erin", "bob", "x", 0);
    assert_int_equal(fl_store_admit(f->s, &m, FL_ADMIT_HAND), 0);
    assert_int_equal(m.handed, 1);
  }
  /* The last one found the journal full: it is in the table already. */
  assert_int_equal(f->s->jn, FL_SEENLOG_CAP);
  snprintf(id, sizeof id, "e%d", FL_SEENLOG_CAP);
  char sql[96];
  snprintf(sql, sizeof sql, "SELECT count(*) FROM seen WHERE msg_id = '%s'", id);
  assert_int_equal(fl_store_batch_end(f->s), 0);
  assert_int_equal(side_count(f, sql), 1);
  /* The next batch's start folds the rest (never a batch's end: its calls
   * wait for their answers). */
  assert_int_equal(f->s->jn, FL_SEENLOG_CAP);
  assert_int_equal(fl_store_batch_begin(f->s), 0);
  assert_int_equal(f->s->jn, 0);
  assert_int_equal(fl_store_batch_end(f->s), 0);
  assert_int_equal(side_count(f, "SELECT count(*) FROM seen WHERE to_gid = 'erin'"),
                   FL_SEENLOG_CAP + 1);

  /* A write that finds the disk full: the keys go to the table instead,
   * nothing half-kept in the journal. */
  int full = open("/dev/full", O_WRONLY | O_CLOEXEC);
  assert_true(full >= 0);
  int saved = dup(f->s->jfd);
  assert_true(dup2(full, f->s->jfd) >= 0);
  close(full);
  assert_int_equal(fl_store_batch_begin(f->s), 0);
  mk(&m, "full1", "erin", "bob", "x", 0);
  assert_int_equal(fl_store_admit(f->s, &m, FL_ADMIT_HAND), 0);
  assert_int_equal(m.handed, 1);
  assert_int_equal(f->s->jn, 1);
  assert_int_equal(fl_store_batch_end(f->s), 0);
  assert_int_equal(f->s->jn, 0);
  assert_int_equal(side_count(f, "SELECT count(*) FROM seen WHERE msg_id = 'full1'"), 1);
  assert_true(dup2(saved, f->s->jfd) >= 0);
  close(saved);
  assert_int_equal(fl_store_put(f->s, &m), FL_EDUP); /* recorded as seen */

  /* synchronous=FULL: keys go to the table, fsynced with its commit. */
  assert_int_equal(count(f->s, "frank", 2000), 0);
  assert_int_equal(fl_store_set_sync(f->s, 1), 0);
  assert_int_equal(fl_store_batch_begin(f->s), 0);
  mk(&m, "f1", "frank", "bob", "x", 0);
  assert_int_equal(fl_store_admit(f->s, &m, FL_ADMIT_HAND), 0);
  assert_int_equal(m.handed, 1);
  assert_int_equal(f->s->jn, 0);
  assert_int_equal(fl_store_batch_end(f->s), 0);
  assert_int_equal(side_count(f, "SELECT count(*) FROM seen WHERE msg_id = 'f1'"), 1);
}

/* The journal's file deleted under fleetd: a fold starts a new one, so the
 * keys after it survive a restart. */
static void test_seen_journal_deleted(void **state) {
  fixture *f = *state;
  assert_int_equal(count(f->s, "gina", 2000), 0);
  char jp[160];
  snprintf(jp, sizeof jp, "%s-seen", f->path);
  assert_int_equal(unlink(jp), 0);
  fl_msg m;
  assert_int_equal(fl_store_batch_begin(f->s), 0);
  mk(&m, "g1", "gina", "bob", "x", 0);
  assert_int_equal(fl_store_admit(f->s, &m, FL_ADMIT_HAND), 0);
  assert_int_equal(fl_store_batch_end(f->s), 0);
  assert_int_equal(fl_seenlog_fold(f->s), 0); /* and starts a new journal */
  assert_int_equal(side_count(f, "SELECT count(*) FROM seen WHERE msg_id = 'g1'"), 1);
  assert_int_equal(fl_store_batch_begin(f->s), 0);
  mk(&m, "g2", "gina", "bob", "x", 0);
  assert_int_equal(fl_store_admit(f->s, &m, FL_ADMIT_HAND), 0);
  assert_int_equal(fl_store_batch_end(f->s), 0);
  char *j = journal_text(f);
  assert_non_null(j);
  assert_non_null(strstr(j, "g2 gina "));
  fl_free(j);
}

static void test_invalid_args(void **state) {
  fixture *f = *state;
  fl_msg m;
  mk(&m, "", "A", "X", "c", 0);
  assert_int_equal(fl_store_put(f->s, &m), FL_EINVAL);
  mk(&m, "id", "", "X", "c", 0);
  assert_int_equal(fl_store_put(f->s, &m), FL_EINVAL);
  mk(&m, "id", "A", "X", "c", 0);
  memset(m.kind, 'K', sizeof m.kind); /* not NUL-terminated */
  assert_int_equal(fl_store_put(f->s, &m), FL_EINVAL);
  mk(&m, "id", "A", "X", "c", 0);
  m.content = NULL;
  assert_int_equal(fl_store_put(f->s, &m), FL_EINVAL);
  mk(&m, "id", "A", "X", "c", 0);
  m.content_len = FL_MAX_CONTENT + 1;
  assert_int_equal(fl_store_put(f->s, &m), FL_ETOOBIG);
  assert_int_equal(fl_store_put(NULL, &m), FL_EINVAL);
  assert_int_equal(fl_store_put(f->s, NULL), FL_EINVAL);
  assert_int_equal(total(f->s), 0);

  fl_msg *out = NULL;
  size_t n = 0;
  assert_int_equal(fl_store_take(f->s, NULL, NULL, 1, 0, &out, &n), FL_EINVAL);
  assert_int_equal(fl_store_take(f->s, "", NULL, 1, 0, &out, &n), FL_EINVAL);
  assert_int_equal(fl_store_take(NULL, "A", NULL, 1, 0, &out, &n), FL_EINVAL);
  assert_int_equal(fl_store_take(f->s, "A", NULL, 1, 0, NULL, &n), FL_EINVAL);
  assert_int_equal(fl_store_take_id(f->s, "A", "", &m), FL_EINVAL);
  assert_int_equal(fl_store_take_id(f->s, "A", "x", NULL), FL_EINVAL);
  assert_int_equal(fl_store_count(f->s, "A", 0, NULL), FL_EINVAL);
  assert_int_equal(fl_store_count(NULL, "A", 0, &n), FL_EINVAL);
  assert_int_equal(fl_store_total(NULL, &n), FL_EINVAL);
  assert_int_equal(fl_store_expire(NULL, 0, NULL), FL_EINVAL);

  fl_entity_rec e;
  mk_entity(&e, "", "name", "", "");
  assert_int_equal(fl_store_entity_put(f->s, &e), FL_EINVAL);
  mk_entity(&e, "gid", "", "", "");
  assert_int_equal(fl_store_entity_put(f->s, &e), FL_EINVAL);
  assert_int_equal(fl_store_entity_put(f->s, NULL), FL_EINVAL);
  assert_int_equal(fl_store_entity_by_name(f->s, NULL, &e), FL_EINVAL);
  assert_int_equal(fl_store_entity_each(f->s, NULL, NULL), FL_EINVAL);
}

static void test_content_edges(void **state) {
  fixture *f = *state;
  /* Empty content comes back as "" (never NULL). */
  fl_msg m;
  mk(&m, "empty", "A", "X", "", 0);
  m.content = NULL;
  assert_int_equal(fl_store_put(f->s, &m), 0);

  /* Multi-byte UTF-8 keeps its bytes. */
  const char *utf8 = "h\xc3\xa9llo \xe2\x9c\x93 \xf0\x9f\x9a\x80";
  assert_int_equal(put(f->s, "utf8", "A", "X", utf8, 0), 0);

  /* The largest allowed body round-trips. */
  char *big = malloc(FL_MAX_CONTENT + 1);
  assert_non_null(big);
  for (size_t i = 0; i < FL_MAX_CONTENT; i++)
    big[i] = (char)('a' + i % 26);
  big[FL_MAX_CONTENT] = '\0';
  assert_int_equal(put(f->s, "big", "A", "X", big, 0), 0);

  fl_msg *out = NULL;
  size_t n = 0;
  assert_int_equal(fl_store_take(f->s, "A", NULL, 10, 0, &out, &n), 0);
  assert_int_equal(n, 3);
  assert_non_null(out[0].content);
  assert_int_equal(out[0].content_len, 0);
  assert_string_equal(out[0].content, "");
  assert_int_equal(out[1].content_len, strlen(utf8));
  assert_string_equal(out[1].content, utf8);
  assert_int_equal(out[2].content_len, FL_MAX_CONTENT);
  assert_int_equal(out[2].content[FL_MAX_CONTENT], '\0');
  assert_memory_equal(out[2].content, big, FL_MAX_CONTENT);
  fl_msgs_free(out, n);
  free(big);
}

/* ---- allocation failure -------------------------------------------------- */

static void test_alloc_failure(void **state) {
  fixture *f = *state;
  fl_store *s2 = (fl_store *)f;
  char path[160];
  snprintf(path, sizeof path, "%s/oom.db", f->dir);
  fl_alloc_fail_after(0);
  assert_int_equal(fl_store_open(path, &s2), FL_ENOMEM);
  fl_alloc_fail_after(-1);
  assert_null(s2);

  char id[8];
  for (int i = 0; i < 20; i++) {
    snprintf(id, sizeof id, "%d", i);
    assert_int_equal(put(f->s, id, "A", "X", id, 0), 0);
  }

  /* Fail each allocation of a take in turn: every failure is FL_ENOMEM and
   * takes nothing; then it succeeds with everything. 20 messages need the
   * array to grow once, so that path fails too. */
  fl_msg *out = NULL;
  size_t n = 0;
  int rc;
  long k = 0;
  for (;; k++) {
    fl_alloc_fail_after(k);
    rc = fl_store_take(f->s, "A", NULL, 100, 0, &out, &n);
    fl_alloc_fail_after(-1);
    if (rc == 0)
      break;
    assert_int_equal(rc, FL_ENOMEM);
    assert_null(out);
    assert_int_equal(n, 0);
    assert_int_equal(count(f->s, "A", 0), 20);
  }
  assert_true(k > 20);
  assert_int_equal(n, 20);
  fl_msgs_free(out, n);
  assert_int_equal(count(f->s, "A", 0), 0);

  /* take_id: failure leaves the message held. */
  assert_int_equal(put(f->s, "one", "A", "X", "one", 0), 0);
  fl_msg got;
  fl_alloc_fail_after(0);
  assert_int_equal(fl_store_take_id(f->s, "A", "one", &got), FL_ENOMEM);
  fl_alloc_fail_after(-1);
  assert_null(got.content);
  assert_int_equal(count(f->s, "A", 0), 1);
  assert_int_equal(fl_store_take_id(f->s, "A", "one", &got), 0);
  assert_string_equal(got.content, "one");
  fl_free(got.content);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_sqlite_settings, setup, teardown),
      cmocka_unit_test_setup_teardown(test_put_take_oldest_first, setup, teardown),
      cmocka_unit_test_setup_teardown(test_peek_leaves_held, setup, teardown),
      cmocka_unit_test_setup_teardown(test_take_from_filter, setup, teardown),
      cmocka_unit_test_setup_teardown(test_take_max, setup, teardown),
      cmocka_unit_test_setup_teardown(test_take_id, setup, teardown),
      cmocka_unit_test_setup_teardown(test_dedup, setup, teardown),
      cmocka_unit_test_setup_teardown(test_full, setup, teardown),
      cmocka_unit_test_setup_teardown(test_expiry, setup, teardown),
      cmocka_unit_test_setup_teardown(test_seen_trim, setup, teardown),
      cmocka_unit_test_setup_teardown(test_file_gone_commit, setup, teardown),
      cmocka_unit_test_setup_teardown(test_seen_migrates, setup, teardown),
      cmocka_unit_test_setup_teardown(test_seen_rebuilt_without_rowid, setup, teardown),
      cmocka_unit_test_setup_teardown(test_forward_auth_migrates, setup, teardown),
      cmocka_unit_test_setup_teardown(test_file_deleted, setup, teardown),
      cmocka_unit_test_setup_teardown(test_count_total, setup, teardown),
      cmocka_unit_test_setup_teardown(test_count_cost_flat, setup, teardown),
      cmocka_unit_test_setup_teardown(test_entities, setup, teardown),
      cmocka_unit_test_setup_teardown(test_persistence, setup, teardown),
      cmocka_unit_test_setup_teardown(test_remote_entities, setup, teardown),
      cmocka_unit_test_setup_teardown(test_batch, setup, teardown),
      cmocka_unit_test_setup_teardown(test_file_mode, setup, teardown),
      cmocka_unit_test_setup_teardown(test_open_errors, setup, teardown),
      cmocka_unit_test_setup_teardown(test_admit_hand, setup, teardown),
      cmocka_unit_test_setup_teardown(test_admit_hand_batch, setup, teardown),
      cmocka_unit_test_setup_teardown(test_seen_fingerprint_of_held, setup, teardown),
      cmocka_unit_test_setup_teardown(test_seen_journal_at_batch_end, setup, teardown),
      cmocka_unit_test_setup_teardown(test_seen_journal_recovery, setup, teardown),
      cmocka_unit_test_setup_teardown(test_seen_journal_limits, setup, teardown),
      cmocka_unit_test_setup_teardown(test_seen_journal_deleted, setup, teardown),
      cmocka_unit_test_setup_teardown(test_invalid_args, setup, teardown),
      cmocka_unit_test_setup_teardown(test_content_edges, setup, teardown),
      cmocka_unit_test_setup_teardown(test_alloc_failure, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
