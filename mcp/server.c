/* server.c — the Unix-socket transport for MCP sessions.
 *
 * fleetd listens on one Unix socket (mode 0600). Each accepted connection is
 * checked with SO_PEERCRED (only our own uid may talk to us), framed into
 * lines with a cap (FL_MAX_LINE), and handed line by line to an MCP session
 * (mcp.c). Writes are queued on the connection with a cap on unsent bytes
 * (FL_MAX_OUTQ): a peer that stops reading is dropped, never buffered without
 * bound. A peer that sends an oversize line gets one error line and is
 * closed; everyone else is unaffected. So is a connection that would take
 * one of the file descriptors fleetd keeps in reserve (FL_FD_RESERVE).
 *
 * Fairness: a light client is served in its read; the rest take turns on a
 * backlog (an idle handle), bounded in lines, bytes and time per loop
 * iteration, and lines over 64 KiB are parsed on the thread pool (see the
 * limits below), so no client's input holds the loop for long. And a
 * client with more than FL_OUTQ_PAUSE bytes of answers unread is not read
 * from until it reads: flooding requests without reading stalls only the
 * flooder.
 *
 * Reads share one buffer: the loop is single-threaded and each read is
 * consumed before the next one is allocated. */
#include "mcp/server.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/limits.h"
#include "common/log.h"
#include "common/paths.h"
#include "common/time.h"
#include "mcp/counters.h"
#include "mcp/jsonrpc.h"
#include "mcp/mcp.h"

/* One read's worth; lines longer than this simply span reads. */
#define FL_READ_BUF (64 * 1024)
/* Pending connections the kernel may queue: a burst of clients at once. */
#define FL_BACKLOG 1024
/* After an oversize line, how long and how much more input is read (and
 * dropped) while waiting for the peer to close: enough for the rest of a
 * line a few times the cap, short enough that a stuck peer frees its slot. */
#define FL_DRAIN_MS 2000
#define FL_DRAIN_MAX_BYTES (4u * FL_MAX_LINE)
/* The loop's time between two polls is bounded, whatever clients send:
 * - a client with at most FL_BYTES_INLINE buffered (a request, a few) is
 *   served in its read, while the reads of one poll have taken less than
 *   FL_POLL_SERVE_NS;
 * - anything else waits for the backlog, which gives each client a turn of
 *   FL_LINES_PER_TURN lines or FL_BYTES_PER_TURN bytes (at least one line)
 *   and runs for FL_PASS_NS or FL_BYTES_PER_PASS per loop iteration;
 * - a line over FL_LINE_OFF_LOOP is parsed on the thread pool;
 * - a client is read FL_READ_PER_TURN bytes at most between two turns.
 * So a light client's request waits for about one pass at most. Time, not
 * only bytes, bounds the work: what a line costs depends on what it asks. */
#define FL_BYTES_INLINE (16u * 1024u)
#define FL_POLL_SERVE_NS 1000000u
#define FL_BYTES_PER_TURN (16u * 1024u)
#define FL_BYTES_PER_PASS (128u * 1024u)
#define FL_PASS_NS 1000000u
#define FL_LINE_OFF_LOOP (64u * 1024u)
#define FL_READ_PER_TURN (128u * 1024u)
/* The nice value of the thread-pool threads that parse big lines. */
#define FL_PARSE_NICE 10
/* File descriptors kept free for everything else fleetd opens (the store's
 * database, WAL and journal files, the identity, a terminal's pipes, HTTP):
 * a connection that would take one of them is refused with an error line.
 * The refusal is logged once per FL_FD_WARN_MS with how many there were. */
#define FL_FD_RESERVE 32
#define FL_FD_WARN_MS 60000
/* How long after a connection with big buffers closed the heap is trimmed:
 * a burst of such closes costs one trim. */
#define FL_TRIM_DELAY_MS 500

typedef struct fl_conn fl_conn;

struct fl_server {
  uv_loop_t *loop;
  fl_gw *gw;
  fl_mcp_counters *counters; /* what its sessions count (owned) */
  uv_pipe_t listener;
  int listening;
  char path[FL_MAX_PATH + 1];
  fl_conn *conns;
  size_t nconns;
  /* Clients with whole lines left unserved, oldest first (fl_conn_turns). */
  uv_idle_t backlog_idle;
  int backlog_active;
  fl_conn *backlog, **backlog_tail;
  size_t nbacklog;
  /* After connections that held big buffers are gone, free heap goes back
   * to the system (fl_alloc_trim), once per FL_TRIM_DELAY_MS at most. */
  uv_timer_t trim_timer;
  /* When the first read after the latest poll ran (0: none yet; reset by
   * poll_prepare before each poll). */
  uv_prepare_t poll_prepare;
  uint64_t poll_start;
  /* Out of file descriptors: the soft limit, and the rate-limited log. */
  long fd_limit;
  long long fd_warned_ms;
  unsigned long fd_refused_since;
  char readbuf[FL_READ_BUF];
  int readbuf_busy;
};

struct fl_conn {
  uv_pipe_t pipe;
  fl_server *fe;
  fl_conn *next, **pprev;
  fl_session *session;
  fl_linebuf lb;
  size_t outq;
  int reading; /* uv_read_start is in effect */
  int more;    /* lines may be buffered that were not served yet */
  char *line;  /* the next line, popped but waiting for a turn */
  int parsing; /* a big line of it is being parsed off the loop */
  size_t line_len;
  size_t turn_read;             /* bytes read since its last turn of the backlog */
  int big;                      /* it held a long line or many answers: trim the heap after it */
  size_t sndbuf;                /* the socket's send buffer as last asked for (0: the system's) */
  fl_conn *bl_next, **bl_pprev; /* on fe->backlog when bl_pprev is set */
  int closing;
  uv_shutdown_t shutdown_req;
  /* Draining after an oversize line (see fl_conn_drain). */
  int draining;
  size_t drained;
  uv_timer_t drain_timer;
  int handles; /* open handles (pipe, drain timer); freed at 0 */
};

typedef struct fl_wreq {
  uv_write_t req;
  fl_conn *conn;
  char *line;
  size_t len;
  void (*done)(void *arg, int status); /* write_then's, or NULL */
  void *arg;
} fl_wreq;

static void fl_conn_close(fl_conn *c);
static void fl_conn_pace(fl_conn *c);
static int fl_conn_parse_off_loop(fl_conn *c);
static void fl_alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
static void fl_read_cb(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf);

/* ---- fairness: turns and backpressure ------------------------------------------ */

static void fl_backlog_remove(fl_conn *c) {
  if (!c->bl_pprev)
    return;
  fl_server *fe = c->fe;
  *c->bl_pprev = c->bl_next;
  if (c->bl_next)
    c->bl_next->bl_pprev = c->bl_pprev;
  else
    fe->backlog_tail = c->bl_pprev;
  c->bl_next = NULL;
  c->bl_pprev = NULL;
  fe->nbacklog--;
}

static void fl_backlog_cb(uv_idle_t *h);

static void fl_backlog_add(fl_conn *c) {
  fl_server *fe = c->fe;
  if (c->bl_pprev)
    return;
  c->bl_next = NULL;
  c->bl_pprev = fe->backlog_tail;
  *fe->backlog_tail = c;
  fe->backlog_tail = &c->bl_next;
  fe->nbacklog++;
  if (!fe->backlog_active && fe->listening && uv_idle_start(&fe->backlog_idle, fl_backlog_cb) == 0)
    fe->backlog_active = 1;
}

/* Serves buffered lines of c: at most max lines (0 = no limit) and, in
 * bytes, what *budget has left (NULL = no limit), which it spends. A line
 * over what is left waits, kept in c->line, unless big_ok and nothing was
 * served yet: then it goes alone. Sets c->more when lines may be left. */
static size_t fl_conn_serve(fl_conn *c, unsigned max, size_t *budget, int big_ok) {
  unsigned n = 0;
  size_t served = 0;
  c->more = 0;
  while (!c->closing) {
    if (max && n == max) {
      c->more = 1;
      return served;
    }
    if (!c->line && fl_linebuf_next(&c->lb, &c->line, &c->line_len) != 1)
      return served;
    if (c->line_len > FL_LINE_OFF_LOOP && fl_conn_parse_off_loop(c) == 0)
      return served;
    if (budget && c->line_len > *budget && !(big_ok && n == 0)) {
      c->more = 1;
      return served;
    }
    char *line = c->line;
    size_t len = c->line_len;
    c->line = NULL;
    if (budget)
      *budget = len < *budget ? *budget - len : 0;
    fl_session_line(c->session, line, len);
    fl_free(line);
    served += len;
    n++;
  }
  return served;
}

/* Reads from c while it has no lines waiting for a turn and has read its
 * answers down below the pause mark; else not, until that changes. */
static void fl_conn_pace(fl_conn *c) {
  if (c->closing)
    return;
  if (c->more)
    fl_backlog_add(c);
  int want = !c->more && !c->parsing && c->outq < FL_OUTQ_PAUSE;
  if (want && !c->reading) {
    if (uv_read_start((uv_stream_t *)&c->pipe, fl_alloc_cb, fl_read_cb) == 0)
      c->reading = 1;
  } else if (!want && c->reading) {
    uv_read_stop((uv_stream_t *)&c->pipe);
    c->reading = 0;
  }
}

/* One pass over the backlog, once per loop iteration: each client queued
 * when it starts gets a turn, in order, until FL_BYTES_PER_PASS of lines
 * were served; the rest keep their place for the next pass. A turn serves
 * at least one line, so every line is served in the end. */
static void fl_backlog_cb(uv_idle_t *h) {
  fl_server *fe = h->data;
  size_t budget = FL_BYTES_PER_PASS;
  uint64_t start = uv_hrtime();
  for (size_t turns = fe->nbacklog, n = 0; turns > 0 && fe->backlog && budget > 0; turns--, n++) {
    if (n > 0 && uv_hrtime() - start >= FL_PASS_NS)
      break;
    fl_conn *c = fe->backlog;
    fl_backlog_remove(c);
    c->turn_read = 0;
    size_t quantum = FL_BYTES_PER_TURN;
    size_t spent = fl_conn_serve(c, FL_LINES_PER_TURN, &quantum, 1);
    budget = spent < budget ? budget - spent : 0;
    fl_conn_pace(c);
  }
  if (!fe->backlog && fe->backlog_active) {
    uv_idle_stop(&fe->backlog_idle);
    fe->backlog_active = 0;
  }
}

static void fl_poll_prepare_cb(uv_prepare_t *h) {
  fl_server *fe = h->data;
  fe->poll_start = 0;
}

static void fl_trim_cb(uv_timer_t *t) {
  (void)t;
  fl_alloc_trim();
}

/* Drops one of c's handles (or its parse job); the last one frees it. */
static void fl_conn_unref(fl_conn *c) {
  if (--c->handles > 0)
    return;
  fl_server *fe = c->fe;
  if (c->big && fe->listening && !uv_is_active((uv_handle_t *)&fe->trim_timer))
    uv_timer_start(&fe->trim_timer, fl_trim_cb, FL_TRIM_DELAY_MS, 0);
  fl_linebuf_free(&c->lb);
  fl_free(c->line);
  fl_free(c);
}

static void fl_conn_closed_cb(uv_handle_t *h) { fl_conn_unref(h->data); }

/* ---- big lines: parsed on the thread pool ----------------------------------------- */

/* A line over FL_LINE_OFF_LOOP: jansson takes about 12 ms per MiB, which on
 * the loop thread every other client would wait for. The parse runs on
 * libuv's thread pool instead (it touches no session), and the result is
 * dispatched on the loop when it is done. The connection reads nothing and
 * serves no other line meanwhile, so its lines keep their order. */
typedef struct fl_parse_job {
  uv_work_t req;
  fl_conn *conn;
  char *line;
  size_t len;
  fl_session_parsed parsed;
} fl_parse_job;

static void fl_parse_work(uv_work_t *req) {
  fl_parse_job *job = req->data;
#ifdef __linux__
  /* The pool threads run at a lower priority than the loop: on a busy
   * machine a big line waits for a core, not the clients the loop serves.
   * (Only this thread: Linux applies a thread id's nice to that thread.) */
  static _Thread_local int niced;
  if (!niced) {
    niced = 1;
    setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), FL_PARSE_NICE);
  }
#endif
  fl_session_parse(job->line, job->len, &job->parsed);
}

static void fl_parse_done(uv_work_t *req, int status) {
  fl_parse_job *job = req->data;
  fl_conn *c = job->conn;
  c->parsing = 0;
  if (status == 0 && !c->closing && c->session)
    fl_session_dispatch(c->session, &job->parsed);
  else
    fl_session_parsed_free(&job->parsed);
  fl_free(job->line);
  fl_free(job);
  if (!c->closing) {
    c->more = 1; /* what else it sent waits for its turn */
    fl_conn_pace(c);
  }
  fl_conn_unref(c);
}

/* Hands c->line to the pool. 0 when queued (the line now belongs to the
 * job), else the caller parses it itself. */
static int fl_conn_parse_off_loop(fl_conn *c) {
  fl_parse_job *job = fl_calloc(1, sizeof *job);
  if (!job)
    return FL_ENOMEM;
  job->req.data = job;
  job->conn = c;
  job->line = c->line;
  job->len = c->line_len;
  if (uv_queue_work(c->pipe.loop, &job->req, fl_parse_work, fl_parse_done) != 0) {
    fl_free(job);
    return FL_ENOMEM;
  }
  c->line = NULL;
  c->parsing = 1;
  c->more = 0;
  c->handles++;
  return 0;
}

/* Hard close: pending writes are cancelled. */
static void fl_conn_close(fl_conn *c) {
  if (c->closing == 2)
    return;
  int was_closing = c->closing;
  c->closing = 2;
  fl_backlog_remove(c);
  fl_session_free(&c->session);
  if (c->pprev) {
    *c->pprev = c->next;
    if (c->next)
      c->next->pprev = c->pprev;
    c->pprev = NULL;
    c->fe->nconns--;
  }
  if (!was_closing || c->draining)
    uv_read_stop((uv_stream_t *)&c->pipe);
  if (c->draining && !uv_is_closing((uv_handle_t *)&c->drain_timer))
    uv_close((uv_handle_t *)&c->drain_timer, fl_conn_closed_cb);
  if (!uv_is_closing((uv_handle_t *)&c->pipe))
    uv_close((uv_handle_t *)&c->pipe, fl_conn_closed_cb);
}

static void fl_conn_shutdown_cb(uv_shutdown_t *req, int status) {
  fl_conn *c = req->data;
  /* A draining connection closes when the peer does, or on its timer. */
  if (!c->draining || status < 0)
    fl_conn_close(c);
}

static void fl_drain_timeout_cb(uv_timer_t *t) { fl_conn_close(t->data); }

/* Ends a connection whose peer broke the protocol mid-line (an oversize
 * line): the session ends now, the queued error line is flushed and the
 * write side shut, but reading goes on, dropping what arrives, until the
 * peer closes, FL_DRAIN_MAX_BYTES more arrive, or FL_DRAIN_MS pass. Closing
 * with unread input at once would make the kernel reset the connection, and
 * the peer could lose the error line before reading it. */
static void fl_conn_drain(fl_conn *c) {
  if (c->closing)
    return;
  c->closing = 1;
  c->draining = 1;
  fl_session_free(&c->session);
  fl_linebuf_free(&c->lb);
  fl_free(c->line);
  c->line = NULL;
  uv_timer_init(c->pipe.loop, &c->drain_timer);
  c->drain_timer.data = c;
  c->handles++;
  uv_timer_start(&c->drain_timer, fl_drain_timeout_cb, FL_DRAIN_MS, 0);
  c->shutdown_req.data = c;
  if (uv_shutdown(&c->shutdown_req, (uv_stream_t *)&c->pipe, fl_conn_shutdown_cb) != 0)
    fl_conn_close(c);
}

/* Soft close: the session ends now, queued writes are flushed, then close. */
static void fl_conn_finish(fl_conn *c) {
  if (c->closing)
    return;
  c->closing = 1;
  fl_session_free(&c->session);
  uv_read_stop((uv_stream_t *)&c->pipe);
  c->reading = 0;
  c->shutdown_req.data = c;
  if (uv_shutdown(&c->shutdown_req, (uv_stream_t *)&c->pipe, fl_conn_shutdown_cb) != 0)
    fl_conn_close(c);
}

static void fl_write_cb(uv_write_t *req, int status) {
  fl_wreq *w = (fl_wreq *)req;
  fl_conn *c = w->conn;
  c->outq -= w->len;
  fl_big_free(w->line); /* a big one is kept for the next (common/alloc.h) */
  if (w->done)
    w->done(w->arg, status < 0 ? FL_EPROTO : 0);
  fl_free(w);
  if (status < 0 && status != UV_ECANCELED)
    fl_conn_close(c);
  else
    fl_conn_pace(c); /* below the pause mark again: read on */
}

/* A line of megabytes (a fleet_list of thousands) goes through the
 * system's default send buffer (about 200 KiB) in a dozen parts, each a
 * wake-up of fleetd and of its client, and on a busy machine each can wait
 * for a core. So a client about to get such a line has its send buffer
 * raised to hold it whole (up to FL_SNDBUF_MAX; the system's
 * net.core.wmem_max caps it too), once per connection and size. A client
 * that stops reading can then leave that much more in the kernel, beside
 * what FL_MAX_OUTQ lets queue in fleetd. */
static void fl_conn_sndbuf(fl_conn *c, size_t len) {
  size_t want = len > FL_SNDBUF_MAX ? FL_SNDBUF_MAX : len;
  if (len < FL_SNDBUF_RAISE_AT || want <= c->sndbuf)
    return;
  uv_os_fd_t fd;
  int v = (int)want;
  if (uv_fileno((uv_handle_t *)&c->pipe, &fd) == 0 &&
      setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof v) == 0)
    c->sndbuf = want;
}

static void fl_conn_write_then(void *conn, char *line, size_t len,
                               void (*done)(void *arg, int status), void *arg) {
  fl_conn *c = conn;
  if (c->closing == 2) {
    fl_free(line);
    if (done)
      done(arg, FL_EPROTO);
    return;
  }
  if (c->outq + len > FL_MAX_OUTQ) {
    fl_mcp_counters_bump(c->fe->counters, FL_MCP_C_SESSIONS_DROPPED_SLOW);
    fl_warn(NULL, "client is not reading (%zu bytes unsent); disconnecting it", c->outq);
    fl_free(line);
    if (done)
      done(arg, FL_EPROTO);
    fl_conn_close(c);
    return;
  }
  fl_wreq *w = fl_calloc(1, sizeof *w);
  if (!w) {
    fl_free(line);
    if (done)
      done(arg, FL_ENOMEM);
    fl_conn_close(c);
    return;
  }
  w->conn = c;
  w->line = line;
  w->len = len;
  fl_conn_sndbuf(c, len);
  uv_buf_t buf = uv_buf_init(line, (unsigned)len);
  int rc = uv_write(&w->req, (uv_stream_t *)&c->pipe, &buf, 1, fl_write_cb);
  if (rc) {
    fl_free(line);
    fl_free(w);
    if (done)
      done(arg, FL_EPROTO);
    fl_conn_close(c);
    return;
  }
  w->done = done; /* from here fl_write_cb says how it went */
  w->arg = arg;
  c->outq += len;
  if (c->outq > FL_OUTQ_PAUSE)
    c->big = 1;
}

static void fl_conn_write(void *conn, char *line, size_t len) {
  fl_conn_write_then(conn, line, len, NULL, NULL);
}

static const fl_session_io fl_conn_io = {.write = fl_conn_write, .write_then = fl_conn_write_then};

static void fl_alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  fl_conn *c = h->data;
  if (c->fe->readbuf_busy) {
    /* Cannot happen on one loop thread; refuse rather than share. */
    *buf = uv_buf_init(NULL, 0);
    return;
  }
  c->fe->readbuf_busy = 1;
  *buf = uv_buf_init(c->fe->readbuf, sizeof c->fe->readbuf);
}

static void fl_read_cb(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf) {
  fl_conn *c = stream->data;
  c->fe->readbuf_busy = 0;
  if (nread == UV_EOF) {
    if (c->draining)
      fl_conn_close(c);
    else
      fl_conn_finish(c);
    return;
  }
  if (nread < 0) {
    fl_conn_close(c);
    return;
  }
  if (c->draining) {
    c->drained += (size_t)nread;
    if (c->drained > FL_DRAIN_MAX_BYTES)
      fl_conn_close(c);
    return;
  }
  if (nread == 0 || c->closing)
    return;
  int rc = fl_linebuf_feed(&c->lb, buf->base, (size_t)nread);
  if (c->lb.cap > FL_LINE_OFF_LOOP)
    c->big = 1;
  /* Lines complete before an overflow are still served, all of them (one
   * read's worth at most: reading stops while lines wait for a turn). Else
   * a light client is served at once, and one with more buffered waits for
   * its turn of the backlog. */
  if (rc == FL_ETOOBIG) {
    fl_conn_serve(c, 0, NULL, 0);
  } else {
    fl_server *fe = c->fe;
    uint64_t now = uv_hrtime();
    if (!fe->poll_start)
      fe->poll_start = now;
    size_t buffered = c->lb.len - c->lb.head + (c->line ? c->line_len : 0);
    size_t budget = FL_BYTES_INLINE;
    if (buffered <= FL_BYTES_INLINE && now - fe->poll_start < FL_POLL_SERVE_NS)
      fl_conn_serve(c, FL_LINES_PER_TURN, &budget, 0);
    else
      c->more = 1;
  }
  if (c->closing)
    return;
  /* A client sending fast (a long line) yields after FL_READ_PER_TURN: it
   * reads on at its next turn, after everyone else's reads. */
  c->turn_read += (size_t)nread;
  if (c->turn_read >= FL_READ_PER_TURN && !c->parsing)
    c->more = 1;
  if (rc == 0) {
    fl_conn_pace(c);
  } else if (rc == FL_ETOOBIG) {
    fl_warn(NULL, "client sent a line over %u bytes; closing its connection", FL_MAX_LINE);
    fl_session_oversize(c->session);
    fl_conn_drain(c);
  } else if (rc) {
    fl_conn_close(c);
  }
}

/* ---- running out of file descriptors ---------------------------------------------- */

/* Does the connection on fd leave fewer than FL_FD_RESERVE descriptors
 * free? The kernel hands out the lowest free number, so every descriptor
 * below fd is taken: at most fd_limit - fd - 1 are free. */
static int fl_fds_short(const fl_server *fe, int fd) {
  return fe->fd_limit > 0 && (long)fd >= fe->fd_limit - FL_FD_RESERVE;
}

/* Counts a connection refused for want of descriptors and logs it, once
 * per FL_FD_WARN_MS, with how many were refused since the last time. */
static void fl_fds_note(fl_server *fe, const char *what) {
  fl_mcp_counters_bump(fe->counters, FL_MCP_C_SESSIONS_REFUSED_FDS);
  fe->fd_refused_since++;
  long long now = fl_now_ms();
  if (fe->fd_warned_ms && now - fe->fd_warned_ms < FL_FD_WARN_MS)
    return;
  fl_error(NULL,
           "out of file descriptors (%s; the limit is %ld, %d kept in reserve): refusing new "
           "connections, %lu so far; raise the limit (ulimit -n, LimitNOFILE=) or close clients",
           what, fe->fd_limit, FL_FD_RESERVE, fe->fd_refused_since);
  fe->fd_warned_ms = now;
  fe->fd_refused_since = 0;
}

/* Tells the peer on fd why it is refused (one line, without blocking: it
 * fits an empty socket buffer), then counts and logs it. */
static void fl_fds_refuse(fl_server *fe, int fd) {
  char *line = fl_rpc_error(NULL, FL_RPC_INTERNAL_ERROR,
                            "fleetd is out of file descriptors and refuses new connections; "
                            "try again later",
                            NULL);
  if (line) {
    ssize_t w = send(fd, line, strlen(line), MSG_DONTWAIT | MSG_NOSIGNAL);
    (void)w;
    fl_free(line);
  }
  fl_fds_note(fe, "a connection came near the limit");
}

static void fl_on_connection(uv_stream_t *server, int status) {
  fl_server *fe = server->data;
  if (status < 0) {
    /* libuv already accepted and closed what was pending when the accept
     * itself ran out of descriptors (its reserve descriptor): count it. */
    if (status == UV_EMFILE || status == UV_ENFILE)
      fl_fds_note(fe, uv_strerror(status));
    else
      fl_warn(NULL, "accept failed: %s", uv_strerror(status));
    return;
  }
  fl_conn *c = fl_calloc(1, sizeof *c);
  if (!c) {
    fl_mcp_counters_bump(fe->counters, FL_MCP_C_SESSIONS_REFUSED);
    return;
  }
  c->fe = fe;
  uv_pipe_init(fe->loop, &c->pipe, 0);
  c->pipe.data = c;
  c->handles = 1;
  fl_linebuf_init(&c->lb, FL_MAX_LINE);
  if (uv_accept(server, (uv_stream_t *)&c->pipe) != 0) {
    c->closing = 2;
    uv_close((uv_handle_t *)&c->pipe, fl_conn_closed_cb);
    return;
  }
  uv_os_fd_t fd;
  if (uv_fileno((uv_handle_t *)&c->pipe, &fd) == 0 && fl_fds_short(fe, fd)) {
    fl_fds_refuse(fe, fd);
    c->closing = 2;
    uv_close((uv_handle_t *)&c->pipe, fl_conn_closed_cb);
    return;
  }
  struct ucred cred = {.pid = 0, .uid = (uid_t)-1, .gid = (gid_t)-1};
  socklen_t clen = sizeof cred;
  int ok = uv_fileno((uv_handle_t *)&c->pipe, &fd) == 0 &&
           getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) == 0 && cred.uid == geteuid();
  if (!ok || fe->nconns >= FL_MAX_CLIENTS) {
    fl_mcp_counters_bump(fe->counters, FL_MCP_C_SESSIONS_REFUSED);
    if (!ok)
      fl_warn(NULL, "refused a connection from uid %ld: only uid %ld may use this socket",
              (long)cred.uid, (long)geteuid());
    else
      fl_warn(NULL, "refused a connection: %d clients already connected", FL_MAX_CLIENTS);
    c->closing = 2;
    uv_close((uv_handle_t *)&c->pipe, fl_conn_closed_cb);
    return;
  }
  c->session = fl_session_new(fe->gw, fe->counters, &fl_conn_io, c);
  if (!c->session) {
    c->closing = 2;
    uv_close((uv_handle_t *)&c->pipe, fl_conn_closed_cb);
    return;
  }
  c->next = fe->conns;
  if (fe->conns)
    fe->conns->pprev = &c->next;
  c->pprev = &fe->conns;
  fe->conns = c;
  fe->nconns++;
  fl_mcp_counters_bump(fe->counters, FL_MCP_C_SESSIONS_ACCEPTED);
  fl_conn_pace(c);
}

/* Is something answering on path? (A stale file from a crash is not.) */
static int fl_socket_alive(const char *path) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return 0;
  struct sockaddr_un sa;
  memset(&sa, 0, sizeof sa);
  sa.sun_family = AF_UNIX;
  snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
  int alive = connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
  close(fd);
  return alive;
}

int fl_server_start(uv_loop_t *loop, fl_gw *gw, const char *socket_path, fl_server **out, char *err,
                    size_t errlen) {
  *out = NULL;
  if (strlen(socket_path) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
    fl_errf(err, errlen,
            "socket path %s is too long for a Unix socket (max %zu): use a "
            "shorter --socket",
            socket_path, sizeof(((struct sockaddr_un *)0)->sun_path) - 1);
    return -ENAMETOOLONG;
  }
  int rc = fl_mcp_init();
  if (rc) {
    fl_errf(err, errlen, "the embedded tool schemas do not parse");
    return rc;
  }
  char dir[FL_MAX_PATH + 1];
  snprintf(dir, sizeof dir, "%s", socket_path);
  char *slash = strrchr(dir, '/');
  if (slash && slash != dir) {
    *slash = '\0';
    if ((rc = fl_paths_mkdir_p(dir, 0700))) {
      fl_errf(err, errlen, "cannot create %s: %s", dir, strerror(-rc));
      return rc;
    }
  }
  if (fl_socket_alive(socket_path)) {
    fl_errf(err, errlen,
            "another fleetd is already listening on %s (stop it, or give this "
            "one its own --socket and --state-dir)",
            socket_path);
    return -EADDRINUSE;
  }
  unlink(socket_path);

  fl_server *fe = fl_calloc(1, sizeof *fe);
  if (fe)
    fe->counters = fl_mcp_counters_new();
  if (!fe || !fe->counters) {
    fl_free(fe);
    fl_errf(err, errlen, "out of memory");
    return FL_ENOMEM;
  }
  fe->loop = loop;
  fe->gw = gw;
  struct rlimit nofile;
  if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY)
    fe->fd_limit = (long)nofile.rlim_cur;
  snprintf(fe->path, sizeof fe->path, "%s", socket_path);
  uv_pipe_init(loop, &fe->listener, 0);
  fe->listener.data = fe;
  uv_idle_init(loop, &fe->backlog_idle);
  fe->backlog_idle.data = fe;
  uv_timer_init(loop, &fe->trim_timer);
  uv_unref((uv_handle_t *)&fe->trim_timer);
  uv_prepare_init(loop, &fe->poll_prepare);
  fe->poll_prepare.data = fe;
  uv_prepare_start(&fe->poll_prepare, fl_poll_prepare_cb);
  uv_unref((uv_handle_t *)&fe->poll_prepare);
  fe->backlog_tail = &fe->backlog;
  /* Create the socket file 0600 from the start: no window where others
   * could connect. */
  mode_t old = umask(0177);
  rc = uv_pipe_bind(&fe->listener, socket_path);
  umask(old);
  if (rc == 0)
    rc = uv_listen((uv_stream_t *)&fe->listener, FL_BACKLOG, fl_on_connection);
  if (rc) {
    fl_errf(err, errlen, "cannot listen on %s: %s", socket_path, uv_strerror(rc));
    uv_close((uv_handle_t *)&fe->listener, NULL);
    uv_close((uv_handle_t *)&fe->backlog_idle, NULL);
    uv_close((uv_handle_t *)&fe->trim_timer, NULL);
    uv_close((uv_handle_t *)&fe->poll_prepare, NULL);
    uv_run(loop, UV_RUN_NOWAIT);
    fl_mcp_counters_free(&fe->counters);
    fl_free(fe);
    return rc;
  }
  chmod(socket_path, 0600);
  fe->listening = 1;
  *out = fe;
  return 0;
}

void fl_server_stop(fl_server *fe) {
  if (!fe)
    return;
  if (fe->listening) {
    fe->listening = 0;
    uv_close((uv_handle_t *)&fe->listener, NULL);
    uv_close((uv_handle_t *)&fe->backlog_idle, NULL);
    uv_close((uv_handle_t *)&fe->trim_timer, NULL);
    uv_close((uv_handle_t *)&fe->poll_prepare, NULL);
    unlink(fe->path);
  }
  fl_conn *c = fe->conns;
  while (c) {
    fl_conn *next = c->next;
    if (c->draining)
      fl_conn_close(c);
    else
      fl_conn_finish(c);
    c = next;
  }
}

void fl_server_free(fl_server **fep) {
  if (!fep || !*fep)
    return;
  fl_mcp_cleanup();
  fl_mcp_counters_free(&(*fep)->counters);
  fl_free(*fep);
  *fep = NULL;
}

json_t *fl_server_status(void *ctx) {
  fl_server *fe = ctx;
  json_t *status = fl_gw_status(fe->gw);
  if (status && fl_mcp_counters_to_json(fe->counters, json_object_get(status, "counters")) != 0) {
    json_decref(status);
    status = NULL;
  }
  return status;
}
