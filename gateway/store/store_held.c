/* store_held.c — the held messages and the seen-set of the hold store
 * (store.h): admitting a message (held, or only remembered as seen),
 * taking, peeking and counting what is held for a recipient, the sweeper's
 * expiry, and trimming the seen-set by time and count. The database itself
 * (schema, statements, transactions) is store.c's. */
#include "gateway/store/store.h"
#include "gateway/store/store_internal.h"

#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/log.h"
#include "common/time.h"

/* A take grows its result array from this many slots, so a take of max=100
 * with two messages held does not allocate for a hundred. */
#define FL_TAKE_FIRST_SLOTS 16

/* Fills m from a row of FL_MSG_COLS; m->content is new (NUL-terminated) on
 * success and NULL on failure. Returns 0, FL_ENOMEM or FL_ESTORE. */
static int fl_row_msg(fl_store *s, sqlite3_stmt *st, fl_msg *m) {
  memset(m, 0, sizeof *m);
  m->seq = sqlite3_column_int64(st, 0);
  fl_store_col_copy(st, 1, m->msg_id, sizeof m->msg_id);
  fl_store_col_copy(st, 2, m->to_gid, sizeof m->to_gid);
  fl_store_col_copy(st, 3, m->trace_id, sizeof m->trace_id);
  fl_store_col_copy(st, 4, m->kind, sizeof m->kind);
  fl_store_col_copy(st, 5, m->from_gid, sizeof m->from_gid);
  fl_store_col_copy(st, 6, m->from_name, sizeof m->from_name);
  fl_store_col_copy(st, 7, m->in_reply_to, sizeof m->in_reply_to);
  m->ts_ms = sqlite3_column_int64(st, 8);
  m->expires_ms = sqlite3_column_int64(st, 9);
  /* blob before bytes: that is the order SQLite documents as safe. */
  const void *blob = sqlite3_column_blob(st, 10);
  int len = sqlite3_column_bytes(st, 10);
  if (len < 0 || (!blob && len > 0))
    return fl_store_db_fail(s, m->trace_id, "reading message content");
  m->content = fl_malloc((size_t)len + 1);
  if (!m->content)
    return FL_ENOMEM;
  if (len)
    memcpy(m->content, blob, (size_t)len);
  m->content[len] = '\0';
  m->content_len = (size_t)len;
  return 0;
}

/* Checks the shape of a message before it touches the database. */
static int fl_msg_check(const fl_msg *m) {
  if (!FL_FIELD_OK(m->msg_id, 1) || !FL_FIELD_OK(m->to_gid, 1) || !FL_FIELD_OK(m->trace_id, 0) ||
      !FL_FIELD_OK(m->kind, 0) || !FL_FIELD_OK(m->from_gid, 0) || !FL_FIELD_OK(m->from_name, 0) ||
      !FL_FIELD_OK(m->in_reply_to, 0))
    return FL_EINVAL;
  if (!m->content && m->content_len)
    return FL_EINVAL;
  if (m->content_len > FL_MAX_CONTENT)
    return FL_ETOOBIG;
  return 0;
}

int fl_store_put(fl_store *s, fl_msg *m) { return fl_store_admit(s, m, FL_ADMIT_HOLD); }

int fl_store_bind_seen_row(sqlite3_stmt *st, const char *msg_id, const char *to_gid,
                           long long at_ms, long long until_ms) {
  return fl_store_bind_text(st, 1, msg_id) != SQLITE_OK ||
                 fl_store_bind_text(st, 2, to_gid) != SQLITE_OK ||
                 sqlite3_bind_int64(st, 3, (int64_t)at_ms) != SQLITE_OK ||
                 sqlite3_bind_int64(st, 4, (int64_t)until_ms) != SQLITE_OK
             ? -1
             : 0;
}

/* Binds the seen-set row of m: msgId, recipient, now, and until when its
 * envelope can be taken. */
static int fl_bind_seen(sqlite3_stmt *st, const fl_msg *m) {
  return fl_store_bind_seen_row(st, m->msg_id, m->to_gid, fl_now_ms(),
                                fl_store_seen_until(m->ts_ms, m->expires_ms));
}

/* Whether the key is in the seen table or held: 1, 0, or FL_ESTORE. */
static int fl_known(fl_store *s, const fl_msg *m) {
  sqlite3_stmt *known = s->st[FL_ST_KNOWN];
  int rc;
  if (fl_store_bind_text(known, 1, m->msg_id) != SQLITE_OK ||
      fl_store_bind_text(known, 2, m->to_gid) != SQLITE_OK)
    rc = fl_store_db_fail(s, m->trace_id, "binding the dedup check");
  else
    rc = fl_store_step(s, known, m->trace_id, "dedup check");
  fl_store_stmt_done(known);
  return rc;
}

/* FL_ADMIT_HAND in a batch, for a recipient the store knows holds nothing
 * (store_empty.c): handed for certain, so only the msgId is recorded. With
 * the seen journal (store_seenlog.c) that is a key kept in memory for the
 * batch's one append at its end, after a read of the seen table only when
 * the key's fingerprint is there: the burst's transaction usually runs
 * nothing, and its commit writes nothing. Without it (synchronous=FULL, the
 * journal full or not open), one INSERT … ON CONFLICT DO NOTHING is the
 * dedup check and the record in one (nothing held for the recipient means
 * no held row to find either); one statement is atomic by itself, so it
 * needs no savepoint of its own, and the batch's commit makes it durable. */
static int fl_admit_handed(fl_store *s, fl_msg *m) {
  int rc;
  if (fl_seenlog_usable(s)) {
    if (s->file_gone)
      return FL_ESTORE; /* every write is refused once holds.db is gone */
    if (fl_seenidx_maybe(s, m->msg_id, m->to_gid)) {
      if ((rc = fl_known(s, m)) < 0)
        return rc;
      if (rc == 1)
        return FL_EDUP;
    }
    fl_seenlog_add(s, m); /* written at the batch's end (fl_seenlog_flush) */
  } else {
    sqlite3_stmt *st = s->st[FL_ST_INSERT_SEEN_NEW];
    if (fl_bind_seen(st, m) != 0)
      rc = fl_store_db_fail(s, m->trace_id, "binding the seen entry");
    else if ((rc = fl_store_step(s, st, m->trace_id, "recording the msgId as seen")) == 0 &&
             sqlite3_changes(s->db) == 0)
      rc = FL_EDUP;
    fl_store_stmt_done(st);
    if (rc)
      return rc;
    fl_seenidx_add(s, m->msg_id, m->to_gid);
  }
  m->seq = 0;
  m->handed = 1;
  s->seen_added++;
  return 0;
}

int fl_store_admit(fl_store *s, fl_msg *m, enum fl_admit how) {
  if (!s || !m)
    return FL_EINVAL;
  int rc = fl_msg_check(m);
  if (rc)
    return rc;
  m->handed = 0;
  /* A key in the seen journal is in the seen-set, not yet in its table. */
  if (how != FL_ADMIT_SEEN_ALREADY && fl_seenlog_has(s, m->msg_id, m->to_gid))
    return FL_EDUP;
  /* The hot path: a message for a waiting call, in a burst of deliveries. */
  if (how == FL_ADMIT_HAND && s->batch && fl_store_empty_known(s, m->to_gid))
    return fl_admit_handed(s, m);
  const char *trace = m->trace_id;
  sqlite3_stmt *all = s->st[FL_ST_HELD_ALL];
  sqlite3_stmt *ins = s->st[FL_ST_INSERT_HELD];
  sqlite3_stmt *seen = s->st[FL_ST_INSERT_SEEN];
  int handed = 0;
  if ((rc = fl_store_begin(s, trace)))
    return rc;

  if (how != FL_ADMIT_SEEN_ALREADY) {
    if ((rc = fl_known(s, m)) < 0)
      goto out;
    if (rc == 1) {
      rc = FL_EDUP;
      goto out;
    }
  }

  if (fl_store_bind_text(all, 1, m->to_gid) != SQLITE_OK) {
    rc = fl_store_db_fail(s, trace, "binding the held count");
    goto out;
  }
  if ((rc = fl_store_step(s, all, trace, "held count")) < 0)
    goto out;
  if (rc == 0) {
    rc = fl_store_db_fail(s, trace, "held count (no row)");
    goto out;
  }
  sqlite3_int64 held = sqlite3_column_int64(all, 0);
  /* Handing over is only for a recipient with nothing held: what is held
   * goes first, in order. A message already seen is kept even at the cap:
   * it was accepted before. */
  handed = how == FL_ADMIT_HAND && held == 0;
  if (how != FL_ADMIT_SEEN_ALREADY && held >= FL_MAX_HELD_PER_ENTITY) {
    rc = FL_EFULL;
    goto out;
  }

  int64_t seq = 0;
  if (!handed) {
    /* A zero-length blob needs a non-NULL pointer, or SQLite binds NULL. */
    if (fl_store_bind_text(ins, 1, m->msg_id) != SQLITE_OK ||
        fl_store_bind_text(ins, 2, m->to_gid) != SQLITE_OK ||
        fl_store_bind_text(ins, 3, m->trace_id) != SQLITE_OK ||
        fl_store_bind_text(ins, 4, m->kind) != SQLITE_OK ||
        fl_store_bind_text(ins, 5, m->from_gid) != SQLITE_OK ||
        fl_store_bind_text(ins, 6, m->from_name) != SQLITE_OK ||
        fl_store_bind_text(ins, 7, m->in_reply_to) != SQLITE_OK ||
        sqlite3_bind_int64(ins, 8, m->ts_ms) != SQLITE_OK ||
        sqlite3_bind_int64(ins, 9, m->expires_ms) != SQLITE_OK ||
        sqlite3_bind_blob(ins, 10, m->content_len ? m->content : "", (int)m->content_len,
                          SQLITE_STATIC) != SQLITE_OK) {
      rc = fl_store_db_fail(s, trace, "binding the message");
      goto out;
    }
    fl_store_empty_forget(s, m->to_gid); /* it holds something now */
    if ((rc = fl_store_step(s, ins, trace, "storing the message")) < 0)
      goto out;
    seq = sqlite3_last_insert_rowid(s->db);
  }

  if (how != FL_ADMIT_SEEN_ALREADY) {
    if (fl_bind_seen(seen, m) != 0) {
      rc = fl_store_db_fail(s, trace, "binding the seen entry");
      goto out;
    }
    if ((rc = fl_store_step(s, seen, trace, "recording the msgId as seen")) < 0)
      goto out;
    fl_seenidx_add(s, m->msg_id, m->to_gid);
  }

  fl_store_stmt_done(all);
  fl_store_stmt_done(ins);
  fl_store_stmt_done(seen);
  if ((rc = fl_store_commit(s, trace)))
    return rc;
  m->seq = seq;
  m->handed = handed;
  if (how != FL_ADMIT_SEEN_ALREADY) {
    s->seen_added++;
    fl_store_seen_trim_due(s);
  }
  return 0;

out:
  fl_store_stmt_done(all);
  fl_store_stmt_done(ins);
  fl_store_stmt_done(seen);
  fl_store_rollback(s, trace);
  return rc;
}

/* Deletes the held row seq inside the caller's transaction. */
static int fl_delete_seq(fl_store *s, int64_t seq, const char *trace) {
  sqlite3_stmt *del = s->st[FL_ST_DELETE_SEQ];
  if (sqlite3_bind_int64(del, 1, seq) != SQLITE_OK) {
    fl_store_stmt_done(del);
    return fl_store_db_fail(s, trace, "binding the delete");
  }
  return fl_store_exec(s, FL_ST_DELETE_SEQ, trace, "removing a taken message");
}

void fl_msgs_free(fl_msg *msgs, size_t n) {
  if (!msgs)
    return;
  for (size_t i = 0; i < n; i++)
    fl_free(msgs[i].content);
  fl_free(msgs);
}

/* fl_store_take and fl_store_peek: the same select; drain deletes what it
 * returned in the same transaction. */
static int fl_store_select(fl_store *s, const char *to_gid, const char *from_gid, size_t max,
                           int64_t now_ms, int drain, fl_msg **out, size_t *n) {
  if (!out || !n)
    return FL_EINVAL;
  *out = NULL;
  *n = 0;
  if (!s || !to_gid || !*to_gid)
    return FL_EINVAL;
  if (max == 0)
    return 0;
  /* No entity holds more than the cap, so a larger max only sizes the
   * LIMIT; clamping keeps the arithmetic below in range. */
  if (max > FL_MAX_HELD_PER_ENTITY)
    max = FL_MAX_HELD_PER_ENTITY;

  sqlite3_stmt *sel = s->st[FL_ST_TAKE_SELECT];
  fl_msg *msgs = NULL;
  size_t got = 0, cap = 0;
  int rc = fl_store_begin(s, NULL);
  if (rc)
    return rc;
  if (fl_store_bind_text(sel, 1, to_gid) != SQLITE_OK ||
      fl_store_bind_text(sel, 2, from_gid) != SQLITE_OK ||
      sqlite3_bind_int64(sel, 3, now_ms) != SQLITE_OK ||
      sqlite3_bind_int64(sel, 4, (sqlite3_int64)max) != SQLITE_OK) {
    rc = fl_store_db_fail(s, NULL, "binding the take");
    goto fail;
  }
  while ((rc = fl_store_step(s, sel, NULL, "selecting held messages")) == 1) {
    if (got == cap) {
      size_t ncap = cap ? cap * 2 : FL_TAKE_FIRST_SLOTS;
      if (ncap > max)
        ncap = max;
      fl_msg *grown = fl_realloc(msgs, ncap * sizeof *grown);
      if (!grown) {
        rc = FL_ENOMEM;
        goto fail;
      }
      msgs = grown;
      cap = ncap;
    }
    if ((rc = fl_row_msg(s, sel, &msgs[got])))
      goto fail;
    got++;
  }
  if (rc < 0)
    goto fail;
  fl_store_stmt_done(sel);

  for (size_t i = 0; drain && i < got; i++)
    if ((rc = fl_delete_seq(s, msgs[i].seq, msgs[i].trace_id)))
      goto fail;
  if ((rc = fl_store_commit(s, NULL)))
    goto fail;
  *out = got ? msgs : NULL;
  *n = got;
  if (!got)
    fl_free(msgs);
  return 0;

fail:
  fl_store_stmt_done(sel);
  fl_store_rollback(s, NULL);
  fl_msgs_free(msgs, got);
  return rc;
}

int fl_store_take(fl_store *s, const char *to_gid, const char *from_gid, size_t max, int64_t now_ms,
                  fl_msg **out, size_t *n) {
  return fl_store_select(s, to_gid, from_gid, max, now_ms, 1, out, n);
}

int fl_store_peek(fl_store *s, const char *to_gid, size_t max, int64_t now_ms, fl_msg **out,
                  size_t *n) {
  return fl_store_select(s, to_gid, NULL, max, now_ms, 0, out, n);
}

int fl_store_take_id(fl_store *s, const char *to_gid, const char *msg_id, fl_msg *out) {
  if (!out)
    return FL_EINVAL;
  memset(out, 0, sizeof *out);
  if (!s || !to_gid || !*to_gid || !msg_id || !*msg_id)
    return FL_EINVAL;
  sqlite3_stmt *sel = s->st[FL_ST_ID_SELECT];
  int rc = fl_store_begin(s, NULL);
  if (rc)
    return rc;
  if (fl_store_bind_text(sel, 1, to_gid) != SQLITE_OK ||
      fl_store_bind_text(sel, 2, msg_id) != SQLITE_OK) {
    rc = fl_store_db_fail(s, NULL, "binding the take by id");
    goto fail;
  }
  if ((rc = fl_store_step(s, sel, NULL, "selecting a held message")) < 0)
    goto fail;
  if (rc == 0) {
    rc = FL_ENOTFOUND;
    goto fail;
  }
  if ((rc = fl_row_msg(s, sel, out)))
    goto fail;
  fl_store_stmt_done(sel);
  if ((rc = fl_delete_seq(s, out->seq, out->trace_id)) || (rc = fl_store_commit(s, out->trace_id)))
    goto fail;
  return 0;

fail:
  fl_store_stmt_done(sel);
  fl_store_rollback(s, NULL);
  fl_free(out->content);
  out->content = NULL;
  out->content_len = 0;
  return rc;
}

/* Runs a one-row count(*) statement whose parameters are already bound. */
static int fl_count_stmt(fl_store *s, sqlite3_stmt *st, const char *what, size_t *n) {
  int rc = fl_store_step(s, st, NULL, what);
  if (rc == 1) {
    *n = (size_t)sqlite3_column_int64(st, 0);
    rc = 0;
  } else if (rc == 0) {
    rc = fl_store_db_fail(s, NULL, what);
  }
  fl_store_stmt_done(st);
  return rc;
}

int fl_store_count(fl_store *s, const char *to_gid, int64_t now_ms, size_t *n) {
  if (!n)
    return FL_EINVAL;
  *n = 0;
  if (!s || !to_gid)
    return FL_EINVAL;
  if (fl_store_empty_known(s, to_gid))
    return 0; /* nothing held since it was counted empty (store_empty.c) */
  sqlite3_stmt *st = s->st[FL_ST_COUNT];
  if (fl_store_bind_text(st, 1, to_gid) != SQLITE_OK ||
      sqlite3_bind_int64(st, 2, now_ms) != SQLITE_OK) {
    fl_store_stmt_done(st);
    return fl_store_db_fail(s, NULL, "binding the count");
  }
  int rc = fl_count_stmt(s, st, "counting held messages", n);
  if (rc == 0 && *n == 0)
    fl_store_empty_note(s, to_gid);
  return rc;
}

int fl_store_is_held(fl_store *s, const char *to_gid, const char *msg_id, int *held) {
  if (!held)
    return FL_EINVAL;
  *held = 0;
  if (!s || !to_gid || !msg_id)
    return FL_EINVAL;
  sqlite3_stmt *st = s->st[FL_ST_IS_HELD];
  if (fl_store_bind_text(st, 1, to_gid) != SQLITE_OK ||
      fl_store_bind_text(st, 2, msg_id) != SQLITE_OK) {
    fl_store_stmt_done(st);
    return fl_store_db_fail(s, NULL, "binding the held check");
  }
  size_t n = 0;
  int rc = fl_count_stmt(s, st, "checking a held message", &n);
  *held = n > 0;
  return rc;
}

int fl_store_total(fl_store *s, size_t *n) {
  if (!n)
    return FL_EINVAL;
  *n = 0;
  if (!s)
    return FL_EINVAL;
  return fl_count_stmt(s, s->st[FL_ST_TOTAL], "counting all held messages", n);
}

int fl_store_expire(fl_store *s, int64_t now_ms, size_t *dropped) {
  if (dropped)
    *dropped = 0;
  if (!s)
    return FL_EINVAL;
  sqlite3_stmt *exp = s->st[FL_ST_EXPIRE];
  size_t gone = 0;
  int rc = fl_store_begin(s, NULL);
  if (rc)
    return rc;
  if (sqlite3_bind_int64(exp, 1, now_ms) != SQLITE_OK) {
    rc = fl_store_db_fail(s, NULL, "binding the expiry");
    goto fail;
  }
  if ((rc = fl_store_step(s, exp, NULL, "deleting expired messages")) < 0)
    goto fail;
  gone = (size_t)sqlite3_changes(s->db);
  fl_store_stmt_done(exp);
  if ((rc = fl_store_commit(s, NULL)))
    return rc;
  if (dropped)
    *dropped = gone;
  return fl_store_trim_seen(s, now_ms);

fail:
  fl_store_stmt_done(exp);
  fl_store_rollback(s, NULL);
  return rc;
}

long long fl_store_seen_until(long long ts_ms, long long expires_ms) {
  long long until = ts_ms + FL_ENVELOPE_MAX_LIFE_MS;
  return expires_ms > 0 && expires_ms < until ? expires_ms : until;
}

long long fl_store_seen_horizon(const fl_store *s) { return s ? s->seen_horizon : 0; }

void fl_store_set_max_seen(fl_store *s, size_t n) {
  if (s)
    s->max_seen = n < FL_MIN_SEEN ? FL_MIN_SEEN : n > FL_MAX_MAX_SEEN ? FL_MAX_MAX_SEEN : n;
}

/* Deletes the keys (not held) whose expiry is at or before cut. */
static int fl_seen_drop(fl_store *s, long long cut, const char *what) {
  sqlite3_stmt *trim = s->st[FL_ST_TRIM_SEEN];
  int rc = sqlite3_bind_int64(trim, 1, cut) == SQLITE_OK ? fl_store_step(s, trim, NULL, what)
                                                         : fl_store_db_fail(s, NULL, what);
  fl_store_stmt_done(trim);
  return rc < 0 ? rc : 0;
}

int fl_store_trim_seen(fl_store *s, long long now_ms) {
  if (!s)
    return FL_EINVAL;
  /* The journal's keys first, so the bound counts them. */
  int rc = fl_seenlog_fold(s);
  if (rc)
    return rc;
  s->seen_added = 0;
  sqlite3_stmt *cut = s->st[FL_ST_SEEN_CUT];
  sqlite3_stmt *hor = s->st[FL_ST_HORIZON_PUT];
  rc = fl_store_begin(s, NULL);
  if (rc)
    return rc;
  /* By time: a key whose envelope has expired guards nothing. */
  if ((rc = fl_seen_drop(s, now_ms, "trimming expired keys from the seen-set")))
    goto fail;
  /* By count: the keys that expire first go, and the horizon moves up to
   * the last of them. */
  if (sqlite3_bind_int64(cut, 1, (sqlite3_int64)s->max_seen) != SQLITE_OK) {
    rc = fl_store_db_fail(s, NULL, "binding the seen-set's bound");
    goto fail;
  }
  if ((rc = fl_store_step(s, cut, NULL, "finding the seen-set's cut")) < 0)
    goto fail;
  long long horizon = rc == 1 ? sqlite3_column_int64(cut, 0) : 0;
  fl_store_stmt_done(cut);
  rc = 0;
  if (horizon > s->seen_horizon) {
    if ((rc = fl_seen_drop(s, horizon, "trimming the seen-set to its bound")))
      goto fail;
    if (sqlite3_bind_int64(hor, 1, horizon) != SQLITE_OK ||
        fl_store_step(s, hor, NULL, "storing the seen-set's horizon") < 0) {
      rc = fl_store_db_fail(s, NULL, "storing the seen-set's horizon");
      goto fail;
    }
    fl_store_stmt_done(hor);
  }
  if ((rc = fl_store_commit(s, NULL)))
    return rc;
  if (horizon > s->seen_horizon) {
    char at[FL_TS_LEN];
    fl_rfc3339(horizon, at);
    fl_warn(NULL,
            "store: the seen-set reached its bound of %zu msgIds (store.maxSeen); it now refuses "
            "envelopes that expire at or before %s (the oldest it still remembers)",
            s->max_seen, at);
    s->seen_horizon = horizon;
  }
  /* Fingerprints of trimmed keys stay in the set (a check of one asks the
   * table); once they could be half of it, the set is made again. */
  if (s->idx_n > 2 * s->max_seen && fl_seenidx_load(s) != 0)
    fl_warn(NULL, "store: the seen-set's fingerprints could not be read again; dedup asks the "
                  "database for every message now");
  return 0;

fail:
  fl_store_stmt_done(cut);
  fl_store_stmt_done(hor);
  fl_store_rollback(s, NULL);
  return rc;
}

/* A flood must not wait for the sweeper: past a tenth of the bound in new
 * keys, trim now, outside any batch (a failure is logged; the sweeper tries
 * again). */
void fl_store_seen_trim_due(fl_store *s) {
  if (!s->batch && s->seen_added > s->max_seen / 10)
    fl_store_trim_seen(s, fl_now_ms());
}
