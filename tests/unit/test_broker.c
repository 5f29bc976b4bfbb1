/* test_broker.c — unit tests for gateway/broker/broker.c against a real broker.
 *
 * Without FLEET_TEST_AMQP_URI only the checks that need no broker run
 * (argument and config validation, a link that cannot connect failing
 * publishes fast and stopping cleanly); the rest print a skip line. With it
 * (tests/rabbitmq.sh start DIR PORT gives amqp://guest:guest@127.0.0.1:PORT)
 * the link is driven on a real uv loop: an inbox round trip with every
 * envelope field, an unroutable mandatory publish, 2000 pipelined publishes
 * all confirmed, a rejected message landing in fleet.dlq (read back over a
 * second, raw rabbitmq-c connection), a removed inbox keeping its messages,
 * a second gateway refused the same inbox, and an idle link used by the
 * loop thread itself: deliveries read and acked one by one and in a
 * burst, every ack on the broker, and publishes sent and confirmed. If FLEET_TEST_RABBITMQCTL is
 * set to a command prefix (e.g. "tests/rabbitmq.sh ctl DIR"), the link is
 * also cut with close_all_connections and must come back with its inbox.
 *
 * Nothing here measures time: waits are bounded only so a broken link fails
 * the test instead of hanging it. */
/* cmocka needs these first. */
// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <amqp.h>
#include <amqp_tcp_socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/limits.h"
#include "gateway/broker/broker.h"
#include "gateway/broker/broker_headers.h"
#include "gateway/proto/topology.h"
#include "tests/support/test_util.h"

/* A safety net, not a measurement: a healthy local broker answers in
 * milliseconds. */
#define WAIT_MS 30000
#define N_PIPELINED 2000

struct got {
  uint64_t tag;
  fl_broker_source source;
  char gid[FL_ID_LEN];
  char routing_key[256];
  fl_envelope env;
  char *body;
  size_t len;
  char bad[256]; /* d->bad, "" for none */
};

struct fx {
  int batch_open, batches, outside_batch; /* on_batch brackets every delivery */
  uv_loop_t loop;
  uv_timer_t timer;
  int timed_out;
  fl_broker *b;
  int up, downs, ups;
  char why[512];
  /* publishes */
  int done, done_ok, done_fail;
  int last_status;
  char last_why[512];
  /* inbox events */
  int inbox_events, inbox_status;
  char inbox_gid[FL_ID_LEN];
  char inbox_why[512];
  /* deliveries */
  struct got got[N_PIPELINED + 16];
  size_t ngot;
  int auto_ack;     /* ack each delivery and only count it */
  int ack_and_keep; /* ack each delivery and keep it too */
};

static const char *uri;

static void on_state(void *ctx, int up, const char *why) {
  struct fx *f = ctx;
  f->up = up;
  if (up)
    f->ups++;
  else
    f->downs++;
  snprintf(f->why, sizeof(f->why), "%s", why);
}

static void on_delivery(void *ctx, const fl_broker_delivery *d) {
  struct fx *f = ctx;
  if (!f->batch_open)
    f->outside_batch++;
  if (f->auto_ack) {
    assert_int_equal(fl_broker_ack(f->b, d->tag), 0);
    f->ngot++;
    return;
  }
  assert_true(f->ngot < sizeof(f->got) / sizeof(f->got[0]));
  struct got *g = &f->got[f->ngot++];
  g->tag = d->tag;
  g->source = d->source;
  snprintf(g->gid, sizeof(g->gid), "%s", d->gid);
  snprintf(g->routing_key, sizeof(g->routing_key), "%s", d->routing_key);
  g->env = *d->env;
  snprintf(g->bad, sizeof(g->bad), "%s", d->bad ? d->bad : "");
  g->len = d->len;
  g->body = malloc(d->len + 1);
  assert_non_null(g->body);
  if (d->len)
    memcpy(g->body, d->body, d->len);
  g->body[d->len] = '\0';
  if (f->ack_and_keep)
    assert_int_equal(fl_broker_ack(f->b, d->tag), 0);
}

static void on_publish_done(void *ctx, void *req, int status, const char *why) {
  struct fx *f = ctx;
  (void)req;
  f->done++;
  if (status == 0)
    f->done_ok++;
  else
    f->done_fail++;
  f->last_status = status;
  snprintf(f->last_why, sizeof(f->last_why), "%s", why);
}

static void on_inbox(void *ctx, const char *gid, int status, const char *why) {
  struct fx *f = ctx;
  f->inbox_events++;
  f->inbox_status = status;
  snprintf(f->inbox_gid, sizeof(f->inbox_gid), "%s", gid);
  snprintf(f->inbox_why, sizeof(f->inbox_why), "%s", why);
}

static void on_batch(void *ctx, int begin) {
  struct fx *f = ctx;
  if (begin) {
    assert_false(f->batch_open);
    f->batch_open = 1;
  } else {
    assert_true(f->batch_open);
    f->batch_open = 0;
    f->batches++;
  }
}

static const fl_broker_events events = {on_state, on_delivery, on_publish_done,
                                        on_inbox, on_batch,    NULL};

static void on_timer(uv_timer_t *t) {
  struct fx *f = t->data;
  f->timed_out = 1;
}

/* Runs the loop until *flag reaches want (or the safety net fires). */
static void run_until(struct fx *f, const int *flag, int want) {
  f->timed_out = 0;
  uv_timer_start(&f->timer, on_timer, WAIT_MS, 0);
  while (*flag < want && !f->timed_out)
    uv_run(&f->loop, UV_RUN_ONCE);
  uv_timer_stop(&f->timer);
  assert_false(f->timed_out);
}

static void run_until_got(struct fx *f, size_t want) {
  f->timed_out = 0;
  uv_timer_start(&f->timer, on_timer, WAIT_MS, 0);
  while (f->ngot < want && !f->timed_out)
    uv_run(&f->loop, UV_RUN_ONCE);
  uv_timer_stop(&f->timer);
  assert_false(f->timed_out);
}

static void clear_got(struct fx *f) {
  for (size_t i = 0; i < f->ngot && i < sizeof(f->got) / sizeof(f->got[0]); i++) {
    free(f->got[i].body);
    f->got[i].body = NULL;
  }
  f->ngot = 0;
}

static void make_uuid(char out[FL_ID_LEN]) {
  unsigned char r[16];
  FILE *fp = fopen("/dev/urandom", "rb");
  assert_non_null(fp);
  assert_int_equal(fread(r, 1, sizeof(r), fp), sizeof(r));
  fclose(fp);
  r[6] = (unsigned char)((r[6] & 0x0f) | 0x40);
  r[8] = (unsigned char)((r[8] & 0x3f) | 0x80);
  snprintf(out, FL_ID_LEN, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
           r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11], r[12], r[13],
           r[14], r[15]);
}

static void make_env(fl_envelope *e, const char *to) {
  memset(e, 0, sizeof(*e));
  snprintf(e->v, sizeof(e->v), "1.0");
  snprintf(e->kind, sizeof(e->kind), "SEND");
  make_uuid(e->msg_id);
  make_uuid(e->trace_id);
  make_uuid(e->from);
  snprintf(e->to, sizeof(e->to), "%s", to);
  make_uuid(e->in_reply_to);
  make_uuid(e->turn_id);
  make_uuid(e->spawn_id);
  snprintf(e->from_name, sizeof(e->from_name), "arch-sonnet");
  snprintf(e->host, sizeof(e->host), "test-host");
  snprintf(e->ts, sizeof(e->ts), "2026-01-02T03:04:05.678Z");
  snprintf(e->expires_at, sizeof(e->expires_at), "2026-01-02T03:05:05.678Z");
  snprintf(e->sig, sizeof(e->sig), "c2lnbmF0dXJlLXNlYW0=");
}

/* The two forms of the envelope's headers, without a broker. */
static void test_env_headers(void **state) {
  (void)state;
  fl_envelope env, back;
  char err[256];
  make_env(&env, "a0b1c2d3-0000-4000-8000-000000000001");
  fl_broker_env_hdr h;
  amqp_basic_properties_t p;
  /* One header per present field, read back. */
  fl_broker_env_properties(&env, 0, &h, &p);
  assert_int_equal(p.headers.num_entries, FL_ENVELOPE_NFIELDS - 1); /* no sealedTo */
  assert_int_equal(fl_broker_env_from_headers(&p.headers, 0, &back, err, sizeof err), 0);
  assert_memory_equal(&back, &env, sizeof env);
  /* Packed: the one header `env`, read back the same. */
  fl_broker_env_properties(&env, 1, &h, &p);
  assert_int_equal(p.headers.num_entries, 1);
  assert_int_equal(p.headers.entries[0].key.len, strlen(FL_BROKER_ENV_HEADER));
  assert_memory_equal(p.headers.entries[0].key.bytes, FL_BROKER_ENV_HEADER, 3);
  memset(&back, 0x55, sizeof back);
  assert_int_equal(fl_broker_env_from_headers(&p.headers, 0, &back, err, sizeof err), 0);
  assert_memory_equal(&back, &env, sizeof env);
  /* With both forms present the packed one is read, the others ignored. */
  amqp_table_entry_t both[2] = {fl_broker_entry_str("kind", "REPLY"), p.headers.entries[0]};
  amqp_table_t t = {2, both};
  assert_int_equal(fl_broker_env_from_headers(&t, 0, &back, err, sizeof err), 0);
  assert_string_equal(back.kind, "SEND");
  /* An `env` that is not a string is no packed envelope: the fields are read. */
  both[1] = fl_broker_entry_long(FL_BROKER_ENV_HEADER, 7);
  assert_int_equal(fl_broker_env_from_headers(&t, 0, &back, err, sizeof err), 0);
  assert_string_equal(back.kind, "REPLY");
  /* A packed envelope that is not one makes the delivery malformed; so does
   * a body announced too large, whichever form. */
  both[1] = fl_broker_entry_str(FL_BROKER_ENV_HEADER, "kind:9:SEND\n");
  assert_int_equal(fl_broker_env_from_headers(&t, 0, &back, err, sizeof err), FL_EPROTO);
  assert_non_null(strstr(err, "kind"));
  assert_int_equal(
      fl_broker_env_from_headers(&p.headers, FL_MAX_WIRE_BODY + 1, &back, err, sizeof err),
      FL_ETOOBIG);
}

static struct fx *fx_new(void) {
  struct fx *f = calloc(1, sizeof(*f));
  assert_non_null(f);
  assert_int_equal(uv_loop_init(&f->loop), 0);
  assert_int_equal(uv_timer_init(&f->loop, &f->timer), 0);
  f->timer.data = f;
  return f;
}

static void fx_free(struct fx *f) {
  fl_broker_free(&f->b);
  uv_close((uv_handle_t *)&f->timer, NULL);
  uv_run(&f->loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&f->loop), 0);
  clear_got(f);
  free(f);
}

static fl_broker *start_link(struct fx *f, const char *host) {
  fl_broker_config cfg = {.uri = uri, .host_id = host};
  fl_broker *b = NULL;
  assert_int_equal(fl_broker_start(&f->loop, &cfg, &events, f, &b), 0);
  return b;
}

/* ---- without a broker ---- */

static void test_bad_config(void **state) {
  (void)state;
  struct fx *f = fx_new();
  fl_broker *b = NULL;
  fl_broker_config cfg = {.uri = "amqp://guest:guest@127.0.0.1:1/", .host_id = "h"};
  assert_int_equal(fl_broker_start(&f->loop, NULL, &events, f, &b), FL_EINVAL);
  cfg.host_id = "bad.host";
  assert_int_equal(fl_broker_start(&f->loop, &cfg, &events, f, &b), FL_ECONFIG);
  cfg.host_id = "";
  assert_int_equal(fl_broker_start(&f->loop, &cfg, &events, f, &b), FL_ECONFIG);
  cfg.host_id = "h";
  cfg.uri = "http://nope";
  assert_int_equal(fl_broker_start(&f->loop, &cfg, &events, f, &b), FL_ECONFIG);
  cfg.uri = "amqp://guest:guest@127.0.0.1:1/";
  cfg.queue_type = "stream";
  assert_int_equal(fl_broker_start(&f->loop, &cfg, &events, f, &b), FL_ECONFIG);
  assert_null(b);
  fx_free(f);
}

/* Port 1 refuses at once: the link reports down, publishes fail fast, inbox
 * changes are remembered, and stop is clean. */
static void test_down_link(void **state) {
  (void)state;
  struct fx *f = fx_new();
  fl_broker_config cfg = {.uri = "amqp://guest:guest@127.0.0.1:1/", .host_id = "h"};
  fl_envelope env;
  make_env(&env, "x");
  assert_int_equal(fl_broker_start(&f->loop, &cfg, &events, f, &f->b), 0);
  assert_int_equal(
      fl_broker_publish(f->b, "fleet.msg", "x", FL_BROKER_MANDATORY, &env, "hi", 2, NULL),
      FL_EBROKER);
  run_until(f, &f->downs, 1);
  assert_false(fl_broker_is_up(f->b));
  assert_non_null(strstr(f->why, "127.0.0.1:1"));
  assert_int_equal(
      fl_broker_publish(f->b, "fleet.msg", "x", FL_BROKER_MANDATORY, &env, "hi", 2, NULL),
      FL_EBROKER);
  const char *groups[] = {"g1", "g2"};
  assert_int_equal(fl_broker_add_inbox(f->b, env.to, groups, 2), 0);
  assert_int_equal(fl_broker_add_inbox(f->b, "bad.gid", NULL, 0), FL_EINVAL);
  const char *bad_groups[] = {"g#"};
  assert_int_equal(fl_broker_add_inbox(f->b, env.to, bad_groups, 1), FL_EINVAL);
  assert_int_equal(fl_broker_ack(f->b, 12345), 0);
  assert_int_equal(fl_broker_remove_inbox(f->b, env.to), 0);
  assert_int_equal(f->done, 0);
  fx_free(f);
}

/* ---- with a broker ---- */

struct live {
  struct fx *f;
  char gid[FL_ID_LEN];
  char host[48];
};

static int live_setup(void **state) {
  if (!uri) {
    *state = NULL;
    return 0;
  }
  struct live *l = calloc(1, sizeof(*l));
  assert_non_null(l);
  l->f = fx_new();
  make_uuid(l->gid);
  snprintf(l->host, sizeof(l->host), "test-%.8s", l->gid);
  l->f->b = start_link(l->f, l->host);
  run_until(l->f, &l->f->ups, 1);
  assert_true(fl_broker_is_up(l->f->b));
  /* One inbox for the whole group. */
  const char *groups[] = {"testers"};
  assert_int_equal(fl_broker_add_inbox(l->f->b, l->gid, groups, 1), 0);
  run_until(l->f, &l->f->inbox_events, 1);
  assert_int_equal(l->f->inbox_status, 0);
  assert_string_equal(l->f->inbox_gid, l->gid);
  *state = l;
  return 0;
}

static int live_teardown(void **state) {
  struct live *l = *state;
  if (!l)
    return 0;
  fx_free(l->f);
  free(l);
  return 0;
}

#define NEED_BROKER(l)                                                                             \
  do {                                                                                             \
    if (!(l)) {                                                                                    \
      skip();                                                                                      \
    }                                                                                              \
  } while (0)

static void test_roundtrip(void **state) {
  struct live *l = *state;
  NEED_BROKER(l);
  struct fx *f = l->f;
  fl_envelope env;
  const char body[] = "hello, worker \xe2\x9c\x93";
  int done0 = f->done;
  make_env(&env, l->gid);
  assert_int_equal(fl_broker_publish(f->b, "fleet.msg", l->gid, FL_BROKER_MANDATORY, &env, body,
                                     strlen(body), f),
                   0);
  run_until(f, &f->done, done0 + 1);
  assert_int_equal(f->last_status, 0);
  run_until_got(f, 1);
  struct got *g = &f->got[0];
  assert_int_equal(g->source, FL_BROKER_INBOX);
  assert_string_equal(g->gid, l->gid);
  assert_string_equal(g->routing_key, l->gid);
  assert_memory_equal(&g->env, &env, sizeof(env));
  assert_int_equal(g->len, strlen(body));
  assert_memory_equal(g->body, body, strlen(body));
  assert_int_equal(fl_broker_ack(f->b, g->tag), 0);
  clear_got(f);

  /* The same envelope packed into the one `env` header arrives the same. */
  make_env(&env, l->gid);
  done0 = f->done;
  assert_int_equal(fl_broker_publish(f->b, "fleet.msg", l->gid,
                                     FL_BROKER_MANDATORY | FL_BROKER_PACKED, &env, body,
                                     strlen(body), f),
                   0);
  run_until(f, &f->done, done0 + 1);
  assert_int_equal(f->last_status, 0);
  run_until_got(f, 1);
  assert_memory_equal(&f->got[0].env, &env, sizeof(env));
  assert_memory_equal(f->got[0].body, body, strlen(body));
  assert_int_equal(fl_broker_ack(f->b, f->got[0].tag), 0);
  clear_got(f);

  /* A broadcast to the inbox's group, under this host's key (the copy
   * sealed for its members), reaches it too, with an empty body and only
   * some envelope fields. */
  memset(&env, 0, sizeof(env));
  snprintf(env.v, sizeof(env.v), "1.0");
  snprintf(env.kind, sizeof(env.kind), "BROADCAST");
  char key[FL_MAX_GROUP_NAME + 64];
  assert_int_equal(fl_topology_host_broadcast_key(key, sizeof key, l->host, "testers"), 0);
  done0 = f->done;
  assert_int_equal(fl_broker_publish(f->b, "fleet.msg", key, 0, &env, NULL, 0, f), 0);
  run_until(f, &f->done, done0 + 1);
  assert_int_equal(f->last_status, 0);
  run_until_got(f, 1);
  assert_memory_equal(&f->got[0].env, &env, sizeof(env));
  assert_int_equal(f->got[0].len, 0);
  assert_int_equal(fl_broker_ack(f->b, f->got[0].tag), 0);
  clear_got(f);
  /* Every event reached the loop inside an on_batch bracket. */
  assert_true(f->batches > 0);
  assert_false(f->batch_open);
  assert_int_equal(f->outside_batch, 0);
}

static void test_unroutable(void **state) {
  struct live *l = *state;
  NEED_BROKER(l);
  struct fx *f = l->f;
  fl_envelope env;
  char key[FL_ID_LEN];
  make_uuid(key);
  make_env(&env, key);
  int done0 = f->done, fail0 = f->done_fail, batches0 = f->batches;
  assert_int_equal(fl_broker_publish(f->b, "fleet.msg", key, FL_BROKER_MANDATORY, &env, "x", 1, f),
                   0);
  run_until(f, &f->done, done0 + 1);
  assert_int_equal(f->done_fail, fail0 + 1);
  assert_int_equal(f->last_status, FL_EBROKER);
  assert_non_null(strstr(f->last_why, "unroutable"));
  assert_non_null(strstr(f->last_why, key));
  /* Not mandatory: silently dropped by the broker, confirmed. */
  done0 = f->done;
  assert_int_equal(fl_broker_publish(f->b, "fleet.msg", key, 0, &env, "x", 1, f), 0);
  run_until(f, &f->done, done0 + 1);
  assert_int_equal(f->last_status, 0);
  /* Publish outcomes alone open no on_batch bracket: there is nothing to store. */
  assert_int_equal(f->batches, batches0);
  assert_false(f->batch_open);
}

static void test_pipelined(void **state) {
  struct live *l = *state;
  NEED_BROKER(l);
  struct fx *f = l->f;
  fl_envelope env;
  make_env(&env, l->gid);
  int done0 = f->done, ok0 = f->done_ok;
  f->auto_ack = 1;
  f->ngot = 0;
  for (int i = 0; i < N_PIPELINED; i++) {
    char body[32];
    int n = snprintf(body, sizeof(body), "message %d", i);
    make_uuid(env.msg_id);
    assert_int_equal(
        fl_broker_publish(f->b, "fleet.msg", l->gid, FL_BROKER_MANDATORY, &env, body, (size_t)n, f),
        0);
  }
  run_until(f, &f->done, done0 + N_PIPELINED);
  assert_int_equal(f->done_ok, ok0 + N_PIPELINED);
  run_until_got(f, N_PIPELINED);
  f->auto_ack = 0;
  f->ngot = 0;
}

/* A raw connection of the test's own with channel 1 open, and its end. */
static amqp_connection_state_t raw_open(void) {
  amqp_connection_state_t c = amqp_new_connection();
  amqp_socket_t *s = amqp_tcp_socket_new(c);
  struct amqp_connection_info ci;
  char *u = strdup(uri);
  assert_non_null(u);
  assert_int_equal(amqp_parse_url(u, &ci), AMQP_STATUS_OK);
  assert_int_equal(amqp_socket_open(s, ci.host, ci.port), AMQP_STATUS_OK);
  amqp_rpc_reply_t r = amqp_login(c, ci.vhost[0] ? ci.vhost : "/", 0, AMQP_DEFAULT_FRAME_SIZE, 0,
                                  AMQP_SASL_METHOD_PLAIN, ci.user, ci.password);
  assert_int_equal(r.reply_type, AMQP_RESPONSE_NORMAL);
  amqp_channel_open(c, 1);
  assert_int_equal(amqp_get_rpc_reply(c).reply_type, AMQP_RESPONSE_NORMAL);
  free(u);
  return c;
}

static void raw_close(amqp_connection_state_t c) {
  amqp_channel_close(c, 1, AMQP_REPLY_SUCCESS);
  amqp_connection_close(c, AMQP_REPLY_SUCCESS);
  amqp_destroy_connection(c);
}

/* Reads fleet.dlq over a raw connection until msg_id shows up (acking it);
 * other messages are left there. */
static int dlq_has(const char *msg_id) {
  amqp_connection_state_t c = raw_open();
  int found = 0;
  amqp_rpc_reply_t r;
  for (int tries = 0; tries < 100 && !found; tries++) {
    for (;;) {
      r = amqp_basic_get(c, 1, amqp_cstring_bytes("fleet.dlq"), 0);
      assert_int_equal(r.reply_type, AMQP_RESPONSE_NORMAL);
      if (r.reply.id == AMQP_BASIC_GET_EMPTY_METHOD)
        break;
      amqp_basic_get_ok_t *ok = r.reply.decoded;
      uint64_t tag = ok->delivery_tag;
      amqp_message_t m;
      assert_int_equal(amqp_read_message(c, 1, &m, 0).reply_type, AMQP_RESPONSE_NORMAL);
      if ((m.properties._flags & AMQP_BASIC_MESSAGE_ID_FLAG) &&
          m.properties.message_id.len == strlen(msg_id) &&
          memcmp(m.properties.message_id.bytes, msg_id, strlen(msg_id)) == 0) {
        found = 1;
        amqp_basic_ack(c, 1, tag, 0);
      }
      amqp_destroy_message(&m);
      if (found)
        break;
    }
    if (!found) {
      /* Dead-lettering is asynchronous; put back what we read and look
       * again in a moment. */
      amqp_basic_recover(c, 1, 1);
      usleep(50 * 1000);
    }
  }
  raw_close(c);
  return found;
}

/* Publishes body to gid's inbox (mandatory, a fresh envelope into *env),
 * waits for its confirm and its delivery, and returns that delivery. */
static struct got *send_one(struct fx *f, const char *gid, const char *body, fl_envelope *env) {
  make_env(env, gid);
  int done0 = f->done;
  assert_int_equal(
      fl_broker_publish(f->b, "fleet.msg", gid, FL_BROKER_MANDATORY, env, body, strlen(body), f),
      0);
  run_until(f, &f->done, done0 + 1);
  assert_int_equal(f->last_status, 0);
  run_until_got(f, 1);
  assert_string_equal(f->got[f->ngot - 1].env.msg_id, env->msg_id);
  return &f->got[f->ngot - 1];
}

static void test_reject_to_dlq(void **state) {
  struct live *l = *state;
  NEED_BROKER(l);
  struct fx *f = l->f;
  fl_envelope env;
  assert_int_equal(fl_broker_reject(f->b, send_one(f, l->gid, "poison", &env)->tag, 0), 0);
  clear_got(f);
  /* Let the loop hand the reject to the link thread before looking. */
  int d = f->done;
  assert_int_equal(fl_broker_publish(f->b, "fleet.msg", "nobody", 0, &env, NULL, 0, f), 0);
  run_until(f, &f->done, d + 1);
  assert_true(dlq_has(env.msg_id));

  /* Headers that are no envelope (a packed `env` whose length is wrong):
   * the link hands the delivery over without its body, saying why, and
   * the receiver's reject dead-letters it. */
  char msg_id[FL_ID_LEN];
  make_uuid(msg_id);
  amqp_connection_state_t c = raw_open();
  amqp_table_entry_t h = {amqp_cstring_bytes("env"), {AMQP_FIELD_KIND_UTF8, {0}}};
  h.value.value.bytes = amqp_cstring_bytes("v:3:1.1\nkind:9:SEND\n");
  amqp_basic_properties_t p = {0};
  p._flags = AMQP_BASIC_HEADERS_FLAG | AMQP_BASIC_MESSAGE_ID_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG;
  p.headers.num_entries = 1;
  p.headers.entries = &h;
  p.message_id = amqp_cstring_bytes(msg_id);
  p.delivery_mode = AMQP_DELIVERY_PERSISTENT;
  assert_int_equal(amqp_basic_publish(c, 1, amqp_cstring_bytes("fleet.msg"),
                                      amqp_cstring_bytes(l->gid), 0, 0, &p,
                                      amqp_cstring_bytes("unreadable")),
                   AMQP_STATUS_OK);
  raw_close(c);
  run_until_got(f, 1);
  assert_non_null(strstr(f->got[0].bad, "kind"));
  assert_int_equal(f->got[0].len, 0);
  assert_string_equal(f->got[0].env.v, "1.1"); /* what could be read */
  assert_int_equal(fl_broker_reject(f->b, f->got[0].tag, 0), 0);
  clear_got(f);
  d = f->done;
  assert_int_equal(fl_broker_publish(f->b, "fleet.msg", "nobody", 0, &env, NULL, 0, f), 0);
  run_until(f, &f->done, d + 1);
  assert_true(dlq_has(msg_id));
}

/* Deliveries taken but not made durable go back in order: the loop names
 * the channel by a tag, the link closes it (the broker requeues what is
 * unacked, in its places), reports the inbox with FL_ESTORE, and consumes
 * it again after the backoff. An ack sent before the requeue holds. */
static void test_requeue_in_order(void **state) {
  struct live *l = *state;
  NEED_BROKER(l);
  struct fx *f = l->f;
  fl_envelope env[3];
  for (int i = 0; i < 3; i++) {
    make_env(&env[i], l->gid);
    int done0 = f->done;
    assert_int_equal(
        fl_broker_publish(f->b, "fleet.msg", l->gid, FL_BROKER_MANDATORY, &env[i], "m", 1, f), 0);
    run_until(f, &f->done, done0 + 1);
    assert_int_equal(f->last_status, 0);
  }
  run_until_got(f, 3);
  for (int i = 0; i < 3; i++)
    assert_string_equal(f->got[i].env.msg_id, env[i].msg_id);
  assert_int_equal(fl_broker_ack(f->b, f->got[0].tag), 0);
  int ev0 = f->inbox_events;
  assert_int_equal(
      fl_broker_requeue_inbox(f->b, l->gid, f->got[1].tag, "2 deliveries requeued: test"), 0);
  run_until(f, &f->inbox_events, ev0 + 1);
  assert_int_equal(f->inbox_status, FL_ESTORE);
  assert_string_equal(f->inbox_why, "2 deliveries requeued: test");
  clear_got(f);
  run_until(f, &f->inbox_events, ev0 + 2);
  assert_int_equal(f->inbox_status, 0);
  run_until_got(f, 2);
  assert_string_equal(f->got[0].env.msg_id, env[1].msg_id);
  assert_string_equal(f->got[1].env.msg_id, env[2].msg_id);
  /* A requeue naming the old channel is ignored: the new one consumes on. */
  ev0 = f->inbox_events;
  assert_int_equal(fl_broker_requeue_inbox(f->b, l->gid, f->got[0].tag ^ (1ull << 48), "stale"), 0);
  for (int i = 0; i < 2; i++)
    assert_int_equal(fl_broker_ack(f->b, f->got[i].tag), 0);
  clear_got(f);
  fl_envelope last;
  make_env(&last, l->gid);
  int done0 = f->done;
  assert_int_equal(
      fl_broker_publish(f->b, "fleet.msg", l->gid, FL_BROKER_MANDATORY, &last, "n", 1, f), 0);
  run_until(f, &f->done, done0 + 1);
  run_until_got(f, 1);
  assert_string_equal(f->got[0].env.msg_id, last.msg_id);
  assert_int_equal(f->inbox_events, ev0);
  assert_int_equal(fl_broker_ack(f->b, f->got[0].tag), 0);
  clear_got(f);
}

/* A removed inbox keeps receiving into its queue; added again, the waiting
 * message is delivered. An ack with a stale tag is ignored. */
static void test_remove_and_readd(void **state) {
  struct live *l = *state;
  NEED_BROKER(l);
  struct fx *f = l->f;
  fl_envelope env;
  make_env(&env, l->gid);
  assert_int_equal(fl_broker_remove_inbox(f->b, l->gid), 0);
  int done0 = f->done;
  assert_int_equal(
      fl_broker_publish(f->b, "fleet.msg", l->gid, FL_BROKER_MANDATORY, &env, "waiting", 7, f), 0);
  run_until(f, &f->done, done0 + 1);
  assert_int_equal(f->last_status, 0);
  assert_int_equal(f->ngot, 0);
  int ev0 = f->inbox_events;
  const char *groups[] = {"testers"};
  assert_int_equal(fl_broker_add_inbox(f->b, l->gid, groups, 1), 0);
  run_until(f, &f->inbox_events, ev0 + 1);
  assert_int_equal(f->inbox_status, 0);
  run_until_got(f, 1);
  assert_string_equal(f->got[0].env.msg_id, env.msg_id);
  assert_int_equal(f->got[0].len, 7);
  assert_int_equal(fl_broker_ack(f->b, f->got[0].tag ^ (1ull << 48)), 0); /* stale: dropped */
  assert_int_equal(fl_broker_ack(f->b, f->got[0].tag), 0);
  clear_got(f);
}

/* A second gateway may not consume an inbox another one holds, and takes
 * it over when the first lets go. Runs last: it takes the group's inbox. */
static void test_exclusive(void **state) {
  struct live *l = *state;
  NEED_BROKER(l);
  struct fx *g = fx_new();
  char host[48];
  snprintf(host, sizeof(host), "other-%.8s", l->gid);
  g->b = start_link(g, host);
  run_until(g, &g->ups, 1);
  assert_int_equal(fl_broker_add_inbox(g->b, l->gid, NULL, 0), 0);
  run_until(g, &g->inbox_events, 1);
  assert_int_equal(g->inbox_status, FL_EBROKER);
  assert_non_null(strstr(g->inbox_why, "ACCESS_REFUSED"));
  /* The link itself is fine. */
  assert_true(fl_broker_is_up(g->b));
  /* Once the first gateway lets go, the retry takes the inbox over. */
  assert_int_equal(fl_broker_remove_inbox(l->f->b, l->gid), 0);
  run_until(g, &g->inbox_events, 2);
  assert_int_equal(g->inbox_status, 0);
  fx_free(g);
}

/* Runs the loop for ms with nothing to do: the broker thread goes to sleep
 * and hands its socket to the loop. */
static void run_idle(struct fx *f, unsigned ms) {
  f->timed_out = 0;
  uv_timer_start(&f->timer, on_timer, ms, 0);
  while (!f->timed_out)
    uv_run(&f->loop, UV_RUN_ONCE);
}

/* Publishes n messages numbered from first to gid's inbox over a raw
 * connection of the test's own, so the link's thread has nothing to send. */
static void raw_publish_n(const char *gid, int first, int n) {
  amqp_connection_state_t c = raw_open();
  for (int i = first; i < first + n; i++) {
    char body[32];
    snprintf(body, sizeof(body), "m%d", i);
    amqp_basic_properties_t p = {0};
    assert_int_equal(amqp_basic_publish(c, 1, amqp_cstring_bytes("fleet.msg"),
                                        amqp_cstring_bytes(gid), 0, 0, &p,
                                        amqp_cstring_bytes(body)),
                     AMQP_STATUS_OK);
  }
  raw_close(c);
}

/* Deliveries to an idle link are read on the loop thread itself (the broker
 * thread asleep), one at a time or in a burst longer than one read takes,
 * which the thread finishes: each arrives once, in order. */
static fl_broker_loop_use loop_use(fl_broker *b) {
  fl_broker_loop_use u;
  fl_broker_loop_counts(b, &u);
  return u;
}

static void test_read_on_loop(void **state) {
  struct live *l = *state;
  NEED_BROKER(l);
  struct fx *f = l->f;
  f->auto_ack = 0;
  /* An inbox of its own, which nothing else left a delivery in. */
  char gid[FL_ID_LEN];
  make_uuid(gid);
  int ev0 = f->inbox_events;
  assert_int_equal(fl_broker_add_inbox(f->b, gid, NULL, 0), 0);
  run_until(f, &f->inbox_events, ev0 + 1);
  assert_int_equal(f->inbox_status, 0);
  clear_got(f);
  uint64_t reads0 = loop_use(f->b).reads, acks0 = loop_use(f->b).acks;
  /* One at a time, with the link idle in between. */
  enum { ONE_BY_ONE = 20, BURST = 1500 };
  for (int i = 0; i < ONE_BY_ONE; i++) {
    run_idle(f, 20);
    raw_publish_n(gid, i, 1);
    run_until_got(f, 1);
    char want[32];
    snprintf(want, sizeof(want), "m%d", i);
    assert_string_equal(f->got[0].body, want);
    assert_int_equal(fl_broker_ack(f->b, f->got[0].tag), 0);
    clear_got(f);
  }
  assert_true(loop_use(f->b).reads > reads0);
  assert_true(loop_use(f->b).acks > acks0);
  /* A publish on the idle link goes out from the loop, is confirmed, and
   * its message arrives once. */
  uint64_t pubs0 = loop_use(f->b).publishes;
  for (int i = 0; i < 10; i++) {
    run_idle(f, 20);
    fl_envelope env;
    assert_int_equal(fl_broker_ack(f->b, send_one(f, gid, "p", &env)->tag), 0);
    assert_int_equal(f->ngot, 1);
    clear_got(f);
  }
  assert_true(loop_use(f->b).publishes > pubs0);
  /* A burst: more frames than one read handles (each message is three,
   * and the broker sends up to the prefetch before the first ack). */
  run_idle(f, 20);
  raw_publish_n(gid, 0, BURST);
  f->ack_and_keep = 1;
  run_until_got(f, BURST);
  run_idle(f, 50); /* nothing more comes: none twice */
  f->ack_and_keep = 0;
  assert_int_equal(f->ngot, BURST);
  for (int i = 0; i < BURST; i++) {
    char want[32];
    snprintf(want, sizeof(want), "m%d", i);
    assert_string_equal(f->got[i].body, want);
  }
  clear_got(f);
  /* Every ack reached the broker: once the inbox's channel is closed
   * (no consumer left), nothing unacked went back to its queue. */
  assert_int_equal(fl_broker_remove_inbox(f->b, gid), 0);
  amqp_connection_state_t c = raw_open();
  char q[256];
  assert_int_equal(fl_topology_inbox_queue(q, sizeof(q), gid), 0);
  amqp_queue_declare_ok_t *ok = NULL;
  for (int tries = 0; tries < 600; tries++) {
    run_idle(f, 10);
    ok = amqp_queue_declare(c, 1, amqp_cstring_bytes(q), 1, 0, 0, 0, amqp_empty_table);
    assert_non_null(ok);
    if (ok->consumer_count == 0)
      break;
  }
  assert_int_equal(ok->consumer_count, 0);
  assert_int_equal(ok->message_count, 0);
  amqp_queue_delete(c, 1, amqp_cstring_bytes(q), 0, 0);
  raw_close(c);
}

/* The broker drops every connection; the link comes back and re-consumes. */
static void test_reconnect(void **state) {
  struct live *l = *state;
  NEED_BROKER(l);
  const char *ctl = getenv("FLEET_TEST_RABBITMQCTL");
  if (!ctl || !ctl[0]) {
    printf("[  SKIPPED ] reconnect: set FLEET_TEST_RABBITMQCTL to run it\n");
    skip();
  }
  struct fx *f = l->f;
  char cmd[1024];
  int downs0 = f->downs, ups0 = f->ups, ev0 = f->inbox_events;
  snprintf(cmd, sizeof(cmd), "%s close_all_connections 'test_broker' >/dev/null", ctl);
  assert_int_equal(system(cmd), 0);
  run_until(f, &f->downs, downs0 + 1);
  assert_int_equal(
      fl_broker_publish(f->b, "fleet.msg", l->gid, FL_BROKER_MANDATORY, NULL, "x", 1, f),
      f->up ? 0 : FL_EBROKER);
  run_until(f, &f->ups, ups0 + 1);
  /* The inbox consumes again once its consume-ok comes, after the link is up. */
  run_until(f, &f->inbox_events, ev0 + 1);
  assert_int_equal(f->inbox_status, 0);
  fl_envelope env;
  clear_got(f);
  assert_int_equal(fl_broker_ack(f->b, send_one(f, l->gid, "again", &env)->tag), 0);
  clear_got(f);
}

int main(void) {
  fl_alloc_init();
  uri = fl_test_broker_uri();
  const struct CMUnitTest offline[] = {
      cmocka_unit_test(test_bad_config),
      cmocka_unit_test(test_down_link),
      cmocka_unit_test(test_env_headers),
  };
  int rc = cmocka_run_group_tests_name("broker_offline", offline, NULL, NULL);
  if (!uri)
    return rc | fl_test_broker_missing("test_broker");
  const struct CMUnitTest live[] = {
      cmocka_unit_test(test_roundtrip),        cmocka_unit_test(test_unroutable),
      cmocka_unit_test(test_pipelined),        cmocka_unit_test(test_reject_to_dlq),
      cmocka_unit_test(test_requeue_in_order), cmocka_unit_test(test_remove_and_readd),
      cmocka_unit_test(test_reconnect),        cmocka_unit_test(test_read_on_loop),
      cmocka_unit_test(test_exclusive),
  };
  return rc | cmocka_run_group_tests_name("broker_live", live, live_setup, live_teardown);
}
