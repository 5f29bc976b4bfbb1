/* metrics.c — the Prometheus exposition (see metrics.h). */
#include "gateway/dash/metrics.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "gateway/core/gw_internal.h"
#include "gateway/core/remote.h"
#include "gateway/dash/dashboard.h"

int fl_metrics_printf(char **buf, size_t *len, size_t *cap, const char *fmt, ...) {
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    size_t room = *cap - *len;
    int w = vsnprintf(*buf ? *buf + *len : NULL, *buf ? room : 0, fmt, ap);
    va_end(ap);
    if (w < 0)
      return FL_EINVAL;
    if (*buf && (size_t)w < room) {
      *len += (size_t)w;
      return 0;
    }
    size_t ncap = (*cap ? *cap * 2 : 4096);
    while (ncap < *len + (size_t)w + 1)
      ncap *= 2;
    char *nb = fl_realloc(*buf, ncap);
    if (!nb)
      return FL_ENOMEM;
    *buf = nb;
    *cap = ncap;
  }
}

void fl_metrics_label(char *out, size_t n, const char *v) {
  size_t o = 0;
  for (; v && *v && o + 2 < n; v++) {
    if (*v == '\\' || *v == '"') {
      out[o++] = '\\';
      out[o++] = *v;
    } else if (*v == '\n') {
      out[o++] = '\\';
      out[o++] = 'n';
    } else {
      out[o++] = *v;
    }
  }
  if (n)
    out[o < n ? o : n - 1] = '\0';
}

int fl_metrics_put_histo(char **buf, size_t *len, size_t *cap, const char *name, const char *help,
                         const fl_histo *h) {
  int rc =
      fl_metrics_printf(buf, len, cap, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
  unsigned long long cum = 0;
  for (size_t i = 0; !rc && i < FL_HISTO_BUCKETS; i++) {
    cum += h->bucket[i];
    rc = fl_metrics_printf(buf, len, cap, "%s_bucket{le=\"%g\"} %llu\n", name, fl_histo_bounds[i],
                           cum);
  }
  if (!rc)
    rc = fl_metrics_printf(buf, len, cap,
                           "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.6f\n%s_count %llu\n", name,
                           h->count, name, h->sum_s, name, h->count);
  return rc;
}

/* ---- the exposition --------------------------------------------------------- */

typedef struct fl_out {
  char *buf;
  size_t len, cap;
  int rc;
} fl_out;

#define FL_PUT(o, ...)                                                                             \
  do {                                                                                             \
    if (!(o)->rc)                                                                                  \
      (o)->rc = fl_metrics_printf(&(o)->buf, &(o)->len, &(o)->cap, __VA_ARGS__);                   \
  } while (0)

static void fl_gauge_head(fl_out *o, const char *name, const char *help) {
  FL_PUT(o, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
}

/* Entities by role and status: one line per pair seen. */
static void fl_put_entities(fl_out *o, json_t *roster) {
  fl_gauge_head(o, "fleet_entities", "Entities in the union roster, by role and status.");
  json_t *seen = json_object();
  size_t i;
  json_t *e;
  json_array_foreach(json_object_get(roster, "entities"), i, e) {
    char key[256];
    snprintf(key, sizeof key, "%s\n%s", json_string_value(json_object_get(e, "role")),
             json_string_value(json_object_get(e, "status")));
    json_t *n = json_object_get(seen, key);
    json_object_set_new(seen, key, json_integer(n ? json_integer_value(n) + 1 : 1));
  }
  const char *key;
  json_t *n;
  json_object_foreach(seen, key, n) {
    char role[128], status[64], lr[256], ls[128];
    const char *nl = strchr(key, '\n');
    snprintf(role, sizeof role, "%.*s", (int)(nl - key), key);
    snprintf(status, sizeof status, "%s", nl + 1);
    fl_metrics_label(lr, sizeof lr, role);
    fl_metrics_label(ls, sizeof ls, status);
    FL_PUT(o, "fleet_entities{role=\"%s\",status=\"%s\"} %lld\n", lr, ls,
           (long long)json_integer_value(n));
  }
  json_decref(seen);
}

/* Pinned peers, whether each is heard now and when one of its agents was
 * last seen. */
static void fl_put_peers(fl_out *o, fl_gw *gw) {
  json_t *hosts = fl_remote_hosts(gw);
  fl_gauge_head(o, "fleet_peer_pinned", "1 for each peer host whose key is pinned.");
  for (size_t i = 0; i < fl_peers_count(gw->peers); i++) {
    char l[160];
    fl_metrics_label(l, sizeof l, fl_peers_at(gw->peers, i)->host);
    FL_PUT(o, "fleet_peer_pinned{host=\"%s\"} 1\n", l);
  }
  fl_gauge_head(o, "fleet_peer_up", "1 while a pinned peer's gateway beats are heard.");
  for (size_t i = 0; i < fl_peers_count(gw->peers); i++) {
    const char *host = fl_peers_at(gw->peers, i)->host;
    int up = 0;
    size_t k;
    json_t *h;
    json_array_foreach(hosts, k, h) {
      if (strcmp(json_string_value(json_object_get(h, "host")), host) == 0)
        up = strcmp(json_string_value(json_object_get(h, "status")), "online") == 0;
    }
    char l[160];
    fl_metrics_label(l, sizeof l, host);
    FL_PUT(o, "fleet_peer_up{host=\"%s\"} %d\n", l, up);
  }
  fl_gauge_head(o, "fleet_peer_last_seen_timestamp_seconds",
                "When an agent of a pinned peer was last heard, as a Unix time.");
  for (size_t i = 0; i < fl_peers_count(gw->peers); i++) {
    const char *host = fl_peers_at(gw->peers, i)->host;
    long long last = 0;
    for (fl_entity *e = gw->entities; e; e = e->next)
      if (e->remote && !e->dropped && strcmp(fl_entity_host(e), host) == 0 &&
          e->last_seen_ms > last)
        last = e->last_seen_ms;
    if (!last)
      continue;
    char l[160];
    fl_metrics_label(l, sizeof l, host);
    FL_PUT(o, "fleet_peer_last_seen_timestamp_seconds{host=\"%s\"} %.3f\n", l, last / 1000.0);
  }
  json_decref(hosts);
}

char *fl_metrics_render(fl_gw *gw, json_t *status, size_t *len) {
  fl_out o = {0};
  const char *name;
  json_t *v;
  json_object_foreach(json_object_get(status, "counters"), name, v) {
    FL_PUT(&o, "# HELP fleet_%s_total The %s counter of fleetctl status.\n", name, name);
    FL_PUT(&o, "# TYPE fleet_%s_total counter\nfleet_%s_total %lld\n", name, name,
           (long long)json_integer_value(v));
  }
  json_t *roster = NULL;
  if (fl_gw_list(gw, NULL, &roster) == 0)
    fl_put_entities(&o, roster);
  json_decref(roster);
  fl_gauge_head(&o, "fleet_held_messages", "Messages held for their recipients.");
  FL_PUT(&o, "fleet_held_messages %lld\n",
         (long long)json_integer_value(json_object_get(status, "held")));
  size_t waits = 0;
  for (fl_entity *e = gw->entities; e; e = e->next)
    if (e->client)
      waits += e->client->nwaits;
  fl_gauge_head(&o, "fleet_waiting_calls",
                "Tool calls waiting for a reply, a message or a confirm.");
  FL_PUT(&o, "fleet_waiting_calls %zu\n", waits);
  const char *state =
      json_string_value(json_object_get(json_object_get(status, "broker"), "state"));
  fl_gauge_head(&o, "fleet_broker_link_up", "1 while the broker link is up (0 when down or off).");
  FL_PUT(&o, "fleet_broker_link_up %d\n", state && strcmp(state, "down") != 0);
  fl_put_peers(&o, gw);
  static const char *const names[FL_H_COUNT][2] = {
      [FL_H_SEND_REPLY] = {"fleet_send_reply_latency_seconds",
                           "From a send being accepted to its reply arriving."},
      [FL_H_PUBLISH_CONFIRM] = {"fleet_remote_publish_confirm_latency_seconds",
                                "From a publish to another host to the broker's confirm."},
      [FL_H_INJECT] = {"fleet_injection_latency_seconds",
                       "From typing a nudge into a terminal to the backend finishing."}};
  fl_histo zero = {0};
  for (int i = 0; i < FL_H_COUNT && !o.rc; i++) {
    const fl_histo *h = fl_gw_histo(gw, (enum fl_histo_id)i);
    o.rc = fl_metrics_put_histo(&o.buf, &o.len, &o.cap, names[i][0], names[i][1], h ? h : &zero);
  }
  if (o.rc) {
    fl_free(o.buf);
    return NULL;
  }
  *len = o.len;
  return o.buf;
}
