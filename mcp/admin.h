/* admin.h — fleet's own JSON-RPC methods for operators (fleetctl): fleet/status,
 * fleet/identity, fleet/peers, fleet/peer.add, fleet/peer.remove,
 * fleet/trace, fleet/approvals, and fleet/hook (for fleet-hook).
 *
 * Each is an fl_method_fn (mcp_internal.h): it answers request id (borrowed)
 * from params (borrowed, may be NULL) through the gateway's public verbs.
 * fleet/status is the gateway's status with this server's MCP counters
 * (counters.h) merged into its "counters" object. Loop thread only; nothing
 * here blocks. */
#ifndef FL_MCP_ADMIN_H
#define FL_MCP_ADMIN_H

#include <jansson.h>

#include "mcp/mcp.h"

void fl_admin_status(fl_session *s, json_t *id, json_t *params);
void fl_admin_identity(fl_session *s, json_t *id, json_t *params);
void fl_admin_peers(fl_session *s, json_t *id, json_t *params);
/* fleet/rooms: the registered rooms, their sizes and the peers' cursors. */
void fl_admin_rooms(fl_session *s, json_t *id, json_t *params);
/* fleet/approvals: the permission requests of this host's workers waiting
 * for a decision (fl_gw_approvals). */
void fl_admin_approvals(fl_session *s, json_t *id, json_t *params);
/* fleet/dlq {op, msgId?, olderThanS?}: fleet.dlq through the broker link;
 * answered once the broker has (a parked call). */
void fl_admin_dlq(fl_session *s, json_t *id, json_t *params);
/* {host, publicKey, url?}: pins host's key. */
void fl_admin_peer_add(fl_session *s, json_t *id, json_t *params);
/* {host}: drops host's pin. */
void fl_admin_peer_remove(fl_session *s, json_t *id, json_t *params);
/* fleet/gid.release {gid}: the owning host forgets gid (fl_gw_gid_release);
 * answers {gid, host (the one that owned it), released: true}. */
void fl_admin_gid_release(fl_session *s, json_t *id, json_t *params);
/* {traceId}: the lines this fleetd logged for a flow, as {traceId, lines}.
 * traceId may also be a msgId (any id a remembered line mentions): the
 * answer is then the flow of the newest line naming it, with its trace id. */
void fl_admin_trace(fl_session *s, json_t *id, json_t *params);
/* fleet/hook {gid, agent, event, wake, reconnect?, hook}: what an agent's hook reports
 * (clients/fleet-hook.c); answers {action} (fl_gw_hook), now or, for a call
 * the gateway parks (a permission request waiting for a lead), later. */
void fl_admin_hook(fl_session *s, json_t *id, json_t *params);

#endif
