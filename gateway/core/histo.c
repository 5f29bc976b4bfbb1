/* histo.c — the gateway's latency histograms (see histo.h). */
#include "gateway/core/histo.h"

#include <stddef.h>

#include "gateway/core/gw_internal.h"

const double fl_histo_bounds[FL_HISTO_BUCKETS] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                                  0.25,  0.5,    1,     2.5,  5,     10,   30};

void fl_histo_observe(fl_histo *h, long long ms) {
  if (!h)
    return;
  double s = ms > 0 ? (double)ms / 1000.0 : 0.0;
  for (size_t i = 0; i < FL_HISTO_BUCKETS; i++) {
    if (s <= fl_histo_bounds[i]) {
      h->bucket[i]++;
      break;
    }
  }
  h->count++;
  h->sum_s += s;
}

void fl_gw_observe(fl_gw *gw, enum fl_histo_id which, long long ms) {
  if (gw && (unsigned)which < FL_H_COUNT)
    fl_histo_observe(&gw->histos[which], ms);
}

const fl_histo *fl_gw_histo(const fl_gw *gw, enum fl_histo_id which) {
  return gw && (unsigned)which < FL_H_COUNT ? &gw->histos[which] : NULL;
}
