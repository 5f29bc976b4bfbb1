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
 * MCP clients do not restart their servers, so once the session is up a lost
 * connection (fleetd stopped, restarted or crashed) does not end fleet-mcp:
 * it answers the calls fleetd left unanswered with a retryable error,
 * connects again with backoff and registers the session again as the same
 * entity (see "the link to fleetd" below). It exits only when stdin closes.
 *
 * Blocking I/O and poll(2) are enough here: one process serves one session,
 * and blocking on a full pipe or socket is exactly the back-pressure a relay
 * should pass on. */
#include <errno.h>
#include <fcntl.h>
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
#include "clients/fleet_mcp_calls.h"
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
             "When the connection to fleetd is lost (fleetd stopped or restarted), it\n"
             "stays up, connects again with backoff and registers again as the same\n"
             "agent; calls meanwhile get a retryable error.\n"
             "\n"
             "Exits 0 when stdin closes; 1 when fleetd is not running at start (after\n"
             "answering the client's first request with the reason); 2 on a usage error.\n");
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
static int connect_unix(const char *path, int nonblock) {
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

/* ---- the link to fleetd, and getting it back ---------------------------------
 *
 * The relay keeps one connection to fleetd. When it closes (fleetd stopped,
 * restarted or crashed), fleet-mcp stays up for its client: every call
 * fleetd had not answered gets a retryable error at once, and fleet-mcp
 * connects again with backoff. Once the client's initialize was accepted,
 * a new connection first sends that same initialize again (fleet-mcp's own
 * request id; the identity now also carries the gid fleetd gave and
 * "resume": true), so the session comes back as the same entity, with its
 * pane and its held messages; then notifications/initialized and the
 * client's logging level, and only then the client's lines. Lines the client
 * sends meanwhile wait for the link, but only while it has been down for
 * less than FL_MCP_HOLD_MS; after that a request gets a retryable error at
 * once (ping is answered by fleet-mcp itself). */

enum { FL_LINK_UP, FL_LINK_HANDSHAKE, FL_LINK_DOWN };

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
/* How long a new connection may take to answer the repeated initialize:
 * generous for a loaded host, short enough that a socket taken over by
 * something that never answers is left again. */
#define FL_MCP_HANDSHAKE_MS 10000
/* How long a request made while the link is down waits for it (a fleetd
 * restart is over in about a second) before it gets a retryable error; and
 * how many lines and bytes may wait (a client does not send much while its
 * calls are failing; the bytes allow one line of the largest size). */
#define FL_MCP_HOLD_MS 5000
#define FL_MCP_HOLD_LINES 256
#define FL_MCP_HOLD_BYTES (2u * FL_MAX_LINE)
/* Calls tracked for an answer: fleetd keeps at most
 * FL_MAX_WAITERS_PER_CLIENT calls of a session waiting and answers the rest
 * at once, so this covers a client with many calls on their way too; past
 * it, calls go through untracked (they would hang if the link were lost
 * under them). */
#define FL_MCP_MAX_CALLS (64 * FL_MAX_WAITERS_PER_CLIENT)
/* While fleetd stays away, a reason already logged is logged again only this
 * often, so a fleetd that never comes back costs a line every few minutes. */
#define FL_MCP_STILL_DOWN_LOG_MS (5 * 60 * 1000)
/* Room for why fleetd cannot be reached: a path and a refusal from fleetd. */
#define FL_MCP_WHY_MAX (FL_MAX_PATH + 768)
/* The id prefix of fleet-mcp's own requests to fleetd; their answers are
 * not relayed. */
#define FL_MCP_OWN_ID "fleet-mcp/"

/* The answer to a call that was in flight when the link was lost. */
#define FL_MCP_LOST_CALL                                                                           \
  "fleetd went away while this call was in flight (it stopped, restarted or closed the "           \
  "connection), so whether it took effect is unknown. fleet-mcp reconnects by itself: retry in "   \
  "a few seconds (after a send, fleet_list or fleet_poll tells whether it went through)."

/* A line from the client that waits for the link. */
typedef struct held_line {
  struct held_line *next;
  size_t len;
  char line[]; /* len bytes and a NUL */
} held_line;

/* Both directions of the relay, and the state of its link to fleetd. */
typedef struct relay {
  const char *path; /* fleetd's socket */
  int sock;         /* -1 while the link is down */
  int link;         /* FL_LINK_* */
  json_t *ident;    /* the identity for initialize (owned) */
  fl_linebuf in;    /* stdin -> socket */
  fl_linebuf out;   /* socket -> stdout */
  fl_calls *calls;  /* requests fleetd has not answered yet */
  int untracked_warned;
  /* The session, to register it again: the params of the client's
   * initialize in flight, and of the one fleetd accepted (both owned). */
  json_t *init_sent;
  json_t *init_params;
  int client_initialized; /* the client sent notifications/initialized */
  char level[16];         /* the client's logging/setLevel level, or "" */
  /* Reconnecting. */
  long long lost_at;         /* when the link went down (fl_mono_ms) */
  long long next_try;        /* when to connect again */
  long long handshake_until; /* when a repeated initialize has waited enough */
  long long last_log;        /* when the reason was last logged */
  int retry_ms;              /* the next wait before connecting again */
  unsigned long attempts;    /* attempts since the link went down */
  unsigned long resumes;     /* times the session came back */
  unsigned rng;              /* jitter */
  char why[FL_MCP_WHY_MAX];  /* why fleetd cannot be reached now */
  char logged[FL_MCP_WHY_MAX];
  held_line *held, **held_tail;
  size_t nheld, held_bytes;
} relay;

enum { FL_PUMP_OK, FL_PUMP_EOF, FL_PUMP_FAIL };

/* Writes a line fleet-mcp made (ending in '\n', freed here) to the client.
 * A client that is gone shows as stdin EOF soon; nothing else to do. */
static void reply_client(char *line) {
  if (!line)
    return;
  struct iovec iov = {.iov_base = line, .iov_len = strlen(line)};
  (void)write_all(STDOUT_FILENO, &iov, 1);
  fl_free(line);
}

/* The kind of answer a request with this method gets from fleet-mcp. */
static enum fl_call_kind call_kind(const char *method) {
  if (strcmp(method, "tools/call") == 0)
    return FL_CALL_TOOL;
  if (strcmp(method, "initialize") == 0)
    return FL_CALL_INIT;
  return FL_CALL_OTHER;
}

/* Answers a request that cannot reach fleetd now (msg is the parsed line,
 * borrowed): ping is answered here (fleet-mcp is alive), anything else gets
 * a retryable error that says why. Notifications need nothing. */
static void answer_offline(relay *r, json_t *msg) {
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
static void log_why(relay *r, long long now) {
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
static long long retry_in(relay *r, int refused) {
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
static size_t fail_calls(relay *r) {
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
static void link_down(relay *r, const char *why, int refused) {
  long long now = fl_mono_ms();
  if (why)
    fl_copy(r->why, sizeof r->why, why);
  if (r->sock >= 0)
    close(r->sock);
  r->sock = -1;
  fl_linebuf_free(&r->out);
  fl_linebuf_init(&r->out, FL_MAX_LINE);
  size_t failed = fail_calls(r);
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

/* Sends one whole line from the client to fleetd, noting what fleet-mcp
 * must know of it (the call to answer if the link is lost, the session to
 * register again). initialize gets the identity. A write that fails takes
 * the link down. Returns FL_PUMP_OK, or FL_PUMP_FAIL when out of memory. */
static int send_client_line(relay *r, const char *line, size_t len) {
  json_t *root = json_loadb(line, len, 0, NULL);
  const char *method = json_string_value(json_object_get(root, "method"));
  json_t *id = json_object_get(root, "id");
  char *rewritten = NULL;
  int rc = FL_PUMP_OK;
  if (method && id) {
    enum fl_call_kind kind = call_kind(method);
    int arc = fl_calls_add(r->calls, id, kind);
    if (arc == FL_ENOMEM)
      goto oom;
    if (arc == FL_EFULL && !r->untracked_warned) {
      r->untracked_warned = 1;
      fprintf(stderr, "fleet-mcp: over %d calls in flight; the rest go through untracked\n",
              FL_MCP_MAX_CALLS);
    }
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
  int wrc;
  if (rewritten) {
    struct iovec iov = {.iov_base = rewritten, .iov_len = strlen(rewritten)};
    wrc = write_all(r->sock, &iov, 1);
  } else {
    wrc = write_line(r->sock, line, len);
  }
  if (wrc != 0) {
    char why[64];
    fl_errf(why, sizeof why, "writing to fleetd failed: %s", strerror(-wrc));
    link_down(r, why, 0);
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
static int flush_held(relay *r) {
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
static void fail_held(relay *r) {
  while (r->held) {
    held_line *h = r->held;
    r->held = h->next;
    json_t *msg = json_loadb(h->line, h->len, 0, NULL);
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
static int offline_client_line(relay *r, const char *line, size_t len) {
  long long now = fl_mono_ms();
  json_t *msg = json_loadb(line, len, 0, NULL);
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
static int client_line(relay *r, const char *line, size_t len) {
  if (r->link == FL_LINK_UP)
    return send_client_line(r, line, len);
  return offline_client_line(r, line, len);
}

/* Sends fleet-mcp's own request (id FL_MCP_OWN_ID + what) to fleetd. A
 * write that fails takes the link down. */
static void send_own(relay *r, const char *what, const char *method, json_t *params) {
  char idbuf[64];
  fl_errf(idbuf, sizeof idbuf, FL_MCP_OWN_ID "%s", what);
  json_t *msg = json_pack("{s:s, s:s, s:s}", "jsonrpc", "2.0", "id", idbuf, "method", method);
  if (msg && params)
    json_object_set(msg, "params", params);
  char *line = msg ? fl_rpc_line(msg) : NULL;
  int wrc = line ? write_all(r->sock, &(struct iovec){.iov_base = line, .iov_len = strlen(line)}, 1)
                 : FL_ENOMEM;
  fl_free(line);
  if (wrc != 0) {
    char why[64];
    fl_errf(why, sizeof why, "writing to fleetd failed: %s", fl_strerror(wrc));
    link_down(r, why, 0);
  }
}

/* Why connecting to path failed (err: -errno), in words for the log and for
 * the calls that fail meanwhile. */
static void describe_connect(relay *r, int err) {
  if (err == -ENOENT || err == -ECONNREFUSED)
    fl_errf(r->why, sizeof r->why, "fleetd is not running (nothing listening on %s)", r->path);
  else if (err == -EAGAIN)
    fl_errf(r->why, sizeof r->why, "the socket %s takes no connections right now", r->path);
  else
    fl_errf(r->why, sizeof r->why, "cannot connect to fleetd at %s: %s", r->path, strerror(-err));
}

/* The link is up (again): say so, and send what waited for it. */
static int link_up(relay *r) {
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
static int try_connect(relay *r) {
  r->attempts++;
  int fd = connect_unix(r->path, 1);
  if (fd < 0) {
    describe_connect(r, fd);
    link_down(r, NULL, 0);
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
static void learn_gid(relay *r, json_t *msg) {
  json_t *meta = json_object_get(json_object_get(msg, "result"), "_meta");
  const char *gid =
      json_string_value(json_object_get(json_object_get(meta, "fleet/identity"), "gid"));
  if (gid && !json_object_get(r->ident, "gid"))
    json_object_set_new(r->ident, "gid", json_string(gid));
}

/* fleetd's answer to the repeated initialize (msg, borrowed). */
static int resume_answer(relay *r, json_t *msg) {
  if (r->link != FL_LINK_HANDSHAKE)
    return FL_PUMP_OK;
  json_t *err = json_object_get(msg, "error");
  if (err || !json_object_get(msg, "result")) {
    const char *m = json_string_value(json_object_get(err, "message"));
    char why[FL_MCP_WHY_MAX];
    fl_errf(why, sizeof why, "fleetd refused to take this session back: %s",
            m ? m : "no reason given");
    link_down(r, why, 1);
    return FL_PUMP_OK;
  }
  learn_gid(r, msg);
  r->resumes++;
  if (r->client_initialized) {
    char *line = fl_rpc_notification("notifications/initialized", NULL);
    int wrc =
        line ? write_all(r->sock, &(struct iovec){.iov_base = line, .iov_len = strlen(line)}, 1)
             : FL_ENOMEM;
    fl_free(line);
    if (wrc != 0) {
      link_down(r, "writing to fleetd failed", 0);
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
static int fleetd_line(relay *r, const char *line, size_t len) {
  const char *tok;
  size_t toklen;
  if (fl_calls_line_id(line, len, &tok, &toklen)) {
    if (toklen > sizeof FL_MCP_OWN_ID &&
        memcmp(tok + 1, FL_MCP_OWN_ID, sizeof FL_MCP_OWN_ID - 1) == 0) {
      json_t *msg = json_loadb(line, len, 0, NULL);
      int rc =
          (toklen > 8 && memmem(tok, toklen, "resume-", 7)) ? resume_answer(r, msg) : FL_PUMP_OK;
      json_decref(msg);
      return rc;
    }
    enum fl_call_kind kind;
    if (fl_calls_take(r->calls, tok, toklen, &kind) && kind == FL_CALL_INIT) {
      /* The client's own initialize: if accepted, this is the session to
       * register again should the link be lost. */
      json_t *msg = json_loadb(line, len, 0, NULL);
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

/* Reads what stdin has and handles whole lines. FL_PUMP_EOF once stdin is
 * closed (a last line without '\n' is still handled). */
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
  char *line;
  size_t len;
  while ((rc = fl_linebuf_next(&r->in, &line, &len)) == 1) {
    int crc = client_line(r, line, len);
    fl_free(line);
    if (crc != FL_PUMP_OK)
      return crc;
  }
  if (rc < 0) {
    fprintf(stderr, "fleet-mcp: out of memory\n");
    return FL_PUMP_FAIL;
  }
  return eof ? FL_PUMP_EOF : FL_PUMP_OK;
}

/* Reads what fleetd sent and handles whole lines; a closed connection, or
 * a line over the cap, takes the link down. */
static int relay_pump_out(relay *r, char *buf, size_t bufsize) {
  ssize_t n = read(r->sock, buf, bufsize);
  if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
    return FL_PUMP_OK;
  if (n <= 0) {
    char why[96];
    if (n == 0)
      fl_errf(why, sizeof why, "fleetd closed the connection");
    else
      fl_errf(why, sizeof why, "reading from fleetd failed: %s", strerror(errno));
    link_down(r, why, 0);
    return FL_PUMP_OK;
  }
  int rc = fl_linebuf_feed(&r->out, buf, (size_t)n);
  if (rc == FL_ETOOBIG) {
    char why[96];
    fl_errf(why, sizeof why, "fleetd sent a line over %u bytes (FL_MAX_LINE)", FL_MAX_LINE);
    link_down(r, why, 0);
    return FL_PUMP_OK;
  }
  char *line;
  size_t len;
  int sock = r->sock;
  /* Until the link goes down under us (a refused resume): what is left of
   * a dead connection is not read. */
  while (rc == 0 && r->sock == sock && (rc = fl_linebuf_next(&r->out, &line, &len)) == 1) {
    int lrc = fleetd_line(r, line, len);
    fl_free(line);
    if (lrc != FL_PUMP_OK)
      return lrc;
    rc = 0;
  }
  if (rc < 0) {
    fprintf(stderr, "fleet-mcp: out of memory\n");
    return FL_PUMP_FAIL;
  }
  return FL_PUMP_OK;
}

static long long min_ll(long long a, long long b) { return a < b ? a : b; }

/* Runs until stdin closes (returns 0, after a short drain while fleetd is
 * there) or something fails for good (returns 1). A lost link to fleetd is
 * not an end: it is connected again. */
static int relay_run(relay *r) {
  static char buf[FL_MCP_READ_CHUNK];
  int stdin_open = 1;
  long long drain_until = 0;
  for (;;) {
    long long now = fl_mono_ms();
    if (!stdin_open && (r->link != FL_LINK_UP || now >= drain_until))
      return 0;
    if (r->link == FL_LINK_DOWN && now >= r->next_try) {
      if (try_connect(r) != FL_PUMP_OK)
        return 1;
      continue;
    }
    if (r->link == FL_LINK_HANDSHAKE && now >= r->handshake_until) {
      char why[FL_MAX_PATH + 128];
      fl_errf(why, sizeof why,
              "the socket %s gave no answer to initialize in %d s (is it fleetd's?)", r->path,
              FL_MCP_HANDSHAKE_MS / 1000);
      link_down(r, why, 0);
      continue;
    }
    if (r->link != FL_LINK_UP && r->held && now - r->lost_at >= FL_MCP_HOLD_MS)
      fail_held(r);

    long long until = -1;
    if (!stdin_open)
      until = drain_until;
    else if (r->link == FL_LINK_DOWN)
      until = r->next_try;
    else if (r->link == FL_LINK_HANDSHAKE)
      until = r->handshake_until;
    if (r->link != FL_LINK_UP && r->held)
      until = until < 0 ? r->lost_at + FL_MCP_HOLD_MS : min_ll(until, r->lost_at + FL_MCP_HOLD_MS);
    int timeout = FL_MCP_POLL_FOREVER;
    if (until >= 0)
      timeout = until > now ? (int)min_ll(until - now, INT_MAX) : 0;

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
    if (r->sock >= 0 && p[1].revents) {
      if (relay_pump_out(r, buf, sizeof buf) == FL_PUMP_FAIL)
        return 1;
    }
    if (stdin_open && p[0].revents) {
      int rc = relay_pump_in(r, buf, sizeof buf);
      if (rc == FL_PUMP_FAIL)
        return 1;
      if (rc == FL_PUMP_EOF) {
        stdin_open = 0;
        if (r->link != FL_LINK_UP) {
          /* No fleetd to tell: what waited gets its answer, and we end. */
          fail_held(r);
          return 0;
        }
        /* Tell fleetd we are done; it ends the session (the entity leaves
         * the roster) and finishes any answers in flight. */
        (void)shutdown(r->sock, SHUT_WR);
        drain_until = fl_mono_ms() + FL_MCP_DRAIN_MS;
      }
    }
  }
}

static void relay_free(relay *r) {
  fail_held(r);
  json_decref(r->ident);
  json_decref(r->init_sent);
  json_decref(r->init_params);
  fl_calls_free(&r->calls);
  fl_linebuf_free(&r->in);
  fl_linebuf_free(&r->out);
  if (r->sock >= 0)
    close(r->sock);
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

  static char path[FL_MAX_PATH];
  char reason[FL_MAX_PATH + FL_CLIENT_START_CMD_MAX + 128];
  int fd;
  if (socket_opt) {
    if (strlen(socket_opt) >= sizeof path) {
      fprintf(stderr, "fleet-mcp: --socket path is longer than %d bytes\n", FL_MAX_PATH - 1);
      return 2;
    }
    memcpy(path, socket_opt, strlen(socket_opt) + 1);
    fd = connect_unix(path, 0);
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
    fd = connect_unix(path, 0);
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
  relay r = {.path = path, .sock = fd, .link = FL_LINK_UP};
  r.held_tail = &r.held;
  r.rng = (unsigned)getpid() ^ (unsigned)fl_mono_ns();
  if (!r.rng)
    r.rng = 1;
  fl_linebuf_init(&r.in, FL_MAX_LINE);
  fl_linebuf_init(&r.out, FL_MAX_LINE);
  r.ident = identity_new();
  r.calls = fl_calls_new(FL_MCP_MAX_CALLS);
  if (!r.ident || !r.calls) {
    fprintf(stderr, "fleet-mcp: out of memory\n");
    goto done;
  }
  status = relay_run(&r);
done:
  relay_free(&r);
  return status;
}
