/* store_seenidx.c — the fingerprints of the seen table's keys, so a handed
 * message's dedup check (store_held.c) asks the table only when its key may
 * be there.
 *
 * An open-addressing set of 64-bit hashes of (msgId, recipient), 0 marking
 * an empty slot, kept at most half full. It is loaded from the table when
 * the store opens and added to by every write of a key to the table (a
 * held message's, a handed one's without the journal, the journal's fold),
 * so an absent fingerprint means an absent key. A present one (the key, one
 * trimmed since, or a collision) sends the check to the table, which is
 * always right. Trimmed keys' fingerprints stay until they could be half of
 * the set; then the trim loads it again.
 *
 * The set is dropped, and every check asks the table, when it would grow
 * past FL_SEENIDX_MAX_SLOTS (a `store.maxSeen` in the millions) or memory
 * runs out; the next load after a trim tries again. Loop thread only. */
#include <stdint.h>

#include "common/alloc.h"
#include "common/log.h"
#include "gateway/store/store_internal.h"

#define FL_SEENIDX_FIRST 4096 /* slots; a power of two */
/* 16 MiB of slots: a million keys and more; past it the table answers. */
#define FL_SEENIDX_MAX_SLOTS ((size_t)1 << 21)

static uint64_t fl_seenidx_hash(const char *msg_id, const char *to_gid) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (const char *p = msg_id; *p; p++)
    h = (h ^ (unsigned char)*p) * 1099511628211ull;
  h = (h ^ 0xffu) * 1099511628211ull; /* between the two: "ab"+"c" is not "a"+"bc" */
  for (const char *p = to_gid; *p; p++)
    h = (h ^ (unsigned char)*p) * 1099511628211ull;
  return h ? h : 1;
}

static void fl_seenidx_put(uint64_t *v, size_t cap, uint64_t h) {
  for (size_t i = (size_t)h & (cap - 1);; i = (i + 1) & (cap - 1)) {
    if (v[i] == h)
      return;
    if (v[i] == 0) {
      v[i] = h;
      return;
    }
  }
}

void fl_seenidx_drop(fl_store *s) {
  fl_free(s->idx);
  s->idx = NULL;
  s->idx_cap = s->idx_n = 0;
  s->idx_ok = 0;
}

void fl_seenidx_add(fl_store *s, const char *msg_id, const char *to_gid) {
  if (!s->idx_ok)
    return;
  if (2 * (s->idx_n + 1) > s->idx_cap) {
    size_t cap = s->idx_cap ? 2 * s->idx_cap : FL_SEENIDX_FIRST;
    uint64_t *v = cap <= FL_SEENIDX_MAX_SLOTS ? fl_calloc(cap, sizeof *v) : NULL;
    if (!v) {
      fl_info(NULL, "store: the seen-set's fingerprints %s; its dedup checks ask the database",
              cap <= FL_SEENIDX_MAX_SLOTS ? "found no memory" : "would pass 16 MiB");
      fl_seenidx_drop(s);
      return;
    }
    for (size_t i = 0; i < s->idx_cap; i++)
      if (s->idx[i])
        fl_seenidx_put(v, cap, s->idx[i]);
    fl_free(s->idx);
    s->idx = v;
    s->idx_cap = cap;
  }
  fl_seenidx_put(s->idx, s->idx_cap, fl_seenidx_hash(msg_id, to_gid));
  s->idx_n++; /* counts adds, a repeat included: it only makes the set grow sooner */
}

int fl_seenidx_maybe(const fl_store *s, const char *msg_id, const char *to_gid) {
  if (!s->idx_ok)
    return 1;
  if (!s->idx_cap)
    return 0; /* nothing added yet */
  uint64_t h = fl_seenidx_hash(msg_id, to_gid);
  for (size_t i = (size_t)h & (s->idx_cap - 1);; i = (i + 1) & (s->idx_cap - 1)) {
    if (s->idx[i] == h)
      return 1;
    if (s->idx[i] == 0)
      return 0;
  }
}

int fl_seenidx_load(fl_store *s) {
  fl_seenidx_drop(s);
  s->idx_ok = 1;
  sqlite3_stmt *st = s->st[FL_ST_SEEN_KEYS];
  int rc;
  while ((rc = fl_store_step(s, st, NULL, "reading the seen-set's keys")) == 1 && s->idx_ok)
    fl_seenidx_add(s, (const char *)sqlite3_column_text(st, 0),
                   (const char *)sqlite3_column_text(st, 1));
  fl_store_stmt_done(st);
  if (rc < 0) {
    fl_seenidx_drop(s);
    return rc;
  }
  return 0;
}
