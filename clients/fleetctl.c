/* fleetctl.c — fleet's admin CLI.
 *
 * fleetctl speaks the same MCP that agents speak: it connects to fleetd's
 * Unix socket, does the initialize handshake, runs one request and exits. So
 * what an operator sees is exactly what an agent would get. status and roster
 * run as an anonymous session (no roster entry); send and poll register as an
 * entity (--as NAME, else $FLEET_NAME, else "operator") for the life of the
 * command, since only entities can send and receive. mcp-config needs no
 * fleetd: it prints a client config that points at the fleet-mcp next to this
 * binary.
 *
 * Output is a human table or key/value lines by default and the raw JSON
 * result with --json. Exit status: 0 ok, 1 failure (fleetd said no, a tool
 * returned isError, fleetd not running or not answering), 2 usage. */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/limits.h"
#include "common/paths.h"
#include "common/time.h"
#include "mcp/jsonrpc.h"

#define FL_CTL_VERSION "0.1.0"
#define FL_CTL_PROTOCOL "2025-11-25"

/* fleetd answers everything but a waiting send/poll at once; this margin on
 * top of the wait covers a busy daemon and a slow store commit. */
#define FL_CTL_MARGIN_S 10

#define FL_CTL_READ_CHUNK 65536

enum { FL_EXIT_OK = 0, FL_EXIT_FAIL = 1, FL_EXIT_USAGE = 2 };

static void usage(FILE *f) {
  fprintf(f,
          "usage: fleetctl [--socket PATH] [--json] [--as NAME] <command> [args]\n"
          "\n"
          "commands:\n"
          "  status                        fleetd's state and counters\n"
          "  roster                        every entity fleetd knows: name, role, host,\n"
          "                                status, held messages, groups, gid\n"
          "  send TO CONTENT [--wait S]    send CONTENT to TO (a name or gid); with --wait,\n"
          "                                wait up to S seconds (max %d) for the reply\n"
          "  poll [--wait S] [--max N] [--from TO]\n"
          "                                fetch messages held for you (max N, up to %d),\n"
          "                                waiting up to S seconds for the first one\n"
          "  mcp-config claude|opencode    print an MCP client config for fleet-mcp\n"
          "  identity                      this gateway's host id and public key\n"
          "  peer add HOST PUBKEY [URL]    pin HOST's public key (refused if another key\n"
          "                                is pinned for HOST: remove that pin first)\n"
          "  peer list                     the pinned peers\n"
          "  peer remove HOST              drop HOST's pin\n"
          "  trace ID                      what this fleetd logged for trace ID (recent lines)\n"
          "  help                          print this text\n"
          "\n"
          "options:\n"
          "  --socket PATH   fleetd's socket (default: $FLEET_SOCKET, else\n"
          "                  $XDG_RUNTIME_DIR/fleet/fleetd.sock, else <state dir>/fleetd.sock)\n"
          "  --json          print the JSON result instead of text (for scripts)\n"
          "  --as NAME       the entity send/poll act as (default: $FLEET_NAME, else\n"
          "                  \"operator\"); for mcp-config, the agent name (default \"lead\")\n"
          "  --              end of options (for CONTENT that starts with '-')\n"
          "\n"
          "exit status: 0 ok, 1 failure (fleetd error, tool error, fleetd not running),\n"
          "2 usage error.\n",
          FL_MAX_WAIT_S, FL_MAX_POLL);
}

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("fleetctl: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return FL_EXIT_FAIL;
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("fleetctl: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputs("\n\n", stderr);
  va_end(ap);
  usage(stderr);
  return FL_EXIT_USAGE;
}

static long long now_ms(void) { return fl_mono_ms(); }

/* ---- options ---------------------------------------------------------- */

typedef struct ctl_opts {
  const char *socket; /* --socket, or NULL */
  int json;
  const char *as;
  long wait_s; /* -1 = not given */
  long max;    /* -1 = not given */
  const char *from;
  const char *cmd;
  const char *args[4];
  int nargs;
  int help;
} ctl_opts;

/* Parses a whole decimal in [lo, hi]. Returns 0 or -1. */
static int parse_long(const char *s, long lo, long hi, long *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi)
    return -1;
  *out = v;
  return 0;
}

/* Matches "--name VALUE" or "--name=VALUE". Returns 1 with *val set, 0 when
 * arg is not this option, -1 when the value is missing. */
static int opt_value(const char *name, int argc, char **argv, int *i, const char **val) {
  size_t n = strlen(name);
  const char *a = argv[*i];
  if (strncmp(a, name, n) != 0)
    return 0;
  if (a[n] == '=') {
    *val = a + n + 1;
    return 1;
  }
  if (a[n] != '\0')
    return 0;
  if (*i + 1 >= argc)
    return -1;
  *val = argv[++*i];
  return 1;
}

/* Options may come before or after the command. Returns 0 or an exit code. */
static int parse_args(int argc, char **argv, ctl_opts *o) {
  int end_opts = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!end_opts && a[0] == '-' && a[1] != '\0') {
      const char *v = NULL;
      int m;
      if (strcmp(a, "--") == 0) {
        end_opts = 1;
      } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
        o->help = 1;
      } else if (strcmp(a, "--json") == 0) {
        o->json = 1;
      } else if ((m = opt_value("--socket", argc, argv, &i, &v)) != 0) {
        if (m < 0 || !*v)
          return usage_error("--socket needs a PATH");
        o->socket = v;
      } else if ((m = opt_value("--as", argc, argv, &i, &v)) != 0) {
        if (m < 0 || !*v)
          return usage_error("--as needs a NAME");
        o->as = v;
      } else if ((m = opt_value("--wait", argc, argv, &i, &v)) != 0) {
        if (m < 0 || parse_long(v, 0, FL_MAX_WAIT_S, &o->wait_s) != 0)
          return usage_error("--wait needs whole SECONDS from 0 to %d", FL_MAX_WAIT_S);
      } else if ((m = opt_value("--max", argc, argv, &i, &v)) != 0) {
        if (m < 0 || parse_long(v, 1, FL_MAX_POLL, &o->max) != 0)
          return usage_error("--max needs a count from 1 to %d", FL_MAX_POLL);
      } else if ((m = opt_value("--from", argc, argv, &i, &v)) != 0) {
        if (m < 0 || !*v)
          return usage_error("--from needs a name or gid");
        o->from = v;
      } else {
        return usage_error("unknown option '%s'", a);
      }
    } else if (!o->cmd) {
      o->cmd = a;
    } else if (o->nargs < 4) {
      o->args[o->nargs++] = a;
    } else {
      return usage_error("too many arguments for '%s' (quote CONTENT that has spaces)", o->cmd);
    }
  }
  return 0;
}

/* ---- the connection --------------------------------------------------- */

typedef struct ctl {
  ctl_opts *o;
  char path[FL_MAX_PATH];
  int fd;
  fl_linebuf lb;
  long long deadline; /* monotonic ms */
  long timeout_s;     /* for the message */
  json_int_t next_id;
} ctl;

static int ctl_connect(ctl *c) {
  if (c->o->socket) {
    if (strlen(c->o->socket) >= sizeof c->path)
      return fail("--socket path is longer than %d bytes", FL_MAX_PATH - 1);
    memcpy(c->path, c->o->socket, strlen(c->o->socket) + 1);
  } else {
    int rc = fl_paths_socket(NULL, c->path, sizeof c->path);
    if (rc != 0)
      return fail("cannot work out fleetd's socket path (%s); set FLEET_SOCKET or pass --socket",
                  fl_strerror(rc));
  }
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  if (strlen(c->path) >= sizeof sa.sun_path)
    return fail("socket path %s is too long for a Unix socket (max %zu bytes)", c->path,
                sizeof sa.sun_path - 1);
  memcpy(sa.sun_path, c->path, strlen(c->path) + 1);
  c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (c->fd < 0)
    return fail("socket: %s", strerror(errno));
  int rc;
  do
    rc = connect(c->fd, (struct sockaddr *)&sa, sizeof sa);
  while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    if (errno == ENOENT || errno == ECONNREFUSED)
      return fail("fleetd is not running (nothing listening on %s); start it with: fleetd &",
                  c->path);
    return fail("cannot connect to fleetd at %s: %s", c->path, strerror(errno));
  }
  /* Bound writes by the same deadline as reads: a wedged fleetd must not
   * hang the CLI. */
  struct timeval tv = {.tv_sec = c->timeout_s};
  (void)setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  return FL_EXIT_OK;
}

static int ctl_timed_out(ctl *c) {
  return fail("no answer from fleetd within %lds (socket %s); is it stuck? check its log",
              c->timeout_s, c->path);
}

/* Sends msg (stolen) as one line. */
static int ctl_send(ctl *c, json_t *msg) {
  char *line = fl_rpc_line(msg);
  if (!line)
    return fail("out of memory");
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
      return fail("fleetd closed the connection (%s)", strerror(err));
    }
    off += (size_t)n;
  }
  fl_free(line);
  return FL_EXIT_OK;
}

/* Reads until the response to request id arrives; lines that are not it
 * (notifications/message nudges, other ids) are skipped. On success *result
 * is the result (new reference). A JSON-RPC error is printed and fails. */
static int ctl_wait_response(ctl *c, json_int_t id, json_t **result) {
  static char buf[FL_CTL_READ_CHUNK];
  for (;;) {
    char *line;
    size_t len;
    int rc = fl_linebuf_next(&c->lb, &line, &len);
    if (rc < 0)
      return fail("out of memory");
    if (rc == 1) {
      json_t *msg = json_loadb(line, len, 0, NULL);
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
        int st = fail("%s", m ? m : "fleetd returned an error without a message");
        json_decref(msg);
        return st;
      }
      json_t *res = json_object_get(msg, "result");
      if (!res) {
        json_decref(msg);
        return fail("fleetd sent a response with neither result nor error");
      }
      *result = json_incref(res);
      json_decref(msg);
      return FL_EXIT_OK;
    }

    long long left = c->deadline - now_ms();
    if (left <= 0)
      return ctl_timed_out(c);
    struct pollfd p = {.fd = c->fd, .events = POLLIN};
    int n = poll(&p, 1, left > INT_MAX ? INT_MAX : (int)left);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return fail("poll: %s", strerror(errno));
    if (n == 0)
      return ctl_timed_out(c);
    ssize_t got = read(c->fd, buf, sizeof buf);
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0)
      return fail("reading from fleetd: %s", strerror(errno));
    if (got == 0)
      return fail("fleetd closed the connection before answering");
    rc = fl_linebuf_feed(&c->lb, buf, (size_t)got);
    if (rc == FL_ETOOBIG)
      return fail("a reply from fleetd is over %u bytes (FL_MAX_LINE)", FL_MAX_LINE);
    if (rc != 0)
      return fail("out of memory");
  }
}

/* One request/response. params is stolen (may be NULL). */
static int ctl_call(ctl *c, const char *method, json_t *params, json_t **result) {
  json_int_t id = c->next_id++;
  json_t *req = json_pack("{s:s, s:I, s:s}", "jsonrpc", "2.0", "id", id, "method", method);
  if (!req || (params && json_object_set_new(req, "params", params) != 0)) {
    if (!req)
      json_decref(params);
    json_decref(req);
    return fail("out of memory");
  }
  int st = ctl_send(c, req);
  if (st != FL_EXIT_OK)
    return st;
  return ctl_wait_response(c, id, result);
}

/* Connects and does the MCP handshake. identity (stolen, may be NULL) goes
 * into params._meta["fleet/identity"]. */
static int ctl_open(ctl *c, json_t *identity) {
  int st = ctl_connect(c);
  if (st != FL_EXIT_OK) {
    json_decref(identity);
    return st;
  }
  json_t *params = json_pack("{s:s, s:{}, s:{s:s, s:s}}", "protocolVersion", FL_CTL_PROTOCOL,
                             "capabilities", "clientInfo", "name", "fleetctl", "version",
                             FL_CTL_VERSION);
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
    return fail("out of memory");
  json_t *result = NULL;
  st = ctl_call(c, "initialize", params, &result);
  json_decref(result);
  if (st != FL_EXIT_OK)
    return st;
  json_t *note = json_pack("{s:s, s:s}", "jsonrpc", "2.0", "method", "notifications/initialized");
  if (!note)
    return fail("out of memory");
  return ctl_send(c, note);
}

/* tools/call name with args (stolen). On success *sc is the tool's
 * structuredContent (new reference). isError prints the tool's text. */
static int ctl_tool(ctl *c, const char *name, json_t *args, json_t **sc) {
  json_t *params = json_pack("{s:s, s:o}", "name", name, "arguments", args);
  if (!params)
    return fail("out of memory");
  json_t *res = NULL;
  int st = ctl_call(c, "tools/call", params, &res);
  if (st != FL_EXIT_OK)
    return st;

  json_t *content = json_object_get(res, "content");
  if (json_is_true(json_object_get(res, "isError"))) {
    fputs("fleetctl: ", stderr);
    size_t i;
    json_t *item;
    int any = 0;
    json_array_foreach(content, i, item) {
      const char *t = json_string_value(json_object_get(item, "text"));
      if (t) {
        fprintf(stderr, "%s%s", any ? "\n" : "", t);
        any = 1;
      }
    }
    fputs(any ? "\n" : "the tool failed without saying why\n", stderr);
    json_decref(res);
    return FL_EXIT_FAIL;
  }

  json_t *s = json_object_get(res, "structuredContent");
  if (s) {
    *sc = json_incref(s);
  } else {
    /* Every fleet tool returns the same JSON as text too; use it if the
     * structured copy is missing. */
    const char *t = json_string_value(json_object_get(json_array_get(content, 0), "text"));
    *sc = t ? json_loads(t, 0, NULL) : NULL;
  }
  json_decref(res);
  if (!*sc)
    return fail("tool %s returned no structured result", name);
  return FL_EXIT_OK;
}

static void ctl_close(ctl *c) {
  if (c->fd >= 0)
    close(c->fd);
  c->fd = -1;
  fl_linebuf_free(&c->lb);
}

/* ---- output ----------------------------------------------------------- */

static int print_json(json_t *v) {
  char *s = json_dumps(v, JSON_INDENT(2) | JSON_ENCODE_ANY);
  if (!s)
    return fail("out of memory");
  puts(s);
  fl_free(s);
  return FL_EXIT_OK;
}

/* A scalar as text into buf; objects and arrays as compact JSON. Returns
 * buf, or a new string in *heap (caller frees) when it does not fit. */
static const char *scalar_text(json_t *v, char *buf, size_t n, char **heap) {
  *heap = NULL;
  switch (json_typeof(v)) {
  case JSON_STRING:
    return json_string_value(v);
  case JSON_INTEGER:
    snprintf(buf, n, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    return buf;
  case JSON_REAL:
    snprintf(buf, n, "%g", json_real_value(v));
    return buf;
  case JSON_TRUE:
    return "true";
  case JSON_FALSE:
    return "false";
  case JSON_NULL:
    return "-";
  default:
    *heap = json_dumps(v, JSON_COMPACT);
    return *heap ? *heap : "?";
  }
}

/* "key: value" lines with the values aligned; an object value becomes an
 * indented block of its own. */
static void print_kv(json_t *obj, int indent) {
  size_t w = 0;
  const char *key;
  json_t *v;
  json_object_foreach(obj, key, v) {
    if (strlen(key) > w)
      w = strlen(key);
  }
  json_object_foreach(obj, key, v) {
    if (json_is_object(v) && json_object_size(v) > 0) {
      printf("%*s%s:\n", indent, "", key);
      print_kv(v, indent + 2);
      continue;
    }
    char num[64], *heap;
    const char *text = scalar_text(v, num, sizeof num, &heap);
    printf("%*s%s:%*s %s\n", indent, "", key, (int)(w - strlen(key)), "", text);
    fl_free(heap);
  }
}

/* The first string among obj[keys...]; NULL when none is. */
static const char *str_of(json_t *obj, const char *k1, const char *k2) {
  const char *s = json_string_value(json_object_get(obj, k1));
  if (!s && k2)
    s = json_string_value(json_object_get(obj, k2));
  return s;
}

/* A party named in a result: a plain string, or an object with name/gid. */
static void party(json_t *v, const char **name, const char **gid) {
  if (json_is_string(v)) {
    *name = json_string_value(v);
  } else if (json_is_object(v)) {
    *name = str_of(v, "name", NULL);
    *gid = str_of(v, "gid", NULL);
  }
}

/* ---- commands --------------------------------------------------------- */

/* A request whose result is printed as key: value lines (or JSON). */
static int cmd_simple(ctl *c, const char *method, json_t *params) {
  json_t *res = NULL;
  int st = ctl_open(c, NULL);
  if (st == FL_EXIT_OK)
    st = ctl_call(c, method, params, &res);
  else
    json_decref(params);
  if (st == FL_EXIT_OK) {
    if (c->o->json)
      st = print_json(res);
    else if (json_is_object(res))
      print_kv(res, 0);
  }
  json_decref(res);
  return st;
}

static int cmd_peer_list(ctl *c) {
  json_t *res = NULL;
  int st = ctl_open(c, NULL);
  if (st == FL_EXIT_OK)
    st = ctl_call(c, "fleet/peers", NULL, &res);
  if (st == FL_EXIT_OK) {
    json_t *peers = json_object_get(res, "peers"), *p;
    size_t i;
    if (c->o->json)
      st = print_json(res);
    else if (json_array_size(peers) == 0)
      printf("no pinned peers\n");
    else
      json_array_foreach(peers, i, p) printf("%-20s %s  %s  pinned %s\n",
                                             str_of(p, "host", "-"), str_of(p, "publicKey", "-"),
                                             str_of(p, "url", "-"), str_of(p, "pinnedAt", "-"));
  }
  json_decref(res);
  return st;
}

static int cmd_trace(ctl *c) {
  json_t *res = NULL;
  int st = ctl_open(c, NULL);
  if (st == FL_EXIT_OK)
    st = ctl_call(c, "fleet/trace", json_pack("{s:s}", "traceId", c->o->args[0]), &res);
  if (st == FL_EXIT_OK) {
    json_t *lines = json_object_get(res, "lines"), *l;
    size_t i;
    if (c->o->json)
      st = print_json(res);
    else if (json_array_size(lines) == 0)
      st = fail("nothing logged for trace %s in fleetd's recent log", c->o->args[0]);
    else
      json_array_foreach(lines, i, l) printf("%s\n", json_string_value(l));
  }
  json_decref(res);
  return st;
}

enum { COL_NAME, COL_ROLE, COL_HOST, COL_STATUS, COL_HELD, COL_GROUPS, COL_GID, NCOLS };

static int cmd_roster(ctl *c) {
  static const char *const heads[NCOLS] = {"NAME", "ROLE", "HOST", "STATUS",
                                           "HELD", "GROUPS", "GID"};
  json_t *sc = NULL, *rows = NULL;
  int st = ctl_open(c, NULL);
  if (st == FL_EXIT_OK)
    st = ctl_tool(c, "fleet_list", json_object(), &sc);
  if (st != FL_EXIT_OK)
    goto done;
  if (c->o->json) {
    st = print_json(sc);
    goto done;
  }
  json_t *ents = json_object_get(sc, "entities");
  if (json_array_size(ents) == 0) {
    puts("no entities");
    goto done;
  }
  /* Every cell as a string first, so the widths can be computed. */
  rows = json_array();
  size_t w[NCOLS];
  for (int k = 0; k < NCOLS; k++)
    w[k] = strlen(heads[k]);
  size_t i;
  json_t *e;
  json_array_foreach(ents, i, e) {
    char held[32] = "-", groups[1024] = "";
    json_t *h = json_object_get(e, "held");
    if (json_is_integer(h))
      snprintf(held, sizeof held, "%" JSON_INTEGER_FORMAT, json_integer_value(h));
    size_t gi, gl = 0;
    json_t *g;
    json_array_foreach(json_object_get(e, "groups"), gi, g) {
      const char *gs = json_string_value(g);
      if (gs && gl < sizeof groups)
        gl += (size_t)snprintf(groups + gl, sizeof groups - gl, "%s%s", gl ? "," : "", gs);
    }
    const char *cells[NCOLS] = {
        str_of(e, "name", NULL), str_of(e, "role", NULL), str_of(e, "host", NULL),
        str_of(e, "status", NULL), held, groups, str_of(e, "gid", NULL)};
    json_t *row = json_array();
    for (int k = 0; k < NCOLS; k++) {
      const char *cell = cells[k] && *cells[k] ? cells[k] : "-";
      json_t *js = json_string(cell);
      json_array_append_new(row, js ? js : json_string("?"));
      if (strlen(cell) > w[k])
        w[k] = strlen(cell);
    }
    json_array_append_new(rows, row);
  }
  if (json_array_size(rows) != json_array_size(ents)) {
    st = fail("out of memory");
    goto done;
  }
  for (int k = 0; k < NCOLS - 1; k++)
    printf("%-*s  ", (int)w[k], heads[k]);
  printf("%s\n", heads[NCOLS - 1]);
  json_t *row;
  json_array_foreach(rows, i, row) {
    for (int k = 0; k < NCOLS; k++) {
      const char *cell = json_string_value(json_array_get(row, (size_t)k));
      if (k < NCOLS - 1)
        printf("%-*s  ", (int)w[k], cell ? cell : "?");
      else
        printf("%s\n", cell ? cell : "?");
    }
  }
done:
  json_decref(rows);
  json_decref(sc);
  return st;
}

/* The identity send and poll act as: only entities can send and receive. */
static json_t *operator_identity(const ctl_opts *o) {
  const char *name = o->as;
  if (!name) {
    name = getenv("FLEET_NAME");
    if (!name || !*name)
      name = "operator";
  }
  /* Name only: an existing entity keeps its role and groups. */
  return json_pack("{s:s}", "name", name);
}

static int cmd_send(ctl *c) {
  const ctl_opts *o = c->o;
  if (strlen(o->args[1]) > FL_MAX_CONTENT)
    return fail("CONTENT is %zu bytes; the limit is %u (FL_MAX_CONTENT)", strlen(o->args[1]),
                FL_MAX_CONTENT);
  json_t *sc = NULL;
  json_t *ident = operator_identity(o);
  if (!ident)
    return fail("out of memory");
  int st = ctl_open(c, ident);
  if (st != FL_EXIT_OK)
    return st;
  json_t *args = json_pack("{s:s, s:s}", "to", o->args[0], "content", o->args[1]);
  if (!args)
    return fail("TO and CONTENT must be UTF-8 text");
  if (o->wait_s >= 0 && json_object_set_new(args, "wait_s", json_integer(o->wait_s)) != 0) {
    json_decref(args);
    return fail("out of memory");
  }
  st = ctl_tool(c, "fleet_send", args, &sc);
  if (st != FL_EXIT_OK)
    return st;
  if (o->json) {
    st = print_json(sc);
    json_decref(sc);
    return st;
  }

  const char *name = NULL, *gid = NULL;
  party(json_object_get(sc, "to"), &name, &gid);
  if (!name)
    name = str_of(sc, "toName", NULL);
  if (!gid)
    gid = str_of(sc, "toGid", "gid");
  const char *msg_id = str_of(sc, "msgId", NULL);
  printf("sent msgId=%s to %s", msg_id ? msg_id : "?", name ? name : o->args[0]);
  if (gid && (!name || strcmp(gid, name) != 0))
    printf(" (%s)", gid);
  putchar('\n');

  const char *status = str_of(sc, "status", NULL);
  if (status && strcmp(status, "replied") == 0) {
    json_t *reply = json_object_get(sc, "reply");
    const char *text = json_is_string(reply) ? json_string_value(reply)
                                             : str_of(reply, "content", NULL);
    if (text)
      printf("%s%s", text, *text && text[strlen(text) - 1] == '\n' ? "" : "\n");
  } else if (status && strcmp(status, "pending") == 0) {
    if (o->wait_s >= 0)
      printf("no reply within %lds; it will be held for `fleetctl poll`\n", o->wait_s);
    else
      printf("no reply yet; it will be held for `fleetctl poll`\n");
  }
  json_decref(sc);
  return FL_EXIT_OK;
}

static int cmd_poll(ctl *c) {
  const ctl_opts *o = c->o;
  json_t *sc = NULL;
  json_t *ident = operator_identity(o);
  if (!ident)
    return fail("out of memory");
  int st = ctl_open(c, ident);
  if (st != FL_EXIT_OK)
    return st;
  json_t *args = json_object();
  int rc = args ? 0 : -1;
  if (args && o->wait_s >= 0)
    rc |= json_object_set_new(args, "wait_s", json_integer(o->wait_s));
  if (args && o->max >= 0)
    rc |= json_object_set_new(args, "max", json_integer(o->max));
  if (args && o->from)
    rc |= json_object_set_new(args, "from", json_string(o->from));
  if (rc != 0) {
    json_decref(args);
    return fail("out of memory (or --from is not UTF-8)");
  }
  st = ctl_tool(c, "fleet_poll", args, &sc);
  if (st != FL_EXIT_OK)
    return st;
  if (o->json) {
    st = print_json(sc);
    json_decref(sc);
    return st;
  }
  json_t *msgs = json_object_get(sc, "messages");
  if (json_array_size(msgs) == 0)
    puts("no messages");
  size_t i;
  json_t *m;
  json_array_foreach(msgs, i, m) {
    const char *name = str_of(m, "fromName", NULL), *gid = NULL;
    if (!name)
      party(json_object_get(m, "from"), &name, &gid);
    char tsbuf[64], *heap = NULL;
    json_t *ts = json_object_get(m, "ts");
    const char *tstext = ts ? scalar_text(ts, tsbuf, sizeof tsbuf, &heap) : "-";
    const char *kind = str_of(m, "kind", NULL), *msg_id = str_of(m, "msgId", NULL);
    const char *content = str_of(m, "content", NULL);
    printf("[%s] from %s (%s, %s): %s\n", tstext, name ? name : (gid ? gid : "?"),
           kind ? kind : "?", msg_id ? msg_id : "?", content ? content : "");
    fl_free(heap);
  }
  json_decref(sc);
  return FL_EXIT_OK;
}

/* The absolute path of the fleet-mcp to put in a config: the one next to
 * this binary, else the first on PATH, else the bare name (with a warning). */
static void find_fleet_mcp(char *out, size_t n) {
  char self[PATH_MAX];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len > 0) {
    self[len] = '\0';
    char *slash = strrchr(self, '/');
    if (slash) {
      *slash = '\0';
      int w = snprintf(out, n, "%s/fleet-mcp", self);
      if (w > 0 && (size_t)w < n && access(out, X_OK) == 0)
        return;
    }
  }
  const char *path = getenv("PATH");
  while (path && *path) {
    size_t dl = strcspn(path, ":");
    char cwd[PATH_MAX];
    const char *dir = path;
    if (dl == 0 && getcwd(cwd, sizeof cwd)) { /* an empty PATH entry is "." */
      dir = cwd;
      dl = strlen(cwd);
    }
    if (dl > 0 && dir[0] == '/') {
      int w = snprintf(out, n, "%.*s/fleet-mcp", (int)dl, dir);
      if (w > 0 && (size_t)w < n && access(out, X_OK) == 0)
        return;
    }
    path += strcspn(path, ":");
    if (*path == ':')
      path++;
  }
  fprintf(stderr, "fleetctl: warning: fleet-mcp is not next to fleetctl nor on PATH; the config "
                  "names it bare, so it must be on the MCP client's PATH\n");
  snprintf(out, n, "fleet-mcp");
}

/* Prints s inside single quotes for a POSIX shell. */
static void fputs_shell_quoted(const char *s, FILE *f) {
  fputc('\'', f);
  for (; *s; s++) {
    if (*s == '\'')
      fputs("'\\''", f);
    else
      fputc(*s, f);
  }
  fputc('\'', f);
}

static int cmd_mcp_config(ctl_opts *o) {
  const char *kind = o->args[0];
  int claude = strcmp(kind, "claude") == 0;
  if (!claude && strcmp(kind, "opencode") != 0)
    return usage_error("mcp-config takes 'claude' or 'opencode', not '%s'", kind);
  char exe[PATH_MAX];
  find_fleet_mcp(exe, sizeof exe);

  /* The client starts fleet-mcp in its own working directory, so a relative
   * --socket would point somewhere else there. */
  char sock[PATH_MAX + FL_MAX_PATH];
  const char *sockpath = o->socket;
  if (sockpath && sockpath[0] != '/') {
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof cwd)) {
      snprintf(sock, sizeof sock, "%s/%s", cwd, sockpath);
      sockpath = sock;
    }
  }

  json_t *envv = json_pack("{s:s, s:s}", "FLEET_NAME", o->as ? o->as : "lead", "FLEET_ROLE",
                           "lead");
  if (envv && sockpath &&
      json_object_set_new(envv, "FLEET_SOCKET", json_string(sockpath)) != 0) {
    json_decref(envv);
    envv = NULL;
  }
  if (!envv)
    return fail("out of memory (or a name or path that is not UTF-8)");

  json_t *entry, *doc;
  if (claude) {
    entry = json_pack("{s:s, s:s, s:[], s:o}", "type", "stdio", "command", exe, "args", "env",
                      envv);
    doc = entry ? json_pack("{s:{s:O}}", "mcpServers", "fleet", entry) : NULL;
  } else {
    entry = json_pack("{s:s, s:[s], s:b, s:o}", "type", "local", "command", exe, "enabled", 1,
                      "environment", envv);
    doc = entry ? json_pack("{s:s, s:{s:O}}", "$schema", "https://opencode.ai/config.json", "mcp",
                            "fleet", entry)
                : NULL;
  }
  int st = FL_EXIT_FAIL;
  char *text = doc ? json_dumps(doc, JSON_INDENT(2)) : NULL;
  char *compact = entry ? json_dumps(entry, JSON_COMPACT) : NULL;
  if (!text || !compact) {
    fail("out of memory");
    goto done;
  }
  puts(text);
  if (claude) {
    fputs("fleetctl: paste this into .mcp.json at your project root, or run: "
          "claude mcp add-json fleet ",
          stderr);
    fputs_shell_quoted(compact, stderr);
    fputc('\n', stderr);
  } else {
    fputs("fleetctl: paste this into opencode.json at your project root, or merge its \"mcp\" "
          "block into ~/.config/opencode/opencode.json\n",
          stderr);
  }
  st = FL_EXIT_OK;
done:
  fl_free(text);
  fl_free(compact);
  json_decref(doc);
  json_decref(entry);
  return st;
}

int main(int argc, char **argv) {
  ctl_opts o = {.wait_s = -1, .max = -1};
  int st = parse_args(argc, argv, &o);
  if (st != 0)
    return st;
  if (o.help || !o.cmd || strcmp(o.cmd, "help") == 0) {
    if (!o.help && !o.cmd) {
      usage(stderr);
      return FL_EXIT_USAGE;
    }
    usage(stdout);
    return FL_EXIT_OK;
  }

  fl_alloc_init();
  /* fleetd going away mid-write is an error we report, not a silent death. */
  signal(SIGPIPE, SIG_IGN);

  const char *cmd = o.cmd;
  int want_args = -1;
  int is_send = strcmp(cmd, "send") == 0, is_poll = strcmp(cmd, "poll") == 0;
  int is_peer = strcmp(cmd, "peer") == 0;
  if (strcmp(cmd, "status") == 0 || strcmp(cmd, "roster") == 0 || is_poll ||
      strcmp(cmd, "identity") == 0)
    want_args = 0;
  else if (strcmp(cmd, "trace") == 0)
    want_args = 1;
  else if (is_peer) {
    const char *sub = o.nargs ? o.args[0] : "";
    if (strcmp(sub, "add") == 0)
      want_args = (o.nargs == 4) ? 4 : 3;
    else if (strcmp(sub, "list") == 0)
      want_args = 1;
    else if (strcmp(sub, "remove") == 0)
      want_args = 2;
    else
      return usage_error("peer takes add HOST PUBKEY [URL], list, or remove HOST");
  }
  else if (strcmp(cmd, "mcp-config") == 0)
    want_args = 1;
  else if (is_send)
    want_args = 2;
  if (want_args < 0)
    return usage_error("unknown command '%s'", cmd);
  if (o.nargs != want_args)
    return usage_error("'%s' takes %d argument%s, not %d", cmd, want_args,
                       want_args == 1 ? "" : "s", o.nargs);
  if (o.wait_s >= 0 && !is_send && !is_poll)
    return usage_error("--wait is for send and poll");
  if ((o.max >= 0 || o.from) && !is_poll)
    return usage_error("--max and --from are for poll");

  if (strcmp(cmd, "mcp-config") == 0)
    return cmd_mcp_config(&o);

  /* A send or poll that does not say how long may still wait for fleetd's
   * default, so the read timeout allows for that. */
  long wait = o.wait_s >= 0 ? o.wait_s : ((is_send || is_poll) ? FL_DEFAULT_WAIT_S : 0);
  ctl c = {.o = &o, .fd = -1, .next_id = 1, .timeout_s = wait + FL_CTL_MARGIN_S};
  c.deadline = now_ms() + c.timeout_s * 1000;
  fl_linebuf_init(&c.lb, FL_MAX_LINE);
  if (strcmp(cmd, "status") == 0)
    st = cmd_simple(&c, "fleet/status", NULL);
  else if (strcmp(cmd, "identity") == 0)
    st = cmd_simple(&c, "fleet/identity", NULL);
  else if (strcmp(cmd, "trace") == 0)
    st = cmd_trace(&c);
  else if (is_peer && strcmp(o.args[0], "list") == 0)
    st = cmd_peer_list(&c);
  else if (is_peer && strcmp(o.args[0], "remove") == 0)
    st = cmd_simple(&c, "fleet/peer.remove", json_pack("{s:s}", "host", o.args[1]));
  else if (is_peer)
    st = cmd_simple(&c, "fleet/peer.add",
                    json_pack("{s:s, s:s, s:s?}", "host", o.args[1], "publicKey", o.args[2],
                              "url", o.nargs == 4 ? o.args[3] : NULL));
  else if (strcmp(cmd, "roster") == 0)
    st = cmd_roster(&c);
  else if (is_send)
    st = cmd_send(&c);
  else
    st = cmd_poll(&c);
  ctl_close(&c);
  return st;
}
