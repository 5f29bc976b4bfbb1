/* fabric_settle.c — settling the broker deliveries the fabric receives.
 *
 * A delivery held for a local client is acked only once the client drained
 * it (or the sweeper dropped it); inside a burst of deliveries acks wait for
 * the burst's one store commit. A burst that cannot be committed (the disk
 * is full) gives its deliveries back: the inbox channels they came on are
 * closed, so the broker requeues them in order, deliveries of those channels
 * still on their way are dropped unsettled (they are requeued too), and the
 * inboxes are consumed again after a backoff, until the store takes them.
 * The receive checks (inbound.c) settle through fl_fabric_settle_ops.
 *
 * Threading: loop thread only. */
#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/log.h"
#include "gateway/core/gw_internal.h"
#include "gateway/fabric/fabric_internal.h"

void fl_fabric_ack(fl_fabric *f, uint64_t tag) {
  if (!f->in_batch) {
    fl_broker_ack(f->broker, tag);
    return;
  }
  if (f->nacks_later == f->acks_later_cap) {
    size_t cap = f->acks_later_cap ? 2 * f->acks_later_cap : 64;
    uint64_t *n = fl_realloc(f->acks_later, cap * sizeof *n);
    if (!n) {
      /* No room to wait: leave it unacked; the broker redelivers it after
       * a reconnect and the store dedups it. */
      fl_warn(NULL, "out of memory holding an ack; the delivery stays unacked");
      return;
    }
    f->acks_later = n;
    f->acks_later_cap = cap;
  }
  f->acks_later[f->nacks_later++] = tag;
}

/* key = msg_id '\n' to_gid (each at most FL_ID_LEN - 1 bytes); returns the
 * length of msg_id in it. */
static size_t fl_unacked_key(char key[2 * FL_ID_LEN], const char *to_gid, const char *msg_id) {
  size_t a = strnlen(msg_id, FL_ID_LEN - 1), b = strnlen(to_gid, FL_ID_LEN - 1);
  memcpy(key, msg_id, a);
  key[a] = '\n';
  memcpy(key + a + 1, to_gid, b);
  key[a + 1 + b] = '\0';
  return a;
}

static fl_unacked *fl_unacked_find(fl_fabric *f, const char *to_gid, const char *msg_id) {
  char key[2 * FL_ID_LEN];
  fl_unacked_key(key, to_gid, msg_id);
  return fl_gid_index_get(&f->unacked_ix, key);
}

static void fl_unacked_add(fl_fabric *f, const char *to_gid, const char *msg_id, uint64_t tag) {
  fl_unacked *u = fl_unacked_find(f, to_gid, msg_id);
  if (u) {
    /* A redelivery of a message still held: the old tag is void. */
    u->tag = tag;
    return;
  }
  u = fl_calloc(1, sizeof *u);
  if (u)
    u->id_len = (unsigned char)fl_unacked_key(u->key, to_gid, msg_id);
  if (!u || fl_gid_index_put(&f->unacked_ix, u->key, u) != 0) {
    /* Cannot remember it: ack now; the message is committed to the store. */
    fl_free(u);
    fl_fabric_ack(f, tag);
    return;
  }
  u->tag = tag;
  u->next = f->unacked;
  if (u->next)
    u->next->prev = u;
  f->unacked = u;
  f->nunacked++;
}

/* Forgets u (no ack). */
static void fl_unacked_drop(fl_fabric *f, fl_unacked *u) {
  fl_gid_index_del(&f->unacked_ix, u->key);
  if (u->prev)
    u->prev->next = u->next;
  else
    f->unacked = u->next;
  if (u->next)
    u->next->prev = u->prev;
  fl_free(u);
  f->nunacked--;
}

void fl_fabric_unacked_clear(fl_fabric *f) {
  while (f->unacked) {
    fl_unacked *n = f->unacked->next;
    fl_free(f->unacked);
    f->unacked = n;
  }
  fl_gid_index_free(&f->unacked_ix);
  f->nunacked = 0;
}

static uint32_t fl_incarnation(uint64_t tag) { return (uint32_t)(tag >> 32); }

static int fl_is_requeued(const fl_fabric *f, uint64_t tag) {
  for (size_t i = 0; i < FL_REQUEUED_RING; i++)
    if (f->requeued[i].inc && f->requeued[i].inc == fl_incarnation(tag))
      return 1;
  return 0;
}

/* The burst entry of the inbox channel that delivered tag, added if new;
 * NULL when out of memory. */
static fl_burst_chan *fl_burst_of(fl_fabric *f, const char *gid, uint64_t tag) {
  for (size_t i = 0; i < f->nburst; i++)
    if (fl_incarnation(f->burst[i].tag) == fl_incarnation(tag))
      return &f->burst[i];
  if (f->nburst == f->burst_cap) {
    size_t cap = f->burst_cap ? 2 * f->burst_cap : 16;
    fl_burst_chan *n = fl_realloc(f->burst, cap * sizeof *n);
    if (!n)
      return NULL;
    f->burst = n;
    f->burst_cap = cap;
  }
  fl_burst_chan *c = &f->burst[f->nburst++];
  memset(c, 0, sizeof *c);
  fl_copy(c->gid, sizeof c->gid, gid);
  c->tag = tag;
  return c;
}

/* From now on deliveries of gid's channel that tag names are dropped. */
static void fl_poison(fl_fabric *f, const char *gid, uint64_t tag) {
  if (fl_is_requeued(f, tag))
    return;
  fl_requeued *r = &f->requeued[f->nrequeued++ % FL_REQUEUED_RING];
  r->inc = fl_incarnation(tag);
  fl_copy(r->gid, sizeof r->gid, gid);
}

/* Gives back every unacked delivery of the inbox channel that tag names:
 * its later deliveries still on their way are dropped from now on, held
 * ones it carried are forgotten (they come again), and the broker thread
 * closes the channel. */
static void fl_requeue_chan(fl_fabric *f, const char *gid, uint64_t tag, const char *why) {
  fl_poison(f, gid, tag);
  for (fl_unacked *u = f->unacked, *next; u; u = next) {
    next = u->next;
    if (fl_incarnation(u->tag) == fl_incarnation(tag))
      fl_unacked_drop(f, u);
  }
  int rc = fl_broker_requeue_inbox(f->broker, gid, tag, why);
  if (rc)
    fl_error(NULL,
             "cannot give the deliveries of inbox %s back: %s; they come again after a "
             "reconnect",
             gid, fl_strerror(rc));
}

int fl_fabric_admit(fl_fabric *f, const fl_broker_delivery *d) {
  if (fl_is_requeued(f, d->tag)) {
    /* Its channel is being closed to give back a delivery before it:
     * the broker requeues this one too, behind that one. */
    fl_debug(d->env->trace_id, "delivery for %s dropped unsettled: its inbox is being requeued",
             d->gid);
    return 0;
  }
  if (f->in_batch && !fl_burst_of(f, d->gid, d->tag)) {
    fl_broker_reject(f->broker, d->tag, 1); /* out of memory: it comes again */
    return 0;
  }
  return 1;
}

void fl_fabric_inbox_closed(fl_fabric *f, const char *gid) {
  for (size_t i = 0; i < FL_REQUEUED_RING; i++)
    if (f->requeued[i].inc && strcmp(f->requeued[i].gid, gid) == 0)
      f->requeued[i].inc = 0;
}

void fl_fabric_on_batch(void *ctx, int begin) {
  fl_fabric *f = ctx;
  fl_gw *gw = f->gw;
  if (begin) {
    f->nburst = 0;
    f->accepted_before = gw->counters[FL_C_MSGS_ACCEPTED];
    f->in_batch = fl_store_batch_begin(gw->store) == 0;
    if (f->in_batch)
      fl_wait_defer_begin(gw);
    return;
  }
  if (!f->in_batch)
    return;
  f->in_batch = 0;
  int rc = fl_store_batch_end(gw->store);
  /* Only now may the calls completed in the burst have their answers. */
  fl_wait_defer_end(gw);
  char why[FL_MAX_ERRMSG];
  if (rc) {
    /* Nothing of the burst is durable: its inbox deliveries go back to
     * their queues, in order, and come again once the store takes them. */
    size_t taken = 0;
    for (size_t i = 0; i < f->nburst; i++)
      taken += f->burst[i].taken;
    fl_gw_count(gw, FL_C_STORE_ERRORS);
    fl_gw_count(gw, FL_C_STORE_BATCH_FAILURES);
    if (rc == FL_EDISKFULL)
      fl_gw_count(gw, FL_C_STORE_DISK_FULL);
    gw->counters[FL_C_DELIVERIES_REQUEUED] += taken;
    /* What the burst admitted is not accepted after all. */
    gw->counters[FL_C_MSGS_ACCEPTED] = f->accepted_before;
    fl_errf(why, sizeof why, "%zu deliveries requeued: %s", taken,
            rc == FL_EDISKFULL ? "disk full" : "the store could not commit them");
    fl_error(NULL,
             "store: a burst of %zu broker deliveries (from %zu inboxes) could not be committed "
             "(%s); %s, in order; they come again once the store takes them",
             taken, f->nburst, fl_strerror(rc), why);
    for (size_t i = 0; i < f->nburst; i++)
      fl_requeue_chan(f, f->burst[i].gid, f->burst[i].tag, why);
    /* Acks of anything else (presence, control, claims: acted on already)
     * still go. */
    for (size_t i = 0; i < f->nacks_later; i++)
      if (!fl_is_requeued(f, f->acks_later[i]))
        fl_broker_ack(f->broker, f->acks_later[i]);
    f->nacks_later = 0;
    f->nburst = 0;
    return;
  }
  for (size_t i = 0; i < f->nacks_later; i++)
    fl_broker_ack(f->broker, f->acks_later[i]);
  f->nacks_later = 0;
  /* Committed, but one delivery could not be stored: what came after it on
   * its channel was dropped, and the acks above went first. */
  for (size_t i = 0; i < f->nburst; i++) {
    if (!f->burst[i].failed)
      continue;
    fl_errf(why, sizeof why, "deliveries requeued: the store could not take one");
    fl_requeue_chan(f, f->burst[i].gid, f->burst[i].tag, why);
  }
  f->nburst = 0;
}

void fl_fabric_drained(void *ctx, const char *to_gid, const char *msg_id) {
  fl_fabric *f = ctx;
  fl_unacked *u = fl_unacked_find(f, to_gid, msg_id);
  if (u) {
    fl_fabric_ack(f, u->tag);
    fl_unacked_drop(f, u);
  }
}

void fl_fabric_sweep(void *ctx) {
  fl_fabric *f = ctx;
  /* Held messages the sweeper dropped (expired) are settled too, or their
   * deliveries would hold prefetch slots until the next reconnect. */
  for (fl_unacked *u = f->unacked, *next; u; u = next) {
    next = u->next;
    char msg_id[FL_ID_LEN];
    memcpy(msg_id, u->key, u->id_len);
    msg_id[u->id_len] = '\0';
    int held = 1;
    if (fl_store_is_held(f->gw->store, u->key + u->id_len + 1, msg_id, &held) == 0 && !held) {
      fl_fabric_ack(f, u->tag);
      fl_unacked_drop(f, u);
    }
  }
}

void fl_fabric_settle_free(fl_fabric *f) {
  fl_free(f->acks_later);
  f->acks_later = NULL;
  fl_free(f->burst);
  f->burst = NULL;
  fl_fabric_unacked_clear(f);
}

/* ---- the receive checks settle through these ---------------------------------- */

/* Counts a delivery of the current burst as taken (held or acked). */
static void fl_burst_took(fl_fabric *f, uint64_t tag) {
  for (size_t i = 0; f->in_batch && i < f->nburst; i++)
    if (fl_incarnation(f->burst[i].tag) == fl_incarnation(tag))
      f->burst[i].taken++;
}

static void fl_in_ack(void *ctx, uint64_t tag) {
  fl_burst_took(ctx, tag);
  fl_fabric_ack(ctx, tag);
}

static void fl_in_hold(void *ctx, const char *to_gid, const char *msg_id, uint64_t tag) {
  fl_burst_took(ctx, tag);
  fl_unacked_add(ctx, to_gid, msg_id, tag);
}

static void fl_in_requeue(void *ctx, const fl_broker_delivery *d, const char *why) {
  fl_fabric *f = ctx;
  fl_gw_count(f->gw, FL_C_DELIVERIES_REQUEUED);
  fl_error(d->env->trace_id,
           "%s %s for gid %s could not be stored (%s); it and what followed it on its inbox go "
           "back to the broker, in order",
           d->env->kind, d->env->msg_id, d->gid, why);
  fl_burst_chan *c = f->in_batch ? fl_burst_of(f, d->gid, d->tag) : NULL;
  if (c) {
    /* After the burst's commit (fl_fabric_on_batch); until then the rest of this
     * channel's deliveries are dropped, so none overtakes it. */
    c->failed = 1;
    fl_poison(f, d->gid, d->tag);
    return;
  }
  fl_requeue_chan(f, d->gid, d->tag, "deliveries requeued: the store could not take one");
}

static void fl_in_reject(void *ctx, uint64_t tag, int requeue) {
  fl_fabric *f = ctx;
  fl_broker_reject(f->broker, tag, requeue);
}

static int fl_in_park(void *ctx, const fl_broker_delivery *d) {
  fl_fabric *f = ctx;
  return fl_presence_park(f->presence, d);
}

const fl_inbound_ops fl_fabric_settle_ops = {.ack = fl_in_ack,
                                             .hold = fl_in_hold,
                                             .reject = fl_in_reject,
                                             .park = fl_in_park,
                                             .requeue = fl_in_requeue};
