/* broker_internal.h — what the broker link's files share, and nothing else
 * includes (tests and the envelope fuzz target aside).
 *
 * The link is one fl_broker split by concept:
 *   broker.c           the public API (broker.h), on the loop thread: it
 *                      queues commands and runs the callbacks for events;
 *   broker_conn.c      the broker thread: connect, TLS, reconnect with
 *                      backoff, commands, publishes, the wait and the
 *                      hand-over of the socket to the loop;
 *   broker_frames.c    the frames the broker sends: confirms and returns,
 *                      deliveries, consumer and channel events;
 *   broker_settle.c    on the broker thread (or the loop, link lock held):
 *                      acks and rejects on the wire, a burst's acks as one
 *                      `multiple` ack where it can;
 *   broker_topology.c  on the broker thread: declaring exchanges, queues and
 *                      bindings, and each inbox's channel and consumer;
 *   broker_dlq.c       on the broker thread: reading, purging and replaying
 *                      fleet.dlq;
 *   broker_headers.c   the envelope as AMQP headers (pure);
 *   broker_acks.c      which deliveries of a channel are settled, for
 *                      `multiple` acks (pure);
 *   broker_why.c       on the broker thread: why a connect failed;
 *   broker_reader.c    on the loop thread: reading the socket, and sending
 *                      a publish or a turn's acks, while the broker thread
 *                      sleeps (below).
 * The loop thread and the broker thread share the two fl_xqueues
 * (xqueue.h) and the link lock; each field of fl_broker below says which
 * thread owns it.
 *
 * The link lock. The connection is used by one thread at a time. The broker
 * thread holds link_mu whenever it is awake and lets go of it only while it
 * sleeps in poll() with its socket left to the loop. The loop then watches
 * the socket (a uv_poll_t on a dup of it) and, when the broker sends,
 * takes the lock with a trylock, never waiting, reads the frames that are
 * there with a zero timeout through the same frame handlers, and runs the
 * events at once: a delivery reaches the loop without waking the thread
 * and the thread waking the loop. When the trylock fails (the thread is
 * awake), or a burst is more than one batch, the loop stops watching and
 * the thread reads as before, until it sleeps again and hands the socket
 * back. Over TLS the thread always reads: bytes OpenSSL has buffered do
 * not show as a readable socket. */
#ifndef FL_BROKER_INTERNAL_H
#define FL_BROKER_INTERNAL_H

#include <amqp.h>
#include <amqp_framing.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/limits.h"
#include "common/xqueue.h"
#include "gateway/broker/broker.h"
#include "gateway/broker/broker_acks.h"
#include "gateway/broker/broker_headers.h"

/* Channel 2 declares the shared topology and consumes control and roster;
 * channel 1 (publishing) is the connection's own business. */
#define FL_BROKER_CH_SYSTEM 2
/* RabbitMQ's default channel_max; we never ask for more. */
#define FL_BROKER_CH_MAX 2047
/* A failed inbox (refused exclusive consumer: usually a crashed gateway's
 * consumer the broker has not timed out yet; a queue someone else declared
 * with other arguments) is tried again after a backoff: the first retry
 * soon, doubling up to this, so a refusal that stays costs one RPC every
 * few seconds. A consumer the broker cancelled (its queue was deleted) is
 * set up again at once. */
#define FL_BROKER_INBOX_RETRY_FIRST_MS 500
#define FL_BROKER_INBOX_RETRY_MS 5000
/* Frames handled, commands served or events dispatched before looking at
 * the other side, so a flood in one direction cannot starve the other. */
#define FL_BROKER_BATCH 256
/* A reason for a state change, a failure or a dead letter. */
#define FL_BROKER_WHY_LEN 384
/* AMQP short strings (exchange, routing key, queue) are < 256 bytes. */
#define FL_BROKER_SHORTSTR 256
/* Consumer tags of the system channel's consumers: a delivery's tag tells
 * which queue it came from. */
#define FL_BROKER_TAG_CONTROL "control"
#define FL_BROKER_TAG_ROSTER "roster"
#define FL_BROKER_TAG_CLAIMS "claims"

enum item_type {
  CMD_PUBLISH = 1, /* doubles as the publish-done event once it has an outcome */
  CMD_ACK,
  CMD_REJECT,
  CMD_ADD_INBOX,
  CMD_REMOVE_INBOX,
  CMD_DELETE_INBOX, /* remove, then delete the queue itself */
  EV_STATE,
  EV_DELIVERY,
  EV_INBOX,
  CMD_DLQ,           /* doubles as its event once done */
  CMD_REQUEUE_INBOX, /* close one inbox channel incarnation (tag), so the broker requeues
                        what it holds unacked, and consume it again after the backoff */
  EV_READ,           /* the thread hands the loop its socket to read while it sleeps */
  CMD_WAKE,          /* nothing to do: the loop wakes the thread to read or reconnect */
};

/* A command (loop -> thread) or an event (thread -> loop). A publish
 * command is the same item that later comes back as its publish-done
 * event, so reporting a publish's outcome never needs memory that might not
 * be there. */
struct item {
  enum item_type type;
  /* publish, delivery */
  char exchange[FL_BROKER_SHORTSTR];
  char routing_key[FL_BROKER_SHORTSTR];
  int mandatory;
  int packed; /* the envelope goes packed into one header (FL_BROKER_PACKED) */
  fl_envelope env;
  char *body;
  size_t len;
  size_t weight; /* delivery: what it counts against FL_BROKER_MAX_EVENT_BYTES */
  void *req;
  uint64_t seq; /* publish sequence number on the publish channel */
  int done;     /* publish: an outcome is set */
  int returned; /* publish: the broker returned it as unroutable */
  /* ack, reject, delivery */
  uint64_t tag;
  int requeue;
  int redelivered;
  fl_broker_source source;
  /* inbox */
  char gid[FL_ID_LEN];
  char **groups;
  size_t ngroups;
  /* dlq */
  int dlq_op;
  long long older_than_ms;
  char msg_id[FL_ID_LEN];
  fl_broker_dead *dead;
  size_t ndead, affected;
  /* read (EV_READ): the connection it is for (seq), and a dup of its
   * socket for the loop to watch, or -1 when the loop has one already;
   * fl_broker_item_free closes it unless the loop took it */
  int rfd;
  /* outcome */
  int status;
  int up;
  char why[FL_BROKER_WHY_LEN];
};

/* What the thread knows about one open channel. */
struct chan {
  uint16_t id;
  uint16_t epoch;
  int open;
  struct inbox *inbox; /* NULL for the link's own channels */
  /* Content being assembled: after basic.deliver / basic.return comes a
   * header frame, then body frames. */
  int content; /* 0 none, 1 awaiting header, 2 awaiting body */
  int is_return;
  uint64_t dtag;
  int redelivered;
  fl_broker_source source;
  char exchange[FL_BROKER_SHORTSTR];
  char routing_key[FL_BROKER_SHORTSTR];
  char reply_text[FL_BROKER_WHY_LEN];
  char msg_id[FL_ID_LEN];
  fl_envelope env;
  char bad[FL_BROKER_WHY_LEN]; /* why this delivery will be dead-lettered, "" = it will not */
  char *body;
  size_t size, got;
  fl_broker_acks acks;  /* which deliveries are settled (reset on every open) */
  uint64_t multiple_to; /* a burst's multiple ack goes up to here; 0 = none due */
};

struct inbox {
  char gid[FL_ID_LEN];
  char **groups;
  size_t ngroups;
  struct chan ch;
  int consuming;    /* its consume-ok came */
  int consume_sent; /* basic.consume is on its way (fl_broker_inbox_start) */
  int quiet;        /* its set-up is a retry: a refusal is reported when its reason changed */
  char last_why[FL_BROKER_WHY_LEN]; /* the last failure reported, "" after a success */
  uint64_t retry_at;                /* monotonic ms: set up again no sooner */
  unsigned retry_ms;                /* the current backoff; 0 after a success */
  int cancel_due; /* the loop read its consumer's cancel; the thread closes it (b->deferred) */
};

/* Publishes on the wire, by sequence number; a settled one leaves a NULL
 * slot until the ones before it are settled too. */
struct pending {
  struct item **v;
  size_t cap, head, n;
};

struct fl_broker {
  /* Set at start, read-only afterwards. */
  uv_loop_t *loop;
  fl_broker_events ev;
  void *ctx;
  char *uri_buf; /* amqp_parse_url writes into it; cis point into it */
  struct amqp_connection_info cis[FL_BROKER_MAX_URIS]; /* the URIs given, in order */
  size_t ncis;
  /* Broker thread only: which of cis is tried or in use now, and a copy
   * of it. A failed connect moves on to the next at once; a whole round of
   * failures waits out the backoff. */
  size_t cur;
  struct amqp_connection_info ci;
  char *host_id;
  char *queue_type;
  char *ca_file;
  unsigned prefetch, heartbeat_s;
  int clear_broadcasts; /* bind the broadcast keys in clear too */
  long max_length, message_ttl_ms, queue_expires_ms;

  /* The state both threads touch. */
  fl_xqueue *cmds;    /* loop -> thread; shut down = the thread is to finish */
  fl_xqueue *events;  /* thread -> loop */
  uv_mutex_t link_mu; /* the link lock (top of this file) */
  int mu_made;        /* link_mu was initialised (loop thread, at start) */
  /* The connection (conn_gen) whose socket the loop watches now, 0 none:
   * set by the loop when it starts watching, cleared when it stops. */
  atomic_uint_fast64_t lr_gen;
  atomic_int lr_lost; /* the loop stopped watching: the thread offers it again */

  /* Under the link lock: broker-thread state the loop also uses while it
   * reads (and the thread's fields below, which the frame handlers touch). */
  uint64_t conn_gen; /* bumped on every connect */
  int on_loop;       /* the loop is reading: events are pushed without waiting */
  int deferred;      /* something the loop read is the thread's to finish (cancel_due) */

  /* Loop thread only. */
  int up;             /* as last reported by on_state */
  size_t outstanding; /* publishes accepted and not yet reported */
  int stopped;        /* fl_broker_stop ran */
  int closed;         /* the events queue's async handle is closed */
  int free_on_close;
  size_t ninboxes_loop; /* inboxes added minus removed, for FL_EFULL */
  struct inbox_name {
    char gid[FL_ID_LEN];
  } * loop_inboxes;
  struct fl_broker_reader *reader; /* broker_reader.c; NULL when not watching */
  fl_broker_loop_use loop_use;     /* fl_broker_loop_counts */
  /* Acks the loop gave in this turn of the loop, sent together before it
   * sleeps (ack_prep) or before any other command, in order. */
  uint64_t lacks[FL_BROKER_BATCH];
  size_t nlacks;
  uv_prepare_t ack_prep;

  /* Broker thread only. */
  uv_thread_t thread;
  uint64_t inbox_start_at; /* monotonic ms: start the set-up inboxes' consumers; 0 none */
  amqp_connection_state_t conn;
  int t_up; /* what the thread last reported: 1 up, 0 down, -1 nothing yet */
  char t_why[FL_BROKER_WHY_LEN];
  char err[FL_BROKER_WHY_LEN]; /* why the last inbox operation lost the connection */
  uint16_t epoch;              /* bumped on every channel open */
  uint16_t next_ch;
  uint16_t ch_max;
  struct chan pub, sys;
  struct chan *chans[FL_BROKER_CH_MAX + 1];
  struct inbox *inboxes[FL_BROKER_MAX_INBOXES];
  size_t ninboxes;
  struct pending pending;
  uint64_t head_seq; /* sequence number of pending's head */
  uint64_t next_seq;
  uint64_t t_fd_gen; /* the connection whose socket's dup the loop was given */
  int t_asked;       /* an EV_READ is on its way and not answered yet */
};

/* ---- small helpers, any file ---- */

static inline void fl_broker_copy(char *dst, size_t n, const char *src) {
  snprintf(dst, n, "%s", src ? src : "");
}

/* Copies an AMQP byte string into dst (size n), truncating, NUL-terminated. */
static inline void fl_broker_copy_bytes(char *dst, size_t n, amqp_bytes_t b) {
  size_t len = b.len < n - 1 ? b.len : n - 1;
  if (len)
    memcpy(dst, b.bytes, len);
  dst[len] = '\0';
}

/* The publish that waits i-th in r for its confirm (0 = the oldest), and
 * taking the oldest off (NULL when none waits). Broker thread (or the loop
 * holding the link lock). */
static inline struct item **fl_broker_pending_at(struct pending *r, size_t i) {
  return &r->v[(r->head + i) % r->cap];
}

static inline struct item *fl_broker_pending_pop(struct pending *r) {
  if (r->n == 0)
    return NULL;
  struct item *it = r->v[r->head];
  r->head = (r->head + 1) % r->cap;
  r->n--;
  return it;
}

/* ---- broker.c ---- */

/* Frees an item and what it owns. NULL-safe. */
void fl_broker_item_free(struct item *it);
/* Runs the queued events' callbacks now (on the loop thread, not stopped). */
void fl_broker_events_run(fl_broker *b);
/* Wakes the broker thread (a CMD_WAKE), best effort: a full queue wakes it
 * anyway, and it looks at its socket every IDLE_POLL_MS regardless. */
void fl_broker_wake_thread(fl_broker *b);

/* ---- broker_reader.c (loop thread) ---- */

/* An EV_READ: watches the socket it offers (taking it->rfd) and tells the thread so. */
void fl_broker_reader_offer(fl_broker *b, struct item *it);
/* Publishes it on the loop thread when the broker thread sleeps with the
 * socket left to the loop, no command waits before it, and the socket has
 * room to take it without blocking. Returns 1 (it belongs to the link now,
 * as after a queued command), or 0 (the caller queues it for the thread). */
int fl_broker_reader_publish(fl_broker *b, struct item *it);
/* Sends n acks on the loop thread as fl_broker_reader_publish sends a
 * publish (a burst's run as one `multiple` ack where it can). Returns 1
 * (sent, or dropped with the connection they belonged to), or 0 (the
 * caller queues them for the thread). */
int fl_broker_reader_ack(fl_broker *b, const uint64_t *tags, size_t n);
/* Stops watching and closes the dup (at once; the handle closes on its own
 * loop turn). NULL-safe in b->reader. */
void fl_broker_reader_close(fl_broker *b);

/* ---- broker_conn.c (broker thread unless said otherwise) ---- */

/* The broker thread's body; arg is the fl_broker. Runs until b->cmds is
 * shut down, then fails what is still outstanding with FL_ECANCELLED. */
void fl_broker_thread_main(void *arg);

/* Allocates / frees the thread's own state (the pending ring, channel
 * buffers). init runs on the loop thread before the thread starts, free
 * after it was joined (or never started). free is NULL-safe in parts. */
int fl_broker_conn_init(fl_broker *b);
void fl_broker_conn_free(fl_broker *b);

/* Queues an event weighing bytes for the loop, waiting while the queue is
 * full (never once fl_broker_stop shut it down, nor when the loop itself
 * reads: it runs the events next). Takes ownership of it. */
void fl_broker_emit(fl_broker *b, struct item *it, size_t bytes);
/* A publish has its outcome: reports it to the loop (on_publish_done). */
void fl_broker_publish_done(fl_broker *b, struct item *it, int status, const char *why);
/* Reports an inbox's outcome to the loop (on_inbox). */
void fl_broker_emit_inbox(fl_broker *b, const char *gid, int status, const char *why);

/* The outcome of the last RPC on channel ch: 0; FL_EREFUSED when the server
 * closed the channel (why says why; the channel is gone, the connection is
 * fine); FL_EBROKER when the connection is gone (why says why). what names
 * the RPC in why. */
int fl_broker_rpc_result(fl_broker *b, uint16_t ch, const char *what, char *why, size_t n);

/* Opens channel id for c; returns as fl_broker_rpc_result. */
int fl_broker_chan_open(fl_broker *b, struct chan *c, uint16_t id, char *why, size_t n);
/* Forgets c's channel (no AMQP traffic) and frees its partial content. */
void fl_broker_chan_reset(fl_broker *b, struct chan *c);
/* A free channel number for an inbox, or 0 when none is left. */
uint16_t fl_broker_chan_alloc(fl_broker *b);

/* ---- broker_frames.c (broker thread, or the loop with the link lock) ---- */

/* Reads and handles up to FL_BROKER_BATCH frames waiting on the
 * connection, none of them waiting for the network. on_loop: the loop
 * reads (link lock held), so it stops where the events queue is over its
 * budget instead of waiting for room. Returns how many frames it handled;
 * sets *more to 1 when frames are left that only another read will see
 * (rabbitmq-c buffered them, or the batch or the budget ended it). */
int fl_broker_read_frames(fl_broker *b, int on_loop, int *more);

/* Sends a CMD_PUBLISH on the publish channel now (link lock held, b->conn
 * up); it waits in the pending ring for its confirm. Returns 0, or
 * FL_EBROKER after fl_broker_link_lost. */
int fl_broker_publish_now(fl_broker *b, struct item *it);

/* The connection failed: reports the link down at once, fails what was in
 * flight and drops the connection. */
void fl_broker_link_lost(fl_broker *b, const char *why);
/* The channel a loop tag names, or NULL if that incarnation is gone. */
struct chan *fl_broker_tag_chan(fl_broker *b, uint64_t tag);

/* ---- broker_settle.c (broker thread) ---- */

/* Acks waiting for the end of their run (fl_broker_ack_flush): at most one batch. */
struct fl_broker_ack_run {
  uint64_t tag[FL_BROKER_BATCH]; /* loop tags: epoch, channel, broker tag */
  size_t n;
};

/* Acks or rejects it. An ack the channel's tracker remembers joins run
 * (sent by fl_broker_ack_flush); the rest go at once. Returns 0 (also for a
 * stale tag or a second settle of one delivery, dropped), or FL_EBROKER
 * after fl_broker_link_lost. */
int fl_broker_settle(fl_broker *b, struct item *it, struct fl_broker_ack_run *run);
/* The same for one tag: an ack (ack 1) or a reject (requeue as asked). */
int fl_broker_settle_tag(fl_broker *b, int ack, uint64_t tag, int requeue,
                         struct fl_broker_ack_run *run);
/* Sends run's acks and empties it; returns 0, or FL_EBROKER after
 * fl_broker_link_lost. */
int fl_broker_ack_flush(fl_broker *b, struct fl_broker_ack_run *run);

/* ---- broker_headers.c: see broker_headers.h ---- */

/* ---- broker_why.c (broker thread) ---- */

/* Formats into why (n bytes) why connecting to host:port failed: rc is what
 * amqp_socket_open_noblock returned, err_no the errno read right after it.
 * A socket error says "connection refused by HOST:PORT (…)" when nothing
 * listens there, else the system's reason; finding out may take one short
 * connect of its own (at most a second). */
void fl_broker_connect_why(const char *host, int port, int rc, int err_no, char *why, size_t n);

/* ---- broker_topology.c (broker thread) ---- */

/* Declares the shared topology and this gateway's control and roster queues
 * on the system channel, and consumes both. Any failure fails the whole
 * connection attempt: returns 0 or a negative code, why set. */
int fl_broker_topology_declare(fl_broker *b, char *why, size_t n);

/* Declares and binds one inbox on a fresh channel, ready for
 * fl_broker_inbox_start to consume it. Returns 0, or
 * FL_EBROKER when the connection is gone (b->err says why); a channel-level
 * failure is reported through on_inbox and returns 0, as the link itself is
 * fine. A retry (quiet) reports a failure only when its reason changed. */
int fl_broker_inbox_setup(fl_broker *b, struct inbox *ib, int quiet);
/* Sends basic.consume for every inbox set up and not yet consuming, without
 * waiting for the replies: each consume-ok comes as a frame
 * (fl_broker_inbox_consuming), a refusal as its channel's close
 * (fl_broker_inbox_closed). It acts once no inbox has been set up for
 * FL_BROKER_INBOX_SETTLE_MS (b->inbox_start_at), or at once with now set,
 * so inboxes set up in a burst consume together: while the thread waits for
 * a reply, rabbitmq-c queues every other channel's deliveries in that
 * channel's memory pool, which keeps its pages. Returns 0 or FL_EBROKER
 * (why in b->err). */
int fl_broker_inbox_start(fl_broker *b, int now);
/* ib's consume-ok came: it consumes now (reported through on_inbox). */
void fl_broker_inbox_consuming(fl_broker *b, struct inbox *ib);
/* The broker closed ib's channel: its consumer refused, or later (a deleted
 * queue): reported through on_inbox and retried after ib's backoff. */
void fl_broker_inbox_closed(fl_broker *b, struct inbox *ib, const char *why);

/* Closes an inbox's channel (cancelling its consumer; unacked deliveries go
 * back to the queue). Returns 0 or FL_EBROKER when the connection is gone. */
int fl_broker_inbox_close(fl_broker *b, struct inbox *ib);

/* CMD_ADD_INBOX / CMD_REMOVE_INBOX: updates the registry (taking its
 * groups) and, when connected, the broker. Returns 0 or FL_EBROKER when the
 * connection is gone (add: b->err says why). */
int fl_broker_inbox_add(fl_broker *b, struct item *it);
int fl_broker_inbox_remove(fl_broker *b, struct item *it);
/* Removes it->gid's inbox (as fl_broker_inbox_remove), then deletes its
 * queue on the broker, bindings and messages with it. 0, or < 0 when the
 * connection was lost. */
int fl_broker_inbox_delete(fl_broker *b, struct item *it);

/* Sets up again every inbox that is not consumed and whose backoff ran
 * out. Returns 0 or FL_EBROKER (the connection is gone, b->err says why). */
int fl_broker_inbox_retry(fl_broker *b);

/* The broker cancelled ib's consumer (its queue was deleted): closes its
 * channel, reports it and sets it up again at once (the next retry pass).
 * Returns 0 or FL_EBROKER when the connection is gone. */
int fl_broker_inbox_cancelled(fl_broker *b, struct inbox *ib);

/* CMD_REQUEUE_INBOX: if it->gid's channel is still the incarnation it->tag
 * names, closes it (the broker puts back, in order, every delivery of it not
 * acked) and reports the inbox not consumed with it->why; the retry sets it
 * up again after the backoff. Returns 0 or FL_EBROKER. */
int fl_broker_inbox_requeue(fl_broker *b, struct item *it);

/* Frees an inbox record. NULL-safe. */
void fl_broker_inbox_free(struct inbox *ib);

/* Runs a CMD_DLQ on a channel of its own (broker_dlq.c), filling it's
 * status, dead and affected. Returns 0, or FL_EBROKER when the connection
 * failed (why says how; the caller drops the link). */
int fl_broker_dlq_serve(fl_broker *b, struct item *it, char *why, size_t n);
void fl_broker_dead_free(fl_broker_dead *v, size_t n);

#endif
