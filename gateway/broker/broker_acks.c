/* broker_acks.c — one channel's settled deliveries, for `multiple` acks
 * (see broker_acks.h). */
#include "gateway/broker/broker_acks.h"

#include <string.h>

#include "common/alloc.h"

#define WORDS (FL_BROKER_ACKS_WINDOW / 64)

void fl_broker_acks_reset(fl_broker_acks *a) {
  a->lo = 1;
  a->lost = 0;
  if (a->bits)
    memset(a->bits, 0, WORDS * sizeof(*a->bits));
}

void fl_broker_acks_free(fl_broker_acks *a) {
  fl_free(a->bits);
  a->bits = NULL;
}

static int bit_get(const fl_broker_acks *a, uint64_t tag) {
  uint64_t i = tag % FL_BROKER_ACKS_WINDOW;
  return (int)((a->bits[i / 64] >> (i % 64)) & 1u);
}

static void bit_set(fl_broker_acks *a, uint64_t tag, int on) {
  uint64_t i = tag % FL_BROKER_ACKS_WINDOW;
  uint64_t m = (uint64_t)1 << (i % 64);
  if (on)
    a->bits[i / 64] |= m;
  else
    a->bits[i / 64] &= ~m;
}

int fl_broker_acks_settle(fl_broker_acks *a, uint64_t tag) {
  if (tag < a->lo)
    return 1;
  if (a->lost || tag - a->lo >= FL_BROKER_ACKS_WINDOW)
    goto lost;
  if (!a->bits && !(a->bits = fl_calloc(WORDS, sizeof(*a->bits))))
    goto lost;
  bit_set(a, tag, 1);
  while (bit_get(a, a->lo)) {
    bit_set(a, a->lo, 0);
    a->lo++;
  }
  return 0;
lost:
  /* lo can never pass this tag now, and a tag below lo must stay one that
   * was settled: stop here for good (until the channel is reset). */
  a->lost = 1;
  return -1;
}
