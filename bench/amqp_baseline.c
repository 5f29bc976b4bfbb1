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
 * rabbitmq-c connections are not thread-safe, so each thread has its own
 * connection(s). Results are printed as "RESULT LABEL.KEY VALUE" lines on
 * stdout; progress and errors go to stderr. Exit status 0, or 1 on failure. */
#include <amqp.h>
#include <amqp_tcp_socket.h>

#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "bench_util.h"

#define Q_TPUT "bench.tput"
#define Q_LAT "bench.lat"
#define Q_REQ "bench.req"
#define Q_REP "bench.rep"
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

/* Declares q durable (not exclusive, not auto-delete) and empties it. */
static void queue_fresh(amqp_connection_state_t c, const char *q) {
  amqp_queue_declare(c, CH, amqp_cstring_bytes(q), 0, 1, 0, 0, amqp_empty_table);
  die_reply(amqp_get_rpc_reply(c), "queue.declare");
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
  memset(&props, 0, sizeof props);
  props._flags = AMQP_BASIC_DELIVERY_MODE_FLAG | AMQP_BASIC_CONTENT_TYPE_FLAG;
  props.delivery_mode = AMQP_DELIVERY_PERSISTENT;
  props.content_type = amqp_cstring_bytes("application/octet-stream");
  amqp_bytes_t b = {len, (void *)body};
  if (amqp_basic_publish(p->c, CH, amqp_empty_bytes, amqp_cstring_bytes(q), 0, 0, &props, b) !=
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

/* ---- a consumer thread ---------------------------------------------------------- */

struct cons {
  const char *queue;
  unsigned prefetch;
  size_t expect; /* stops after this many */
  size_t warmup; /* the first warmup latencies are not recorded */
  int latency;   /* record now - the timestamp in the body */
  int echo_to;   /* rtt responder: publish the body back to Q_REP */
  atomic_int ready;
  uint64_t t_last; /* when the last one was consumed */
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
  size_t got = 0;
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
    if (amqp_basic_ack(c, CH, env.delivery_tag, 0) != AMQP_STATUS_OK)
      die("consumer: ack failed");
    amqp_destroy_envelope(&env);
    got++;
    k->t_last = now;
  }
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
  uint64_t t0 = fb_now_ns();
  for (size_t i = 0; i < o->n; i++) {
    while (p.published - p.confirmed >= o->window)
      pub_read(&p, NULL);
    pub_send(&p, Q_TPUT, body, o->size);
    pub_drain(&p);
  }
  pub_finish(&p);
  uint64_t t_pub = fb_now_ns();
  pthread_join(k.th, NULL);
  double secs = (double)(k.t_last - t0) / 1e9;
  printf("RESULT %s.msgs %zu\n", o->label, o->n);
  printf("RESULT %s.secs %.3f\n", o->label, secs);
  printf("RESULT %s.msgs_per_s %.1f\n", o->label, (double)o->n / secs);
  printf("RESULT %s.confirmed_per_s %.1f\n", o->label, (double)o->n / ((double)(t_pub - t0) / 1e9));
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
                  "[-r RATE] [-W WARMUP] [-p PREFETCH] [-l LABEL]\n");
  exit(2);
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
  while ((ch = getopt(argc, argv, "n:s:w:r:W:p:l:")) != -1) {
    switch (ch) {
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
  if (o.n == 0 || o.window == 0 || o.rate <= 0 || o.prefetch == 0 || o.prefetch > 65535)
    usage();
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
