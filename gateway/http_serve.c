/* http_serve.c — libmicrohttpd on its own thread, answered from the loop
 * (see http_serve.h). */
#include "gateway/http_serve.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/log.h"
#include "gateway/xqueue.h"

/* Requests waiting for the loop; past it, 503. */
#define FL_HTTP_QUEUE_CAP 64
#define FL_HTTP_MAX_CONNECTIONS 64
#define FL_HTTP_TIMEOUT_S 15

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
  unsigned long long served, refused;
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
      MHD_resume_connection(it->conn);
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
    MHD_suspend_connection(st->conn);
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
  struct MHD_Response *mr =
      MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, fl_stream_read, st, fl_stream_free);
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
  MHD_add_response_header(mr, "Content-Type", r->content_type ? r->content_type : "text/plain");
  MHD_add_response_header(mr, "Cache-Control", "no-store");
  enum MHD_Result rc = MHD_queue_response(conn, r->status, mr);
  MHD_destroy_response(mr);
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
      MHD_resume_connection(st->conn);
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
  struct MHD_Response *mr = MHD_create_response_from_buffer(r->len, r->body ? r->body : (void *)"",
                                                            MHD_RESPMEM_MUST_COPY);
  if (!mr)
    return MHD_NO;
  MHD_add_response_header(mr, "Content-Type", r->content_type ? r->content_type : "text/plain");
  enum MHD_Result rc = MHD_queue_response(conn, r->status, mr);
  MHD_destroy_response(mr);
  return rc;
}

static enum MHD_Result fl_plain_now(struct MHD_Connection *conn, unsigned status,
                                    const char *text) {
  fl_http_resp r = {status, "text/plain", (char *)text, strlen(text), 0};
  return fl_queue_resp(conn, &r);
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
    if (it->resp.stream && it->resp.status == 200)
      return fl_queue_stream(s, conn, &it->resp);
    return fl_queue_resp(conn, &it->resp);
  }
  if (strcmp(method, "GET") != 0)
    return fl_plain_now(conn, 405, "only GET is served\n");
  if (*upload_size)
    return fl_plain_now(conn, 400, "a GET carries no body\n");
  fl_qbuf q = {{0}, 0};
  MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, fl_query_arg, &q);
  const char *auth = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
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
  MHD_suspend_connection(conn);
  pthread_mutex_unlock(&s->mu);
  return MHD_YES;
}

static void fl_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
  (void)cls;
  (void)conn;
  (void)toe;
  fl_item_free(*con_cls);
  *con_cls = NULL;
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
  fl_http_server *s = fl_calloc(1, sizeof *s);
  if (!s) {
    fl_errf(err, errlen, "out of memory");
    return FL_ENOMEM;
  }
  pthread_mutex_init(&s->mu, NULL);
  int rc = fl_xqueue_new_to_loop(loop, FL_HTTP_QUEUE_CAP, fl_http_ready, s, &s->q);
  if (rc) {
    pthread_mutex_destroy(&s->mu);
    fl_free(s);
    fl_errf(err, errlen, "cannot make the HTTP queue: %s", fl_strerror(rc));
    return rc;
  }
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG |
                   (sa.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0);
  s->d = MHD_start_daemon(flags, 0, NULL, NULL, fl_access, s, MHD_OPTION_EXTERNAL_LOGGER,
                          fl_mhd_log, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
                          MHD_OPTION_CONNECTION_LIMIT, (unsigned)FL_HTTP_MAX_CONNECTIONS,
                          MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)FL_HTTP_TIMEOUT_S,
                          MHD_OPTION_NOTIFY_COMPLETED, fl_completed, s, MHD_OPTION_END);
  if (!s->d) {
    fl_errf(err, errlen, "cannot serve %s %s (address in use, or not this machine's?)", key,
            listen);
    fl_xqueue_close(s->q, NULL);
    s->stopping = 2; /* free once the queue's handle closed */
    *out = s;
    return FL_ECONFIG;
  }
  const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
  unsigned port = info ? info->port : 0;
  char host[64] = "";
  if (sa.ss_family == AF_INET6) {
    inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&sa)->sin6_addr, host, sizeof host);
    snprintf(s->addr, sizeof s->addr, "[%s]:%u", host, port);
  } else {
    inet_ntop(AF_INET, &((struct sockaddr_in *)&sa)->sin_addr, host, sizeof host);
    snprintf(s->addr, sizeof s->addr, "%s:%u", host, port);
  }
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

void fl_http_server_stop(fl_http_server *s) {
  if (!s || !s->d)
    return;
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
      MHD_resume_connection(it->conn);
      pthread_mutex_unlock(&s->mu);
    }
  }
  /* Every stream ends; a parked one is woken to say so. */
  pthread_mutex_lock(&s->mu);
  for (fl_http_stream *st = s->streams; st; st = st->next) {
    st->closing = 1;
    if (st->suspended) {
      st->suspended = 0;
      MHD_resume_connection(st->conn);
    }
  }
  pthread_mutex_unlock(&s->mu);
  MHD_stop_daemon(s->d);
  s->d = NULL;
  fl_xqueue_close(s->q, NULL);
}

void fl_http_server_free(fl_http_server **sp) {
  if (!sp || !*sp)
    return;
  fl_http_server *s = *sp;
  if (s->d)
    MHD_stop_daemon(s->d);
  fl_xqueue_free(&s->q, (void (*)(void *))fl_item_free);
  pthread_mutex_destroy(&s->mu);
  fl_free(s);
  *sp = NULL;
}
