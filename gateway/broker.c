/* broker.c — the broker link: one rabbitmq-c connection on its own thread.
 *
 * rabbitmq-c blocks, and a connection belongs to one thread, so the link runs
 * a thread that owns the connection and everything about it (channels,
 * pending confirms, the inbox registry). The loop thread never touches any of
 * that: it puts commands on a bounded queue and writes a byte to a pipe; the
 * broker thread puts events on another bounded queue and calls
 * uv_async_send. Both queues hold `struct item`s, and a publish command is the
 * same item that later comes back as its publish-done event, so reporting a
 * publish's outcome never needs memory that might not be there.
 *
 * Channels: 1 publishes (publisher confirms, many publishes in flight,
 * matched to basic.ack / basic.nack by sequence number, `multiple`
 * included); 2 declares the shared topology and consumes control.<host> and
 * roster.<host>; every inbox gets a channel of its own from 3 up. One
 * channel per inbox because AMQP reports a refused exclusive consumer or a
 * queue declared with other arguments by closing the channel: on a shared
 * channel one bad inbox would take every other consumer down with it.
 *
 * Delivery tags handed to the loop are (channel epoch << 48 | channel << 32 |
 * broker tag). The epoch changes on every channel open, so an ack that
 * arrives after a reconnect or after an inbox was removed names a channel
 * incarnation that no longer exists and is dropped, instead of acking the
 * wrong message or making the broker close the channel.
 *
 * Reconnect: any connection error reports the link down at once, fails every
 * unconfirmed publish, and retries after 0.5 s, doubling to 5 s. On connect
 * the topology is declared again and every remembered inbox re-added before
 * the link is reported up. */
#include "gateway/broker.h"

#include <amqp.h>
#include <amqp_framing.h>
#include <amqp_ssl_socket.h>
#include <amqp_tcp_socket.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/limits.h"
#include "common/names.h"
#include "common/time.h"
#include "common/log.h"
#include "gateway/topology.h"

/* Consumer tags of the system channel's two consumers; a delivery's tag
 * tells which queue it came from. */
#define TAG_CONTROL "control"
#define TAG_ROSTER "roster"

#define CH_PUBLISH 1
#define CH_SYSTEM 2
#define CH_FIRST_INBOX 3
/* RabbitMQ's default channel_max; we never ask for more. */
#define CH_MAX 2047

/* Reconnect backoff: first retry soon (a broker restart takes seconds), then
 * back off so a long outage costs little. */
#define BACKOFF_FIRST_MS 500
#define BACKOFF_MAX_MS 5000
/* A failed inbox (refused exclusive consumer: usually a crashed gateway's
 * consumer the broker has not timed out yet) is tried again this often. */
#define INBOX_RETRY_MS 5000
/* How long the thread sleeps in poll() when idle. Bounds the delay of a
 * heartbeat we owe the broker; commands wake it at once through the pipe. */
#define IDLE_POLL_MS 100
/* Frames handled, or commands served, before looking at the other side, so
 * a flood in one direction cannot starve the other. */
#define BATCH 256
/* Connect and RPC timeouts: long enough for a loaded broker (a quorum queue
 * declare can take a few seconds), short enough that fl_broker_stop, which
 * may wait for one, stays brisk. */
#define CONNECT_TIMEOUT_S 5
#define RPC_TIMEOUT_S 10
/* The system CA bundle on Debian, for amqps:// without a ca_file. */
#define SYSTEM_CA_FILE "/etc/ssl/certs/ca-certificates.crt"

#define WHY_LEN 384
#define SHORTSTR 256 /* AMQP short strings (exchange, routing key) are < 256 bytes */

enum item_type {
  CMD_PUBLISH = 1, /* doubles as EV_PUBLISH_DONE once it has an outcome */
  CMD_ACK,
  CMD_REJECT,
  CMD_ADD_INBOX,
  CMD_REMOVE_INBOX,
  EV_STATE,
  EV_DELIVERY,
  EV_INBOX,
};

/* A command (loop -> thread) or an event (thread -> loop). */
struct item {
  enum item_type type;
  /* publish, delivery */
  char exchange[SHORTSTR];
  char routing_key[SHORTSTR];
  int mandatory;
  fl_envelope env;
  char *body;
  size_t len;
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
  /* outcome */
  int status;
  int up;
  char why[WHY_LEN];
};

/* A bounded FIFO of item pointers. */
struct ring {
  struct item **v;
  size_t cap, head, n;
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
  char exchange[SHORTSTR];
  char routing_key[SHORTSTR];
  char reply_text[WHY_LEN];
  char msg_id[FL_ID_LEN];
  fl_envelope env;
  const char *bad; /* why this delivery will be dead-lettered, or NULL */
  char *body;
  size_t size, got;
};

struct inbox {
  char gid[FL_ID_LEN];
  char **groups;
  size_t ngroups;
  struct chan ch;
  int consuming;
  char last_why[WHY_LEN]; /* the last failure reported, "" after a success */
};

struct fl_broker {
  /* Set at start, read-only afterwards. */
  uv_loop_t *loop;
  fl_broker_events ev;
  void *ctx;
  char *uri_buf; /* amqp_parse_url writes into it; ci points into it */
  struct amqp_connection_info ci;
  char *host_id;
  char *queue_type;
  char *ca_file;
  unsigned prefetch, heartbeat_s;
  long max_length, message_ttl_ms, queue_expires_ms;

  /* Loop thread only. */
  uv_async_t async;
  int up;             /* as last reported by on_state */
  size_t outstanding; /* publishes accepted and not yet reported */
  int stopped;        /* fl_broker_stop ran */
  int closed;         /* the async handle's close callback ran */
  int free_on_close;
  size_t ninboxes_loop; /* inboxes added minus removed, for FL_EFULL */
  struct inbox_name {
    char gid[FL_ID_LEN];
  } * loop_inboxes;

  /* Shared, under mu. */
  uv_mutex_t mu;
  uv_cond_t space; /* signalled when the loop took events */
  struct ring cmds;
  struct ring events;
  int stopping;
  int wake[2]; /* pipe: loop -> thread "commands waiting" */

  /* Broker thread only. */
  uv_thread_t thread;
  amqp_connection_state_t conn;
  int t_up; /* what the thread last reported: 1 up, 0 down, -1 nothing yet */
  char t_why[WHY_LEN];
  char err[WHY_LEN]; /* why the last inbox operation lost the connection */
  uint16_t epoch;    /* bumped on every channel open */
  uint16_t next_ch;
  uint16_t ch_max;
  struct chan pub, sys;
  struct chan *chans[CH_MAX + 1];
  struct inbox *inboxes[FL_BROKER_MAX_INBOXES];
  size_t ninboxes;
  struct ring pending; /* publishes on the wire, by sequence; NULL = settled */
  uint64_t head_seq;   /* sequence number of pending's head */
  uint64_t next_seq;
};

/* ---- items and rings ---- */

static void item_free(struct item *it) {
  if (!it)
    return;
  for (size_t i = 0; i < it->ngroups; i++)
    fl_free(it->groups[i]);
  fl_free(it->groups);
  fl_free(it->body);
  fl_free(it);
}

static int ring_init(struct ring *r, size_t cap) {
  r->v = fl_calloc(cap, sizeof(*r->v));
  r->cap = cap;
  r->head = r->n = 0;
  return r->v ? 0 : FL_ENOMEM;
}

static int ring_push(struct ring *r, struct item *it) {
  if (r->n == r->cap)
    return FL_EFULL;
  r->v[(r->head + r->n) % r->cap] = it;
  r->n++;
  return 0;
}

static struct item *ring_pop(struct ring *r) {
  if (r->n == 0)
    return NULL;
  struct item *it = r->v[r->head];
  r->head = (r->head + 1) % r->cap;
  r->n--;
  return it;
}

static struct item **ring_at(struct ring *r, size_t i) { return &r->v[(r->head + i) % r->cap]; }

static void ring_free(struct ring *r) {
  struct item *it;
  if (!r->v)
    return;
  while (r->n) {
    it = ring_pop(r);
    item_free(it);
  }
  fl_free(r->v);
  r->v = NULL;
}

static void copy_str(char *dst, size_t n, const char *src) {
  snprintf(dst, n, "%s", src ? src : "");
}

static void copy_bytes(char *dst, size_t n, amqp_bytes_t b) {
  size_t len = b.len < n - 1 ? b.len : n - 1;
  if (len)
    memcpy(dst, b.bytes, len);
  dst[len] = '\0';
}

static uint64_t now_ms(void) { return (uint64_t)fl_mono_ms(); }

/* ---- the envelope as AMQP headers ---- */

/* Fills entries (FL_ENVELOPE_NFIELDS of them) with env's non-empty fields,
 * in table order; the entries borrow env's strings. Returns how many. */
static int env_to_table(const fl_envelope *env, amqp_table_entry_t *entries) {
  int n = 0;
  for (size_t i = 0; i < FL_ENVELOPE_NFIELDS; i++) {
    const fl_envelope_field *f = &fl_envelope_fields[i];
    const char *val = fl_envelope_get(env, f);
    if (!val[0])
      continue;
    entries[n].key = amqp_cstring_bytes(f->key);
    entries[n].value.kind = AMQP_FIELD_KIND_UTF8;
    entries[n].value.value.bytes = amqp_cstring_bytes(val);
    n++;
  }
  return n;
}

/* Reads the envelope fields from a headers table. Unknown headers and
 * non-string values are ignored (rolling upgrades within a major version);
 * a field too long for its slot makes the message malformed. Returns NULL or
 * the reason it is malformed. */
static const char *env_from_table(const amqp_table_t *t, fl_envelope *env) {
  memset(env, 0, sizeof(*env));
  for (int e = 0; t && e < t->num_entries; e++) {
    const amqp_table_entry_t *ent = &t->entries[e];
    if (ent->value.kind != AMQP_FIELD_KIND_UTF8 && ent->value.kind != AMQP_FIELD_KIND_BYTES)
      continue;
    const fl_envelope_field *f = fl_envelope_field_find(ent->key.bytes, ent->key.len);
    if (!f)
      continue;
    amqp_bytes_t v = ent->value.value.bytes;
    int rc = fl_envelope_set(env, f, v.bytes, v.len);
    if (rc == FL_ETOOBIG)
      return "an envelope header is longer than its field allows";
    if (rc)
      return "an envelope header contains a NUL byte";
  }
  return NULL;
}

/* ---- thread -> loop ---- */

static int is_stopping(fl_broker *b) {
  uv_mutex_lock(&b->mu);
  int s = b->stopping;
  uv_mutex_unlock(&b->mu);
  return s;
}

/* Queues an event for the loop. Waits (on this thread) while the queue is
 * full, so a slow loop slows the socket reads instead of growing memory;
 * while stopping it never waits, as the loop is joining us (the overflow is
 * bounded by the outstanding publishes). Takes ownership of it. */
static void emit(fl_broker *b, struct item *it) {
  uv_mutex_lock(&b->mu);
  while (b->events.n >= b->events.cap && !b->stopping)
    uv_cond_timedwait(&b->space, &b->mu, 100u * 1000u * 1000u);
  if (b->events.n >= b->events.cap) {
    size_t ncap = b->events.cap * 2;
    struct item **nv = fl_calloc(ncap, sizeof(*nv));
    if (nv) {
      for (size_t i = 0; i < b->events.n; i++)
        nv[i] = *ring_at(&b->events, i);
      fl_free(b->events.v);
      b->events.v = nv;
      b->events.cap = ncap;
      b->events.head = 0;
    }
  }
  int rc = ring_push(&b->events, it);
  uv_mutex_unlock(&b->mu);
  if (rc != 0) {
    /* Only reachable while stopping and out of memory. */
    fl_error(it->env.trace_id, "broker: dropped an event while stopping (out of memory)");
    item_free(it);
    return;
  }
  uv_async_send(&b->async);
}

static void emit_state(fl_broker *b, int up, const char *why) {
  if (b->t_up == up && (up || strcmp(b->t_why, why) == 0))
    return;
  b->t_up = up;
  copy_str(b->t_why, sizeof(b->t_why), why);
  struct item *it = fl_calloc(1, sizeof(*it));
  if (!it) {
    fl_error(NULL, "broker: out of memory reporting link %s", up ? "up" : "down");
    return;
  }
  it->type = EV_STATE;
  it->up = up;
  copy_str(it->why, sizeof(it->why), why);
  emit(b, it);
}

static void emit_inbox(fl_broker *b, const char *gid, int status, const char *why) {
  struct item *it = fl_calloc(1, sizeof(*it));
  if (!it) {
    fl_error(NULL, "broker: out of memory reporting inbox %s", gid);
    return;
  }
  it->type = EV_INBOX;
  copy_str(it->gid, sizeof(it->gid), gid);
  it->status = status;
  copy_str(it->why, sizeof(it->why), why);
  emit(b, it);
}

static void publish_done(fl_broker *b, struct item *it, int status, const char *why) {
  it->done = 1;
  it->status = status;
  copy_str(it->why, sizeof(it->why), why);
  fl_free(it->body);
  it->body = NULL;
  emit(b, it);
}

/* ---- AMQP helpers (broker thread) ---- */

/* Turns the outcome of the last RPC into 0 (ok), 1 (the server closed
 * channel ch: why says why, the channel is gone) or -1 (the connection is
 * gone: why says why). */
static int rpc_result(fl_broker *b, uint16_t ch, const char *what, char *why, size_t n) {
  amqp_rpc_reply_t r = amqp_get_rpc_reply(b->conn);
  switch (r.reply_type) {
  case AMQP_RESPONSE_NORMAL:
    return 0;
  case AMQP_RESPONSE_LIBRARY_EXCEPTION:
    snprintf(why, n, "%s: %s", what, amqp_error_string2(r.library_error));
    return -1;
  case AMQP_RESPONSE_SERVER_EXCEPTION:
    if (r.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
      amqp_channel_close_t *m = r.reply.decoded;
      amqp_channel_close_ok_t ok = {0};
      snprintf(why, n, "%s: %.*s", what, (int)m->reply_text.len, (const char *)m->reply_text.bytes);
      if (amqp_send_method(b->conn, ch, AMQP_CHANNEL_CLOSE_OK_METHOD, &ok) != AMQP_STATUS_OK)
        return -1;
      return 1;
    }
    if (r.reply.id == AMQP_CONNECTION_CLOSE_METHOD) {
      amqp_connection_close_t *m = r.reply.decoded;
      amqp_connection_close_ok_t ok = {0};
      snprintf(why, n, "%s: the broker closed the connection: %.*s", what, (int)m->reply_text.len,
               (const char *)m->reply_text.bytes);
      amqp_send_method(b->conn, 0, AMQP_CONNECTION_CLOSE_OK_METHOD, &ok);
      return -1;
    }
    snprintf(why, n, "%s: unexpected reply method 0x%08x", what, (unsigned)r.reply.id);
    return -1;
  default:
    snprintf(why, n, "%s: no reply", what);
    return -1;
  }
}

static void chan_reset(fl_broker *b, struct chan *c) {
  if (c->id && b->chans[c->id] == c)
    b->chans[c->id] = NULL;
  fl_free(c->body);
  c->body = NULL;
  c->open = 0;
  c->content = 0;
  c->id = 0;
}

/* Opens channel id for c. Returns as rpc_result. */
static int chan_open(fl_broker *b, struct chan *c, uint16_t id, char *why, size_t n) {
  c->id = id;
  c->epoch = ++b->epoch ? b->epoch : ++b->epoch; /* 0 never names a channel */
  c->content = 0;
  amqp_channel_open(b->conn, id);
  int rc = rpc_result(b, id, "channel.open", why, n);
  if (rc != 0) {
    c->id = 0;
    return rc;
  }
  c->open = 1;
  b->chans[id] = c;
  return 0;
}

/* A free channel number for an inbox, round robin so a closed channel's
 * number is not reused while frames for it may still be queued. */
static uint16_t chan_alloc(fl_broker *b) {
  for (unsigned tries = 0; tries < b->ch_max; tries++) {
    uint16_t id = b->next_ch;
    b->next_ch = b->next_ch >= b->ch_max ? CH_FIRST_INBOX : b->next_ch + 1;
    if (id >= CH_FIRST_INBOX && !b->chans[id])
      return id;
  }
  return 0;
}

static amqp_table_entry_t entry_str(const char *k, const char *v) {
  amqp_table_entry_t e;
  e.key = amqp_cstring_bytes(k);
  e.value.kind = AMQP_FIELD_KIND_UTF8;
  e.value.value.bytes = amqp_cstring_bytes(v);
  return e;
}

static amqp_table_entry_t entry_long(const char *k, long v) {
  amqp_table_entry_t e;
  e.key = amqp_cstring_bytes(k);
  e.value.kind = AMQP_FIELD_KIND_I64;
  e.value.value.i64 = v;
  return e;
}

/* ---- topology ---- */

static int declare_exchange(fl_broker *b, const char *name, const char *type, char *why, size_t n) {
  char what[96];
  snprintf(what, sizeof(what), "declare exchange %s", name);
  amqp_exchange_declare(b->conn, CH_SYSTEM, amqp_cstring_bytes(name), amqp_cstring_bytes(type), 0,
                        1, 0, 0, amqp_empty_table);
  return rpc_result(b, CH_SYSTEM, what, why, n);
}

static int bind_queue(fl_broker *b, uint16_t ch, const char *q, const char *ex, const char *key,
                      char *why, size_t n) {
  char what[SHORTSTR + 64];
  snprintf(what, sizeof(what), "bind %s to %s key %s", q, ex, key);
  amqp_queue_bind(b->conn, ch, amqp_cstring_bytes(q), amqp_cstring_bytes(ex),
                  amqp_cstring_bytes(key), amqp_empty_table);
  return rpc_result(b, ch, what, why, n);
}

static int consume(fl_broker *b, uint16_t ch, const char *q, const char *tag, char *why, size_t n) {
  char what[SHORTSTR + 32];
  snprintf(what, sizeof(what), "consume %s", q);
  amqp_basic_consume(b->conn, ch, amqp_cstring_bytes(q), amqp_cstring_bytes(tag), 0, 0, 1,
                     amqp_empty_table);
  return rpc_result(b, ch, what, why, n);
}

/* Declares the shared topology and this gateway's control and roster queues
 * on the system channel, and consumes both. Any failure here fails the whole
 * connection attempt (returns nonzero, why set). */
static int declare_topology(fl_broker *b, char *why, size_t n) {
  char q[SHORTSTR];
  int rc;
  if ((rc = declare_exchange(b, FL_EX_MSG, FL_EX_MSG_TYPE, why, n)) ||
      (rc = declare_exchange(b, FL_EX_ROSTER, FL_EX_ROSTER_TYPE, why, n)) ||
      (rc = declare_exchange(b, FL_EX_CONTROL, FL_EX_CONTROL_TYPE, why, n)) ||
      (rc = declare_exchange(b, FL_EX_DLX, FL_EX_DLX_TYPE, why, n)))
    return rc;

  amqp_table_entry_t dlq_args[] = {entry_long("x-max-length", FL_BROKER_DLQ_MAX_LENGTH)};
  amqp_table_t dlq_table = {1, dlq_args};
  amqp_queue_declare(b->conn, CH_SYSTEM, amqp_cstring_bytes(FL_Q_DLQ), 0, 1, 0, 0, dlq_table);
  if ((rc = rpc_result(b, CH_SYSTEM, "declare queue " FL_Q_DLQ, why, n)) ||
      (rc = bind_queue(b, CH_SYSTEM, FL_Q_DLQ, FL_EX_DLX, FL_KEY_DLQ, why, n)))
    return rc;

  amqp_basic_qos(b->conn, CH_SYSTEM, 0, (uint16_t)b->prefetch, 0);
  if ((rc = rpc_result(b, CH_SYSTEM, "basic.qos", why, n)))
    return rc;

  fl_topology_control_queue(q, sizeof(q), b->host_id);
  amqp_queue_declare(b->conn, CH_SYSTEM, amqp_cstring_bytes(q), 0, 1, 0, 0, amqp_empty_table);
  if ((rc = rpc_result(b, CH_SYSTEM, "declare control queue", why, n)) ||
      (rc = bind_queue(b, CH_SYSTEM, q, FL_EX_CONTROL, b->host_id, why, n)) ||
      (rc = consume(b, CH_SYSTEM, q, TAG_CONTROL, why, n)))
    return rc;

  fl_topology_roster_queue(q, sizeof(q), b->host_id);
  amqp_queue_declare(b->conn, CH_SYSTEM, amqp_cstring_bytes(q), 0, 0, 1, 1, amqp_empty_table);
  if ((rc = rpc_result(b, CH_SYSTEM, "declare roster queue", why, n)) ||
      (rc = bind_queue(b, CH_SYSTEM, q, FL_EX_ROSTER, FL_KEY_ROSTER_ALL, why, n)) ||
      (rc = consume(b, CH_SYSTEM, q, TAG_ROSTER, why, n)))
    return rc;
  return 0;
}

/* ---- inboxes ---- */

static void inbox_free(struct inbox *ib) {
  if (!ib)
    return;
  for (size_t i = 0; i < ib->ngroups; i++)
    fl_free(ib->groups[i]);
  fl_free(ib->groups);
  fl_free(ib->ch.body);
  fl_free(ib);
}

static struct inbox *inbox_find(fl_broker *b, const char *gid, size_t *idx) {
  for (size_t i = 0; i < b->ninboxes; i++) {
    if (strcmp(b->inboxes[i]->gid, gid) == 0) {
      if (idx)
        *idx = i;
      return b->inboxes[i];
    }
  }
  return NULL;
}

static int has_group(char *const *groups, size_t n, const char *g) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(groups[i], g) == 0)
      return 1;
  return 0;
}

/* Declares, binds and consumes one inbox on a fresh channel. Returns 0, or
 * -1 when the connection is gone (b->err set); a channel-level failure is
 * reported through on_inbox and returns 0, as the link itself is fine. A
 * retry (quiet) reports a failure only when its reason changed. */
static int inbox_setup(fl_broker *b, struct inbox *ib, int quiet) {
  char why[WHY_LEN], q[SHORTSTR], key[SHORTSTR];
  int rc;
  uint16_t id = chan_alloc(b);
  if (!id) {
    emit_inbox(b, ib->gid, FL_EBROKER, "no free AMQP channel for this inbox");
    return 0;
  }
  if ((rc = chan_open(b, &ib->ch, id, why, sizeof(why))))
    goto fail;
  fl_topology_inbox_queue(q, sizeof(q), ib->gid);
  amqp_table_entry_t args[6];
  int na = 0;
  args[na++] = entry_str("x-dead-letter-exchange", FL_EX_DLX);
  args[na++] = entry_long("x-max-length", b->max_length);
  /* Overflow dead-letters (and nacks the publish) instead of dropping the
   * oldest message silently. */
  args[na++] = entry_str("x-overflow", "reject-publish-dlx");
  args[na++] = entry_long("x-message-ttl", b->message_ttl_ms);
  args[na++] = entry_long("x-expires", b->queue_expires_ms);
  args[na++] = entry_str("x-queue-type", b->queue_type);
  amqp_table_t table = {na, args};
  amqp_queue_declare(b->conn, id, amqp_cstring_bytes(q), 0, 1, 0, 0, table);
  if ((rc = rpc_result(b, id, "declare inbox", why, sizeof(why))))
    goto fail;
  if ((rc = bind_queue(b, id, q, FL_EX_MSG, ib->gid, why, sizeof(why))) ||
      (rc = bind_queue(b, id, q, FL_EX_MSG, FL_KEY_BROADCAST_ALL, why, sizeof(why))))
    goto fail;
  for (size_t i = 0; i < ib->ngroups; i++) {
    fl_topology_broadcast_key(key, sizeof(key), ib->groups[i]);
    if ((rc = bind_queue(b, id, q, FL_EX_MSG, key, why, sizeof(why))))
      goto fail;
  }
  amqp_basic_qos(b->conn, id, 0, (uint16_t)b->prefetch, 0);
  if ((rc = rpc_result(b, id, "basic.qos", why, sizeof(why))) ||
      (rc = consume(b, id, q, ib->gid, why, sizeof(why))))
    goto fail;
  ib->ch.inbox = ib;
  ib->consuming = 1;
  ib->last_why[0] = '\0';
  fl_info(NULL, "broker: consuming %s", q);
  emit_inbox(b, ib->gid, 0, "");
  return 0;
fail:
  ib->consuming = 0;
  if (rc < 0) {
    chan_reset(b, &ib->ch);
    copy_str(b->err, sizeof(b->err), why);
    return -1;
  }
  /* The server closed the channel: this inbox only. */
  chan_reset(b, &ib->ch);
  if (quiet && strcmp(ib->last_why, why) == 0)
    return 0;
  copy_str(ib->last_why, sizeof(ib->last_why), why);
  fl_error(NULL, "broker: inbox %s is not consumed (retrying every %d s): %s", ib->gid,
           INBOX_RETRY_MS / 1000, why);
  emit_inbox(b, ib->gid, FL_EBROKER, why);
  return 0;
}

/* Closes an inbox's channel (cancelling its consumer; unacked deliveries go
 * back to the queue). Returns 0 or -1 when the connection is gone. */
static int inbox_close(fl_broker *b, struct inbox *ib) {
  char why[WHY_LEN];
  if (!ib->ch.open)
    return 0;
  uint16_t id = ib->ch.id;
  chan_reset(b, &ib->ch);
  ib->consuming = 0;
  amqp_channel_close(b->conn, id, AMQP_REPLY_SUCCESS);
  return rpc_result(b, id, "channel.close", why, sizeof(why)) < 0 ? -1 : 0;
}

/* Adds or updates gid in the registry, and sets it up when connected.
 * Takes the groups from it. Returns 0 or -1 (connection gone). */
static int cmd_add_inbox(fl_broker *b, struct item *it) {
  struct inbox *ib = inbox_find(b, it->gid, NULL);
  char why[WHY_LEN], q[SHORTSTR], key[SHORTSTR];
  if (ib) {
    int rc = 0;
    /* Same gid again: rebind for the new groups. */
    if (b->conn && ib->consuming) {
      fl_topology_inbox_queue(q, sizeof(q), ib->gid);
      for (size_t i = 0; i < it->ngroups && rc == 0; i++) {
        if (has_group(ib->groups, ib->ngroups, it->groups[i]))
          continue;
        fl_topology_broadcast_key(key, sizeof(key), it->groups[i]);
        rc = bind_queue(b, ib->ch.id, q, FL_EX_MSG, key, why, sizeof(why));
      }
      for (size_t i = 0; i < ib->ngroups && rc == 0; i++) {
        if (has_group(it->groups, it->ngroups, ib->groups[i]))
          continue;
        fl_topology_broadcast_key(key, sizeof(key), ib->groups[i]);
        amqp_queue_unbind(b->conn, ib->ch.id, amqp_cstring_bytes(q), amqp_cstring_bytes(FL_EX_MSG),
                          amqp_cstring_bytes(key), amqp_empty_table);
        rc = rpc_result(b, ib->ch.id, "unbind", why, sizeof(why));
      }
    }
    for (size_t i = 0; i < ib->ngroups; i++)
      fl_free(ib->groups[i]);
    fl_free(ib->groups);
    ib->groups = it->groups;
    ib->ngroups = it->ngroups;
    it->groups = NULL;
    it->ngroups = 0;
    if (rc < 0) {
      copy_str(b->err, sizeof(b->err), why);
      return -1;
    }
    if (rc > 0) {
      chan_reset(b, &ib->ch);
      ib->consuming = 0;
      emit_inbox(b, ib->gid, FL_EBROKER, why);
      return 0;
    }
    if (b->conn && !ib->consuming)
      return inbox_setup(b, ib, 0);
    if (b->conn)
      emit_inbox(b, ib->gid, 0, "");
    return 0;
  }
  if (b->ninboxes >= FL_BROKER_MAX_INBOXES) {
    /* The loop counts too, so this is only reachable by a bug. */
    fl_error(NULL, "broker: too many inboxes; %s not added", it->gid);
    return 0;
  }
  ib = fl_calloc(1, sizeof(*ib));
  if (!ib) {
    fl_error(NULL, "broker: out of memory adding inbox %s", it->gid);
    emit_inbox(b, it->gid, FL_ENOMEM, "out of memory");
    return 0;
  }
  copy_str(ib->gid, sizeof(ib->gid), it->gid);
  ib->groups = it->groups;
  ib->ngroups = it->ngroups;
  it->groups = NULL;
  it->ngroups = 0;
  b->inboxes[b->ninboxes++] = ib;
  return b->conn ? inbox_setup(b, ib, 0) : 0;
}

static int cmd_remove_inbox(fl_broker *b, struct item *it) {
  size_t idx;
  struct inbox *ib = inbox_find(b, it->gid, &idx);
  int rc = 0;
  if (!ib)
    return 0;
  if (b->conn)
    rc = inbox_close(b, ib);
  b->inboxes[idx] = b->inboxes[--b->ninboxes];
  inbox_free(ib);
  return rc;
}

/* ---- connect / teardown ---- */

static void link_teardown(fl_broker *b, int graceful) {
  if (b->conn) {
    if (graceful)
      amqp_connection_close(b->conn, AMQP_REPLY_SUCCESS);
    amqp_destroy_connection(b->conn);
    b->conn = NULL;
  }
  chan_reset(b, &b->pub);
  chan_reset(b, &b->sys);
  for (size_t i = 0; i < b->ninboxes; i++) {
    chan_reset(b, &b->inboxes[i]->ch);
    b->inboxes[i]->consuming = 0;
  }
  memset(b->chans, 0, sizeof(b->chans));
}

/* Fails every publish on the wire with status/why. */
static void fail_pending(fl_broker *b, int status, const char *why) {
  while (b->pending.n) {
    struct item *it = ring_pop(&b->pending);
    if (it)
      publish_done(b, it, status, why);
  }
  b->head_seq = b->next_seq = 1;
}

/* The connection failed: report down at once, fail what was in flight, drop
 * the connection. */
static void link_lost(fl_broker *b, const char *why) {
  char w[WHY_LEN];
  copy_str(w, sizeof(w), why);
  if (b->t_up == 1)
    fl_error(NULL, "broker: link down: %s", w);
  emit_state(b, 0, w);
  fail_pending(b, FL_EBROKER, "broker connection lost before the publish was confirmed");
  link_teardown(b, 0);
}

static int link_connect(fl_broker *b, char *why, size_t n) {
  amqp_socket_t *sock;
  struct timeval tv = {CONNECT_TIMEOUT_S, 0};
  struct timeval rpc_tv = {RPC_TIMEOUT_S, 0};
  int rc;

  b->conn = amqp_new_connection();
  if (!b->conn) {
    snprintf(why, n, "out of memory");
    return -1;
  }
  if (b->ci.ssl) {
    sock = amqp_ssl_socket_new(b->conn);
    if (!sock) {
      snprintf(why, n, "cannot create a TLS socket");
      return -1;
    }
    const char *ca = b->ca_file ? b->ca_file : SYSTEM_CA_FILE;
    if ((rc = amqp_ssl_socket_set_cacert(sock, ca)) != AMQP_STATUS_OK) {
      snprintf(why, n, "cannot load CA file %s: %s", ca, amqp_error_string2(rc));
      return -1;
    }
    amqp_ssl_socket_set_verify_peer(sock, 1);
    amqp_ssl_socket_set_verify_hostname(sock, 1);
  } else {
    sock = amqp_tcp_socket_new(b->conn);
    if (!sock) {
      snprintf(why, n, "cannot create a TCP socket");
      return -1;
    }
  }
  amqp_set_handshake_timeout(b->conn, &tv);
  amqp_set_rpc_timeout(b->conn, &rpc_tv);
  if ((rc = amqp_socket_open_noblock(sock, b->ci.host, b->ci.port, &tv)) != AMQP_STATUS_OK) {
    snprintf(why, n, "cannot connect to %s:%d: %s", b->ci.host, b->ci.port, amqp_error_string2(rc));
    return -1;
  }
  char cname[SHORTSTR];
  snprintf(cname, sizeof(cname), "fleetd %s", b->host_id);
  amqp_table_entry_t props_e[] = {entry_str("connection_name", cname)};
  amqp_table_t props = {1, props_e};
  /* channel_max 0: take the broker's (RabbitMQ: 2047). */
  amqp_rpc_reply_t r =
      amqp_login_with_properties(b->conn, b->ci.vhost, 0, FL_BROKER_FRAME_MAX, (int)b->heartbeat_s,
                                 &props, AMQP_SASL_METHOD_PLAIN, b->ci.user, b->ci.password);
  if (r.reply_type != AMQP_RESPONSE_NORMAL) {
    if (r.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION &&
        r.reply.id == AMQP_CONNECTION_CLOSE_METHOD) {
      amqp_connection_close_t *m = r.reply.decoded;
      snprintf(why, n, "login to vhost %s refused: %.*s", b->ci.vhost, (int)m->reply_text.len,
               (const char *)m->reply_text.bytes);
    } else {
      snprintf(why, n, "login to %s:%d vhost %s failed (check user, password and vhost): %s",
               b->ci.host, b->ci.port, b->ci.vhost,
               r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION ? amqp_error_string2(r.library_error)
                                                               : "refused");
    }
    return -1;
  }
  int cm = amqp_get_channel_max(b->conn);
  b->ch_max = (uint16_t)(cm <= 0 || cm > CH_MAX ? CH_MAX : cm);
  b->next_ch = CH_FIRST_INBOX;

  if ((rc = chan_open(b, &b->pub, CH_PUBLISH, why, n)))
    return -1;
  amqp_confirm_select(b->conn, CH_PUBLISH);
  if ((rc = rpc_result(b, CH_PUBLISH, "confirm.select", why, n)))
    return -1;
  b->head_seq = b->next_seq = 1;
  if ((rc = chan_open(b, &b->sys, CH_SYSTEM, why, n)))
    return -1;
  if ((rc = declare_topology(b, why, n)))
    return -1;
  for (size_t i = 0; i < b->ninboxes; i++) {
    if (inbox_setup(b, b->inboxes[i], 0) < 0) {
      copy_str(why, n, b->err);
      return -1;
    }
  }
  return 0;
}

/* ---- commands (broker thread) ---- */

static int do_publish(fl_broker *b, struct item *it) {
  amqp_table_entry_t hdr[FL_ENVELOPE_NFIELDS];
  amqp_basic_properties_t p;
  memset(&p, 0, sizeof(p));
  p._flags = AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG |
             AMQP_BASIC_TIMESTAMP_FLAG | AMQP_BASIC_HEADERS_FLAG;
  p.content_type = amqp_cstring_bytes("text/plain; charset=utf-8");
  p.delivery_mode = AMQP_DELIVERY_PERSISTENT;
  p.timestamp = (uint64_t)time(NULL);
  if (it->env.msg_id[0]) {
    p._flags |= AMQP_BASIC_MESSAGE_ID_FLAG;
    p.message_id = amqp_cstring_bytes(it->env.msg_id);
  }
  p.headers.num_entries = env_to_table(&it->env, hdr);
  p.headers.entries = hdr;
  amqp_bytes_t body = {it->len, it->body};
  it->seq = b->next_seq++;
  /* Pending before sending: if the send fails, link_lost reports it. */
  ring_push(&b->pending, it);
  int rc = amqp_basic_publish(b->conn, CH_PUBLISH, amqp_cstring_bytes(it->exchange),
                              amqp_cstring_bytes(it->routing_key), it->mandatory != 0, 0, &p, body);
  /* The broker has it (or the link is gone); only the confirm matters now. */
  fl_free(it->body);
  it->body = NULL;
  if (rc != AMQP_STATUS_OK) {
    char why[WHY_LEN];
    snprintf(why, sizeof(why), "publish failed: %s", amqp_error_string2(rc));
    link_lost(b, why);
    return -1;
  }
  return 0;
}

/* Finds the channel a loop tag names, or NULL if that incarnation is gone. */
static struct chan *tag_chan(fl_broker *b, uint64_t tag) {
  uint16_t id = (uint16_t)(tag >> 32);
  uint16_t epoch = (uint16_t)(tag >> 48);
  if (id == 0 || id > CH_MAX)
    return NULL;
  struct chan *c = b->chans[id];
  return c && c->open && c->epoch == epoch ? c : NULL;
}

static int do_settle(fl_broker *b, struct item *it) {
  struct chan *c = b->conn ? tag_chan(b, it->tag) : NULL;
  uint64_t dtag = it->tag & 0xffffffffu;
  int rc;
  if (!c) {
    fl_debug(NULL, "broker: dropped a settle for a delivery of a closed channel");
    return 0;
  }
  if (it->type == CMD_ACK)
    rc = amqp_basic_ack(b->conn, c->id, dtag, 0);
  else
    rc = amqp_basic_reject(b->conn, c->id, dtag, it->requeue != 0);
  if (rc != AMQP_STATUS_OK) {
    char why[WHY_LEN];
    snprintf(why, sizeof(why), "ack/reject failed: %s", amqp_error_string2(rc));
    link_lost(b, why);
    return -1;
  }
  return 0;
}

/* Serves up to BATCH commands. */
static void serve_commands(fl_broker *b) {
  struct item *batch[BATCH];
  size_t n = 0;
  char drain[64];
  while (read(b->wake[0], drain, sizeof(drain)) > 0) {
  }
  uv_mutex_lock(&b->mu);
  while (n < BATCH && b->cmds.n)
    batch[n++] = ring_pop(&b->cmds);
  uv_mutex_unlock(&b->mu);
  if (n == BATCH) {
    /* More may wait: make sure the next poll returns at once. */
    if (write(b->wake[1], "x", 1) < 0) {
      /* The pipe is full, so it is readable anyway. */
    }
  }
  for (size_t i = 0; i < n; i++) {
    struct item *it = batch[i];
    switch (it->type) {
    case CMD_PUBLISH:
      if (!b->conn)
        publish_done(b, it, FL_EBROKER, "the broker link is down");
      else
        do_publish(b, it);
      continue; /* the item now belongs to pending or the event queue */
    case CMD_ACK:
    case CMD_REJECT:
      do_settle(b, it);
      break;
    case CMD_ADD_INBOX:
      if (cmd_add_inbox(b, it) < 0)
        link_lost(b, b->err);
      break;
    case CMD_REMOVE_INBOX:
      if (cmd_remove_inbox(b, it) < 0)
        link_lost(b, "the connection failed while closing an inbox channel");
      break;
    default:
      break;
    }
    item_free(it);
  }
}

/* ---- frames (broker thread) ---- */

/* Settles publishes up to seq (multiple) or just seq. */
static void confirm(fl_broker *b, uint64_t seq, int multiple, int ack) {
  if (seq < b->head_seq)
    return;
  uint64_t from = multiple ? b->head_seq : seq;
  for (uint64_t s = from; s <= seq && s - b->head_seq < b->pending.n; s++) {
    struct item **slot = ring_at(&b->pending, (size_t)(s - b->head_seq));
    struct item *it = *slot;
    if (!it)
      continue;
    *slot = NULL;
    if (!ack) {
      publish_done(b, it, FL_EBROKER,
                   "the broker refused the message (nack): the inbox may be full");
    } else if (it->returned) {
      char why[WHY_LEN];
      snprintf(why, sizeof(why), "unroutable: no inbox bound to key %s", it->routing_key);
      publish_done(b, it, FL_EBROKER, why);
    } else {
      publish_done(b, it, 0, "");
    }
  }
  while (b->pending.n && *ring_at(&b->pending, 0) == NULL) {
    ring_pop(&b->pending);
    b->head_seq++;
  }
}

/* A basic.return's content is complete: mark the publish it returns. Returns
 * carry no sequence number, so match the oldest unconfirmed mandatory
 * publish with the same exchange, key and message id; a return always
 * precedes its confirm. */
static void returned(fl_broker *b, struct chan *c) {
  for (size_t i = 0; i < b->pending.n; i++) {
    struct item *it = *ring_at(&b->pending, i);
    if (it && it->mandatory && !it->returned && strcmp(it->exchange, c->exchange) == 0 &&
        strcmp(it->routing_key, c->routing_key) == 0 && strcmp(it->env.msg_id, c->msg_id) == 0) {
      it->returned = 1;
      fl_warn(it->env.trace_id, "broker: %s returned to key %s: %s",
              it->env.msg_id[0] ? it->env.msg_id : "message", it->routing_key, c->reply_text);
      return;
    }
  }
}

/* A delivery's content is complete: hand it to the loop, or dead-letter it
 * here when it cannot even be parsed. */
static void delivered(fl_broker *b, struct chan *c) {
  if (c->dtag > 0xffffffffu) {
    /* Tags carry 32 bits of the broker's tag; four billion deliveries on one
     * channel means the link is recycled rather than risk a wrong ack. */
    link_lost(b, "delivery tag space of a channel exhausted; reconnecting");
    return;
  }
  if (c->bad) {
    fl_error(c->env.trace_id, "broker: dead-lettering a message from %s key %s: %s", c->exchange,
             c->routing_key, c->bad);
    if (amqp_basic_reject(b->conn, c->id, c->dtag, 0) != AMQP_STATUS_OK)
      link_lost(b, "reject failed");
    return;
  }
  struct item *it = fl_calloc(1, sizeof(*it));
  if (!it) {
    fl_error(c->env.trace_id, "broker: out of memory; message requeued");
    amqp_basic_reject(b->conn, c->id, c->dtag, 1);
    return;
  }
  it->type = EV_DELIVERY;
  it->tag = (uint64_t)c->epoch << 48 | (uint64_t)c->id << 32 | c->dtag;
  it->source = c->source;
  it->redelivered = c->redelivered;
  copy_str(it->exchange, sizeof(it->exchange), c->exchange);
  copy_str(it->routing_key, sizeof(it->routing_key), c->routing_key);
  if (c->inbox)
    copy_str(it->gid, sizeof(it->gid), c->inbox->gid);
  it->env = c->env;
  it->body = c->body;
  it->len = c->size;
  c->body = NULL;
  emit(b, it);
}

static void content_done(fl_broker *b, struct chan *c) {
  c->content = 0;
  if (c->is_return)
    returned(b, c);
  else
    delivered(b, c);
  if (c->body) {
    fl_free(c->body);
    c->body = NULL;
  }
}

/* Handles one frame. Returns 0, or -1 after link_lost. */
static int handle_frame(fl_broker *b, amqp_frame_t *f) {
  char why[WHY_LEN];
  if (f->channel == 0) {
    if (f->frame_type == AMQP_FRAME_METHOD &&
        f->payload.method.id == AMQP_CONNECTION_CLOSE_METHOD) {
      amqp_connection_close_t *m = f->payload.method.decoded;
      amqp_connection_close_ok_t ok = {0};
      snprintf(why, sizeof(why), "the broker closed the connection: %.*s", (int)m->reply_text.len,
               (const char *)m->reply_text.bytes);
      amqp_send_method(b->conn, 0, AMQP_CONNECTION_CLOSE_OK_METHOD, &ok);
      link_lost(b, why);
      return -1;
    }
    if (f->frame_type == AMQP_FRAME_METHOD &&
        f->payload.method.id == AMQP_CONNECTION_BLOCKED_METHOD)
      fl_warn(NULL, "broker: the broker blocks publishing (resource alarm)");
    return 0;
  }
  struct chan *c = b->chans[f->channel];
  if (!c || !c->open)
    return 0; /* a frame for a channel we closed */

  if (f->frame_type == AMQP_FRAME_METHOD) {
    switch (f->payload.method.id) {
    case AMQP_BASIC_ACK_METHOD: {
      amqp_basic_ack_t *m = f->payload.method.decoded;
      if (c == &b->pub)
        confirm(b, m->delivery_tag, m->multiple, 1);
      return 0;
    }
    case AMQP_BASIC_NACK_METHOD: {
      amqp_basic_nack_t *m = f->payload.method.decoded;
      if (c == &b->pub)
        confirm(b, m->delivery_tag, m->multiple, 0);
      return 0;
    }
    case AMQP_BASIC_RETURN_METHOD: {
      amqp_basic_return_t *m = f->payload.method.decoded;
      memset(c->msg_id, 0, sizeof(c->msg_id));
      c->is_return = 1;
      c->content = 1;
      copy_bytes(c->exchange, sizeof(c->exchange), m->exchange);
      copy_bytes(c->routing_key, sizeof(c->routing_key), m->routing_key);
      snprintf(c->reply_text, sizeof(c->reply_text), "%u %.*s", m->reply_code,
               (int)m->reply_text.len, (const char *)m->reply_text.bytes);
      return 0;
    }
    case AMQP_BASIC_DELIVER_METHOD: {
      amqp_basic_deliver_t *m = f->payload.method.decoded;
      c->is_return = 0;
      c->content = 1;
      c->dtag = m->delivery_tag;
      c->redelivered = m->redelivered;
      copy_bytes(c->exchange, sizeof(c->exchange), m->exchange);
      copy_bytes(c->routing_key, sizeof(c->routing_key), m->routing_key);
      if (c->inbox)
        c->source = FL_BROKER_INBOX;
      else
        c->source = (m->consumer_tag.len == strlen(TAG_CONTROL) &&
                     memcmp(m->consumer_tag.bytes, TAG_CONTROL, strlen(TAG_CONTROL)) == 0)
                        ? FL_BROKER_CONTROL
                        : FL_BROKER_ROSTER;
      return 0;
    }
    case AMQP_BASIC_CANCEL_METHOD:
      /* The broker cancelled a consumer (its queue was deleted). */
      if (c->inbox) {
        /* Close the channel; the retry declares the queue again. */
        struct inbox *ib = c->inbox;
        fl_error(NULL, "broker: the broker cancelled the consumer of inbox %s", ib->gid);
        copy_str(ib->last_why, sizeof(ib->last_why), "the broker cancelled the consumer");
        emit_inbox(b, ib->gid, FL_EBROKER, "the broker cancelled the consumer (queue deleted?)");
        if (inbox_close(b, ib) < 0) {
          link_lost(b, "the connection failed while closing a cancelled inbox");
          return -1;
        }
        return 0;
      }
      link_lost(b, "the broker cancelled a control or roster consumer");
      return -1;
    case AMQP_CHANNEL_CLOSE_METHOD: {
      amqp_channel_close_t *m = f->payload.method.decoded;
      amqp_channel_close_ok_t ok = {0};
      snprintf(why, sizeof(why), "the broker closed channel %u: %.*s", f->channel,
               (int)m->reply_text.len, (const char *)m->reply_text.bytes);
      amqp_send_method(b->conn, f->channel, AMQP_CHANNEL_CLOSE_OK_METHOD, &ok);
      if (c->inbox) {
        struct inbox *ib = c->inbox;
        chan_reset(b, c);
        ib->consuming = 0;
        fl_error(NULL, "broker: inbox %s: %s", ib->gid, why);
        emit_inbox(b, ib->gid, FL_EBROKER, why);
        return 0;
      }
      link_lost(b, why);
      return -1;
    }
    default:
      return 0;
    }
  }

  if (f->frame_type == AMQP_FRAME_HEADER && c->content == 1) {
    amqp_basic_properties_t *p = f->payload.properties.decoded;
    c->size = (size_t)f->payload.properties.body_size;
    c->got = 0;
    c->bad = NULL;
    fl_free(c->body);
    c->body = NULL;
    if (c->is_return) {
      if (p->_flags & AMQP_BASIC_MESSAGE_ID_FLAG)
        copy_bytes(c->msg_id, sizeof(c->msg_id), p->message_id);
      c->size = (size_t)f->payload.properties.body_size;
    } else {
      c->bad = env_from_table((p->_flags & AMQP_BASIC_HEADERS_FLAG) ? &p->headers : NULL, &c->env);
      if (!c->bad && f->payload.properties.body_size > FL_MAX_CONTENT)
        c->bad = "the body is larger than FL_MAX_CONTENT";
      if (!c->bad && c->size) {
        c->body = fl_malloc(c->size);
        if (!c->body)
          c->bad = "out of memory for the body";
      }
    }
    c->content = 2;
    if (c->size == 0)
      content_done(b, c);
    return b->conn ? 0 : -1;
  }

  if (f->frame_type == AMQP_FRAME_BODY && c->content == 2) {
    amqp_bytes_t frag = f->payload.body_fragment;
    if (frag.len > c->size - c->got) {
      link_lost(b, "the broker sent more body than announced");
      return -1;
    }
    if (c->body)
      memcpy(c->body + c->got, frag.bytes, frag.len);
    c->got += frag.len;
    if (c->got == c->size)
      content_done(b, c);
    return b->conn ? 0 : -1;
  }
  return 0;
}

/* Waits for frames or commands (at most IDLE_POLL_MS), then handles up to
 * BATCH frames. */
static void pump(fl_broker *b) {
  if (!amqp_frames_enqueued(b->conn) && !amqp_data_in_buffer(b->conn)) {
    /* Whatever wakes us, the frame loop below still runs once: a steady
     * trickle of commands must not starve the heartbeats it sends. */
    struct pollfd p[2] = {{b->wake[0], POLLIN, 0}, {amqp_get_sockfd(b->conn), POLLIN, 0}};
    poll(p, 2, IDLE_POLL_MS);
  }
  for (int i = 0; i < BATCH && b->conn; i++) {
    amqp_frame_t f;
    struct timeval zero = {0, 0};
    /* A zero timeout still sends the heartbeats we owe and notices the
     * broker's missing ones. */
    int rc = amqp_simple_wait_frame_noblock(b->conn, &f, &zero);
    if (rc == AMQP_STATUS_TIMEOUT)
      break;
    if (rc != AMQP_STATUS_OK) {
      char why[WHY_LEN];
      snprintf(why, sizeof(why), "connection lost: %s", amqp_error_string2(rc));
      link_lost(b, why);
      return;
    }
    uint16_t ch = f.channel;
    if (handle_frame(b, &f) < 0)
      return;
    amqp_maybe_release_buffers_on_channel(b->conn, ch);
  }
}

static void wait_wake(fl_broker *b, uint64_t ms) {
  struct pollfd p = {b->wake[0], POLLIN, 0};
  poll(&p, 1, ms > IDLE_POLL_MS ? IDLE_POLL_MS : (int)ms);
}

static void thread_main(void *arg) {
  fl_broker *b = arg;
  unsigned backoff = BACKOFF_FIRST_MS;
  uint64_t next_try = 0, next_retry = 0;
  char why[WHY_LEN];

  while (!is_stopping(b)) {
    if (b->conn) {
      serve_commands(b);
      if (b->conn)
        pump(b);
      if (b->conn && now_ms() >= next_retry) {
        next_retry = now_ms() + INBOX_RETRY_MS;
        for (size_t i = 0; i < b->ninboxes && b->conn; i++) {
          if (!b->inboxes[i]->consuming && !b->inboxes[i]->ch.open &&
              inbox_setup(b, b->inboxes[i], 1) < 0)
            link_lost(b, b->err);
        }
      }
      if (!b->conn) {
        next_try = now_ms() + BACKOFF_FIRST_MS;
        backoff = BACKOFF_FIRST_MS * 2;
      }
      continue;
    }
    uint64_t now = now_ms();
    if (now >= next_try) {
      if (link_connect(b, why, sizeof(why)) == 0) {
        fl_info(NULL, "broker: link up (%s:%d vhost %s)", b->ci.host, b->ci.port, b->ci.vhost);
        backoff = BACKOFF_FIRST_MS;
        next_retry = now_ms() + INBOX_RETRY_MS;
        emit_state(b, 1, "");
        continue;
      }
      link_teardown(b, 0);
      fail_pending(b, FL_EBROKER, "broker connection lost before the publish was confirmed");
      if (b->t_up != 0 || strcmp(b->t_why, why) != 0)
        fl_warn(NULL, "broker: cannot connect, retrying: %s", why);
      emit_state(b, 0, why);
      next_try = now_ms() + backoff;
      backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
      continue;
    }
    wait_wake(b, next_try - now);
    serve_commands(b);
  }

  link_teardown(b, 1);
  fail_pending(b, FL_ECANCELLED, "the broker link was stopped");
  /* Publishes still queued: they never went out. */
  for (;;) {
    uv_mutex_lock(&b->mu);
    struct item *it = ring_pop(&b->cmds);
    uv_mutex_unlock(&b->mu);
    if (!it)
      break;
    if (it->type == CMD_PUBLISH)
      publish_done(b, it, FL_ECANCELLED, "the broker link was stopped");
    else
      item_free(it);
  }
}

/* ---- loop side ---- */

static void dispatch(fl_broker *b, struct item *it, int stopping) {
  switch (it->type) {
  case CMD_PUBLISH:
    b->outstanding--;
    if (b->ev.on_publish_done)
      b->ev.on_publish_done(b->ctx, it->req, it->status, it->why);
    break;
  case EV_STATE:
    if (stopping)
      break;
    b->up = it->up;
    if (b->ev.on_state)
      b->ev.on_state(b->ctx, it->up, it->why);
    break;
  case EV_INBOX:
    if (!stopping && b->ev.on_inbox)
      b->ev.on_inbox(b->ctx, it->gid, it->status, it->why);
    break;
  case EV_DELIVERY:
    if (!stopping && b->ev.on_delivery) {
      fl_broker_delivery d = {
          .tag = it->tag,
          .source = it->source,
          .gid = it->gid,
          .exchange = it->exchange,
          .routing_key = it->routing_key,
          .redelivered = it->redelivered,
          .env = &it->env,
          .body = it->body,
          .len = it->len,
      };
      b->ev.on_delivery(b->ctx, &d);
    }
    break;
  default:
    break;
  }
  item_free(it);
}

/* Takes every queued event and runs its callback, outside the lock. */
static void drain_events(fl_broker *b, int stopping) {
  for (;;) {
    struct item *batch[BATCH];
    size_t n = 0;
    uv_mutex_lock(&b->mu);
    while (n < BATCH && b->events.n)
      batch[n++] = ring_pop(&b->events);
    if (n)
      uv_cond_signal(&b->space);
    uv_mutex_unlock(&b->mu);
    if (n == 0)
      return;
    for (size_t i = 0; i < n; i++)
      dispatch(b, batch[i], stopping);
  }
}

static void on_async(uv_async_t *h) {
  fl_broker *b = h->data;
  if (b->stopped)
    return;
  if (b->ev.on_batch)
    b->ev.on_batch(b->ctx, 1);
  drain_events(b, 0);
  if (b->ev.on_batch)
    b->ev.on_batch(b->ctx, 0);
}

/* Queues a command for the thread. On failure the caller still owns it. */
static int send_cmd(fl_broker *b, struct item *it) {
  uv_mutex_lock(&b->mu);
  int rc = ring_push(&b->cmds, it);
  uv_mutex_unlock(&b->mu);
  if (rc == 0 && write(b->wake[1], "x", 1) < 0) {
    /* EAGAIN: the pipe is full, so the thread will wake anyway. */
  }
  return rc;
}

static void broker_destroy(fl_broker *b);

static void on_closed(uv_handle_t *h) {
  fl_broker *b = h->data;
  b->closed = 1;
  if (b->free_on_close)
    broker_destroy(b);
}

static void broker_destroy(fl_broker *b) {
  if (!b)
    return;
  ring_free(&b->cmds);
  ring_free(&b->events);
  ring_free(&b->pending);
  for (size_t i = 0; i < b->ninboxes; i++)
    inbox_free(b->inboxes[i]);
  fl_free(b->pub.body);
  fl_free(b->sys.body);
  if (b->wake[0] >= 0)
    close(b->wake[0]);
  if (b->wake[1] >= 0)
    close(b->wake[1]);
  fl_free(b->loop_inboxes);
  fl_free(b->uri_buf);
  fl_free(b->host_id);
  fl_free(b->queue_type);
  fl_free(b->ca_file);
  fl_free(b);
}

int fl_broker_start(uv_loop_t *loop, const fl_broker_config *cfg, const fl_broker_events *ev,
                    void *ctx, fl_broker **out) {
  fl_broker *b = NULL;
  int rc;
  if (!loop || !cfg || !out || !cfg->uri)
    return FL_EINVAL;
  *out = NULL;
  if (!fl_name_valid(cfg->host_id, FL_MAX_NAME)) {
    fl_error(NULL, "broker: host id \"%s\" is not %s", cfg->host_id ? cfg->host_id : "",
             fl_name_rule);
    return FL_ECONFIG;
  }
  if (cfg->queue_type && strcmp(cfg->queue_type, "classic") != 0 &&
      strcmp(cfg->queue_type, "quorum") != 0) {
    fl_error(NULL, "broker: queue type \"%s\" is not \"classic\" or \"quorum\"", cfg->queue_type);
    return FL_ECONFIG;
  }
  b = fl_calloc(1, sizeof(*b));
  if (!b)
    return FL_ENOMEM;
  b->wake[0] = b->wake[1] = -1;
  b->t_up = -1;
  b->loop = loop;
  if (ev)
    b->ev = *ev;
  b->ctx = ctx;
  b->prefetch = cfg->prefetch ? cfg->prefetch : FL_BROKER_DEFAULT_PREFETCH;
  if (b->prefetch > 65535)
    b->prefetch = 65535; /* basic.qos carries a 16-bit count */
  b->heartbeat_s = cfg->heartbeat_s ? cfg->heartbeat_s : FL_BROKER_DEFAULT_HEARTBEAT_S;
  b->max_length = cfg->max_length > 0 ? cfg->max_length : FL_BROKER_DEFAULT_MAX_LENGTH;
  b->message_ttl_ms =
      cfg->message_ttl_ms > 0 ? cfg->message_ttl_ms : FL_BROKER_DEFAULT_MESSAGE_TTL_MS;
  b->queue_expires_ms =
      cfg->queue_expires_ms > 0 ? cfg->queue_expires_ms : FL_BROKER_DEFAULT_QUEUE_EXPIRES_MS;
  b->uri_buf = fl_strdup(cfg->uri);
  b->host_id = fl_strdup(cfg->host_id);
  b->queue_type = fl_strdup(cfg->queue_type ? cfg->queue_type : "classic");
  b->ca_file = cfg->ca_file ? fl_strdup(cfg->ca_file) : NULL;
  b->loop_inboxes = fl_calloc(FL_BROKER_MAX_INBOXES, sizeof(*b->loop_inboxes));
  if (!b->uri_buf || !b->host_id || !b->queue_type || (cfg->ca_file && !b->ca_file) ||
      !b->loop_inboxes) {
    rc = FL_ENOMEM;
    goto fail;
  }
  amqp_default_connection_info(&b->ci);
  if (amqp_parse_url(b->uri_buf, &b->ci) != AMQP_STATUS_OK) {
    /* Never log the URI itself: it carries the password. */
    fl_error(NULL,
             "broker: the broker URI is malformed; expected amqp[s]://user:pass@host:port/vhost");
    rc = FL_ECONFIG;
    goto fail;
  }
  /* "amqp://host/" names the empty vhost, which no broker has; users mean "/". */
  if (!b->ci.vhost || !b->ci.vhost[0])
    b->ci.vhost = "/";
  if (b->ci.ssl && b->ca_file && access(b->ca_file, R_OK) != 0) {
    fl_error(NULL, "broker: CA file %s is not readable", b->ca_file);
    rc = FL_ECONFIG;
    goto fail;
  }
  if ((rc = ring_init(&b->cmds, FL_BROKER_MAX_CMDS + FL_BROKER_MAX_INFLIGHT)) ||
      (rc = ring_init(&b->events, FL_BROKER_MAX_EVENTS)) ||
      (rc = ring_init(&b->pending, FL_BROKER_MAX_INFLIGHT)))
    goto fail;
  if (pipe2(b->wake, O_NONBLOCK | O_CLOEXEC) != 0) {
    rc = -errno;
    goto fail;
  }
  if ((rc = uv_mutex_init(&b->mu)) != 0)
    goto fail;
  if ((rc = uv_cond_init(&b->space)) != 0) {
    uv_mutex_destroy(&b->mu);
    goto fail;
  }
  if ((rc = uv_async_init(loop, &b->async, on_async)) != 0) {
    uv_cond_destroy(&b->space);
    uv_mutex_destroy(&b->mu);
    goto fail;
  }
  b->async.data = b;
  if ((rc = uv_thread_create(&b->thread, thread_main, b)) != 0) {
    /* The handle must be closed before b can be freed. */
    b->stopped = 1;
    b->free_on_close = 1;
    uv_cond_destroy(&b->space);
    uv_mutex_destroy(&b->mu);
    uv_close((uv_handle_t *)&b->async, on_closed);
    return rc;
  }
  *out = b;
  return 0;
fail:
  broker_destroy(b);
  return rc;
}

int fl_broker_publish(fl_broker *b, const char *exchange, const char *routing_key, int mandatory,
                      const fl_envelope *env, const char *body, size_t len, void *req) {
  if (!b || !exchange || !routing_key || (!body && len) || b->stopped)
    return FL_EINVAL;
  if (strlen(exchange) >= SHORTSTR || strlen(routing_key) >= SHORTSTR)
    return FL_EINVAL;
  if (len > FL_MAX_CONTENT)
    return FL_ETOOBIG;
  if (!b->up)
    return FL_EBROKER;
  if (b->outstanding >= FL_BROKER_MAX_INFLIGHT)
    return FL_EFULL;
  struct item *it = fl_calloc(1, sizeof(*it));
  if (!it)
    return FL_ENOMEM;
  it->type = CMD_PUBLISH;
  copy_str(it->exchange, sizeof(it->exchange), exchange);
  copy_str(it->routing_key, sizeof(it->routing_key), routing_key);
  it->mandatory = mandatory;
  if (env)
    it->env = *env;
  it->req = req;
  if (len) {
    it->body = fl_malloc(len);
    if (!it->body) {
      item_free(it);
      return FL_ENOMEM;
    }
    memcpy(it->body, body, len);
  }
  it->len = len;
  int rc = send_cmd(b, it);
  if (rc != 0) {
    item_free(it);
    return rc;
  }
  b->outstanding++;
  return 0;
}

static int loop_inbox_index(fl_broker *b, const char *gid) {
  for (size_t i = 0; i < b->ninboxes_loop; i++)
    if (strcmp(b->loop_inboxes[i].gid, gid) == 0)
      return (int)i;
  return -1;
}

int fl_broker_add_inbox(fl_broker *b, const char *gid, const char *const *groups, size_t ngroups) {
  if (!b || b->stopped || !fl_name_valid(gid, FL_ID_LEN - 1) || (ngroups && !groups) ||
      ngroups > FL_MAX_GROUPS)
    return FL_EINVAL;
  for (size_t i = 0; i < ngroups; i++)
    if (!fl_name_valid(groups[i], FL_MAX_GROUP_NAME))
      return FL_EINVAL;
  int known = loop_inbox_index(b, gid) >= 0;
  if (!known && b->ninboxes_loop >= FL_BROKER_MAX_INBOXES)
    return FL_EFULL;
  struct item *it = fl_calloc(1, sizeof(*it));
  if (!it)
    return FL_ENOMEM;
  it->type = CMD_ADD_INBOX;
  copy_str(it->gid, sizeof(it->gid), gid);
  if (ngroups) {
    it->groups = fl_calloc(ngroups, sizeof(*it->groups));
    if (!it->groups) {
      item_free(it);
      return FL_ENOMEM;
    }
    for (size_t i = 0; i < ngroups; i++) {
      it->groups[i] = fl_strdup(groups[i]);
      if (!it->groups[i]) {
        it->ngroups = i;
        item_free(it);
        return FL_ENOMEM;
      }
    }
    it->ngroups = ngroups;
  }
  int rc = send_cmd(b, it);
  if (rc != 0) {
    item_free(it);
    return rc;
  }
  if (!known)
    copy_str(b->loop_inboxes[b->ninboxes_loop++].gid, FL_ID_LEN, gid);
  return 0;
}

int fl_broker_remove_inbox(fl_broker *b, const char *gid) {
  if (!b || b->stopped || !fl_name_valid(gid, FL_ID_LEN - 1))
    return FL_EINVAL;
  struct item *it = fl_calloc(1, sizeof(*it));
  if (!it)
    return FL_ENOMEM;
  it->type = CMD_REMOVE_INBOX;
  copy_str(it->gid, sizeof(it->gid), gid);
  int rc = send_cmd(b, it);
  if (rc != 0) {
    item_free(it);
    return rc;
  }
  int idx = loop_inbox_index(b, gid);
  if (idx >= 0)
    b->loop_inboxes[idx] = b->loop_inboxes[--b->ninboxes_loop];
  return 0;
}

static int settle(fl_broker *b, uint64_t tag, enum item_type type, int requeue) {
  if (!b || b->stopped)
    return FL_EINVAL;
  struct item *it = fl_calloc(1, sizeof(*it));
  if (!it)
    return FL_ENOMEM;
  it->type = type;
  it->tag = tag;
  it->requeue = requeue;
  int rc = send_cmd(b, it);
  if (rc != 0)
    item_free(it);
  return rc;
}

int fl_broker_ack(fl_broker *b, uint64_t tag) { return settle(b, tag, CMD_ACK, 0); }

int fl_broker_reject(fl_broker *b, uint64_t tag, int requeue) {
  return settle(b, tag, CMD_REJECT, requeue);
}

int fl_broker_is_up(const fl_broker *b) { return b && b->up; }

void fl_broker_stop(fl_broker *b) {
  if (!b || b->stopped)
    return;
  uv_mutex_lock(&b->mu);
  b->stopping = 1;
  uv_cond_signal(&b->space);
  uv_mutex_unlock(&b->mu);
  if (write(b->wake[1], "x", 1) < 0) {
    /* The pipe is full: the thread wakes anyway. */
  }
  uv_thread_join(&b->thread);
  b->stopped = 1;
  b->up = 0;
  /* Only publish outcomes are reported now; the rest is dropped. */
  drain_events(b, 1);
  uv_cond_destroy(&b->space);
  uv_mutex_destroy(&b->mu);
  uv_close((uv_handle_t *)&b->async, on_closed);
}

void fl_broker_free(fl_broker **pb) {
  if (!pb || !*pb)
    return;
  fl_broker *b = *pb;
  *pb = NULL;
  fl_broker_stop(b);
  if (b->closed)
    broker_destroy(b);
  else
    b->free_on_close = 1;
}
