/* claim_rules.c — the ownership rules of claims (see claim_rules.h). */
#include "gateway/rooms/claim_rules.h"

#include <stdlib.h>
#include <string.h>

int fl_claim_agent_is(const fl_claim_agent *a, const fl_claim_agent *b) {
  if (a->host[0] && b->host[0] && strcmp(a->host, b->host) != 0)
    return 0; /* a host speaks for its own agents only */
  if (a->gid[0] && b->gid[0])
    return strcmp(a->gid, b->gid) == 0;
  return a->name[0] && strcmp(a->name, b->name) == 0 && strcmp(a->host, b->host) == 0;
}

/* The total order: ts, then from, then msgId. */
static int fl_event_cmp(const void *pa, const void *pb) {
  const fl_claim_event *a = pa, *b = pb;
  if (a->ts_ms != b->ts_ms)
    return a->ts_ms < b->ts_ms ? -1 : 1;
  int c = strcmp(a->from.gid, b->from.gid);
  if (c)
    return c;
  c = strcmp(a->from.name, b->from.name);
  if (c)
    return c;
  return strcmp(a->msg_id, b->msg_id);
}

void fl_claim_compute(fl_claim_event *events, size_t n, const char *resource, long long now_ms,
                      fl_claim_state *out) {
  memset(out, 0, sizeof *out);
  if (n > 1)
    qsort(events, n, sizeof *events, fl_event_cmp);
  for (size_t i = 0; i < n; i++) {
    const fl_claim_event *e = &events[i];
    if (strcmp(e->resource, resource) != 0)
      continue;
    if (out->owned && out->expires_ms <= e->ts_ms)
      memset(out, 0, sizeof *out); /* the TTL ran out before this event */
    switch (e->op) {
    case FL_CLAIM_ISSUE:
      if (e->ttl_ms <= 0)
        break;
      if (!out->owned) {
        out->owned = 1;
        out->owner = e->from;
        out->since_ms = e->ts_ms;
        memcpy(out->msg_id, e->msg_id, sizeof out->msg_id);
        out->expires_ms = e->ts_ms + e->ttl_ms;
      } else if (fl_claim_agent_is(&out->owner, &e->from)) {
        out->expires_ms = e->ts_ms + e->ttl_ms; /* renewed */
      }
      break;
    case FL_CLAIM_RELEASE:
      if (out->owned && fl_claim_agent_is(&out->owner, &e->from))
        memset(out, 0, sizeof *out);
      break;
    case FL_CLAIM_HANDOFF:
      if (out->owned && fl_claim_agent_is(&out->owner, &e->from) &&
          (e->to.gid[0] || e->to.name[0])) {
        out->owner = e->to;
        out->since_ms = e->ts_ms;
        memcpy(out->msg_id, e->msg_id, sizeof out->msg_id);
      }
      break;
    }
  }
  if (out->owned && out->expires_ms <= now_ms)
    memset(out, 0, sizeof *out);
}

fl_claim_admit_rc fl_claim_admit(fl_claim_event *events, size_t n, const fl_claim_event *e,
                                 long long now_ms, long long settle_ms) {
  if (e->ts_ms > now_ms + settle_ms)
    return FL_CLAIM_FUTURE;
  /* Within the window it sorts after any owner settled here (since <=
   * now - settle < ts), so it cannot unseat one. */
  if (e->ts_ms > now_ms - settle_ms)
    return FL_CLAIM_ADMITTED;
  fl_claim_state before, after;
  fl_claim_compute(events, n, e->resource, now_ms, &before);
  if (!before.owned || now_ms < before.since_ms + settle_ms ||
      fl_claim_agent_is(&before.owner, &e->from))
    return FL_CLAIM_ADMITTED; /* nothing settled here, or the owner's own word */
  events[n] = *e;
  fl_claim_compute(events, n + 1, e->resource, now_ms, &after);
  if (after.owned && fl_claim_agent_is(&after.owner, &before.owner) &&
      after.since_ms == before.since_ms)
    return FL_CLAIM_ADMITTED;
  return FL_CLAIM_LATE;
}
