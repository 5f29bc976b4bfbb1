/* store_seenlog.c — the seen journal: the msgIds of handed messages,
 * recorded with one append instead of a write to the database.
 *
 * A message handed to a waiting call is never held, so all the store keeps
 * of it is its key in the seen-set, and that key must be durable before the
 * call has the message (a redelivery after a crash is then refused). It
 * must not be durable much before, either: a crash between the two leaves
 * a key whose message never reached its caller, and its redelivery is then
 * taken for one already drained (acked, so lost). So a burst's keys wait in
 * memory and go to the file together at its end (fl_seenlog_flush), after
 * the store's commit and just before the burst's calls are answered. Written
 * into SQLite, that is a write transaction per burst: its locks, two b-tree
 * pages and a WAL commit, all cold when calls come one at a time. Here it is
 * one write(2) of the burst's lines to `holds.db-seen`, as durable as a commit at
 * synchronous=NORMAL (it survives fleetd's crash, not the machine's), and
 * the key is kept in memory until it is folded into the seen table.
 *
 * The journal holds at most FL_SEENLOG_CAP keys. They are folded (inserted
 * into the seen table in one transaction, then the file emptied) once
 * FL_SEENLOG_FOLD_AT wait at the end of a batch, before the seen-set is
 * trimmed, when the store switches to synchronous=FULL (which wants every
 * key fsynced with its commit, so the journal is not used then) and when it
 * closes. A journal left by a crash is folded when the store opens; a torn
 * last line (the machine stopped mid-write) or any line not of our form is
 * skipped and counted in the log line.
 *
 * Line format: "<msgId> <to gid> <at ms> <until ms>\n", the four columns of
 * a seen row. The dedup check before an append asks the seen table only
 * when the key's fingerprint is there (store_seenidx.c).
 *
 * Loop thread only, as the rest of the store. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/log.h"
#include "common/time.h"
#include "gateway/store/store_internal.h"

/* A line: two ids, two numbers of at most 20 digits, three spaces, '\n'. */
#define FL_SEENLOG_LINE_MAX (2 * FL_ID_LEN + 2 * 21 + 4)

struct fl_seenlog_key {
  char msg_id[FL_ID_LEN];
  char to_gid[FL_ID_LEN];
  long long at_ms, until_ms;
};

/* Inserts one key into the seen table (a transaction is open). */
static int fl_seenlog_insert(fl_store *s, const struct fl_seenlog_key *k) {
  sqlite3_stmt *st = s->st[FL_ST_INSERT_SEEN_NEW];
  int rc = fl_store_bind_seen_row(st, k->msg_id, k->to_gid, k->at_ms, k->until_ms) != 0
               ? fl_store_db_fail(s, NULL, "binding a journalled seen entry")
               : fl_store_step(s, st, NULL, "folding the seen journal");
  fl_store_stmt_done(st);
  if (rc < 0)
    return rc;
  fl_seenidx_add(s, k->msg_id, k->to_gid);
  return 0;
}

/* Parses one line (without its '\n') into k. Returns 0, or -1 when it is
 * not a line this file writes. */
static int fl_seenlog_parse(const char *line, size_t len, struct fl_seenlog_key *k) {
  char buf[FL_SEENLOG_LINE_MAX + 1];
  if (len == 0 || len >= sizeof buf)
    return -1;
  memcpy(buf, line, len);
  buf[len] = '\0';
  char *save = NULL;
  char *f[4];
  for (int i = 0; i < 4; i++) {
    f[i] = strtok_r(i ? NULL : buf, " ", &save);
    if (!f[i])
      return -1;
  }
  if (strtok_r(NULL, " ", &save) || strlen(f[0]) >= FL_ID_LEN || strlen(f[1]) >= FL_ID_LEN)
    return -1;
  char *end;
  errno = 0;
  k->at_ms = strtoll(f[2], &end, 10);
  if (errno || *end || end == f[2])
    return -1;
  k->until_ms = strtoll(f[3], &end, 10);
  if (errno || *end || end == f[3])
    return -1;
  fl_copy(k->msg_id, sizeof k->msg_id, f[0]);
  fl_copy(k->to_gid, sizeof k->to_gid, f[1]);
  return 0;
}

/* Folds a journal a crash left behind (fd, read from its start) into the
 * seen table. Returns 0 or FL_ESTORE / FL_ENOMEM. */
static int fl_seenlog_recover(fl_store *s, int fd) {
  size_t cap = 64 * 1024, n = 0, folded = 0, skipped = 0;
  char *buf = fl_malloc(cap);
  if (!buf)
    return FL_ENOMEM;
  int rc = 0, began = 0;
  for (;;) {
    if (n == cap) { /* a line longer than any we write: drop what we have */
      skipped++;
      n = 0;
    }
    ssize_t got = read(fd, buf + n, cap - n);
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0) {
      fl_error(NULL, "store: cannot read the seen journal %s: %s", s->jpath, strerror(errno));
      rc = FL_ESTORE;
      break;
    }
    if (got == 0) {
      if (n)
        skipped++; /* a torn last line */
      break;
    }
    n += (size_t)got;
    size_t start = 0;
    for (char *nl; (nl = memchr(buf + start, '\n', n - start)) != NULL;) {
      struct fl_seenlog_key k;
      size_t len = (size_t)(nl - (buf + start));
      if (fl_seenlog_parse(buf + start, len, &k) != 0) {
        skipped++;
      } else {
        if (!began && (rc = fl_store_begin(s, NULL)) != 0)
          break;
        began = 1;
        if ((rc = fl_seenlog_insert(s, &k)) != 0)
          break;
        folded++;
      }
      start += len + 1;
    }
    if (rc)
      break;
    memmove(buf, buf + start, n - start);
    n -= start;
  }
  fl_free(buf);
  if (began)
    rc = rc ? (fl_store_rollback(s, NULL), rc) : fl_store_commit(s, NULL);
  if (rc == 0 && (folded || skipped))
    fl_info(NULL, "store: folded %zu msgIds from the seen journal left by the last run%s", folded,
            skipped ? " (skipped lines not of its form, a torn last one included)" : "");
  s->seen_added += folded;
  return rc;
}

int fl_seenlog_open(fl_store *s) {
  s->jfd = -1;
  size_t plen = strlen(s->path);
  s->jpath = fl_malloc(plen + sizeof "-seen");
  s->jkeys = fl_calloc(FL_SEENLOG_CAP, sizeof *s->jkeys);
  if (!s->jpath || !s->jkeys)
    return FL_ENOMEM;
  memcpy(s->jpath, s->path, plen);
  memcpy(s->jpath + plen, "-seen", sizeof "-seen");
  int fd = open(s->jpath, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    fl_error(NULL, "store: cannot open the seen journal %s: %s", s->jpath, strerror(errno));
    return FL_ESTORE;
  }
  int rc = fl_seenlog_recover(s, fd);
  if (rc == 0 && ftruncate(fd, 0) != 0) {
    fl_error(NULL, "store: cannot empty the seen journal %s: %s", s->jpath, strerror(errno));
    rc = FL_ESTORE;
  }
  close(fd);
  if (rc)
    return rc;
  s->jfd = open(s->jpath, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
  if (s->jfd < 0) {
    fl_error(NULL, "store: cannot open the seen journal %s: %s", s->jpath, strerror(errno));
    return FL_ESTORE;
  }
  s->jsize = 0;
  return 0;
}

int fl_seenlog_has(const fl_store *s, const char *msg_id, const char *to_gid) {
  for (size_t i = 0; i < s->jn; i++)
    if (strcmp(s->jkeys[i].msg_id, msg_id) == 0 && strcmp(s->jkeys[i].to_gid, to_gid) == 0)
      return 1;
  return 0;
}

int fl_seenlog_usable(const fl_store *s) {
  return s->jfd >= 0 && !s->sync_full && s->jn < FL_SEENLOG_CAP;
}

void fl_seenlog_add(fl_store *s, const fl_msg *m) {
  struct fl_seenlog_key *k = &s->jkeys[s->jn++];
  fl_copy(k->msg_id, sizeof k->msg_id, m->msg_id);
  fl_copy(k->to_gid, sizeof k->to_gid, m->to_gid);
  k->at_ms = fl_now_ms();
  k->until_ms = fl_store_seen_until(m->ts_ms, m->expires_ms);
}

/* Writes buf[0..n) at the journal's end. Returns 0, or the errno (a short
 * write to a file: ENOSPC), with nothing of it left in the file. */
static int fl_seenlog_write(fl_store *s, const char *buf, size_t n) {
  ssize_t w;
  do
    w = write(s->jfd, buf, n);
  while (w < 0 && errno == EINTR);
  if (w >= 0 && (size_t)w == n) {
    s->jsize += n;
    return 0;
  }
  int err = w < 0 ? errno : ENOSPC;
  /* Nothing half-written may stay: the next line would be glued to it. */
  if (w > 0 && ftruncate(s->jfd, (off_t)s->jsize) != 0)
    fl_warn(NULL, "store: cannot cut a short write off the seen journal: %s", strerror(errno));
  return err;
}

void fl_seenlog_flush(fl_store *s) {
  if (s->jwritten >= s->jn)
    return;
  char buf[16384];
  size_t n = 0;
  int err = s->jfd < 0 ? EBADF : 0;
  for (size_t i = s->jwritten; i < s->jn && !err; i++) {
    if (sizeof buf - n <= FL_SEENLOG_LINE_MAX) { /* full: out with the lines so far */
      if ((err = fl_seenlog_write(s, buf, n)) != 0)
        break;
      s->jwritten = i;
      n = 0;
    }
    const struct fl_seenlog_key *k = &s->jkeys[i];
    /* The ids fit FL_ID_LEN and the numbers 20 digits: under FL_SEENLOG_LINE_MAX. */
    n += (size_t)snprintf(buf + n, sizeof buf - n, "%s %s %lld %lld\n", k->msg_id, k->to_gid,
                          k->at_ms, k->until_ms);
  }
  if (!err && (err = fl_seenlog_write(s, buf, n)) == 0) {
    s->jwritten = s->jn;
    return;
  }
  size_t unwritten = s->jn - s->jwritten;
  if (fl_seenlog_fold(s) == 0)
    fl_warn(NULL,
            "store: cannot write %zu msgIds to the seen journal %s (%s); they went to the "
            "database",
            unwritten, s->jpath, strerror(err));
  else
    fl_error(NULL,
             "store: cannot write %zu msgIds to the seen journal %s (%s) nor to the database: "
             "their messages are refused again only until fleetd restarts",
             unwritten, s->jpath, strerror(err));
}

/* The journal's file lost its name (deleted, or another file renamed over
 * it): what it holds is folded already, so start a new one at the path. */
static void fl_seenlog_renew(fl_store *s) {
  struct stat st;
  if (fstat(s->jfd, &st) == 0 && st.st_nlink > 0)
    return;
  int fd = open(s->jpath, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    fl_warn(NULL,
            "store: the seen journal %s was removed and cannot be made again (%s); msgIds "
            "go to the database instead",
            s->jpath, strerror(errno));
    close(s->jfd);
    s->jfd = -1;
    return;
  }
  fl_warn(NULL,
          "store: the seen journal %s was removed while fleetd had it open; started a new "
          "one",
          s->jpath);
  close(s->jfd);
  s->jfd = fd;
  s->jsize = 0;
  if (ftruncate(fd, 0) != 0)
    fl_warn(NULL, "store: cannot empty the new seen journal: %s", strerror(errno));
}

int fl_seenlog_fold(fl_store *s) {
  if (!s->jn || s->batch)
    return 0;
  int rc = fl_store_begin(s, NULL);
  for (size_t i = 0; rc == 0 && i < s->jn; i++)
    rc = fl_seenlog_insert(s, &s->jkeys[i]);
  if (rc) {
    fl_store_rollback(s, NULL);
    return rc;
  }
  if ((rc = fl_store_commit(s, NULL)) != 0)
    return rc;
  s->jn = s->jwritten = 0;
  if (s->jfd < 0)
    return 0;
  /* Folded: the keys are in the table now. A journal that cannot be
   * emptied is folded again at the next open, which changes nothing. */
  if (ftruncate(s->jfd, 0) == 0)
    s->jsize = 0;
  else
    fl_warn(NULL, "store: cannot empty the seen journal %s: %s", s->jpath, strerror(errno));
  fl_seenlog_renew(s);
  return 0;
}

void fl_seenlog_close(fl_store *s) {
  if (s->jkeys && s->db && fl_seenlog_fold(s) != 0)
    fl_warn(NULL, "store: the seen journal %s is left to fold at the next start", s->jpath);
  if (s->jfd >= 0)
    close(s->jfd);
  s->jfd = -1;
  fl_free(s->jkeys);
  s->jkeys = NULL;
  fl_free(s->jpath);
  s->jpath = NULL;
}
