/* http_pull.c — libcurl multi on the libuv loop (see http_pull.h); libcurl
 * is loaded when the first puller starts (http_libs.h). */
#include "gateway/http/http_pull.h"

#include <curl/curl.h>
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/log.h"
#include "gateway/http/http_libs.h"

typedef struct fl_get fl_get;

struct fl_http_pull {
  uv_loop_t *loop;
  const fl_curl_fns *c; /* libcurl, loaded */
  CURLM *multi;
  uv_timer_t timer;
  fl_get *gets; /* in flight */
  size_t active;
  int stopping;
  int closes; /* handles still closing */
};

struct fl_get {
  fl_get *next;
  fl_http_pull *p;
  CURL *easy;
  char *buf;
  size_t len, cap, max;
  int over; /* the body passed max */
  fl_http_pull_cb cb;
  void *ctx;
  char errbuf[CURL_ERROR_SIZE];
};

/* One socket curl watches. */
typedef struct fl_sock {
  uv_poll_t poll;
  curl_socket_t fd;
  fl_http_pull *p;
} fl_sock;

static void fl_check_done(fl_http_pull *p);

static void fl_get_finish(fl_get *g, long status, const char *err) {
  fl_http_pull *p = g->p;
  for (fl_get **pp = &p->gets; *pp; pp = &(*pp)->next)
    if (*pp == g) {
      *pp = g->next;
      break;
    }
  p->active--;
  p->c->multi_remove_handle(p->multi, g->easy);
  p->c->easy_cleanup(g->easy);
  if (g->buf)
    g->buf[g->len] = '\0';
  g->cb(g->ctx, err ? 0 : status, g->buf ? g->buf : "", g->len, err);
  fl_free(g->buf);
  fl_free(g);
}

static size_t fl_write(char *data, size_t size, size_t n, void *ud) {
  fl_get *g = ud;
  size_t len = size * n;
  if (g->len + len > g->max) {
    g->over = 1;
    return 0; /* curl aborts the transfer */
  }
  if (g->len + len + 1 > g->cap) {
    size_t cap = g->cap ? g->cap : 16384;
    while (cap < g->len + len + 1)
      cap *= 2;
    char *nb = fl_realloc(g->buf, cap);
    if (!nb)
      return 0;
    g->buf = nb;
    g->cap = cap;
  }
  memcpy(g->buf + g->len, data, len);
  g->len += len;
  return len;
}

static void fl_check_done(fl_http_pull *p) {
  CURLMsg *m;
  int left;
  while ((m = p->c->multi_info_read(p->multi, &left))) {
    if (m->msg != CURLMSG_DONE)
      continue;
    fl_get *g = NULL;
    p->c->easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&g);
    if (!g)
      continue;
    long status = 0;
    p->c->easy_getinfo(g->easy, CURLINFO_RESPONSE_CODE, &status);
    char err[CURL_ERROR_SIZE + 64];
    if (g->over) {
      snprintf(err, sizeof err, "the response is over %zu bytes", g->max);
      fl_get_finish(g, 0, err);
    } else if (m->data.result != CURLE_OK) {
      snprintf(err, sizeof err, "%s",
               g->errbuf[0] ? g->errbuf : p->c->easy_strerror(m->data.result));
      fl_get_finish(g, 0, err);
    } else {
      fl_get_finish(g, status, NULL);
    }
  }
}

static void fl_poll_cb(uv_poll_t *h, int status, int events) {
  fl_sock *s = h->data;
  int flags = 0;
  if (status < 0)
    flags = CURL_CSELECT_ERR;
  if (events & UV_READABLE)
    flags |= CURL_CSELECT_IN;
  if (events & UV_WRITABLE)
    flags |= CURL_CSELECT_OUT;
  int running;
  fl_http_pull *p = s->p;
  p->c->multi_socket_action(p->multi, s->fd, flags, &running);
  fl_check_done(p);
}

static void fl_sock_closed(uv_handle_t *h) {
  fl_sock *s = h->data;
  s->p->closes--;
  fl_free(s);
}

static int fl_socket_cb(CURL *e, curl_socket_t fd, int what, void *up, void *sockp) {
  (void)e;
  fl_http_pull *p = up;
  fl_sock *s = sockp;
  if (what == CURL_POLL_REMOVE) {
    if (s) {
      uv_poll_stop(&s->poll);
      p->c->multi_assign(p->multi, fd, NULL);
      p->closes++;
      uv_close((uv_handle_t *)&s->poll, fl_sock_closed);
    }
    return 0;
  }
  if (!s) {
    s = fl_calloc(1, sizeof *s);
    if (!s)
      return -1;
    s->fd = fd;
    s->p = p;
    if (uv_poll_init_socket(p->loop, &s->poll, fd) != 0) {
      fl_free(s);
      return -1;
    }
    s->poll.data = s;
    p->c->multi_assign(p->multi, fd, s);
  }
  int ev = 0;
  if (what & CURL_POLL_IN)
    ev |= UV_READABLE;
  if (what & CURL_POLL_OUT)
    ev |= UV_WRITABLE;
  uv_poll_start(&s->poll, ev, fl_poll_cb);
  return 0;
}

static void fl_timer_cb(uv_timer_t *t) {
  fl_http_pull *p = t->data;
  int running;
  p->c->multi_socket_action(p->multi, CURL_SOCKET_TIMEOUT, 0, &running);
  fl_check_done(p);
}

static int fl_timer_set(CURLM *m, long timeout_ms, void *up) {
  (void)m;
  fl_http_pull *p = up;
  if (timeout_ms < 0)
    uv_timer_stop(&p->timer);
  else
    uv_timer_start(&p->timer, fl_timer_cb, (uint64_t)timeout_ms, 0);
  return 0;
}

int fl_http_pull_new(uv_loop_t *loop, fl_http_pull **out, char *err, size_t errlen) {
  *out = NULL;
  const fl_curl_fns *c;
  int rc = fl_http_curl(&c, err, errlen);
  if (rc)
    return rc;
  fl_http_pull *p = fl_calloc(1, sizeof *p);
  if (!p) {
    fl_errf(err, errlen, "out of memory");
    return FL_ENOMEM;
  }
  p->loop = loop;
  p->c = c;
  /* Thread-safe and counted since curl 7.84; paired in fl_http_pull_free. */
  if (p->c->global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
    fl_free(p);
    fl_errf(err, errlen, "libcurl did not initialise");
    return FL_ENOMEM;
  }
  p->multi = p->c->multi_init();
  if (!p->multi) {
    p->c->global_cleanup();
    fl_free(p);
    fl_errf(err, errlen, "out of memory");
    return FL_ENOMEM;
  }
  uv_timer_init(loop, &p->timer);
  p->timer.data = p;
  p->c->multi_setopt(p->multi, CURLMOPT_SOCKETFUNCTION, fl_socket_cb);
  p->c->multi_setopt(p->multi, CURLMOPT_SOCKETDATA, p);
  p->c->multi_setopt(p->multi, CURLMOPT_TIMERFUNCTION, fl_timer_set);
  p->c->multi_setopt(p->multi, CURLMOPT_TIMERDATA, p);
  *out = p;
  return 0;
}

int fl_http_pull_get(fl_http_pull *p, const char *url, size_t max_body, unsigned timeout_ms,
                     fl_http_pull_cb cb, void *ctx) {
  if (!p || p->stopping || !url || !cb ||
      (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0))
    return FL_EINVAL;
  fl_get *g = fl_calloc(1, sizeof *g);
  if (!g || !(g->easy = p->c->easy_init())) {
    fl_free(g);
    return FL_ENOMEM;
  }
  g->p = p;
  g->max = max_body;
  g->cb = cb;
  g->ctx = ctx;
  CURL *e = g->easy;
  p->c->easy_setopt(e, CURLOPT_URL, url);
  p->c->easy_setopt(e, CURLOPT_PRIVATE, g);
  p->c->easy_setopt(e, CURLOPT_WRITEFUNCTION, fl_write);
  p->c->easy_setopt(e, CURLOPT_WRITEDATA, g);
  p->c->easy_setopt(e, CURLOPT_ERRORBUFFER, g->errbuf);
  p->c->easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
  p->c->easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)timeout_ms);
  p->c->easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  p->c->easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
  p->c->easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
  p->c->easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)max_body);
  p->c->easy_setopt(e, CURLOPT_USERAGENT, "fleetd/" FLEET_VERSION);
  if (p->c->multi_add_handle(p->multi, e) != CURLM_OK) {
    p->c->easy_cleanup(e);
    fl_free(g);
    return FL_ENOMEM;
  }
  g->next = p->gets;
  p->gets = g;
  p->active++;
  return 0;
}

size_t fl_http_pull_active(const fl_http_pull *p) { return p ? p->active : 0; }

void fl_http_pull_stop(fl_http_pull *p) {
  if (!p || p->stopping)
    return;
  p->stopping = 1;
  while (p->gets)
    fl_get_finish(p->gets, 0, "cancelled: fleetd is stopping");
  /* Cached connections close now, their poll handles with them. */
  p->c->multi_cleanup(p->multi);
  p->multi = NULL;
  uv_timer_stop(&p->timer);
  uv_close((uv_handle_t *)&p->timer, NULL);
}

void fl_http_pull_free(fl_http_pull **pp) {
  if (!pp || !*pp)
    return;
  fl_http_pull *p = *pp;
  if (p->multi)
    p->c->multi_cleanup(p->multi);
  p->c->global_cleanup();
  fl_free(p);
  *pp = NULL;
}
