/* gateway.h — the composition root: the one call that builds a whole
 * gateway.
 *
 * fleetd, the tests and the benchmarks create the gateway here; everything
 * else they call is in gw.h. gateway.c is the only file that names the
 * feature modules (spawn, rooms, claims, the dashboard, the coordinator
 * link, the dead-letter commands, asks) and the cross-host backend (the
 * AMQP fabric); the core runs them through its module table
 * (core/module.h) and never names them. */
#ifndef FL_GATEWAY_H
#define FL_GATEWAY_H

#include <stddef.h>
#include <uv.h>

#include "gateway/config/gw_config.h"
#include "gateway/gw.h"

/* Creates the gateway on loop: loads (or creates) the node identity and the
 * pinned peers, opens <state_dir>/holds.db, loads the roster and starts
 * the modules the configuration turns on (with a broker configured, the
 * broker link; with http on, the dashboard). cfg is copied. On failure err
 * says what was wrong and how to fix it. */
int fl_gw_new(uv_loop_t *loop, const fl_gw_config *cfg, fl_gw **out, char *err, size_t errlen);

#endif
