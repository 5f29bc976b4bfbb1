/* call.c — a call on a session and its answer (see call.h).
 *
 * Every response a session writes goes out through the reply calls here: a
 * JSON-RPC result or error, or a tool result (structuredContent plus the
 * same JSON as text, serialized once: tool_result.h). A call the gateway
 * parks is linked on its session and answered by fl_tool_call_done, as a
 * tool result or, for an admin method's call, as plain JSON-RPC; a tool's
 * result is checked against its outputSchema first when tools.c gives one
 * (FLEET_CHECK_RESULTS=1). */
#include "mcp/call.h"

#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/json_read.h"
#include "common/log.h"
#include "mcp/jsonrpc.h"
#include "mcp/mcp_internal.h"
#include "mcp/schema_check.h"
#include "mcp/tool_result.h"

struct fl_tool_call {
  fl_tool_call *next; /* in the session's parked list */
  fl_session *s;
  json_t *id; /* the request's id (owned) */
  fl_wait *wait;
  int admin;                /* answered as plain JSON-RPC, not as a tool result */
  const char *tool;         /* its name (static: the table's) */
  fl_call_answer_fn answer; /* an admin call's own answer, or NULL */
  json_t *schema;           /* its outputSchema, when results are checked */
  /* A structured result its handler wrote as JSON rather than a tree
   * (out.json set; owned until answered). */
  fl_json_out out;
};

/* ---- the session as its handlers see it --------------------------------------- */

fl_gw *fl_session_gw(const fl_session *s) { return s->gw; }
fl_client *fl_session_client(const fl_session *s) { return s->client; }
fl_mcp_counters *fl_session_counters(const fl_session *s) { return s->counters; }
fl_iface fl_session_iface(const fl_session *s) { return s->iface; }

void fl_session_send(fl_session *s, char *line) {
  if (line)
    s->io->write(s->conn, line, strlen(line));
}

void fl_session_reply_error(fl_session *s, json_t *id, int code, const char *msg) {
  fl_session_send(s, fl_rpc_error(id, code, msg, NULL));
}

void fl_session_reply(fl_session *s, json_t *id, json_t *result) {
  char *line = fl_rpc_result(id, result);
  if (!line) {
    fl_session_reply_error(s, id, FL_RPC_INTERNAL_ERROR,
                           "fleetd could not build the response (out of memory)");
    return;
  }
  fl_session_send(s, line);
}

void fl_session_reply_then(fl_session *s, json_t *id, json_t *result,
                           void (*done)(void *arg, int status), void *arg) {
  char *line = fl_rpc_result(id, result);
  if (!line) {
    fl_session_reply_error(s, id, FL_RPC_INTERNAL_ERROR,
                           "fleetd could not build the response (out of memory)");
    done(arg, FL_ENOMEM);
    return;
  }
  if (s->io->write_then) {
    s->io->write_then(s->conn, line, strlen(line), done, arg);
    return;
  }
  s->io->write(s->conn, line, strlen(line));
  done(arg, 0);
}

void fl_session_reply_tool(fl_session *s, json_t *id, json_t *structured) {
  char *line = fl_tool_result_line(id, structured);
  if (!line) {
    fl_session_reply_error(s, id, FL_RPC_INTERNAL_ERROR,
                           "fleetd could not build the response (out of memory)");
    return;
  }
  fl_session_send(s, line);
}

void fl_session_reply_tool_json(fl_session *s, json_t *id, fl_json_out *out) {
  size_t n = 0;
  char *line = fl_tool_result_line_take(id, out, &n);
  if (!line) {
    fl_session_reply_error(s, id, FL_RPC_INTERNAL_ERROR,
                           "fleetd could not build the response (out of memory)");
    return;
  }
  s->io->write(s->conn, line, n);
}

/* ---- tool results ------------------------------------------------------------- */

/* Cuts a UTF-8 sequence that a bounded format left unfinished at the end of
 * s, so the message still goes into JSON. */
static void fl_utf8_trim_tail(char *s) {
  size_t n = strlen(s), k = 0;
  while (k < n && k < 4 && ((unsigned char)s[n - 1 - k] & 0xc0) == 0x80)
    k++;
  if (k >= n)
    return;
  unsigned char lead = (unsigned char)s[n - 1 - k];
  size_t want = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  if (lead >= 0x80 && want != k + 1)
    s[n - 1 - k] = '\0';
}

void fl_session_reply_tool_error(fl_session *s, json_t *id, const char *msg) {
  json_t *r =
      json_pack("{s:[{s:s, s:s}], s:b}", "content", "type", "text", "text", msg, "isError", 1);
  if (!r) {
    /* Not UTF-8: a message cut short by a bounded format. */
    char copy[1024];
    fl_errf(copy, sizeof copy, "%s", msg);
    fl_utf8_trim_tail(copy);
    r = json_pack("{s:[{s:s, s:s}], s:b}", "content", "type", "text", "text", copy, "isError", 1);
  }
  fl_session_reply(s, id, r);
}

/* Does structured (borrowed; or json, a result already written) match
 * schema? 0, or FL_EINVAL after a loud log line and a count, with msg
 * saying what is off. No schema: 0. */
static int fl_check_result(fl_session *s, const char *tool, json_t *schema, json_t *structured,
                           const char *json, char *msg, size_t msglen) {
  if (!schema || !tool)
    return 0;
  json_t *parsed = NULL;
  if (!structured && json)
    structured = parsed = fl_json_loadb(json, strlen(json), 0, NULL);
  char err[512] = "";
  int rc = structured ? fl_schema_check(structured, schema, "", err, sizeof err) : FL_EINVAL;
  json_decref(parsed);
  if (rc == 0)
    return 0;
  fl_mcp_counters_bump(s->counters, FL_MCP_C_RESULTS_OFF_SCHEMA);
  fl_errf(msg, msglen, "%s's result is off its outputSchema: %s", tool,
          err[0] ? err : "not a JSON object");
  fl_error(NULL, "mcp: %s", msg);
  return FL_EINVAL;
}

void fl_session_reply_checked(fl_session *s, json_t *id, const char *tool, json_t *schema,
                              json_t *structured) {
  char msg[700];
  if (fl_check_result(s, tool, schema, structured, NULL, msg, sizeof msg) != 0) {
    json_decref(structured);
    fl_session_reply_error(s, id, FL_RPC_INTERNAL_ERROR, msg);
    return;
  }
  fl_session_reply_tool(s, id, structured);
}

void fl_session_reply_checked_json(fl_session *s, json_t *id, const char *tool, json_t *schema,
                                   fl_json_out *out) {
  char msg[700];
  if (fl_check_result(s, tool, schema, NULL, out->json, msg, sizeof msg) != 0) {
    fl_json_out_free(out);
    fl_session_reply_error(s, id, FL_RPC_INTERNAL_ERROR, msg);
    return;
  }
  fl_session_reply_tool_json(s, id, out);
}

/* ---- parked calls ------------------------------------------------------------- */

fl_tool_call *fl_tool_call_new(fl_session *s, const char *tool, json_t *schema) {
  fl_tool_call *call = fl_calloc(1, sizeof *call);
  if (!call)
    return NULL;
  call->s = s;
  call->admin = tool == NULL;
  call->tool = tool;
  call->schema = schema;
  return call;
}

fl_json_out *fl_tool_call_out(fl_tool_call *call) { return &call->out; }

void fl_tool_call_answer_with(fl_tool_call *call, fl_call_answer_fn fn) { call->answer = fn; }

void fl_tool_call_park(fl_tool_call *call, json_t *id, fl_wait *wait) {
  call->id = json_incref(id);
  call->wait = wait;
  /* A tool's result may come written (a poll's, a send's reply) rather
   * than as a tree; an admin method's is always a tree. */
  if (!call->admin && !call->answer)
    fl_gw_wait_out(wait, &call->out);
  call->next = call->s->parked;
  call->s->parked = call;
}

static void fl_tool_call_unlink(fl_tool_call *call) {
  for (fl_tool_call **pp = &call->s->parked; *pp; pp = &(*pp)->next) {
    if (*pp == call) {
      *pp = call->next;
      return;
    }
  }
}

void fl_tool_call_free(fl_tool_call **call) {
  if (!call || !*call)
    return;
  json_decref((*call)->id);
  fl_json_out_free(&(*call)->out);
  fl_free(*call);
  *call = NULL;
}

void fl_tool_call_done(void *ctx, json_t *result, const char *err) {
  fl_tool_call *call = ctx;
  fl_tool_call_unlink(call);
  if (call->answer)
    call->answer(call->s, call->id, result, err);
  else if (call->admin && result)
    fl_session_reply(call->s, call->id, result);
  else if (call->admin)
    fl_session_reply_error(call->s, call->id, FL_RPC_INVALID_PARAMS, err ? err : "failed");
  else if (result)
    fl_session_reply_checked(call->s, call->id, call->tool, call->schema, result);
  else if (!err && call->out.json) /* written into call->out (fl_gw_wait_out) */
    fl_session_reply_checked_json(call->s, call->id, call->tool, call->schema, &call->out);
  else
    fl_session_reply_tool_error(call->s, call->id, err ? err : "failed");
  fl_tool_call_free(&call);
}

void fl_tool_call_cancel(fl_session *s, json_t *request_id) {
  if (!request_id)
    return;
  for (fl_tool_call *call = s->parked; call; call = call->next) {
    if (json_equal(call->id, request_id)) {
      fl_tool_call_unlink(call);
      fl_gw_cancel(s->gw, &call->wait);
      fl_tool_call_free(&call);
      return;
    }
  }
}

void fl_tool_call_cancel_all(fl_session *s) {
  while (s->parked) {
    fl_tool_call *call = s->parked;
    s->parked = call->next;
    fl_gw_cancel(s->gw, &call->wait);
    fl_tool_call_free(&call);
  }
}

size_t fl_tool_call_parked(fl_session *s) {
  size_t n = 0;
  for (fl_tool_call *call = s->parked; call; call = call->next)
    n++;
  return n;
}
