/* store_empty.c — the recipients the store knows to hold nothing, so
 * fl_store_count answers 0 for them without a SQLite read transaction.
 *
 * After each answered call the gateway counts what the caller still holds,
 * to re-arm its nudge (core/wait.c); on the hot path (a send answered by its
 * reply, a long poll answered by a handed message) that is nearly always
 * nothing, and the count was one read transaction and its file locks on the
 * loop thread. A count of 0 is remembered with the store's held generation
 * (store_internal.h). A put for the recipient (fl_store_admit, the one
 * insert into held) drops its entry, and every rollback, of a savepoint or
 * of a transaction, explicit or SQLite's own after an error (it may bring
 * back rows it had taken), moves the generation on and so voids them all.
 * Expiry only ever lowers a count. So while the generation is the same, the
 * recipient still holds nothing. The store is the only writer of its file
 * (fleetd holds fleetd.lock for its state dir). */
#include <string.h>

#include "gateway/store/store_internal.h"

int fl_store_empty_known(const fl_store *s, const char *to_gid) {
  for (size_t i = 0; i < FL_STORE_EMPTY_CACHE; i++)
    if (s->empty[i].gen == s->held_gen && strcmp(s->empty[i].gid, to_gid) == 0)
      return 1;
  return 0;
}

void fl_store_empty_note(fl_store *s, const char *to_gid) {
  size_t n = strlen(to_gid);
  if (n >= FL_ID_LEN || fl_store_empty_known(s, to_gid))
    return;
  /* A free or stale entry first, else the oldest. */
  size_t at = s->empty_next;
  for (size_t i = 0; i < FL_STORE_EMPTY_CACHE; i++) {
    if (s->empty[i].gen != s->held_gen) {
      at = i;
      break;
    }
  }
  memcpy(s->empty[at].gid, to_gid, n + 1);
  s->empty[at].gen = s->held_gen;
  if (at == s->empty_next)
    s->empty_next = (at + 1) % FL_STORE_EMPTY_CACHE;
}

void fl_store_empty_forget(fl_store *s, const char *to_gid) {
  for (size_t i = 0; i < FL_STORE_EMPTY_CACHE; i++)
    if (s->empty[i].gen == s->held_gen && strcmp(s->empty[i].gid, to_gid) == 0)
      s->empty[i].gen = 0;
}
