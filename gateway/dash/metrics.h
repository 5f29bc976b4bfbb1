/* metrics.h — the Prometheus text exposition of fleetd's state (format
 * 0.0.4), served at /metrics by dashboard.c.
 *
 * The latency histograms are the core's (core/histo.h); this file only
 * renders them. Every counter of
 * fleetctl status becomes fleet_<name>_total; the gauges are read from the
 * roster, the store, the broker link and the pins at scrape time. */
#ifndef FL_METRICS_H
#define FL_METRICS_H

#include <jansson.h>
#include <stddef.h>

#include "gateway/core/histo.h"

typedef struct fl_gw fl_gw;

/* Appends one histogram named name (with its HELP) to the growing buffer
 * (*buf, *len, *cap; fl_realloc'd). 0 or FL_ENOMEM. */
int fl_metrics_put_histo(char **buf, size_t *len, size_t *cap, const char *name, const char *help,
                         const fl_histo *h);
/* Appends printf-style text. 0 or FL_ENOMEM. */
int fl_metrics_printf(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Writes v into out (n bytes) as a label value: \ " and newline escaped. */
void fl_metrics_label(char *out, size_t n, const char *v);

/* The whole exposition: status (fleetctl status's JSON, with every
 * counter) plus the gauges and histograms of gw. A fl_malloc'd string and
 * its length, or NULL. */
char *fl_metrics_render(fl_gw *gw, json_t *status, size_t *len);

#endif
