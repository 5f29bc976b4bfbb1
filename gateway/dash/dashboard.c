/* dashboard.c — the HTTP endpoint's routes and its token (see
 * dashboard.h). */
#include "gateway/dash/dashboard.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/log.h"
#include "gateway/core/gw_internal.h"
#include "gateway/dash/flows.h"
#include "gateway/fabric/dlq.h"
#include "gateway/http/http_serve.h"

#define FL_TOKEN_BYTES 32
#define FL_TOKEN_HEX (FL_TOKEN_BYTES * 2)
/* Flows a request may ask for; the default when it names none. */
#define FL_FLOWS_DEFAULT 50
/* How often the event stream looks for a change (and what the page shows
 * of flows); a keep-alive goes out when nothing changed for a while, which
 * also finds the streams whose clients left. */
#define FL_EVENTS_TICK_MS 250
#define FL_EVENTS_KEEPALIVE_TICKS 4
#define FL_EVENTS_FLOWS 30
/* How often the page's view of fleet.dlq is read again. */
#define FL_DLQ_REFRESH_TICKS 20

extern const char fl_dashboard_html[];

typedef struct fl_dash {
  fl_gw *gw;
  fl_http_server *server;
  int require_token;
  char token[FL_TOKEN_HEX + 1];
  char url[160];
  fl_flows flows;
  int stopping;
  uv_timer_t tick;
  unsigned quiet_ticks, ticks;
  unsigned char last[16]; /* digest of the last state event */
} fl_dash;

/* ---- the token ---------------------------------------------------------------- */

/* Reads <state>/http-token, or makes one (mode 0600). 0 or a code. */
static int fl_token_load(const char *state_dir, char *token, char *err, size_t errlen) {
  char path[FL_MAX_PATH + 32];
  snprintf(path, sizeof path, "%s/http-token", state_dir);
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd >= 0) {
    char buf[FL_TOKEN_HEX + 8];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    struct stat st;
    if (fstat(fd, &st) == 0 && (st.st_mode & 077) && fchmod(fd, 0600) != 0)
      fl_warn(NULL, "http: cannot narrow %s to mode 0600: %s", path, strerror(errno));
    close(fd);
    if (n > 0) {
      buf[n] = '\0';
      buf[strcspn(buf, "\r\n")] = '\0';
    }
    if (n < FL_TOKEN_HEX || strlen(buf) != FL_TOKEN_HEX ||
        strspn(buf, "0123456789abcdef") != FL_TOKEN_HEX) {
      fl_errf(err, errlen,
              "%s is not a token of %d hex digits; delete it and fleetd makes a new one", path,
              FL_TOKEN_HEX);
      return FL_ECONFIG;
    }
    memcpy(token, buf, FL_TOKEN_HEX + 1);
    return 0;
  }
  if (errno != ENOENT) {
    fl_errf(err, errlen, "cannot read %s: %s", path, strerror(errno));
    return FL_ECONFIG;
  }
  unsigned char raw[FL_TOKEN_BYTES];
  randombytes_buf(raw, sizeof raw);
  sodium_bin2hex(token, FL_TOKEN_HEX + 1, raw, sizeof raw);
  sodium_memzero(raw, sizeof raw);
  fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  char line[FL_TOKEN_HEX + 2];
  snprintf(line, sizeof line, "%s\n", token);
  if (fd < 0 || write(fd, line, strlen(line)) != (ssize_t)strlen(line)) {
    fl_errf(err, errlen, "cannot write %s: %s", path, strerror(errno));
    if (fd >= 0)
      close(fd);
    return FL_ECONFIG;
  }
  close(fd);
  return 0;
}

/* The query's value of key, into out (n bytes); 1 when present. */
static int fl_query_get(const char *query, const char *key, char *out, size_t n) {
  size_t kl = strlen(key);
  for (const char *p = query; p && *p;) {
    const char *amp = strchr(p, '&');
    size_t len = amp ? (size_t)(amp - p) : strlen(p);
    if (len > kl && strncmp(p, key, kl) == 0 && p[kl] == '=') {
      snprintf(out, n, "%.*s", (int)(len - kl - 1), p + kl + 1);
      return 1;
    }
    p = amp ? amp + 1 : NULL;
  }
  return 0;
}

static int fl_token_ok(const fl_dash *d, const fl_http_req *req) {
  char given[FL_TOKEN_HEX + 8] = "";
  const char *auth = req->authorization ? req->authorization : "";
  if (strncmp(auth, "Bearer ", 7) == 0)
    snprintf(given, sizeof given, "%s", auth + 7);
  else
    fl_query_get(req->query, "token", given, sizeof given);
  return strlen(given) == FL_TOKEN_HEX && sodium_memcmp(given, d->token, FL_TOKEN_HEX) == 0;
}

/* ---- answers ------------------------------------------------------------------ */

static void fl_answer(fl_http_resp *resp, unsigned status, const char *type, const char *text,
                      size_t len) {
  resp->body = fl_malloc(len + 1);
  if (!resp->body) {
    resp->status = 503;
    return;
  }
  memcpy(resp->body, text, len);
  resp->body[len] = '\0';
  resp->len = len;
  resp->status = status;
  resp->content_type = type;
}

static void fl_answer_json(fl_http_resp *resp, json_t *v) {
  char *s = v ? json_dumps(v, JSON_COMPACT) : NULL;
  json_decref(v);
  if (!s) {
    fl_answer(resp, 500, "text/plain", "cannot build the answer\n", 24);
    return;
  }
  fl_answer(resp, 200, "application/json", s, strlen(s));
  free(s);
}

static json_t *fl_dash_roster(fl_dash *d) {
  json_t *r = NULL;
  if (fl_gw_list(d->gw, NULL, &r) != 0)
    return NULL;
  json_object_set_new(r, "hostId", json_string(d->gw->cfg.host_id));
  json_t *peers = fl_gw_peers(d->gw);
  json_object_set(r, "peers", json_object_get(peers, "peers"));
  json_decref(peers);
  return r;
}

/* The state event the page renders: status (less its clock), roster and
 * recent flows, as one "event: state" message. fl_malloc'd; NULL on OOM. */
static char *fl_state_event(fl_dash *d, size_t *len) {
  json_t *st = fl_gw_status_full(d->gw);
  if (st)
    json_object_del(st, "uptimeS");
  json_t *state = json_pack("{s:o?, s:o?, s:o?}", "status", st, "roster", fl_dash_roster(d),
                            "flows", fl_flows_json(&d->flows, FL_EVENTS_FLOWS));
  char *data = state ? json_dumps(state, JSON_COMPACT) : NULL;
  json_decref(state);
  if (!data)
    return NULL;
  size_t n = strlen(data) + 32;
  char *ev = fl_malloc(n);
  if (ev)
    *len = (size_t)snprintf(ev, n, "event: state\ndata: %s\n\n", data);
  free(data);
  return ev;
}

static void fl_dash_tick(uv_timer_t *t) {
  fl_dash *d = t->data;
  if (!d->server || !fl_http_server_streams(d->server))
    return;
  /* fleet.dlq is read for an open page only: each read holds the broker
   * thread for as long as it takes. */
  if (++d->ticks % FL_DLQ_REFRESH_TICKS == 1)
    fl_dlq_refresh(d->gw);
  size_t len = 0;
  char *ev = fl_state_event(d, &len);
  if (!ev)
    return;
  unsigned char h[16];
  crypto_generichash(h, sizeof h, (const unsigned char *)ev, len, NULL, 0);
  if (memcmp(h, d->last, sizeof h) != 0) {
    memcpy(d->last, h, sizeof h);
    d->quiet_ticks = 0;
    fl_http_server_push(d->server, ev, len);
  } else if (++d->quiet_ticks >= FL_EVENTS_KEEPALIVE_TICKS) {
    d->quiet_ticks = 0;
    fl_http_server_push(d->server, ": keep-alive\n\n", 14);
  }
  fl_free(ev);
}

static void fl_trace_line(void *ctx, const char *line) {
  json_array_append_new(ctx, json_string(line));
}

static void fl_dash_serve(void *ctx, const fl_http_req *req, fl_http_resp *resp) {
  fl_dash *d = ctx;
  if (d->require_token && !fl_token_ok(d, req)) {
    static const char msg[] = "a token is needed: fleetctl dashboard prints the URL with it\n";
    fl_answer(resp, 401, "text/plain", msg, sizeof msg - 1);
    return;
  }
  const char *p = req->path;
  if (strcmp(p, "/metrics") == 0) {
    json_t *st = fl_gw_status_full(d->gw);
    size_t len = 0;
    char *text = st ? fl_metrics_render(d->gw, st, &len) : NULL;
    json_decref(st);
    if (!text) {
      fl_answer(resp, 500, "text/plain", "cannot build the metrics\n", 25);
      return;
    }
    resp->status = 200;
    resp->content_type = "text/plain; version=0.0.4; charset=utf-8";
    resp->body = text;
    resp->len = len;
  } else if (strcmp(p, "/api/status") == 0) {
    fl_answer_json(resp, fl_gw_status_full(d->gw));
  } else if (strcmp(p, "/api/roster") == 0) {
    fl_answer_json(resp, fl_dash_roster(d));
  } else if (strcmp(p, "/api/flows") == 0) {
    char v[32];
    size_t limit = FL_FLOWS_DEFAULT;
    if (fl_query_get(req->query, "limit", v, sizeof v)) {
      char *end;
      long n = strtol(v, &end, 10);
      if (!*v || *end || n < 1 || n > FL_FLOWS_RING) {
        char msg[96];
        int w =
            snprintf(msg, sizeof msg, "limit must be a whole number from 1 to %d\n", FL_FLOWS_RING);
        fl_answer(resp, 400, "text/plain", msg, (size_t)w);
        return;
      }
      limit = (size_t)n;
    }
    fl_answer_json(resp, json_pack("{s:o}", "flows", fl_flows_json(&d->flows, limit)));
  } else if (strcmp(p, "/") == 0 || strcmp(p, "/index.html") == 0) {
    fl_answer(resp, 200, "text/html; charset=utf-8", fl_dashboard_html, strlen(fl_dashboard_html));
  } else if (strcmp(p, "/api/events") == 0) {
    /* The stream opens with the state as it is now; a change follows
     * within a tick. */
    size_t len = 0;
    char *ev = fl_state_event(d, &len);
    if (!ev) {
      fl_answer(resp, 503, "text/plain", "out of memory\n", 14);
      return;
    }
    resp->status = 200;
    resp->content_type = "text/event-stream";
    resp->body = ev;
    resp->len = len;
    resp->stream = 1;
  } else if (strcmp(p, "/api/dlq") == 0) {
    fl_answer_json(resp, fl_dlq_snapshot(d->gw));
    fl_dlq_refresh(d->gw); /* the next request sees what is there now */
  } else if (strcmp(p, "/api/trace") == 0) {
    char id[FL_ID_LEN] = "";
    if (!fl_query_get(req->query, "id", id, sizeof id) || !id[0]) {
      static const char msg[] = "/api/trace needs ?id=TRACEID\n";
      fl_answer(resp, 400, "text/plain", msg, sizeof msg - 1);
      return;
    }
    json_t *lines = json_array();
    fl_log_find_trace(id, fl_trace_line, lines);
    fl_answer_json(resp, json_pack("{s:s, s:o}", "traceId", id, "lines", lines));
  } else {
    static const char msg[] = "no such resource (try /metrics or /api/status)\n";
    fl_answer(resp, 404, "text/plain", msg, sizeof msg - 1);
  }
}

/* ---- life cycle --------------------------------------------------------------- */

/* Loopback: 127.0.0.0/8 or ::1. */
static int fl_is_loopback(const char *listen) {
  return strncmp(listen, "127.", 4) == 0 || strncmp(listen, "[::1]:", 6) == 0;
}

int fl_dash_start(fl_gw *gw, char *err, size_t errlen) {
  if (!gw->cfg.http_on)
    return 0;
  fl_dash *d = fl_calloc(1, sizeof *d);
  if (!d) {
    fl_errf(err, errlen, "out of memory");
    return FL_ENOMEM;
  }
  d->gw = gw;
  gw->dash = d;
  d->require_token = gw->cfg.http_require_token >= 0 ? gw->cfg.http_require_token
                                                     : !fl_is_loopback(gw->cfg.http_listen);
  int rc = fl_token_load(gw->cfg.state_dir, d->token, err, errlen);
  if (rc)
    return rc;
  rc = fl_http_server_start_for(gw->loop, "http.listen", gw->cfg.http_listen, &d->server, err,
                                errlen);
  if (rc)
    return rc;
  fl_http_route route = {"/", fl_dash_serve, d};
  fl_http_server_route(d->server, &route);
  uv_timer_init(gw->loop, &d->tick);
  d->tick.data = d;
  uv_timer_start(&d->tick, fl_dash_tick, FL_EVENTS_TICK_MS, FL_EVENTS_TICK_MS);
  uv_unref((uv_handle_t *)&d->tick);
  snprintf(d->url, sizeof d->url, "http://%s/", fl_http_server_addr(d->server));
  fl_info(NULL, "http: dashboard and /metrics on %s%s", d->url,
          d->require_token ? " (token required)" : "");
  return 0;
}

void fl_dash_stop(fl_gw *gw) {
  fl_dash *d = gw ? gw->dash : NULL;
  if (!d || d->stopping)
    return;
  d->stopping = 1;
  if (d->tick.data) /* started */
    uv_close((uv_handle_t *)&d->tick, NULL);
  if (d->server)
    fl_http_server_stop(d->server);
}

void fl_dash_free(fl_gw *gw) {
  fl_dash *d = gw ? gw->dash : NULL;
  if (!d)
    return;
  fl_http_server_free(&d->server);
  sodium_memzero(d->token, sizeof d->token);
  fl_free(d);
  gw->dash = NULL;
}

json_t *fl_dash_describe(fl_gw *gw) {
  fl_dash *d = gw ? gw->dash : NULL;
  if (!d || !d->server)
    return NULL;
  return json_pack("{s:s, s:s, s:b, s:I}", "url", d->url, "listen", fl_http_server_addr(d->server),
                   "tokenRequired", d->require_token, "eventStreams",
                   (json_int_t)fl_http_server_streams(d->server));
}

void fl_dash_http_stats(fl_gw *gw, struct fl_http_stats *add) {
  fl_dash *d = gw ? gw->dash : NULL;
  if (d)
    fl_http_server_stats(d->server, add);
}

void fl_dash_note_msg(fl_gw *gw, const fl_msg *m) {
  fl_dash *d = gw ? gw->dash : NULL;
  if (!d || !m)
    return;
  char from[sizeof d->flows.at[0].from], to[sizeof d->flows.at[0].to];
  fl_entity *fe = fl_entity_by_gid(gw, m->from_gid), *te = fl_entity_by_gid(gw, m->to_gid);
  snprintf(from, sizeof from, "%s@%s", fe ? fe->name : m->from_name, fe ? fl_entity_host(fe) : "?");
  if (te)
    snprintf(to, sizeof to, "%s@%s", te->name, fl_entity_host(te));
  else
    snprintf(to, sizeof to, "%s", m->to_gid[0] ? m->to_gid : "(group)");
  long long lat = fl_flows_add(&d->flows, m->msg_id, m->trace_id, m->kind, m->in_reply_to, from, to,
                               fl_now_ms());
  if (lat >= 0)
    fl_gw_observe(gw, FL_H_SEND_REPLY, lat);
}
