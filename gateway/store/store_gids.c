/* store_gids.c — the owner of each gid (store_gids.h).
 *
 * One table, gid_owners, in the hold store's database. Triggers on the two
 * entity tables add a row the first time a gid is recorded, only where
 * none is, so the first owner stays (not INSERT OR IGNORE: SQLite refused
 * it inside the entity tables' upserts), and the schema's last statements
 * adopt the gids recorded before this table existed. Each host keeps at
 * most FL_MAX_GIDS_PER_HOST rows (common/limits.h says why). Reads are one primary-key
 * lookup per beat that names a gid under a host other than the one this
 * gateway last saw it on (presence.c), so each statement is prepared per
 * call. */
#include "gateway/store/store_gids.h"
#include "gateway/store/store_internal.h"

#include <sqlite3.h>
#include <string.h>

#include "common/error.h"
#include "common/limits.h"

#define FL_GIDS_STR_(x) #x
#define FL_GIDS_STR(x) FL_GIDS_STR_(x)

/* Adds new.gid for host h unless some host owns it, then drops h's oldest
 * rows past FL_MAX_GIDS_PER_HOST. */
#define FL_GID_CLAIM(h)                                                                            \
  " INSERT INTO gid_owners (gid, host) SELECT new.gid, " h                                         \
  " WHERE NOT EXISTS (SELECT 1 FROM gid_owners WHERE gid = new.gid);"                              \
  " DELETE FROM gid_owners WHERE host = " h " AND rowid <= (SELECT rowid FROM gid_owners"          \
  " WHERE host = " h " ORDER BY rowid DESC LIMIT 1 OFFSET " FL_GIDS_STR(FL_MAX_GIDS_PER_HOST) ");"

const char fl_store_gids_schema[] =
    "CREATE TABLE IF NOT EXISTS gid_owners ("
    " gid TEXT PRIMARY KEY NOT NULL COLLATE NOCASE,"
    " host TEXT NOT NULL);"
    "CREATE INDEX IF NOT EXISTS gid_owners_host ON gid_owners (host);"
    "CREATE TRIGGER IF NOT EXISTS gid_owner_local AFTER INSERT ON entities BEGIN" FL_GID_CLAIM(
        "''") " END;"
              "CREATE TRIGGER IF NOT EXISTS gid_owner_remote AFTER INSERT ON remote_entities "
              "BEGIN" FL_GID_CLAIM(
                  "new.host") " END;"
                              "CREATE TRIGGER IF NOT EXISTS gid_owner_remote_moved AFTER UPDATE OF "
                              "host ON remote_entities"
                              " BEGIN" FL_GID_CLAIM(
                                  "new.host") " END;"
                                              "INSERT OR IGNORE INTO gid_owners (gid, host) SELECT "
                                              "gid, '' FROM entities;"
                                              "INSERT OR IGNORE INTO gid_owners (gid, host) SELECT "
                                              "gid, host FROM remote_entities;";

int fl_store_gid_owner(fl_store *s, const char *gid, char *host, size_t hostlen) {
  if (!s || !s->db || !gid || !*gid || !host || !hostlen)
    return FL_EINVAL;
  host[0] = '\0';
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(s->db, "SELECT host FROM gid_owners WHERE gid = ?1", -1, &st, NULL) !=
      SQLITE_OK)
    return fl_store_db_fail(s, NULL, "preparing the gid owner lookup");
  int rc;
  if (fl_store_bind_text(st, 1, gid) != SQLITE_OK)
    rc = fl_store_db_fail(s, NULL, "binding the gid");
  else if ((rc = fl_store_step(s, st, NULL, "reading a gid's owner")) == 1) {
    fl_store_col_copy(st, 0, host, hostlen);
    rc = 0;
  } else if (rc == 0) {
    rc = FL_ENOTFOUND;
  }
  sqlite3_finalize(st);
  return rc;
}

int fl_store_gid_release(fl_store *s, const char *gid) {
  if (!s || !s->db || !gid || !*gid)
    return FL_EINVAL;
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(s->db, "DELETE FROM gid_owners WHERE gid = ?1", -1, &st, NULL) !=
      SQLITE_OK)
    return fl_store_db_fail(s, NULL, "preparing the gid release");
  int rc;
  if (fl_store_bind_text(st, 1, gid) != SQLITE_OK)
    rc = fl_store_db_fail(s, NULL, "binding the gid");
  else if (sqlite3_step(st) != SQLITE_DONE)
    rc = fl_store_db_fail(s, NULL, "releasing a gid");
  else
    rc = sqlite3_changes(s->db) > 0 ? 0 : FL_ENOTFOUND;
  sqlite3_finalize(st);
  return rc;
}
