/* dashboard.h — fleetd's own HTTP endpoint (config "http"): the dashboard
 * page (/, embedded at build time from clients/dashboard/index.html),
 * /metrics, the JSON API (/api/status, /api/roster, /api/flows, /api/trace,
 * /api/dlq), the event stream the page updates from (/api/events, Server-
 * Sent Events) and the token that guards them.
 *
 * Served by one http_serve.h server on http.listen. Every request is read
 * only (GET). Off loopback, and on loopback with http.requireToken, a
 * request must carry the token of <state>/http-token (created mode 0600 on
 * first start) as "Authorization: Bearer TOKEN" or "?token=TOKEN"; without
 * it the answer is 401. The dashboard also keeps what its pages show and
 * nothing else records: the ring of recent flows (flows.h), from which it
 * observes the core's send→reply histogram (core/histo.h). */
#ifndef FL_DASHBOARD_H
#define FL_DASHBOARD_H

#include <jansson.h>
#include <stddef.h>

#include "gateway/dash/metrics.h"

typedef struct fl_gw fl_gw;
struct fl_msg;

/* Starts serving when the configuration turns http on (else does nothing
 * and returns 0). 0, or a code with err saying what to fix. /api/status
 * and the counters of /metrics read fleetctl status's JSON from the layer
 * that owns every counter (fl_gw_set_status_source). */
int fl_dash_start(fl_gw *gw, char *err, size_t errlen);
/* Stops the server (fl_gw_shutdown calls it); run the loop, then free. */
void fl_dash_stop(fl_gw *gw);
void fl_dash_free(fl_gw *gw);

/* {url, listen, tokenRequired} for fleetctl status, or NULL when off. */
json_t *fl_dash_describe(fl_gw *gw);
/* Adds what the dashboard's server refused (http_serve.h) into *add. */
struct fl_http_stats;
void fl_dash_http_stats(fl_gw *gw, struct fl_http_stats *add);

/* A message this gateway committed or published: a row of the flow list;
 * a reply closing a send observes the send→reply histogram. */
void fl_dash_note_msg(fl_gw *gw, const struct fl_msg *m);

#endif
