/* call.h — a call on a session and its answer: what the method handlers
 * (mcp.c, tools.c, admin.c) and the tool handlers (room_tools.c,
 * claim_tools.c) share.
 *
 * A handler reaches its session only through the calls below: the gateway
 * and client it runs on, the one way to answer a request (a JSON-RPC result
 * or error, a tool result), and a call parked until the gateway answers it
 * (fl_tool_call: linked on its session, answered by fl_tool_call_done,
 * dropped without a response when cancelled or when the session ends). This
 * file names no method and no tool: the tables are mcp.c's and tools.c's,
 * and they point down here, never the other way. Loop thread only; nothing
 * here blocks. */
#ifndef FL_MCP_CALL_H
#define FL_MCP_CALL_H

#include <jansson.h>
#include <stddef.h>

#include "common/json_writer.h"
#include "gateway/gw.h"
#include "mcp/counters.h"
#include "mcp/hints.h"
#include "mcp/mcp.h"

/* A JSON-RPC method: answers request id (borrowed; NULL for a notification,
 * which gets no answer) given params (borrowed, may be NULL). Each handler
 * writes exactly one response for a request, now or, for a parked call,
 * later. */
typedef void (*fl_method_fn)(fl_session *s, json_t *id, json_t *params);

/* ---- the session as its handlers see it ---- */

/* The gateway the session is attached to, the client it attached as (NULL
 * before initialize) and its server's counters (may be NULL). Borrowed. */
fl_gw *fl_session_gw(const fl_session *s);
fl_client *fl_session_client(const fl_session *s);
fl_mcp_counters *fl_session_counters(const fl_session *s);
/* Who reads the session's messages (hints.h): set by initialize; an agent
 * before it. */
fl_iface fl_session_iface(const fl_session *s);

/* Queues line (new, NUL-terminated, ends in '\n'; ownership moves; NULL:
 * nothing, as when building it ran out of memory) for the peer. */
void fl_session_send(fl_session *s, char *line);

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
/* Writes a tool result with isError: msg (copied) is what the agent reads
 * to fix its call. */
void fl_session_reply_tool_error(fl_session *s, json_t *id, const char *msg);
/* fl_session_reply, then done(arg, status) once the response is written
 * (0) or can no longer be (a negative code), maybe before this returns.
 * arg must outlive the session: the write can end after it. */
void fl_session_reply_then(fl_session *s, json_t *id, json_t *result,
                           void (*done)(void *arg, int status), void *arg);
/* Writes a JSON-RPC error response; msg is copied. */
void fl_session_reply_error(fl_session *s, json_t *id, int code, const char *msg);

/* fl_session_reply_tool and _json for tool's result, checked first against
 * schema (borrowed; NULL: not checked) when one is given: a result off its
 * schema is logged loudly, counted, and answered with a JSON-RPC error that
 * says what is off. */
void fl_session_reply_checked(fl_session *s, json_t *id, const char *tool, json_t *schema,
                              json_t *structured);
void fl_session_reply_checked_json(fl_session *s, json_t *id, const char *tool, json_t *schema,
                                   fl_json_out *out);

/* ---- calls parked until the gateway answers ---- */

typedef struct fl_tool_call fl_tool_call;

/* A new call of s, not parked yet. tool (static, the table's) names the tool
 * whose result it answers, checked against schema (borrowed, outlives the
 * call; NULL: not checked); tool NULL makes it an admin method's call,
 * answered as plain JSON-RPC (the result, or an invalid-params error). NULL
 * when out of memory. */
fl_tool_call *fl_tool_call_new(fl_session *s, const char *tool, json_t *schema);
/* Where a handler writes a structured result as JSON rather than a tree
 * (fleet_list's); empty unless it did. Owned by the call. */
fl_json_out *fl_tool_call_out(fl_tool_call *call);
/* Parks call on its session under request id (borrowed) until wait ends. */
void fl_tool_call_park(fl_tool_call *call, json_t *id, fl_wait *wait);
/* An admin method's call answered by fn instead of the plain JSON-RPC
 * result or error: fn(session, request id, result (stolen) or NULL with
 * err) writes exactly one response. */
typedef void (*fl_call_answer_fn)(fl_session *s, json_t *id, json_t *result, const char *err);
void fl_tool_call_answer_with(fl_tool_call *call, fl_call_answer_fn fn);
/* Frees a call that was not parked. NULL-safe; sets *call to NULL. */
void fl_tool_call_free(fl_tool_call **call);

/* The fl_gw_cb a handler passes for a call the verb may park (ctx = call):
 * answers the call when the gateway calls back, then frees it. */
void fl_tool_call_done(void *ctx, json_t *result, const char *err);

/* notifications/cancelled: drops the parked call whose request id equals
 * request_id (borrowed), without a response. No parked call: nothing. */
void fl_tool_call_cancel(fl_session *s, json_t *request_id);
/* Drops every call parked on s (the session is ending). */
void fl_tool_call_cancel_all(fl_session *s);
/* How many calls are parked on s, waiting for the gateway. */
size_t fl_tool_call_parked(fl_session *s);

#endif
