/* fleetctl_rpc.h — fleetctl's one connection to fleetd: connect to the Unix
 * socket, do the MCP handshake, run requests, read their answers.
 *
 * Blocking I/O bounded by one deadline for the whole command: a wedged fleetd
 * makes fleetctl fail with a message, never hang. Every call returns an exit
 * status (FL_EXIT_OK or FL_EXIT_FAIL) and has already reported why it failed
 * (fleetctl_report.h), so a command only passes the status on. */
#ifndef FL_FLEETCTL_RPC_H
#define FL_FLEETCTL_RPC_H

#include <jansson.h>

#include "clients/fleetctl_report.h"
#include "common/limits.h"
#include "mcp/jsonrpc.h"

/* fleetd answers everything but a waiting call at once; fleetctl waits this
 * much longer than the longest fleetd may take (a busy daemon, a slow store
 * commit, the handshake). */
#define FL_CTL_MARGIN_S 10

typedef struct fl_ctl_conn {
  const char *socket_opt; /* --socket, or NULL for the default path (borrowed) */
  char path[FL_MAX_PATH]; /* the socket actually used */
  int fd;                 /* -1 until connected */
  fl_linebuf lb;
  long long deadline; /* monotonic ms: the whole command's budget */
  long timeout_s;     /* that budget in seconds, for the message */
  json_int_t next_id;
  /* The longest fleetd makes a call wait, as its initialize said (else its
   * defaults): a wait_s is cut to max_wait_s, a send to a worker in a
   * terminal may wait brief_s before its wait_s, a remote stop stop_s. */
  long max_wait_s, brief_s, stop_s;
} fl_ctl_conn;

/* Readies c (not connected yet) with a budget of timeout_s seconds from
 * now. socket_opt is borrowed for c's life. */
void fl_ctl_init(fl_ctl_conn *c, const char *socket_opt, long timeout_s);
/* Connects and does the MCP handshake (initialize, then
 * notifications/initialized). identity (stolen, may be NULL: an anonymous
 * session) goes into params._meta["fleet/identity"]. fleetd's answer gives
 * its bounds (_meta["fleet/bounds"]), which fl_ctl_tool waits by. */
int fl_ctl_open(fl_ctl_conn *c, json_t *identity);
/* One request/response: params stolen (may be NULL); on success *result is
 * the result (new reference). A JSON-RPC error is reported with its code
 * and fails. */
int fl_ctl_call(fl_ctl_conn *c, const char *method, json_t *params, json_t **result);
/* tools/call name with args (stolen). On success *sc is the tool's
 * structuredContent (new reference); a result with isError prints the
 * tool's text and fails. The call gets a budget of its own, from now: the
 * longest fleetd may take for it (its wait_s and fleetd's bounds) plus
 * FL_CTL_MARGIN_S. */
int fl_ctl_tool(fl_ctl_conn *c, const char *name, json_t *args, json_t **sc);
/* Closes the connection and frees the buffers. Safe to call twice. */
void fl_ctl_close(fl_ctl_conn *c);

#endif
