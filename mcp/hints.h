/* hints.h — the fixes the MCP layer adds to the gateway's refusals, worded
 * for the interface the session's user reads them in.
 *
 * The gateway's messages name no interface ("list the roster to see who is
 * there"); an MCP agent fixes its call with tool names and its MCP server's
 * environment (fleet_list, FLEET_NAME), an operator at fleetctl with
 * commands and flags (fleetctl roster, --as NAME). A session says which it
 * is in initialize: fleetctl sends clientInfo.name FL_MCP_CLIENT_FLEETCTL;
 * every other client is an agent. Pure functions. */
#ifndef FL_MCP_HINTS_H
#define FL_MCP_HINTS_H

#include <jansson.h>
#include <stddef.h>

/* The clientInfo.name fleetctl sends (clients/fleetctl_rpc.c). */
#define FL_MCP_CLIENT_FLEETCTL "fleetctl"

/* Who reads a session's messages. */
typedef enum fl_iface { FL_IFACE_AGENT, FL_IFACE_FLEETCTL } fl_iface;

/* The interface an initialize request's params (borrowed, may be NULL)
 * declare. */
fl_iface fl_hints_iface(json_t *init_params);

/* The gateway's refusal err (code rc) with the fix added for iface, into
 * out (n bytes), when err does not name one already: for FL_ENAMETAKEN the
 * other name to pick, for FL_ENOTFOUND where to see who is there. Any other
 * refusal is copied as it is. One sentence either way. */
void fl_hints_refusal(fl_iface iface, int rc, const char *err, char *out, size_t n);

/* How the user gives this session a name (the identity without one was
 * refused): the words after "fleet identity has no name: ". Static. */
const char *fl_hints_give_name(fl_iface iface);

/* How this session reads what is held for it: the hint of a nudge's
 * messages_waiting notification ("call fleet_poll to read them"). Static. */
const char *fl_hints_read_held(fl_iface iface);

#endif
