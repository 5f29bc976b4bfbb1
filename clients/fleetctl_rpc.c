/* fleetctl_rpc.c — fleetctl's connection to fleetd (see fleetctl_rpc.h).
 *
 * fleetctl speaks the same MCP that agents speak, so what an operator sees
 * is exactly what an agent would get: connect, initialize (as an entity or
 * anonymously), one request, close. initialize names the client
 * FL_MCP_CLIENT_FLEETCTL, so fleetd words the fixes it suggests for a CLI
 * user (mcp/hints.h). Lines that are not the awaited answer
 * (nudges, other ids) are skipped. Every read and write is bounded by the
 * command's deadline; a tool call's deadline is the longest fleetd may take
 * to answer it (from the bounds its initialize gave) plus a margin, so
 * fleetctl never gives up on a call fleetd is still allowed to be working
 * on. */
#include "clients/fleetctl_rpc.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "clients/client_paths.h"
#include "common/alloc.h"
#include "common/error.h"
#include "common/json_read.h"
#include "common/limits.h"
#include "common/paths.h"
#include "common/time.h"
#include "mcp/hints.h"

#define FL_CTL_VERSION "0.1.0"
#define FL_CTL_PROTOCOL "2025-11-25"

/* A tool's error text as fleetctl repeats it: fleetd's messages are one
 * sentence of at most a few hundred bytes; longer text is cut. */
#define FL_CTL_TOOL_ERR_MAX 4096

/* One read(2) worth of bytes; lines longer than this span reads. */
#define FL_CTL_READ_CHUNK 65536

void fl_ctl_init(fl_ctl_conn *c, const char *socket_opt, long timeout_s) {
  memset(c, 0, sizeof *c);
  c->socket_opt = socket_opt;
  c->fd = -1;
  c->next_id = 1;
  c->timeout_s = timeout_s;
  c->deadline = fl_mono_ms() + timeout_s * 1000;
  /* What fleetd applies unless its initialize says otherwise (inject.timeoutS
   * 120 by default, plus the receipt's margin). */
  c->max_wait_s = FL_MAX_WAIT_S;
  c->brief_s = 120 + FL_INJECT_MARGIN_MS / 1000;
  c->stop_s = FL_REMOTE_STOP_WAIT_S;
  fl_linebuf_init(&c->lb, FL_MAX_LINE);
}

/* A new budget of timeout_s seconds from now. */
static void ctl_budget(fl_ctl_conn *c, long timeout_s) {
  c->timeout_s = timeout_s;
  c->deadline = fl_mono_ms() + timeout_s * 1000;
  if (c->fd >= 0) {
    struct timeval tv = {.tv_sec = timeout_s};
    (void)setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  }
}

/* Takes fleetd's bounds from its initialize result, where it gave them. */
static void ctl_take_bounds(fl_ctl_conn *c, json_t *result) {
  json_t *b = json_object_get(json_object_get(result, "_meta"), "fleet/bounds");
  long *at[] = {&c->max_wait_s, &c->brief_s, &c->stop_s};
  const char *key[] = {"maxWaitS", "briefS", "stopS"};
  for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) {
    json_t *v = json_object_get(b, key[i]);
    /* inject.timeoutS is at most a day, so no bound is near two. */
    if (json_is_integer(v) && json_integer_value(v) >= 0 && json_integer_value(v) <= 2 * 86400)
      *at[i] = (long)json_integer_value(v);
  }
}

/* The longest fleetd may take to answer tool name with args: its wait_s
 * (cut as fleetd cuts it; omitted, fleet_spawn waits up to the cap and the
 * others not at all), plus for a send the time a brief may take to be typed,
 * for a stop another host's answer. */
static long ctl_tool_bound_s(const fl_ctl_conn *c, const char *name, json_t *args) {
  int spawn = strcmp(name, "fleet_spawn") == 0;
  json_t *w = json_object_get(args, "wait_s");
  double ws = json_is_number(w) ? json_number_value(w) : (spawn ? (double)c->max_wait_s : 0);
  long wait = !(ws > 0) ? 0 : ws >= (double)c->max_wait_s ? c->max_wait_s : (long)ws + 1;
  if (spawn && !(ws > 0) && json_is_number(w))
    wait = 5; /* wait_s 0: answered once the window is open (for another host, its word) */
  if (strcmp(name, "fleet_send") == 0)
    return c->brief_s + wait;
  if (strcmp(name, "fleet_stop") == 0)
    return c->stop_s;
  return wait;
}

static int ctl_connect(fl_ctl_conn *c) {
  if (c->socket_opt) {
    if (strlen(c->socket_opt) >= sizeof c->path)
      return fl_ctl_fail("--socket path is longer than %d bytes", FL_MAX_PATH - 1);
    memcpy(c->path, c->socket_opt, strlen(c->socket_opt) + 1);
  } else {
    int rc = fl_paths_socket(NULL, c->path, sizeof c->path);
    if (rc != 0)
      return fl_ctl_fail("cannot work out fleetd's socket path (%s); set FLEET_SOCKET or pass "
                         "--socket",
                         fl_strerror(rc));
  }
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  if (strlen(c->path) >= sizeof sa.sun_path)
    return fl_ctl_fail("socket path %s is too long for a Unix socket (max %zu bytes)", c->path,
                       sizeof sa.sun_path - 1);
  memcpy(sa.sun_path, c->path, strlen(c->path) + 1);
  c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (c->fd < 0)
    return fl_ctl_fail("socket: %s", strerror(errno));
  int rc;
  do
    rc = connect(c->fd, (struct sockaddr *)&sa, sizeof sa);
  while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    if (errno == ENOENT || errno == ECONNREFUSED) {
      char start[FL_CLIENT_START_CMD_MAX];
      fl_client_start_cmd(c->path, start, sizeof start);
      return fl_ctl_fail("fleetd is not running (nothing listening on %s); start it with: %s",
                         c->path, start);
    }
    return fl_ctl_fail("cannot connect to fleetd at %s: %s", c->path, strerror(errno));
  }
  /* Bound writes by the same deadline as reads: a wedged fleetd must not
   * hang the CLI. */
  struct timeval tv = {.tv_sec = c->timeout_s};
  (void)setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  return FL_EXIT_OK;
}

static int ctl_timed_out(fl_ctl_conn *c) {
  return fl_ctl_fail(
      "no answer from fleetd within %lds, longer than it may take for this call (socket %s): "
      "fleetd is overloaded or wedged; look at its log (fleetd.log in its state dir, or "
      "journalctl --user -u fleetd) and restart it if it stays so",
      c->timeout_s, c->path);
}

/* Sends msg (stolen) as one line. */
static int ctl_send(fl_ctl_conn *c, json_t *msg) {
  char *line = fl_rpc_line(msg);
  if (!line)
    return fl_ctl_fail("out of memory");
  size_t len = strlen(line), off = 0;
  while (off < len) {
    ssize_t n = write(c->fd, line + off, len - off);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      int err = errno;
      fl_free(line);
      if (err == EAGAIN || err == EWOULDBLOCK)
        return ctl_timed_out(c);
      return fl_ctl_fail("fleetd closed the connection (%s)", strerror(err));
    }
    off += (size_t)n;
  }
  fl_free(line);
  return FL_EXIT_OK;
}

/* Reads until the response to request id arrives; lines that are not it
 * (notifications/message nudges, other ids) are skipped. On success *result
 * is the result (new reference). A JSON-RPC error is printed and fails. */
static int ctl_wait_response(fl_ctl_conn *c, json_int_t id, json_t **result) {
  static char buf[FL_CTL_READ_CHUNK];
  for (;;) {
    char *line;
    size_t len;
    int rc = fl_linebuf_next(&c->lb, &line, &len);
    if (rc < 0)
      return fl_ctl_fail("out of memory");
    if (rc == 1) {
      json_t *msg = fl_json_loadb(line, len, 0, NULL);
      fl_free(line);
      json_t *mid = json_object_get(msg, "id");
      if (!json_is_object(msg) || json_object_get(msg, "method") || !json_is_integer(mid) ||
          json_integer_value(mid) != id) {
        json_decref(msg);
        continue;
      }
      json_t *err = json_object_get(msg, "error");
      if (err) {
        const char *m = json_string_value(json_object_get(err, "message"));
        int st = fl_ctl_report(FL_EXIT_FAIL, (int)json_integer_value(json_object_get(err, "code")),
                               NULL, m ? m : "fleetd returned an error without a message");
        json_decref(msg);
        return st;
      }
      json_t *res = json_object_get(msg, "result");
      if (!res) {
        json_decref(msg);
        return fl_ctl_fail("fleetd sent a response with neither result nor error");
      }
      *result = json_incref(res);
      json_decref(msg);
      return FL_EXIT_OK;
    }

    long long left = c->deadline - fl_mono_ms();
    if (left <= 0)
      return ctl_timed_out(c);
    struct pollfd p = {.fd = c->fd, .events = POLLIN};
    int n = poll(&p, 1, left > INT_MAX ? INT_MAX : (int)left);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return fl_ctl_fail("poll: %s", strerror(errno));
    if (n == 0)
      return ctl_timed_out(c);
    ssize_t got = read(c->fd, buf, sizeof buf);
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0)
      return fl_ctl_fail("reading from fleetd: %s", strerror(errno));
    if (got == 0)
      return fl_ctl_fail("fleetd closed the connection before answering");
    rc = fl_linebuf_feed(&c->lb, buf, (size_t)got);
    if (rc == FL_ETOOBIG)
      return fl_ctl_fail("a reply from fleetd is over %u bytes (FL_MAX_LINE)", FL_MAX_LINE);
    if (rc != 0)
      return fl_ctl_fail("out of memory");
  }
}

int fl_ctl_call(fl_ctl_conn *c, const char *method, json_t *params, json_t **result) {
  json_int_t id = c->next_id++;
  json_t *req = json_pack("{s:s, s:I, s:s}", "jsonrpc", "2.0", "id", id, "method", method);
  if (!req || (params && json_object_set_new(req, "params", params) != 0)) {
    if (!req)
      json_decref(params);
    json_decref(req);
    return fl_ctl_fail("out of memory");
  }
  int st = ctl_send(c, req);
  if (st != FL_EXIT_OK)
    return st;
  return ctl_wait_response(c, id, result);
}

int fl_ctl_open(fl_ctl_conn *c, json_t *identity) {
  int st = ctl_connect(c);
  if (st != FL_EXIT_OK) {
    json_decref(identity);
    return st;
  }
  json_t *params =
      json_pack("{s:s, s:{}, s:{s:s, s:s}}", "protocolVersion", FL_CTL_PROTOCOL, "capabilities",
                "clientInfo", "name", FL_MCP_CLIENT_FLEETCTL, "version", FL_CTL_VERSION);
  if (params && identity) {
    json_t *meta = json_pack("{s:o}", "fleet/identity", identity); /* steals identity */
    identity = NULL;
    if (!meta || json_object_set_new(params, "_meta", meta) != 0) {
      json_decref(params);
      params = NULL;
    }
  }
  json_decref(identity);
  if (!params)
    return fl_ctl_fail("out of memory");
  json_t *result = NULL;
  st = fl_ctl_call(c, "initialize", params, &result);
  if (st == FL_EXIT_OK)
    ctl_take_bounds(c, result);
  json_decref(result);
  if (st != FL_EXIT_OK)
    return st;
  json_t *note = json_pack("{s:s, s:s}", "jsonrpc", "2.0", "method", "notifications/initialized");
  if (!note)
    return fl_ctl_fail("out of memory");
  return ctl_send(c, note);
}

int fl_ctl_tool(fl_ctl_conn *c, const char *name, json_t *args, json_t **sc) {
  ctl_budget(c, ctl_tool_bound_s(c, name, args) + FL_CTL_MARGIN_S);
  json_t *params = json_pack("{s:s, s:o}", "name", name, "arguments", args);
  if (!params)
    return fl_ctl_fail("out of memory");
  json_t *res = NULL;
  int st = fl_ctl_call(c, "tools/call", params, &res);
  if (st != FL_EXIT_OK)
    return st;

  json_t *content = json_object_get(res, "content");
  if (json_is_true(json_object_get(res, "isError"))) {
    char msg[FL_CTL_TOOL_ERR_MAX] = "";
    size_t i, len = 0;
    json_t *item;
    json_array_foreach(content, i, item) {
      const char *t = json_string_value(json_object_get(item, "text"));
      if (t && len < sizeof msg)
        len += (size_t)snprintf(msg + len, sizeof msg - len, "%s%s", len ? "\n" : "", t);
    }
    json_decref(res);
    return fl_ctl_report(FL_EXIT_FAIL, 0, NULL, len ? msg : "the tool failed without saying why");
  }

  json_t *s = json_object_get(res, "structuredContent");
  if (s) {
    *sc = json_incref(s);
  } else {
    /* Every fleet tool returns the same JSON as text too; use it if the
     * structured copy is missing. */
    const char *t = json_string_value(json_object_get(json_array_get(content, 0), "text"));
    *sc = t ? fl_json_loadb(t, strlen(t), 0, NULL) : NULL;
  }
  json_decref(res);
  if (!*sc)
    return fl_ctl_fail("tool %s returned no structured result", name);
  return FL_EXIT_OK;
}

void fl_ctl_close(fl_ctl_conn *c) {
  if (!c)
    return;
  if (c->fd >= 0)
    close(c->fd);
  c->fd = -1;
  fl_linebuf_free(&c->lb);
}
