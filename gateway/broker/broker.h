/* broker.h — the link between one fleetd and the AMQP broker.
 *
 * The link moves envelopes and bodies; it knows nothing of MCP, holds, or
 * what a message means. It owns one rabbitmq-c connection, which lives on a
 * thread of its own because rabbitmq-c blocks: the loop thread talks to it
 * through two bounded queues (commands in, events out) and a uv_async_t,
 * and, while that thread sleeps, reads the socket and sends publishes
 * itself (broker_reader.c). No function here waits on the network.
 *
 * Threading: every fl_broker_* function is called on the loop thread that
 * passed its uv_loop_t to fl_broker_start, and every callback in
 * fl_broker_events runs on that thread, from the loop. Callbacks may call
 * fl_broker_publish / _ack / _reject / _add_inbox / _remove_inbox; they must
 * not call fl_broker_stop or fl_broker_free.
 *
 * Topology (docs/architecture.md; every name is in topology.h) is declared
 * on every connect: exchanges fleet.msg, fleet.roster, fleet.control,
 * fleet.dlx; queues fleet.dlq, control.<host> and roster.<host> (both
 * consumed); one agent.<gid>.inbox.v2 per inbox the loop adds. A dropped
 * connection is retried with backoff (0.5 s doubling to 5 s); the topology
 * and every added inbox are restored before on_state reports the link up
 * again. Envelopes (envelope.h) travel as AMQP headers, one string header
 * per non-empty field of the envelope's field table.
 *
 * The implementation is split by concept: broker.c (this API),
 * broker_conn.c, broker_settle.c, broker_topology.c, broker_dlq.c,
 * broker_why.c, broker_headers.c and broker_acks.c share broker_internal.h,
 * which says what each holds. */
#ifndef FL_BROKER_H
#define FL_BROKER_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "gateway/proto/envelope.h" /* fl_envelope: what a publish and a delivery carry */

typedef struct fl_broker fl_broker;

/* Where a delivery came from. */
typedef enum fl_broker_source {
  FL_BROKER_INBOX,   /* agent.<gid>.inbox.v2 of an inbox the loop added */
  FL_BROKER_ROSTER,  /* roster.<host>: presence beats from fleet.roster */
  FL_BROKER_CONTROL, /* control.<host>: spawn / stop for this host */
  FL_BROKER_CLAIMS   /* claims.<host>: every claim, from fleet.claims */
} fl_broker_source;

/* One delivery, lent to on_delivery for the duration of the call. Copy what
 * outlives it. Every delivery must later be settled with fl_broker_ack or
 * fl_broker_reject (the broker holds it, and counts it against the
 * consumer's prefetch, until then). */
typedef struct fl_broker_delivery {
  uint64_t tag; /* opaque; see fl_broker_ack */
  fl_broker_source source;
  const char *gid; /* the inbox's gid for FL_BROKER_INBOX, else "" */
  const char *exchange;
  const char *routing_key;
  int redelivered;        /* the broker delivered it before (dedup by msgId) */
  const fl_envelope *env; /* headers that are not envelope fields are ignored */
  const char *body;       /* not NUL-terminated; NULL when len == 0 */
  size_t len;             /* <= FL_MAX_WIRE_BODY */
  /* NULL, or why the delivery cannot be read at all: envelope headers that
   * are not an envelope (fl_broker_env_from_headers) or a body announced
   * over FL_MAX_WIRE_BODY. Such a delivery has no body and env holds what
   * could be read; the receiver counts it and rejects it to fleet.dlq. */
  const char *bad;
} fl_broker_delivery;

typedef struct fl_broker_config {
  const char *uri;        /* amqp://user:pass@host:port/vhost or amqps://… */
  const char *host_id;    /* this gateway's host id: control.<id>, roster.<id> */
  unsigned prefetch;      /* per consumer; 0 = FL_BROKER_DEFAULT_PREFETCH */
  const char *queue_type; /* inbox x-queue-type: "classic" (NULL) or "quorum" */
  unsigned heartbeat_s;   /* 0 = FL_BROKER_DEFAULT_HEARTBEAT_S */
  const char *ca_file;    /* amqps: CA bundle (NULL = the system bundle) */
  long max_length;        /* inbox x-max-length; 0 = default */
  long message_ttl_ms;    /* inbox x-message-ttl; 0 = default */
  long queue_expires_ms;  /* inbox x-expires; 0 = default */
  int clear_broadcasts;   /* also bind inboxes to the broadcast keys in clear */
} fl_broker_config;

/* One message read from fleet.dlq: its envelope (env_ok 0: bad says why it
 * does not parse), body, and the first x-death entry RabbitMQ added. */
typedef struct fl_broker_dead {
  fl_envelope env;
  int env_ok;
  char bad[384];
  char *body; /* fl_malloc'd, len bytes */
  size_t len;
  char reason[32];       /* x-death reason: rejected, maxlen, expired */
  char queue[256];       /* the queue it died in */
  char exchange[256];    /* where it had been published */
  char routing_key[256]; /* its first routing key */
  long long count;       /* how often it died there */
  long long time_ms;     /* when, ms since the epoch (0 = unknown) */
} fl_broker_dead;

/* What a fleet.dlq command does (fl_broker_dlq). */
enum fl_broker_dlq_op {
  FL_BROKER_DLQ_LIST,   /* read up to FL_BROKER_DLQ_MAX, putting each back */
  FL_BROKER_DLQ_PURGE,  /* remove all (older_than_ms 0) or those that died before it */
  FL_BROKER_DLQ_REPLAY, /* republish msg_id where it had been published, then remove it */
};
/* Messages one DLQ command reads at most. */
#define FL_BROKER_DLQ_MAX 1000

/* Callbacks, all on the loop thread. Any may be NULL. */
typedef struct fl_broker_events {
  /* The link went up (after topology and inboxes were restored) or down.
   * why is a human-readable reason ("" when up). While down,
   * fl_broker_publish fails at once with FL_EBROKER. */
  void (*on_state)(void *ctx, int up, const char *why);
  /* A message from one of our queues. */
  void (*on_delivery)(void *ctx, const fl_broker_delivery *d);
  /* Fires exactly once for every fl_broker_publish that returned 0.
   * status 0: the broker confirmed it (and, if mandatory, routed it).
   * FL_EBROKER: nacked (e.g. the inbox is full), unroutable ("unroutable: no
   * inbox bound to key K"), or the connection was lost before the confirm —
   * the message may or may not have arrived. FL_ECANCELLED: fl_broker_stop. */
  void (*on_publish_done)(void *ctx, void *req, int status, const char *why);
  /* An inbox's consumer started (status 0) or stopped: FL_ECANCELLED, the
   * broker cancelled it (its queue was deleted; it is declared again at
   * once); FL_EREFUSED, its queue exists with arguments this link did not
   * declare (someone else declared it: it is not consumed); FL_ESTORE, the
   * loop asked its deliveries back (fl_broker_requeue_inbox); FL_EBROKER,
   * anything else (e.g. "ACCESS_REFUSED": another gateway consumes it).
   * Fires after each add, and again after each reconnect. A failed inbox
   * stays remembered and is retried with a backoff (0.5 s doubling to 5 s;
   * reported again only when the reason changes) and after each reconnect. */
  void (*on_inbox)(void *ctx, const char *gid, int status, const char *why);
  /* Brackets each burst of events handed to the loop that holds a
   * delivery: begin = 1 before its first delivery, 0 after its last event.
   * Lets the loop group its work per burst (one store commit for many
   * deliveries). Events before a burst's first delivery (and bursts of
   * publish outcomes, link and inbox states alone) run outside it. */
  void (*on_batch)(void *ctx, int begin);
  /* A fl_broker_dlq command finished: status 0 (dead: the messages read,
   * borrowed for the call; affected: how many were removed or
   * republished), FL_ENOTFOUND (replay: no such msgId), FL_EBROKER with
   * why, FL_ECANCELLED at fl_broker_stop. */
  void (*on_dlq)(void *ctx, void *req, int status, const char *why, const fl_broker_dead *dead,
                 size_t ndead, size_t affected);
} fl_broker_events;

/* Starts the link: parses cfg, starts the broker thread, and returns at once
 * (connecting happens on the thread; on_state reports the outcome). cfg's
 * strings are copied; ev is copied; ctx is passed to every callback.
 * Returns 0 and sets *out, FL_EINVAL / FL_ECONFIG (bad URI, host id), or
 * FL_ENOMEM. The caller owns *out: fl_broker_stop then fl_broker_free. */
int fl_broker_start(uv_loop_t *loop, const fl_broker_config *cfg, const fl_broker_events *ev,
                    void *ctx, fl_broker **out);

/* Queues one command on fleet.dlq (its own channel; reading puts each
 * message back, so nothing is lost). on_dlq reports it with req. msg_id is
 * REPLAY's; older_than_ms PURGE's. 0, FL_EBROKER (link down), FL_ENOMEM. */
int fl_broker_dlq(fl_broker *b, enum fl_broker_dlq_op op, const char *msg_id,
                  long long older_than_ms, void *req);

/* fl_broker_publish's flags. MANDATORY makes an unroutable message an
 * error (leave it off only for broadcasts). PACKED sends the envelope
 * packed into the one `env` header, for a host that reads it (envelope 1.1
 * or later, as its host beat said); without it each non-empty field is a
 * header of its own. */
#define FL_BROKER_MANDATORY 1u
#define FL_BROKER_PACKED 2u

/* Queues one publish and returns at once. exchange e.g. FL_EX_MSG; body is
 * copied (len <= FL_MAX_WIRE_BODY); env is copied (NULL = no headers): it
 * becomes the headers (see flags) and env->msg_id the AMQP message_id;
 * persistent, timestamp now (broker_headers.h). flags: FL_BROKER_*. req is
 * the caller's, handed back to on_publish_done. Returns 0 (on_publish_done
 * will fire exactly once), FL_EBROKER when the link is down (nothing is
 * buffered on the broker's behalf), FL_EFULL when FL_BROKER_MAX_INFLIGHT
 * publishes are outstanding, FL_ETOOBIG, FL_EINVAL or FL_ENOMEM; on failure
 * the callback never runs. */
int fl_broker_publish(fl_broker *b, const char *exchange, const char *routing_key, unsigned flags,
                      const fl_envelope *env, const char *body, size_t len, void *req);

/* Declares agent.<gid>.inbox.v2 (durable, dead-lettering to fleet.dlx, capped
 * by cfg), binds it to fleet.msg with keys <gid>, broadcast.<host>.all and
 * broadcast.<host>.<g> for each group (and, with cfg->clear_broadcasts, the
 * keys in clear broadcast.all and broadcast.<g>), and consumes it with an exclusive consumer on
 * a channel of its own. Adding a gid again replaces its groups. Remembered
 * and redone after every reconnect; on_inbox reports the outcome. groups is
 * copied. Returns 0, FL_EINVAL, FL_EFULL (FL_BROKER_MAX_INBOXES or the command
 * queue) or FL_ENOMEM. Works while the link is down (done on connect). */
int fl_broker_add_inbox(fl_broker *b, const char *gid, const char *const *groups, size_t ngroups);

/* Stops consuming gid's inbox and forgets it. The queue and its bindings
 * stay, so messages keep arriving and wait durably (x-expires collects it
 * eventually). Deliveries from it not yet acked go back to the queue; acks
 * for them are ignored. Returns 0, FL_EINVAL, FL_EFULL or FL_ENOMEM. */
int fl_broker_remove_inbox(fl_broker *b, const char *gid);

/* As fl_broker_remove_inbox, then deletes the queue agent.<gid>.inbox.v2
 * on the broker (its bindings and waiting messages go with it): for an
 * entity that left for good. While the link is down the queue is left to
 * its x-expires. Returns as fl_broker_remove_inbox. */
int fl_broker_delete_inbox(fl_broker *b, const char *gid);

/* Gives back to gid's queue every delivery of the channel that tag (any
 * delivery tag of it) names and that is not acked yet, in the queue's
 * order: the channel is closed, so later deliveries cannot overtake them,
 * and the inbox is consumed again after its backoff. on_inbox reports
 * FL_ESTORE with why meanwhile. For deliveries the loop took but could not
 * make durable. A tag of an older incarnation is ignored. Returns as
 * fl_broker_remove_inbox. */
int fl_broker_requeue_inbox(fl_broker *b, const char *gid, uint64_t tag, const char *why);

/* Settles a delivery. tag is from fl_broker_delivery; a tag from before a
 * reconnect (or of a removed inbox) is dropped silently: the broker has
 * already put that message back. reject with requeue = 0 dead-letters an
 * inbox message to fleet.dlq. Returns 0, FL_EINVAL, FL_EFULL (command queue
 * full; retry later) or FL_ENOMEM. An ack waits for the end of the loop's
 * turn (or the next other command, which it precedes) and goes with the
 * turn's others, from the loop itself while the broker thread sleeps; one
 * that finds the command queue full then is dropped with a warning (the
 * broker delivers it again after a reconnect, and a receiver that
 * deduplicates drops it). */
int fl_broker_ack(fl_broker *b, uint64_t tag);
int fl_broker_reject(fl_broker *b, uint64_t tag, int requeue);

/* 1 when the link is up as last reported by on_state, else 0. */
int fl_broker_is_up(const fl_broker *b);

/* How often the loop thread used the connection itself while the broker
 * thread slept (broker_reader.c), so a message cost no hand-off between
 * the threads. For tests and profiles. */
typedef struct fl_broker_loop_use {
  uint64_t reads;     /* the times it read the socket and found frames */
  uint64_t publishes; /* publishes it sent */
  uint64_t acks;      /* runs of acks it sent */
} fl_broker_loop_use;
/* Fills *out (zeros for b == NULL). */
void fl_broker_loop_counts(const fl_broker *b, fl_broker_loop_use *out);

/* Closes the connection, joins the broker thread (this waits for the thread,
 * not for the network: at most one short rabbitmq-c timeout), reports every
 * outstanding publish with FL_ECANCELLED, and starts closing the async handle.
 * No callback runs after it returns. Idempotent; b == NULL is fine. */
void fl_broker_stop(fl_broker *b);

/* Stops b if needed and frees it once the loop has closed its handle (the
 * loop must run once more for that). Sets *b to NULL. NULL-safe. */
void fl_broker_free(fl_broker **b);

#endif
