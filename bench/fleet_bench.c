/* fleet_bench.c — drives fleetd the way agents do (MCP, newline-delimited
 * JSON-RPC over its Unix socket) and measures what fleet adds on top of the
 * broker.
 *
 *   fleet_bench tput SOCK_A SOCK_B [-n N] [-s SIZE] [-w WINDOW] [-p POLLMAX] [-l LABEL]
 *   fleet_bench rtt  SOCK_A SOCK_B [-n N] [-s SIZE] [-r RATE] [-W WARMUP] [-l LABEL]
 *   fleet_bench bcast SOCK_A SOCK_B [SOCK_C ...] [-n N] [-s SIZE] [-r RATE] [-W WARMUP] [-l LABEL]
 *
 * tput: a sender registered on gateway A sends N messages of SIZE bytes with
 *       fleet_send (no wait_s) to a receiver registered on gateway B, keeping
 *       WINDOW requests in flight on its one connection (fleetd allows 64
 *       waiting calls per client, and a remote send waits for the broker's
 *       confirm). The receiver long-polls (wait_s, max POLLMAX, 100) until all
 *       N have arrived (a smaller POLLMAX keeps a poll of big messages under
 *       the line cap). Result: N / (last message received - first send written).
 * rtt:  U1, "ask and wait": a requester on A calls fleet_send with wait_s at
 *       RATE calls/s; a responder on B long-polls and answers each message at
 *       once with fleet_reply (inReplyTo its msgId, the same content back).
 *       The latency is the fleet_send call: request written → "replied"
 *       result read. With SOCK_A == SOCK_B it is the same exchange on one
 *       gateway (the local round trip, no broker on the path).
 * bcast: a sender on A calls fleet_broadcast at RATE calls/s; one receiver
 *       on each other gateway long-polls until every broadcast arrived. The
 *       latency is the fleet_broadcast call: request written → result read,
 *       which waits for the broker's confirm of every copy it published (one
 *       per receiving host when sealed, one in all when not).
 * sessions: opens N sessions (connected and initialized, one name each) on
 *       SOCK and reports the resident memory (VmRSS) of the fleetd with pid
 *       PID before and with them all connected.
 * held: a sender on SOCK sends N messages to a receiver on SOCK that never
 *       polls, so all N are held for it; reports PID's VmRSS before and after.
 * mcp:  starts fleet-mcp (the path FLEET_MCP) on SOCK as an MCP client does
 *       (pipes on stdin/stdout, FLEET_NAME in its environment), initializes
 *       and calls fleet_list, and reports fleet-mcp's VmRSS.
 * startup: starts FLEETD (embedded mode: no broker) N+1 times on the state
 *       dir DIR and times exec → its socket accepting a connection; the first
 *       start (which creates the identity and the store) is not counted.
 * list: waits until SOCK's gateway lists EXPECT other entities online (the
 *       hosts presence_sim plays), then times N fleet_list calls at RATE
 *       calls/s: request written → the whole result line read (the client
 *       parses it after the clock stops).
 *
 *   fleet_bench sessions SOCK PID [-n N] [-l LABEL]
 *   fleet_bench held SOCK PID [-n N] [-s SIZE] [-w WINDOW] [-l LABEL]
 *   fleet_bench mcp SOCK FLEET_MCP [-l LABEL]
 *   fleet_bench startup FLEETD DIR [-n N] [-l LABEL]
 *   fleet_bench list SOCK EXPECT [-n N] [-r RATE] [-W WARMUP] [-l LABEL]
 *
 * rtt -c PAIRS runs that many requester/responder pairs at once, each pair
 * with its own sessions and one call in flight, so PAIRS calls are in flight
 * in all; the latencies are reported together, with calls_per_s.
 * With -m FLEET_MCP, tput, rtt and bcast run every session through its own
 * fleet-mcp process (stdio pipes, identity from its environment), the way an
 * MCP client reaches fleetd; without it they talk to the socket directly.
 *
 * Each session is one connection with its own thread; nothing is shared but
 * counters read after join. Results are "RESULT LABEL.KEY VALUE" lines on
 * stdout; anything unexpected (an error result, a status other than the one
 * expected, a silent gateway) ends the run with a message and exit 1. The
 * sessions themselves (connecting, JSON-RPC, tools/call) are bench_sess.c. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_sess.h"
#include "bench_util.h"

/* Long-poll length used by receivers; short enough to notice a dead run. */
#define POLL_WAIT_S 10

#define MAX_RECEIVERS 8

struct opts {
  const char *mode, *sock_a, *sock_b, *label;
  const char *more[MAX_RECEIVERS]; /* bcast: receiving gateways after SOCK_B */
  size_t nmore;
  size_t n, size, window, warmup, pairs, poll_max;
  double rate;
};

/* ---- tput ----------------------------------------------------------------------- */

struct receiver {
  const char *sock;
  char name[64];
  size_t expect, size, poll_max;
  size_t got, polls, max_batch;
  uint64_t t_last;
  struct sess s;
  pthread_t th;
};

static void *receiver_main(void *arg) {
  struct receiver *rx = arg;
  char args[64];
  snprintf(args, sizeof args, "{\"wait_s\":%d,\"max\":%zu}", POLL_WAIT_S, rx->poll_max);
  while (rx->got < rx->expect) {
    json_t *r = sess_call(&rx->s, "fleet_poll", args);
    json_t *msgs = json_object_get(tool_result(&rx->s, r, "fleet_poll"), "messages");
    size_t n = json_array_size(msgs);
    if (n == 0)
      fb_die("%s: nothing arrived for %d s after %zu of %zu messages", rx->name, POLL_WAIT_S,
             rx->got, rx->expect);
    for (size_t i = 0; i < n; i++) {
      const char *c = json_string_value(json_object_get(json_array_get(msgs, i), "content"));
      if (!c || strlen(c) != rx->size)
        fb_die("%s: a message arrived with the wrong content", rx->name);
    }
    rx->got += n;
    rx->polls++;
    if (n > rx->max_batch)
      rx->max_batch = n;
    rx->t_last = fb_now_ns();
    json_decref(r);
  }
  return NULL;
}

static void run_tput(const struct opts *o) {
  struct receiver rx = {
      .sock = o->sock_b, .expect = o->n, .size = o->size, .poll_max = o->poll_max};
  snprintf(rx.name, sizeof rx.name, "%s-rx", o->label);
  char txname[64];
  snprintf(txname, sizeof txname, "%s-tx", o->label);
  sess_open(&rx.s, o->sock_b, rx.name);
  struct sess tx;
  sess_open(&tx, o->sock_a, txname);
  wait_online(&tx, rx.name);
  if (pthread_create(&rx.th, NULL, receiver_main, &rx) != 0)
    fb_die("cannot start a thread");

  size_t cap = o->size + 512;
  char *args = malloc(cap), *scratch = malloc(cap + 256);
  if (!args || !scratch)
    fb_die("out of memory");
  /* A remote send answers once the broker confirmed it. When the receiver
   * drains slower than the sender sends, the inbox fills to its cap and the
   * broker nacks ("the inbox may be full"); the sender then backs off 5 ms and
   * sends that message again, as an agent would, and counts it. */
  size_t issued = 0, resend = 0, ok = 0, inflight = 0, refused = 0;
  uint64_t t0 = fb_now_ns();
  while (ok < o->n) {
    while (inflight < o->window && (issued < o->n || resend > 0)) {
      char *content = make_content(o->size, issued);
      snprintf(args, cap, "{\"to\":\"%s\",\"content\":\"%s\"}", rx.name, content);
      free(content);
      sess_call_start(&tx, "fleet_send", args, scratch, cap + 256);
      if (resend > 0)
        resend--;
      else
        issued++;
      inflight++;
    }
    json_t *r = sess_recv(&tx);
    inflight--;
    const char *err = tool_error(r);
    if (err && strstr(err, "full")) {
      refused++;
      resend++;
      json_decref(r);
      fb_sleep_until(fb_now_ns() + 5000000u);
      continue;
    }
    const char *st =
        json_string_value(json_object_get(tool_result(&tx, r, "fleet_send"), "status"));
    if (!st || strcmp(st, "sent") != 0)
      fb_die("%s: fleet_send returned status %s, expected sent", txname, st ? st : "(none)");
    json_decref(r);
    ok++;
  }
  uint64_t t_sent = fb_now_ns();
  pthread_join(rx.th, NULL);
  double secs = (double)(rx.t_last - t0) / 1e9;
  printf("RESULT %s.msgs %zu\n", o->label, o->n);
  printf("RESULT %s.secs %.3f\n", o->label, secs);
  printf("RESULT %s.msgs_per_s %.1f\n", o->label, (double)o->n / secs);
  printf("RESULT %s.sent_per_s %.1f\n", o->label, (double)o->n / ((double)(t_sent - t0) / 1e9));
  printf("RESULT %s.refused_full %zu\n", o->label, refused);
  printf("RESULT %s.polls %zu\n", o->label, rx.polls);
  printf("RESULT %s.mean_batch %.1f\n", o->label, (double)rx.got / (double)rx.polls);
  printf("RESULT %s.max_batch %zu\n", o->label, rx.max_batch);
  fflush(stdout);
  free(args);
  free(scratch);
  sess_close(&tx);
  sess_close(&rx.s);
}

/* ---- rtt (U1) ------------------------------------------------------------------- */

struct responder {
  char name[64];
  size_t expect;
  size_t answered;
  struct sess s;
  pthread_t th;
};

static void *responder_main(void *arg) {
  struct responder *rs = arg;
  char pargs[64];
  snprintf(pargs, sizeof pargs, "{\"wait_s\":%d,\"max\":100}", POLL_WAIT_S);
  char *rargs = NULL;
  size_t rcap = 0;
  while (rs->answered < rs->expect) {
    json_t *r = sess_call(&rs->s, "fleet_poll", pargs);
    json_t *msgs = json_object_get(tool_result(&rs->s, r, "fleet_poll"), "messages");
    if (json_array_size(msgs) == 0)
      fb_die("%s: no request arrived for %d s after %zu of %zu", rs->name, POLL_WAIT_S,
             rs->answered, rs->expect);
    size_t i;
    json_t *m;
    json_array_foreach(msgs, i, m) {
      const char *id = json_string_value(json_object_get(m, "msgId"));
      const char *from = json_string_value(json_object_get(json_object_get(m, "from"), "gid"));
      const char *content = json_string_value(json_object_get(m, "content"));
      if (!id || !from || !content)
        fb_die("%s: a polled message lacks msgId, from.gid or content", rs->name);
      size_t need = strlen(content) + 256;
      if (need > rcap) {
        rcap = need;
        rargs = realloc(rargs, rcap);
        if (!rargs)
          fb_die("out of memory");
      }
      snprintf(rargs, rcap, "{\"to\":\"%s\",\"content\":\"%s\",\"inReplyTo\":\"%s\"}", from,
               content, id);
      json_t *rr = sess_call(&rs->s, "fleet_reply", rargs);
      tool_result(&rs->s, rr, "fleet_reply");
      json_decref(rr);
      rs->answered++;
    }
    json_decref(r);
  }
  free(rargs);
  return NULL;
}

/* One requester and its responder: the U1 loop of one pair (rtt -c runs many). */
struct pair {
  const struct opts *o;
  size_t k;
  struct responder rs;
  struct sess rq;
  char rqname[64];
  uint64_t *lat; /* o->n samples */
  size_t nlat, late;
  pthread_t th;
};

static void *requester_main(void *arg) {
  struct pair *p = arg;
  const struct opts *o = p->o;
  size_t total = o->n + o->warmup;
  size_t cap = o->size + 512;
  char *args = malloc(cap);
  if (!args)
    fb_die("out of memory");
  uint64_t period = (uint64_t)(1e9 / o->rate);
  uint64_t t0 = fb_now_ns();
  for (size_t i = 0; i < total; i++) {
    uint64_t due = t0 + i * period;
    if (fb_now_ns() > due + period / 2)
      p->late++;
    fb_sleep_until(due);
    char *content = make_content(o->size, i);
    snprintf(args, cap, "{\"to\":\"%s\",\"content\":\"%s\",\"wait_s\":10}", p->rs.name, content);
    free(content);
    uint64_t t = fb_now_ns();
    json_t *r = sess_call(&p->rq, "fleet_send", args);
    uint64_t dt = fb_now_ns() - t;
    const char *st =
        json_string_value(json_object_get(tool_result(&p->rq, r, "fleet_send"), "status"));
    if (!st || strcmp(st, "replied") != 0)
      fb_die("%s: fleet_send returned status %s, expected replied", p->rqname, st ? st : "(none)");
    json_decref(r);
    if (i >= o->warmup)
      p->lat[p->nlat++] = dt;
  }
  free(args);
  return NULL;
}

/* U1 with o->pairs requester/responder pairs at once (each pair one call in
 * flight, so pairs calls in flight in all). The latencies of all pairs are
 * reported together, with the rate of answered calls. */
static void run_rtt(const struct opts *o) {
  size_t np = o->pairs;
  struct pair *ps = calloc(np, sizeof *ps);
  uint64_t *lat = calloc(np * o->n, sizeof *lat);
  if (!ps || !lat)
    fb_die("out of memory");
  for (size_t k = 0; k < np; k++) {
    struct pair *p = &ps[k];
    p->o = o;
    p->k = k;
    p->lat = lat + k * o->n;
    p->rs.expect = o->n + o->warmup;
    if (np == 1) {
      snprintf(p->rs.name, sizeof p->rs.name, "%s-rsp", o->label);
      snprintf(p->rqname, sizeof p->rqname, "%s-req", o->label);
    } else {
      snprintf(p->rs.name, sizeof p->rs.name, "%s-rsp%zu", o->label, k);
      snprintf(p->rqname, sizeof p->rqname, "%s-req%zu", o->label, k);
    }
    sess_open(&p->rs.s, o->sock_b, p->rs.name);
    sess_open(&p->rq, o->sock_a, p->rqname);
  }
  for (size_t k = 0; k < np; k++)
    wait_online(&ps[k].rq, ps[k].rs.name);
  uint64_t t0 = fb_now_ns();
  for (size_t k = 0; k < np; k++)
    if (pthread_create(&ps[k].rs.th, NULL, responder_main, &ps[k].rs) != 0 ||
        pthread_create(&ps[k].th, NULL, requester_main, &ps[k]) != 0)
      fb_die("cannot start a thread");
  size_t nlat = 0, late = 0;
  for (size_t k = 0; k < np; k++) {
    pthread_join(ps[k].th, NULL);
    pthread_join(ps[k].rs.th, NULL);
    late += ps[k].late;
  }
  double secs = (double)(fb_now_ns() - t0) / 1e9;
  /* Pack the samples of every pair together (each filled o->n). */
  for (size_t k = 0; k < np; k++) {
    memmove(lat + nlat, ps[k].lat, ps[k].nlat * sizeof *lat);
    nlat += ps[k].nlat;
  }
  fb_report_latency(o->label, lat, nlat);
  printf("RESULT %s.late_starts %zu\n", o->label, late);
  printf("RESULT %s.pairs %zu\n", o->label, np);
  printf("RESULT %s.calls_per_s %.1f\n", o->label, (double)(np * (o->n + o->warmup)) / secs);
  fflush(stdout);
  for (size_t k = 0; k < np; k++) {
    sess_close(&ps[k].rq);
    sess_close(&ps[k].rs.s);
  }
  free(lat);
  free(ps);
}

/* ---- bcast ---------------------------------------------------------------------- */

static void run_bcast(const struct opts *o) {
  size_t total = o->n + o->warmup, nrx = 1 + o->nmore;
  struct receiver rx[MAX_RECEIVERS + 1];
  memset(rx, 0, sizeof rx);
  char txname[64];
  snprintf(txname, sizeof txname, "%s-tx", o->label);
  struct sess tx;
  sess_open(&tx, o->sock_a, txname);
  for (size_t k = 0; k < nrx; k++) {
    rx[k].sock = k ? o->more[k - 1] : o->sock_b;
    rx[k].expect = total;
    rx[k].size = o->size;
    rx[k].poll_max = o->poll_max;
    snprintf(rx[k].name, sizeof rx[k].name, "%s-rx%zu", o->label, k);
    sess_open(&rx[k].s, rx[k].sock, rx[k].name);
  }
  for (size_t k = 0; k < nrx; k++)
    wait_online(&tx, rx[k].name);
  for (size_t k = 0; k < nrx; k++)
    if (pthread_create(&rx[k].th, NULL, receiver_main, &rx[k]) != 0)
      fb_die("cannot start a thread");
  uint64_t *lat = calloc(o->n, sizeof *lat);
  size_t cap = o->size + 512;
  char *args = malloc(cap);
  if (!lat || !args)
    fb_die("out of memory");
  size_t nlat = 0;
  uint64_t period = (uint64_t)(1e9 / o->rate);
  uint64_t t0 = fb_now_ns();
  for (size_t i = 0; i < total; i++) {
    fb_sleep_until(t0 + i * period);
    char *content = make_content(o->size, i);
    snprintf(args, cap, "{\"content\":\"%s\"}", content);
    free(content);
    uint64_t t = fb_now_ns();
    json_t *r = sess_call(&tx, "fleet_broadcast", args);
    uint64_t dt = fb_now_ns() - t;
    const char *remote =
        json_string_value(json_object_get(tool_result(&tx, r, "fleet_broadcast"), "remote"));
    if (!remote || strcmp(remote, "published") != 0)
      fb_die("%s: fleet_broadcast's remote is %s, expected published", txname,
             remote ? remote : "(none)");
    json_decref(r);
    if (i >= o->warmup)
      lat[nlat++] = dt;
  }
  for (size_t k = 0; k < nrx; k++)
    pthread_join(rx[k].th, NULL);
  fb_report_latency(o->label, lat, nlat);
  printf("RESULT %s.hosts %zu\n", o->label, nrx);
  fflush(stdout);
  free(lat);
  free(args);
  sess_close(&tx);
  for (size_t k = 0; k < nrx; k++)
    sess_close(&rx[k].s);
}

/* ---- memory and start-up ---------------------------------------------------------- */

/* VmRSS of pid in KiB, or dies. */
static long rss_kib(long pid) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%ld/status", pid);
  FILE *f = fopen(path, "r");
  if (!f)
    fb_die("cannot read %s: %s", path, strerror(errno));
  long kib = -1;
  while (fgets(line, sizeof line, f))
    if (strncmp(line, "VmRSS:", 6) == 0)
      kib = strtol(line + 6, NULL, 10);
  fclose(f);
  if (kib < 0)
    fb_die("no VmRSS in %s", path);
  return kib;
}

static void run_sessions(const struct opts *o, long pid) {
  struct sess *ss = calloc(o->n, sizeof *ss);
  if (!ss)
    fb_die("out of memory");
  long before = rss_kib(pid);
  for (size_t i = 0; i < o->n; i++) {
    char name[64];
    snprintf(name, sizeof name, "%s-%zu", o->label, i);
    sess_open(&ss[i], o->sock_a, name);
  }
  /* One call on the last session: every initialize before it was answered
   * and every notifications/initialized read. */
  json_decref(sess_call(&ss[o->n - 1], "fleet_list", "{}"));
  long with = rss_kib(pid);
  printf("RESULT %s.sessions %zu\n", o->label, o->n);
  printf("RESULT %s.rss_idle_kib %ld\n", o->label, before);
  printf("RESULT %s.rss_kib %ld\n", o->label, with);
  fflush(stdout);
  for (size_t i = 0; i < o->n; i++)
    sess_close(&ss[i]);
  free(ss);
}

static void run_held(const struct opts *o, long pid) {
  char rxname[64], txname[64];
  snprintf(rxname, sizeof rxname, "%s-rx", o->label);
  snprintf(txname, sizeof txname, "%s-tx", o->label);
  struct sess rx, tx;
  sess_open(&rx, o->sock_a, rxname);
  sess_open(&tx, o->sock_a, txname);
  long before = rss_kib(pid);
  size_t cap = o->size + 512;
  char *args = malloc(cap), *scratch = malloc(cap + 256);
  if (!args || !scratch)
    fb_die("out of memory");
  size_t issued = 0, done = 0, inflight = 0;
  while (done < o->n) {
    while (inflight < o->window && issued < o->n) {
      char *content = make_content(o->size, issued++);
      snprintf(args, cap, "{\"to\":\"%s\",\"content\":\"%s\"}", rxname, content);
      free(content);
      sess_call_start(&tx, "fleet_send", args, scratch, cap + 256);
      inflight++;
    }
    json_t *r = sess_recv(&tx);
    inflight--;
    const char *st =
        json_string_value(json_object_get(tool_result(&tx, r, "fleet_send"), "status"));
    if (!st || strcmp(st, "sent") != 0)
      fb_die("%s: fleet_send returned status %s, expected sent", txname, st ? st : "(none)");
    json_decref(r);
    done++;
  }
  long with = rss_kib(pid);
  printf("RESULT %s.held %zu\n", o->label, o->n);
  printf("RESULT %s.rss_idle_kib %ld\n", o->label, before);
  printf("RESULT %s.rss_kib %ld\n", o->label, with);
  fflush(stdout);
  free(args);
  free(scratch);
  sess_close(&tx);
  sess_close(&rx);
}

static void run_mcp(const struct opts *o, const char *fleet_mcp) {
  g_fleet_mcp = fleet_mcp;
  struct sess s;
  sess_open(&s, o->sock_a, o->label);
  json_t *r = sess_call(&s, "fleet_list", "{}");
  tool_result(&s, r, "fleet_list");
  json_decref(r);
  long kib = rss_kib((long)s.child);
  sess_close(&s);
  printf("RESULT %s.rss_kib %ld\n", o->label, kib);
  fflush(stdout);
}

/* Tries to connect to sock; 1 when something accepts. */
static int sock_ready(const char *sock) {
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  if (strlen(sock) >= sizeof a.sun_path)
    fb_die("socket path too long: %s", sock);
  strcpy(a.sun_path, sock);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return 0;
  int ok = connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
  close(fd);
  return ok;
}

static void run_startup(const struct opts *o, const char *fleetd, const char *dir) {
  char state[512], sock[512], cfg[512], logp[512];
  snprintf(state, sizeof state, "%s/state", dir);
  snprintf(sock, sizeof sock, "%s/fleetd.sock", dir);
  snprintf(cfg, sizeof cfg, "%s/fleetd.json", dir);
  snprintf(logp, sizeof logp, "%s/fleetd.log", dir);
  FILE *f = fopen(cfg, "w");
  if (!f)
    fb_die("cannot write %s", cfg);
  fputs("{\"logLevel\":\"info\"}\n", f);
  fclose(f);
  uint64_t *lat = calloc(o->n, sizeof *lat);
  if (!lat)
    fb_die("out of memory");
  for (size_t i = 0; i <= o->n; i++) {
    unlink(sock);
    uint64_t t0 = fb_now_ns();
    pid_t pid = fork();
    if (pid < 0)
      fb_die("fork: %s", strerror(errno));
    if (pid == 0) {
      FILE *lf = freopen(logp, "a", stderr);
      (void)lf;
      execl(fleetd, fleetd, "--state-dir", state, "--socket", sock, "--host-id", "hostS",
            "--config", cfg, (char *)NULL);
      _exit(127);
    }
    while (!sock_ready(sock)) {
      if (fb_now_ns() - t0 > 10ull * 1000000000u)
        fb_die("fleetd's socket %s was not ready within 10 s (see %s)", sock, logp);
      int st;
      if (waitpid(pid, &st, WNOHANG) == pid)
        fb_die("fleetd exited before its socket was ready (see %s)", logp);
      fb_sleep_until(fb_now_ns() + 100000u);
    }
    uint64_t dt = fb_now_ns() - t0;
    if (i > 0)
      lat[i - 1] = dt;
    kill(pid, SIGTERM);
    int st;
    waitpid(pid, &st, 0);
  }
  fb_report_latency(o->label, lat, o->n);
  free(lat);
}

/* ---- list ------------------------------------------------------------------------ */

/* How many entities of a fleet_list result other than self are online. */
static size_t count_online(json_t *sc) {
  const char *self = json_string_value(json_object_get(sc, "self"));
  size_t i, n = 0;
  json_t *e;
  json_array_foreach(json_object_get(sc, "entities"), i, e) {
    const char *gid = json_string_value(json_object_get(e, "gid"));
    const char *st = json_string_value(json_object_get(e, "status"));
    if (st && strcmp(st, "online") == 0 && !(self && gid && strcmp(gid, self) == 0))
      n++;
  }
  return n;
}

/* Waits (60 s at most) until SOCK's gateway lists at least EXPECT other
 * entities online, then times N fleet_list calls at RATE calls/s after
 * WARMUP: request written to the whole response line read (its parse
 * comes after the window). */
static void run_list(const struct opts *o, size_t expect) {
  struct sess s;
  char name[64];
  snprintf(name, sizeof name, "%s-lister", o->label);
  sess_open(&s, o->sock_a, name);
  uint64_t t0 = fb_now_ns(), deadline = t0 + 60ull * 1000000000u;
  size_t online = 0, entries = 0;
  for (;;) {
    json_t *r = sess_call(&s, "fleet_list", "{}");
    json_t *sc = tool_result(&s, r, "fleet_list");
    online = count_online(sc);
    entries = json_array_size(json_object_get(sc, "entities"));
    json_decref(r);
    if (online >= expect)
      break;
    if (fb_now_ns() > deadline)
      fb_die("%s: %zu of %zu entities online after 60 s", name, online, expect);
    fb_sleep_until(fb_now_ns() + 200000000u);
  }
  printf("RESULT %s.wait_online_s %.2f\n", o->label, (double)(fb_now_ns() - t0) / 1e9);
  uint64_t *lat = calloc(o->n, sizeof *lat);
  if (!lat)
    fb_die("out of memory");
  uint64_t period = (uint64_t)(1e9 / o->rate), next = fb_now_ns();
  size_t below = 0, bytes = 0;
  for (size_t i = 0; i < o->warmup + o->n; i++) {
    fb_sleep_until(next);
    next += period;
    /* The window ends when the response line is read whole: parsing it
     * is this client's cost, not the gateway's. */
    uint64_t ts = fb_now_ns(), te;
    json_t *r = sess_call_at(&s, "fleet_list", "{}", &te);
    uint64_t dt = te - ts;
    json_t *sc = tool_result(&s, r, "fleet_list");
    if (count_online(sc) < expect)
      below++;
    entries = json_array_size(json_object_get(sc, "entities"));
    bytes = s.last_len;
    json_decref(r);
    if (i >= o->warmup)
      lat[i - o->warmup] = dt;
  }
  sess_close(&s);
  printf("RESULT %s.entries %zu\n", o->label, entries);
  printf("RESULT %s.online_below_expected %zu\n", o->label, below);
  printf("RESULT %s.response_bytes %zu\n", o->label, bytes);
  fb_report_latency(o->label, lat, o->n);
  free(lat);
}

static void usage(void) {
  fprintf(stderr,
          "usage: fleet_bench tput|rtt SOCK_A SOCK_B [-n N] [-s SIZE] [-w WINDOW] "
          "[-r RATE] [-W WARMUP] [-l LABEL]\n"
          "       fleet_bench bcast SOCK_A SOCK_B [SOCK_C ...] [-n N] [-s SIZE] "
          "[-r RATE] [-W WARMUP] [-l LABEL]\n"
          "       (tput, rtt and bcast take -m FLEET_MCP: every session through fleet-mcp)\n"
          "       fleet_bench sessions SOCK PID [-n N] [-l LABEL]\n"
          "       fleet_bench held SOCK PID [-n N] [-s SIZE] [-w WINDOW] [-l LABEL]\n"
          "       fleet_bench mcp SOCK FLEET_MCP [-l LABEL]\n"
          "       fleet_bench startup FLEETD DIR [-n N] [-l LABEL]\n"
          "       fleet_bench list SOCK EXPECT [-n N] [-r RATE] [-W WARMUP] [-l LABEL]\n");
  exit(2);
}

int main(int argc, char **argv) {
  fb_prog = "fleet_bench";
  struct opts o = {.n = 20000,
                   .size = 1024,
                   .window = 64,
                   .warmup = 10,
                   .rate = 20,
                   .pairs = 1,
                   .poll_max = 100};
  if (argc < 4)
    usage();
  o.mode = argv[1];
  o.sock_a = argv[2];
  o.sock_b = argv[3];
  o.label = o.mode;
  optind = 4;
  while (optind < argc && argv[optind][0] != '-') {
    if (o.nmore == MAX_RECEIVERS)
      usage();
    o.more[o.nmore++] = argv[optind++];
  }
  int ch;
  while ((ch = getopt(argc, argv, "n:s:w:r:W:l:m:c:p:")) != -1) {
    switch (ch) {
    case 'm':
      g_fleet_mcp = optarg;
      break;
    case 'c':
      o.pairs = strtoul(optarg, NULL, 10);
      break;
    case 'p':
      o.poll_max = strtoul(optarg, NULL, 10);
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
    case 'l':
      o.label = optarg;
      break;
    default:
      usage();
    }
  }
  if (o.pairs == 0 || o.pairs > 256 || o.poll_max == 0 || o.poll_max > 100 || o.n == 0 ||
      o.size < 12 || o.window == 0 || o.rate <= 0 || strlen(o.label) > 40)
    usage();
  if (strcmp(o.mode, "tput") == 0)
    run_tput(&o);
  else if (strcmp(o.mode, "rtt") == 0)
    run_rtt(&o);
  else if (strcmp(o.mode, "bcast") == 0)
    run_bcast(&o);
  else if (strcmp(o.mode, "sessions") == 0)
    run_sessions(&o, strtol(o.sock_b, NULL, 10));
  else if (strcmp(o.mode, "held") == 0)
    run_held(&o, strtol(o.sock_b, NULL, 10));
  else if (strcmp(o.mode, "mcp") == 0)
    run_mcp(&o, o.sock_b);
  else if (strcmp(o.mode, "startup") == 0)
    run_startup(&o, o.sock_a, o.sock_b);
  else if (strcmp(o.mode, "list") == 0)
    run_list(&o, strtoul(o.sock_b, NULL, 10));
  else
    usage();
  return 0;
}
