/* store_roster.c — the hold store's entity tables (see store.h): this
 * host's roster, one row per gid (entities), and the other hosts' entities
 * this gateway verified (remote_entities), so a backlog that waited while
 * fleetd was down is checked against them after a restart. */
#include <string.h>

#include "common/error.h"
#include "common/log.h"
#include "gateway/store/store.h"
#include "gateway/store/store_internal.h"

int fl_store_entity_put(fl_store *s, const fl_entity_rec *e) {
  if (!s || !e || !FL_FIELD_OK(e->gid, 1) || !FL_FIELD_OK(e->name, 1) || !FL_FIELD_OK(e->role, 0) ||
      !FL_FIELD_OK(e->groups, 0))
    return FL_EINVAL;
  sqlite3_stmt *st = s->st[FL_ST_ENTITY_PUT];
  int rc;
  if (fl_store_bind_text(st, 1, e->gid) != SQLITE_OK ||
      fl_store_bind_text(st, 2, e->name) != SQLITE_OK ||
      fl_store_bind_text(st, 3, e->role) != SQLITE_OK ||
      fl_store_bind_text(st, 4, e->groups) != SQLITE_OK) {
    rc = fl_store_db_fail(s, NULL, "binding the entity");
    goto out;
  }
  int src = sqlite3_step(st);
  if (src == SQLITE_DONE) {
    rc = 0;
  } else if (src == SQLITE_CONSTRAINT_UNIQUE) {
    /* The gid conflict is the upsert; a unique failure left is the name. */
    fl_warn(NULL, "store: name '%s' already belongs to another gid than %s", e->name, e->gid);
    rc = FL_ENAMETAKEN;
  } else {
    rc = fl_store_db_fail(s, NULL, "storing the entity");
  }
out:
  fl_store_stmt_done(st);
  return rc;
}

static void fl_row_entity(sqlite3_stmt *st, fl_entity_rec *e) {
  memset(e, 0, sizeof *e);
  fl_store_col_copy(st, 0, e->gid, sizeof e->gid);
  fl_store_col_copy(st, 1, e->name, sizeof e->name);
  fl_store_col_copy(st, 2, e->role, sizeof e->role);
  fl_store_col_copy(st, 3, e->groups, sizeof e->groups);
}

int fl_store_entity_by_name(fl_store *s, const char *name, fl_entity_rec *e) {
  if (!s || !name || !*name || !e)
    return FL_EINVAL;
  sqlite3_stmt *st = s->st[FL_ST_ENTITY_BY_NAME];
  int rc;
  if (fl_store_bind_text(st, 1, name) != SQLITE_OK) {
    rc = fl_store_db_fail(s, NULL, "binding the entity name");
    goto out;
  }
  rc = fl_store_step(s, st, NULL, "finding an entity by name");
  if (rc == 1) {
    fl_row_entity(st, e);
    rc = 0;
  } else if (rc == 0) {
    rc = FL_ENOTFOUND;
  }
out:
  fl_store_stmt_done(st);
  return rc;
}

int fl_store_remote_put(fl_store *s, const fl_entity_rec *e) {
  if (!s || !e || !FL_FIELD_OK(e->gid, 1) || !FL_FIELD_OK(e->name, 1) || !FL_FIELD_OK(e->role, 0) ||
      !FL_FIELD_OK(e->groups, 0) || !FL_FIELD_OK(e->host, 1))
    return FL_EINVAL;
  sqlite3_stmt *st = s->st[FL_ST_REMOTE_PUT];
  int rc;
  if (fl_store_bind_text(st, 1, e->gid) != SQLITE_OK ||
      fl_store_bind_text(st, 2, e->name) != SQLITE_OK ||
      fl_store_bind_text(st, 3, e->role) != SQLITE_OK ||
      fl_store_bind_text(st, 4, e->groups) != SQLITE_OK ||
      fl_store_bind_text(st, 5, e->host) != SQLITE_OK) {
    rc = fl_store_db_fail(s, NULL, "binding the remote entity");
  } else {
    rc = sqlite3_step(st) == SQLITE_DONE ? 0 : fl_store_db_fail(s, NULL, "storing a remote entity");
  }
  fl_store_stmt_done(st);
  return rc;
}

int fl_store_remote_each(fl_store *s, void (*cb)(void *ctx, const fl_entity_rec *e), void *ctx) {
  if (!s || !cb)
    return FL_EINVAL;
  sqlite3_stmt *st = s->st[FL_ST_REMOTE_EACH];
  fl_entity_rec e;
  int rc;
  while ((rc = fl_store_step(s, st, NULL, "listing remote entities")) == 1) {
    fl_row_entity(st, &e);
    fl_store_col_copy(st, 4, e.host, sizeof e.host);
    cb(ctx, &e);
  }
  fl_store_stmt_done(st);
  return rc;
}

int fl_store_remote_drop_host(fl_store *s, const char *host) {
  if (!s || !host || !*host)
    return FL_EINVAL;
  sqlite3_stmt *st = s->st[FL_ST_REMOTE_DROP_HOST];
  int rc;
  if (fl_store_bind_text(st, 1, host) != SQLITE_OK)
    rc = fl_store_db_fail(s, NULL, "binding the host");
  else
    rc = sqlite3_step(st) == SQLITE_DONE
             ? 0
             : fl_store_db_fail(s, NULL, "forgetting a host's entities");
  fl_store_stmt_done(st);
  return rc;
}

int fl_store_entity_delete(fl_store *s, const char *gid) {
  if (!s || !gid || !*gid)
    return FL_EINVAL;
  sqlite3_stmt *st = s->st[FL_ST_ENTITY_DELETE];
  int rc;
  if (fl_store_bind_text(st, 1, gid) != SQLITE_OK)
    rc = fl_store_db_fail(s, NULL, "binding the gid");
  else
    rc = sqlite3_step(st) == SQLITE_DONE ? 0 : fl_store_db_fail(s, NULL, "deleting an entity");
  fl_store_stmt_done(st);
  return rc;
}

int fl_store_remote_delete(fl_store *s, const char *gid) {
  if (!s || !gid || !*gid)
    return FL_EINVAL;
  sqlite3_stmt *st = s->st[FL_ST_REMOTE_DELETE];
  int rc;
  if (fl_store_bind_text(st, 1, gid) != SQLITE_OK)
    rc = fl_store_db_fail(s, NULL, "binding the gid");
  else
    rc =
        sqlite3_step(st) == SQLITE_DONE ? 0 : fl_store_db_fail(s, NULL, "deleting a remote entity");
  fl_store_stmt_done(st);
  return rc;
}

int fl_store_entity_each(fl_store *s, void (*cb)(void *ctx, const fl_entity_rec *e), void *ctx) {
  if (!s || !cb)
    return FL_EINVAL;
  sqlite3_stmt *st = s->st[FL_ST_ENTITY_EACH];
  fl_entity_rec e;
  int rc;
  while ((rc = fl_store_step(s, st, NULL, "listing entities")) == 1) {
    fl_row_entity(st, &e);
    cb(ctx, &e);
  }
  fl_store_stmt_done(st);
  return rc;
}
