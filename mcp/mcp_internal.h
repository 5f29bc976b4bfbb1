/* mcp_internal.h — the body of fl_session, shared by the two files that
 * keep it: mcp.c (its life cycle, initialize, the method table) and call.c
 * (its reply side and its parked calls). Every other file of mcp/ reaches a
 * session through call.h only; nothing outside mcp/ includes this. */
#ifndef FL_MCP_INTERNAL_H
#define FL_MCP_INTERNAL_H

#include "gateway/gw.h"
#include "mcp/call.h"
#include "mcp/channel.h"
#include "mcp/counters.h"
#include "mcp/hints.h"
#include "mcp/mcp.h"

struct fl_session {
  fl_gw *gw;
  fl_mcp_counters *counters; /* the server's; may be NULL */
  const fl_session_io *io;
  void *conn;
  fl_client *client;
  int initialized;
  fl_iface iface;       /* who reads its messages: an agent, or fleetctl (hints.h) */
  int log_level;        /* index into mcp.c's levels; notifications below it are dropped */
  fl_tool_call *parked; /* its parked calls (call.c) */
  fl_channel *channel;  /* NULL unless channel pushes are on (channel.h) */
};

#endif
