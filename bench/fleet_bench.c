/* fleet_bench.c — drives fleetd the way agents do (MCP, newline-delimited
 * JSON-RPC over its Unix socket) and measures what fleet adds on top of the
 * broker.
 *
 *   fleet_bench tput SOCK_A SOCK_B [-n N] [-s SIZE] [-w WINDOW] [-l LABEL]
 *   fleet_bench rtt  SOCK_A SOCK_B [-n N] [-s SIZE] [-r RATE] [-W WARMUP] [-l LABEL]
 *   fleet_bench bcast SOCK_A SOCK_B [SOCK_C ...] [-n N] [-s SIZE] [-r RATE] [-W WARMUP] [-l LABEL]
 *
 * tput: a sender registered on gateway A sends N messages of SIZE bytes with
 *       fleet_send (no wait_s) to a receiver registered on gateway B, keeping
 *       WINDOW requests in flight on its one connection (fleetd allows 64
 *       waiting calls per client, and a remote send waits for the broker's
 *       confirm). The receiver long-polls (wait_s, max 100) until all N have
 *       arrived. Result: N / (last message received - first send written).
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
 * expected, a silent gateway) ends the run with a message and exit 1. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_util.h"

/* A response longer than this is a broken gateway, not a big poll: 100
 * messages of 1 KiB come to ~250 KiB (content appears twice, as text and as
 * structuredContent). fleetd's own line cap is 4 MiB. */
#define MAX_LINE (8u * 1024u * 1024u)
/* How long any single read waits before the run is declared stuck. */
#define READ_TIMEOUT_MS 30000
/* Long-poll length used by receivers; short enough to notice a dead run. */
#define POLL_WAIT_S 10

#define MAX_RECEIVERS 8

struct opts {
  const char *mode, *sock_a, *sock_b, *label;
  const char *more[MAX_RECEIVERS]; /* bcast: receiving gateways after SOCK_B */
  size_t nmore;
  size_t n, size, window, warmup, pairs;
  double rate;
};

struct sess {
  int fd;      /* read from (the socket, or fleet-mcp's stdout) */
  int wfd;     /* written to (the socket again, or fleet-mcp's stdin) */
  pid_t child; /* fleet-mcp's pid when the session goes through it, else 0 */
  char name[64];
  char *buf;
  size_t len, off, cap;
  size_t scanned;  /* bytes after off already searched for the end of the line */
  size_t last_len; /* bytes of the last line read */
  long next_id;
};

static void sess_write(struct sess *s, const char *p, size_t n) {
  while (n) {
    ssize_t w = write(s->wfd, p, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      fb_die("%s: write to fleetd failed: %s", s->name, strerror(errno));
    p += w;
    n -= (size_t)w;
  }
}

/* Next complete line (NUL-terminated in place), reading as needed. */
static char *sess_line(struct sess *s) {
  for (;;) {
    /* Only the bytes not searched yet: a 2 MB line comes in many reads. */
    char *nl = memchr(s->buf + s->off + s->scanned, '\n', s->len - s->off - s->scanned);
    if (nl) {
      *nl = '\0';
      char *line = s->buf + s->off;
      s->last_len = (size_t)(nl - line);
      s->off = (size_t)(nl - s->buf) + 1;
      s->scanned = 0;
      return line;
    }
    s->scanned = s->len - s->off;
    if (s->off > 0) {
      memmove(s->buf, s->buf + s->off, s->len - s->off);
      s->len -= s->off;
      s->off = 0;
    }
    if (s->len + 65536 > s->cap) {
      if (s->cap >= MAX_LINE)
        fb_die("%s: a line from fleetd exceeds %u bytes", s->name, MAX_LINE);
      s->cap = s->cap ? s->cap * 2 : 262144;
      s->buf = realloc(s->buf, s->cap);
      if (!s->buf)
        fb_die("out of memory");
    }
    struct pollfd p = {s->fd, POLLIN, 0};
    int pr = poll(&p, 1, READ_TIMEOUT_MS);
    if (pr == 0)
      fb_die("%s: fleetd sent nothing for %d s", s->name, READ_TIMEOUT_MS / 1000);
    if (pr < 0 && errno == EINTR)
      continue;
    ssize_t r = read(s->fd, s->buf + s->len, s->cap - s->len);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      fb_die("%s: fleetd closed the connection", s->name);
    s->len += (size_t)r;
  }
}

/* Next response (a message with an id); notifications are skipped. New
 * reference. When read_ns is given, it gets the clock at the moment the
 * response's line was read whole, before it is parsed. */
static json_t *sess_recv_at(struct sess *s, uint64_t *read_ns) {
  for (;;) {
    char *line = sess_line(s);
    if (read_ns)
      *read_ns = fb_now_ns();
    json_error_t e;
    json_t *j = json_loads(line, 0, &e);
    if (!j)
      fb_die("%s: fleetd sent a line that is not JSON: %s", s->name, e.text);
    if (json_object_get(j, "id"))
      return j;
    json_decref(j);
  }
}

static json_t *sess_recv(struct sess *s) { return sess_recv_at(s, NULL); }

/* The structuredContent of a tools/call response (borrowed from resp); dies
 * on a JSON-RPC error or an isError result, naming what. */
static json_t *tool_result(struct sess *s, json_t *resp, const char *what) {
  json_t *err = json_object_get(resp, "error");
  if (err)
    fb_die("%s: %s: JSON-RPC error: %s", s->name, what,
           json_string_value(json_object_get(err, "message")));
  json_t *res = json_object_get(resp, "result");
  if (json_is_true(json_object_get(res, "isError"))) {
    json_t *c0 = json_array_get(json_object_get(res, "content"), 0);
    fb_die("%s: %s failed: %s", s->name, what, json_string_value(json_object_get(c0, "text")));
  }
  json_t *sc = json_object_get(res, "structuredContent");
  if (!sc)
    fb_die("%s: %s: no structuredContent in the result", s->name, what);
  return sc;
}

/* The error text of an isError tools/call result (borrowed from resp), or NULL. */
static const char *tool_error(json_t *resp) {
  json_t *res = json_object_get(resp, "result");
  if (!json_is_true(json_object_get(res, "isError")))
    return NULL;
  json_t *c0 = json_array_get(json_object_get(res, "content"), 0);
  const char *t = json_string_value(json_object_get(c0, "text"));
  return t ? t : "(no message)";
}

/* Writes a tools/call request and returns its id. args is a JSON object text. */
static long sess_call_start(struct sess *s, const char *tool, const char *args, char *scratch,
                            size_t cap) {
  long id = s->next_id++;
  int n = snprintf(scratch, cap,
                   "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"tools/call\","
                   "\"params\":{\"name\":\"%s\",\"arguments\":%s}}\n",
                   id, tool, args);
  if (n < 0 || (size_t)n >= cap)
    fb_die("request too large for the scratch buffer");
  sess_write(s, scratch, (size_t)n);
  return id;
}

/* One synchronous tools/call; returns the response (new reference). With
 * read_ns, as sess_recv_at. */
static json_t *sess_call_at(struct sess *s, const char *tool, const char *args, uint64_t *read_ns) {
  size_t cap = strlen(args) + 256;
  char *scratch = malloc(cap);
  if (!scratch)
    fb_die("out of memory");
  long id = sess_call_start(s, tool, args, scratch, cap);
  free(scratch);
  json_t *r = sess_recv_at(s, read_ns);
  if (json_integer_value(json_object_get(r, "id")) != id)
    fb_die("%s: response to an unexpected id", s->name);
  return r;
}

static json_t *sess_call(struct sess *s, const char *tool, const char *args) {
  return sess_call_at(s, tool, args, NULL);
}

/* When set (-m), every session goes through this fleet-mcp, as an MCP client's does. */
static const char *g_fleet_mcp;

static pid_t spawn_piped(char *const argv[], char *const envp[], int *in, int *out);

/* Starts fleet-mcp for the worker name on sock; it adds the identity to
 * initialize from its environment. */
static void sess_open_mcp(struct sess *s, const char *sock, const char *name) {
  char name_env[96], sock_env[600], home_env[600];
  snprintf(name_env, sizeof name_env, "FLEET_NAME=%s", name);
  snprintf(sock_env, sizeof sock_env, "FLEET_SOCKET=%s", sock);
  snprintf(home_env, sizeof home_env, "HOME=%s", getenv("HOME") ? getenv("HOME") : "/");
  char *argv[] = {(char *)g_fleet_mcp, NULL};
  char *envp[] = {name_env, sock_env, "FLEET_ROLE=worker", "PATH=/usr/bin:/bin", home_env, NULL};
  s->child = spawn_piped(argv, envp, &s->wfd, &s->fd);
  static const char init[] = "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{"
                             "\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},"
                             "\"clientInfo\":{\"name\":\"fleet_bench\",\"version\":\"1.0\"}}}\n";
  sess_write(s, init, sizeof init - 1);
}

/* Connects to sock (or starts fleet-mcp on it, with -m) and registers as the
 * worker name. */
static void sess_open(struct sess *s, const char *sock, const char *name) {
  memset(s, 0, sizeof *s);
  snprintf(s->name, sizeof s->name, "%s", name);
  s->next_id = 1;
  if (g_fleet_mcp) {
    sess_open_mcp(s, sock, name);
    goto initialized;
  }
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  if (strlen(sock) >= sizeof a.sun_path)
    fb_die("socket path too long: %s", sock);
  strcpy(a.sun_path, sock);
  s->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s->fd < 0 || connect(s->fd, (struct sockaddr *)&a, sizeof a) != 0)
    fb_die("cannot connect to fleetd at %s: %s", sock, strerror(errno));
  s->wfd = s->fd;
  char line[1024];
  int n = snprintf(line, sizeof line,
                   "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{"
                   "\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},"
                   "\"clientInfo\":{\"name\":\"fleet_bench\",\"version\":\"1.0\"},"
                   "\"_meta\":{\"fleet/identity\":{\"name\":\"%s\",\"role\":\"worker\"}}}}\n",
                   name);
  sess_write(s, line, (size_t)n);
initialized:;
  json_t *r = sess_recv(s);
  json_t *err = json_object_get(r, "error");
  if (err)
    fb_die("%s: initialize refused: %s", name, json_string_value(json_object_get(err, "message")));
  json_decref(r);
  static const char inited[] = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n";
  sess_write(s, inited, sizeof inited - 1);
}

static void sess_close(struct sess *s) {
  if (s->wfd >= 0 && s->wfd != s->fd)
    close(s->wfd);
  if (s->fd >= 0)
    close(s->fd);
  s->fd = s->wfd = -1;
  if (s->child > 0) { /* fleet-mcp exits when its stdin closes */
    int st;
    waitpid(s->child, &st, 0);
    s->child = 0;
  }
  free(s->buf);
  s->buf = NULL;
}

/* Waits until s's gateway lists name as online (presence from another host
 * takes one beat to arrive). */
static void wait_online(struct sess *s, const char *name) {
  uint64_t deadline = fb_now_ns() + 20ull * 1000000000u;
  while (fb_now_ns() < deadline) {
    json_t *r = sess_call(s, "fleet_list", "{}");
    json_t *ents = json_object_get(tool_result(s, r, "fleet_list"), "entities");
    size_t i;
    json_t *e;
    int ok = 0;
    json_array_foreach(ents, i, e) {
      const char *n = json_string_value(json_object_get(e, "name"));
      const char *st = json_string_value(json_object_get(e, "status"));
      if (n && st && strcmp(n, name) == 0 && strcmp(st, "online") == 0)
        ok = 1;
    }
    json_decref(r);
    if (ok)
      return;
    fb_sleep_until(fb_now_ns() + 50000000u);
  }
  fb_die("%s: '%s' did not show up online within 20 s (is the broker link up? are the gateways' "
         "keys pinned?)",
         s->name, name);
}

/* Content of exactly size bytes of plain ASCII (no JSON escaping needed),
 * starting with a sequence number so a receiver could check order. */
static char *make_content(size_t size, size_t seq) {
  char *c = malloc(size + 1);
  if (!c)
    fb_die("out of memory");
  for (size_t i = 0; i < size; i++)
    c[i] = (char)('a' + i % 26);
  char head[24];
  int n = snprintf(head, sizeof head, "%010zu:", seq);
  memcpy(c, head, (size_t)n < size ? (size_t)n : size);
  c[size] = '\0';
  return c;
}

/* ---- tput ----------------------------------------------------------------------- */

struct receiver {
  const char *sock;
  char name[64];
  size_t expect, size;
  size_t got, polls, max_batch;
  uint64_t t_last;
  struct sess s;
  pthread_t th;
};

static void *receiver_main(void *arg) {
  struct receiver *rx = arg;
  char args[64];
  snprintf(args, sizeof args, "{\"wait_s\":%d,\"max\":100}", POLL_WAIT_S);
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
  struct receiver rx = {.sock = o->sock_b, .expect = o->n, .size = o->size};
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

/* Starts path with stdin and stdout on pipes; *in and *out are our ends. */
static pid_t spawn_piped(char *const argv[], char *const envp[], int *in, int *out) {
  int a[2], b[2];
  /* O_CLOEXEC: a later child must not hold an earlier one's pipes open. */
  if (pipe2(a, O_CLOEXEC) != 0 || pipe2(b, O_CLOEXEC) != 0)
    fb_die("pipe: %s", strerror(errno));
  pid_t pid = fork();
  if (pid < 0)
    fb_die("fork: %s", strerror(errno));
  if (pid == 0) {
    dup2(a[0], 0);
    dup2(b[1], 1);
    close(a[0]);
    close(a[1]);
    close(b[0]);
    close(b[1]);
    execve(argv[0], argv, envp);
    _exit(127);
  }
  close(a[0]);
  close(b[1]);
  *in = a[1];
  *out = b[0];
  return pid;
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
  struct opts o = {.n = 20000, .size = 1024, .window = 64, .warmup = 10, .rate = 20, .pairs = 1};
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
  while ((ch = getopt(argc, argv, "n:s:w:r:W:l:m:c:")) != -1) {
    switch (ch) {
    case 'm':
      g_fleet_mcp = optarg;
      break;
    case 'c':
      o.pairs = strtoul(optarg, NULL, 10);
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
  if (o.pairs == 0 || o.pairs > 256 || o.n == 0 || o.size < 12 || o.window == 0 || o.rate <= 0 ||
      strlen(o.label) > 40)
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
