/* frontend.h — what fleetd needs from the client-facing side.
 *
 * The gateway does not know MCP; fleetd's main starts whatever implements
 * this header (the MCP server in mcp/) on the loop, beside the gateway. */
#ifndef FL_FRONTEND_H
#define FL_FRONTEND_H

#include <uv.h>

#include "gateway/gw.h"

typedef struct fl_frontend fl_frontend;

/* Starts listening on socket_path (mode 0600, same uid only). On success
 * *out is the frontend. Fails with -EADDRINUSE when another fleetd answers on
 * that socket; err says what to do. */
int fl_frontend_start(uv_loop_t *loop, fl_gw *gw, const char *socket_path, fl_frontend **out,
                      char *err, size_t errlen);
/* Stops accepting, lets every session finish writing what it owes, closes
 * them and removes the socket file. Run the loop afterwards, then free. */
void fl_frontend_stop(fl_frontend *fe);
void fl_frontend_free(fl_frontend **fe);

#endif
