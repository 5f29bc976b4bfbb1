/* tools.h — fleet's MCP tools: one {name, handler} table, tools/list and
 * tools/call.
 *
 * The tool definitions (names, descriptions, input schemas) are
 * schema/tools.json, embedded at build time: nothing restates them here.
 * tools/call finds the definition, checks the arguments against its
 * inputSchema (schema_check.h), then runs the tool's handler from the table.
 * A handler runs one gateway verb; a verb that waits (a send waiting for its
 * reply, a long poll, a broker confirm) parks the call on its session until
 * the gateway calls back (call.h), and notifications/cancelled or the end
 * of the session drops it without a response. An argument error or a refused verb
 * is a normal tool result with isError, so the agent can read it and fix the
 * call; a refusal carries the fix in the words of the session's interface
 * (hints.h: fleet_list for an agent, fleetctl roster for fleetctl). Loop
 * thread only; nothing here blocks. */
#ifndef FL_MCP_TOOLS_H
#define FL_MCP_TOOLS_H

#include <jansson.h>
#include <stddef.h>

#include "gateway/gw.h"
#include "mcp/call.h"
#include "mcp/mcp.h"

/* Runs the gateway verb for call (which carries the session and the
 * request's id) with args (borrowed, already valid against the tool's
 * inputSchema). Returns 0 with *result set (a new reference: answered now),
 * 0 with *wait set (the gateway answers later; call is parked), 0 with
 * neither and the result already written as JSON on the call (a result too
 * big to build as a tree, fleet_list's: tools.c's handlers only), or a
 * negative code with err filled (err may be left empty: then the code's
 * message is used). */
typedef int (*fl_tool_handler)(fl_session *s, fl_tool_call *call, json_t *args, json_t **result,
                               fl_wait **wait, char *err, size_t errlen);

typedef struct fl_tool {
  const char *name; /* as declared in schema/tools.json */
  fl_tool_handler handler;
} fl_tool;

/* The handler table: *n entries, static. Every tool schema/tools.json
 * declares has exactly one entry and every entry is declared there
 * (tests/unit/test_tools.c checks both ways). */
const fl_tool *fl_tools_table(size_t *n);

/* Loads the embedded schema/tools.json once. 0, or FL_EPROTO when it does
 * not parse as an array (then it is logged). */
int fl_tools_init(void);
void fl_tools_cleanup(void);

/* The JSON-RPC methods (see fl_method_fn in call.h): tools/list and
 * tools/call. id and params are borrowed. */
void fl_tools_list(fl_session *s, json_t *id, json_t *params);
void fl_tools_call(fl_session *s, json_t *id, json_t *params);

#endif
