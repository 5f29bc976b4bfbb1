/* mcp.c — one MCP session: its lifecycle and the JSON-RPC method table.
 * (The session's reply side and its parked calls are call.c's.)
 *
 * A session starts with initialize (which may carry fleet-mcp's identity in
 * params._meta["fleet/identity"]), then serves the methods in fl_methods:
 * ping, tools/list and tools/call (tools.c), logging/setLevel and the fleet/...
 * methods fleetctl uses (admin.c). Every request line gets exactly one
 * response: a result, a JSON-RPC error, or, for a tool call the gateway
 * parks, a result later. Notifications get none; notifications/cancelled
 * drops a parked call. Nudges from the gateway go out as
 * notifications/message; with Claude Code channels on (channel.h), each
 * message held for the session is also pushed as
 * notifications/claude/channel. initialize also tells which interface reads the
 * session's messages (an agent or fleetctl), and refusals are worded for it
 * (hints.h). A named session's initialize result carries its gid in
 * _meta["fleet/identity"], so fleet-mcp can register again as the same entity
 * after a lost connection (identity "resume": true, counted in
 * sessions_resumed). What the session sees go wrong (lines that are not
 * JSON-RPC, unknown methods) is counted in its server's counters. */
#include "mcp/mcp.h"

#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/limits.h"
#include "common/log.h"
#include "mcp/admin.h"
#include "mcp/call.h"
#include "mcp/channel.h"
#include "mcp/counters.h"
#include "mcp/hints.h"
#include "mcp/jsonrpc.h"
#include "mcp/mcp_internal.h"
#include "mcp/tools.h"

#define FL_PROTO_LATEST "2025-11-25"
static const char *const fl_protocols[] = {"2025-11-25", "2025-06-18", "2025-03-26", NULL};
/* MCP logging levels, lowest first (RFC 5424 names). */
static const char *const fl_levels[] = {"debug",    "info",  "notice",    "warning", "error",
                                        "critical", "alert", "emergency", NULL};
/* Indexes into fl_levels: a new session logs from "info"; nudges are
 * "notice", shown unless the client asked for warning or above. */
#define FL_LEVEL_INFO 1
#define FL_LEVEL_NOTICE 2

int fl_mcp_init(void) { return fl_tools_init(); }

void fl_mcp_cleanup(void) { fl_tools_cleanup(); }

/* ---- notifications to the client (nudges) ----------------------------------- */

static void fl_session_notify(void *ctx, json_t *data) {
  fl_session *s = ctx;
  if (s->log_level > FL_LEVEL_NOTICE) {
    json_decref(data);
    return;
  }
  /* The gateway's hint is neutral; the session says it in its own words. */
  if (json_object_get(data, "hint"))
    json_object_set_new(data, "hint", json_string(fl_hints_read_held(s->iface)));
  json_t *params = json_pack("{s:s, s:s, s:o}", "level", "notice", "logger", "fleet", "data", data);
  fl_session_send(s, fl_rpc_notification("notifications/message", params));
}

/* A message held for the session: a channel push when channels are on. */
static void fl_session_held(void *ctx, const fl_msg_view *m) {
  fl_session *s = ctx;
  if (s->channel)
    fl_session_send(s, fl_channel_line(s->channel, m));
}

static const fl_client_ops fl_session_ops = {.notify = fl_session_notify, .held = fl_session_held};

/* ---- the MCP lifecycle methods ------------------------------------------------ */

static const char *fl_meta_str(json_t *o, const char *key) {
  const char *v = json_string_value(json_object_get(o, key));
  return (v && *v) ? v : NULL;
}

static void fl_initialize(fl_session *s, json_t *id, json_t *params) {
  if (s->initialized) {
    fl_session_reply_error(s, id, FL_RPC_INVALID_REQUEST, "this session is already initialized");
    return;
  }
  const char *asked = json_string_value(json_object_get(params, "protocolVersion"));
  const char *version = FL_PROTO_LATEST;
  for (int i = 0; asked && fl_protocols[i]; i++)
    if (strcmp(asked, fl_protocols[i]) == 0)
      version = fl_protocols[i];

  /* Before anything can be refused: the refusal is worded for its reader. */
  s->iface = fl_hints_iface(params);
  json_t *ident = json_object_get(json_object_get(params, "_meta"), "fleet/identity");
  fl_ident id_c;
  memset(&id_c, 0, sizeof id_c);
  /* fleet-mcp sets resume when it registers again after its connection to
   * fleetd was lost (a fleetd restart): the same entity, back. */
  int resumed = json_is_true(json_object_get(ident, "resume"));
  if (json_is_object(ident)) {
    id_c.name = fl_meta_str(ident, "name");
    id_c.role = fl_meta_str(ident, "role");
    id_c.gid = fl_meta_str(ident, "gid");
    id_c.pane = fl_meta_str(ident, "pane");
    id_c.tmux_socket = fl_meta_str(ident, "tmuxSocket");
    id_c.coord_id = fl_meta_str(ident, "coordId");
    id_c.pid = (long)json_integer_value(json_object_get(ident, "pid"));
    id_c.operator_session = s->iface == FL_IFACE_FLEETCTL;
    json_t *groups = json_object_get(ident, "groups"), *g;
    id_c.groups_given = json_is_array(groups);
    size_t i;
    json_array_foreach(groups, i, g) {
      if (json_is_string(g) && id_c.ngroups < sizeof id_c.groups / sizeof id_c.groups[0])
        id_c.groups[id_c.ngroups++] = json_string_value(g);
    }
    if (!id_c.name) {
      char msg[160];
      fl_errf(msg, sizeof msg, "fleet identity has no name: %s", fl_hints_give_name(s->iface));
      fl_session_reply_error(s, id, FL_RPC_INVALID_PARAMS, msg);
      return;
    }
  }
  if (id_c.name && fl_channel_wanted(params) && !(s->channel = fl_channel_new())) {
    fl_session_reply_error(s, id, FL_RPC_INTERNAL_ERROR,
                           "fleetd could not start channel pushes (out of memory)");
    return;
  }
  char err[512] = "";
  int rc = fl_gw_attach(s->gw, id_c.name ? &id_c : NULL, &fl_session_ops, s, &s->client, err,
                        sizeof err);
  if (rc) {
    char msg[600];
    fl_hints_refusal(s->iface, rc, err[0] ? err : fl_strerror(rc), msg, sizeof msg);
    fl_mcp_counters_bump(s->counters, FL_MCP_C_SESSIONS_REFUSED);
    fl_warn(NULL, "session refused: %s", msg);
    fl_session_reply_error(s, id, FL_RPC_INVALID_PARAMS, msg);
    fl_channel_free(&s->channel);
    return;
  }
  s->initialized = 1;
  const char *who = fl_client_name(s->client);
  if (who && resumed) {
    fl_mcp_counters_bump(s->counters, FL_MCP_C_SESSIONS_RESUMED);
    fl_info(NULL, "'%s' resumed its session after a lost connection", who);
  }
  char instructions[768];
  fl_errf(instructions, sizeof instructions,
          "fleet connects you with the other agents in your fleet%s%s. fleet_list shows who "
          "is there; fleet_send messages one (wait_s waits for the reply); fleet_poll reads "
          "what is waiting for you; fleet_reply answers; fleet_ask asks mid-turn (answer an "
          "ask with fleet_send {turnId}).%s",
          who ? "; you are " : "", who ? who : "",
          s->channel ? " A message for you also arrives as a <channel> event "
                       "(from, msgId, kind): it stays waiting until fleet_poll reads it, and "
                       "fleet_reply answers it."
                     : "");
  json_t *result =
      json_pack("{s:s, s:{s:{s:b}, s:{}}, s:{s:s, s:s}, s:s}", "protocolVersion", version,
                "capabilities", "tools", "listChanged", 0, "logging", "serverInfo", "name",
                "fleetd", "version", FLEET_VERSION, "instructions", instructions);
  /* Who the session is, so fleet-mcp registers again as the same entity
   * (the same gid) should its connection be lost. */
  if (who && result)
    json_object_set_new(result, "_meta",
                        json_pack("{s:{s:s, s:s}}", "fleet/identity", "gid",
                                  fl_client_gid(s->client), "name", who));
  /* A channel server declares the capability back (Claude Code channels). */
  if (s->channel && result)
    json_object_set_new(json_object_get(result, "capabilities"), "experimental",
                        json_pack("{s:{}}", FL_CHANNEL_CAPABILITY));
  /* How long fleetd may make each kind of call wait, so a client that bounds
   * its own wait (fleetctl) never gives up before fleetd would answer. */
  json_t *meta = result ? json_object_get(result, "_meta") : NULL;
  if (result && !meta && json_object_set_new(result, "_meta", json_object()) == 0)
    meta = json_object_get(result, "_meta");
  if (meta)
    json_object_set_new(meta, "fleet/bounds", fl_gw_bounds(s->gw));
  fl_session_reply(s, id, result);
  /* What was held before the session attached is pushed after its reply. */
  if (s->channel)
    fl_gw_each_held(s->gw, s->client, FL_CHANNEL_BACKLOG, fl_session_held, s);
}

static void fl_ping(fl_session *s, json_t *id, json_t *params) {
  fl_session_reply(s, id, json_object());
}

static void fl_set_level(fl_session *s, json_t *id, json_t *params) {
  const char *lvl = json_string_value(json_object_get(params, "level"));
  for (int i = 0; lvl && fl_levels[i]; i++) {
    if (strcmp(lvl, fl_levels[i]) == 0) {
      s->log_level = i;
      fl_session_reply(s, id, json_object());
      return;
    }
  }
  fl_session_reply_error(s, id, FL_RPC_INVALID_PARAMS,
                         "level must be one of debug, info, notice, warning, error, critical, "
                         "alert, emergency");
}

static void fl_cancelled(fl_session *s, json_t *id, json_t *params) {
  fl_tool_call_cancel(s, json_object_get(params, "requestId"));
}

/* ---- dispatch -------------------------------------------------------------------- */

typedef struct fl_method {
  const char *name;
  fl_method_fn handler;
  int needs_init; /* refused with -32600 before initialize */
} fl_method;

static const fl_method fl_methods[] = {
    {"initialize", fl_initialize, 0},         {"ping", fl_ping, 0},
    {"tools/list", fl_tools_list, 1},         {"tools/call", fl_tools_call, 1},
    {"logging/setLevel", fl_set_level, 1},    {"fleet/status", fl_admin_status, 1},
    {"fleet/identity", fl_admin_identity, 1}, {"fleet/peers", fl_admin_peers, 1},
    {"fleet/peer.add", fl_admin_peer_add, 1}, {"fleet/peer.remove", fl_admin_peer_remove, 1},
    {"fleet/trace", fl_admin_trace, 1},       {"fleet/rooms", fl_admin_rooms, 1},
    {"fleet/dlq", fl_admin_dlq, 1},           {"fleet/gid.release", fl_admin_gid_release, 1},
    {"fleet/hook", fl_admin_hook, 1},         {"fleet/approvals", fl_admin_approvals, 1},
};

/* Notifications that do something; notifications/initialized and any other
 * need nothing. */
static const fl_method fl_notifications[] = {
    {"notifications/cancelled", fl_cancelled, 0},
};

static const fl_method *fl_method_find(const fl_method *table, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(table[i].name, name) == 0)
      return &table[i];
  return NULL;
}

#define FL_COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

void fl_session_parse(const char *line, size_t len, fl_session_parsed *out) {
  memset(out, 0, sizeof *out);
  out->rc = fl_rpc_parse(line, len, &out->rpc, &out->err_id, &out->err_msg);
}

void fl_session_parsed_free(fl_session_parsed *p) {
  fl_rpc_free(&p->rpc);
  json_decref(p->err_id);
  p->err_id = NULL;
}

void fl_session_line(fl_session *s, const char *line, size_t len) {
  fl_session_parsed p;
  fl_session_parse(line, len, &p);
  fl_session_dispatch(s, &p);
}

void fl_session_dispatch(fl_session *s, fl_session_parsed *p) {
  int rc = p->rc;
  if (rc != 0) {
    fl_mcp_counters_bump(s->counters, rc == FL_RPC_PARSE_ERROR ? FL_MCP_C_REQUESTS_UNPARSABLE
                                                               : FL_MCP_C_REQUESTS_INVALID);
    fl_session_reply_error(s, p->err_id, rc, p->err_msg ? p->err_msg : "invalid request");
    fl_session_parsed_free(p);
    return;
  }
  fl_rpc rpc = p->rpc;
  memset(&p->rpc, 0, sizeof p->rpc);
  if (rpc.kind == FL_RPC_RESPONSE) {
    fl_rpc_free(&rpc); /* fleetd sends no requests; nothing to match */
    return;
  }
  if (rpc.kind == FL_RPC_NOTIFICATION) {
    const fl_method *n =
        fl_method_find(fl_notifications, FL_COUNT_OF(fl_notifications), rpc.method);
    if (n)
      n->handler(s, NULL, rpc.params);
    fl_rpc_free(&rpc);
    return;
  }
  const fl_method *m = fl_method_find(fl_methods, FL_COUNT_OF(fl_methods), rpc.method);
  if (!m) {
    fl_mcp_counters_bump(s->counters, FL_MCP_C_REQUESTS_UNKNOWN_METHOD);
    char msg[200];
    fl_errf(msg, sizeof msg, "Method not found: %.100s", rpc.method);
    fl_session_reply_error(s, rpc.id, FL_RPC_METHOD_NOT_FOUND, msg);
  } else if (m->needs_init && !s->initialized) {
    fl_mcp_counters_bump(s->counters, FL_MCP_C_REQUESTS_INVALID);
    fl_session_reply_error(s, rpc.id, FL_RPC_INVALID_REQUEST,
                           "send initialize before any other request");
  } else {
    m->handler(s, rpc.id, rpc.params);
  }
  fl_rpc_free(&rpc);
}

void fl_session_oversize(fl_session *s) {
  fl_mcp_counters_bump(s->counters, FL_MCP_C_REQUESTS_OVERSIZE);
  char msg[160];
  fl_errf(msg, sizeof msg, "line exceeds %u bytes; closing the connection", FL_MAX_LINE);
  fl_session_reply_error(s, NULL, FL_RPC_INVALID_REQUEST, msg);
}

/* ---- lifetime -------------------------------------------------------------------- */

fl_session *fl_session_new(fl_gw *gw, fl_mcp_counters *counters, const fl_session_io *io,
                           void *conn) {
  fl_session *s = fl_calloc(1, sizeof *s);
  if (!s)
    return NULL;
  s->gw = gw;
  s->counters = counters;
  s->io = io;
  s->conn = conn;
  s->log_level = FL_LEVEL_INFO;
  return s;
}

void fl_session_free(fl_session **sp) {
  if (!sp || !*sp)
    return;
  fl_session *s = *sp;
  fl_tool_call_cancel_all(s);
  if (s->client)
    fl_gw_detach(s->gw, &s->client);
  fl_channel_free(&s->channel);
  fl_free(s);
  *sp = NULL;
}
