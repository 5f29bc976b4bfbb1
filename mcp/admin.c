/* admin.c — the fleet/... methods fleetctl calls (see admin.h).
 *
 * These are plain JSON-RPC methods, not MCP tools: an agent never sees them
 * in tools/list. Errors are JSON-RPC errors (-32602) whose message fleetctl
 * prints as is, so each names what was wrong and what to do. */
#include "mcp/admin.h"

#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/log.h"
#include "gateway/gw.h"
#include "mcp/call.h"
#include "mcp/counters.h"
#include "mcp/jsonrpc.h"

/* A trace id or msgId is a UUID (36 characters); 64 leaves room for any id
 * a peer made while still bounding what is searched for. */
#define FL_ADMIN_MAX_TRACE 64

void fl_admin_status(fl_session *s, json_t *id, json_t *params) {
  json_t *status = fl_gw_status(fl_session_gw(s));
  if (status &&
      fl_mcp_counters_to_json(fl_session_counters(s), json_object_get(status, "counters")) != 0) {
    json_decref(status);
    status = NULL;
  }
  fl_session_reply(s, id, status);
}

void fl_admin_dlq(fl_session *s, json_t *id, json_t *params) {
  const char *op = json_string_value(json_object_get(params, "op"));
  const char *msg = json_string_value(json_object_get(params, "msgId"));
  json_t *older = json_object_get(params, "olderThanS");
  if (!op || (older && !json_is_number(older))) {
    fl_session_reply_error(s, id, FL_RPC_INVALID_PARAMS,
                           "fleet/dlq needs params.op (list, show, replay or purge), with "
                           "params.msgId for show and replay and an optional params.olderThanS");
    return;
  }
  fl_tool_call *call = fl_tool_call_new(s, NULL, NULL);
  if (!call) {
    fl_session_reply(s, id, NULL);
    return;
  }
  char err[512] = "";
  fl_wait *wait = NULL;
  int rc = fl_gw_dlq(fl_session_gw(s), fl_session_client(s), op, msg,
                     older ? json_number_value(older) : 0, fl_tool_call_done, call, &wait, err,
                     sizeof err);
  if (rc == 0 && wait) {
    fl_tool_call_park(call, id, wait);
    return;
  }
  fl_tool_call_free(&call);
  fl_session_reply_error(s, id, FL_RPC_INVALID_PARAMS, err[0] ? err : fl_strerror(rc));
}

void fl_admin_identity(fl_session *s, json_t *id, json_t *params) {
  fl_session_reply(s, id, fl_gw_identity(fl_session_gw(s)));
}

void fl_admin_peers(fl_session *s, json_t *id, json_t *params) {
  fl_session_reply(s, id, fl_gw_peers(fl_session_gw(s)));
}

void fl_admin_rooms(fl_session *s, json_t *id, json_t *params) {
  fl_session_reply(s, id, fl_gw_rooms(fl_session_gw(s)));
}

void fl_admin_approvals(fl_session *s, json_t *id, json_t *params) {
  (void)params;
  fl_session_reply(s, id, fl_gw_approvals(fl_session_gw(s)));
}

/* A pin change's answer: {host, <done>: true}, or the gateway's error. */
static void fl_admin_pin_reply(fl_session *s, json_t *id, int rc, const char *err, const char *host,
                               const char *done) {
  if (rc)
    fl_session_reply_error(s, id, FL_RPC_INVALID_PARAMS, err[0] ? err : fl_strerror(rc));
  else
    fl_session_reply(s, id, json_pack("{s:s, s:b}", "host", host, done, 1));
}

void fl_admin_peer_add(fl_session *s, json_t *id, json_t *params) {
  const char *host = json_string_value(json_object_get(params, "host"));
  const char *key = json_string_value(json_object_get(params, "publicKey"));
  const char *url = json_string_value(json_object_get(params, "url"));
  if (!host || !key) {
    fl_session_reply_error(s, id, FL_RPC_INVALID_PARAMS,
                           "fleet/peer.add needs params.host and params.publicKey (strings)");
    return;
  }
  char err[512] = "";
  int rc = fl_gw_peer_add(fl_session_gw(s), host, key, url, err, sizeof err);
  fl_admin_pin_reply(s, id, rc, err, host, "pinned");
}

void fl_admin_peer_remove(fl_session *s, json_t *id, json_t *params) {
  const char *host = json_string_value(json_object_get(params, "host"));
  if (!host) {
    fl_session_reply_error(s, id, FL_RPC_INVALID_PARAMS,
                           "fleet/peer.remove needs params.host (a string)");
    return;
  }
  char err[512] = "";
  int rc = fl_gw_peer_remove(fl_session_gw(s), host, err, sizeof err);
  fl_admin_pin_reply(s, id, rc, err, host, "removed");
}

void fl_admin_gid_release(fl_session *s, json_t *id, json_t *params) {
  const char *gid = json_string_value(json_object_get(params, "gid"));
  if (!gid) {
    fl_session_reply_error(s, id, FL_RPC_INVALID_PARAMS,
                           "fleet/gid.release needs params.gid (a string)");
    return;
  }
  char err[512] = "", owner[128] = "";
  int rc = fl_gw_gid_release(fl_session_gw(s), gid, owner, sizeof owner, err, sizeof err);
  if (rc)
    fl_session_reply_error(s, id, FL_RPC_INVALID_PARAMS, err[0] ? err : fl_strerror(rc));
  else
    fl_session_reply(s, id, json_pack("{s:s, s:s, s:b}", "gid", gid, "host", owner, "released", 1));
}

static void fl_admin_trace_line(void *ctx, const char *line) {
  json_array_append_new(ctx, json_string(line));
}

void fl_admin_trace(fl_session *s, json_t *id, json_t *params) {
  const char *asked = json_string_value(json_object_get(params, "traceId"));
  if (!asked || !*asked) {
    fl_session_reply_error(s, id, FL_RPC_INVALID_PARAMS,
                           "fleet/trace needs params.traceId (a trace id or a msgId)");
    return;
  }
  if (strlen(asked) > FL_ADMIN_MAX_TRACE) {
    char msg[160];
    fl_errf(msg, sizeof msg, "a trace id or msgId is at most %d characters, not %zu",
            FL_ADMIN_MAX_TRACE, strlen(asked));
    fl_session_reply_error(s, id, FL_RPC_INVALID_PARAMS, msg);
    return;
  }
  json_t *lines = json_array();
  if (!lines) {
    fl_session_reply(s, id, NULL);
    return;
  }
  /* A trace id first; else an id some remembered line mentions (a msgId):
   * the flow that line belongs to. */
  const char *trace = asked;
  char found[FL_ADMIN_MAX_TRACE + 1];
  fl_log_find_trace(asked, fl_admin_trace_line, lines);
  if (json_array_size(lines) == 0 && fl_log_trace_of(asked, found, sizeof found) == 0) {
    trace = found;
    fl_log_find_trace(trace, fl_admin_trace_line, lines);
  }
  fl_session_reply(s, id, json_pack("{s:s, s:o}", "traceId", trace, "lines", lines));
}

/* A brief handed over in a fleet/hook answer: which, for word of its write. */
typedef struct fl_hook_handed {
  fl_gw *gw;
  char handoff[64];
} fl_hook_handed;

static void fl_admin_hook_written(void *arg, int status) {
  fl_hook_handed *h = arg;
  fl_gw_hook_handed(h->gw, h->handoff, status);
  fl_free(h);
}

/* Writes a fleet/hook answer (result stolen, or err). One that carries a
 * brief ("handoff") is written with word of how the write went, which ends
 * the brief: the member itself is fleetd's, not the hook's. */
static void fl_admin_hook_answer(fl_session *s, json_t *id, json_t *result, const char *err) {
  if (!result) {
    fl_session_reply_error(s, id, FL_RPC_INVALID_PARAMS, err ? err : "failed");
    return;
  }
  const char *handoff = json_string_value(json_object_get(result, "handoff"));
  if (!handoff) {
    fl_session_reply(s, id, result);
    return;
  }
  fl_hook_handed *h = fl_calloc(1, sizeof *h);
  if (!h) { /* no word can come back: it fails, never typed */
    fl_gw_hook_handed(fl_session_gw(s), handoff, FL_ENOMEM);
    json_decref(result);
    fl_session_reply(s, id, json_pack("{s:s}", "action", "none"));
    return;
  }
  h->gw = fl_session_gw(s);
  snprintf(h->handoff, sizeof h->handoff, "%s", handoff);
  json_object_del(result, "handoff");
  fl_session_reply_then(s, id, result, fl_admin_hook_written, h);
}

void fl_admin_hook(fl_session *s, json_t *id, json_t *params) {
  const char *gid = json_string_value(json_object_get(params, "gid"));
  const char *event = json_string_value(json_object_get(params, "event"));
  json_t *hook = json_object_get(params, "hook");
  json_t *wake = json_object_get(params, "wake");
  json_t *again = json_object_get(params, "reconnect");
  if (!gid || !event || (hook && !json_is_object(hook)) || (wake && !json_is_boolean(wake)) ||
      (again && !json_is_boolean(again))) {
    fl_session_reply_error(s, id, FL_RPC_INVALID_PARAMS,
                           "fleet/hook needs params.gid and params.event (strings), optional "
                           "params.wake and params.reconnect (booleans) and an optional "
                           "params.hook object");
    return;
  }
  fl_tool_call *call = fl_tool_call_new(s, NULL, NULL);
  if (!call) {
    fl_session_reply(s, id, NULL);
    return;
  }
  fl_tool_call_answer_with(call, fl_admin_hook_answer);
  char err[256] = "";
  json_t *result = NULL;
  fl_wait *wait = NULL;
  int rc = fl_gw_hook(fl_session_gw(s), fl_session_client(s), gid, event, json_is_true(wake),
                      json_is_true(again), hook, fl_tool_call_done, call, &result, &wait, err,
                      sizeof err);
  if (rc == 0 && wait) {
    fl_tool_call_park(call, id, wait);
    return;
  }
  fl_tool_call_free(&call);
  if (rc != 0) {
    fl_session_reply_error(s, id, FL_RPC_INVALID_PARAMS, err[0] ? err : fl_strerror(rc));
    return;
  }
  fl_admin_hook_answer(s, id, result, NULL);
}
