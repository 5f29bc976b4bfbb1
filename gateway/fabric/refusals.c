/* refusals.c — a bounded per-host table of repeated refusals, so each is
 * logged once a window with a count (see refusals.h).
 *
 * A linear table: a fleet is a handful of hosts, and a refusal is looked up
 * once per refused beat. */
#include "gateway/fabric/refusals.h"

#include <stdio.h>
#include <string.h>

static fl_refusal_host *fl_refusal_find(fl_refusals *r, const char *host) {
  for (size_t i = 0; i < r->n; i++)
    if (strcmp(r->at[i].host, host) == 0)
      return &r->at[i];
  return NULL;
}

/* A fresh entry for host: a free slot, or the one refused longest ago. */
static fl_refusal_host *fl_refusal_add(fl_refusals *r, const char *host) {
  fl_refusal_host *h;
  if (r->n < FL_MAX_REFUSING_HOSTS) {
    h = &r->at[r->n++];
  } else {
    h = &r->at[0];
    for (size_t i = 1; i < r->n; i++)
      if (r->at[i].last_ms < h->last_ms)
        h = &r->at[i];
  }
  memset(h, 0, sizeof *h);
  snprintf(h->host, sizeof h->host, "%s", host);
  return h;
}

int fl_refusals_note(fl_refusals *r, const char *host, int reason, long long now_ms,
                     long long window_ms, unsigned long *count, long long *span_ms) {
  host = host ? host : "";
  fl_refusal_host *h = fl_refusal_find(r, host);
  if (!h || h->reason != reason) {
    if (!h)
      h = fl_refusal_add(r, host);
    h->reason = reason;
    h->logged_ms = now_ms;
    h->last_ms = now_ms;
    h->pending = 0;
    *count = 1;
    *span_ms = 0;
    return 1;
  }
  h->last_ms = now_ms;
  if (now_ms - h->logged_ms < window_ms) {
    h->pending++;
    return 0;
  }
  *count = h->pending + 1;
  *span_ms = now_ms - h->logged_ms;
  h->pending = 0;
  h->logged_ms = now_ms;
  return 1;
}

void fl_refusals_claim(fl_refusals *r, const char *host, const char *name) {
  fl_refusal_host *h = host && name ? fl_refusal_find(r, host) : NULL;
  if (!h)
    return;
  for (size_t i = 0; i < h->nnames; i++)
    if (strcmp(h->names[i], name) == 0)
      return;
  snprintf(h->names[h->next_name], sizeof h->names[0], "%s", name);
  h->next_name = (h->next_name + 1) % FL_REFUSAL_NAMES;
  if (h->nnames < FL_REFUSAL_NAMES)
    h->nnames++;
}

int fl_refusals_claimed(const fl_refusals *r, const char *name, long long now_ms,
                        long long max_age_ms, char *host, size_t n) {
  for (size_t i = 0; name && i < r->n; i++) {
    const fl_refusal_host *h = &r->at[i];
    if (now_ms - h->last_ms > max_age_ms)
      continue;
    for (size_t k = 0; k < h->nnames; k++) {
      if (strcmp(h->names[k], name) == 0) {
        snprintf(host, n, "%s", h->host);
        return 1;
      }
    }
  }
  return 0;
}

void fl_refusals_forget(fl_refusals *r, const char *host) {
  fl_refusal_host *h = host ? fl_refusal_find(r, host) : NULL;
  if (!h)
    return;
  size_t i = (size_t)(h - r->at);
  r->at[i] = r->at[--r->n];
}
