/* amqp_baseline.c — what the broker alone does, measured with rabbitmq-c, so
 * fleet's numbers have something to be compared with.
 *
 *   amqp_baseline URI tput [-n N] [-s SIZE] [-w WINDOW] [-p PREFETCH] [-l LABEL]
 *   amqp_baseline URI lat  [-n N] [-s SIZE] [-r RATE] [-W WARMUP] [-p PREFETCH] [-l LABEL]
 *   amqp_baseline URI rtt  [-n N] [-s SIZE] [-r RATE] [-W WARMUP] [-p PREFETCH] [-l LABEL]
 *
 * Every message is persistent (delivery mode 2), SIZE bytes (default 1 KiB),
 * published to the default exchange into a durable classic queue, on a
 * channel in publisher-confirm mode. Confirms are pipelined: a publisher never
 * waits for one message's confirm before the next; it reads them as they come
 * and, in tput, stops only when WINDOW are outstanding. Consumers use manual
 * acks (one basic.ack per message, as fleet does) and basic.qos PREFETCH.
 *
 * tput: one publisher, one consumer on one queue; msgs/s from the first
 *       publish to the last message consumed.
 * lat:  the publisher is paced at RATE msgs/s and puts its clock in the body;
 *       the consumer records now - then: the one-way publish→consume latency.
 * rtt:  a request/reply round trip through two queues, the raw analogue of a
 *       fleet_send that waits for a fleet_reply: a paced requester publishes
 *       to bench.req, a responder consumes it, publishes the same body to
 *       bench.rep and acks; the requester's consumer records now - then.
 *
 * Variants (all off by default, so the plain run is the baseline bench/run.sh
 * reports against): each switches on one thing fleet does differently, so
 * the broker's cost of each can be measured on its own (bench/broker_cost.sh):
 *
 *   -x        publish through a durable topic exchange (bench.topic) instead
 *             of the default exchange; the queue is bound with its own name
 *             and fleet's two broadcast keys, as a fleet inbox is
 *   -m        publish with the mandatory flag
 *   -q LIST   declare the queue with fleet's inbox arguments, a comma list
 *             of dlx, maxlen, overflow, ttl, expires, type (or "inbox": all
 *             six), with fleet's default values; v2 adds x-queue-version 2
 *             (RabbitMQ 3.10+'s second classic queue format, not fleet's)
 *   -e        fleet's per-message properties: text content type, timestamp,
 *             a fresh message id and the signed envelope headers a fleet
 *             message carries (fl_broker_env_properties, one signature made
 *             at start and reused: the broker does not check it)
 *   -E        as -e, but the envelope packed into the one `env` header, as
 *             fleetd sends it to a host that reads envelope 1.1, to tell
 *             the cost of the headers' number from that of their bytes
 *   -a N      the consumer acks with `multiple` once every N deliveries
 *             (and at the end) instead of one basic.ack per message
 *   -H        the consumer holds its acks until PREFETCH deliveries are
 *             unacked (or the last arrived), then acks them one by one, as
 *             fleetd does when its client drains a poll's worth at once
 *   -b        backlog (tput): the consumer starts reading only once every
 *             publish is confirmed, so the queue holds all N first, as a
 *             fleet inbox fills when its receiver is slower than its sender
 *   -B PID    measure the CPU (user + system, /proc/PID/stat) process PID
 *             (the broker) spends from the first publish to the last
 *             message consumed, and this process's own, per message
 *
 * rabbitmq-c connections are not thread-safe, so each thread has its own
 * connection(s). Results are printed as "RESULT LABEL.KEY VALUE" lines on
 * stdout; progress and errors go to stderr. Exit status 0, or 1 on failure. */
#include <amqp.h>
#include <amqp_tcp_socket.h>
#include <sodium.h>

#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <unistd.h>

#include "bench_util.h"
#include "common/ids.h"
#include "common/limits.h"
#include "common/time.h"
#include "gateway/broker/broker_headers.h"
#include "gateway/proto/envelope.h"
#include "gateway/proto/sign.h"
#include "gateway/proto/topology.h"

#define Q_TPUT "bench.tput"
#define Q_LAT "bench.lat"
#define Q_REQ "bench.req"
#define Q_REP "bench.rep"
#define X_TOPIC "bench.topic"
#define X_DLX "bench.dlx"
#define CH 1
/* A consumer that sees nothing for this long gives up: the run is broken. */
#define IDLE_TIMEOUT_S 30

struct opts {
  const char *uri;
  const char *mode;
  const char *label;
  size_t n, size, window, warmup;
  unsigned prefetch;
  double rate;
};

/* The variants' switches (see the top of the file); all 0 is the baseline. */
enum {
  QA_DLX = 1,
  QA_MAXLEN = 2,
  QA_OVERFLOW = 4,
  QA_TTL = 8,
  QA_EXPIRES = 16,
  QA_TYPE = 32,
  QA_V2 = 64,
};
static struct {
  int topic, mandatory, envelope, hold, backlog;
  unsigned qargs; /* QA_* */
  size_t ack_every;
  long broker_pid;
} g_var = {.ack_every = 1};

/* -e: the envelope every publish carries (msgId changes per publish). */
static fl_envelope g_env;

static struct amqp_connection_info g_ci;

static void die(const char *what) {
  fprintf(stderr, "amqp_baseline: %s\n", what);
  exit(1);
}

static void die_reply(amqp_rpc_reply_t r, const char *what) {
  if (r.reply_type == AMQP_RESPONSE_NORMAL)
    return;
  char msg[512];
  if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION)
    snprintf(msg, sizeof msg, "%s: %s", what, amqp_error_string2(r.library_error));
  else
    snprintf(msg, sizeof msg, "%s: broker refused (method 0x%08x)", what, r.reply.id);
  die(msg);
}

/* Opens a connection with channel CH; the connection belongs to the calling thread. */
static amqp_connection_state_t conn_open(void) {
  amqp_connection_state_t c = amqp_new_connection();
  amqp_socket_t *s = c ? amqp_tcp_socket_new(c) : NULL;
  if (!s)
    die("out of memory");
  if (amqp_socket_open(s, g_ci.host, g_ci.port) != AMQP_STATUS_OK)
    die("cannot connect to the broker (is it running? check the URI)");
  die_reply(
      amqp_login(c, g_ci.vhost, 0, 131072, 0, AMQP_SASL_METHOD_PLAIN, g_ci.user, g_ci.password),
      "login");
  amqp_channel_open(c, CH);
  die_reply(amqp_get_rpc_reply(c), "channel.open");
  return c;
}

static void conn_close(amqp_connection_state_t *c) {
  if (!*c)
    return;
  amqp_channel_close(*c, CH, AMQP_REPLY_SUCCESS);
  amqp_connection_close(*c, AMQP_REPLY_SUCCESS);
  amqp_destroy_connection(*c);
  *c = NULL;
}

static amqp_table_entry_t entry_str(const char *k, const char *v) {
  amqp_table_entry_t e = {.key = amqp_cstring_bytes(k)};
  e.value.kind = AMQP_FIELD_KIND_UTF8;
  e.value.value.bytes = amqp_cstring_bytes(v);
  return e;
}

static amqp_table_entry_t entry_long(const char *k, int64_t v) {
  amqp_table_entry_t e = {.key = amqp_cstring_bytes(k)};
  e.value.kind = AMQP_FIELD_KIND_I64;
  e.value.value.i64 = v;
  return e;
}

/* -x: the topic exchange and -q dlx's dead-letter exchange, durable. */
static void exchanges_declare(amqp_connection_state_t c) {
  if (g_var.topic) {
    amqp_exchange_declare(c, CH, amqp_cstring_bytes(X_TOPIC), amqp_cstring_bytes("topic"), 0, 1, 0,
                          0, amqp_empty_table);
    die_reply(amqp_get_rpc_reply(c), "exchange.declare " X_TOPIC);
  }
  if (g_var.qargs & QA_DLX) {
    amqp_exchange_declare(c, CH, amqp_cstring_bytes(X_DLX), amqp_cstring_bytes("fanout"), 0, 1, 0,
                          0, amqp_empty_table);
    die_reply(amqp_get_rpc_reply(c), "exchange.declare " X_DLX);
  }
}

/* Declares q durable (not exclusive, not auto-delete) and empties it; with
 * -q, with the inbox arguments chosen, and with -x, bound to the topic
 * exchange as a fleet inbox is (its own name and two broadcast keys). A
 * queue left by an earlier run with other arguments is deleted first. */
static void queue_fresh(amqp_connection_state_t c, const char *q) {
  amqp_table_entry_t args[7];
  int na = 0;
  if (g_var.qargs & QA_DLX)
    args[na++] = entry_str("x-dead-letter-exchange", X_DLX);
  if (g_var.qargs & QA_MAXLEN)
    args[na++] = entry_long("x-max-length", FL_BROKER_DEFAULT_MAX_LENGTH);
  if (g_var.qargs & QA_OVERFLOW)
    args[na++] = entry_str("x-overflow", "reject-publish-dlx");
  if (g_var.qargs & QA_TTL)
    args[na++] = entry_long("x-message-ttl", FL_BROKER_DEFAULT_MESSAGE_TTL_MS);
  if (g_var.qargs & QA_EXPIRES)
    args[na++] = entry_long("x-expires", FL_BROKER_DEFAULT_QUEUE_EXPIRES_MS);
  if (g_var.qargs & QA_TYPE)
    args[na++] = entry_str("x-queue-type", "classic");
  if (g_var.qargs & QA_V2)
    args[na++] = entry_long("x-queue-version", 2);
  amqp_table_t table = {na, args};
  if (na) {
    amqp_queue_delete(c, CH, amqp_cstring_bytes(q), 0, 0);
    die_reply(amqp_get_rpc_reply(c), "queue.delete");
  }
  exchanges_declare(c);
  amqp_queue_declare(c, CH, amqp_cstring_bytes(q), 0, 1, 0, 0, table);
  die_reply(amqp_get_rpc_reply(c), "queue.declare");
  if (g_var.topic) {
    const char *keys[] = {q, "broadcast.benchhost.all", "broadcast.all"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
      amqp_queue_bind(c, CH, amqp_cstring_bytes(q), amqp_cstring_bytes(X_TOPIC),
                      amqp_cstring_bytes(keys[i]), amqp_empty_table);
      die_reply(amqp_get_rpc_reply(c), "queue.bind");
    }
  }
  amqp_queue_purge(c, CH, amqp_cstring_bytes(q));
  die_reply(amqp_get_rpc_reply(c), "queue.purge");
}

static void queue_drop(amqp_connection_state_t c, const char *q) {
  amqp_queue_delete(c, CH, amqp_cstring_bytes(q), 0, 0);
  die_reply(amqp_get_rpc_reply(c), "queue.delete");
}

/* ---- a publisher with pipelined confirms ---------------------------------------- */

struct pub {
  amqp_connection_state_t c;
  uint64_t published; /* sequence numbers 1..published were sent */
  uint64_t confirmed; /* acked or nacked so far */
  uint64_t nacked;
  uint64_t low;        /* every seq below low is confirmed */
  unsigned char *done; /* done[seq]: confirmed; sized for every seq we will send */
  size_t cap;
};

static void pub_open(struct pub *p, size_t total) {
  memset(p, 0, sizeof *p);
  p->c = conn_open();
  amqp_confirm_select(p->c, CH);
  die_reply(amqp_get_rpc_reply(p->c), "confirm.select");
  p->cap = total + 2;
  p->done = calloc(p->cap, 1);
  if (!p->done)
    die("out of memory");
  p->low = 1;
}

static void pub_mark(struct pub *p, uint64_t tag, int multiple, int nack) {
  uint64_t from = multiple ? p->low : tag;
  for (uint64_t s = from; s <= tag && s < p->cap; s++) {
    if (!p->done[s]) {
      p->done[s] = 1;
      p->confirmed++;
      p->nacked += nack != 0;
    }
  }
  while (p->low < p->cap && p->done[p->low])
    p->low++;
}

/* Reads one frame (waiting at most tv, NULL = forever); returns 1 if it
 * read one, 0 on timeout. */
static int pub_read(struct pub *p, struct timeval *tv) {
  amqp_frame_t f;
  int rc = amqp_simple_wait_frame_noblock(p->c, &f, tv);
  if (rc == AMQP_STATUS_TIMEOUT)
    return 0;
  if (rc != AMQP_STATUS_OK)
    die("publisher: connection lost");
  if (f.frame_type == AMQP_FRAME_METHOD) {
    if (f.payload.method.id == AMQP_BASIC_ACK_METHOD) {
      amqp_basic_ack_t *a = f.payload.method.decoded;
      pub_mark(p, a->delivery_tag, a->multiple, 0);
    } else if (f.payload.method.id == AMQP_BASIC_NACK_METHOD) {
      amqp_basic_nack_t *a = f.payload.method.decoded;
      pub_mark(p, a->delivery_tag, a->multiple, 1);
    } else if (f.payload.method.id == AMQP_CHANNEL_CLOSE_METHOD ||
               f.payload.method.id == AMQP_CONNECTION_CLOSE_METHOD) {
      die("publisher: the broker closed the channel");
    }
  }
  amqp_maybe_release_buffers(p->c);
  return 1;
}

/* Reads whatever confirms have already arrived, without waiting. */
static void pub_drain(struct pub *p) {
  struct timeval zero = {0, 0};
  while (pub_read(p, &zero)) {
  }
}

static void pub_send(struct pub *p, const char *q, const char *body, size_t len) {
  amqp_basic_properties_t props;
  fl_broker_env_hdr hdr;
  memset(&props, 0, sizeof props);
  props._flags = AMQP_BASIC_DELIVERY_MODE_FLAG | AMQP_BASIC_CONTENT_TYPE_FLAG;
  props.delivery_mode = AMQP_DELIVERY_PERSISTENT;
  props.content_type = amqp_cstring_bytes("application/octet-stream");
  if (g_var.envelope) {
    /* What fleet's broker link sends: a new message id each time, the rest
     * as signed at start. */
    fl_uuid(g_env.msg_id);
    fl_broker_env_properties(&g_env, g_var.envelope > 1, &hdr, &props);
  }
  amqp_bytes_t b = {len, (void *)body};
  amqp_bytes_t ex = g_var.topic ? amqp_cstring_bytes(X_TOPIC) : amqp_empty_bytes;
  if (amqp_basic_publish(p->c, CH, ex, amqp_cstring_bytes(q), g_var.mandatory, 0, &props, b) !=
      AMQP_STATUS_OK)
    die("publish failed");
  p->published++;
}

/* Waits until every publish is confirmed; fails on a nack. */
static void pub_finish(struct pub *p) {
  struct timeval tv = {IDLE_TIMEOUT_S, 0};
  while (p->confirmed < p->published)
    if (!pub_read(p, &tv))
      die("publisher: confirms stopped arriving");
  if (p->nacked)
    die("the broker nacked some publishes");
}

static void pub_close(struct pub *p) {
  conn_close(&p->c);
  free(p->done);
  p->done = NULL;
}

/* ---- CPU time ------------------------------------------------------------------- */

static uint64_t tv_us(struct timeval tv) {
  return (uint64_t)tv.tv_sec * 1000000u + (uint64_t)tv.tv_usec;
}

/* The calling thread's CPU time so far, user + system, in microseconds. */
static uint64_t thread_cpu_us(void) {
  struct rusage ru;
  if (getrusage(RUSAGE_THREAD, &ru) != 0)
    return 0;
  return tv_us(ru.ru_utime) + tv_us(ru.ru_stime);
}

/* This process's CPU time so far (every thread), in microseconds. */
static uint64_t self_cpu_us(void) {
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) != 0)
    return 0;
  return tv_us(ru.ru_utime) + tv_us(ru.ru_stime);
}

/* Process pid's CPU time so far (utime + stime of /proc/PID/stat), in
 * microseconds; dies if it cannot be read. */
static uint64_t proc_cpu_us(long pid) {
  char path[64], buf[4096];
  snprintf(path, sizeof path, "/proc/%ld/stat", pid);
  FILE *f = fopen(path, "r");
  if (!f)
    die("-B: cannot read the process's /proc/PID/stat");
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  /* Fields 14 and 15, counted after the ")" that ends the command name. */
  char *p = strrchr(buf, ')');
  unsigned long long ut = 0, st = 0;
  if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
    die("-B: cannot parse /proc/PID/stat");
  return (ut + st) * 1000000u / (uint64_t)sysconf(_SC_CLK_TCK);
}

/* ---- a consumer thread ---------------------------------------------------------- */

struct cons {
  const char *queue;
  unsigned prefetch;
  size_t expect; /* stops after this many */
  size_t warmup; /* the first warmup latencies are not recorded */
  int latency;   /* record now - the timestamp in the body */
  int echo_to;   /* rtt responder: publish the body back to Q_REP */
  atomic_int ready;
  atomic_int go;   /* -b: the publisher is done, consume now */
  uint64_t t_last; /* when the last one was consumed */
  uint64_t cpu_us; /* the thread's CPU time, user + system, when it ended */
  uint64_t *lat;
  size_t nlat;
  pthread_t th;
};

static void *cons_main(void *arg) {
  struct cons *k = arg;
  amqp_connection_state_t c = conn_open();
  struct pub echo;
  if (k->echo_to)
    pub_open(&echo, k->expect);
  amqp_basic_qos(c, CH, 0, (uint16_t)k->prefetch, 0);
  die_reply(amqp_get_rpc_reply(c), "basic.qos");
  amqp_basic_consume(c, CH, amqp_cstring_bytes(k->queue), amqp_empty_bytes, 0, 0, 0,
                     amqp_empty_table);
  die_reply(amqp_get_rpc_reply(c), "basic.consume");
  atomic_store(&k->ready, 1);
  size_t got = 0, nheld = 0;
  uint64_t *held = g_var.hold ? calloc(k->prefetch, sizeof *held) : NULL;
  if (g_var.hold && !held)
    die("out of memory");
  if (g_var.backlog)
    while (!atomic_load(&k->go))
      fb_sleep_until(fb_now_ns() + 1000000);
  while (got < k->expect) {
    amqp_envelope_t env;
    struct timeval tv = {IDLE_TIMEOUT_S, 0};
    amqp_maybe_release_buffers(c);
    amqp_rpc_reply_t r = amqp_consume_message(c, &env, &tv, 0);
    if (r.reply_type != AMQP_RESPONSE_NORMAL) {
      if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION && r.library_error == AMQP_STATUS_TIMEOUT)
        die("consumer: no message for 30 s");
      if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION &&
          r.library_error == AMQP_STATUS_UNEXPECTED_STATE) {
        amqp_frame_t f; /* some other frame (e.g. a channel.close): read it, then see */
        if (amqp_simple_wait_frame(c, &f) != AMQP_STATUS_OK)
          die("consumer: connection lost");
        if (f.frame_type == AMQP_FRAME_METHOD &&
            (f.payload.method.id == AMQP_CHANNEL_CLOSE_METHOD ||
             f.payload.method.id == AMQP_CONNECTION_CLOSE_METHOD))
          die("consumer: the broker closed the channel");
        continue;
      }
      die("consumer: connection lost");
    }
    uint64_t now = fb_now_ns();
    if (k->latency && env.message.body.len >= 8 && got >= k->warmup) {
      uint64_t then;
      memcpy(&then, env.message.body.bytes, sizeof then);
      k->lat[k->nlat++] = now - then;
    }
    if (k->echo_to) {
      pub_send(&echo, Q_REP, env.message.body.bytes, env.message.body.len);
      pub_drain(&echo);
    }
    got++;
    if (g_var.hold) {
      /* -H: acks wait until the prefetch is full (or the last message),
       * then go one by one, oldest first. */
      if (nheld < k->prefetch)
        held[nheld++] = env.delivery_tag;
      if (nheld == k->prefetch || got == k->expect) {
        for (size_t i = 0; i < nheld; i++)
          if (amqp_basic_ack(c, CH, held[i], 0) != AMQP_STATUS_OK)
            die("consumer: ack failed");
        nheld = 0;
      }
    } else if (g_var.ack_every <= 1) {
      if (amqp_basic_ack(c, CH, env.delivery_tag, 0) != AMQP_STATUS_OK)
        die("consumer: ack failed");
    } else if (got % g_var.ack_every == 0 || got == k->expect) {
      /* -a: every delivery up to this one at once. */
      if (amqp_basic_ack(c, CH, env.delivery_tag, 1) != AMQP_STATUS_OK)
        die("consumer: ack failed");
    }
    amqp_destroy_envelope(&env);
    k->t_last = now;
  }
  k->cpu_us = thread_cpu_us();
  free(held);
  if (k->echo_to) {
    pub_finish(&echo);
    pub_close(&echo);
  }
  conn_close(&c);
  return NULL;
}

static void cons_start(struct cons *k) {
  if (k->latency) {
    k->lat = calloc(k->expect, sizeof *k->lat);
    if (!k->lat)
      die("out of memory");
  }
  if (pthread_create(&k->th, NULL, cons_main, k) != 0)
    die("cannot start a thread");
  while (!atomic_load(&k->ready))
    fb_sleep_until(fb_now_ns() + 1000000);
}

/* ---- the three measurements ---------------------------------------------------- */

static void fill(char *body, size_t size) {
  for (size_t i = 0; i < size; i++)
    body[i] = (char)('a' + i % 26);
}

static void run_tput(const struct opts *o, amqp_connection_state_t admin) {
  queue_fresh(admin, Q_TPUT);
  struct cons k = {.queue = Q_TPUT, .prefetch = o->prefetch, .expect = o->n};
  cons_start(&k);
  struct pub p;
  pub_open(&p, o->n);
  char *body = malloc(o->size);
  if (!body)
    die("out of memory");
  fill(body, o->size);
  uint64_t b0 = g_var.broker_pid ? proc_cpu_us(g_var.broker_pid) : 0;
  uint64_t c0 = self_cpu_us(), k0 = k.cpu_us = 0;
  uint64_t t0 = fb_now_ns();
  for (size_t i = 0; i < o->n; i++) {
    while (p.published - p.confirmed >= o->window)
      pub_read(&p, NULL);
    pub_send(&p, Q_TPUT, body, o->size);
    pub_drain(&p);
  }
  pub_finish(&p);
  uint64_t t_pub = fb_now_ns();
  atomic_store(&k.go, 1);
  pthread_join(k.th, NULL);
  uint64_t b1 = g_var.broker_pid ? proc_cpu_us(g_var.broker_pid) : 0;
  uint64_t c1 = self_cpu_us();
  double secs = (double)(k.t_last - t0) / 1e9;
  printf("RESULT %s.msgs %zu\n", o->label, o->n);
  printf("RESULT %s.secs %.3f\n", o->label, secs);
  printf("RESULT %s.msgs_per_s %.1f\n", o->label, (double)o->n / secs);
  printf("RESULT %s.confirmed_per_s %.1f\n", o->label, (double)o->n / ((double)(t_pub - t0) / 1e9));
  if (g_var.broker_pid) {
    /* The broker's from just before the first publish to after the last
     * consume; the client's over the same span, the consumer's alone (its
     * thread includes its connection set-up, a few hundred us). */
    printf("RESULT %s.broker_us_per_msg %.1f\n", o->label, (double)(b1 - b0) / (double)o->n);
    printf("RESULT %s.client_us_per_msg %.1f\n", o->label, (double)(c1 - c0) / (double)o->n);
    printf("RESULT %s.consumer_us_per_msg %.1f\n", o->label,
           (double)(k.cpu_us - k0) / (double)o->n);
  }
  pub_close(&p);
  free(body);
  queue_drop(admin, Q_TPUT);
}

/* Paced publishing of n + warmup bodies that start with the send time. */
static void paced_publish(const struct opts *o, const char *q) {
  struct pub p;
  pub_open(&p, o->n + o->warmup);
  char *body = malloc(o->size < 8 ? 8 : o->size);
  if (!body)
    die("out of memory");
  fill(body, o->size);
  uint64_t period = (uint64_t)(1e9 / o->rate);
  uint64_t t0 = fb_now_ns();
  for (size_t i = 0; i < o->n + o->warmup; i++) {
    fb_sleep_until(t0 + i * period);
    uint64_t now = fb_now_ns();
    memcpy(body, &now, sizeof now);
    pub_send(&p, q, body, o->size < 8 ? 8 : o->size);
    pub_drain(&p);
  }
  pub_finish(&p);
  pub_close(&p);
  free(body);
}

static void run_lat(const struct opts *o, amqp_connection_state_t admin) {
  queue_fresh(admin, Q_LAT);
  struct cons k = {.queue = Q_LAT,
                   .prefetch = o->prefetch,
                   .expect = o->n + o->warmup,
                   .warmup = o->warmup,
                   .latency = 1};
  cons_start(&k);
  paced_publish(o, Q_LAT);
  pthread_join(k.th, NULL);
  fb_report_latency(o->label, k.lat, k.nlat);
  free(k.lat);
  queue_drop(admin, Q_LAT);
}

static void run_rtt(const struct opts *o, amqp_connection_state_t admin) {
  queue_fresh(admin, Q_REQ);
  queue_fresh(admin, Q_REP);
  struct cons responder = {
      .queue = Q_REQ, .prefetch = o->prefetch, .expect = o->n + o->warmup, .echo_to = 1};
  struct cons replies = {.queue = Q_REP,
                         .prefetch = o->prefetch,
                         .expect = o->n + o->warmup,
                         .warmup = o->warmup,
                         .latency = 1};
  cons_start(&responder);
  cons_start(&replies);
  paced_publish(o, Q_REQ);
  pthread_join(responder.th, NULL);
  pthread_join(replies.th, NULL);
  fb_report_latency(o->label, replies.lat, replies.nlat);
  free(replies.lat);
  queue_drop(admin, Q_REQ);
  queue_drop(admin, Q_REP);
}

static void usage(void) {
  fprintf(stderr, "usage: amqp_baseline URI tput|lat|rtt [-n N] [-s SIZE] [-w WINDOW] "
                  "[-r RATE] [-W WARMUP] [-p PREFETCH] [-l LABEL]\n"
                  "       variants: [-x] [-m] [-q dlx,maxlen,overflow,ttl,expires,type|inbox] "
                  "[-e|-E] [-a ACK_EVERY] [-H] [-b] [-B BROKER_PID]\n");
  exit(2);
}

/* -q's comma list as QA_* bits; dies on an unknown name. */
static unsigned parse_qargs(const char *list) {
  static const struct {
    const char *name;
    unsigned bit;
  } names[] = {{"dlx", QA_DLX},
               {"maxlen", QA_MAXLEN},
               {"overflow", QA_OVERFLOW},
               {"ttl", QA_TTL},
               {"expires", QA_EXPIRES},
               {"type", QA_TYPE},
               {"v2", QA_V2},
               {"inbox", QA_DLX | QA_MAXLEN | QA_OVERFLOW | QA_TTL | QA_EXPIRES | QA_TYPE}};
  unsigned bits = 0;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", list);
  for (char *save = NULL, *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
    size_t i = 0;
    while (i < sizeof names / sizeof *names && strcmp(names[i].name, w) != 0)
      i++;
    if (i == sizeof names / sizeof *names)
      usage();
    bits |= names[i].bit;
  }
  return bits;
}

/* -e: an envelope as fleet's broker link publishes one for a sealed
 * fleet_send from one agent on host benchhost to another on benchpeer,
 * signed with a bench key. */
static void envelope_init(void) {
  unsigned char pk[crypto_sign_PUBLICKEYBYTES], sk[crypto_sign_SECRETKEYBYTES];
  if (sodium_init() < 0)
    die("libsodium cannot start");
  crypto_sign_keypair(pk, sk);
  memset(&g_env, 0, sizeof g_env);
  snprintf(g_env.v, sizeof g_env.v, "%s", FL_ENVELOPE_VERSION);
  snprintf(g_env.kind, sizeof g_env.kind, "%s", fl_envelope_kind_name(FL_KIND_SEND));
  fl_uuid(g_env.msg_id);
  fl_uuid(g_env.trace_id);
  fl_uuid(g_env.from);
  fl_uuid(g_env.to);
  snprintf(g_env.from_name, sizeof g_env.from_name, "bench-sender");
  snprintf(g_env.host, sizeof g_env.host, "benchhost");
  long long now = fl_now_ms();
  fl_rfc3339(now, g_env.ts);
  fl_rfc3339(now + FL_BROKER_DEFAULT_MESSAGE_TTL_MS, g_env.expires_at);
  snprintf(g_env.sealed_to, sizeof g_env.sealed_to, "benchpeer");
  if (fl_sign_envelope(&g_env, "bench", 5, sk) != 0)
    die("cannot sign the envelope");
}

int main(int argc, char **argv) {
  struct opts o = {
      .n = 20000, .size = 1024, .window = 1000, .warmup = 10, .prefetch = 100, .rate = 200};
  if (argc < 3)
    usage();
  o.uri = argv[1];
  o.mode = argv[2];
  o.label = o.mode;
  optind = 3;
  int ch;
  while ((ch = getopt(argc, argv, "n:s:w:r:W:p:l:xmq:eEa:HbB:")) != -1) {
    switch (ch) {
    case 'x':
      g_var.topic = 1;
      break;
    case 'm':
      g_var.mandatory = 1;
      break;
    case 'q':
      g_var.qargs |= parse_qargs(optarg);
      break;
    case 'e':
      g_var.envelope = 1;
      break;
    case 'E':
      g_var.envelope = 2;
      break;
    case 'a':
      g_var.ack_every = strtoul(optarg, NULL, 10);
      break;
    case 'H':
      g_var.hold = 1;
      break;
    case 'b':
      g_var.backlog = 1;
      break;
    case 'B':
      g_var.broker_pid = strtol(optarg, NULL, 10);
      break;
    case 'n':
      o.n = strtoul(optarg, NULL, 10);
      break;
    case 's':
      o.size = strtoul(optarg, NULL, 10);
      break;
    case 'w':
      o.window = strtoul(optarg, NULL, 10);
      break;
    case 'r':
      o.rate = strtod(optarg, NULL);
      break;
    case 'W':
      o.warmup = strtoul(optarg, NULL, 10);
      break;
    case 'p':
      o.prefetch = (unsigned)strtoul(optarg, NULL, 10);
      break;
    case 'l':
      o.label = optarg;
      break;
    default:
      usage();
    }
  }
  if (o.n == 0 || o.window == 0 || o.rate <= 0 || o.prefetch == 0 || o.prefetch > 65535 ||
      g_var.ack_every == 0 || g_var.broker_pid < 0)
    usage();
  if (g_var.envelope)
    envelope_init();
  char *uri = strdup(o.uri);
  amqp_default_connection_info(&g_ci);
  if (!uri || amqp_parse_url(uri, &g_ci) != AMQP_STATUS_OK)
    die("bad URI: expected amqp://user:pass@host:port/vhost");
  /* "amqp://host/" names the empty vhost, which no broker has; it means "/". */
  if (!g_ci.vhost || !g_ci.vhost[0])
    g_ci.vhost = "/";
  amqp_connection_state_t admin = conn_open();
  if (strcmp(o.mode, "tput") == 0)
    run_tput(&o, admin);
  else if (strcmp(o.mode, "lat") == 0)
    run_lat(&o, admin);
  else if (strcmp(o.mode, "rtt") == 0)
    run_rtt(&o, admin);
  else
    usage();
  conn_close(&admin);
  free(uri);
  return 0;
}
