/* metrics.h — latency histograms and the Prometheus text exposition of
 * fleetd's state (format 0.0.4), served at /metrics by dashboard.c.
 *
 * Histograms count in fixed buckets (seconds, base unit) and are observed on
 * the loop: send→reply (router.c, through the flow log), remote
 * publish→confirm (fabric.c) and nudge injection (nudge.c). Every counter of
 * fleetctl status becomes fleet_<name>_total; the gauges are read from the
 * roster, the store, the broker link and the pins at scrape time. */
#ifndef FL_METRICS_H
#define FL_METRICS_H

#include <jansson.h>
#include <stddef.h>

typedef struct fl_gw fl_gw;

enum fl_histo_id { FL_H_SEND_REPLY, FL_H_PUBLISH_CONFIRM, FL_H_INJECT, FL_H_COUNT };

#define FL_HISTO_BUCKETS 14

typedef struct fl_histo {
  unsigned long long bucket[FL_HISTO_BUCKETS]; /* not cumulative; +Inf is count */
  unsigned long long count;
  double sum_s;
} fl_histo;

/* The upper bounds of the buckets, in seconds. */
extern const double fl_histo_bounds[FL_HISTO_BUCKETS];

/* Adds one observation of ms milliseconds (negative reads as 0). */
void fl_histo_observe(fl_histo *h, long long ms);

/* Appends one histogram named name (with its HELP) to the growing buffer
 * (*buf, *len, *cap; fl_realloc'd). 0 or FL_ENOMEM. */
int fl_metrics_put_histo(char **buf, size_t *len, size_t *cap, const char *name, const char *help,
                         const fl_histo *h);
/* Appends printf-style text. 0 or FL_ENOMEM. */
int fl_metrics_printf(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Writes v into out (n bytes) as a label value: \ " and newline escaped. */
void fl_metrics_label(char *out, size_t n, const char *v);

/* Observes ms into histogram which of gw (nothing when the dashboard is
 * off). */
void fl_metrics_observe(fl_gw *gw, enum fl_histo_id which, long long ms);

/* The whole exposition: status (fleetctl status's JSON, with every
 * counter) plus the gauges and histograms of gw. A fl_malloc'd string and
 * its length, or NULL. */
char *fl_metrics_render(fl_gw *gw, json_t *status, size_t *len);

#endif
