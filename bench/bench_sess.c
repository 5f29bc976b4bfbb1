/* bench_sess.c — fleet_bench's MCP sessions: one connection to fleetd's Unix
 * socket (or one fleet-mcp process on stdio pipes, with -m), newline-delimited
 * JSON-RPC read and written on it, tools/call requests and their results, and
 * the content the measurements send. Every failure ends the run (fb_die). */
#include "bench_sess.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define FB_PROG "fleet_bench"
#include "bench_util.h"
#include "common/json_read.h"

/* A response longer than this is a broken gateway, not a big poll: 100
 * messages of 1 KiB come to ~250 KiB (content appears twice, as text and as
 * structuredContent). fleetd's own line cap is 4 MiB. */
#define MAX_LINE (8u * 1024u * 1024u)
/* How long any single read waits before the run is declared stuck. */
#define READ_TIMEOUT_MS 30000

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
    json_t *j = fl_json_loadb(line, strlen(line), 0, &e);
    if (!j)
      fb_die("%s: fleetd sent a line that is not JSON: %s", s->name, e.text);
    if (json_object_get(j, "id"))
      return j;
    json_decref(j);
  }
}

json_t *sess_recv(struct sess *s) { return sess_recv_at(s, NULL); }

/* The structuredContent of a tools/call response (borrowed from resp); dies
 * on a JSON-RPC error or an isError result, naming what. */
json_t *tool_result(struct sess *s, json_t *resp, const char *what) {
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
const char *tool_error(json_t *resp) {
  json_t *res = json_object_get(resp, "result");
  if (!json_is_true(json_object_get(res, "isError")))
    return NULL;
  json_t *c0 = json_array_get(json_object_get(res, "content"), 0);
  const char *t = json_string_value(json_object_get(c0, "text"));
  return t ? t : "(no message)";
}

/* Writes a tools/call request and returns its id. args is a JSON object text. */
long sess_call_start(struct sess *s, const char *tool, const char *args, char *scratch,
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
json_t *sess_call_at(struct sess *s, const char *tool, const char *args, uint64_t *read_ns) {
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

json_t *sess_call(struct sess *s, const char *tool, const char *args) {
  return sess_call_at(s, tool, args, NULL);
}

const char *g_fleet_mcp;

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
void sess_open(struct sess *s, const char *sock, const char *name) {
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

void sess_close(struct sess *s) {
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
void wait_online(struct sess *s, const char *name) {
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
char *make_content(size_t size, size_t seq) {
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
