/* store_forward.c — the briefs of the forward path (store_forward.h).
 *
 * One table, forward, keyed by (msg_id, to_gid), in the same database and
 * connection as the holds, so a brief recorded inside a burst of broker
 * deliveries commits with the burst, before any of it is acknowledged.
 * These calls are rare next to the holds' (one brief is a handful of
 * statements over its life), so each statement is prepared per call rather
 * than cached; every statement is finalized before the call returns, so
 * none keeps a read transaction open. */
#include "gateway/store/store_forward.h"
#include "gateway/store/store_internal.h"

#include <sqlite3.h>
#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/log.h"

const char fl_store_fwd_schema[] =
    "CREATE TABLE IF NOT EXISTS forward ("
    " seq INTEGER PRIMARY KEY AUTOINCREMENT,"
    " msg_id TEXT NOT NULL,"
    " to_gid TEXT NOT NULL,"
    " from_gid TEXT NOT NULL DEFAULT '',"
    " from_name TEXT NOT NULL DEFAULT '',"
    " trace_id TEXT NOT NULL DEFAULT '',"
    " sender_host TEXT NOT NULL DEFAULT '',"
    " pane TEXT NOT NULL DEFAULT '',"
    " socket TEXT NOT NULL DEFAULT '',"
    " deadline_ms INTEGER NOT NULL,"
    " at_ms INTEGER NOT NULL,"
    " state INTEGER NOT NULL DEFAULT 0,"
    " reported INTEGER NOT NULL DEFAULT 0,"
    " reason TEXT NOT NULL DEFAULT '',"
    " content BLOB NOT NULL,"
    " auth INTEGER NOT NULL DEFAULT 0,"
    " UNIQUE (msg_id, to_gid));"
    "CREATE INDEX IF NOT EXISTS forward_queue ON forward (to_gid, state, seq);";

#define FL_FWD_COLS                                                                                \
  "seq, msg_id, to_gid, from_gid, from_name, trace_id, sender_host, pane, socket, deadline_ms, "   \
  "at_ms, state, reported, reason, content, auth"

static int fl_prep(fl_store *s, const char *sql, sqlite3_stmt **st) {
  if (!s || !s->db)
    return FL_EINVAL;
  if (sqlite3_prepare_v2(s->db, sql, -1, st, NULL) != SQLITE_OK) {
    *st = NULL;
    return fl_store_db_fail(s, NULL, "preparing a forward statement");
  }
  return 0;
}

void fl_fwd_clear(fl_fwd *f) {
  if (!f)
    return;
  fl_free(f->content);
  f->content = NULL;
  f->content_len = 0;
}

/* Fills f from a row of FL_FWD_COLS; f->content is new. */
static int fl_row_fwd(fl_store *s, sqlite3_stmt *st, fl_fwd *f) {
  memset(f, 0, sizeof *f);
  f->seq = sqlite3_column_int64(st, 0);
  fl_store_col_copy(st, 1, f->msg_id, sizeof f->msg_id);
  fl_store_col_copy(st, 2, f->to_gid, sizeof f->to_gid);
  fl_store_col_copy(st, 3, f->from_gid, sizeof f->from_gid);
  fl_store_col_copy(st, 4, f->from_name, sizeof f->from_name);
  fl_store_col_copy(st, 5, f->trace_id, sizeof f->trace_id);
  fl_store_col_copy(st, 6, f->sender_host, sizeof f->sender_host);
  fl_store_col_copy(st, 7, f->pane, sizeof f->pane);
  fl_store_col_copy(st, 8, f->socket, sizeof f->socket);
  f->deadline_ms = sqlite3_column_int64(st, 9);
  f->at_ms = sqlite3_column_int64(st, 10);
  f->state = sqlite3_column_int(st, 11);
  f->reported = sqlite3_column_int(st, 12);
  fl_store_col_copy(st, 13, f->reason, sizeof f->reason);
  const void *blob = sqlite3_column_blob(st, 14);
  int len = sqlite3_column_bytes(st, 14);
  if (len < 0 || (!blob && len > 0))
    return fl_store_db_fail(s, f->trace_id, "reading a brief");
  f->content = fl_malloc((size_t)len + 1);
  if (!f->content)
    return FL_ENOMEM;
  if (len)
    memcpy(f->content, blob, (size_t)len);
  f->content[len] = '\0';
  f->content_len = (size_t)len;
  f->auth = sqlite3_column_int(st, 15);
  return 0;
}

int fl_store_fwd_put(fl_store *s, fl_fwd *f) {
  if (!f || !FL_FIELD_OK(f->msg_id, 1) || !FL_FIELD_OK(f->to_gid, 1))
    return FL_EINVAL;
  if (f->content_len > FL_MAX_CONTENT)
    return FL_ETOOBIG;
  sqlite3_stmt *st;
  int rc = fl_prep(s,
                   "INSERT INTO forward (msg_id, to_gid, from_gid, from_name, trace_id, "
                   "sender_host, pane, socket, deadline_ms, at_ms, state, content, auth) VALUES "
                   "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 0, ?11, ?12)",
                   &st);
  if (rc)
    return rc;
  fl_store_bind_text(st, 1, f->msg_id);
  fl_store_bind_text(st, 2, f->to_gid);
  fl_store_bind_text(st, 3, f->from_gid);
  fl_store_bind_text(st, 4, f->from_name);
  fl_store_bind_text(st, 5, f->trace_id);
  fl_store_bind_text(st, 6, f->sender_host);
  fl_store_bind_text(st, 7, f->pane);
  fl_store_bind_text(st, 8, f->socket);
  sqlite3_bind_int64(st, 9, f->deadline_ms);
  sqlite3_bind_int64(st, 10, f->at_ms);
  sqlite3_bind_blob(st, 11, f->content ? f->content : "", (int)f->content_len, SQLITE_STATIC);
  sqlite3_bind_int(st, 12, f->auth);
  int step = sqlite3_step(st);
  if (step == SQLITE_DONE) {
    f->seq = sqlite3_last_insert_rowid(s->db);
    f->state = FL_FWD_QUEUED;
    rc = 0;
  } else if ((step & 0xff) == SQLITE_CONSTRAINT) { /* extended codes may be on */
    rc = FL_EDUP;
  } else {
    rc = fl_store_db_fail(s, f->trace_id, "recording a brief");
  }
  sqlite3_finalize(st);
  return rc;
}

/* Runs st (prepared, bound) for at most one row into out. */
static int fl_one(fl_store *s, sqlite3_stmt *st, fl_fwd *out) {
  int rc = fl_store_step(s, st, NULL, "reading a brief");
  if (rc == 1)
    rc = fl_row_fwd(s, st, out);
  else if (rc == 0)
    rc = FL_ENOTFOUND;
  sqlite3_finalize(st);
  if (rc)
    fl_fwd_clear(out);
  return rc;
}

int fl_store_fwd_next(fl_store *s, const char *to_gid, fl_fwd *out) {
  memset(out, 0, sizeof *out);
  sqlite3_stmt *st;
  int rc = fl_prep(s,
                   "SELECT " FL_FWD_COLS " FROM forward WHERE to_gid = ?1 AND state = 0 "
                   "ORDER BY seq LIMIT 1",
                   &st);
  if (rc)
    return rc;
  fl_store_bind_text(st, 1, to_gid);
  return fl_one(s, st, out);
}

int fl_store_fwd_get(fl_store *s, const char *msg_id, const char *to_gid, fl_fwd *out) {
  memset(out, 0, sizeof *out);
  sqlite3_stmt *st;
  int rc = fl_prep(s, "SELECT " FL_FWD_COLS " FROM forward WHERE msg_id = ?1 AND to_gid = ?2", &st);
  if (rc)
    return rc;
  fl_store_bind_text(st, 1, msg_id);
  fl_store_bind_text(st, 2, to_gid);
  return fl_one(s, st, out);
}

/* Runs a bound write; FL_ENOTFOUND when it changed no row. */
static int fl_write(fl_store *s, sqlite3_stmt *st, const char *what, size_t *n) {
  int rc = fl_store_step(s, st, NULL, what);
  if (rc == 0 && n)
    *n = (size_t)sqlite3_changes(s->db);
  if (rc == 0 && !n && sqlite3_changes(s->db) == 0)
    rc = FL_ENOTFOUND;
  sqlite3_finalize(st);
  return rc > 0 ? 0 : rc;
}

int fl_store_fwd_set(fl_store *s, const char *msg_id, const char *to_gid, int state,
                     const char *reason) {
  sqlite3_stmt *st;
  int rc = fl_prep(s,
                   "UPDATE forward SET state = ?3, reason = ?4, "
                   "content = CASE WHEN ?3 >= 2 THEN x'' ELSE content END "
                   "WHERE msg_id = ?1 AND to_gid = ?2",
                   &st);
  if (rc)
    return rc;
  fl_store_bind_text(st, 1, msg_id);
  fl_store_bind_text(st, 2, to_gid);
  sqlite3_bind_int(st, 3, state);
  fl_store_bind_text(st, 4, reason);
  return fl_write(s, st, "updating a brief", NULL);
}

int fl_store_fwd_reported(fl_store *s, const char *msg_id, const char *to_gid) {
  sqlite3_stmt *st;
  int rc = fl_prep(s, "UPDATE forward SET reported = 1 WHERE msg_id = ?1 AND to_gid = ?2", &st);
  if (rc)
    return rc;
  fl_store_bind_text(st, 1, msg_id);
  fl_store_bind_text(st, 2, to_gid);
  return fl_write(s, st, "marking a brief reported", NULL);
}

int fl_store_fwd_fail_typing(fl_store *s, const char *reason, size_t *n) {
  sqlite3_stmt *st;
  size_t changed = 0;
  int rc =
      fl_prep(s, "UPDATE forward SET state = 3, reason = ?1, content = x'' WHERE state = 1", &st);
  if (rc)
    return rc;
  fl_store_bind_text(st, 1, reason);
  rc = fl_write(s, st, "failing interrupted briefs", &changed);
  if (n)
    *n = changed;
  return rc;
}

int fl_store_fwd_each_unreported(fl_store *s, size_t max, void (*cb)(void *ctx, const fl_fwd *f),
                                 void *ctx) {
  sqlite3_stmt *st;
  int rc = fl_prep(s,
                   "SELECT " FL_FWD_COLS " FROM forward WHERE state >= 2 AND reported = 0 "
                   "ORDER BY seq LIMIT ?1",
                   &st);
  if (rc)
    return rc;
  sqlite3_bind_int64(st, 1, (sqlite3_int64)max);
  /* Rows are copied out first: cb may not call into the store, and the
   * statement must be finished before a caller writes. */
  fl_fwd *rows = fl_calloc(max ? max : 1, sizeof *rows);
  size_t n = 0;
  if (!rows) {
    sqlite3_finalize(st);
    return FL_ENOMEM;
  }
  while (n < max && (rc = fl_store_step(s, st, NULL, "listing briefs to report")) == 1) {
    if ((rc = fl_row_fwd(s, st, &rows[n])))
      break;
    n++;
  }
  sqlite3_finalize(st);
  for (size_t i = 0; i < n; i++) {
    if (rc <= 0 && cb)
      cb(ctx, &rows[i]);
    fl_fwd_clear(&rows[i]);
  }
  fl_free(rows);
  return rc > 0 ? 0 : rc;
}

int fl_store_fwd_each_queued_gid(fl_store *s, void (*cb)(void *ctx, const char *to_gid),
                                 void *ctx) {
  sqlite3_stmt *st;
  int rc = fl_prep(s, "SELECT DISTINCT to_gid FROM forward WHERE state = 0", &st);
  if (rc)
    return rc;
  while ((rc = fl_store_step(s, st, NULL, "listing queued briefs")) == 1) {
    char gid[FL_ID_LEN];
    fl_store_col_copy(st, 0, gid, sizeof gid);
    cb(ctx, gid);
  }
  sqlite3_finalize(st);
  return rc;
}

int fl_store_fwd_prune(fl_store *s, int64_t cutoff_ms, size_t *n) {
  sqlite3_stmt *st;
  size_t changed = 0;
  int rc = fl_prep(s, "DELETE FROM forward WHERE state >= 2 AND at_ms < ?1", &st);
  if (rc)
    return rc;
  sqlite3_bind_int64(st, 1, cutoff_ms);
  rc = fl_write(s, st, "pruning briefs", &changed);
  if (n)
    *n = changed;
  return rc;
}
