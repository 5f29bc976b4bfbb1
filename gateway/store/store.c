/* store.c — the durable hold store (see store.h).
 *
 * One SQLite database in WAL mode with synchronous=NORMAL: a commit reaches
 * the WAL file before the call returns, so it survives a kill -9 of fleetd
 * (it may not survive a power cut, which fleet accepts for sub-millisecond
 * commits). Four tables:
 *   entities(gid, name, role, groups)   the roster, one row per gid;
 *   held(seq, msg_id, to_gid, ...)      messages not yet drained, seq gives
 *                                       store order (AUTOINCREMENT never
 *                                       reuses a seq, so order survives
 *                                       deletes and restarts);
 *   seen(msg_id, to_gid, at_ms, exp_ms) every key put and not yet expired,
 *                                       so a redelivered msgId is refused
 *                                       after it was drained; exp_ms is when
 *                                       its envelope can no longer be taken
 *                                       (fl_store_seen_until); trimmed by
 *                                       time and count (fl_store_trim_seen);
 *   seen_horizon(k, exp_ms)             the latest exp_ms the count bound
 *                                       dropped;
 *   held_count(to_gid, n)               held rows per recipient, kept by
 *                                       triggers, for the cap check.
 * Every statement is prepared once at open and cached in fl_store; each use
 * ends with fl_store_stmt_done so no statement keeps a read transaction open (that
 * would stop WAL checkpoints). Writes that must be atomic run between BEGIN
 * IMMEDIATE and COMMIT, and any failure rolls the whole transaction back. The
 * store belongs to the loop thread: the connection is opened without SQLite's
 * own mutex. The entity tables' calls are in store_roster.c, the forward
 * path's briefs in store_forward.c, the held messages and the seen-set in
 * store_held.c. */
#include "gateway/store/store.h"
#include "gateway/store/store_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/log.h"
#include "common/time.h"

/* Long enough to ride out a checkpoint or a fleetctl reading the file, short
 * enough that the loop thread never stalls for long on a stuck lock. */
#define FL_STORE_BUSY_MS 3000

/* Bumped when the schema changes, so a later fleetd can migrate. */
#define FL_STORE_SCHEMA_VERSION 1
#define FL_STORE_STR_(x) #x
#define FL_STORE_STR(x) FL_STORE_STR_(x)

/* The column list every message select returns, in fl_row_msg's order. */
#define FL_MSG_COLS                                                                                \
  "seq, msg_id, to_gid, trace_id, kind, from_gid, from_name, in_reply_to, ts_ms, expires_ms, "     \
  "content"

static const char *const fl_sql[FL_ST_COUNT_OF] = {
    /* IMMEDIATE takes the write lock up front, so a transaction that has
     * read never fails later for want of upgrading its lock. */
    [FL_ST_BEGIN] = "BEGIN IMMEDIATE",
    /* A batch's own transaction is deferred: a burst that only hands
     * messages out (their keys go to the seen journal) only reads, and a
     * read-only commit writes nothing. fleetd is the store's one writer, so
     * the first write's upgrade of the lock does not fail. */
    [FL_ST_BEGIN_BATCH] = "BEGIN",
    [FL_ST_COMMIT] = "COMMIT",
    [FL_ST_ROLLBACK] = "ROLLBACK",
    /* Inside a batch each operation is a savepoint, so one that fails is
     * undone alone and the batch goes on. */
    [FL_ST_SAVEPOINT] = "SAVEPOINT op",
    [FL_ST_RELEASE] = "RELEASE op",
    [FL_ST_ROLLBACK_TO] = "ROLLBACK TO op",
    /* held is checked too: the seen-set is trimmed, but never of a key that
     * is still held (see FL_ST_TRIM_SEEN); this is belt and braces. */
    [FL_ST_KNOWN] = "SELECT 1 FROM seen WHERE msg_id = ?1 AND to_gid = ?2 "
                    "UNION ALL SELECT 1 FROM held WHERE msg_id = ?1 AND to_gid = ?2 LIMIT 1",
    /* Expired rows not yet swept still count: the cap bounds storage. */
    [FL_ST_HELD_ALL] = "SELECT coalesce((SELECT n FROM held_count WHERE to_gid = ?1), 0)",
    /* Its one caller (fl_store_admit) tells store_empty.c first. */
    [FL_ST_INSERT_HELD] = "INSERT INTO held (msg_id, to_gid, trace_id, kind, from_gid, "
                          "from_name, in_reply_to, ts_ms, expires_ms, content) "
                          "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    [FL_ST_INSERT_SEEN] =
        "INSERT INTO seen (msg_id, to_gid, at_ms, exp_ms) VALUES (?1, ?2, ?3, ?4)",
    /* The dedup check and the record in one: no row changed = seen before. */
    [FL_ST_INSERT_SEEN_NEW] = "INSERT INTO seen (msg_id, to_gid, at_ms, exp_ms) "
                              "VALUES (?1, ?2, ?3, ?4) ON CONFLICT (msg_id, to_gid) DO NOTHING",
    [FL_ST_TAKE_SELECT] = "SELECT " FL_MSG_COLS " FROM held WHERE to_gid = ?1 "
                          "AND (?2 = '' OR from_gid = ?2) "
                          "AND (expires_ms = 0 OR expires_ms > ?3) ORDER BY seq LIMIT ?4",
    [FL_ST_ID_SELECT] = "SELECT " FL_MSG_COLS " FROM held WHERE to_gid = ?1 AND msg_id = ?2",
    [FL_ST_DELETE_SEQ] = "DELETE FROM held WHERE seq = ?1",
    /* What held_count keeps, less the recipient's rows expired and not yet
     * swept. Those are found through held_expiry (the sweeper leaves at most
     * its interval's worth), not held_to_seq: `+to_gid` keeps the planner off
     * that index, which would read every held row of the recipient, content
     * and all, to check its expiry. */
    [FL_ST_COUNT] = "SELECT max(0, coalesce((SELECT n FROM held_count WHERE to_gid = ?1), 0) - "
                    "(SELECT count(*) FROM held WHERE expires_ms != 0 AND expires_ms <= ?2 "
                    "AND +to_gid = ?1))",
    [FL_ST_TOTAL] = "SELECT coalesce(sum(n), 0) FROM held_count",
    [FL_ST_EXPIRE] = "DELETE FROM held WHERE expires_ms != 0 AND expires_ms <= ?1",
    /* Keys still held are kept so the seen-set always covers held. */
    [FL_ST_IS_HELD] = "SELECT count(*) FROM held WHERE to_gid = ?1 AND msg_id = ?2",
    [FL_ST_TRIM_SEEN] = "DELETE FROM seen WHERE exp_ms <= ?1 "
                        "AND NOT EXISTS (SELECT 1 FROM held "
                        "WHERE held.msg_id = seen.msg_id AND held.to_gid = seen.to_gid)",
    /* The expiry below which the count bound drops keys: the newest ?1
     * expiries stay. */
    [FL_ST_SEEN_CUT] = "SELECT exp_ms FROM seen ORDER BY exp_ms DESC LIMIT 1 OFFSET ?1",
    /* Every key, for the fingerprints (store_seenidx.c). */
    [FL_ST_SEEN_KEYS] = "SELECT msg_id, to_gid FROM seen",
    [FL_ST_HORIZON_PUT] = "INSERT INTO seen_horizon (k, exp_ms) VALUES (0, ?1) "
                          "ON CONFLICT (k) DO UPDATE SET exp_ms = max(exp_ms, excluded.exp_ms)",
    [FL_ST_ENTITY_PUT] = "INSERT INTO entities (gid, name, role, \"groups\") "
                         "VALUES (?1, ?2, ?3, ?4) ON CONFLICT (gid) DO UPDATE SET "
                         "name = excluded.name, role = excluded.role, "
                         "\"groups\" = excluded.\"groups\"",
    [FL_ST_ENTITY_BY_NAME] = "SELECT gid, name, role, \"groups\" FROM entities WHERE name = ?1",
    [FL_ST_ENTITY_EACH] = "SELECT gid, name, role, \"groups\" FROM entities ORDER BY rowid",
    [FL_ST_REMOTE_PUT] = "INSERT INTO remote_entities (gid, name, role, \"groups\", host) "
                         "VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (gid) DO UPDATE SET "
                         "name = excluded.name, role = excluded.role, "
                         "\"groups\" = excluded.\"groups\", host = excluded.host",
    [FL_ST_REMOTE_EACH] = "SELECT gid, name, role, \"groups\", host FROM remote_entities "
                          "ORDER BY rowid",
    [FL_ST_REMOTE_DROP_HOST] = "DELETE FROM remote_entities WHERE host = ?1",
    [FL_ST_ENTITY_DELETE] = "DELETE FROM entities WHERE gid = ?1",
    [FL_ST_REMOTE_DELETE] = "DELETE FROM remote_entities WHERE gid = ?1",
    [FL_ST_SPAWN_PUT] =
        "INSERT INTO spawns (gid, by_gid, by_host, profile, name, state, why, ts_ms, pane, socket) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) ON CONFLICT (gid) DO UPDATE SET "
        "state = excluded.state, why = excluded.why, ts_ms = excluded.ts_ms, "
        "pane = CASE WHEN excluded.pane != '' THEN excluded.pane ELSE pane END, "
        "socket = CASE WHEN excluded.pane != '' THEN excluded.socket ELSE socket END",
    [FL_ST_SPAWN_GET] = "SELECT gid, by_gid, by_host, profile, name, state, why, ts_ms, pane, "
                        "socket FROM spawns WHERE gid = ?1 COLLATE NOCASE",
    [FL_ST_SPAWN_TRIM] = "DELETE FROM spawns WHERE ts_ms < ?1",
};

/* The seen-set's columns. WITHOUT ROWID: the key is the table, so taking a
 * message in writes one b-tree page and its expiry index's, not a rowid
 * table's page and its key index's as well (one WAL frame less a commit). */
#define FL_SEEN_TABLE                                                                              \
  "(msg_id TEXT NOT NULL, to_gid TEXT NOT NULL, at_ms INTEGER NOT NULL,"                           \
  " exp_ms INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (msg_id, to_gid)) WITHOUT ROWID"

/* Idempotent, so opening an existing store runs it too. content is a BLOB
 * because its length is what counts, not a terminator; held_expiry is
 * partial because most messages never expire. "groups" is quoted because
 * GROUPS is an SQL keyword (window frames). held_count keeps the number of
 * held rows per recipient, maintained by triggers so no write path can miss
 * it: the cap check in a put is then one lookup, where count(*) over an
 * entity's backlog cost ~0.4 ms at the cap on the loop thread. Held rows are
 * never UPDATEd, so insert and delete triggers are all it needs. */
static const char fl_schema[] =
    "CREATE TABLE IF NOT EXISTS entities ("
    " gid TEXT PRIMARY KEY NOT NULL,"
    " name TEXT NOT NULL UNIQUE,"
    " role TEXT NOT NULL DEFAULT '',"
    " \"groups\" TEXT NOT NULL DEFAULT '');"
    /* Other hosts' entities as their signed presence last described them:
     * after a restart, a message waiting in an inbox can be checked against
     * its sender's host before that host beats again. */
    "CREATE TABLE IF NOT EXISTS remote_entities ("
    "  gid TEXT PRIMARY KEY, name TEXT NOT NULL, role TEXT NOT NULL,"
    "  \"groups\" TEXT NOT NULL, host TEXT NOT NULL);"
    /* Spawns this host ran, by spawnId (= the agent's gid): who asked, and
     * how it went, so a repeated SPAWN starts nothing new and the spawner
     * may stop its agent after a restart. */
    "CREATE TABLE IF NOT EXISTS spawns ("
    "  gid TEXT PRIMARY KEY NOT NULL, by_gid TEXT NOT NULL, by_host TEXT NOT NULL,"
    "  profile TEXT NOT NULL, name TEXT NOT NULL, state TEXT NOT NULL,"
    "  why TEXT NOT NULL DEFAULT '', ts_ms INTEGER NOT NULL,"
    "  pane TEXT NOT NULL DEFAULT '', socket TEXT NOT NULL DEFAULT '');"
    "CREATE TABLE IF NOT EXISTS held ("
    " seq INTEGER PRIMARY KEY AUTOINCREMENT,"
    " msg_id TEXT NOT NULL,"
    " to_gid TEXT NOT NULL,"
    " trace_id TEXT NOT NULL DEFAULT '',"
    " kind TEXT NOT NULL DEFAULT '',"
    " from_gid TEXT NOT NULL DEFAULT '',"
    " from_name TEXT NOT NULL DEFAULT '',"
    " in_reply_to TEXT NOT NULL DEFAULT '',"
    " ts_ms INTEGER NOT NULL DEFAULT 0,"
    " expires_ms INTEGER NOT NULL DEFAULT 0,"
    " content BLOB NOT NULL,"
    " UNIQUE (msg_id, to_gid));"
    "CREATE INDEX IF NOT EXISTS held_to_seq ON held (to_gid, seq);"
    "CREATE INDEX IF NOT EXISTS held_expiry ON held (expires_ms) WHERE expires_ms != 0;"
    "CREATE TABLE IF NOT EXISTS seen " FL_SEEN_TABLE ";"
    "CREATE TABLE IF NOT EXISTS held_count ("
    " to_gid TEXT PRIMARY KEY NOT NULL,"
    " n INTEGER NOT NULL) WITHOUT ROWID;"
    "CREATE TRIGGER IF NOT EXISTS held_count_ins AFTER INSERT ON held BEGIN"
    " INSERT OR IGNORE INTO held_count (to_gid, n) VALUES (new.to_gid, 0);"
    " UPDATE held_count SET n = n + 1 WHERE to_gid = new.to_gid;"
    " END;"
    "CREATE TRIGGER IF NOT EXISTS held_count_del AFTER DELETE ON held BEGIN"
    " UPDATE held_count SET n = n - 1 WHERE to_gid = old.to_gid;"
    " DELETE FROM held_count WHERE to_gid = old.to_gid AND n <= 0;"
    " END;";

/* After fl_schema and exp_ms added to a seen table from before it: the
 * index, the horizon, and a full envelope life from when it was seen for
 * each key that had no expiry (only such keys have exp_ms 0). */
static const char fl_seen_schema[] =
    "CREATE INDEX IF NOT EXISTS seen_exp ON seen (exp_ms);"
    "CREATE TABLE IF NOT EXISTS seen_horizon ("
    " k INTEGER PRIMARY KEY CHECK (k = 0), exp_ms INTEGER NOT NULL);";
static const char fl_seen_migrate[] = "UPDATE seen SET exp_ms = at_ms + %lld WHERE exp_ms = 0;";
/* A seen table from before FL_SEEN_TABLE was WITHOUT ROWID, rebuilt as one
 * (its expiry index goes with the old table; fl_seen_schema makes it anew). */
static const char fl_seen_rebuild[] = "CREATE TABLE seen_rebuilt " FL_SEEN_TABLE ";"
                                      "INSERT INTO seen_rebuilt (msg_id, to_gid, at_ms, exp_ms)"
                                      " SELECT msg_id, to_gid, at_ms, exp_ms FROM seen;"
                                      "DROP TABLE seen;"
                                      "ALTER TABLE seen_rebuilt RENAME TO seen;";

/* Logs a database failure with SQLite's own words and returns FL_ESTORE,
 * or FL_EDISKFULL when the failure was a write that found no space: that
 * one the user can fix, so it is told apart. */
int fl_store_db_fail(const fl_store *s, const char *trace, const char *what) {
  if (s->db &&
      ((sqlite3_errcode(s->db) & 0xff) == SQLITE_FULL || sqlite3_system_errno(s->db) == ENOSPC)) {
    fl_error(trace, "store: %s failed: the disk is full (%s); free space where the state dir is",
             what, sqlite3_errmsg(s->db));
    return FL_EDISKFULL;
  }
  fl_error(trace, "store: %s failed: %s", what, s->db ? sqlite3_errmsg(s->db) : "no database");
  return FL_ESTORE;
}

/* Returns st to its unused state and drops its bindings, so a borrowed
 * string bound with SQLITE_STATIC is never touched again. */
void fl_store_stmt_done(sqlite3_stmt *st) {
  if (!st)
    return;
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
}

/* Steps st once: 1 for a row, 0 when done, FL_ESTORE (logged) on error. */
int fl_store_step(fl_store *s, sqlite3_stmt *st, const char *trace, const char *what) {
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW)
    return 1;
  if (rc == SQLITE_DONE)
    return 0;
  return fl_store_db_fail(s, trace, what);
}

/* Runs a statement that returns no rows (BEGIN, DELETE, ...). */
int fl_store_exec(fl_store *s, enum fl_stmt_id id, const char *trace, const char *what) {
  if (id == FL_ST_ROLLBACK_TO)
    fl_store_held_changed(s); /* rows taken in the savepoint are held again */
  int rc = fl_store_step(s, s->st[id], trace, what);
  if (rc > 0)
    rc = 0;
  fl_store_stmt_done(s->st[id]);
  return rc;
}

int fl_store_begin(fl_store *s, const char *trace) {
  return fl_store_exec(s, s->batch ? FL_ST_SAVEPOINT : FL_ST_BEGIN, trace, "begin");
}

/* Rolls back if a transaction is still open: SQLite ends one by itself on
 * some errors, and a ROLLBACK then would only add a second, false error. In
 * a batch, only this operation's savepoint is undone. */
void fl_store_rollback(fl_store *s, const char *trace) {
  if (sqlite3_get_autocommit(s->db))
    return;
  if (s->batch) {
    fl_store_exec(s, FL_ST_ROLLBACK_TO, trace, "rollback to savepoint");
    fl_store_exec(s, FL_ST_RELEASE, trace, "release savepoint");
  } else {
    fl_store_exec(s, FL_ST_ROLLBACK, trace, "rollback");
  }
}

/* The database file is no longer at its path (how: "deleted", ...): logged
 * once, and every commit refused from now on. Returns FL_ESTORE. */
static int fl_store_file_lost(fl_store *s, const char *how) {
  if (!s->file_gone)
    fl_error(NULL,
             "store: %s was %s while fleetd had it open: nothing written now would survive a "
             "restart, so every write is refused from here on (sends fail, nothing is answered "
             "`sent`). Messages held only in the old file are lost at the next restart; drain "
             "them now, then restart fleetd (see docs/operations.md, \"holds.db\")",
             s->path, how);
  s->file_gone = 1;
  return FL_ESTORE;
}

int fl_store_check_file(fl_store *s) {
  if (!s || !s->path)
    return FL_EINVAL;
  struct stat st;
  int missing = stat(s->path, &st) != 0;
  if (!missing && !s->file_gone && (unsigned long long)st.st_dev == s->dev &&
      (unsigned long long)st.st_ino == s->ino)
    return 0;
  return fl_store_file_lost(s, missing ? "deleted" : "replaced by another file");
}

/* Before each commit: whether the file opened still has a name at all. A
 * delete, or a rename or copy over its path, leaves it none; this costs one
 * fstat, where a look-up of the path cost 3% of a receiving gateway's loop
 * (the sweeper still runs fl_store_check_file, for a file replaced while a
 * second hard link kept the old one named). */
static int fl_store_check_linked(fl_store *s) {
  struct stat st;
  if (s->file_gone)
    return FL_ESTORE;
  if (fstat(s->fd, &st) == 0 && st.st_nlink > 0)
    return 0;
  return fl_store_file_lost(s, stat(s->path, &st) != 0 ? "deleted" : "replaced by another file");
}

int fl_store_commit(fl_store *s, const char *trace) {
  /* A commit into a file that is no longer the database's is lost. Inside
   * a batch this only releases a savepoint: fl_store_batch_end checks the
   * file once before the one real commit (a check per message was 2% of a
   * receiving gateway's CPU). */
  if (!s->batch && fl_store_check_linked(s) != 0) {
    fl_store_rollback(s, trace);
    return FL_ESTORE;
  }
  int rc = fl_store_exec(s, s->batch ? FL_ST_RELEASE : FL_ST_COMMIT, trace, "commit");
  if (rc)
    fl_store_rollback(s, trace);
  return rc;
}

int fl_store_batch_begin(fl_store *s) {
  if (!s || s->batch)
    return FL_EINVAL;
  /* The upkeep the handed keys call for runs here, before a burst, never
   * between a burst's end and the answers it owes (store_seenlog.c). */
  if (s->jn >= FL_SEENLOG_FOLD_AT && fl_seenlog_fold(s) != 0)
    fl_warn(NULL, "store: the seen journal could not be folded; tried again later");
  fl_store_seen_trim_due(s);
  int rc = fl_store_exec(s, FL_ST_BEGIN_BATCH, NULL, "begin batch");
  if (rc == 0)
    s->batch = 1;
  return rc;
}

int fl_store_batch_end(fl_store *s) {
  if (!s || !s->batch)
    return FL_EINVAL;
  s->batch = 0;
  int rc = fl_store_check_linked(s);
  if (rc == 0)
    rc = fl_store_exec(s, FL_ST_COMMIT, NULL, "commit batch");
  if (rc && !sqlite3_get_autocommit(s->db))
    fl_store_exec(s, FL_ST_ROLLBACK, NULL, "rollback batch");
  /* Last, the handed messages' keys, made durable as the calls that have
   * them are about to be answered (store_seenlog.c). Those answers go
   * whether the commit went through or not (a failed burst's deliveries
   * come again, and these keys refuse them). A failure is logged there. */
  fl_seenlog_flush(s);
  return rc;
}

/* Binds a borrowed, NUL-terminated string. */
int fl_store_bind_text(sqlite3_stmt *st, int i, const char *v) {
  return sqlite3_bind_text(st, i, v ? v : "", -1, SQLITE_STATIC);
}

/* Copies a text column into a fixed field, truncating (a row written by this
 * code always fits; one edited by hand must not overflow). */
void fl_store_col_copy(sqlite3_stmt *st, int col, char *dst, size_t n) {
  const unsigned char *v = sqlite3_column_text(st, col);
  size_t len = v ? (size_t)sqlite3_column_bytes(st, col) : 0;
  if (len >= n)
    len = n - 1;
  if (len)
    memcpy(dst, v, len);
  dst[len] = '\0';
}

/* 1 if the fixed field f of size n is NUL-terminated (and, with nonempty,
 * not ""), else 0. */
int fl_store_field_ok(const char *f, size_t n, int nonempty) {
  size_t len = strnlen(f, n);
  return len < n && (!nonempty || len > 0);
}

/* Creates path with mode 0600 if it is missing, and narrows an existing one
 * to 0600: it holds message bodies. SQLite gives its -wal and -shm files the
 * database file's mode, so they follow. Creating it ourselves (rather than
 * flipping the process-wide umask) keeps other threads' files untouched. */
static int fl_prepare_file(const char *path) {
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    int err = errno;
    fl_error(NULL, "store: cannot open %s: %s", path, strerror(err));
    return -err;
  }
  int rc = 0;
  if (fchmod(fd, 0600) != 0) {
    rc = -errno;
    fl_error(NULL, "store: cannot make %s private (mode 0600): %s", path, strerror(-rc));
  }
  close(fd);
  return rc;
}

/* Runs a one-row PRAGMA and copies its first column into buf. The statement
 * is finalized before returning: one left open would block a COMMIT. */
static int fl_pragma(fl_store *s, const char *sql, char *buf, size_t n) {
  sqlite3_stmt *st = NULL;
  int rc = 0;
  if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK ||
      sqlite3_step(st) != SQLITE_ROW) {
    rc = fl_store_db_fail(s, NULL, sql);
    goto out;
  }
  fl_store_col_copy(st, 0, buf, n);
out:
  sqlite3_finalize(st);
  return rc;
}

/* Rebuilds a seen table that still has rowids (fl_seen_rebuild): 0, or
 * FL_ESTORE. Runs inside the schema's transaction, after exp_ms exists. */
static int fl_seen_without_rowid(fl_store *s) {
  sqlite3_stmt *st = NULL;
  int old = 0;
  if (sqlite3_prepare_v2(s->db,
                         "SELECT instr(upper(sql), 'WITHOUT ROWID') = 0 FROM sqlite_master"
                         " WHERE type = 'table' AND name = 'seen'",
                         -1, &st, NULL) != SQLITE_OK)
    return fl_store_db_fail(s, NULL, "reading the seen-set's schema");
  if (sqlite3_step(st) == SQLITE_ROW)
    old = sqlite3_column_int(st, 0);
  sqlite3_finalize(st);
  if (!old)
    return 0;
  fl_info(NULL, "store: rebuilding the seen-set without rowids (once, for a store from an older "
                "fleetd)");
  return sqlite3_exec(s->db, fl_seen_rebuild, NULL, NULL, NULL) == SQLITE_OK
             ? 0
             : fl_store_db_fail(s, NULL, "rebuilding the seen-set");
}

/* Adds column col (declared decl) to table when a store made by an older
 * fleetd lacks it. 0 or FL_ESTORE. */
static int fl_add_column(fl_store *s, const char *table, const char *col, const char *decl) {
  char sql[256];
  snprintf(sql, sizeof sql, "SELECT %s FROM %s LIMIT 0", col, table);
  sqlite3_stmt *st = NULL;
  int have = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) == SQLITE_OK;
  sqlite3_finalize(st);
  if (have)
    return 0;
  snprintf(sql, sizeof sql, "ALTER TABLE %s ADD COLUMN %s %s", table, col, decl);
  return sqlite3_exec(s->db, sql, NULL, NULL, NULL) == SQLITE_OK
             ? 0
             : fl_store_db_fail(s, NULL, "adding a column to an older store");
}

/* Turns on WAL and creates (or checks) the schema. The pragmas run outside
 * any transaction because journal_mode cannot change inside one. */
static int fl_setup_db(fl_store *s) {
  char val[32];
  int rc = fl_pragma(s, "PRAGMA journal_mode=WAL", val, sizeof val);
  if (rc)
    return rc;
  if (sqlite3_stricmp(val, "wal") != 0) {
    fl_error(NULL, "store: the database refused WAL mode (it stays in '%s')", val);
    return FL_ESTORE;
  }
  if (sqlite3_exec(s->db, "PRAGMA synchronous=NORMAL", NULL, NULL, NULL) != SQLITE_OK)
    return fl_store_db_fail(s, NULL, "setting synchronous=NORMAL");
  if (sqlite3_exec(s->db, "PRAGMA cache_size=-" FL_STORE_STR(FL_STORE_CACHE_KIB), NULL, NULL,
                   NULL) != SQLITE_OK)
    return fl_store_db_fail(s, NULL, "setting cache_size");
  /* Every operation inside a batch is a savepoint, and a savepoint (or a
   * statement that may abort halfway) keeps the pages it changes in a
   * sub-journal. By default one past 64 KiB spills to a file in $TMPDIR or
   * /var/tmp: a full temp dir then failed every burst of a host whose state
   * dir had room, and a busy receiving gateway wrote those files a page at
   * a time (a quarter of its system calls). In memory the sub-journal is
   * freed at each release. */
  if (sqlite3_exec(s->db, "PRAGMA temp_store=MEMORY", NULL, NULL, NULL) != SQLITE_OK)
    return fl_store_db_fail(s, NULL, "setting temp_store=MEMORY");
  if (sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
    return fl_store_db_fail(s, NULL, "begin schema");
  if ((rc = fl_pragma(s, "PRAGMA user_version", val, sizeof val)))
    goto fail;
  if (atoi(val) > FL_STORE_SCHEMA_VERSION) {
    fl_error(NULL,
             "store: the database has schema version %s but this fleetd knows %d: it was "
             "written by a newer fleet; upgrade fleetd or move the file aside",
             val, FL_STORE_SCHEMA_VERSION);
    rc = FL_ESTORE;
    goto fail;
  }
  char sql[sizeof fl_seen_migrate + 32];
  snprintf(sql, sizeof sql, fl_seen_migrate, (long long)FL_ENVELOPE_MAX_LIFE_MS);
  if (sqlite3_exec(s->db, fl_schema, NULL, NULL, NULL) != SQLITE_OK ||
      fl_add_column(s, "spawns", "pane", "TEXT NOT NULL DEFAULT ''") != 0 ||
      fl_add_column(s, "spawns", "socket", "TEXT NOT NULL DEFAULT ''") != 0 ||
      fl_add_column(s, "seen", "exp_ms", "INTEGER NOT NULL DEFAULT 0") != 0 ||
      fl_seen_without_rowid(s) != 0 ||
      sqlite3_exec(s->db, fl_seen_schema, NULL, NULL, NULL) != SQLITE_OK ||
      sqlite3_exec(s->db, sql, NULL, NULL, NULL) != SQLITE_OK ||
      sqlite3_exec(s->db, fl_store_fwd_schema, NULL, NULL, NULL) != SQLITE_OK ||
      fl_add_column(s, "forward", "auth", "INTEGER NOT NULL DEFAULT 0") != 0 ||
      sqlite3_exec(s->db, fl_store_gids_schema, NULL, NULL, NULL) != SQLITE_OK ||
      sqlite3_exec(s->db, "PRAGMA user_version=" FL_STORE_STR(FL_STORE_SCHEMA_VERSION), NULL, NULL,
                   NULL) != SQLITE_OK ||
      sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
    rc = fl_store_db_fail(s, NULL, "creating the schema");
    goto fail;
  }
  return 0;

fail:
  if (!sqlite3_get_autocommit(s->db))
    sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
  return rc;
}

int fl_store_set_sync(fl_store *s, int full) {
  const char *sql = full ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL";
  if (sqlite3_exec(s->db, sql, NULL, NULL, NULL) != SQLITE_OK)
    return fl_store_db_fail(s, NULL,
                            full ? "setting synchronous=FULL" : "setting synchronous=NORMAL");
  /* FULL fsyncs every commit; the journal is never fsynced, so its keys go
   * into the table now and new ones go there too. */
  s->sync_full = full;
  return full ? fl_seenlog_fold(s) : 0;
}

static void fl_store_on_rollback(void *ctx) { fl_store_held_changed(ctx); }

/* SQLite's process-wide settings, once, before it initializes. Only the loop
 * thread ever calls SQLite (store.h), so its mutexes guard nothing: without
 * them, and without the allocation count that takes one around every
 * malloc and free, a receiving gateway spent 6% of its time locking. Should
 * something have initialized SQLite first, it keeps its defaults (slower,
 * just as correct). */
static void fl_sqlite_configure(void) {
  static int done;
  if (done)
    return;
  done = 1;
  if (sqlite3_config(SQLITE_CONFIG_SINGLETHREAD) != SQLITE_OK ||
      sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0) != SQLITE_OK)
    fl_debug(NULL, "store: SQLite was initialized already; it keeps its own locking");
}

int fl_store_open(const char *path, fl_store **out) {
  if (!out)
    return FL_EINVAL;
  *out = NULL;
  if (!path || !*path)
    return FL_EINVAL;
  fl_sqlite_configure();
  int rc = fl_prepare_file(path);
  if (rc)
    return rc;
  fl_store *s = fl_calloc(1, sizeof *s);
  if (!s)
    return FL_ENOMEM;
  s->fd = -1;
  s->jfd = -1;
  /* NOMUTEX: the loop thread owns the store (store.h), so SQLite's per-call
   * locking would buy nothing. */
  if (sqlite3_open_v2(path, &s->db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                      NULL) != SQLITE_OK) {
    fl_error(NULL, "store: cannot open %s: %s", path,
             s->db ? sqlite3_errmsg(s->db) : "out of memory");
    rc = FL_ESTORE;
    goto fail;
  }
  sqlite3_extended_result_codes(s->db, 1);
  sqlite3_busy_timeout(s->db, FL_STORE_BUSY_MS);
  /* Every rollback of a transaction, explicit or SQLite's own after an
   * error, makes fl_store_count ask SQLite again (store_empty.c); a
   * savepoint's rollback is fl_store_exec's, a put fl_store_admit's. */
  s->held_gen = 1;
  sqlite3_rollback_hook(s->db, fl_store_on_rollback, s);
  if ((rc = fl_setup_db(s)))
    goto fail;
  struct stat st;
  if (!(s->path = fl_strdup(path))) {
    rc = FL_ENOMEM;
    goto fail;
  }
  if ((s->fd = open(path, O_RDONLY | O_CLOEXEC)) < 0 || fstat(s->fd, &st) != 0) {
    rc = FL_ESTORE;
    fl_error(NULL, "store: cannot open %s again to watch it: %s", path, strerror(errno));
    goto fail;
  }
  s->dev = (unsigned long long)st.st_dev;
  s->ino = (unsigned long long)st.st_ino;
  s->max_seen = FL_MAX_SEEN;
  char horizon[32] = "0";
  if ((rc = fl_pragma(s, "SELECT coalesce((SELECT exp_ms FROM seen_horizon WHERE k = 0), 0)",
                      horizon, sizeof horizon)))
    goto fail;
  s->seen_horizon = atoll(horizon);
  for (int i = 0; i < FL_ST_COUNT_OF; i++) {
    if (sqlite3_prepare_v3(s->db, fl_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &s->st[i], NULL) !=
        SQLITE_OK) {
      rc = fl_store_db_fail(s, NULL, fl_sql[i]);
      goto fail;
    }
  }
  if ((rc = fl_seenidx_load(s)) || (rc = fl_seenlog_open(s)))
    goto fail;
  *out = s;
  return 0;

fail:
  fl_store_close(&s);
  return rc;
}

void fl_store_close(fl_store **sp) {
  if (!sp || !*sp)
    return;
  fl_store *s = *sp;
  fl_seenlog_close(s);
  fl_seenidx_drop(s);
  for (int i = 0; i < FL_ST_COUNT_OF; i++)
    sqlite3_finalize(s->st[i]);
  /* Closing the last connection checkpoints the WAL into the database. */
  if (s->db && sqlite3_close(s->db) != SQLITE_OK)
    fl_store_db_fail(s, NULL, "close");
  /* Only now: closing any descriptor of the file drops SQLite's POSIX locks. */
  if (s->fd >= 0)
    close(s->fd);
  fl_free(s->path);
  fl_free(s);
  *sp = NULL;
}
