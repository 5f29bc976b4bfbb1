/* fleet-mcp.c — the stdio MCP server an MCP client (Claude Code, opencode)
 * launches.
 *
 * It is a relay, not a server: it connects to fleetd's Unix socket and copies
 * newline-delimited JSON-RPC lines from stdin to the socket and from the
 * socket to stdout, so every MCP session is one fleetd connection. The one
 * thing it adds is who the session is: the "initialize" request gets
 * params._meta["fleet/identity"], built from this process's environment
 * (FLEET_NAME, FLEET_ROLE, ...) which the MCP client's config sets;
 * FLEET_CHANNEL=1 adds channel:true to it (Claude Code channels). Every other line
 * passes through byte for byte.
 *
 * When fleetd is not running, fleet-mcp still answers on stdio: the client's
 * first request gets a JSON-RPC error that names the socket and how to start
 * fleetd, so the reason shows in the client's MCP panel instead of a bare
 * "connection closed".
 *
 * Blocking I/O and poll(2) are enough here: one process serves one session,
 * and blocking on a full pipe or socket is exactly the back-pressure a relay
 * should pass on. */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include "clients/client_paths.h"
#include "common/alloc.h"
#include "common/error.h"
#include "common/limits.h"
#include "common/paths.h"
#include "common/time.h"
#include "mcp/jsonrpc.h"

/* After stdin closes, answers to requests already sent may still be on the
 * way; wait this long for them, but never hold the client's shutdown up for
 * noticeably longer. */
#define FL_MCP_DRAIN_MS 1000

/* The JSON-RPC error code for "the server is unavailable": -32000 is the first
 * of the implementation-defined server errors. */
#define FL_MCP_UNAVAILABLE -32000

/* One read(2) worth of bytes; lines longer than this span reads. */
#define FL_MCP_READ_CHUNK 65536

static void usage(FILE *f) {
  fprintf(f, "usage: fleet-mcp [--socket PATH]\n"
             "\n"
             "The stdio MCP server that an MCP client (Claude Code, opencode) launches.\n"
             "It relays MCP between stdin/stdout and fleetd's Unix socket and tells\n"
             "fleetd who this session is (from the environment below).\n"
             "\n"
             "options:\n"
             "  --socket PATH   fleetd's socket (default: $FLEET_SOCKET, else\n"
             "                  $XDG_RUNTIME_DIR/fleet/fleetd.sock, else\n"
             "                  <state dir>/fleetd.sock)\n"
             "  -h, --help      print this text\n"
             "\n"
             "environment:\n"
             "  FLEET_SOCKET    fleetd's socket path (the --socket flag beats it)\n"
             "  FLEET_NAME      this agent's name in the roster, e.g. arch-sonnet\n"
             "  FLEET_ROLE      lead | architect | orchestrator | worker (default: agent)\n"
             "  FLEET_GROUPS    comma-separated groups, e.g. backend,reviewers\n"
             "  FLEET_COORD_ID  a lead's coordId on the coordinator (default name@fleet)\n"
             "  FLEET_GID       pre-minted global id (set for spawned workers)\n"
             "  TMUX_PANE       tmux pane to nudge (set by tmux; $TMUX gives its server)\n"
             "  HERDR_PANE_ID   herdr pane to nudge (set by herdr)\n"
             "\n"
             "Exits 0 when stdin closes; 1 when fleetd closes the connection or is not\n"
             "running; 2 on a usage error.\n");
}

/* poll(2)'s "no timeout": wait until a descriptor is ready. */
#define FL_MCP_POLL_FOREVER (-1)

/* Writes every byte of iov, retrying on EINTR and short writes, and waiting
 * for POLLOUT if fd happens to be non-blocking (a parent may hand us such a
 * pipe). Returns 0 or -errno. Modifies iov. */
static int write_all(int fd, struct iovec *iov, int iovcnt) {
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
  return write_all(fd, iov, 2);
}

static const char *env(const char *name) {
  const char *v = getenv(name);
  return (v && *v) ? v : NULL;
}

/* Sets obj[key] to the string v when v is set. A value that is not UTF-8
 * cannot go into JSON; it is left out with a warning rather than failing the
 * session. Returns 0, or FL_ENOMEM when the object could not grow. */
static int set_str(json_t *obj, const char *key, const char *v, const char *what) {
  if (!v)
    return 0;
  json_t *s = json_string(v);
  if (!s) {
    fprintf(stderr, "fleet-mcp: ignoring %s: not valid UTF-8\n", what);
    return 0;
  }
  return json_object_set_new(obj, key, s) == 0 ? 0 : FL_ENOMEM;
}

/* Sets obj[key] to v (stolen; NULL means out of memory). 0 or FL_ENOMEM. */
static int set_new(json_t *obj, const char *key, json_t *v) {
  return v && json_object_set_new(obj, key, v) == 0 ? 0 : FL_ENOMEM;
}

/* FLEET_GROUPS "a, b,,c " -> ["a","b","c"]: trimmed, empties dropped. */
static json_t *groups_new(const char *list) {
  json_t *arr = json_array();
  if (!arr || !list)
    return arr;
  const char *p = list;
  while (*p) {
    const char *end = strchr(p, ',');
    if (!end)
      end = p + strlen(p);
    const char *a = p, *b = end;
    while (a < b && (*a == ' ' || *a == '\t'))
      a++;
    while (b > a && (b[-1] == ' ' || b[-1] == '\t'))
      b--;
    if (b > a) {
      json_t *g = json_stringn(a, (size_t)(b - a));
      if (!g)
        fprintf(stderr, "fleet-mcp: ignoring a FLEET_GROUPS entry: not valid UTF-8\n");
      else if (json_array_append_new(arr, g) != 0) {
        json_decref(arr);
        return NULL;
      }
    }
    p = *end ? end + 1 : end;
  }
  return arr;
}

/* The identity this session announces to fleetd, from the environment the
 * MCP client gave us. Returns a new reference, or NULL when out of memory. */
static json_t *identity_new(void) {
  json_t *id = json_object();
  char *sock = NULL;
  if (!id)
    return NULL;
  const char *role = env("FLEET_ROLE");
  int rc;
  if ((rc = set_str(id, "name", env("FLEET_NAME"), "FLEET_NAME")) ||
      (rc = set_str(id, "role", role ? role : "agent", "FLEET_ROLE")) ||
      (rc = set_new(id, "groups", groups_new(env("FLEET_GROUPS")))) ||
      (rc = set_str(id, "gid", env("FLEET_GID"), "FLEET_GID")) ||
      (rc = set_str(id, "pane", env("TMUX_PANE"), "TMUX_PANE")) ||
      (rc = set_str(id, "coordId", env("FLEET_COORD_ID"), "FLEET_COORD_ID")))
    goto fail;
  /* $TMUX is "socket-path,server-pid,session-index"; the nudger needs the
   * socket path to reach the right tmux server. */
  const char *tmux = env("TMUX");
  if (tmux) {
    size_t n = strcspn(tmux, ",");
    sock = fl_strndup(tmux, n);
    if (!sock || (n > 0 && set_str(id, "tmuxSocket", sock, "TMUX") != 0))
      goto fail;
  }
  /* Our parent is the MCP client itself: the process whose life the entity
   * follows. */
  if ((rc = set_str(id, "herdrPane", env("HERDR_PANE_ID"), "HERDR_PANE_ID")) ||
      (rc = set_new(id, "pid", json_integer((json_int_t)getppid()))))
    goto fail;
  char cwd[PATH_MAX];
  if (getcwd(cwd, sizeof cwd) && set_str(id, "cwd", cwd, "the current directory") != 0)
    goto fail;
  /* FLEET_CHANNEL=1 (only "1") asks fleetd to also push held messages as
   * Claude Code channel notifications, if the client declared it takes them. */
  const char *channel = env("FLEET_CHANNEL");
  if (channel && strcmp(channel, "1") == 0 && set_new(id, "channel", json_true()) != 0)
    goto fail;
  fl_free(sock);
  return id;

fail:
  fl_free(sock);
  json_decref(id);
  return NULL;
}

/* If line is an "initialize" request, returns a new line ('\n'-terminated,
 * caller frees with fl_free) carrying params._meta["fleet/identity"] = ident
 * (borrowed). Returns NULL to mean "relay the line unchanged": not
 * initialize, not JSON (fleetd answers the parse error), or a params/_meta of
 * a shape fleetd will reject anyway. */
static char *rewrite_initialize(const char *line, size_t len, json_t *ident) {
  /* Cheap filter first: lines run up to FL_MAX_LINE and only one per session
   * is an initialize. */
  if (!memmem(line, len, "\"initialize\"", 12))
    return NULL;
  json_t *root = json_loadb(line, len, 0, NULL);
  if (!json_is_object(root))
    goto keep;
  json_t *method = json_object_get(root, "method");
  if (!json_is_string(method) || strcmp(json_string_value(method), "initialize") != 0 ||
      !json_object_get(root, "id"))
    goto keep;
  json_t *params = json_object_get(root, "params");
  if (!params || json_is_null(params)) {
    params = json_object();
    if (json_object_set_new(root, "params", params) != 0)
      goto keep;
  }
  if (!json_is_object(params))
    goto keep;
  json_t *meta = json_object_get(params, "_meta");
  if (!meta || json_is_null(meta)) {
    meta = json_object();
    if (json_object_set_new(params, "_meta", meta) != 0)
      goto keep;
  }
  if (!json_is_object(meta) || json_object_set(meta, "fleet/identity", ident) != 0)
    goto keep;
  return fl_rpc_line(root); /* steals root */
keep:
  json_decref(root);
  return NULL;
}

/* Connects to the Unix socket at path. Returns the fd, or -errno. */
static int connect_unix(const char *path) {
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  if (strlen(path) >= sizeof sa.sun_path)
    return -ENAMETOOLONG;
  memcpy(sa.sun_path, path, strlen(path) + 1);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
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
  return fd;
}

/* fleetd is unreachable: answer the client's first request with reason (so
 * the client shows it), then exit 1. Notifications get no reply; lines that
 * are not requests are skipped. */
static int serve_unavailable(const char *reason) {
  fl_linebuf lb;
  fl_linebuf_init(&lb, FL_MAX_LINE);
  static char buf[FL_MCP_READ_CHUNK];
  int eof = 0;
  while (!eof) {
    ssize_t n = read(STDIN_FILENO, buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) {
      struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
      (void)poll(&p, 1, FL_MCP_POLL_FOREVER);
      continue;
    }
    if (n <= 0) {
      eof = 1;
      if (lb.len == 0 || fl_linebuf_feed(&lb, "\n", 1) != 0)
        break;
    } else if (fl_linebuf_feed(&lb, buf, (size_t)n) != 0) {
      break;
    }
    char *line;
    size_t len;
    while (fl_linebuf_next(&lb, &line, &len) == 1) {
      json_t *msg = json_loadb(line, len, 0, NULL);
      fl_free(line);
      json_t *id = json_object_get(msg, "id");
      if (json_is_string(json_object_get(msg, "method")) && id) {
        char *out = fl_rpc_error(id, FL_MCP_UNAVAILABLE, reason, NULL);
        if (out) {
          struct iovec iov = {.iov_base = out, .iov_len = strlen(out)};
          (void)write_all(STDOUT_FILENO, &iov, 1);
          fl_free(out);
        }
        json_decref(msg);
        fl_linebuf_free(&lb);
        return 1;
      }
      json_decref(msg);
    }
  }
  fl_linebuf_free(&lb);
  return 1;
}

/* Both directions of the relay. */
typedef struct relay {
  int sock;
  json_t *ident;  /* the identity for initialize (owned) */
  fl_linebuf in;  /* stdin -> socket */
  fl_linebuf out; /* socket -> stdout */
} relay;

enum { FL_PUMP_OK, FL_PUMP_EOF, FL_PUMP_FAIL };

/* Sends every whole line buffered from stdin to fleetd. */
static int relay_flush_in(relay *r) {
  char *line;
  size_t len;
  int rc;
  while ((rc = fl_linebuf_next(&r->in, &line, &len)) == 1) {
    char *rewritten = rewrite_initialize(line, len, r->ident);
    int wrc;
    if (rewritten) {
      struct iovec iov = {.iov_base = rewritten, .iov_len = strlen(rewritten)};
      wrc = write_all(r->sock, &iov, 1);
      fl_free(rewritten);
    } else {
      wrc = write_line(r->sock, line, len);
    }
    fl_free(line);
    if (wrc != 0) {
      fprintf(stderr, "fleet-mcp: fleetd closed the connection\n");
      return FL_PUMP_FAIL;
    }
  }
  if (rc < 0) {
    fprintf(stderr, "fleet-mcp: out of memory\n");
    return FL_PUMP_FAIL;
  }
  return FL_PUMP_OK;
}

/* Reads what stdin has and forwards whole lines. FL_PUMP_EOF once stdin is
 * closed (a last line without '\n' is still forwarded). */
static int relay_pump_in(relay *r, char *buf, size_t bufsize) {
  ssize_t n = read(STDIN_FILENO, buf, bufsize);
  if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
    return FL_PUMP_OK;
  int eof = n <= 0;
  int rc = 0;
  if (!eof)
    rc = fl_linebuf_feed(&r->in, buf, (size_t)n);
  else if (r->in.len > 0)
    rc = fl_linebuf_feed(&r->in, "\n", 1);
  if (rc == FL_ETOOBIG) {
    fprintf(stderr,
            "fleet-mcp: a line from the MCP client is over %u bytes (FL_MAX_LINE); closing\n",
            FL_MAX_LINE);
    return FL_PUMP_FAIL;
  }
  if (rc != 0) {
    fprintf(stderr, "fleet-mcp: out of memory\n");
    return FL_PUMP_FAIL;
  }
  int frc = relay_flush_in(r);
  if (frc != FL_PUMP_OK)
    return frc;
  return eof ? FL_PUMP_EOF : FL_PUMP_OK;
}

/* Reads what fleetd sent and writes whole lines to stdout. FL_PUMP_EOF when
 * fleetd closed the connection. */
static int relay_pump_out(relay *r, char *buf, size_t bufsize) {
  ssize_t n = read(r->sock, buf, bufsize);
  if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
    return FL_PUMP_OK;
  if (n <= 0)
    return FL_PUMP_EOF;
  int rc = fl_linebuf_feed(&r->out, buf, (size_t)n);
  if (rc == FL_ETOOBIG) {
    fprintf(stderr, "fleet-mcp: a line from fleetd is over %u bytes (FL_MAX_LINE); closing\n",
            FL_MAX_LINE);
    return FL_PUMP_FAIL;
  }
  char *line;
  size_t len;
  while (rc == 0 && (rc = fl_linebuf_next(&r->out, &line, &len)) == 1) {
    int wrc = write_line(STDOUT_FILENO, line, len);
    fl_free(line);
    if (wrc != 0) {
      fprintf(stderr, "fleet-mcp: cannot write to the MCP client: %s\n", strerror(-wrc));
      return FL_PUMP_FAIL;
    }
    rc = 0;
  }
  if (rc < 0) {
    fprintf(stderr, "fleet-mcp: out of memory\n");
    return FL_PUMP_FAIL;
  }
  return FL_PUMP_OK;
}

/* Runs until stdin closes (returns 0 after a short drain) or fleetd goes
 * away (returns 1). */
static int relay_run(relay *r) {
  static char buf[FL_MCP_READ_CHUNK];
  int stdin_open = 1;
  long long drain_until = 0;
  for (;;) {
    int timeout = FL_MCP_POLL_FOREVER;
    if (!stdin_open) {
      long long left = drain_until - fl_mono_ms();
      if (left <= 0)
        return 0;
      timeout = (int)left;
    }
    struct pollfd p[2] = {{.fd = stdin_open ? STDIN_FILENO : -1, .events = POLLIN},
                          {.fd = r->sock, .events = POLLIN}};
    int n = poll(p, 2, timeout);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      fprintf(stderr, "fleet-mcp: poll: %s\n", strerror(errno));
      return 1;
    }
    /* fleetd's side first, so answers already here are not lost if stdin
     * closes in the same round. */
    if (p[1].revents) {
      int rc = relay_pump_out(r, buf, sizeof buf);
      if (rc == FL_PUMP_FAIL)
        return 1;
      if (rc == FL_PUMP_EOF) {
        if (!stdin_open)
          return 0;
        fprintf(stderr, "fleet-mcp: fleetd closed the connection\n");
        return 1;
      }
    }
    if (stdin_open && p[0].revents) {
      int rc = relay_pump_in(r, buf, sizeof buf);
      if (rc == FL_PUMP_FAIL)
        return 1;
      if (rc == FL_PUMP_EOF) {
        /* Tell fleetd we are done; it ends the session (the entity leaves
         * the roster) and finishes any answers in flight. */
        (void)shutdown(r->sock, SHUT_WR);
        stdin_open = 0;
        drain_until = fl_mono_ms() + FL_MCP_DRAIN_MS;
      }
    }
  }
}

int main(int argc, char **argv) {
  const char *socket_opt = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      usage(stdout);
      return 0;
    } else if (strcmp(a, "--socket") == 0 && i + 1 < argc) {
      socket_opt = argv[++i];
    } else if (strncmp(a, "--socket=", 9) == 0 && a[9]) {
      socket_opt = a + 9;
    } else {
      fprintf(stderr, "fleet-mcp: unexpected argument '%s'\n\n", a);
      usage(stderr);
      return 2;
    }
  }

  fl_alloc_init();
  /* A vanished peer must be a write error we report, not a silent death. */
  signal(SIGPIPE, SIG_IGN);

  char path[FL_MAX_PATH];
  char reason[FL_MAX_PATH + FL_CLIENT_START_CMD_MAX + 128];
  int fd;
  if (socket_opt) {
    if (strlen(socket_opt) >= sizeof path) {
      fprintf(stderr, "fleet-mcp: --socket path is longer than %d bytes\n", FL_MAX_PATH - 1);
      return 2;
    }
    memcpy(path, socket_opt, strlen(socket_opt) + 1);
    fd = connect_unix(path);
  } else {
    int rc = fl_paths_socket(NULL, path, sizeof path);
    if (rc != 0) {
      fl_errf(reason, sizeof reason,
              "cannot work out fleetd's socket path (%s). Set FLEET_SOCKET or HOME, or pass "
              "--socket PATH",
              fl_strerror(rc));
      fprintf(stderr, "fleet-mcp: %s\n", reason);
      return serve_unavailable(reason);
    }
    fd = connect_unix(path);
  }

  if (fd == -ENOENT || fd == -ECONNREFUSED) {
    char start[FL_CLIENT_START_CMD_MAX];
    fl_client_start_cmd(path, start, sizeof start);
    fprintf(stderr,
            "fleet-mcp: fleetd is not running (nothing listening on %s).\n"
            "Start it with:  %s\n",
            path, start);
    fl_errf(reason, sizeof reason,
            "fleetd is not running (nothing listening on %s). Start it with: %s, then restart "
            "this MCP server",
            path, start);
    return serve_unavailable(reason);
  }
  if (fd < 0) {
    char why[64];
    fl_errf(why, sizeof why, "path too long for a Unix socket (max %zu bytes)",
            sizeof(((struct sockaddr_un *)0)->sun_path) - 1);
    fl_errf(reason, sizeof reason, "cannot connect to fleetd at %s: %s", path,
            fd == -ENAMETOOLONG ? why : strerror(-fd));
    fprintf(stderr, "fleet-mcp: %s\n", reason);
    return serve_unavailable(reason);
  }

  int status = 1;
  relay r = {.sock = fd};
  fl_linebuf_init(&r.in, FL_MAX_LINE);
  fl_linebuf_init(&r.out, FL_MAX_LINE);
  r.ident = identity_new();
  if (!r.ident) {
    fprintf(stderr, "fleet-mcp: out of memory\n");
    goto done;
  }
  status = relay_run(&r);
done:
  json_decref(r.ident);
  fl_linebuf_free(&r.in);
  fl_linebuf_free(&r.out);
  close(fd);
  return status;
}
