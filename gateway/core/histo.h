/* histo.h — the gateway's latency histograms.
 *
 * Fixed buckets (seconds, the base unit), observed on the loop: send→reply
 * (the dashboard's flow log), remote publish→confirm (the fabric) and nudge
 * injection (nudge.c). The core owns them, so whoever observes needs no
 * module above it; the dashboard's /metrics (dash/metrics.h) renders them.
 * Loop thread only. */
#ifndef FL_HISTO_H
#define FL_HISTO_H

typedef struct fl_gw fl_gw;

enum fl_histo_id { FL_H_SEND_REPLY, FL_H_PUBLISH_CONFIRM, FL_H_INJECT, FL_H_COUNT };

/* 14 upper bounds from 1 ms to 30 s: the span of a local hand-off to a
 * slow broker round trip. */
#define FL_HISTO_BUCKETS 14

typedef struct fl_histo {
  unsigned long long bucket[FL_HISTO_BUCKETS]; /* not cumulative; +Inf is count */
  unsigned long long count;
  double sum_s;
} fl_histo;

/* The upper bounds of the buckets, in seconds. */
extern const double fl_histo_bounds[FL_HISTO_BUCKETS];

/* Adds one observation of ms milliseconds (negative reads as 0). NULL-safe. */
void fl_histo_observe(fl_histo *h, long long ms);

/* Observes ms into gw's histogram which. */
void fl_gw_observe(fl_gw *gw, enum fl_histo_id which, long long ms);
/* gw's histogram which (borrowed), or NULL for an id out of range. */
const fl_histo *fl_gw_histo(const fl_gw *gw, enum fl_histo_id which);

#endif
