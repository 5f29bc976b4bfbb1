/* fabric_internal.h — what the fabric's two files share, and nothing else
 * includes.
 *
 * The fabric is one fl_fabric split by concept:
 *   fabric.c         the backend the core sees (fl_fabric_ops): publishing to
 *                    other hosts, dispatching what the link reports, status,
 *                    start, stop and free;
 *   fabric_settle.c  settling the deliveries the link hands in: acks held
 *                    until a burst's store commit, deliveries held until
 *                    their message is drained, and giving an inbox channel's
 *                    deliveries back when the store cannot take them.
 *
 * Threading: loop thread only, like everything the link reports. */
#ifndef FL_FABRIC_INTERNAL_H
#define FL_FABRIC_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "common/limits.h"
#include "gateway/broker/broker.h"
#include "gateway/fabric/control.h"
#include "gateway/fabric/inbound.h"
#include "gateway/fabric/presence.h"
#include "gateway/gw.h"

/* Channel incarnations (a delivery tag's upper 32 bits) whose deliveries
 * are being given back: deliveries of theirs still on their way are
 * dropped unsettled. An entry matters only until the link reports its
 * inbox closed (FL_ESTORE or FL_ECANCELLED: no delivery of it follows), and
 * is then cleared; a ring bounds the ones never cleared. */
#define FL_REQUEUED_RING 256

typedef struct fl_requeued {
  uint32_t inc; /* 0: free (channel 0 never carries an inbox) */
  char gid[FL_ID_LEN];
} fl_requeued;

/* An inbox channel incarnation that delivered in the current burst. */
typedef struct fl_burst_chan {
  char gid[FL_ID_LEN];
  uint64_t tag; /* one of its deliveries */
  int failed;   /* one of its deliveries could not be stored: give it back */
  size_t taken; /* its deliveries held or acked in this burst */
} fl_burst_chan;

/* A broker delivery not yet acked: acked when its message is drained. */
typedef struct fl_unacked {
  struct fl_unacked *next, *prev;
  uint64_t tag;
  /* msg_id '\n' to_gid, its key in unacked_ix; key[id_len] is the '\n', so
   * to_gid is key + id_len + 1. */
  char key[2 * FL_ID_LEN];
  unsigned char id_len;
} fl_unacked;

/* What the link last reported of one local entity's inbox consumer
 * (fabric.c). */
typedef struct fl_consumer fl_consumer;

typedef struct fl_fabric {
  fl_gw *gw;
  fl_broker *broker;
  int up;
  char why[256]; /* why the link is down ("" when up) */
  fl_presence *presence;
  fl_inbound *inbound;
  fl_control *control;
  /* Inbox consumers as reported since the link last came up (at most
   * FL_BROKER_MAX_INBOXES). */
  fl_consumer *consumers;
  size_t nconsumers, consumers_cap;
  /* Settling (fabric_settle.c): */
  /* Every prefetched delivery held for a local client that has not drained
   * it: up to the prefetch of every inbox (100 each by default), so
   * thousands when agents are offline. Found by msgId and recipient through
   * unacked_ix (exact), as each delivery and each drain must be. */
  fl_unacked *unacked;
  fl_gid_index unacked_ix;
  size_t nunacked;
  int in_batch;         /* inside a burst of broker events (one store commit) */
  uint64_t *acks_later; /* acks held until the burst's commit */
  size_t nacks_later, acks_later_cap;
  /* The current burst's inbox channels (fl_fabric_on_batch). */
  fl_burst_chan *burst;
  size_t nburst, burst_cap;
  unsigned long long accepted_before; /* messages_accepted when the burst began */
  fl_requeued requeued[FL_REQUEUED_RING];
  size_t nrequeued;
} fl_fabric;

/* ---- fabric_settle.c ---- */

/* Acks a delivery once what it carried is durable: inside a burst, after the
 * burst's commit (fl_fabric_on_batch), else at once. */
void fl_fabric_ack(fl_fabric *f, uint64_t tag);

/* Whether inbox delivery d goes on to the receive checks: 0 when it was
 * dropped unsettled (its channel is being given back, so the broker
 * requeues it too) or rejected for redelivery (no memory to track it). */
int fl_fabric_admit(fl_fabric *f, const fl_broker_delivery *d);

/* The link's on_batch event: begin (1) opens one store transaction for the
 * burst; end (0) commits it, then sends the acks it held, or gives the
 * burst's inbox deliveries back when the commit failed. */
void fl_fabric_on_batch(void *ctx, int begin);

/* gid's inbox channel is closed (FL_ECANCELLED or FL_ESTORE): nothing of it
 * follows, so its entries in the requeued ring are cleared. */
void fl_fabric_inbox_closed(fl_fabric *f, const char *gid);

/* The core's drained and sweep operations: a held message was drained, or
 * the sweeper dropped it; its delivery is acked. */
void fl_fabric_drained(void *ctx, const char *to_gid, const char *msg_id);
void fl_fabric_sweep(void *ctx);

/* Forgets every unacked delivery (they go back with the connection). */
void fl_fabric_unacked_clear(fl_fabric *f);

/* Frees what settling holds; f itself stays. */
void fl_fabric_settle_free(fl_fabric *f);

/* How the receive checks (inbound.c) settle a delivery; ctx is the fl_fabric. */
extern const fl_inbound_ops fl_fabric_settle_ops;

#endif
