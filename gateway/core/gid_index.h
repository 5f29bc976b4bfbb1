/* gid_index.h — the roster's index by gid: finds an entity among thousands
 * in constant time, the way a presence beat, a delivery or a call names it.
 *
 * An open-addressing hash table of borrowed (key, value) pairs: the key is
 * the entity's own gid string, which must live as long as the index (the
 * roster removes an entity from the index before it frees it). Gids
 * compare without regard to ASCII case, as fl_entity_by_gid always did.
 * An index with `exact` set compares its keys byte for byte instead (the
 * fabric's unacked deliveries, keyed by msgId and recipient as the store
 * keys them). Pure, one thread. */
#ifndef FL_GID_INDEX_H
#define FL_GID_INDEX_H

#include <stddef.h>

typedef struct fl_gid_slot {
  const char *key; /* borrowed; NULL = empty */
  void *value;
} fl_gid_slot;

typedef struct fl_gid_index {
  fl_gid_slot *slots; /* cap of them, a power of two (or NULL when empty) */
  size_t n, cap;
  int exact; /* set before the first put: keys compare byte for byte */
} fl_gid_index;

/* Adds key -> value (key borrowed). A key already present (in any case,
 * or byte for byte in an exact index) has its value replaced. Returns 0,
 * FL_EINVAL (a NULL argument) or FL_ENOMEM (the index is as it was). */
int fl_gid_index_put(fl_gid_index *ix, const char *key, void *value);

/* The value of key (in any case, or exactly), or NULL. */
void *fl_gid_index_get(const fl_gid_index *ix, const char *key);

/* Removes key (in any case, or exactly): 1 if it was there, else 0. */
int fl_gid_index_del(fl_gid_index *ix, const char *key);

/* Frees the table (not the keys or values) and empties ix; ix keeps its
 * `exact`. */
void fl_gid_index_free(fl_gid_index *ix);

#endif
