/* http_serve.c — libmicrohttpd on its own thread, answered from the loop
 * (see http_serve.h).
 *
 * What a hostile client could do to it is bounded here (the limits are in
 * common/limits.h): a request must name this server in its Host header (a
 * web page that rebinds a name of its own to this address gets 421); a
 * connection has FL_HTTP_HEADER_DEADLINE_MS to send its headers, and when
 * more than FL_HTTP_MAX_WAITING connections wait for theirs the oldest is
 * dropped (once past a short grace), so trickling clients never keep a
 * fresh request from being read;
 * requests for the loop, event streams and one client address each have a
 * budget, and a request past one is answered 503 at once. Every connection
 * is tracked from accept to close (fl_http_conn) for that. */
#include "gateway/http/http_serve.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/limits.h"
#include "common/log.h"
#include "common/time.h"
#include "common/xqueue.h"
#include "gateway/http/http_libs.h"

/* libmicrohttpd, loaded by the first server's start (http_libs.h). Set
 * once, before any server thread exists, and never again. */
static const fl_mhd_fns *fl_mhd;

/* An idle connection (no byte either way) is closed after this; the
 * header deadline is shorter and is what a trickling client meets. */
#define FL_HTTP_TIMEOUT_S 15

/* One accepted connection, from accept to close. Under the server's mu. */
typedef struct fl_http_conn {
  struct fl_http_conn *prev, *next;
  int fd;
  struct sockaddr_storage peer; /* the client's address */
  long long since_ms;           /* monotonic: when it began waiting for headers */
  int waiting;                  /* no whole request's headers yet (or idle between two) */
  int dropped;                  /* shut down: past the deadline, or the oldest waiting */
  int over;                     /* over FL_HTTP_MAX_PER_ADDR: its request gets 503 */
} fl_http_conn;

/* One open stream: bytes waiting to go out, filled by the loop and drained
 * by the server thread's content reader, under the server's mu. */
typedef struct fl_http_stream {
  struct fl_http_stream *next;
  fl_http_server *s;
  struct MHD_Connection *conn;
  char *buf;
  size_t len, cap;
  int suspended; /* nothing to send: parked until a push resumes it */
  int closing;   /* over its cap, or the server stops: end it */
} fl_http_stream;

struct fl_http_server {
  fl_http_stream *streams;
  size_t nstreams;
  struct MHD_Daemon *d;
  fl_xqueue *q;
  pthread_mutex_t mu; /* guards stopping and each request's done/resume */
  int stopping;
  fl_http_route routes[FL_HTTP_MAX_ROUTES];
  size_t nroutes;
  char addr[80];
  char host[72]; /* the listen address's host part as a Host names it ("[::1]") */
  unsigned port; /* the port bound */
  int wildcard;  /* listening on 0.0.0.0 or [::] */
  fl_http_conn *conns;
  size_t nconns, nwaiting; /* nwaiting: waiting and not dropped */
  uv_timer_t sweep;
  int sweep_on;
  unsigned long long served, refused; /* refused: 503 for any budget */
  unsigned long long misdirected, dropped_slow;
};

/* One request, from the server thread to the loop and back. */
typedef struct fl_http_item {
  fl_http_server *s;
  struct MHD_Connection *conn;
  char *path;
  char *query;
  char *authorization;
  int done;
  fl_http_resp resp;
} fl_http_item;

static void fl_item_free(fl_http_item *it) {
  if (!it)
    return;
  fl_free(it->path);
  fl_free(it->query);
  fl_free(it->authorization);
  fl_free(it->resp.body);
  fl_free(it);
}

static void fl_answer_plain(fl_http_item *it, unsigned status, const char *text) {
  size_t n = strlen(text);
  it->resp.status = status;
  it->resp.content_type = "text/plain";
  it->resp.body = fl_malloc(n + 1);
  if (it->resp.body)
    memcpy(it->resp.body, text, n + 1);
  it->resp.len = it->resp.body ? n : 0;
}

/* Loop side: runs each waiting request's route and resumes it. */
static void fl_http_ready(void *ctx) {
  fl_http_server *s = ctx;
  void *items[16];
  size_t n;
  while ((n = fl_xqueue_pop(s->q, items, 16)) > 0) {
    for (size_t i = 0; i < n; i++) {
      fl_http_item *it = items[i];
      const fl_http_route *r = NULL;
      for (size_t k = 0; k < s->nroutes && !r; k++)
        if (strncmp(it->path, s->routes[k].prefix, strlen(s->routes[k].prefix)) == 0)
          r = &s->routes[k];
      if (!r) {
        fl_answer_plain(it, 404, "no such resource\n");
      } else {
        fl_http_req req = {it->path, it->query, it->authorization};
        r->handler(r->ctx, &req, &it->resp);
        if (!it->resp.status)
          fl_answer_plain(it, 500, "no answer\n");
      }
      s->served++;
      pthread_mutex_lock(&s->mu);
      it->done = 1;
      fl_mhd->resume_connection(it->conn);
      pthread_mutex_unlock(&s->mu);
    }
  }
}

/* Collects the raw query back into one string (MHD splits it). */
typedef struct fl_qbuf {
  char buf[512];
  size_t len;
} fl_qbuf;

static enum MHD_Result fl_query_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                    const char *value) {
  (void)kind;
  fl_qbuf *q = cls;
  int w = snprintf(q->buf + q->len, sizeof q->buf - q->len, "%s%s=%s", q->len ? "&" : "", key,
                   value ? value : "");
  if (w > 0 && (size_t)w < sizeof q->buf - q->len)
    q->len += (size_t)w;
  return MHD_YES;
}

static void fl_stream_unlink(fl_http_stream *st) {
  for (fl_http_stream **pp = &st->s->streams; *pp; pp = &(*pp)->next) {
    if (*pp == st) {
      *pp = st->next;
      st->s->nstreams--;
      return;
    }
  }
}

/* Server thread: what a stream has to send, or a park until there is more. */
static ssize_t fl_stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
  (void)pos;
  fl_http_stream *st = cls;
  fl_http_server *s = st->s;
  ssize_t n = 0;
  pthread_mutex_lock(&s->mu);
  if (st->len) {
    n = (ssize_t)(st->len < max ? st->len : max);
    memcpy(buf, st->buf, (size_t)n);
    memmove(st->buf, st->buf + n, st->len - (size_t)n);
    st->len -= (size_t)n;
  } else if (st->closing || s->stopping) {
    n = MHD_CONTENT_READER_END_OF_STREAM;
  } else {
    st->suspended = 1;
    fl_mhd->suspend_connection(st->conn);
  }
  pthread_mutex_unlock(&s->mu);
  return n;
}

static void fl_stream_free(void *cls) {
  fl_http_stream *st = cls;
  pthread_mutex_lock(&st->s->mu);
  fl_stream_unlink(st);
  pthread_mutex_unlock(&st->s->mu);
  fl_free(st->buf);
  fl_free(st);
}

/* Turns the answered request into a stream. Server thread. */
static enum MHD_Result fl_queue_stream(fl_http_server *s, struct MHD_Connection *conn,
                                       fl_http_resp *r) {
  fl_http_stream *st = fl_calloc(1, sizeof *st);
  if (!st)
    return MHD_NO;
  st->s = s;
  st->conn = conn;
  st->buf = r->body; /* the first bytes */
  st->len = st->cap = r->len;
  r->body = NULL;
  r->len = 0;
  struct MHD_Response *mr = fl_mhd->create_response_from_callback(
      MHD_SIZE_UNKNOWN, 4096, fl_stream_read, st, fl_stream_free);
  if (!mr) {
    fl_free(st->buf);
    fl_free(st);
    return MHD_NO;
  }
  pthread_mutex_lock(&s->mu);
  st->next = s->streams;
  s->streams = st;
  s->nstreams++;
  pthread_mutex_unlock(&s->mu);
  fl_mhd->add_response_header(mr, "Content-Type", r->content_type ? r->content_type : "text/plain");
  fl_mhd->add_response_header(mr, "Cache-Control", "no-store");
  enum MHD_Result rc = fl_mhd->queue_response(conn, r->status, mr);
  fl_mhd->destroy_response(mr);
  return rc;
}

size_t fl_http_server_push(fl_http_server *s, const char *data, size_t len) {
  if (!s)
    return 0;
  pthread_mutex_lock(&s->mu);
  for (fl_http_stream *st = s->streams; st; st = st->next) {
    if (st->closing)
      continue;
    if (st->len + len > FL_HTTP_STREAM_CAP) {
      st->closing = 1; /* a reader this slow loses its stream, not the daemon's memory */
    } else {
      if (st->len + len > st->cap) {
        size_t ncap = st->cap ? st->cap : 1024;
        while (ncap < st->len + len)
          ncap *= 2;
        char *nb = fl_realloc(st->buf, ncap);
        if (!nb) {
          st->closing = 1;
          goto wake;
        }
        st->buf = nb;
        st->cap = ncap;
      }
      memcpy(st->buf + st->len, data, len);
      st->len += len;
    }
  wake:
    if (st->suspended) {
      st->suspended = 0;
      fl_mhd->resume_connection(st->conn);
    }
  }
  size_t n = s->nstreams;
  pthread_mutex_unlock(&s->mu);
  return n;
}

size_t fl_http_server_streams(fl_http_server *s) {
  if (!s)
    return 0;
  pthread_mutex_lock(&s->mu);
  size_t n = s->nstreams;
  pthread_mutex_unlock(&s->mu);
  return n;
}

static enum MHD_Result fl_queue_resp(struct MHD_Connection *conn, const fl_http_resp *r) {
  struct MHD_Response *mr = fl_mhd->create_response_from_buffer(
      r->len, r->body ? r->body : (void *)"", MHD_RESPMEM_MUST_COPY);
  if (!mr)
    return MHD_NO;
  fl_mhd->add_response_header(mr, "Content-Type", r->content_type ? r->content_type : "text/plain");
  enum MHD_Result rc = fl_mhd->queue_response(conn, r->status, mr);
  fl_mhd->destroy_response(mr);
  return rc;
}

static enum MHD_Result fl_plain_now(struct MHD_Connection *conn, unsigned status,
                                    const char *text) {
  fl_http_resp r = {status, "text/plain", (char *)text, strlen(text), 0};
  return fl_queue_resp(conn, &r);
}

/* A refusal after which the connection is closed. */
static enum MHD_Result fl_refuse_now(struct MHD_Connection *conn, unsigned status,
                                     const char *text) {
  struct MHD_Response *mr =
      fl_mhd->create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);
  if (!mr)
    return MHD_NO;
  fl_mhd->add_response_header(mr, "Content-Type", "text/plain");
  fl_mhd->add_response_header(mr, "Connection", "close");
  enum MHD_Result rc = fl_mhd->queue_response(conn, status, mr);
  fl_mhd->destroy_response(mr);
  return rc;
}

/* ---- connections: the header deadline, the waiting and per-address budgets */

static int fl_same_addr(const struct sockaddr_storage *a, const struct sockaddr_storage *b) {
  if (a->ss_family != b->ss_family)
    return 0;
  if (a->ss_family == AF_INET)
    return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
           ((const struct sockaddr_in *)b)->sin_addr.s_addr;
  if (a->ss_family == AF_INET6)
    return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
                  &((const struct sockaddr_in6 *)b)->sin6_addr, sizeof(struct in6_addr)) == 0;
  return 0;
}

/* Shuts c's socket: the server thread sees it closed and ends it. Under mu
 * (c is still open: fl_notify unlinks it before libmicrohttpd closes it). */
static void fl_conn_drop(fl_http_server *s, fl_http_conn *c) {
  if (c->dropped)
    return;
  if (c->waiting)
    s->nwaiting--;
  c->dropped = 1;
  s->dropped_slow++;
  shutdown(c->fd, SHUT_RDWR);
}

/* While more than FL_HTTP_MAX_WAITING connections wait for their headers,
 * drops the one that has waited longest, if it has waited past the grace
 * (one just accepted may have its headers in flight). Under mu. */
static void fl_conn_trim(fl_http_server *s, long long now) {
  while (s->nwaiting > FL_HTTP_MAX_WAITING) {
    fl_http_conn *oldest = NULL;
    for (fl_http_conn *o = s->conns; o; o = o->next)
      if (o->waiting && !o->dropped && (!oldest || o->since_ms <= oldest->since_ms))
        oldest = o;
    if (!oldest || now - oldest->since_ms < FL_HTTP_WAIT_GRACE_MS)
      return;
    fl_conn_drop(s, oldest);
  }
}

/* c starts waiting for a request's headers (new, or done with one). */
static void fl_conn_wait(fl_http_server *s, fl_http_conn *c) {
  c->since_ms = fl_mono_ms();
  if (c->waiting || c->dropped)
    return;
  c->waiting = 1;
  s->nwaiting++;
  fl_conn_trim(s, c->since_ms);
}

static void fl_conn_unwait(fl_http_server *s, fl_http_conn *c) {
  if (c->waiting && !c->dropped)
    s->nwaiting--;
  c->waiting = 0;
}

/* Server thread: a connection accepted or closed. */
static void fl_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                      enum MHD_ConnectionNotificationCode code) {
  fl_http_server *s = cls;
  if (code == MHD_CONNECTION_NOTIFY_STARTED) {
    fl_http_conn *c = fl_calloc(1, sizeof *c);
    const union MHD_ConnectionInfo *fd =
        fl_mhd->get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    const union MHD_ConnectionInfo *ad =
        fl_mhd->get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (!c || !fd) {
      fl_free(c);
      if (fd)
        shutdown(fd->connect_fd, SHUT_RDWR); /* untracked would escape the budgets */
      return;
    }
    c->fd = fd->connect_fd;
    if (ad && ad->client_addr)
      memcpy(&c->peer, ad->client_addr,
             ad->client_addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                                    : sizeof(struct sockaddr_in));
    pthread_mutex_lock(&s->mu);
    size_t same = 0;
    for (fl_http_conn *o = s->conns; o; o = o->next)
      same += fl_same_addr(&o->peer, &c->peer);
    c->over = same >= FL_HTTP_MAX_PER_ADDR;
    c->next = s->conns;
    if (s->conns)
      s->conns->prev = c;
    s->conns = c;
    s->nconns++;
    fl_conn_wait(s, c);
    pthread_mutex_unlock(&s->mu);
    *socket_context = c;
  } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
    fl_http_conn *c = *socket_context;
    if (!c)
      return;
    pthread_mutex_lock(&s->mu);
    fl_conn_unwait(s, c);
    if (c->prev)
      c->prev->next = c->next;
    else
      s->conns = c->next;
    if (c->next)
      c->next->prev = c->prev;
    s->nconns--;
    pthread_mutex_unlock(&s->mu);
    fl_free(c);
    *socket_context = NULL;
  }
}

static fl_http_conn *fl_conn_of(struct MHD_Connection *conn) {
  const union MHD_ConnectionInfo *i =
      fl_mhd->get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  return i ? i->socket_context : NULL;
}

/* Loop thread: drops the connections past the header deadline, and the
 * oldest past the waiting budget. */
static void fl_sweep(uv_timer_t *t) {
  fl_http_server *s = t->data;
  long long now = fl_mono_ms();
  pthread_mutex_lock(&s->mu);
  for (fl_http_conn *c = s->conns; c; c = c->next)
    if (c->waiting && !c->dropped && now - c->since_ms > FL_HTTP_HEADER_DEADLINE_MS)
      fl_conn_drop(s, c);
  fl_conn_trim(s, now);
  pthread_mutex_unlock(&s->mu);
}

/* ---- the Host rule -------------------------------------------------------- */

/* Is name a numeric address ("10.0.0.5", "[fd00::1]")? */
static int fl_is_ip_literal(const char *name) {
  unsigned char buf[sizeof(struct in6_addr)];
  size_t n = strlen(name);
  if (n > 2 && name[0] == '[' && name[n - 1] == ']' && n - 2 < 64) {
    char v6[64];
    memcpy(v6, name + 1, n - 2);
    v6[n - 2] = '\0';
    return inet_pton(AF_INET6, v6, buf) == 1;
  }
  return inet_pton(AF_INET, name, buf) == 1;
}

/* Does a Host header name this server: its own listen address, or a
 * loopback name, with its port (or none when the port is 80)? Anything
 * else is a name someone pointed at this address, as a web page that
 * rebinds its own name to 127.0.0.1 does. A request without Host (only
 * HTTP/1.0 may omit it; no browser does) is served. */
static int fl_host_ok(const fl_http_server *s, const char *host) {
  if (!host)
    return 1;
  char name[80];
  const char *colon;
  if (host[0] == '[') {
    const char *end = strchr(host, ']');
    if (!end)
      return 0;
    colon = end[1] == ':' ? end + 1 : NULL;
    if (end[1] && !colon)
      return 0;
  } else {
    colon = strchr(host, ':');
  }
  size_t nl = colon ? (size_t)(colon - host) : strlen(host);
  if (nl == 0 || nl >= sizeof name)
    return 0;
  memcpy(name, host, nl);
  name[nl] = '\0';
  unsigned long port = 80;
  if (colon) {
    char *endp;
    if (!isdigit((unsigned char)colon[1]) || strlen(colon + 1) > 5)
      return 0;
    port = strtoul(colon + 1, &endp, 10);
    if (*endp)
      return 0;
  }
  if (port != s->port)
    return 0;
  if (strcasecmp(name, s->host) == 0 || strcasecmp(name, "localhost") == 0 ||
      strcmp(name, "127.0.0.1") == 0 || strcasecmp(name, "[::1]") == 0)
    return 1;
  /* Listening on every address: a peer names the one it reached, which a
   * rebinding page cannot do (its page would then be of that origin). */
  return s->wildcard && fl_is_ip_literal(name);
}

/* Does the request carry a body (which a GET must not)? */
static int fl_has_body(struct MHD_Connection *conn) {
  const char *cl = fl_mhd->lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Length");
  const char *te = fl_mhd->lookup_connection_value(conn, MHD_HEADER_KIND, "Transfer-Encoding");
  return te || (cl && strspn(cl, "0 \t") != strlen(cl));
}

/* Server thread: the access handler, called again after a resume. */
static enum MHD_Result fl_access(void *cls, struct MHD_Connection *conn, const char *url,
                                 const char *method, const char *version, const char *upload,
                                 size_t *upload_size, void **con_cls) {
  (void)version;
  (void)upload;
  fl_http_server *s = cls;
  fl_http_item *it = *con_cls;
  if (it) {
    if (!it->done)
      return MHD_YES;
    if (it->resp.stream && it->resp.status == 200) {
      pthread_mutex_lock(&s->mu);
      int full = s->nstreams >= FL_HTTP_MAX_STREAMS;
      s->refused += (unsigned long long)full;
      pthread_mutex_unlock(&s->mu);
      if (full)
        return fl_refuse_now(conn, 503, "too many event streams open; try again later\n");
      return fl_queue_stream(s, conn, &it->resp);
    }
    return fl_queue_resp(conn, &it->resp);
  }
  /* The headers are all in: the connection stops waiting for them. */
  fl_http_conn *c = fl_conn_of(conn);
  int over = 0;
  pthread_mutex_lock(&s->mu);
  if (c) {
    fl_conn_unwait(s, c);
    over = c->over;
  }
  int misdirected = !fl_host_ok(s, fl_mhd->lookup_connection_value(conn, MHD_HEADER_KIND, "Host"));
  s->misdirected += (unsigned long long)misdirected;
  s->refused += (unsigned long long)(over && !misdirected);
  pthread_mutex_unlock(&s->mu);
  if (misdirected)
    return fl_refuse_now(conn, 421,
                         "misdirected: this server answers only its own address or a loopback "
                         "name in Host\n");
  if (over)
    return fl_refuse_now(conn, 503, "too many connections from your address; try again later\n");
  if (strcmp(method, "GET") != 0)
    return fl_plain_now(conn, 405, "only GET is served\n");
  if (*upload_size || fl_has_body(conn))
    return fl_refuse_now(conn, 400, "a GET carries no body\n");
  fl_qbuf q = {{0}, 0};
  fl_mhd->get_connection_values(conn, MHD_GET_ARGUMENT_KIND, fl_query_arg, &q);
  const char *auth = fl_mhd->lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
  it = fl_calloc(1, sizeof *it);
  if (!it || !(it->path = fl_strdup(url)) || !(it->query = fl_strdup(q.buf)) ||
      !(it->authorization = fl_strdup(auth ? auth : ""))) {
    fl_item_free(it);
    return fl_plain_now(conn, 503, "out of memory\n");
  }
  it->s = s;
  it->conn = conn;
  pthread_mutex_lock(&s->mu);
  if (s->stopping || fl_xqueue_push(s->q, it) != 0) {
    s->refused++;
    pthread_mutex_unlock(&s->mu);
    fl_item_free(it);
    return fl_plain_now(conn, 503, "busy; try again\n");
  }
  *con_cls = it;
  fl_mhd->suspend_connection(conn);
  pthread_mutex_unlock(&s->mu);
  return MHD_YES;
}

static void fl_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
  fl_http_server *s = cls;
  fl_item_free(*con_cls);
  *con_cls = NULL;
  /* Kept alive, it waits for its next request's headers, under the same
   * deadline; closed, fl_notify forgets it. */
  fl_http_conn *c = toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? fl_conn_of(conn) : NULL;
  if (c) {
    pthread_mutex_lock(&s->mu);
    fl_conn_wait(s, c);
    pthread_mutex_unlock(&s->mu);
  }
}

static void fl_mhd_log(void *cls, const char *fmt, va_list ap) {
  (void)cls;
  char line[512];
  vsnprintf(line, sizeof line, fmt, ap);
  line[strcspn(line, "\n")] = '\0';
  /* A client leaving an event stream is how streams end, not a fault. */
  if (strncmp(line, "Failed to send the chunked response body", 40) == 0)
    fl_debug(NULL, "http: %s", line);
  else
    fl_warn(NULL, "http: %s", line);
}

/* Parses "HOST:PORT" / "[V6]:PORT" into sa. 0 or FL_EINVAL. */
static int fl_parse_listen(const char *listen, struct sockaddr_storage *sa, socklen_t *salen) {
  char host[64];
  const char *colon;
  memset(sa, 0, sizeof *sa);
  if (!listen)
    return FL_EINVAL;
  if (listen[0] == '[') {
    const char *end = strchr(listen, ']');
    if (!end || end[1] != ':' || (size_t)(end - listen - 1) >= sizeof host)
      return FL_EINVAL;
    memcpy(host, listen + 1, (size_t)(end - listen - 1));
    host[end - listen - 1] = '\0';
    colon = end + 1;
  } else {
    colon = strrchr(listen, ':');
    if (!colon || (size_t)(colon - listen) >= sizeof host)
      return FL_EINVAL;
    memcpy(host, listen, (size_t)(colon - listen));
    host[colon - listen] = '\0';
  }
  char *endp;
  long port = strtol(colon + 1, &endp, 10);
  if (!colon[1] || *endp || port < 0 || port > 65535)
    return FL_EINVAL;
  struct sockaddr_in *v4 = (struct sockaddr_in *)sa;
  struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)sa;
  if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons((uint16_t)port);
    *salen = sizeof *v4;
  } else if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons((uint16_t)port);
    *salen = sizeof *v6;
  } else {
    return FL_EINVAL;
  }
  return 0;
}

int fl_http_server_start(uv_loop_t *loop, const char *listen, fl_http_server **out, char *err,
                         size_t errlen) {
  return fl_http_server_start_for(loop, "rooms.listen", listen, out, err, errlen);
}

int fl_http_server_start_for(uv_loop_t *loop, const char *key, const char *listen,
                             fl_http_server **out, char *err, size_t errlen) {
  *out = NULL;
  struct sockaddr_storage sa;
  socklen_t salen = 0;
  if (fl_parse_listen(listen, &sa, &salen) != 0) {
    fl_errf(err, errlen,
            "%s \"%s\" is not HOST:PORT with a numeric address (e.g. 127.0.0.1:7777 or "
            "[::1]:7777)",
            key, listen ? listen : "");
    return FL_EINVAL;
  }
  const fl_mhd_fns *mhd;
  int rc = fl_http_mhd(&mhd, err, errlen);
  if (rc)
    return rc;
  if (!fl_mhd)
    fl_mhd = mhd;
  fl_http_server *s = fl_calloc(1, sizeof *s);
  if (!s) {
    fl_errf(err, errlen, "out of memory");
    return FL_ENOMEM;
  }
  pthread_mutex_init(&s->mu, NULL);
  rc = fl_xqueue_new_to_loop(loop, FL_HTTP_QUEUE_CAP, fl_http_ready, s, &s->q);
  if (rc) {
    pthread_mutex_destroy(&s->mu);
    fl_free(s);
    fl_errf(err, errlen, "cannot make the HTTP queue: %s", fl_strerror(rc));
    return rc;
  }
  /* MHD_USE_AUTO: epoll on Linux, so a descriptor past FD_SETSIZE (fleetd
   * may hold a thousand MCP clients) is served too. */
  unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG |
                   (sa.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0);
  s->d = fl_mhd->start_daemon(flags, 0, NULL, NULL, fl_access, s, MHD_OPTION_EXTERNAL_LOGGER,
                              fl_mhd_log, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
                              MHD_OPTION_CONNECTION_LIMIT, (unsigned)FL_HTTP_MAX_CONNECTIONS,
                              MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)FL_HTTP_TIMEOUT_S,
                              MHD_OPTION_NOTIFY_COMPLETED, fl_completed, s,
                              MHD_OPTION_NOTIFY_CONNECTION, fl_notify, s, MHD_OPTION_END);
  if (!s->d) {
    fl_errf(err, errlen, "cannot serve %s %s (address in use, or not this machine's?)", key,
            listen);
    fl_xqueue_close(s->q, NULL);
    s->stopping = 2; /* free once the queue's handle closed */
    *out = s;
    return FL_ECONFIG;
  }
  const union MHD_DaemonInfo *info = fl_mhd->get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
  unsigned port = info ? info->port : 0;
  char host[64] = "";
  if (sa.ss_family == AF_INET6) {
    const struct in6_addr *a6 = &((struct sockaddr_in6 *)&sa)->sin6_addr;
    inet_ntop(AF_INET6, a6, host, sizeof host);
    snprintf(s->addr, sizeof s->addr, "[%s]:%u", host, port);
    snprintf(s->host, sizeof s->host, "[%s]", host);
    s->wildcard = IN6_IS_ADDR_UNSPECIFIED(a6);
  } else {
    inet_ntop(AF_INET, &((struct sockaddr_in *)&sa)->sin_addr, host, sizeof host);
    snprintf(s->addr, sizeof s->addr, "%s:%u", host, port);
    snprintf(s->host, sizeof s->host, "%s", host);
    s->wildcard = ((struct sockaddr_in *)&sa)->sin_addr.s_addr == htonl(INADDR_ANY);
  }
  s->port = port;
  uv_timer_init(loop, &s->sweep);
  s->sweep.data = s;
  uv_timer_start(&s->sweep, fl_sweep, FL_HTTP_SWEEP_MS, FL_HTTP_SWEEP_MS);
  uv_unref((uv_handle_t *)&s->sweep);
  s->sweep_on = 1;
  *out = s;
  return 0;
}

int fl_http_server_route(fl_http_server *s, const fl_http_route *r) {
  if (!s || !r || !r->prefix || !r->handler)
    return FL_EINVAL;
  if (s->nroutes >= FL_HTTP_MAX_ROUTES)
    return FL_EFULL;
  s->routes[s->nroutes++] = *r;
  return 0;
}

const char *fl_http_server_addr(const fl_http_server *s) { return s ? s->addr : ""; }

unsigned long long fl_http_server_served(const fl_http_server *s) { return s ? s->served : 0; }

void fl_http_server_stats(fl_http_server *s, fl_http_stats *add) {
  if (!s || !add)
    return;
  pthread_mutex_lock(&s->mu);
  add->misdirected += s->misdirected;
  add->dropped_slow += s->dropped_slow;
  add->refused_busy += s->refused;
  pthread_mutex_unlock(&s->mu);
}

void fl_http_server_stop(fl_http_server *s) {
  if (!s || !s->d)
    return;
  if (s->sweep_on) {
    s->sweep_on = 0;
    uv_timer_stop(&s->sweep);
    uv_close((uv_handle_t *)&s->sweep, NULL);
  }
  pthread_mutex_lock(&s->mu);
  s->stopping = 1;
  pthread_mutex_unlock(&s->mu);
  /* What waits for the loop is answered now, so no connection stays
   * suspended when the daemon stops. */
  void *items[16];
  size_t n;
  while ((n = fl_xqueue_pop(s->q, items, 16)) > 0) {
    for (size_t i = 0; i < n; i++) {
      fl_http_item *it = items[i];
      fl_answer_plain(it, 503, "shutting down\n");
      pthread_mutex_lock(&s->mu);
      it->done = 1;
      fl_mhd->resume_connection(it->conn);
      pthread_mutex_unlock(&s->mu);
    }
  }
  /* Every stream ends; a parked one is woken to say so. */
  pthread_mutex_lock(&s->mu);
  for (fl_http_stream *st = s->streams; st; st = st->next) {
    st->closing = 1;
    if (st->suspended) {
      st->suspended = 0;
      fl_mhd->resume_connection(st->conn);
    }
  }
  pthread_mutex_unlock(&s->mu);
  fl_mhd->stop_daemon(s->d);
  s->d = NULL;
  fl_xqueue_close(s->q, NULL);
}

void fl_http_server_free(fl_http_server **sp) {
  if (!sp || !*sp)
    return;
  fl_http_server *s = *sp;
  if (s->d)
    fl_mhd->stop_daemon(s->d);
  fl_xqueue_free(&s->q, (void (*)(void *))fl_item_free);
  pthread_mutex_destroy(&s->mu);
  fl_free(s);
  *sp = NULL;
}
