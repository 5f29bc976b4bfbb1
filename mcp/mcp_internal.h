/* mcp_internal.h — what the files of mcp/ share about a session.
 *
 * mcp.c owns fl_session (its lifecycle, the JSON-RPC method table, the MCP
 * lifecycle methods); tools.c serves tools/list and tools/call, admin.c the
 * fleet/... methods fleetctl uses. They reach the session only through the
 * calls below, all on the loop thread. Nothing outside mcp/ includes this. */
#ifndef FL_MCP_INTERNAL_H
#define FL_MCP_INTERNAL_H

#include <jansson.h>

#include "gateway/gw.h"
#include "mcp/counters.h"
#include "mcp/hints.h"
#include "mcp/mcp.h"

/* A JSON-RPC method: answers request id (borrowed; NULL for a notification,
 * which gets no answer) given params (borrowed, may be NULL). Each handler
 * writes exactly one response for a request, now or, for a parked tool call,
 * later. */
typedef void (*fl_method_fn)(fl_session *s, json_t *id, json_t *params);

/* A tool call parked until the gateway answers it (tools.c). */
typedef struct fl_tool_call fl_tool_call;

/* The gateway the session is attached to, the client it attached as (NULL
 * before initialize) and its server's counters (may be NULL). Borrowed. */
fl_gw *fl_session_gw(const fl_session *s);
fl_client *fl_session_client(const fl_session *s);
fl_mcp_counters *fl_session_counters(const fl_session *s);
/* Who reads the session's messages (hints.h): set by initialize; an agent
 * before it. */
fl_iface fl_session_iface(const fl_session *s);

/* Writes the response to request id (borrowed). result is stolen; NULL (a
 * result that could not be built) is answered with an internal error, so a
 * request never goes unanswered. */
void fl_session_reply(fl_session *s, json_t *id, json_t *result);
/* Writes the response to tool call id (borrowed): a tool result whose
 * structured content (stolen) is serialized once (tool_result.h); NULL is
 * answered with an internal error. */
void fl_session_reply_tool(fl_session *s, json_t *id, json_t *structured);
/* The same for a structured result already written as JSON, and maybe its
 * escaped text (fl_json_out; its contents stolen: freed). */
void fl_session_reply_tool_json(fl_session *s, json_t *id, fl_json_out *out);
/* Writes a JSON-RPC error response; msg is copied. */
void fl_session_reply_error(fl_session *s, json_t *id, int code, const char *msg);

/* The head of the session's list of parked tool calls. tools.c links and
 * unlinks them; the session only keeps the head and, when it ends, has
 * tools.c cancel what is left (fl_tools_cancel_all). */
fl_tool_call **fl_session_parked(fl_session *s);

#endif
