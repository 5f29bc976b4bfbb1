/* inbound.h — the receive checks of a broker delivery from one of our
 * entities' inboxes.
 *
 * Each delivery runs the checks in the documented order (version, signature
 * under the pinned key of its host — or, pair-sealed, a seal that opens
 * under the pair key of that host and this one —, `from` lives on that
 * host, `to` matches the routing key, not expired, not seen); one that fails is dead-lettered
 * with its reason and counted, one that passes is handed to the core
 * (fl_router_accept, then fl_router_wake). Settling a delivery (ack, hold until drained,
 * reject) and parking one whose sender is not announced yet are done by the
 * caller through fl_inbound_ops, so this file calls no other cross-host code.
 *
 * Threading: loop thread only. Nothing here blocks. */
#ifndef FL_INBOUND_H
#define FL_INBOUND_H

#include <stddef.h>
#include <stdint.h>

#include "gateway/broker/broker.h"
#include "gateway/gw.h"

typedef struct fl_inbound fl_inbound;

/* How a delivery is settled; all on the loop thread, every member set. */
typedef struct fl_inbound_ops {
  /* Done with tag: ack it (now, or after the current burst's commit). */
  void (*ack)(void *ctx, uint64_t tag);
  /* tag carried msg_id, now held for to_gid: ack it once drained. */
  void (*hold)(void *ctx, const char *to_gid, const char *msg_id, uint64_t tag);
  /* Settle tag negatively: requeue 0 dead-letters it, 1 gives it back. */
  void (*reject)(void *ctx, uint64_t tag, int requeue);
  /* d's sender has no presence yet: keep d (copied) until it comes. 0 when
   * kept; a negative code when it cannot be (then it is dead-lettered). */
  int (*park)(void *ctx, const fl_broker_delivery *d);
  /* d could not be made durable (why: the store failed, e.g. the disk is
   * full): give it back to its queue, in order with what followed it. */
  void (*requeue)(void *ctx, const fl_broker_delivery *d, const char *why);
} fl_inbound_ops;

/* New receive path for gw; ops is borrowed for its life, ctx is passed to
 * every op. 0 or FL_ENOMEM. Free with fl_inbound_free (NULL-safe, sets NULL). */
int fl_inbound_new(fl_gw *gw, const fl_inbound_ops *ops, void *ctx, fl_inbound **out);
void fl_inbound_free(fl_inbound **in);

/* Runs d (lent for the call) through the checks and settles it. */
void fl_inbound_receive(fl_inbound *in, const fl_broker_delivery *d);
/* Dead-letters d: counts it (as remote_dead_lettered and as counter, an
 * fl_counter, or FL_C_COUNT for none), logs why, and rejects it. */
void fl_inbound_dead_letter(fl_inbound *in, const fl_broker_delivery *d, int counter,
                            const char *why);
/* The first checks of any delivery (an inbox's, a control message, a
 * coordinator mailbox's): its origin (fl_inbound_verify_origin), then its
 * body opened under the sealing policy (wire.h's fl_wire_open). A delivery
 * in the pair-sealed form (no signature) is taken only where pair_ok is 1
 * (messages to one entity and control messages; coordinator mail must be
 * signed), and then opening its seal is its origin check. 0 with *pd a
 * copy of d whose body is the clear text (*opened, when not NULL, is the
 * buffer to fl_free after pd is done with); else the failed check's
 * fl_counter with why, or FL_C_COUNT when out of memory (give d back). */
int fl_inbound_open(fl_gw *gw, const fl_broker_delivery *d, int pair_ok, fl_broker_delivery *pd,
                    char **opened, char *why, size_t whylen);

/* What to do with a delivery whose msgId this gateway has already seen. */
enum fl_inbound_dup {
  FL_DUP_REHOLD, /* still held and not acked: the same delivery again; keep the new tag */
  FL_DUP_ACK,    /* handled before and flagged redelivered: an ack that was lost; ack it */
  FL_DUP_REJECT  /* a fresh copy of a seen msgId: a replay; dead-letter it */
};

/* The rule, from whether the message is still held for its recipient and
 * whether the broker flagged the delivery as redelivered. A broker only
 * sets that flag on a message it handed out before, to us (we never ack or
 * reject a replay silently: it arrives unflagged the first time). */
enum fl_inbound_dup fl_inbound_dup_rule(int held, int redelivered);

/* The first checks, common to messages and presence: a version this fleetd
 * understands, then a signature that verifies under the pinned key of the
 * envelope's host (our own key for our own host). 0, or the fl_counter of
 * the failed check with why (whylen bytes) saying what failed; for a host
 * that is not pinned, it names the host in the fleetctl command to pin it. */
int fl_inbound_verify_origin(fl_gw *gw, const fl_broker_delivery *d, char *why, size_t whylen);
/* 1 when the n bytes at s are UTF-8 without NUL (a body that can become a
 * JSON string), else 0. */
int fl_inbound_utf8_ok(const char *s, size_t n);

#endif
