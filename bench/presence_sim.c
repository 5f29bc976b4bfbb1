/* presence_sim.c — plays many remote hosts' gateways on the broker, each
 * beating presence for its agents the way fleetd does, so one real gateway
 * can be measured receiving a large fleet's presence.
 *
 *   presence_sim pins [-H HOSTS]
 *   presence_sim run URI [-H HOSTS] [-a AGENTS] [-i INTERVAL_MS] [-t TTL_MS]
 *                    [-d SECONDS] [-l LABEL] [-e]
 *
 * pins: prints "HOST PUBKEY" for every simulated host (sim000, sim001, ...),
 *       the lines an operator would pin with `fleetctl peer add HOST PUBKEY`.
 *       Each host's Ed25519 key is derived from its host id (a bench key,
 *       never a secret), so pins and run agree without a key file.
 * run:  one AMQP connection per host (publisher confirms on, as fleetd's
 *       link has). Every INTERVAL_MS (default 5000, fleetd's
 *       broker.presenceIntervalMs) each host publishes, as a gateway's beat
 *       timer does, one PRESENCE host beat on fleet.roster under
 *       roster.<host>._gateway that lists its AGENTS agents; with -e, as a
 *       gateway of the earlier wire did, a burst of one entity beat per
 *       agent under roster.<host>.<gid> and a host beat that lists none.
 *       The hosts' beats are spread evenly over the interval. Bodies and
 *       envelopes are built, signed and put into AMQP headers and
 *       properties by fleet's own code (beat.c, envelope.c, sign.c,
 *       topology.c, broker_headers.c, compiled into this driver), so a beat
 *       is byte for byte what a gateway sends; expiresAt is ts + TTL_MS
 *       (default 3 intervals, fleetd's default). Runs for SECONDS (0: until
 *       SIGTERM or SIGINT), then prints RESULT lines.
 *
 * Agent gids and names are fixed per host and index (sim007-a03), so a rerun
 * announces the same agents. */
#include <amqp.h>
#include <amqp_tcp_socket.h>
#include <getopt.h>
#include <jansson.h>
#include <signal.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>

#include "bench_util.h"
#include "common/alloc.h"
#include "common/ids.h"
#include "common/time.h"
#include "gateway/broker/broker_headers.h"
#include "gateway/fabric/beat.h"
#include "gateway/proto/envelope.h"
#include "gateway/proto/sign.h"
#include "gateway/proto/topology.h"

#define CH 1
#define MAX_HOSTS 1000
#define MAX_AGENTS 100
/* How long a burst's confirms may take before the run is declared stuck. */
#define CONFIRM_TIMEOUT_S 10

struct agent {
  char gid[FL_ID_LEN];
  char name[48];
};

struct host {
  char id[24];
  unsigned char pk[FL_SIGN_PK_BYTES], sk[FL_SIGN_SK_BYTES];
  amqp_connection_state_t c;
  struct agent *agents;
  uint64_t published, confirmed, nacked;
};

static volatile sig_atomic_t g_stop;
static void on_signal(int sig) {
  (void)sig;
  g_stop = 1;
}

/* 32 bytes derived from what (a bench key or id, not a secret). */
static void derive(const char *what, unsigned char out[32]) {
  crypto_generichash(out, 32, (const unsigned char *)what, strlen(what), NULL, 0);
}

static void host_init(struct host *h, size_t i, size_t nagents) {
  memset(h, 0, sizeof *h);
  snprintf(h->id, sizeof h->id, "sim%03zu", i);
  char what[128];
  unsigned char seed[32];
  snprintf(what, sizeof what, "fleet-bench-presence-sim/key/%s", h->id);
  derive(what, seed);
  crypto_sign_seed_keypair(h->pk, h->sk, seed);
  h->agents = calloc(nagents ? nagents : 1, sizeof *h->agents);
  if (!h->agents)
    fb_die("out of memory");
  for (size_t a = 0; a < nagents; a++) {
    unsigned char u[32];
    snprintf(what, sizeof what, "fleet-bench-presence-sim/gid/%s/%zu", h->id, a);
    derive(what, u);
    u[6] = (unsigned char)((u[6] & 0x0f) | 0x40); /* a v4 UUID's version and variant */
    u[8] = (unsigned char)((u[8] & 0x3f) | 0x80);
    snprintf(h->agents[a].gid, sizeof h->agents[a].gid,
             "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1],
             u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14],
             u[15]);
    snprintf(h->agents[a].name, sizeof h->agents[a].name, "%s-a%02zu", h->id, a);
  }
}

/* ---- the broker ------------------------------------------------------------------ */

static void die_reply(amqp_rpc_reply_t r, const char *host, const char *what) {
  if (r.reply_type == AMQP_RESPONSE_NORMAL)
    return;
  if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION)
    fb_die("%s: %s: %s", host, what, amqp_error_string2(r.library_error));
  fb_die("%s: %s: the broker refused (method 0x%08x)", host, what, r.reply.id);
}

static void host_connect(struct host *h, const struct amqp_connection_info *ci) {
  h->c = amqp_new_connection();
  amqp_socket_t *s = h->c ? amqp_tcp_socket_new(h->c) : NULL;
  if (!s)
    fb_die("out of memory");
  if (amqp_socket_open(s, ci->host, ci->port) != AMQP_STATUS_OK)
    fb_die("%s: cannot connect to the broker at %s:%d", h->id, ci->host, ci->port);
  char cname[64];
  snprintf(cname, sizeof cname, "presence_sim %s", h->id);
  amqp_table_entry_t pe = {amqp_cstring_bytes("connection_name"),
                           {AMQP_FIELD_KIND_UTF8, {.bytes = amqp_cstring_bytes(cname)}}};
  amqp_table_t props = {1, &pe};
  die_reply(amqp_login_with_properties(h->c, ci->vhost, 0, 131072, 0, &props,
                                       AMQP_SASL_METHOD_PLAIN, ci->user, ci->password),
            h->id, "login");
  amqp_channel_open(h->c, CH);
  die_reply(amqp_get_rpc_reply(h->c), h->id, "channel.open");
  amqp_confirm_select(h->c, CH);
  die_reply(amqp_get_rpc_reply(h->c), h->id, "confirm.select");
}

static void host_close(struct host *h) {
  if (!h->c)
    return;
  amqp_channel_close(h->c, CH, AMQP_REPLY_SUCCESS);
  amqp_connection_close(h->c, AMQP_REPLY_SUCCESS);
  amqp_destroy_connection(h->c);
  h->c = NULL;
}

/* Reads frames until every publish of h is confirmed. */
static void host_confirms(struct host *h) {
  while (h->confirmed < h->published) {
    amqp_frame_t f;
    struct timeval tv = {CONFIRM_TIMEOUT_S, 0};
    int rc = amqp_simple_wait_frame_noblock(h->c, &f, &tv);
    if (rc == AMQP_STATUS_TIMEOUT)
      fb_die("%s: no confirm from the broker for %d s", h->id, CONFIRM_TIMEOUT_S);
    if (rc != AMQP_STATUS_OK)
      fb_die("%s: connection lost: %s", h->id, amqp_error_string2(rc));
    if (f.frame_type != AMQP_FRAME_METHOD)
      continue;
    uint64_t tag = 0;
    int multiple = 0, nack = 0;
    if (f.payload.method.id == AMQP_BASIC_ACK_METHOD) {
      amqp_basic_ack_t *a = f.payload.method.decoded;
      tag = a->delivery_tag;
      multiple = a->multiple;
    } else if (f.payload.method.id == AMQP_BASIC_NACK_METHOD) {
      amqp_basic_nack_t *a = f.payload.method.decoded;
      tag = a->delivery_tag;
      multiple = a->multiple;
      nack = 1;
    } else if (f.payload.method.id == AMQP_CHANNEL_CLOSE_METHOD ||
               f.payload.method.id == AMQP_CONNECTION_CLOSE_METHOD) {
      fb_die("%s: the broker closed the channel", h->id);
    } else {
      continue;
    }
    uint64_t n = multiple ? tag - h->confirmed : 1;
    h->confirmed += n;
    h->nacked += nack ? n : 0;
    amqp_maybe_release_buffers(h->c);
  }
}

/* ---- beats ----------------------------------------------------------------------- */

struct stats {
  uint64_t beats, body_bytes, wire_bytes;
};

/* The AMQP bytes of one publish of env with a body of len bytes under key:
 * the method frame, the content header frame (properties included) and the
 * body frame, each with its 8 bytes of framing. */
static size_t wire_size(const amqp_basic_properties_t *p, const char *key, size_t len) {
  size_t table = 4;
  for (int i = 0; i < p->headers.num_entries; i++)
    table +=
        1 + p->headers.entries[i].key.len + 1 + 4 + p->headers.entries[i].value.value.bytes.len;
  size_t method = 4 + 2 + 1 + strlen(FL_EX_ROSTER) + 1 + strlen(key) + 1;
  size_t header =
      2 + 2 + 8 + 2 + (1 + p->content_type.len) + 1 + 8 + (1 + p->message_id.len) + table;
  return 8 + method + 8 + header + 8 + len;
}

/* Signs and publishes one PRESENCE beat of h: from gid (NULL for the
 * gateway's own beat) with the compact JSON body. */
static void beat(struct host *h, const char *gid, const char *name, json_t *body, unsigned ttl_ms,
                 struct stats *st) {
  char *text = json_dumps(body, JSON_COMPACT);
  json_decref(body);
  if (!text)
    fb_die("out of memory");
  fl_envelope env;
  memset(&env, 0, sizeof env);
  snprintf(env.v, sizeof env.v, "%s", FL_ENVELOPE_VERSION);
  snprintf(env.kind, sizeof env.kind, "%s", fl_envelope_kind_name(FL_KIND_PRESENCE));
  fl_uuid(env.msg_id);
  snprintf(env.from, sizeof env.from, "%s", gid ? gid : "");
  snprintf(env.from_name, sizeof env.from_name, "%s", name);
  snprintf(env.host, sizeof env.host, "%s", h->id);
  long long now = fl_now_ms();
  fl_rfc3339(now, env.ts);
  fl_rfc3339(now + ttl_ms, env.expires_at);
  size_t len = strlen(text);
  if (fl_sign_envelope(&env, text, len, h->sk) != 0)
    fb_die("%s: cannot sign a beat", h->id);
  char key[256];
  if (fl_topology_roster_key(key, sizeof key, h->id, gid ? gid : FL_GID_GATEWAY) != 0)
    fb_die("%s: no roster key", h->id);
  fl_broker_env_hdr hdr;
  amqp_basic_properties_t p;
  /* Beats go to every host: one header per field, as a gateway sends them. */
  fl_broker_env_properties(&env, 0, &hdr, &p);
  amqp_bytes_t b = {len, text};
  if (amqp_basic_publish(h->c, CH, amqp_cstring_bytes(FL_EX_ROSTER), amqp_cstring_bytes(key), 0, 0,
                         &p, b) != AMQP_STATUS_OK)
    fb_die("%s: publish failed", h->id);
  h->published++;
  st->beats++;
  st->body_bytes += len;
  st->wire_bytes += wire_size(&p, key, len);
  free(text);
}

/* Entity beats every tick (-e): what a gateway of the earlier wire did, and
 * what fleetd still does while some peer expects it. */
static int g_entity_beats;

/* One beat timer tick of h, as fleetd's presence does: the host beat that
 * lists every agent; with -e instead an entity beat for each agent, then a
 * host beat that lists none. Then waits for the burst's confirms. */
static void host_tick(struct host *h, size_t nagents, unsigned ttl_ms, struct stats *st) {
  static const char groups[1][FL_MAX_GROUP_NAME + 1] = {"sim"};
  json_t *agents = g_entity_beats ? NULL : json_array();
  for (size_t a = 0; a < nagents; a++) {
    const struct agent *ag = &h->agents[a];
    json_t *body = fl_beat_json(ag->name, "worker", groups, 1, "online", "pull");
    if (!body)
      fb_die("out of memory");
    if (agents) {
      if (fl_beat_list(agents, ag->gid, body) != 0)
        fb_die("out of memory");
    } else {
      beat(h, ag->gid, ag->name, body, ttl_ms, st);
    }
  }
  json_t *gwb = fl_beat_gateway_json(h->id, "0.1.0", nagents, json_array(), agents);
  if (!gwb)
    fb_die("out of memory");
  beat(h, NULL, FL_GID_GATEWAY, gwb, ttl_ms, st);
  host_confirms(h);
}

static double cpu_s(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
         ru.ru_stime.tv_usec / 1e6;
}

struct opts {
  size_t hosts, agents;
  unsigned interval_ms, ttl_ms;
  double duration_s;
  const char *label;
};

static void run(const char *uri, const struct opts *o) {
  char *u = strdup(uri);
  struct amqp_connection_info ci;
  amqp_default_connection_info(&ci);
  if (!u || amqp_parse_url(u, &ci) != AMQP_STATUS_OK)
    fb_die("not an AMQP URI: %s", uri);
  /* "amqp://host/" names the empty vhost, which no broker has; it means "/". */
  if (!ci.vhost || !ci.vhost[0])
    ci.vhost = "/";
  struct host *hosts = calloc(o->hosts, sizeof *hosts);
  if (!hosts)
    fb_die("out of memory");
  for (size_t i = 0; i < o->hosts; i++) {
    host_init(&hosts[i], i, o->agents);
    host_connect(&hosts[i], &ci);
  }
  signal(SIGTERM, on_signal);
  signal(SIGINT, on_signal);
  struct stats st = {0};
  uint64_t step = (uint64_t)o->interval_ms * 1000000u / o->hosts; /* ns between bursts */
  uint64_t t0 = fb_now_ns(), late = 0, tick = 0;
  double c0 = cpu_s();
  uint64_t end = o->duration_s > 0 ? t0 + (uint64_t)(o->duration_s * 1e9) : UINT64_MAX;
  while (!g_stop) {
    uint64_t due = t0 + tick * step;
    if (due >= end)
      break;
    uint64_t now = fb_now_ns();
    if (now > due + step)
      late++;
    fb_sleep_until(due);
    if (g_stop)
      break;
    host_tick(&hosts[tick % o->hosts], o->agents, o->ttl_ms, &st);
    tick++;
  }
  double wall = (double)(fb_now_ns() - t0) / 1e9, cpu = cpu_s() - c0;
  uint64_t nacked = 0;
  for (size_t i = 0; i < o->hosts; i++) {
    nacked += hosts[i].nacked;
    host_close(&hosts[i]);
    free(hosts[i].agents);
  }
  free(hosts);
  free(u);
  const char *l = o->label;
  printf("RESULT %s.hosts %zu\n", l, o->hosts);
  printf("RESULT %s.agents %zu\n", l, o->hosts * o->agents);
  printf("RESULT %s.interval_ms %u\n", l, o->interval_ms);
  printf("RESULT %s.beats %llu\n", l, (unsigned long long)st.beats);
  printf("RESULT %s.beats_per_s %.1f\n", l, wall > 0 ? (double)st.beats / wall : 0.0);
  printf("RESULT %s.late_bursts %llu\n", l, (unsigned long long)late);
  printf("RESULT %s.nacked %llu\n", l, (unsigned long long)nacked);
  if (st.beats) {
    printf("RESULT %s.body_bytes %.1f\n", l, (double)st.body_bytes / (double)st.beats);
    printf("RESULT %s.wire_bytes %.1f\n", l, (double)st.wire_bytes / (double)st.beats);
    printf("RESULT %s.driver_us_per_beat %.1f\n", l, cpu * 1e6 / (double)st.beats);
  }
  fflush(stdout);
  if (nacked)
    fb_die("the broker nacked %llu beats", (unsigned long long)nacked);
}

static void usage(void) {
  fprintf(stderr, "usage: presence_sim pins [-H HOSTS]\n"
                  "       presence_sim run URI [-H HOSTS] [-a AGENTS] [-i INTERVAL_MS] "
                  "[-t TTL_MS] [-d SECONDS] [-l LABEL] [-e]\n");
  exit(2);
}

int main(int argc, char **argv) {
  fb_prog = "presence_sim";
  if (argc < 2)
    usage();
  if (sodium_init() < 0)
    fb_die("libsodium would not initialise");
  fl_alloc_init();
  const char *mode = argv[1], *uri = NULL;
  int first = 2;
  if (strcmp(mode, "run") == 0) {
    if (argc < 3)
      usage();
    uri = argv[2];
    first = 3;
  } else if (strcmp(mode, "pins") != 0) {
    usage();
  }
  struct opts o = {200, 25, 5000, 0, 0, "sim"};
  optind = first;
  int ch;
  while ((ch = getopt(argc, argv, "H:a:i:t:d:l:e")) != -1) {
    switch (ch) {
    case 'H':
      o.hosts = strtoul(optarg, NULL, 10);
      break;
    case 'a':
      o.agents = strtoul(optarg, NULL, 10);
      break;
    case 'i':
      o.interval_ms = (unsigned)strtoul(optarg, NULL, 10);
      break;
    case 't':
      o.ttl_ms = (unsigned)strtoul(optarg, NULL, 10);
      break;
    case 'd':
      o.duration_s = strtod(optarg, NULL);
      break;
    case 'l':
      o.label = optarg;
      break;
    case 'e':
      g_entity_beats = 1;
      break;
    default:
      usage();
    }
  }
  if (o.hosts < 1 || o.hosts > MAX_HOSTS || o.agents > MAX_AGENTS || o.interval_ms < 10)
    fb_die("want 1-%d hosts, at most %d agents each, an interval of at least 10 ms", MAX_HOSTS,
           MAX_AGENTS);
  if (!o.ttl_ms)
    o.ttl_ms = 3 * o.interval_ms; /* fleetd's default: three beats */
  if (strcmp(mode, "pins") == 0) {
    for (size_t i = 0; i < o.hosts; i++) {
      struct host h;
      host_init(&h, i, 0);
      char b64[FL_SIGN_PK_B64_SIZE];
      if (fl_b64_encode(h.pk, sizeof h.pk, b64, sizeof b64) != 0)
        fb_die("cannot encode a key");
      printf("%s %s\n", h.id, b64);
      free(h.agents);
    }
    return 0;
  }
  run(uri, &o);
  return 0;
}
