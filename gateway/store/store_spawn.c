/* store_spawn.c — the hold store's record of spawns this host ran (see
 * store.h): one row per spawnId with the spawner and the outcome, so that a
 * repeated SPAWN is answered from it and a spawner's right to stop its
 * agent survives a restart. */
#include <string.h>

#include "common/error.h"
#include "common/limits.h"
#include "gateway/store/store.h"
#include "gateway/store/store_internal.h"

int fl_store_spawn_put(fl_store *s, const fl_spawn_rec *r) {
  if (!s || !r || !FL_FIELD_OK(r->gid, 1) || !FL_FIELD_OK(r->by, 0) ||
      !FL_FIELD_OK(r->by_host, 0) || !FL_FIELD_OK(r->profile, 0) || !FL_FIELD_OK(r->name, 0) ||
      !FL_FIELD_OK(r->state, 1) || !FL_FIELD_OK(r->why, 0) || !FL_FIELD_OK(r->pane, 0) ||
      !FL_FIELD_OK(r->socket, 0))
    return FL_EINVAL;
  sqlite3_stmt *trim = s->st[FL_ST_SPAWN_TRIM];
  int rc = 0;
  if (sqlite3_bind_int64(trim, 1, r->ts_ms - FL_SPAWN_RECORD_KEEP_MS) != SQLITE_OK ||
      sqlite3_step(trim) != SQLITE_DONE)
    rc = fl_store_db_fail(s, NULL, "trimming old spawn records");
  fl_store_stmt_done(trim);
  if (rc)
    return rc;
  sqlite3_stmt *st = s->st[FL_ST_SPAWN_PUT];
  if (fl_store_bind_text(st, 1, r->gid) != SQLITE_OK ||
      fl_store_bind_text(st, 2, r->by) != SQLITE_OK ||
      fl_store_bind_text(st, 3, r->by_host) != SQLITE_OK ||
      fl_store_bind_text(st, 4, r->profile) != SQLITE_OK ||
      fl_store_bind_text(st, 5, r->name) != SQLITE_OK ||
      fl_store_bind_text(st, 6, r->state) != SQLITE_OK ||
      fl_store_bind_text(st, 7, r->why) != SQLITE_OK ||
      sqlite3_bind_int64(st, 8, r->ts_ms) != SQLITE_OK ||
      fl_store_bind_text(st, 9, r->pane) != SQLITE_OK ||
      fl_store_bind_text(st, 10, r->socket) != SQLITE_OK)
    rc = fl_store_db_fail(s, NULL, "binding the spawn record");
  else if (sqlite3_step(st) != SQLITE_DONE)
    rc = fl_store_db_fail(s, NULL, "recording a spawn");
  fl_store_stmt_done(st);
  return rc;
}

int fl_store_spawn_get(fl_store *s, const char *gid, fl_spawn_rec *out) {
  if (!s || !gid || !*gid || !out)
    return FL_EINVAL;
  memset(out, 0, sizeof *out);
  sqlite3_stmt *st = s->st[FL_ST_SPAWN_GET];
  int rc;
  if (fl_store_bind_text(st, 1, gid) != SQLITE_OK) {
    rc = fl_store_db_fail(s, NULL, "binding the gid");
  } else if ((rc = fl_store_step(s, st, NULL, "reading a spawn record")) == 1) {
    fl_store_col_copy(st, 0, out->gid, sizeof out->gid);
    fl_store_col_copy(st, 1, out->by, sizeof out->by);
    fl_store_col_copy(st, 2, out->by_host, sizeof out->by_host);
    fl_store_col_copy(st, 3, out->profile, sizeof out->profile);
    fl_store_col_copy(st, 4, out->name, sizeof out->name);
    fl_store_col_copy(st, 5, out->state, sizeof out->state);
    fl_store_col_copy(st, 6, out->why, sizeof out->why);
    out->ts_ms = sqlite3_column_int64(st, 7);
    fl_store_col_copy(st, 8, out->pane, sizeof out->pane);
    fl_store_col_copy(st, 9, out->socket, sizeof out->socket);
    rc = 0;
  } else if (rc == 0) {
    rc = FL_ENOTFOUND;
  }
  fl_store_stmt_done(st);
  return rc;
}
