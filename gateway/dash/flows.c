/* flows.c — the ring of recent flows (see flows.h). */
#include "gateway/dash/flows.h"

#include <stdio.h>
#include <string.h>

#include "common/time.h"

static void fl_put(char *dst, size_t n, const char *src) { snprintf(dst, n, "%s", src ? src : ""); }

long long fl_flows_add(fl_flows *f, const char *msg_id, const char *trace_id, const char *kind,
                       const char *in_reply_to, const char *from, const char *to,
                       long long now_ms) {
  long long latency = -1;
  if (in_reply_to && *in_reply_to) {
    for (size_t k = 0; k < f->n; k++) {
      fl_flow *s = &f->at[(f->next + FL_FLOWS_RING - 1 - k) % FL_FLOWS_RING];
      if (strcmp(s->msg_id, in_reply_to) == 0) {
        if (!s->replied && strcmp(s->kind, "SEND") == 0) {
          s->replied = 1;
          s->latency_ms = latency = now_ms > s->ts_ms ? now_ms - s->ts_ms : 0;
        }
        break;
      }
    }
  }
  fl_flow *e = &f->at[f->next];
  memset(e, 0, sizeof *e);
  fl_put(e->msg_id, sizeof e->msg_id, msg_id);
  fl_put(e->trace_id, sizeof e->trace_id, trace_id);
  fl_put(e->in_reply_to, sizeof e->in_reply_to, in_reply_to);
  fl_put(e->kind, sizeof e->kind, kind);
  fl_put(e->from, sizeof e->from, from);
  fl_put(e->to, sizeof e->to, to);
  e->ts_ms = now_ms;
  e->latency_ms = -1;
  f->next = (f->next + 1) % FL_FLOWS_RING;
  if (f->n < FL_FLOWS_RING)
    f->n++;
  return latency;
}

json_t *fl_flows_json(const fl_flows *f, size_t limit) {
  json_t *arr = json_array();
  for (size_t k = 0; arr && k < f->n && k < limit; k++) {
    const fl_flow *e = &f->at[(f->next + FL_FLOWS_RING - 1 - k) % FL_FLOWS_RING];
    const char *status = strcmp(e->kind, "SEND") != 0 ? "delivered"
                         : e->replied                 ? "replied"
                                                      : "sent";
    char ts[32];
    fl_rfc3339(e->ts_ms, ts);
    json_t *o =
        json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "traceId", e->trace_id, "msgId", e->msg_id,
                  "from", e->from, "to", e->to, "kind", e->kind, "status", status, "ts", ts);
    if (o && e->in_reply_to[0])
      json_object_set_new(o, "inReplyTo", json_string(e->in_reply_to));
    if (o)
      json_object_set_new(o, "latencyS",
                          e->latency_ms >= 0 ? json_real((double)e->latency_ms / 1000.0)
                                             : json_null());
    json_array_append_new(arr, o);
  }
  return arr;
}
