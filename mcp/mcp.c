/* mcp.c — one MCP session: lifecycle, tools and notifications.
 *
 * A session starts with initialize (which may carry fleet-mcp's identity in
 * params._meta["fleet/identity"]), then serves ping, tools/list, tools/call,
 * logging/setLevel and fleet/status. Tool arguments are checked against the
 * embedded schema/tools.json before the gateway sees them; an argument error
 * is a normal result with isError, so the agent can read it and fix the call.
 * A tool call that waits (fleet_send / fleet_poll with wait_s) is parked in
 * the session's pending list until the gateway calls back;
 * notifications/cancelled drops it without a response. */
#include "mcp/mcp.h"
#include "mcp/schema_check.h"

#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/limits.h"
#include "common/log.h"
#include "mcp/jsonrpc.h"

extern const char fl_schema_tools[];

#define FL_PROTO_LATEST "2025-11-25"
static const char *const fl_protocols[] = {"2025-11-25", "2025-06-18", "2025-03-26", NULL};
/* MCP logging levels, lowest first (RFC 5424 names). */
static const char *const fl_levels[] = {"debug",    "info",  "notice", "warning", "error",
                                        "critical", "alert", "emergency", NULL};

static json_t *fl_tools;      /* the parsed schema/tools.json array */

typedef struct fl_pending fl_pending;
struct fl_pending {
  fl_pending *next;
  fl_session *s;
  json_t *id;
  fl_wait *wait;
};

struct fl_session {
  fl_gw *gw;
  const fl_session_io *io;
  void *conn;
  fl_client *client;
  int initialized;
  int log_level; /* index into fl_levels; notifications below it are dropped */
  fl_pending *pending;
};

static const fl_client_ops fl_session_ops;

int fl_mcp_init(void) {
  if (fl_tools)
    return 0;
  json_error_t je;
  fl_tools = json_loads(fl_schema_tools, 0, &je);
  if (!fl_tools || !json_is_array(fl_tools)) {
    fl_error(NULL, "schema/tools.json does not parse: %s (line %d)", je.text, je.line);
    json_decref(fl_tools);
    fl_tools = NULL;
    return FL_EPROTO;
  }
  return 0;
}

void fl_mcp_cleanup(void) {
  json_decref(fl_tools);
  fl_tools = NULL;
}

static json_t *fl_tool_def(const char *name) {
  size_t i;
  json_t *t;
  json_array_foreach(fl_tools, i, t) {
    if (strcmp(json_string_value(json_object_get(t, "name")), name) == 0)
      return t;
  }
  return NULL;
}

/* ---- output --------------------------------------------------------------- */

static void fl_send_line(fl_session *s, char *line) {
  if (line)
    s->io->write(s->conn, line, strlen(line));
}

static void fl_reply_result(fl_session *s, json_t *id, json_t *result) {
  fl_send_line(s, fl_rpc_result(id, result));
}

static void fl_reply_error(fl_session *s, json_t *id, int code, const char *msg) {
  fl_send_line(s, fl_rpc_error(id, code, msg, NULL));
}

/* A tool result: structuredContent plus the same JSON as text. */
static json_t *fl_tool_ok(json_t *structured) {
  char *text = json_dumps(structured, JSON_COMPACT);
  json_t *r = json_pack("{s:[{s:s, s:s}], s:o}", "content", "type", "text", "text",
                        text ? text : "{}", "structuredContent", structured);
  fl_free(text);
  return r;
}

static json_t *fl_tool_err(const char *msg) {
  return json_pack("{s:[{s:s, s:s}], s:b}", "content", "type", "text", "text", msg, "isError",
                   1);
}

/* ---- notifications to the client (nudges) ----------------------------------- */

static void fl_session_notify(void *ctx, json_t *data) {
  fl_session *s = ctx;
  /* Nudges are "notice": shown unless the client asked for warning or above. */
  if (s->log_level > 2) {
    json_decref(data);
    return;
  }
  json_t *params = json_pack("{s:s, s:s, s:o}", "level", "notice", "logger", "fleet", "data",
                             data);
  fl_send_line(s, fl_rpc_notification("notifications/message", params));
}

static const fl_client_ops fl_session_ops = {.notify = fl_session_notify};

/* ---- pending tool calls ---------------------------------------------------- */

static void fl_pending_unlink(fl_session *s, fl_pending *p) {
  for (fl_pending **pp = &s->pending; *pp; pp = &(*pp)->next) {
    if (*pp == p) {
      *pp = p->next;
      return;
    }
  }
}

static void fl_pending_done(void *ctx, json_t *result, const char *err) {
  fl_pending *p = ctx;
  fl_session *s = p->s;
  fl_pending_unlink(s, p);
  fl_reply_result(s, p->id, result ? fl_tool_ok(result) : fl_tool_err(err ? err : "failed"));
  json_decref(p->id);
  fl_free(p);
}

/* ---- tools ------------------------------------------------------------------- */

static const char *fl_arg_str(json_t *args, const char *key) {
  return json_string_value(json_object_get(args, key));
}

static double fl_arg_num(json_t *args, const char *key) {
  json_t *v = json_object_get(args, key);
  return v ? json_number_value(v) : 0;
}

static void fl_tools_call(fl_session *s, json_t *id, json_t *params) {
  fl_gw_count(s->gw, FL_C_TOOL_CALLS);
  const char *name = json_string_value(json_object_get(params, "name"));
  json_t *args = json_object_get(params, "arguments");
  if (!name) {
    fl_gw_count(s->gw, FL_C_TOOL_BAD_ARGS);
    fl_reply_error(s, id, FL_RPC_INVALID_PARAMS, "tools/call needs params.name (a string)");
    return;
  }
  json_t *def = fl_tool_def(name);
  if (!def) {
    fl_gw_count(s->gw, FL_C_TOOL_UNKNOWN);
    char msg[256];
    snprintf(msg, sizeof msg, "Unknown tool: %.100s (tools/list shows the tools)", name);
    fl_reply_error(s, id, FL_RPC_INVALID_PARAMS, msg);
    return;
  }
  json_t *empty = NULL;
  if (!args || json_is_null(args))
    args = empty = json_object();
  char err[512];
  if (fl_schema_check(args, json_object_get(def, "inputSchema"), "", err, sizeof err) != 0) {
    fl_gw_count(s->gw, FL_C_TOOL_BAD_ARGS);
    char msg[700];
    snprintf(msg, sizeof msg, "%s: %s", name, err);
    fl_reply_result(s, id, fl_tool_err(msg));
    json_decref(empty);
    return;
  }

  json_t *result = NULL;
  fl_wait *wait = NULL;
  fl_pending *p = NULL;
  int rc;
  err[0] = '\0';
  if (strcmp(name, "fleet_list") == 0) {
    rc = fl_gw_list(s->gw, s->client, &result);
  } else {
    /* The other verbs may wait (for a reply, a message or the broker's
     * confirm): they get a pending slot that fl_pending_done answers. */
    p = fl_calloc(1, sizeof *p);
    if (!p) {
      fl_reply_result(s, id, fl_tool_err("out of memory"));
      json_decref(empty);
      return;
    }
    p->s = s;
    if (strcmp(name, "fleet_send") == 0)
      rc = fl_gw_send(s->gw, s->client, fl_arg_str(args, "to"), fl_arg_str(args, "content"),
                      fl_arg_num(args, "wait_s"), fl_pending_done, p, &result, &wait, err,
                      sizeof err);
    else if (strcmp(name, "fleet_poll") == 0)
      rc = fl_gw_poll(s->gw, s->client, fl_arg_str(args, "from"), fl_arg_num(args, "wait_s"),
                      (size_t)fl_arg_num(args, "max"), fl_pending_done, p, &result, &wait,
                      err, sizeof err);
    else if (strcmp(name, "fleet_reply") == 0)
      rc = fl_gw_reply(s->gw, s->client, fl_arg_str(args, "to"), fl_arg_str(args, "content"),
                       fl_arg_str(args, "inReplyTo"), fl_pending_done, p, &result, &wait, err,
                       sizeof err);
    else if (strcmp(name, "fleet_broadcast") == 0)
      rc = fl_gw_broadcast(s->gw, s->client, fl_arg_str(args, "group"),
                           fl_arg_str(args, "content"), fl_pending_done, p, &result, &wait,
                           err, sizeof err);
    else {
      rc = FL_EINVAL;
      snprintf(err, sizeof err, "%s is declared but not served by this fleetd", name);
    }
    if (rc == 0 && wait) {
      p->id = json_incref(id);
      p->wait = wait;
      p->next = s->pending;
      s->pending = p;
      p = NULL;
    }
    fl_free(p);
  }
  json_decref(empty);
  if (rc != 0)
    fl_reply_result(s, id, fl_tool_err(err[0] ? err : fl_strerror(rc)));
  else if (result)
    fl_reply_result(s, id, fl_tool_ok(result));
  /* else: parked; fl_pending_done answers later. */
}

/* ---- lifecycle ------------------------------------------------------------------ */

static const char *fl_meta_str(json_t *o, const char *key) {
  const char *v = json_string_value(json_object_get(o, key));
  return (v && *v) ? v : NULL;
}

static void fl_initialize(fl_session *s, json_t *id, json_t *params) {
  if (s->initialized) {
    fl_reply_error(s, id, FL_RPC_INVALID_REQUEST, "this session is already initialized");
    return;
  }
  const char *asked = json_string_value(json_object_get(params, "protocolVersion"));
  const char *version = FL_PROTO_LATEST;
  for (int i = 0; asked && fl_protocols[i]; i++)
    if (strcmp(asked, fl_protocols[i]) == 0)
      version = fl_protocols[i];

  json_t *ident = json_object_get(json_object_get(params, "_meta"), "fleet/identity");
  fl_ident id_c;
  memset(&id_c, 0, sizeof id_c);
  if (json_is_object(ident)) {
    id_c.name = fl_meta_str(ident, "name");
    id_c.role = fl_meta_str(ident, "role");
    id_c.gid = fl_meta_str(ident, "gid");
    id_c.pane = fl_meta_str(ident, "pane");
    id_c.tmux_socket = fl_meta_str(ident, "tmuxSocket");
    id_c.pid = (long)json_integer_value(json_object_get(ident, "pid"));
    json_t *groups = json_object_get(ident, "groups"), *g;
    id_c.groups_given = json_is_array(groups);
    size_t i;
    json_array_foreach(groups, i, g) {
      if (json_is_string(g) && id_c.ngroups < sizeof id_c.groups / sizeof id_c.groups[0])
        id_c.groups[id_c.ngroups++] = json_string_value(g);
    }
    if (!id_c.name) {
      fl_reply_error(s, id, FL_RPC_INVALID_PARAMS,
                     "fleet identity has no name: set FLEET_NAME in the MCP server's "
                     "environment");
      return;
    }
  }
  char err[512];
  int rc = fl_gw_attach(s->gw, id_c.name ? &id_c : NULL, &fl_session_ops, s, &s->client, err,
                        sizeof err);
  if (rc) {
    fl_gw_count(s->gw, FL_C_CLIENTS_REFUSED);
    fl_warn(NULL, "session refused: %s", err);
    fl_reply_error(s, id, FL_RPC_INVALID_PARAMS, err);
    return;
  }
  s->initialized = 1;
  const char *who = fl_client_name(s->client);
  char instructions[512];
  snprintf(instructions, sizeof instructions,
           "fleet connects you with the other agents in your fleet%s%s. fleet_list shows who "
           "is there; fleet_send messages one (wait_s waits for the reply); fleet_poll reads "
           "what is waiting for you; fleet_reply answers.",
           who ? "; you are " : "", who ? who : "");
  json_t *result = json_pack("{s:s, s:{s:{s:b}, s:{}}, s:{s:s, s:s}, s:s}", "protocolVersion",
                             version, "capabilities", "tools", "listChanged", 0, "logging",
                             "serverInfo", "name", "fleetd", "version", FLEET_VERSION,
                             "instructions", instructions);
  fl_reply_result(s, id, result);
}

static void fl_cancelled(fl_session *s, json_t *params) {
  json_t *rid = json_object_get(params, "requestId");
  if (!rid)
    return;
  for (fl_pending *p = s->pending; p; p = p->next) {
    if (json_equal(p->id, rid)) {
      fl_pending_unlink(s, p);
      fl_gw_cancel(s->gw, &p->wait);
      json_decref(p->id);
      fl_free(p);
      return;
    }
  }
}

static void fl_set_level(fl_session *s, json_t *id, json_t *params) {
  const char *lvl = json_string_value(json_object_get(params, "level"));
  for (int i = 0; lvl && fl_levels[i]; i++) {
    if (strcmp(lvl, fl_levels[i]) == 0) {
      s->log_level = i;
      fl_reply_result(s, id, json_object());
      return;
    }
  }
  fl_reply_error(s, id, FL_RPC_INVALID_PARAMS,
                 "level must be one of debug, info, notice, warning, error, critical, alert, "
                 "emergency");
}

static void fl_trace_line(void *ctx, const char *line) {
  json_array_append_new(ctx, json_string(line));
}

/* fleet/trace {traceId}: the lines this fleetd logged for a flow. */
static void fl_trace(fl_session *s, json_t *id, json_t *params) {
  const char *trace = json_string_value(json_object_get(params, "traceId"));
  if (!trace || !*trace || strlen(trace) > 64) {
    fl_reply_error(s, id, FL_RPC_INVALID_PARAMS, "fleet/trace needs params.traceId (a string)");
    return;
  }
  json_t *lines = json_array();
  fl_log_find_trace(trace, fl_trace_line, lines);
  fl_reply_result(s, id, json_pack("{s:s, s:o}", "traceId", trace, "lines", lines));
}

/* fleet/peer.add {host, publicKey, url?} and fleet/peer.remove {host}. */
static void fl_peer_admin(fl_session *s, json_t *id, json_t *params, int add) {
  const char *host = json_string_value(json_object_get(params, "host"));
  const char *key = json_string_value(json_object_get(params, "publicKey"));
  const char *url = json_string_value(json_object_get(params, "url"));
  if (!host || (add && !key)) {
    fl_reply_error(s, id, FL_RPC_INVALID_PARAMS,
                   add ? "fleet/peer.add needs params.host and params.publicKey (strings)"
                       : "fleet/peer.remove needs params.host (a string)");
    return;
  }
  char err[512] = "";
  int rc = add ? fl_gw_peer_add(s->gw, host, key, url, err, sizeof err)
               : fl_gw_peer_remove(s->gw, host, err, sizeof err);
  if (rc)
    fl_reply_error(s, id, FL_RPC_INVALID_PARAMS, err[0] ? err : fl_strerror(rc));
  else
    fl_reply_result(s, id, json_pack("{s:s, s:b}", "host", host, add ? "pinned" : "removed", 1));
}

void fl_session_line(fl_session *s, const char *line, size_t len) {
  fl_rpc rpc;
  json_t *err_id = NULL;
  const char *err_msg = NULL;
  int rc = fl_rpc_parse(line, len, &rpc, &err_id, &err_msg);
  if (rc != 0) {
    fl_gw_count(s->gw, rc == FL_RPC_PARSE_ERROR ? FL_C_RPC_PARSE_ERRORS : FL_C_RPC_INVALID);
    fl_reply_error(s, err_id, rc, err_msg ? err_msg : "invalid request");
    json_decref(err_id);
    return;
  }
  if (rpc.kind == FL_RPC_RESPONSE) {
    fl_rpc_free(&rpc); /* fleetd sends no requests; nothing to match */
    return;
  }
  const char *m = rpc.method;
  int is_req = rpc.kind == FL_RPC_REQUEST;
  json_t *params = rpc.params;

  if (!is_req) {
    if (strcmp(m, "notifications/cancelled") == 0)
      fl_cancelled(s, params);
    /* notifications/initialized and any other notification need nothing. */
    fl_rpc_free(&rpc);
    return;
  }
  static const char *const known[] = {"initialize",       "ping",          "tools/list",
                                      "tools/call",       "logging/setLevel", "fleet/status",
                                      "fleet/identity",   "fleet/peers",   "fleet/peer.add",
                                      "fleet/peer.remove", "fleet/trace", NULL};
  int k = -1;
  for (int i = 0; known[i]; i++)
    if (strcmp(m, known[i]) == 0)
      k = i;
  if (k < 0) {
    fl_gw_count(s->gw, FL_C_RPC_UNKNOWN_METHOD);
    char msg[200];
    snprintf(msg, sizeof msg, "Method not found: %.100s", m);
    fl_reply_error(s, rpc.id, FL_RPC_METHOD_NOT_FOUND, msg);
  } else if (k == 0) {
    fl_initialize(s, rpc.id, params);
  } else if (k == 1) {
    fl_reply_result(s, rpc.id, json_object());
  } else if (!s->initialized) {
    fl_gw_count(s->gw, FL_C_RPC_INVALID);
    fl_reply_error(s, rpc.id, FL_RPC_INVALID_REQUEST,
                   "send initialize before any other request");
  } else if (k == 2) {
    fl_reply_result(s, rpc.id, json_pack("{s:O}", "tools", fl_tools));
  } else if (k == 3) {
    if (params && !json_is_object(params))
      fl_reply_error(s, rpc.id, FL_RPC_INVALID_PARAMS, "tools/call params must be an object");
    else
      fl_tools_call(s, rpc.id, params);
  } else if (k == 4) {
    fl_set_level(s, rpc.id, params);
  } else if (k == 5) {
    fl_reply_result(s, rpc.id, fl_gw_status(s->gw));
  } else if (k == 6) {
    fl_reply_result(s, rpc.id, fl_gw_identity(s->gw));
  } else if (k == 7) {
    fl_reply_result(s, rpc.id, fl_gw_peers(s->gw));
  } else if (k == 10) {
    fl_trace(s, rpc.id, params);
  } else {
    fl_peer_admin(s, rpc.id, params, k == 8);
  }
  fl_rpc_free(&rpc);
}

void fl_session_oversize(fl_session *s) {
  fl_gw_count(s->gw, FL_C_RPC_OVERSIZE);
  char msg[160];
  snprintf(msg, sizeof msg, "line exceeds %u bytes; closing the connection", FL_MAX_LINE);
  fl_reply_error(s, NULL, FL_RPC_INVALID_REQUEST, msg);
}

fl_session *fl_session_new(fl_gw *gw, const fl_session_io *io, void *conn) {
  fl_session *s = fl_calloc(1, sizeof *s);
  if (!s)
    return NULL;
  s->gw = gw;
  s->io = io;
  s->conn = conn;
  s->log_level = 1; /* info */
  return s;
}

void fl_session_free(fl_session **sp) {
  if (!sp || !*sp)
    return;
  fl_session *s = *sp;
  while (s->pending) {
    fl_pending *p = s->pending;
    s->pending = p->next;
    fl_gw_cancel(s->gw, &p->wait);
    json_decref(p->id);
    fl_free(p);
  }
  if (s->client)
    fl_gw_detach(s->gw, &s->client);
  fl_free(s);
  *sp = NULL;
}
