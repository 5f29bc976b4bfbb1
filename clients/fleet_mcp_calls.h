/* fleet_mcp_calls.h — the requests fleet-mcp relayed to fleetd that fleetd
 * has not answered yet, and the answers fleet-mcp writes itself when the
 * connection is lost under them.
 *
 * fleet-mcp copies lines and does not otherwise read them; this module is
 * the little it must know to keep its promise that every request gets one
 * response: each request's id (as the compact JSON text of the id, the way
 * fleetd writes it back) and whether it was a tool call. When fleetd's
 * connection closes, every call still here gets a retryable answer from
 * fleet-mcp instead of hanging. Plain data, no I/O, single-threaded. */
#ifndef FL_FLEET_MCP_CALLS_H
#define FL_FLEET_MCP_CALLS_H

#include <jansson.h>
#include <stddef.h>

/* What a request was, for the shape of the answer fleet-mcp gives it: a tool
 * call gets a tool result with isError (what an agent reads and retries),
 * anything else a JSON-RPC error. */
enum fl_call_kind { FL_CALL_OTHER, FL_CALL_TOOL, FL_CALL_INIT };

typedef struct fl_calls fl_calls;

/* An empty set that tracks at most cap calls. NULL when out of memory. */
fl_calls *fl_calls_new(size_t cap);
/* NULL-safe; sets *c to NULL. */
void fl_calls_free(fl_calls **c);

/* How many calls are waiting for fleetd's answer. */
size_t fl_calls_count(const fl_calls *c);

/* Records the request with this id (borrowed: a JSON string or integer).
 * Returns 0; FL_EFULL past the cap (the call goes through untracked);
 * FL_EINVAL for an id that is no string or integer (fleetd refuses it at
 * once); FL_ENOMEM. */
int fl_calls_add(fl_calls *c, json_t *id, enum fl_call_kind kind);
/* The same for an id given as its compact JSON text tok (toklen bytes: an
 * integer, or a string with its quotes, as jansson writes it), read from a
 * line without parsing it (fleet_mcp_head.h). Returns as fl_calls_add. */
int fl_calls_add_tok(fl_calls *c, const char *tok, size_t toklen, enum fl_call_kind kind);
/* Forgets the call with this id (borrowed), if it is here: the client
 * cancelled it, and fleetd does not answer a cancelled call. */
void fl_calls_forget(fl_calls *c, json_t *id);
/* fleetd answered the call whose id is the JSON text tok (toklen bytes, as
 * fl_calls_line_id finds it): removes it and returns 1 with its kind in
 * *kind, or returns 0 when no such call is waiting. */
int fl_calls_take(fl_calls *c, const char *tok, size_t toklen, enum fl_call_kind *kind);
/* Removes the oldest call and returns its answer for a lost connection (see
 * fl_calls_lost_line), or NULL when none is left or memory ran out (the
 * call is gone either way; *left says whether any remain). */
char *fl_calls_pop_lost(fl_calls *c, const char *why, int *left);

/* The response fleet-mcp writes for a request it cannot get answered: for a
 * tool call {"jsonrpc":"2.0","id":ID,"result":{"content":[{"type":"text",
 * "text":why}],"isError":true}}, else a JSON-RPC error -32000 with message
 * why. id is borrowed. A new line ending in '\n' (fl_free), or NULL when
 * out of memory. */
char *fl_calls_lost_line(json_t *id, enum fl_call_kind kind, const char *why);

/* The id of a response line fleetd wrote: fleetd writes every line as
 * {"jsonrpc":"2.0","id":ID,... (a response) or {"jsonrpc":"2.0","method":...
 * (a notification), so the id is read without parsing the line, which may
 * be megabytes. Returns 1 and points *tok and *toklen at ID's JSON text inside
 * line, or 0 when the line is not a response in that form. */
int fl_calls_line_id(const char *line, size_t len, const char **tok, size_t *toklen);

#endif
