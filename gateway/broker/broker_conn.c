/* broker_conn.c — the broker thread: one rabbitmq-c connection and
 * everything about it.
 *
 * rabbitmq-c blocks, and a connection is used by one thread at a time, so
 * this thread owns the connection, its channels, the publishes awaiting
 * confirms and the inbox registry (broker_topology.c). It takes commands
 * from b->cmds (waking on that queue's pipe or the socket, whichever comes
 * first) and hands events to the loop through b->events, waiting while that
 * queue is full so a slow loop slows the socket reads instead of growing
 * memory. What the broker sends is handled in broker_frames.c. The thread
 * holds the link lock while awake; while it sleeps with its socket handed
 * to the loop (broker_reader.c), the loop may read frames, send a publish
 * and send acks through the same code, under that lock, never waiting
 * (broker_internal.h).
 *
 * Channels: 1 publishes (publisher confirms, many publishes in flight,
 * matched to basic.ack / basic.nack by sequence number, `multiple`
 * included); 2 declares the shared topology and consumes control.<host> and
 * roster.<host>; every inbox gets a channel of its own from 3 up.
 *
 * Acks: the loop acks each delivery on its own, and a loop turn's acks go
 * together; broker_settle.c sends a run of them as one `multiple` ack where
 * that is safe.
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
#include <amqp_ssl_socket.h>
#include <amqp_tcp_socket.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/log.h"
#include "common/time.h"
#include "gateway/broker/broker_internal.h"

#define CH_PUBLISH 1
#define CH_FIRST_INBOX 3

/* Reconnect backoff: first retry soon (a broker restart takes seconds), then
 * back off so a long outage costs little. */
#define BACKOFF_FIRST_MS 500
#define BACKOFF_MAX_MS 5000
/* How long the thread sleeps in poll() when idle. Bounds the delay of a
 * heartbeat we owe the broker; commands wake it at once through the pipe. */
#define IDLE_POLL_MS 100
/* Connect and RPC timeouts: long enough for a loaded broker (a quorum queue
 * declare can take a few seconds), short enough that fl_broker_stop, which
 * may wait for one, stays brisk. */
#define CONNECT_TIMEOUT_S 5
#define RPC_TIMEOUT_S 10
/* The system CA bundle on Debian, for amqps:// without a ca_file. */
#define SYSTEM_CA_FILE "/etc/ssl/certs/ca-certificates.crt"

#define LOST_BEFORE_CONFIRM "broker connection lost before the publish was confirmed"

static uint64_t now_ms(void) { return (uint64_t)fl_mono_ms(); }

/* ---- publishes on the wire ---- */

int fl_broker_conn_init(fl_broker *b) {
  b->pending.v = fl_calloc(FL_BROKER_MAX_INFLIGHT, sizeof(*b->pending.v));
  b->pending.cap = FL_BROKER_MAX_INFLIGHT;
  b->pending.head = b->pending.n = 0;
  return b->pending.v ? 0 : FL_ENOMEM;
}

void fl_broker_conn_free(fl_broker *b) {
  if (b->pending.v) {
    while (b->pending.n)
      fl_broker_item_free(fl_broker_pending_pop(&b->pending));
    fl_free(b->pending.v);
    b->pending.v = NULL;
  }
  fl_free(b->pub.body);
  b->pub.body = NULL;
  fl_free(b->sys.body);
  b->sys.body = NULL;
  fl_broker_acks_free(&b->pub.acks);
  fl_broker_acks_free(&b->sys.acks);
}

/* ---- thread -> loop ---- */

void fl_broker_emit(fl_broker *b, struct item *it, size_t bytes) {
  int rc = b->on_loop ? fl_xqueue_push_here(b->events, it, bytes)
                      : fl_xqueue_push_wait_bytes(b->events, it, bytes);
  if (rc != 0) {
    /* Only reachable out of memory (while stopping, or the loop reading). */
    fl_error(it->env.trace_id, "broker: dropped an event (out of memory)");
    fl_broker_item_free(it);
  }
}

static void emit(fl_broker *b, struct item *it) { fl_broker_emit(b, it, 0); }

static void emit_state(fl_broker *b, int up, const char *why) {
  if (b->t_up == up && (up || strcmp(b->t_why, why) == 0))
    return;
  b->t_up = up;
  fl_broker_copy(b->t_why, sizeof(b->t_why), why);
  struct item *it = fl_calloc(1, sizeof(*it));
  if (!it) {
    fl_error(NULL, "broker: out of memory reporting link %s", up ? "up" : "down");
    return;
  }
  it->type = EV_STATE;
  it->up = up;
  fl_broker_copy(it->why, sizeof(it->why), why);
  emit(b, it);
}

void fl_broker_emit_inbox(fl_broker *b, const char *gid, int status, const char *why) {
  struct item *it = fl_calloc(1, sizeof(*it));
  if (!it) {
    fl_error(NULL, "broker: out of memory reporting inbox %s", gid);
    return;
  }
  it->type = EV_INBOX;
  fl_broker_copy(it->gid, sizeof(it->gid), gid);
  it->status = status;
  fl_broker_copy(it->why, sizeof(it->why), why);
  emit(b, it);
}

void fl_broker_publish_done(fl_broker *b, struct item *it, int status, const char *why) {
  it->done = 1;
  it->status = status;
  fl_broker_copy(it->why, sizeof(it->why), why);
  fl_free(it->body);
  it->body = NULL;
  emit(b, it);
}

/* ---- AMQP helpers ---- */

int fl_broker_rpc_result(fl_broker *b, uint16_t ch, const char *what, char *why, size_t n) {
  amqp_rpc_reply_t r = amqp_get_rpc_reply(b->conn);
  switch (r.reply_type) {
  case AMQP_RESPONSE_NORMAL:
    return 0;
  case AMQP_RESPONSE_LIBRARY_EXCEPTION:
    fl_errf(why, n, "%s: %s", what, amqp_error_string2(r.library_error));
    return FL_EBROKER;
  case AMQP_RESPONSE_SERVER_EXCEPTION:
    if (r.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
      amqp_channel_close_t *m = r.reply.decoded;
      amqp_channel_close_ok_t ok = {0};
      fl_errf(why, n, "%s: %.*s", what, (int)m->reply_text.len, (const char *)m->reply_text.bytes);
      if (amqp_send_method(b->conn, ch, AMQP_CHANNEL_CLOSE_OK_METHOD, &ok) != AMQP_STATUS_OK)
        return FL_EBROKER;
      return FL_EREFUSED;
    }
    if (r.reply.id == AMQP_CONNECTION_CLOSE_METHOD) {
      amqp_connection_close_t *m = r.reply.decoded;
      amqp_connection_close_ok_t ok = {0};
      fl_errf(why, n, "%s: the broker closed the connection: %.*s", what, (int)m->reply_text.len,
              (const char *)m->reply_text.bytes);
      amqp_send_method(b->conn, 0, AMQP_CONNECTION_CLOSE_OK_METHOD, &ok);
      return FL_EBROKER;
    }
    fl_errf(why, n, "%s: unexpected reply method 0x%08x", what, (unsigned)r.reply.id);
    return FL_EBROKER;
  default:
    fl_errf(why, n, "%s: no reply", what);
    return FL_EBROKER;
  }
}

void fl_broker_chan_reset(fl_broker *b, struct chan *c) {
  if (c->id && b->chans[c->id] == c)
    b->chans[c->id] = NULL;
  fl_free(c->body);
  c->body = NULL;
  fl_broker_acks_free(&c->acks);
  c->multiple_to = 0;
  c->open = 0;
  c->content = 0;
  c->id = 0;
}

int fl_broker_chan_open(fl_broker *b, struct chan *c, uint16_t id, char *why, size_t n) {
  c->id = id;
  c->epoch = ++b->epoch ? b->epoch : ++b->epoch; /* 0 never names a channel */
  c->content = 0;
  c->multiple_to = 0;
  fl_broker_acks_reset(&c->acks);
  amqp_channel_open(b->conn, id);
  int rc = fl_broker_rpc_result(b, id, "channel.open", why, n);
  if (rc != 0) {
    c->id = 0;
    return rc;
  }
  c->open = 1;
  b->chans[id] = c;
  return 0;
}

/* Round robin, so a closed channel's number is not reused while frames for
 * it may still be queued. */
uint16_t fl_broker_chan_alloc(fl_broker *b) {
  for (unsigned tries = 0; tries < b->ch_max; tries++) {
    uint16_t id = b->next_ch;
    b->next_ch = b->next_ch >= b->ch_max ? CH_FIRST_INBOX : b->next_ch + 1;
    if (id >= CH_FIRST_INBOX && !b->chans[id])
      return id;
  }
  return 0;
}

/* ---- connect / teardown ---- */

static void link_teardown(fl_broker *b, int graceful) {
  if (b->conn) {
    if (graceful)
      amqp_connection_close(b->conn, AMQP_REPLY_SUCCESS);
    /* The loop's dup would keep the socket open, and the broker would keep
     * our consumers and their unacked deliveries until a heartbeat times
     * out: end it for both (the loop sees the hang-up and closes its dup). */
    if (b->t_fd_gen == b->conn_gen && amqp_get_sockfd(b->conn) >= 0)
      shutdown(amqp_get_sockfd(b->conn), SHUT_RDWR);
    amqp_destroy_connection(b->conn);
    b->conn = NULL;
  }
  fl_broker_chan_reset(b, &b->pub);
  fl_broker_chan_reset(b, &b->sys);
  for (size_t i = 0; i < b->ninboxes; i++) {
    fl_broker_chan_reset(b, &b->inboxes[i]->ch);
    b->inboxes[i]->consuming = 0;
    b->inboxes[i]->consume_sent = 0;
    b->inboxes[i]->cancel_due = 0; /* that channel is gone with the connection */
  }
  b->deferred = 0;
  b->inbox_start_at = 0;
  memset(b->chans, 0, sizeof(b->chans));
}

/* Fails every publish on the wire with status/why. */
static void fail_pending(fl_broker *b, int status, const char *why) {
  while (b->pending.n) {
    struct item *it = fl_broker_pending_pop(&b->pending);
    if (it)
      fl_broker_publish_done(b, it, status, why);
  }
  b->head_seq = b->next_seq = 1;
}

/* The connection failed: report down at once, fail what was in flight, drop
 * the connection. */
void fl_broker_link_lost(fl_broker *b, const char *why) {
  char w[FL_BROKER_WHY_LEN];
  fl_broker_copy(w, sizeof(w), why);
  if (b->t_up == 1)
    fl_error(NULL, "broker: link down: %s", w);
  emit_state(b, 0, w);
  fail_pending(b, FL_EBROKER, LOST_BEFORE_CONFIRM);
  link_teardown(b, 0);
}

/* A socket for b->ci: TCP, or TLS verifying the broker's certificate and
 * host name. Returns 0 and sets *out, or a code with why set. */
static int link_socket(fl_broker *b, amqp_socket_t **out, char *why, size_t n) {
  amqp_socket_t *sock;
  int rc;
  if (!b->ci.ssl) {
    /* rabbitmq-c fails this only when it cannot allocate. */
    if (!(sock = amqp_tcp_socket_new(b->conn))) {
      fl_errf(why, n, "cannot create a TCP socket");
      return FL_ENOMEM;
    }
    *out = sock;
    return 0;
  }
  /* ... and this when it cannot allocate or set up an OpenSSL context. */
  if (!(sock = amqp_ssl_socket_new(b->conn))) {
    fl_errf(why, n, "cannot create a TLS socket");
    return FL_ENOMEM;
  }
  const char *ca = b->ca_file ? b->ca_file : SYSTEM_CA_FILE;
  if ((rc = amqp_ssl_socket_set_cacert(sock, ca)) != AMQP_STATUS_OK) {
    fl_errf(why, n, "cannot load CA file %s: %s", ca, amqp_error_string2(rc));
    return FL_ECONFIG;
  }
  amqp_ssl_socket_set_verify_peer(sock, 1);
  amqp_ssl_socket_set_verify_hostname(sock, 1);
  *out = sock;
  return 0;
}

/* Opens the socket and logs in. Returns 0, FL_EBROKER (unreachable, or the
 * login failed) or FL_EREFUSED (the broker refused the login), why set. */
static int link_login(fl_broker *b, amqp_socket_t *sock, char *why, size_t n) {
  struct timeval tv = {CONNECT_TIMEOUT_S, 0};
  struct timeval rpc_tv = {RPC_TIMEOUT_S, 0};
  int rc;
  amqp_set_handshake_timeout(b->conn, &tv);
  amqp_set_rpc_timeout(b->conn, &rpc_tv);
  errno = 0;
  if ((rc = amqp_socket_open_noblock(sock, b->ci.host, b->ci.port, &tv)) != AMQP_STATUS_OK) {
    fl_broker_connect_why(b->ci.host, b->ci.port, rc, errno, why, n);
    return FL_EBROKER;
  }
  char cname[FL_BROKER_SHORTSTR];
  snprintf(cname, sizeof(cname), "fleetd %s", b->host_id);
  /* consumer_cancel_notify: without it a deleted inbox queue takes its
   * consumer away in silence, and nothing would declare it again. */
  amqp_table_entry_t caps_e[2];
  caps_e[0].key = amqp_cstring_bytes("consumer_cancel_notify");
  caps_e[1].key = amqp_cstring_bytes("connection.blocked");
  for (int i = 0; i < 2; i++) {
    caps_e[i].value.kind = AMQP_FIELD_KIND_BOOLEAN;
    caps_e[i].value.value.boolean = 1;
  }
  amqp_table_entry_t props_e[2];
  props_e[0] = fl_broker_entry_str("connection_name", cname);
  props_e[1].key = amqp_cstring_bytes("capabilities");
  props_e[1].value.kind = AMQP_FIELD_KIND_TABLE;
  props_e[1].value.value.table = (amqp_table_t){2, caps_e};
  amqp_table_t props = {2, props_e};
  /* channel_max 0: take the broker's (RabbitMQ: 2047). */
  amqp_rpc_reply_t r =
      amqp_login_with_properties(b->conn, b->ci.vhost, 0, FL_BROKER_FRAME_MAX, (int)b->heartbeat_s,
                                 &props, AMQP_SASL_METHOD_PLAIN, b->ci.user, b->ci.password);
  if (r.reply_type == AMQP_RESPONSE_NORMAL)
    return 0;
  if (r.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION &&
      r.reply.id == AMQP_CONNECTION_CLOSE_METHOD) {
    amqp_connection_close_t *m = r.reply.decoded;
    fl_errf(why, n, "login to vhost %s refused: %.*s", b->ci.vhost, (int)m->reply_text.len,
            (const char *)m->reply_text.bytes);
    return FL_EREFUSED;
  }
  fl_errf(why, n, "login to %s:%d vhost %s failed (check user, password and vhost): %s", b->ci.host,
          b->ci.port, b->ci.vhost,
          r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION ? amqp_error_string2(r.library_error)
                                                          : "refused");
  return FL_EBROKER;
}

/* Connects, opens the link's channels, declares the topology and restores
 * every inbox. Returns 0 or a negative code with why set; on failure the
 * caller tears the half-made connection down. */
static int link_connect(fl_broker *b, char *why, size_t n) {
  amqp_socket_t *sock = NULL;
  int rc;
  b->conn_gen++;
  b->t_asked = 0;
  b->conn = amqp_new_connection();
  if (!b->conn) {
    fl_errf(why, n, "out of memory");
    return FL_ENOMEM;
  }
  if ((rc = link_socket(b, &sock, why, n)) || (rc = link_login(b, sock, why, n)))
    return rc;
  int cm = amqp_get_channel_max(b->conn);
  b->ch_max = (uint16_t)(cm <= 0 || cm > FL_BROKER_CH_MAX ? FL_BROKER_CH_MAX : cm);
  b->next_ch = CH_FIRST_INBOX;

  if ((rc = fl_broker_chan_open(b, &b->pub, CH_PUBLISH, why, n)))
    return rc;
  amqp_confirm_select(b->conn, CH_PUBLISH);
  if ((rc = fl_broker_rpc_result(b, CH_PUBLISH, "confirm.select", why, n)))
    return rc;
  b->head_seq = b->next_seq = 1;
  if ((rc = fl_broker_chan_open(b, &b->sys, FL_BROKER_CH_SYSTEM, why, n)) ||
      (rc = fl_broker_topology_declare(b, why, n)))
    return rc;
  for (size_t i = 0; i < b->ninboxes; i++) {
    if ((rc = fl_broker_inbox_setup(b, b->inboxes[i], 0)) < 0) {
      fl_broker_copy(why, n, b->err);
      return rc;
    }
  }
  if ((rc = fl_broker_inbox_start(b, 1)) < 0) {
    fl_broker_copy(why, n, b->err);
    return rc;
  }
  return 0;
}

/* ---- commands ---- */

/* Publishes it on the publish channel; it then waits in b->pending for its
 * confirm. Returns 0, or FL_EBROKER after fl_broker_link_lost (which reported it). */
int fl_broker_publish_now(fl_broker *b, struct item *it) {
  fl_broker_env_hdr hdr;
  amqp_basic_properties_t p;
  fl_broker_env_properties(&it->env, it->packed, &hdr, &p);
  amqp_bytes_t body = {it->len, it->body};
  /* Pending before sending: if the send fails, fl_broker_link_lost reports it. The
   * loop keeps at most FL_BROKER_MAX_INFLIGHT publishes outstanding, but a
   * confirm that lags behind later ones keeps their settled slots. */
  if (b->pending.n == b->pending.cap) {
    fl_broker_publish_done(b, it, FL_EFULL,
                           "too many publishes are waiting for the broker's confirm");
    return 0;
  }
  it->seq = b->next_seq++;
  b->pending.v[(b->pending.head + b->pending.n) % b->pending.cap] = it;
  b->pending.n++;
  int rc = amqp_basic_publish(b->conn, CH_PUBLISH, amqp_cstring_bytes(it->exchange),
                              amqp_cstring_bytes(it->routing_key), it->mandatory != 0, 0, &p, body);
  /* The broker has it (or the link is gone); only the confirm matters now. */
  fl_free(it->body);
  it->body = NULL;
  if (rc != AMQP_STATUS_OK) {
    char why[FL_BROKER_WHY_LEN];
    fl_errf(why, sizeof(why), "publish failed: %s", amqp_error_string2(rc));
    fl_broker_link_lost(b, why);
    return FL_EBROKER;
  }
  return 0;
}

/* Finds the channel a loop tag names, or NULL if that incarnation is gone. */
struct chan *fl_broker_tag_chan(fl_broker *b, uint64_t tag) {
  uint16_t id = (uint16_t)(tag >> 32);
  uint16_t epoch = (uint16_t)(tag >> 48);
  if (id == 0 || id > FL_BROKER_CH_MAX)
    return NULL;
  struct chan *c = b->chans[id];
  return c && c->open && c->epoch == epoch ? c : NULL;
}

/* Serves up to FL_BROKER_BATCH commands. */
static void serve_commands(fl_broker *b) {
  void *batch[FL_BROKER_BATCH];
  struct fl_broker_ack_run run;
  run.n = 0;
  size_t n = fl_xqueue_pop(b->cmds, batch, FL_BROKER_BATCH);
  for (size_t i = 0; i < n; i++) {
    struct item *it = batch[i];
    /* A run of settles ends before anything that may close a channel. */
    if (run.n && it->type != CMD_ACK && it->type != CMD_REJECT)
      fl_broker_ack_flush(b, &run);
    switch (it->type) {
    case CMD_PUBLISH:
      if (!b->conn)
        fl_broker_publish_done(b, it, FL_EBROKER, "the broker link is down");
      else
        fl_broker_publish_now(b, it);
      continue; /* the item now belongs to pending or the event queue */
    case CMD_ACK:
    case CMD_REJECT:
      fl_broker_settle(b, it, &run);
      break;
    case CMD_ADD_INBOX:
      if (fl_broker_inbox_add(b, it) < 0)
        fl_broker_link_lost(b, b->err);
      break;
    case CMD_REMOVE_INBOX:
      if (fl_broker_inbox_remove(b, it) < 0)
        fl_broker_link_lost(b, "the connection failed while closing an inbox channel");
      break;
    case CMD_REQUEUE_INBOX:
      if (fl_broker_inbox_requeue(b, it) < 0)
        fl_broker_link_lost(b, "the connection failed while requeueing an inbox's deliveries");
      break;
    case CMD_DELETE_INBOX:
      if (fl_broker_inbox_delete(b, it) < 0)
        fl_broker_link_lost(b, "the connection failed while deleting an inbox queue");
      break;
    case CMD_DLQ: {
      char why[FL_BROKER_WHY_LEN] = "";
      if (!b->conn) {
        it->status = FL_EBROKER;
        fl_broker_copy(it->why, sizeof(it->why), "the broker link is down");
      } else if (fl_broker_dlq_serve(b, it, why, sizeof(why)) != 0) {
        fl_broker_link_lost(b, why);
      }
      emit(b, it); /* back to the loop as its own event */
      continue;
    }
    default:
      break;
    }
    fl_broker_item_free(it);
  }
  if (run.n)
    fl_broker_ack_flush(b, &run);
}

/* Hands the loop the socket to read while this thread sleeps (an EV_READ
 * with a dup of it, the first time for a connection). Best effort: without
 * memory or a dup, the thread reads as before. */
static void offer_reader(fl_broker *b) {
  struct item *it = fl_calloc(1, sizeof(*it));
  if (!it)
    return;
  it->type = EV_READ;
  it->seq = b->conn_gen;
  it->rfd = -1;
  if (b->t_fd_gen != b->conn_gen) {
    it->rfd = fcntl(amqp_get_sockfd(b->conn), F_DUPFD_CLOEXEC, 0);
    if (it->rfd < 0) {
      fl_free(it);
      return;
    }
    b->t_fd_gen = b->conn_gen;
  }
  b->t_asked = 1;
  emit(b, it);
}

/* Whether the loop watches the socket, so this thread may sleep without
 * it; if not, offers it (link lock held). */
static int loop_reads(fl_broker *b) {
  if (b->ci.ssl)
    return 0;
  if (atomic_exchange(&b->lr_lost, 0))
    b->t_asked = 0;
  if (atomic_load(&b->lr_gen) == b->conn_gen)
    return 1;
  if (!b->t_asked)
    offer_reader(b);
  return 0;
}

/* Waits for frames or commands (at most IDLE_POLL_MS), then handles up to
 * FL_BROKER_BATCH frames. While the loop watches the socket, the wait is
 * for commands alone, without the link lock. */
static void pump(fl_broker *b) {
  if (!amqp_frames_enqueued(b->conn) && !amqp_data_in_buffer(b->conn)) {
    /* Whatever wakes us, the frame loop below still runs once: a steady
     * trickle of commands must not starve the heartbeats it sends. */
    struct pollfd p[2] = {{fl_xqueue_fd(b->cmds), POLLIN, 0},
                          {amqp_get_sockfd(b->conn), POLLIN, 0}};
    int ms = IDLE_POLL_MS;
    if (b->inbox_start_at) { /* consumers to start (fl_broker_inbox_start) */
      uint64_t now = now_ms();
      ms = b->inbox_start_at <= now                           ? 0
           : b->inbox_start_at - now < (uint64_t)IDLE_POLL_MS ? (int)(b->inbox_start_at - now)
                                                              : IDLE_POLL_MS;
    }
    if (loop_reads(b)) {
      uv_mutex_unlock(&b->link_mu);
      poll(p, 1, ms);
      uv_mutex_lock(&b->link_mu);
      if (!b->conn)
        return; /* the loop lost the link while we slept */
    } else {
      poll(p, 2, ms);
    }
  }
  int more;
  fl_broker_read_frames(b, 0, &more);
}

/* What the loop read and left to this thread: consumers the broker
 * cancelled, whose channels close with an RPC. */
static void run_deferred(fl_broker *b) {
  b->deferred = 0;
  for (size_t i = 0; i < b->ninboxes && b->conn; i++) {
    struct inbox *ib = b->inboxes[i];
    if (!ib->cancel_due)
      continue;
    ib->cancel_due = 0;
    if (ib->ch.open && fl_broker_inbox_cancelled(b, ib) < 0)
      fl_broker_link_lost(b, "the connection failed while closing a cancelled inbox");
  }
}

static void wait_wake(fl_broker *b, uint64_t ms) {
  struct pollfd p = {fl_xqueue_fd(b->cmds), POLLIN, 0};
  poll(&p, 1, ms > IDLE_POLL_MS ? IDLE_POLL_MS : (int)ms);
}

/* ---- the thread ---- */

void fl_broker_thread_main(void *arg) {
  fl_broker *b = arg;
  unsigned backoff = BACKOFF_FIRST_MS;
  uint64_t next_try = 0;
  char why[FL_BROKER_WHY_LEN];

  uv_mutex_lock(&b->link_mu);
  while (!fl_xqueue_is_shutdown(b->cmds)) {
    if (b->conn) {
      serve_commands(b);
      if (b->conn && b->deferred)
        run_deferred(b);
      /* Each inbox keeps its own backoff (broker_topology.c). */
      if (b->conn && fl_broker_inbox_retry(b) < 0)
        fl_broker_link_lost(b, b->err);
      if (b->conn && fl_broker_inbox_start(b, 0) < 0)
        fl_broker_link_lost(b, b->err);
      if (b->conn)
        pump(b);
      if (!b->conn) {
        next_try = now_ms() + BACKOFF_FIRST_MS;
        backoff = BACKOFF_FIRST_MS * 2;
      }
      continue;
    }
    uint64_t now = now_ms();
    if (now >= next_try) {
      b->ci = b->cis[b->cur];
      if (link_connect(b, why, sizeof(why)) == 0) {
        fl_info(NULL, "broker: link up (%s:%d vhost %s)", b->ci.host, b->ci.port, b->ci.vhost);
        backoff = BACKOFF_FIRST_MS;
        emit_state(b, 1, "");
        continue;
      }
      link_teardown(b, 0);
      fail_pending(b, FL_EBROKER, LOST_BEFORE_CONFIRM);
      if (b->t_up != 0 || strcmp(b->t_why, why) != 0)
        fl_warn(NULL, "broker: cannot connect, retrying: %s", why);
      emit_state(b, 0, why);
      /* The next URI at once; after the last, the backoff. */
      b->cur = (b->cur + 1) % b->ncis;
      if (b->cur != 0)
        continue;
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
  void *p;
  while (fl_xqueue_pop(b->cmds, &p, 1) == 1) {
    struct item *it = p;
    if (it->type == CMD_PUBLISH) {
      fl_broker_publish_done(b, it, FL_ECANCELLED, "the broker link was stopped");
    } else if (it->type == CMD_DLQ) { /* its caller waits for the answer too */
      it->status = FL_ECANCELLED;
      emit(b, it);
    } else {
      fl_broker_item_free(it);
    }
  }
  uv_mutex_unlock(&b->link_mu);
}
