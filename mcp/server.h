/* server.h — the MCP server on fleetd's Unix socket.
 *
 * The gateway does not know MCP; fleetd's main (clients/fleetd.c) starts
 * this server on the loop, beside the gateway. Each accepted connection is
 * one MCP session (mcp/mcp.h) attached to the gateway. */
#ifndef FL_MCP_SERVER_H
#define FL_MCP_SERVER_H

#include <uv.h>

#include "gateway/gw.h"

typedef struct fl_server fl_server;

/* Starts listening on socket_path (mode 0600, same uid only). On success
 * *out is the frontend. Fails with -EADDRINUSE when another fleetd answers on
 * that socket; err says what to do. */
int fl_server_start(uv_loop_t *loop, fl_gw *gw, const char *socket_path, fl_server **out, char *err,
                    size_t errlen);
/* Stops accepting, lets every session finish writing what it owes, closes
 * them and removes the socket file. Run the loop afterwards, then free. */
void fl_server_stop(fl_server *fe);
/* fleetctl status's JSON: the gateway's status with the MCP layer's
 * counters merged into its counters (new reference, or NULL). ctx is the
 * fl_server, so it fits fl_gw_status_fn (gw.h). */
json_t *fl_server_status(void *fe);
void fl_server_free(fl_server **fe);

#endif
