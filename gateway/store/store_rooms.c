/* store_rooms.c — the hold store's room tables (see store.h): the
 * registered rooms, their logs, the msgIds each room ever took, and each
 * peer's cursor. Statements are prepared per call: rooms are pulled every
 * few seconds, not per message of a hot path. */
#include <string.h>

#include "common/error.h"
#include "common/log.h"
#include "gateway/store/store.h"
#include "gateway/store/store_internal.h"

static const char fl_rooms_schema[] =
    "CREATE TABLE IF NOT EXISTS rooms ("
    " room_id TEXT PRIMARY KEY, label TEXT NOT NULL, dropped INTEGER NOT NULL DEFAULT 0);"
    "CREATE TABLE IF NOT EXISTS room_msgs ("
    " seq INTEGER PRIMARY KEY AUTOINCREMENT, room_id TEXT NOT NULL, msg_id TEXT NOT NULL,"
    " hops INTEGER NOT NULL, item TEXT NOT NULL);"
    "CREATE INDEX IF NOT EXISTS room_msgs_room ON room_msgs (room_id, seq);"
    "CREATE TABLE IF NOT EXISTS room_seen ("
    " room_id TEXT NOT NULL, msg_id TEXT NOT NULL, PRIMARY KEY (room_id, msg_id)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS room_cursors ("
    " room_id TEXT NOT NULL, peer TEXT NOT NULL, cursor INTEGER NOT NULL,"
    " PRIMARY KEY (room_id, peer)) WITHOUT ROWID;";

int fl_store_rooms_open(fl_store *s) {
  if (!s)
    return FL_EINVAL;
  if (sqlite3_exec(s->db, fl_rooms_schema, NULL, NULL, NULL) != SQLITE_OK)
    return fl_store_db_fail(s, NULL, "creating the room tables");
  return 0;
}

/* Prepares sql; NULL (logged) on failure. */
static sqlite3_stmt *fl_prep(fl_store *s, const char *sql) {
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) {
    fl_store_db_fail(s, NULL, "preparing a room statement");
    sqlite3_finalize(st);
    return NULL;
  }
  return st;
}

/* Runs a statement that returns no rows, binding up to two strings and an
 * integer (NULL strings are not bound). */
static int fl_run(fl_store *s, const char *sql, const char *a, const char *b, long long n,
                  const char *what) {
  sqlite3_stmt *st = fl_prep(s, sql);
  if (!st)
    return FL_ESTORE;
  int rc = 0;
  if ((a && fl_store_bind_text(st, 1, a) != SQLITE_OK) ||
      (b && fl_store_bind_text(st, 2, b) != SQLITE_OK) ||
      (sqlite3_bind_parameter_count(st) >= 3 && sqlite3_bind_int64(st, 3, n) != SQLITE_OK))
    rc = fl_store_db_fail(s, NULL, what);
  else if (sqlite3_step(st) != SQLITE_DONE)
    rc = fl_store_db_fail(s, NULL, what);
  sqlite3_finalize(st);
  return rc;
}

int fl_store_room_put(fl_store *s, const char *room_id, const char *label) {
  if (!s || !room_id || !*room_id || !label)
    return FL_EINVAL;
  return fl_run(s, "INSERT INTO rooms (room_id, label) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
                room_id, label, 0, "registering a room");
}

int fl_store_room_each(fl_store *s,
                       void (*cb)(void *ctx, const char *room_id, const char *label,
                                  long long count, long long dropped),
                       void *ctx) {
  if (!s || !cb)
    return FL_EINVAL;
  sqlite3_stmt *st = fl_prep(s, "SELECT r.room_id, r.label, r.dropped,"
                                " (SELECT count(*) FROM room_msgs m WHERE m.room_id = r.room_id)"
                                " FROM rooms r ORDER BY r.label");
  if (!st)
    return FL_ESTORE;
  int rc;
  while ((rc = fl_store_step(s, st, NULL, "listing rooms")) == 1)
    cb(ctx, (const char *)sqlite3_column_text(st, 0), (const char *)sqlite3_column_text(st, 1),
       sqlite3_column_int64(st, 3), sqlite3_column_int64(st, 2));
  sqlite3_finalize(st);
  return rc;
}

static int fl_tx(fl_store *s, const char *sql) {
  return sqlite3_exec(s->db, sql, NULL, NULL, NULL) == SQLITE_OK
             ? 0
             : fl_store_db_fail(s, NULL, "a room transaction");
}

int fl_store_room_append(fl_store *s, const char *room_id, const char *msg_id, const char *item,
                         int hops, size_t max, long long *seq, size_t *dropped) {
  if (!s || !room_id || !msg_id || !item || !seq || !dropped || hops < 0)
    return FL_EINVAL;
  *dropped = 0;
  int rc = fl_tx(s, "SAVEPOINT room_append");
  if (rc)
    return rc;
  sqlite3_stmt *st = fl_prep(s, "INSERT INTO room_seen (room_id, msg_id) VALUES (?1, ?2)");
  if (!st) {
    rc = FL_ESTORE;
    goto fail;
  }
  fl_store_bind_text(st, 1, room_id);
  fl_store_bind_text(st, 2, msg_id);
  int src = sqlite3_step(st);
  sqlite3_finalize(st);
  if (src == SQLITE_CONSTRAINT || src == SQLITE_CONSTRAINT_PRIMARYKEY) {
    rc = FL_EDUP;
    goto fail;
  }
  if (src != SQLITE_DONE) {
    rc = fl_store_db_fail(s, NULL, "remembering a room message");
    goto fail;
  }
  st = fl_prep(s, "INSERT INTO room_msgs (room_id, msg_id, hops, item) VALUES (?1, ?2, ?3, ?4)");
  if (!st) {
    rc = FL_ESTORE;
    goto fail;
  }
  fl_store_bind_text(st, 1, room_id);
  fl_store_bind_text(st, 2, msg_id);
  sqlite3_bind_int(st, 3, hops);
  fl_store_bind_text(st, 4, item);
  src = sqlite3_step(st);
  sqlite3_finalize(st);
  if (src != SQLITE_DONE) {
    rc = fl_store_db_fail(s, NULL, "appending a room message");
    goto fail;
  }
  *seq = sqlite3_last_insert_rowid(s->db);
  st = fl_prep(s, "DELETE FROM room_msgs WHERE room_id = ?1 AND seq <= (SELECT seq FROM room_msgs"
                  " WHERE room_id = ?1 ORDER BY seq DESC LIMIT 1 OFFSET ?2)");
  if (!st) {
    rc = FL_ESTORE;
    goto fail;
  }
  fl_store_bind_text(st, 1, room_id);
  sqlite3_bind_int64(st, 2, (sqlite3_int64)max);
  src = sqlite3_step(st);
  sqlite3_finalize(st);
  if (src != SQLITE_DONE) {
    rc = fl_store_db_fail(s, NULL, "capping a room");
    goto fail;
  }
  *dropped = (size_t)sqlite3_changes(s->db);
  if (*dropped &&
      (rc = fl_run(s, "UPDATE rooms SET dropped = dropped + ?3 WHERE room_id = ?1", room_id, NULL,
                   (long long)*dropped, "counting a room's dropped messages")))
    goto fail;
  return fl_tx(s, "RELEASE room_append");

fail:
  sqlite3_exec(s->db, "ROLLBACK TO room_append; RELEASE room_append", NULL, NULL, NULL);
  return rc;
}

int fl_store_room_after(fl_store *s, const char *room_id, long long after, size_t limit,
                        void (*cb)(void *ctx, long long seq, const char *item, int hops),
                        void *ctx) {
  if (!s || !room_id || !cb)
    return FL_EINVAL;
  sqlite3_stmt *st = fl_prep(s, "SELECT seq, item, hops FROM room_msgs WHERE room_id = ?1 AND"
                                " seq > ?2 ORDER BY seq LIMIT ?3");
  if (!st)
    return FL_ESTORE;
  fl_store_bind_text(st, 1, room_id);
  sqlite3_bind_int64(st, 2, after);
  sqlite3_bind_int64(st, 3, (sqlite3_int64)limit);
  int rc;
  while ((rc = fl_store_step(s, st, NULL, "reading a room")) == 1)
    cb(ctx, sqlite3_column_int64(st, 0), (const char *)sqlite3_column_text(st, 1),
       sqlite3_column_int(st, 2));
  sqlite3_finalize(st);
  return rc;
}

int fl_store_room_cursor(fl_store *s, const char *room_id, const char *peer, long long *cursor) {
  if (!s || !room_id || !peer || !cursor)
    return FL_EINVAL;
  *cursor = 0;
  sqlite3_stmt *st = fl_prep(s, "SELECT cursor FROM room_cursors WHERE room_id = ?1 AND peer = ?2");
  if (!st)
    return FL_ESTORE;
  fl_store_bind_text(st, 1, room_id);
  fl_store_bind_text(st, 2, peer);
  int rc = fl_store_step(s, st, NULL, "reading a cursor");
  if (rc == 1) {
    *cursor = sqlite3_column_int64(st, 0);
    rc = 0;
  }
  sqlite3_finalize(st);
  return rc;
}

int fl_store_room_cursor_put(fl_store *s, const char *room_id, const char *peer, long long cursor) {
  if (!s || !room_id || !peer)
    return FL_EINVAL;
  return fl_run(s,
                "INSERT INTO room_cursors (room_id, peer, cursor) VALUES (?1, ?2, ?3)"
                " ON CONFLICT (room_id, peer) DO UPDATE SET cursor = excluded.cursor",
                room_id, peer, cursor, "storing a cursor");
}

int fl_store_room_cursor_each(fl_store *s, const char *room_id,
                              void (*cb)(void *ctx, const char *peer, long long cursor),
                              void *ctx) {
  if (!s || !room_id || !cb)
    return FL_EINVAL;
  sqlite3_stmt *st =
      fl_prep(s, "SELECT peer, cursor FROM room_cursors WHERE room_id = ?1 ORDER BY peer");
  if (!st)
    return FL_ESTORE;
  fl_store_bind_text(st, 1, room_id);
  int rc;
  while ((rc = fl_store_step(s, st, NULL, "listing cursors")) == 1)
    cb(ctx, (const char *)sqlite3_column_text(st, 0), sqlite3_column_int64(st, 1));
  sqlite3_finalize(st);
  return rc;
}
