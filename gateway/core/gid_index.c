/* gid_index.c — the roster's index by gid (see gid_index.h): linear
 * probing in a table kept at most half full, FNV-1a over the key
 * (lowercased unless the index is exact). */
#include "gateway/core/gid_index.h"

#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "common/alloc.h"
#include "common/error.h"

static uint64_t gid_hash(const char *s, int exact) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (!exact && c >= 'A' && c <= 'Z')
      c = (unsigned char)(c - 'A' + 'a');
    h = (h ^ c) * 1099511628211ull;
  }
  return h;
}

/* The slot holding key, or the empty slot where it would go. */
static fl_gid_slot *gid_find(fl_gid_slot *slots, size_t cap, const char *key, int exact) {
  size_t i = (size_t)gid_hash(key, exact) & (cap - 1);
  while (slots[i].key && (exact ? strcmp(slots[i].key, key) : strcasecmp(slots[i].key, key)) != 0)
    i = (i + 1) & (cap - 1);
  return &slots[i];
}

static int gid_grow(fl_gid_index *ix) {
  size_t cap = ix->cap ? 2 * ix->cap : 64;
  fl_gid_slot *slots = fl_calloc(cap, sizeof *slots);
  if (!slots)
    return FL_ENOMEM;
  for (size_t i = 0; i < ix->cap; i++)
    if (ix->slots[i].key)
      *gid_find(slots, cap, ix->slots[i].key, ix->exact) = ix->slots[i];
  fl_free(ix->slots);
  ix->slots = slots;
  ix->cap = cap;
  return 0;
}

int fl_gid_index_put(fl_gid_index *ix, const char *key, void *value) {
  if (!ix || !key)
    return FL_EINVAL;
  if (2 * (ix->n + 1) > ix->cap && gid_grow(ix) != 0)
    return FL_ENOMEM;
  fl_gid_slot *s = gid_find(ix->slots, ix->cap, key, ix->exact);
  if (!s->key)
    ix->n++;
  s->key = key;
  s->value = value;
  return 0;
}

void *fl_gid_index_get(const fl_gid_index *ix, const char *key) {
  if (!ix || !key || !ix->n)
    return NULL;
  return gid_find(ix->slots, ix->cap, key, ix->exact)->value;
}

int fl_gid_index_del(fl_gid_index *ix, const char *key) {
  if (!ix || !key || !ix->n)
    return 0;
  size_t mask = ix->cap - 1;
  fl_gid_slot *s = gid_find(ix->slots, ix->cap, key, ix->exact);
  if (!s->key)
    return 0;
  /* Backward-shift deletion: every entry of the cluster after the hole
   * that may move into it does, so no probe ever stops early at it. */
  size_t hole = (size_t)(s - ix->slots), i = hole;
  for (;;) {
    i = (i + 1) & mask;
    if (!ix->slots[i].key)
      break;
    size_t home = (size_t)gid_hash(ix->slots[i].key, ix->exact) & mask;
    /* The entry at i stays when its home lies cyclically in (hole, i]. */
    if (hole <= i ? (hole < home && home <= i) : (hole < home || home <= i))
      continue;
    ix->slots[hole] = ix->slots[i];
    hole = i;
  }
  ix->slots[hole].key = NULL;
  ix->slots[hole].value = NULL;
  ix->n--;
  return 1;
}

void fl_gid_index_free(fl_gid_index *ix) {
  if (!ix)
    return;
  int exact = ix->exact;
  fl_free(ix->slots);
  memset(ix, 0, sizeof *ix);
  ix->exact = exact;
}
