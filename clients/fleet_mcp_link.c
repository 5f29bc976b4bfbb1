/* fleet_mcp_link.c — fleet-mcp's link to fleetd, and getting it back (see
 * fleet_mcp_link.h): the lines each way as the link sees them, losing the
 * link (the calls in flight answered), reconnecting with backoff and
 * jitter, the repeated initialize that registers the session again, and the
 * client's lines held while the link is briefly down. */
#include "clients/fleet_mcp_link.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "clients/fleet_mcp_head.h"
#include "common/alloc.h"
#include "common/error.h"
#include "common/json_read.h"
#include "common/time.h"

/* The first retry comes soon (a restart by systemd takes about a second);
 * each failed attempt doubles the wait up to FL_MCP_RETRY_MAX_MS, so a
 * fleetd that comes back is found within a few seconds. A fleetd that
 * refuses the session (its name is taken by another live session) is asked
 * again less and less often, up to every FL_MCP_REFUSED_MAX_MS. Each wait is
 * spread by +-FL_MCP_JITTER_PCT so many agents do not knock at once. */
#define FL_MCP_RETRY_FIRST_MS 150
#define FL_MCP_RETRY_MAX_MS 4000
#define FL_MCP_REFUSED_MAX_MS 30000
#define FL_MCP_JITTER_PCT 20
/* While fleetd stays away, a reason already logged is logged again only this
 * often, so a fleetd that never comes back costs a line every few minutes. */
#define FL_MCP_STILL_DOWN_LOG_MS (5 * 60 * 1000)
/* The id prefix of fleet-mcp's own requests to fleetd; their answers are
 * not relayed. */
#define FL_MCP_OWN_ID "fleet-mcp/"

/* The answer to a call that was in flight when the link was lost. */
#define FL_MCP_LOST_CALL                                                                           \
  "fleetd went away while this call was in flight (it stopped, restarted or closed the "           \
  "connection), so whether it took effect is unknown. fleet-mcp reconnects by itself: retry in "   \
  "a few seconds (after a send, fleet_list or fleet_poll tells whether it went through)."

/* Writes every byte of iov, retrying on EINTR and short writes, and waiting
 * for POLLOUT if fd happens to be non-blocking (a parent may hand us such a
 * pipe). Returns 0 or -errno. Modifies iov. */
int fl_link_write_all(int fd, struct iovec *iov, int iovcnt) {
  while (iovcnt > 0) {
    ssize_t n = writev(fd, iov, iovcnt);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        struct pollfd p = {.fd = fd, .events = POLLOUT};
        (void)poll(&p, 1, FL_MCP_POLL_FOREVER);
        continue;
      }
      return -errno;
    }
    while (iovcnt > 0 && (size_t)n >= iov->iov_len) {
      n -= (ssize_t)iov->iov_len;
      iov++;
      iovcnt--;
    }
    if (iovcnt > 0) {
      iov->iov_base = (char *)iov->iov_base + n;
      iov->iov_len -= (size_t)n;
    }
  }
  return 0;
}

/* Writes line (len bytes, without its '\n') and then '\n'. */
static int write_line(int fd, const char *line, size_t len) {
  struct iovec iov[2] = {{.iov_base = (void *)line, .iov_len = len},
                         {.iov_base = (void *)"\n", .iov_len = 1}};
  return fl_link_write_all(fd, iov, 2);
}

/* Adds ident (borrowed) as params._meta["fleet/identity"] of the initialize
 * request root (borrowed), making params and _meta when they are missing.
 * Returns 0, or FL_EINVAL when params or _meta has a shape fleetd rejects
 * anyway (the line is then relayed unchanged), or FL_ENOMEM. */
static int add_identity(json_t *root, json_t *ident) {
  json_t *params = json_object_get(root, "params");
  if (!params || json_is_null(params)) {
    params = json_object();
    if (json_object_set_new(root, "params", params) != 0)
      return FL_ENOMEM;
  }
  if (!json_is_object(params))
    return FL_EINVAL;
  json_t *meta = json_object_get(params, "_meta");
  if (!meta || json_is_null(meta)) {
    meta = json_object();
    if (json_object_set_new(params, "_meta", meta) != 0)
      return FL_ENOMEM;
  }
  if (!json_is_object(meta))
    return FL_EINVAL;
  /* By reference: the gid fleet-mcp learns later, and "resume", reach the
   * copy kept for registering again. */
  return json_object_set(meta, "fleet/identity", ident) == 0 ? 0 : FL_ENOMEM;
}

/* Connects to the Unix socket at path. nonblock: fail with -EAGAIN rather
 * than wait when its listen queue is full (a reconnect must never stall the
 * relay); the fd returned blocks either way. Returns the fd, or -errno. */
int fl_link_connect_unix(const char *path, int nonblock) {
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  if (strlen(path) >= sizeof sa.sun_path)
    return -ENAMETOOLONG;
  memcpy(sa.sun_path, path, strlen(path) + 1);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0), 0);
  if (fd < 0)
    return -errno;
  int rc;
  do
    rc = connect(fd, (struct sockaddr *)&sa, sizeof sa);
  while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    int err = -errno;
    close(fd);
    return err;
  }
  if (nonblock) {
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
      int err = -errno;
      close(fd);
      return err;
    }
  }
  return fd;
}

/* Writes a line fleet-mcp made (ending in '\n', freed here) to the client.
 * A client that is gone shows as stdin EOF soon; nothing else to do. */
static void reply_client(char *line) {
  if (!line)
    return;
  struct iovec iov = {.iov_base = line, .iov_len = strlen(line)};
  (void)fl_link_write_all(STDOUT_FILENO, &iov, 1);
  fl_free(line);
}

/* 1 when method[0..n) is name. */
static int method_is(const char *method, size_t n, const char *name) {
  return n == strlen(name) && memcmp(method, name, n) == 0;
}

/* The kind of answer a request with this method (n bytes) gets from fleet-mcp. */
static enum fl_call_kind call_kind_n(const char *method, size_t n) {
  if (method_is(method, n, "tools/call"))
    return FL_CALL_TOOL;
  if (method_is(method, n, "initialize"))
    return FL_CALL_INIT;
  return FL_CALL_OTHER;
}

static enum fl_call_kind call_kind(const char *method) {
  return call_kind_n(method, strlen(method));
}

/* Answers a request that cannot reach fleetd now (msg is the parsed line,
 * borrowed): ping is answered here (fleet-mcp is alive), anything else gets
 * a retryable error that says why. Notifications need nothing. */
static void answer_offline(fl_relay *r, json_t *msg) {
  const char *method = json_string_value(json_object_get(msg, "method"));
  json_t *id = json_object_get(msg, "id");
  if (!method || !id)
    return;
  if (strcmp(method, "ping") == 0) {
    reply_client(fl_rpc_result(id, json_object()));
    return;
  }
  char why[FL_MCP_WHY_MAX + 160];
  fl_errf(why, sizeof why,
          "fleet-mcp is not connected to fleetd right now: %s. It keeps reconnecting by itself; "
          "retry in a few seconds.",
          r->why);
  reply_client(fl_calls_lost_line(id, call_kind(method), why));
}

/* Logs why fleetd cannot be reached, unless that reason was just logged. */
static void log_why(fl_relay *r, long long now) {
  if (strcmp(r->why, r->logged) == 0 && now - r->last_log < FL_MCP_STILL_DOWN_LOG_MS)
    return;
  if (strcmp(r->why, r->logged) == 0)
    fprintf(stderr, "fleet-mcp: still no fleetd after %lld s (%lu attempts): %s\n",
            (now - r->lost_at) / 1000, r->attempts, r->why);
  else
    fprintf(stderr, "fleet-mcp: cannot reach fleetd yet: %s; retrying\n", r->why);
  fl_copy(r->logged, sizeof r->logged, r->why);
  r->last_log = now;
}

/* The next wait before connecting again, spread by the jitter. */
static long long retry_in(fl_relay *r, int refused) {
  int base = r->retry_ms;
  int cap = refused ? FL_MCP_REFUSED_MAX_MS : FL_MCP_RETRY_MAX_MS;
  r->retry_ms = base >= cap / 2 ? cap : base * 2;
  /* xorshift32: jitter needs no better randomness. */
  r->rng ^= r->rng << 13;
  r->rng ^= r->rng >> 17;
  r->rng ^= r->rng << 5;
  int spread = base * FL_MCP_JITTER_PCT / 100;
  return base - spread + (long long)(r->rng % (unsigned)(2 * spread + 1));
}

/* Every call fleetd had not answered gets its retryable error. */
static size_t fail_calls(fl_relay *r) {
  size_t n = 0;
  int left = fl_calls_count(r->calls) > 0;
  while (left) {
    reply_client(fl_calls_pop_lost(r->calls, FL_MCP_LOST_CALL, &left));
    n++;
  }
  return n;
}

/* Ends the link (sock, the half line read from it, the calls in flight).
 * why says what happened (NULL: r->why already does); refused: fleetd said
 * no to the session, so it is asked again less often. */
void fl_link_down(fl_relay *r, const char *why, int refused) {
  long long now = fl_mono_ms();
  if (why)
    fl_copy(r->why, sizeof r->why, why);
  if (r->sock >= 0)
    close(r->sock);
  r->sock = -1;
  fl_linebuf_free(&r->out);
  fl_linebuf_init(&r->out, FL_MAX_LINE);
  size_t failed = fail_calls(r);
  if (r->ending) {
    /* The end fleet-mcp asked for (stdin closed): no alarm, no reconnect.
     * A call fleetd did not answer, such as a waiting poll, has its
     * retryable error above; what it waited for stays held. */
    r->link = FL_LINK_DOWN;
    return;
  }
  if (r->link == FL_LINK_UP) {
    r->lost_at = now;
    r->attempts = 0;
    r->retry_ms = FL_MCP_RETRY_FIRST_MS;
    r->logged[0] = '\0';
    fprintf(stderr,
            "fleet-mcp: lost fleetd (%s); %zu call%s in flight answered with a retryable "
            "error; reconnecting\n",
            r->why, failed, failed == 1 ? "" : "s");
  } else {
    log_why(r, now);
  }
  r->link = FL_LINK_DOWN;
  r->next_try = now + retry_in(r, refused);
}

static void warn_untracked(fl_relay *r) {
  if (r->untracked_warned)
    return;
  r->untracked_warned = 1;
  fprintf(stderr, "fleet-mcp: over %d calls in flight; the rest go through untracked\n",
          FL_MCP_MAX_CALLS);
}

/* Takes the link down when a write to fleetd failed (wrc, a negative errno). */
static void sent(fl_relay *r, int wrc) {
  if (wrc != 0) {
    char why[64];
    fl_errf(why, sizeof why, "writing to fleetd failed: %s", strerror(-wrc));
    fl_link_down(r, why, 0);
  }
}

/* A request that needs nothing of fleet-mcp but its id kept (every request
 * but initialize and logging/setLevel), read by fl_mcp_head_scan: it goes
 * through as it came, with no tree built of it. */
static int send_plain_call(fl_relay *r, const fl_mcp_head *h, enum fl_call_kind kind,
                           const char *line, size_t len) {
  int arc = fl_calls_add_tok(r->calls, h->id, h->id_len, kind);
  if (arc == FL_ENOMEM) {
    fprintf(stderr, "fleet-mcp: out of memory\n");
    return FL_PUMP_FAIL;
  }
  if (arc == FL_EFULL)
    warn_untracked(r);
  sent(r, write_line(r->sock, line, len));
  return FL_PUMP_OK;
}

/* Sends one whole line from the client to fleetd, noting what fleet-mcp
 * must know of it (the call to answer if the link is lost, the session to
 * register again). initialize gets the identity. A write that fails takes
 * the link down. Returns FL_PUMP_OK, or FL_PUMP_FAIL when out of memory. */
static int send_client_line(fl_relay *r, const char *line, size_t len) {
  fl_mcp_head h;
  if (fl_mcp_head_scan(line, len, &h) && h.method && h.id) {
    enum fl_call_kind kind = call_kind_n(h.method, h.method_len);
    if (kind != FL_CALL_INIT && !method_is(h.method, h.method_len, "logging/setLevel"))
      return send_plain_call(r, &h, kind, line, len);
  }
  json_t *root = fl_json_loadb(line, len, 0, NULL);
  const char *method = json_string_value(json_object_get(root, "method"));
  json_t *id = json_object_get(root, "id");
  char *rewritten = NULL;
  int rc = FL_PUMP_OK;
  if (method && id) {
    enum fl_call_kind kind = call_kind(method);
    int arc = fl_calls_add(r->calls, id, kind);
    if (arc == FL_ENOMEM)
      goto oom;
    if (arc == FL_EFULL)
      warn_untracked(r);
    if (kind == FL_CALL_INIT && add_identity(root, r->ident) == 0) {
      json_decref(r->init_sent);
      r->init_sent = json_incref(json_object_get(root, "params"));
      rewritten = fl_rpc_line(json_incref(root));
      if (!rewritten)
        goto oom;
    } else if (strcmp(method, "logging/setLevel") == 0) {
      const char *lvl =
          json_string_value(json_object_get(json_object_get(root, "params"), "level"));
      if (lvl && strlen(lvl) < sizeof r->level)
        fl_copy(r->level, sizeof r->level, lvl);
    }
  } else if (method && strcmp(method, "notifications/initialized") == 0) {
    r->client_initialized = 1;
  } else if (method && strcmp(method, "notifications/cancelled") == 0) {
    /* fleetd never answers a cancelled call: nothing to fail for it later. */
    fl_calls_forget(r->calls, json_object_get(json_object_get(root, "params"), "requestId"));
  }
  if (rewritten) {
    struct iovec iov = {.iov_base = rewritten, .iov_len = strlen(rewritten)};
    sent(r, fl_link_write_all(r->sock, &iov, 1));
  } else {
    sent(r, write_line(r->sock, line, len));
  }
  goto done;
oom:
  fprintf(stderr, "fleet-mcp: out of memory\n");
  rc = FL_PUMP_FAIL;
done:
  fl_free(rewritten);
  json_decref(root);
  return rc;
}

/* Sends the lines that waited for the link, in order, while it stays up. */
static int flush_held(fl_relay *r) {
  while (r->held && r->link == FL_LINK_UP) {
    held_line *h = r->held;
    r->held = h->next;
    if (!r->held)
      r->held_tail = &r->held;
    r->nheld--;
    r->held_bytes -= h->len;
    int rc = send_client_line(r, h->line, h->len);
    fl_free(h);
    if (rc != FL_PUMP_OK)
      return rc;
  }
  return FL_PUMP_OK;
}

/* The link has been down too long for the lines waiting on it: each request
 * gets its retryable error, notifications are dropped. */
void fl_link_fail_held(fl_relay *r) {
  while (r->held) {
    held_line *h = r->held;
    r->held = h->next;
    json_t *msg = fl_json_loadb(h->line, h->len, 0, NULL);
    answer_offline(r, msg);
    json_decref(msg);
    fl_free(h);
  }
  r->held_tail = &r->held;
  r->nheld = 0;
  r->held_bytes = 0;
}

/* A whole line from the client while the link is down: it waits for the
 * link if the link went down only just now, else it is answered here. */
static int offline_client_line(fl_relay *r, const char *line, size_t len) {
  long long now = fl_mono_ms();
  json_t *msg = fl_json_loadb(line, len, 0, NULL);
  const char *method = json_string_value(json_object_get(msg, "method"));
  int is_ping = method && strcmp(method, "ping") == 0 && json_object_get(msg, "id");
  if (!is_ping && now - r->lost_at < FL_MCP_HOLD_MS && r->nheld < FL_MCP_HOLD_LINES &&
      r->held_bytes + len <= FL_MCP_HOLD_BYTES) {
    held_line *h = fl_malloc(sizeof *h + len + 1);
    if (!h) {
      json_decref(msg);
      fprintf(stderr, "fleet-mcp: out of memory\n");
      return FL_PUMP_FAIL;
    }
    h->next = NULL;
    h->len = len;
    memcpy(h->line, line, len);
    h->line[len] = '\0';
    *r->held_tail = h;
    r->held_tail = &h->next;
    r->nheld++;
    r->held_bytes += len;
  } else {
    if (method && strcmp(method, "notifications/initialized") == 0)
      r->client_initialized = 1;
    answer_offline(r, msg);
  }
  json_decref(msg);
  return FL_PUMP_OK;
}

/* One whole line from the client, up or down. */
int fl_link_client_line(fl_relay *r, const char *line, size_t len) {
  if (r->link == FL_LINK_UP)
    return send_client_line(r, line, len);
  return offline_client_line(r, line, len);
}

/* Sends fleet-mcp's own request (id FL_MCP_OWN_ID + what) to fleetd. A
 * write that fails takes the link down. */
static void send_own(fl_relay *r, const char *what, const char *method, json_t *params) {
  char idbuf[64];
  fl_errf(idbuf, sizeof idbuf, FL_MCP_OWN_ID "%s", what);
  json_t *msg = json_pack("{s:s, s:s, s:s}", "jsonrpc", "2.0", "id", idbuf, "method", method);
  if (msg && params)
    json_object_set(msg, "params", params);
  char *line = msg ? fl_rpc_line(msg) : NULL;
  int wrc = line ? fl_link_write_all(r->sock,
                                     &(struct iovec){.iov_base = line, .iov_len = strlen(line)}, 1)
                 : FL_ENOMEM;
  fl_free(line);
  if (wrc != 0) {
    char why[64];
    fl_errf(why, sizeof why, "writing to fleetd failed: %s", fl_strerror(wrc));
    fl_link_down(r, why, 0);
  }
}

/* Why connecting to path failed (err: -errno), in words for the log and for
 * the calls that fail meanwhile. */
static void describe_connect(fl_relay *r, int err) {
  if (err == -ENOENT || err == -ECONNREFUSED)
    fl_errf(r->why, sizeof r->why, "fleetd is not running (nothing listening on %s)", r->path);
  else if (err == -EAGAIN)
    fl_errf(r->why, sizeof r->why, "the socket %s takes no connections right now", r->path);
  else
    fl_errf(r->why, sizeof r->why, "cannot connect to fleetd at %s: %s", r->path, strerror(-err));
}

/* The link is up (again): say so, and send what waited for it. */
static int link_up(fl_relay *r) {
  long long now = fl_mono_ms();
  r->link = FL_LINK_UP;
  r->retry_ms = FL_MCP_RETRY_FIRST_MS;
  r->why[0] = '\0';
  const char *name = json_string_value(json_object_get(r->ident, "name"));
  const char *gid = json_string_value(json_object_get(r->ident, "gid"));
  if (r->init_params)
    fprintf(stderr,
            "fleet-mcp: fleetd is back: '%s' registered again (gid %s) after %lld ms and %lu "
            "attempt%s\n",
            name ? name : "?", gid ? gid : "?", now - r->lost_at, r->attempts,
            r->attempts == 1 ? "" : "s");
  else
    fprintf(stderr, "fleet-mcp: fleetd is back after %lld ms\n", now - r->lost_at);
  return flush_held(r);
}

/* Connects again; once the client's session was accepted, asks fleetd to
 * take it back before anything else goes through. */
int fl_link_try_connect(fl_relay *r) {
  r->attempts++;
  int fd = fl_link_connect_unix(r->path, 1);
  if (fd < 0) {
    describe_connect(r, fd);
    fl_link_down(r, NULL, 0);
    return FL_PUMP_OK;
  }
  r->sock = fd;
  if (!r->init_params)
    return link_up(r);
  /* The same entity: the gid fleetd gave it, marked as a resume. */
  if (json_object_set_new(r->ident, "resume", json_true()) != 0) {
    fprintf(stderr, "fleet-mcp: out of memory\n");
    return FL_PUMP_FAIL;
  }
  char what[32];
  fl_errf(what, sizeof what, "resume-%lu", r->resumes + 1);
  r->link = FL_LINK_HANDSHAKE;
  r->handshake_until = fl_mono_ms() + FL_MCP_HANDSHAKE_MS;
  send_own(r, what, "initialize", r->init_params);
  return FL_PUMP_OK;
}

/* Reads the gid fleetd gave the session from the result of an initialize
 * (msg, borrowed) into the identity, for registering again. */
static void learn_gid(fl_relay *r, json_t *msg) {
  json_t *meta = json_object_get(json_object_get(msg, "result"), "_meta");
  const char *gid =
      json_string_value(json_object_get(json_object_get(meta, "fleet/identity"), "gid"));
  if (gid && !json_object_get(r->ident, "gid"))
    json_object_set_new(r->ident, "gid", json_string(gid));
}

/* fleetd's answer to the repeated initialize (msg, borrowed). */
static int resume_answer(fl_relay *r, json_t *msg) {
  if (r->link != FL_LINK_HANDSHAKE)
    return FL_PUMP_OK;
  json_t *err = json_object_get(msg, "error");
  if (err || !json_object_get(msg, "result")) {
    const char *m = json_string_value(json_object_get(err, "message"));
    char why[FL_MCP_WHY_MAX];
    fl_errf(why, sizeof why, "fleetd refused to take this session back: %s",
            m ? m : "no reason given");
    fl_link_down(r, why, 1);
    return FL_PUMP_OK;
  }
  learn_gid(r, msg);
  r->resumes++;
  if (r->client_initialized) {
    char *line = fl_rpc_notification("notifications/initialized", NULL);
    int wrc = line ? fl_link_write_all(
                         r->sock, &(struct iovec){.iov_base = line, .iov_len = strlen(line)}, 1)
                   : FL_ENOMEM;
    fl_free(line);
    if (wrc != 0) {
      fl_link_down(r, "writing to fleetd failed", 0);
      return FL_PUMP_OK;
    }
  }
  if (r->level[0]) {
    json_t *p = json_pack("{s:s}", "level", r->level);
    send_own(r, "level", "logging/setLevel", p);
    json_decref(p);
    if (r->link == FL_LINK_DOWN)
      return FL_PUMP_OK;
  }
  return link_up(r);
}

/* One whole line from fleetd: an answer to fleet-mcp's own request is kept
 * here; every other line goes to the client, and an answer settles its
 * call. */
int fl_link_fleetd_line(fl_relay *r, const char *line, size_t len) {
  const char *tok;
  size_t toklen;
  if (fl_calls_line_id(line, len, &tok, &toklen)) {
    if (toklen > sizeof FL_MCP_OWN_ID &&
        memcmp(tok + 1, FL_MCP_OWN_ID, sizeof FL_MCP_OWN_ID - 1) == 0) {
      json_t *msg = fl_json_loadb(line, len, 0, NULL);
      int rc =
          (toklen > 8 && memmem(tok, toklen, "resume-", 7)) ? resume_answer(r, msg) : FL_PUMP_OK;
      json_decref(msg);
      return rc;
    }
    enum fl_call_kind kind;
    if (fl_calls_take(r->calls, tok, toklen, &kind) && kind == FL_CALL_INIT) {
      /* The client's own initialize: if accepted, this is the session to
       * register again should the link be lost. */
      json_t *msg = fl_json_loadb(line, len, 0, NULL);
      if (json_object_get(msg, "result") && r->init_sent) {
        json_decref(r->init_params);
        r->init_params = r->init_sent;
        r->init_sent = NULL;
        learn_gid(r, msg);
      }
      json_decref(msg);
    }
  }
  int wrc = write_line(STDOUT_FILENO, line, len);
  if (wrc != 0) {
    fprintf(stderr, "fleet-mcp: cannot write to the MCP client: %s\n", strerror(-wrc));
    return FL_PUMP_FAIL;
  }
  return FL_PUMP_OK;
}
