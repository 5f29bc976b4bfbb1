/* store_internal.h — what the hold store's files share (store.c: the
 * database, its statements, transactions and the held messages;
 * store_roster.c: the entity tables; store_forward.c: the
 * briefs of the forward path). Nothing outside them includes this. */
#ifndef FL_STORE_INTERNAL_H
#define FL_STORE_INTERNAL_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "gateway/store/store.h"

/* Every statement, prepared once at open (store.c's table of SQL). */
enum fl_stmt_id {
  FL_ST_BEGIN,
  FL_ST_BEGIN_BATCH,
  FL_ST_COMMIT,
  FL_ST_ROLLBACK,
  FL_ST_SAVEPOINT,
  FL_ST_RELEASE,
  FL_ST_ROLLBACK_TO,
  FL_ST_KNOWN,
  FL_ST_HELD_ALL,
  FL_ST_INSERT_HELD,
  FL_ST_INSERT_SEEN,
  FL_ST_INSERT_SEEN_NEW,
  FL_ST_TAKE_SELECT,
  FL_ST_ID_SELECT,
  FL_ST_DELETE_SEQ,
  FL_ST_COUNT,
  FL_ST_TOTAL,
  FL_ST_EXPIRE,
  FL_ST_TRIM_SEEN,
  FL_ST_SEEN_CUT,
  FL_ST_SEEN_KEYS,
  FL_ST_HORIZON_PUT,
  FL_ST_ENTITY_PUT,
  FL_ST_ENTITY_BY_NAME,
  FL_ST_ENTITY_EACH,
  FL_ST_IS_HELD,
  FL_ST_REMOTE_PUT,
  FL_ST_REMOTE_EACH,
  FL_ST_REMOTE_DROP_HOST,
  FL_ST_ENTITY_DELETE,
  FL_ST_REMOTE_DELETE,
  FL_ST_SPAWN_PUT,
  FL_ST_SPAWN_GET,
  FL_ST_SPAWN_TRIM,
  FL_ST_COUNT_OF
};

struct fl_store {
  sqlite3 *db;
  sqlite3_stmt *st[FL_ST_COUNT_OF];
  int batch;              /* inside fl_store_batch_begin / _end */
  size_t max_seen;        /* the seen-set's count bound */
  size_t seen_added;      /* keys added since the last trim */
  long long seen_horizon; /* envelopes expiring at or before it are refused */
  char *path;             /* the database file, and the file it was at open: */
  unsigned long long dev, ino;
  int file_gone; /* set once path no longer names that file */
  int fd;        /* that file opened read-only (never closed before db): fstat tells if unlinked */
  /* What fl_store_count knows without asking SQLite (store_empty.c): the
   * recipients it found holding nothing, each at held_gen as it was then.
   * A put for a recipient drops its entry; held_gen moves on with every
   * rollback (which may bring back rows taken), so an entry of an older
   * generation says nothing. */
  unsigned long long held_gen;
  struct {
    char gid[FL_ID_LEN];
    unsigned long long gen;
  } empty[FL_STORE_EMPTY_CACHE];
  size_t empty_next; /* the entry the next one replaces */
  /* The seen journal (store_seenlog.c): its path, its descriptor (-1: not
   * used), its size in bytes and the keys not yet folded (jn of them; the
   * first jwritten are in the file, the rest wait for the batch's end). */
  int sync_full; /* synchronous=FULL: the journal is not used */
  char *jpath;
  int jfd;
  size_t jsize, jn, jwritten;
  struct fl_seenlog_key *jkeys;
  /* Fingerprints of the seen table's keys (store_seenidx.c): an open
   * addressing set of idx_cap slots, 0 = empty; idx_ok 0 = not kept. */
  uint64_t *idx;
  size_t idx_cap, idx_n;
  int idx_ok;
};

/* The seen journal (store_seenlog.c). Keys wait in it at most
 * FL_SEENLOG_CAP; a batch's end folds them once FL_SEENLOG_FOLD_AT wait. */
#define FL_SEENLOG_CAP 512
#define FL_SEENLOG_FOLD_AT 256
/* At open, after the statements: folds what a crash left, then opens the
 * journal for appending. Returns 0, FL_ESTORE or FL_ENOMEM. */
int fl_seenlog_open(fl_store *s);
/* 1 if the key is in the journal (not yet folded), else 0. */
int fl_seenlog_has(const fl_store *s, const char *msg_id, const char *to_gid);
/* 1 if a key may go to the journal now (open, synchronous=NORMAL, room). */
int fl_seenlog_usable(const fl_store *s);
/* Adds m's key (fl_seenlog_usable said yes, in a batch): kept in memory,
 * written to the file by fl_seenlog_flush at the batch's end. */
void fl_seenlog_add(fl_store *s, const fl_msg *m);
/* At a batch's end, just before the calls it completed are answered: the
 * keys not yet in the file go there, in one write(2). If that fails they
 * are folded into the table instead; if that fails too (logged), they stay
 * in memory, refused while fleetd runs, and are tried again at the next
 * batch's end. */
void fl_seenlog_flush(fl_store *s);
/* Outside a batch: moves the journal's keys into the seen table in one
 * transaction and empties it. Returns 0 or the store's error (the keys
 * then stay in the journal). */
int fl_seenlog_fold(fl_store *s);
/* Folds (a failure leaves the file for the next open), then closes. */
void fl_seenlog_close(fl_store *s);
/* The fingerprints of the seen table's keys (store_seenidx.c): (re)loaded
 * from the table (at open, after a trim; 0 or FL_ESTORE), added to with
 * every key written to it, asked whether a key may be there (0: certainly
 * not; 1: ask the table), and dropped (at close). */
int fl_seenidx_load(fl_store *s);
void fl_seenidx_drop(fl_store *s);
void fl_seenidx_add(fl_store *s, const char *msg_id, const char *to_gid);
int fl_seenidx_maybe(const fl_store *s, const char *msg_id, const char *to_gid);
/* Binds the four columns of a seen row. Returns 0 or -1. */
int fl_store_bind_seen_row(sqlite3_stmt *st, const char *msg_id, const char *to_gid,
                           long long at_ms, long long until_ms);

/* Rows taken may be held again (a rollback): what fl_store_count remembers
 * of empty recipients is stale (store_empty.c). */
static inline void fl_store_held_changed(fl_store *s) { s->held_gen++; }
/* Whether to_gid was counted holding nothing, with nothing held since; the
 * note that it was just counted so; and that a row for it is being put. */
int fl_store_empty_known(const fl_store *s, const char *to_gid);
void fl_store_empty_note(fl_store *s, const char *to_gid);
void fl_store_empty_forget(fl_store *s, const char *to_gid);

/* Logs a database failure with SQLite's own words and returns FL_ESTORE. */
int fl_store_db_fail(const fl_store *s, const char *trace, const char *what);
/* Returns st to its unused state and drops its bindings. NULL-safe. */
void fl_store_stmt_done(sqlite3_stmt *st);
/* Steps st once: 1 for a row, 0 when done, FL_ESTORE (logged) on error. */
int fl_store_step(fl_store *s, sqlite3_stmt *st, const char *trace, const char *what);
/* Runs statement id to its end (fl_store_step). */
int fl_store_exec(fl_store *s, enum fl_stmt_id id, const char *trace, const char *what);
/* Opens a transaction (a savepoint inside a batch) / commits it; a failed
 * commit rolls back. */
int fl_store_begin(fl_store *s, const char *trace);
int fl_store_commit(fl_store *s, const char *trace);
/* Rolls back what is still open of the current transaction (savepoint). */
void fl_store_rollback(fl_store *s, const char *trace);
/* Trims the seen-set now when enough keys came in since the last trim
 * (store_held.c). */
void fl_store_seen_trim_due(fl_store *s);
/* Binds a borrowed, NUL-terminated string (NULL binds ""). */
int fl_store_bind_text(sqlite3_stmt *st, int i, const char *v);
/* Copies a text column into a fixed field, truncating. */
void fl_store_col_copy(sqlite3_stmt *st, int col, char *dst, size_t n);
/* 1 if the fixed field f of size n is NUL-terminated (and, with nonempty,
 * not ""), else 0. */
int fl_store_field_ok(const char *f, size_t n, int nonempty);
/* The forward path's table (store_forward.c), created with the rest. */
extern const char fl_store_fwd_schema[];
/* The gid owners' table and triggers (store_gids.c), created after the
 * entity tables. */
extern const char fl_store_gids_schema[];
#define FL_FIELD_OK(f, nonempty) fl_store_field_ok((f), sizeof(f), (nonempty))

#endif
