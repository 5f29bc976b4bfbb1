/* broker_settle.c — acks and rejects on the wire (the broker thread, or the
 * loop holding the link lock while the thread sleeps: broker_reader.c).
 *
 * The loop acks each delivery on its own, but a burst of commands often
 * holds many acks of one channel. Each channel keeps which of its
 * deliveries are settled (broker_acks.c); at the end of a run of acks, the
 * ones below the lowest delivery not yet settled go as one basic.ack with
 * `multiple`, the rest one by one, at once: an ack is never held back, and
 * a multiple ack never covers a delivery its owner has not settled. */
#include <amqp.h>

#include "common/error.h"
#include "common/log.h"
#include "gateway/broker/broker_internal.h"

static int settle_failed(fl_broker *b, int rc) {
  char why[FL_BROKER_WHY_LEN];
  fl_errf(why, sizeof(why), "ack/reject failed: %s", amqp_error_string2(rc));
  fl_broker_link_lost(b, why);
  return FL_EBROKER;
}

/* Sends the run's acks: for each channel one multiple ack up to the highest
 * of the run's tags below which every delivery is settled, if any of the run
 * is there, and a plain ack for each of the run above it. Returns 0, or
 * FL_EBROKER after fl_broker_link_lost. */
int fl_broker_ack_flush(fl_broker *b, struct fl_broker_ack_run *run) {
  size_t n = run->n;
  int rc = AMQP_STATUS_OK;
  run->n = 0;
  for (size_t i = 0; i < n && b->conn && rc == AMQP_STATUS_OK; i++) {
    struct chan *c = fl_broker_tag_chan(b, run->tag[i]);
    uint64_t dtag = run->tag[i] & 0xffffffffu;
    if (!c)
      continue; /* closed since: the broker requeued it */
    /* The multiple ack names the highest of the run's own covered tags, a
     * delivery the broker still holds unacked: every tag below it is
     * settled, and one acked on its own before is no longer owed. Naming a
     * tag acked before (lo - 1 may be one) makes the broker close the
     * channel for an unknown delivery tag. */
    if (fl_broker_acks_covered(&c->acks, dtag)) {
      if (dtag > c->multiple_to)
        c->multiple_to = dtag;
    } else
      rc = amqp_basic_ack(b->conn, c->id, dtag, 0);
  }
  for (size_t i = 0; i < n && b->conn && rc == AMQP_STATUS_OK; i++) {
    struct chan *c = fl_broker_tag_chan(b, run->tag[i]);
    if (c && c->multiple_to) {
      rc = amqp_basic_ack(b->conn, c->id, c->multiple_to, 1);
      c->multiple_to = 0;
    }
  }
  return rc == AMQP_STATUS_OK ? 0 : settle_failed(b, rc);
}

/* Acks or rejects. An ack the channel's tracker remembers joins run (sent
 * by ack_flush); the rest go at once. Returns 0 (also for a stale tag or a
 * second settle of one delivery, dropped), or FL_EBROKER after fl_broker_link_lost. */
int fl_broker_settle(fl_broker *b, struct item *it, struct fl_broker_ack_run *run) {
  return fl_broker_settle_tag(b, it->type == CMD_ACK, it->tag, it->requeue, run);
}

int fl_broker_settle_tag(fl_broker *b, int ack, uint64_t tag, int requeue,
                         struct fl_broker_ack_run *run) {
  struct chan *c = b->conn ? fl_broker_tag_chan(b, tag) : NULL;
  uint64_t dtag = tag & 0xffffffffu;
  int rc;
  if (!c) {
    fl_debug(NULL, "broker: dropped a settle for a delivery of a closed channel");
    return 0;
  }
  int known = fl_broker_acks_settle(&c->acks, dtag);
  if (known == 1) {
    /* The broker would close the channel for an unknown tag. */
    fl_debug(NULL, "broker: dropped a second settle of one delivery");
    return 0;
  }
  if (ack && known == 0) {
    run->tag[run->n++] = tag;
    return 0;
  }
  if (ack)
    rc = amqp_basic_ack(b->conn, c->id, dtag, 0);
  else
    rc = amqp_basic_reject(b->conn, c->id, dtag, requeue != 0);
  return rc == AMQP_STATUS_OK ? 0 : settle_failed(b, rc);
}
