/* tools.c — fleet's MCP tools (see tools.h).
 *
 * Every tool result is built here, from one table: a call is looked up in
 * the embedded schema/tools.json (unknown tool: a JSON-RPC error), its
 * arguments are checked against the tool's inputSchema (a bad argument: a
 * tool result with isError naming it), and then the tool's handler runs its
 * gateway verb. The result comes back now, or later through
 * fl_tool_call_done (call.c) for a call the verb parked; either way it goes
 * out as structuredContent plus the same JSON as text, serialized once
 * (tool_result.h), checked against the tool's outputSchema first when
 * FLEET_CHECK_RESULTS=1. fleet_list's handler, whose roster runs to megabytes,
 * has its verb write the structured result as JSON instead of building a
 * tree; the call carries that text to the same line. */
#include "mcp/tools.h"

#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/json_read.h"
#include "common/limits.h"
#include "common/log.h"
#include "mcp/call.h"
#include "mcp/claim_tools.h"
#include "mcp/hints.h"
#include "mcp/jsonrpc.h"
#include "mcp/room_tools.h"
#include "mcp/schema_check.h"

extern const char fl_schema_tools[];

static json_t *fl_tools; /* the parsed schema/tools.json array */
/* FLEET_CHECK_RESULTS=1 (the test suites set it): every structured result
 * is checked against its tool's outputSchema before it goes out. */
static int fl_check_results;

int fl_tools_init(void) {
  if (fl_tools)
    return 0;
  json_error_t je;
  fl_tools = fl_json_loadb(fl_schema_tools, strlen(fl_schema_tools), 0, &je);
  if (!fl_tools || !json_is_array(fl_tools)) {
    fl_error(NULL, "schema/tools.json does not parse: %s (line %d)", je.text, je.line);
    json_decref(fl_tools);
    fl_tools = NULL;
    return FL_EPROTO;
  }
  const char *chk = getenv("FLEET_CHECK_RESULTS");
  fl_check_results = chk && strcmp(chk, "1") == 0;
  return 0;
}

void fl_tools_cleanup(void) {
  json_decref(fl_tools);
  fl_tools = NULL;
}

static json_t *fl_tool_def(const char *name) {
  size_t i;
  json_t *t;
  json_array_foreach(fl_tools, i, t) {
    const char *tn = json_string_value(json_object_get(t, "name"));
    if (tn && strcmp(tn, name) == 0)
      return t;
  }
  return NULL;
}

/* The outputSchema results of tool name are checked against: NULL unless
 * FLEET_CHECK_RESULTS=1. Borrowed from fl_tools. */
static json_t *fl_tool_output_schema(const char *name) {
  return fl_check_results ? json_object_get(fl_tool_def(name), "outputSchema") : NULL;
}

/* ---- the tools ---------------------------------------------------------------- */

static const char *fl_arg_str(json_t *args, const char *key) {
  return json_string_value(json_object_get(args, key));
}

static double fl_arg_num(json_t *args, const char *key) {
  json_t *v = json_object_get(args, key);
  return v ? json_number_value(v) : 0;
}

static int fl_tool_send_coord(fl_session *s, fl_tool_call *call, json_t *args, json_t **result,
                              fl_wait **wait, char *err, size_t errlen) {
  return fl_gw_coord_send(fl_session_gw(s), fl_session_client(s), fl_arg_str(args, "coordId"),
                          fl_arg_str(args, "content"), NULL, fl_arg_num(args, "wait_s"),
                          fl_tool_call_done, call, result, wait, err, errlen);
}

/* fleet_send's other addressings: `to` as a list (a parallel brief) or
 * turnId (an answer). 1 when the call is a plain send to one `to`. */
static int fl_tool_send_route(fl_session *s, fl_tool_call *call, json_t *args, json_t **result,
                              fl_wait **wait, char *err, size_t errlen) {
  json_t *to = json_object_get(args, "to");
  const char *turn = fl_arg_str(args, "turnId"), *coord = fl_arg_str(args, "coordId");
  if ((to != NULL) + (turn != NULL) + (coord != NULL) != 1) {
    fl_errf(err, errlen,
            "fleet_send takes exactly one of `to` (a recipient or a list of 2 to 16), "
            "`turnId` (to answer an ask) and `coordId` (another fleet's lead); this call "
            "gives %s",
            to || turn || coord ? "more than one" : "none");
    return FL_EINVAL;
  }
  if (coord)
    return fl_tool_send_coord(s, call, args, result, wait, err, errlen);
  if (turn)
    return fl_gw_answer(fl_session_gw(s), fl_session_client(s), turn, fl_arg_str(args, "content"),
                        fl_tool_call_done, call, result, wait, err, errlen);
  if (!json_is_array(to))
    return 1;
  const char *names[FL_MAX_FANOUT];
  size_t n = json_array_size(to);
  for (size_t i = 0; i < n && i < FL_MAX_FANOUT; i++)
    names[i] = json_string_value(json_array_get(to, i));
  return fl_gw_send_many(fl_session_gw(s), fl_session_client(s), names, n,
                         fl_arg_str(args, "content"), fl_arg_num(args, "wait_s"), fl_tool_call_done,
                         call, result, wait, err, errlen);
}

static int fl_tool_list(fl_session *s, fl_tool_call *call, json_t *args, json_t **result,
                        fl_wait **wait, char *err, size_t errlen) {
  /* Megabytes with thousands of entities: written, never a tree. */
  int rc = fl_gw_list_json(fl_session_gw(s), fl_session_client(s), fl_tool_call_out(call));
  if (rc == FL_ETOOBIG)
    fl_errf(err, errlen,
            "the roster is too large for one fleet_list result (over %u MiB of JSON); "
            "unpin hosts you do not use (fleetctl peer remove HOST)",
            FL_MAX_RESULT_JSON >> 20);
  return rc;
}

static int fl_tool_send(fl_session *s, fl_tool_call *call, json_t *args, json_t **result,
                        fl_wait **wait, char *err, size_t errlen) {
  int rc = fl_tool_send_route(s, call, args, result, wait, err, errlen);
  if (rc != 1)
    return rc; /* a parallel brief, an answer by turnId, or a refusal */
  return fl_gw_send(fl_session_gw(s), fl_session_client(s), fl_arg_str(args, "to"),
                    fl_arg_str(args, "content"), fl_arg_num(args, "wait_s"), fl_tool_call_done,
                    call, result, wait, err, errlen);
}

static int fl_tool_ask(fl_session *s, fl_tool_call *call, json_t *args, json_t **result,
                       fl_wait **wait, char *err, size_t errlen) {
  return fl_gw_ask(fl_session_gw(s), fl_session_client(s), fl_arg_str(args, "to"),
                   fl_arg_str(args, "question"), fl_arg_num(args, "wait_s"), fl_tool_call_done,
                   call, result, wait, err, errlen);
}

static int fl_tool_poll(fl_session *s, fl_tool_call *call, json_t *args, json_t **result,
                        fl_wait **wait, char *err, size_t errlen) {
  return fl_gw_poll(fl_session_gw(s), fl_session_client(s), fl_arg_str(args, "from"),
                    fl_arg_num(args, "wait_s"), (size_t)fl_arg_num(args, "max"), fl_tool_call_done,
                    call, fl_tool_call_out(call), result, wait, err, errlen);
}

static int fl_tool_reply(fl_session *s, fl_tool_call *call, json_t *args, json_t **result,
                         fl_wait **wait, char *err, size_t errlen) {
  if (fl_gw_coord_owns(fl_session_gw(s), fl_arg_str(args, "to"))) /* a lead of another fleet */
    return fl_gw_coord_send(fl_session_gw(s), fl_session_client(s), fl_arg_str(args, "to"),
                            fl_arg_str(args, "content"), fl_arg_str(args, "inReplyTo"), 0,
                            fl_tool_call_done, call, result, wait, err, errlen);
  return fl_gw_reply(fl_session_gw(s), fl_session_client(s), fl_arg_str(args, "to"),
                     fl_arg_str(args, "content"), fl_arg_str(args, "inReplyTo"), fl_tool_call_done,
                     call, result, wait, err, errlen);
}

static int fl_tool_broadcast(fl_session *s, fl_tool_call *call, json_t *args, json_t **result,
                             fl_wait **wait, char *err, size_t errlen) {
  return fl_gw_broadcast(fl_session_gw(s), fl_session_client(s), fl_arg_str(args, "group"),
                         fl_arg_str(args, "content"), fl_tool_call_done, call, result, wait, err,
                         errlen);
}

static int fl_tool_spawn(fl_session *s, fl_tool_call *call, json_t *args, json_t **result,
                         fl_wait **wait, char *err, size_t errlen) {
  json_t *w = json_object_get(args, "wait_s");
  return fl_gw_spawn(fl_session_gw(s), fl_session_client(s), fl_arg_str(args, "profile"),
                     fl_arg_str(args, "host"), fl_arg_str(args, "name"), fl_arg_str(args, "brief"),
                     w ? json_number_value(w) : -1, fl_tool_call_done, call, result, wait, err,
                     errlen);
}

static int fl_tool_stop(fl_session *s, fl_tool_call *call, json_t *args, json_t **result,
                        fl_wait **wait, char *err, size_t errlen) {
  return fl_gw_stop(fl_session_gw(s), fl_session_client(s), fl_arg_str(args, "to"),
                    fl_tool_call_done, call, result, wait, err, errlen);
}

static int fl_tool_approve(fl_session *s, fl_tool_call *call, json_t *args, json_t **result,
                           fl_wait **wait, char *err, size_t errlen) {
  return fl_gw_approve(fl_session_gw(s), fl_session_client(s), fl_arg_str(args, "to"),
                       fl_arg_str(args, "requestId"), fl_arg_str(args, "decision"),
                       fl_arg_str(args, "reason"), fl_tool_call_done, call, result, wait, err,
                       errlen);
}

static const fl_tool fl_tool_table[] = {{"fleet_list", fl_tool_list},
                                        {"fleet_send", fl_tool_send},
                                        {"fleet_poll", fl_tool_poll},
                                        {"fleet_reply", fl_tool_reply},
                                        {"fleet_broadcast", fl_tool_broadcast},
                                        {"fleet_spawn", fl_tool_spawn},
                                        {"fleet_stop", fl_tool_stop},
                                        {"fleet_approve", fl_tool_approve},
                                        {"fleet_ask", fl_tool_ask},
                                        FL_ROOM_TOOLS FL_CLAIM_TOOLS};

const fl_tool *fl_tools_table(size_t *n) {
  if (n)
    *n = sizeof fl_tool_table / sizeof fl_tool_table[0];
  return fl_tool_table;
}

static const fl_tool *fl_tool_find(const char *name) {
  for (size_t i = 0; i < sizeof fl_tool_table / sizeof fl_tool_table[0]; i++)
    if (strcmp(fl_tool_table[i].name, name) == 0)
      return &fl_tool_table[i];
  return NULL;
}

/* ---- the methods -------------------------------------------------------------- */

void fl_tools_list(fl_session *s, json_t *id, json_t *params) {
  fl_session_reply(s, id, fl_tools ? json_pack("{s:O}", "tools", fl_tools) : NULL);
}

/* Runs a checked call: answers now, or parks it on its session. */
static void fl_tools_run(fl_session *s, json_t *id, const char *name, json_t *args) {
  char err[FL_MAX_ERRMSG] = "";
  const fl_tool *tool = fl_tool_find(name);
  if (!tool) {
    fl_errf(err, sizeof err, "%s is declared but not served by this fleetd", name);
    fl_session_reply_tool_error(s, id, err);
    return;
  }
  fl_tool_call *call = fl_tool_call_new(s, tool->name, fl_tool_output_schema(name));
  if (!call) {
    fl_session_reply_tool_error(s, id, fl_strerror(FL_ENOMEM));
    return;
  }
  json_t *result = NULL;
  fl_wait *wait = NULL;
  int rc = tool->handler(s, call, args, &result, &wait, err, sizeof err);
  if (rc == 0 && wait) {
    /* Parked: fl_tool_call_done answers when the gateway calls back. */
    fl_tool_call_park(call, id, wait);
    return;
  }
  fl_json_out out = *fl_tool_call_out(call);
  memset(fl_tool_call_out(call), 0, sizeof out);
  fl_tool_call_free(&call);
  if (rc != 0) {
    fl_json_out_free(&out);
    char msg[FL_MAX_ERRMSG + 128]; /* err and a hint (hints.h) */
    fl_hints_refusal(fl_session_iface(s), rc, err[0] ? err : fl_strerror(rc), msg, sizeof msg);
    fl_session_reply_tool_error(s, id, msg);
  } else if (out.json) {
    fl_session_reply_checked_json(s, id, tool->name, fl_tool_output_schema(name), &out);
  } else if (result) {
    fl_session_reply_checked(s, id, tool->name, fl_tool_output_schema(name), result);
  } else { /* a verb that neither answered nor waited: still one answer */
    fl_session_reply_tool_error(s, id, "fleetd returned no result; see its log");
  }
}

void fl_tools_call(fl_session *s, json_t *id, json_t *params) {
  if (params && !json_is_object(params)) {
    fl_session_reply_error(s, id, FL_RPC_INVALID_PARAMS, "tools/call params must be an object");
    return;
  }
  fl_mcp_counters *counters = fl_session_counters(s);
  fl_mcp_counters_bump(counters, FL_MCP_C_CALLS);
  const char *name = json_string_value(json_object_get(params, "name"));
  if (!name) {
    fl_mcp_counters_bump(counters, FL_MCP_C_CALLS_BAD_ARGUMENTS);
    fl_session_reply_error(s, id, FL_RPC_INVALID_PARAMS, "tools/call needs params.name (a string)");
    return;
  }
  char msg[700];
  json_t *def = fl_tool_def(name);
  if (!def) {
    fl_mcp_counters_bump(counters, FL_MCP_C_CALLS_UNKNOWN_TOOL);
    fl_errf(msg, sizeof msg, "Unknown tool: %.100s (tools/list shows the tools)", name);
    fl_session_reply_error(s, id, FL_RPC_INVALID_PARAMS, msg);
    return;
  }
  json_t *args = json_object_get(params, "arguments"), *empty = NULL;
  if (!args || json_is_null(args))
    args = empty = json_object();
  char err[512];
  if (fl_schema_check(args, json_object_get(def, "inputSchema"), "", err, sizeof err) != 0) {
    fl_mcp_counters_bump(counters, FL_MCP_C_CALLS_BAD_ARGUMENTS);
    fl_errf(msg, sizeof msg, "%s: %s", name, err);
    fl_session_reply_tool_error(s, id, msg);
  } else {
    fl_tools_run(s, id, name, args);
  }
  json_decref(empty);
}
