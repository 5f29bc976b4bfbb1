/* broker_acks.h — which of one channel's deliveries are settled, so that a
 * burst of acks can go to the broker as one basic.ack with `multiple`.
 *
 * A basic.ack with `multiple` settles every delivery of its channel up to
 * its tag, so it may be sent only up to a tag below which every delivery is
 * really done (acked or rejected by its owner). An fl_broker_acks keeps that
 * tag: lo, the lowest delivery tag not yet settled, and which tags above it
 * are settled already (a window of FL_BROKER_ACKS_WINDOW tags). The broker
 * numbers a channel's deliveries 1, 2, 3, ... from its open, so every tag
 * below the highest delivered one was delivered.
 *
 * Nothing here delays an ack: the broker thread marks a burst's settles,
 * then sends, at once, one multiple ack for those below lo, naming the
 * highest of them (a delivery the broker still holds: a multiple ack naming
 * a tag acked before is an unknown delivery tag, and the broker closes the
 * channel), and a plain ack for each above it. A settle beyond the window (one delivery
 * held while thousands after it were settled) cannot be remembered; the
 * channel then stops coalescing until it is opened again, and every ack
 * goes one by one, as before. Pure; broker thread only. */
#ifndef FL_BROKER_ACKS_H
#define FL_BROKER_ACKS_H

#include <stdint.h>

/* Tags tracked above lo (a multiple of 64). */
#define FL_BROKER_ACKS_WINDOW 4096

typedef struct fl_broker_acks {
  uint64_t lo;    /* every tag below lo is settled */
  uint64_t *bits; /* settled flags, by tag % FL_BROKER_ACKS_WINDOW; NULL until needed */
  int lost;       /* a settle could not be remembered: no coalescing any more */
} fl_broker_acks;

/* Starts over for a newly opened channel (its first tag is 1). */
void fl_broker_acks_reset(fl_broker_acks *a);

/* Frees what a holds; a must be reset before it is used again. */
void fl_broker_acks_free(fl_broker_acks *a);

/* Records that delivery tag was settled. Returns 0 when it is remembered
 * (lo may have moved past it), 1 when it was settled before (a tag below
 * lo: a duplicate, which must not go to the broker again), or -1 when it
 * cannot be remembered (out of memory, beyond the window, or a lost
 * tracker): its ack must go on its own. */
int fl_broker_acks_settle(fl_broker_acks *a, uint64_t tag);

/* 1 if tag is below lo (every tag up to it is settled), else 0. */
static inline int fl_broker_acks_covered(const fl_broker_acks *a, uint64_t tag) {
  return tag < a->lo;
}

#endif
