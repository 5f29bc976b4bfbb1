/* fleetctl.c — fleet's admin CLI: options, the command table and the
 * commands (how each result reads is fleetctl_print.c's).
 *
 * fleetctl speaks the same MCP that agents speak (clients/fleetctl_rpc.c):
 * it connects to fleetd's Unix socket, does the initialize handshake, runs
 * one request and exits. So what an operator sees is exactly what an agent
 * would get. status and roster run as an anonymous session (no roster
 * entry); send and poll register as an entity (--as NAME, else $FLEET_NAME,
 * else "operator") for the life of the command, since only entities can send
 * and receive. mcp-config needs no fleetd: it prints a client config that
 * points at the fleet-mcp next to this binary.
 *
 * Each command is one row of fl_ctl_cmds (its words, how many arguments it
 * takes, its handler and its line in the help text); every handler that
 * talks to fleetd goes through ctl_run, the one call-and-print path. Output
 * is a human table or key/value lines by default and the raw JSON result
 * with --json. Exit status: 0 ok, 1 failure (fleetd said no, a tool returned
 * isError, fleetd not running or not answering), 2 usage. A failure is one
 * line on stderr (a usage error adds the command's synopsis), and with
 * --json also a JSON error object on stdout (fleetctl_report.h). Names are
 * checked here before anything connects: --as must follow the name rule. */
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clients/fleetctl_args.h"
#include "clients/fleetctl_hooks.h"
#include "clients/fleetctl_internal.h"
#include "clients/fleetctl_mcp_config.h"
#include "clients/fleetctl_profile.h"
#include "clients/fleetctl_report.h"
#include "clients/fleetctl_rpc.h"
#include "clients/fleetctl_systemd.h"
#include "common/alloc.h"
#include "common/error.h"
#include "common/ids.h"
#include "common/limits.h"
#include "common/names.h"

#define FL_CTL_STR_(x) #x
#define FL_CTL_STR(x) FL_CTL_STR_(x)

/* Which options a command takes besides --socket, --json and --as. */
enum {
  CTL_TAKES_WAIT = 1u << 0,  /* --wait; without it the call may still wait fleetd's default */
  CTL_TAKES_POLL = 1u << 1,  /* --max and --from */
  CTL_AS_OPERATOR = 1u << 2, /* acts as --as, else $FLEET_NAME, else "operator" */
  CTL_AS_AGENT = 1u << 3,    /* --as names the agent it configures */
  CTL_TAKES_SPAWN = 1u << 4, /* --host, --name and --brief */
  CTL_TAKES_OLDER = 1u << 5, /* --older-than */
  CTL_TAKES_DIR = 1u << 6,   /* --dir and --cwd */
  CTL_TAKES_CHECK = 1u << 7, /* --check */
};

typedef struct ctl_cmd {
  const char *name;       /* the command's words: "status", "peer add" */
  int min_args, max_args; /* arguments after the words */
  int (*run)(ctl *c);     /* NULL: handled before dispatch (help) */
  const char *synopsis;   /* the one-line usage */
  const char *about;      /* the help text; each '\n' continues it on the next line */
  unsigned takes;
} ctl_cmd;

static int cmd_status(ctl *c);
static int cmd_roster(ctl *c);
static int cmd_send(ctl *c);
static int cmd_poll(ctl *c);
static int cmd_mcp_config(ctl *c);
static int cmd_profile(ctl *c);
static int cmd_hooks(ctl *c);
static int cmd_identity(ctl *c);
static int cmd_peer_add(ctl *c);
static int cmd_peer_list(ctl *c);
static int cmd_peer_remove(ctl *c);
static int cmd_gid_release(ctl *c);
static int cmd_trace(ctl *c);
static int cmd_spawn(ctl *c);
static int cmd_stop(ctl *c);
static int cmd_approvals(ctl *c);
static int cmd_approve(ctl *c);
static int cmd_systemd(ctl *c);
static int cmd_rooms(ctl *c);
static int cmd_claims(ctl *c);
static int cmd_dashboard(ctl *c);
static int cmd_dlq_list(ctl *c);
static int cmd_dlq_show(ctl *c);
static int cmd_dlq_replay(ctl *c);
static int cmd_dlq_purge(ctl *c);

/* The commands, in the order the help text lists them. */
static const ctl_cmd fl_ctl_cmds[] = {
    {"status", 0, 0, cmd_status, "status", "fleetd's state and counters", 0},
    {"roster", 0, 0, cmd_roster, "roster",
     "every entity fleetd knows: name, role, host,\nstatus, held messages, groups, gid", 0},
    {"send", 2, 2, cmd_send, "send TO CONTENT [--wait S]",
     "send CONTENT to TO (a name or gid); with --wait,\nwait up to S seconds (max " FL_CTL_STR(
         FL_MAX_WAIT_S) ") for the reply",
     CTL_TAKES_WAIT | CTL_AS_OPERATOR},
    {"poll", 0, 0, cmd_poll, "poll [--wait S] [--max N] [--from WHO]",
     "fetch messages held for you: at most N (up to " FL_CTL_STR(
         FL_MAX_POLL) "),\nonly WHO's with --from; waits up to S seconds\nfor the first one",
     CTL_TAKES_WAIT | CTL_TAKES_POLL | CTL_AS_OPERATOR},
    {"spawn", 1, 1, cmd_spawn, "spawn PROFILE [--host H] [--name N] [--brief TEXT] [--wait S]",
     "start an agent from a spawn profile of this host\n(or of host H) in a tmux window; waits up "
     "to S\nseconds for it to register",
     CTL_TAKES_WAIT | CTL_TAKES_SPAWN | CTL_AS_OPERATOR},
    {"stop", 1, 1, cmd_stop, "stop NAME|GID",
     "stop an agent (fleetctl, the operator, may stop\nany of this host; on another host, one "
     "you spawned):\nthe pane fleetd opened closes and it leaves every\nroster",
     CTL_AS_OPERATOR},
    {"approvals", 0, 0, cmd_approvals, "approvals",
     "the permission requests of this host's agents\nthat wait for a decision: requestId, agent,\n"
     "tool, its input, until when, who was asked",
     0},
    {"approve", 3, 4, cmd_approve, "approve AGENT REQUESTID allow|deny [REASON]",
     "answer an agent's permission request (fleetctl,\nthe operator, may answer any of this "
     "host's;\n"
     "elsewhere, as authority.approve there says);\nREASON goes to the agent with a deny",
     CTL_AS_OPERATOR},
    {"mcp-config", 1, 1, cmd_mcp_config, "mcp-config claude|opencode|codex",
     "print an MCP client config for fleet-mcp", CTL_AS_AGENT},
    {"profile", 1, 1, cmd_profile, "profile claude|opencode|codex [--dir DIR] [--cwd DIR]",
     "print a ready spawn profile for that agent, the\nfiles it needs (written under DIR) and "
     "why;\n"
     "CWD is the agent's working directory",
     CTL_TAKES_DIR},
    {"hooks", 1, 1, cmd_hooks, "hooks claude [--check FILE]",
     "print the Claude Code hooks that run fleet-hook\n(the profile's settings have them); with "
     "--check,\nsay whether settings FILE has them right",
     CTL_TAKES_CHECK},
    {"systemd", 0, 0, cmd_systemd, "systemd",
     "print a systemd user unit for the fleetd beside\nthis fleetctl, and how to enable it", 0},
    {"identity", 0, 0, cmd_identity, "identity", "this gateway's host id and public key", 0},
    {"peer add", 2, 3, cmd_peer_add, "peer add HOST PUBKEY [URL]",
     "pin HOST's public key (refused if another key\nis pinned for HOST: remove that pin first)",
     0},
    {"peer list", 0, 0, cmd_peer_list, "peer list",
     "the pinned peers, with their URL and, with rooms\non, the health of the last sync", 0},
    {"rooms", 0, 0, cmd_rooms, "rooms",
     "the registered rooms: id, label, messages, and\neach peer's cursor", 0},
    {"claims", 0, 1, cmd_claims, "claims [RESOURCE]",
     "the resources held now: owner, since, expiry,\nwhether settled", 0},
    {"peer remove", 1, 1, cmd_peer_remove, "peer remove HOST", "drop HOST's pin", 0},
    {"gid release", 1, 1, cmd_gid_release, "gid release GID",
     "forget which host owns GID, so the next host to\nannounce it owns it (a gid otherwise "
     "stays with\nthe host that first announced it)",
     0},
    {"dlq list", 0, 0, cmd_dlq_list, "dlq list",
     "what fleet.dlq holds (read without removing anything): msgId, kind, sender's host,\n"
     "the reason fleet gave and RabbitMQ's x-death",
     0},
    {"dlq show", 1, 1, cmd_dlq_show, "dlq show MSGID", "one dead letter with its envelope and body",
     0},
    {"dlq replay", 1, 1, cmd_dlq_replay, "dlq replay MSGID",
     "puts one back into the inbox it died in, only if it now passes verification", 0},
    {"dlq purge", 0, 0, cmd_dlq_purge, "dlq purge [--older-than D]",
     "empties fleet.dlq (or removes what died more than D ago: 90s, 15m, 2h, 7d)", CTL_TAKES_OLDER},
    {"dashboard", 0, 0, cmd_dashboard, "dashboard",
     "the URL of fleetd's dashboard (with its token when one is needed); /metrics and\n"
     "/api/... are served there too",
     0},
    {"trace", 1, 1, cmd_trace, "trace ID",
     "what this fleetd logged for a flow (recent lines);\nID is a trace id or a msgId", 0},
    {"help", 0, FL_CTL_MAX_ARGS, NULL, "help", "print this text", 0},
};
#define FL_CTL_NCMDS (sizeof fl_ctl_cmds / sizeof fl_ctl_cmds[0])

/* The help text's command column: synopses are padded to this width, and a
 * longer one puts its description on the next line. */
#define FL_CTL_SYNOPSIS_W 30

static void usage(FILE *f) {
  fputs("usage: fleetctl [--socket PATH] [--json] [--as NAME] <command> [args]\n"
        "\n"
        "commands:\n",
        f);
  for (size_t i = 0; i < FL_CTL_NCMDS; i++) {
    const ctl_cmd *k = &fl_ctl_cmds[i];
    if (strlen(k->synopsis) < FL_CTL_SYNOPSIS_W)
      fprintf(f, "  %-*s", FL_CTL_SYNOPSIS_W, k->synopsis);
    else
      fprintf(f, "  %s\n  %-*s", k->synopsis, FL_CTL_SYNOPSIS_W, "");
    for (const char *p = k->about; *p; p++) {
      fputc(*p, f);
      if (*p == '\n')
        fprintf(f, "  %-*s", FL_CTL_SYNOPSIS_W, "");
    }
    fputc('\n', f);
  }
  fputs("\n"
        "options:\n"
        "  --socket PATH   fleetd's socket (default: $FLEET_SOCKET, else\n"
        "                  $XDG_RUNTIME_DIR/fleet/fleetd.sock, else <state dir>/fleetd.sock)\n"
        "  --json          print the JSON result instead of text (for scripts)\n"
        "  --as NAME       the entity send/poll act as (default: $FLEET_NAME, else\n"
        "                  \"operator\"); for mcp-config, the agent name (default \"lead\")\n"
        "  --              end of options (for CONTENT that starts with '-')\n"
        "\n"
        "exit status: 0 ok, 1 failure (fleetd error, tool error, fleetd not running),\n"
        "2 usage error.\n",
        f);
}

/* ---- the one call-and-print path ----------------------------------------- */

/* Prints a result the human way; returns an exit status. */
typedef int (*ctl_print_fn)(ctl *c, json_t *result);

/* What a command asks of fleetd: a JSON-RPC method, or (tool set) a tools/call
 * of that tool; and how its result reads. */
typedef struct ctl_call {
  const char *method;
  const char *tool;
  ctl_print_fn print;
} ctl_call;

/* Opens a session (as identity, stolen; NULL = anonymous), makes the call
 * with params (stolen: the method's params or the tool's arguments) and
 * prints the result: raw JSON with --json, else through call->print. */
static int ctl_run(ctl *c, const ctl_call *call, json_t *identity, json_t *params) {
  json_t *res = NULL;
  int st = fl_ctl_open(&c->conn, identity);
  if (st != FL_EXIT_OK) {
    json_decref(params);
    return st;
  }
  if (call->tool)
    st = fl_ctl_tool(&c->conn, call->tool, params ? params : json_object(), &res);
  else
    st = fl_ctl_call(&c->conn, call->method, params, &res);
  if (st == FL_EXIT_OK)
    st = c->o->json ? print_json(res) : call->print(c, res);
  json_decref(res);
  return st;
}

/* The identity send and poll act as: only entities can send and receive. */
static json_t *operator_identity(const fl_ctl_opts *o) {
  const char *name = o->as;
  if (!name) {
    name = getenv("FLEET_NAME");
    if (!name || !*name)
      name = "operator";
  }
  /* Name only: an existing entity keeps its role and groups. Inside tmux,
   * also the server ($TMUX is "socket-path,pid,session"), so an agent
   * fleetctl spawns opens its window on the user's own tmux server. No
   * pane: fleetctl is never nudged. */
  json_t *id = json_pack("{s:s}", "name", name);
  const char *tmux = getenv("TMUX");
  size_t n = tmux ? strcspn(tmux, ",") : 0;
  if (id && n > 0 && n < FL_MAX_PATH &&
      json_object_set_new(id, "tmuxSocket", json_stringn(tmux, n)) != 0) {
    json_decref(id);
    return NULL;
  }
  return id;
}

/* ---- the commands -------------------------------------------------------------- */

static int cmd_status(ctl *c) {
  static const ctl_call call = {"fleet/status", NULL, print_kv_result};
  return ctl_run(c, &call, NULL, NULL);
}

static int cmd_identity(ctl *c) {
  static const ctl_call call = {"fleet/identity", NULL, print_kv_result};
  return ctl_run(c, &call, NULL, NULL);
}

static int cmd_roster(ctl *c) {
  static const ctl_call call = {NULL, "fleet_list", print_roster};
  return ctl_run(c, &call, NULL, NULL);
}

static int cmd_peer_add(ctl *c) {
  static const ctl_call call = {"fleet/peer.add", NULL, print_kv_result};
  return ctl_run(c, &call, NULL,
                 json_pack("{s:s, s:s, s:s?}", "host", c->args[0], "publicKey", c->args[1], "url",
                           c->nargs > 2 ? c->args[2] : NULL));
}

static int cmd_peer_list(ctl *c) {
  static const ctl_call call = {"fleet/peers", NULL, print_peers};
  return ctl_run(c, &call, NULL, NULL);
}

static int cmd_rooms(ctl *c) {
  static const ctl_call call = {"fleet/rooms", NULL, print_rooms};
  return ctl_run(c, &call, NULL, NULL);
}

static int print_claims(ctl *c, json_t *res) {
  if (json_is_true(json_object_get(res, "degraded")))
    return fl_ctl_fail("claims need rooms, which are not configured on this fleetd (set "
                       "\"rooms\" in fleetd.json)");
  json_t *claims = json_object_get(res, "claims"), *cl;
  size_t i;
  if (json_array_size(claims) == 0)
    printf("no resource is held\n");
  json_array_foreach(claims, i, cl) {
    json_t *o = json_object_get(cl, "owner");
    printf("%-24s %s@%s  since %s  until %s%s\n", str_or(cl, "resource", "-"),
           str_or(o, "name", "-"), str_or(o, "host", "-"), str_or(cl, "since", "-"),
           str_or(cl, "expiresAt", "-"),
           json_is_true(json_object_get(cl, "settled")) ? "" : "  (tentative)");
  }
  return FL_EXIT_OK;
}

static int cmd_claims(ctl *c) {
  static const ctl_call call = {NULL, "fleet_claims", print_claims};
  return ctl_run(c, &call, NULL, c->nargs ? json_pack("{s:s}", "resource", c->args[0]) : NULL);
}

static int cmd_peer_remove(ctl *c) {
  static const ctl_call call = {"fleet/peer.remove", NULL, print_kv_result};
  return ctl_run(c, &call, NULL, json_pack("{s:s}", "host", c->args[0]));
}

static int cmd_gid_release(ctl *c) {
  static const ctl_call call = {"fleet/gid.release", NULL, print_kv_result};
  return ctl_run(c, &call, NULL, json_pack("{s:s}", "gid", c->args[0]));
}

static int cmd_trace(ctl *c) {
  static const ctl_call call = {"fleet/trace", NULL, print_trace};
  return ctl_run(c, &call, NULL, json_pack("{s:s}", "traceId", c->args[0]));
}

static int print_dlq_list(ctl *c, json_t *res) {
  json_t *msgs = json_object_get(res, "messages"), *m;
  size_t i;
  if (json_array_size(msgs) == 0) {
    printf("fleet.dlq is empty\n");
    return FL_EXIT_OK;
  }
  printf("%-36s  %-9s  %-12s  %-9s  %s\n", "MSGID", "KIND", "FROM HOST", "X-DEATH", "REASON");
  json_array_foreach(msgs, i, m) {
    json_t *xd = json_object_get(m, "xDeath");
    printf("%-36s  %-9s  %-12s  %-9s  %s\n", str_or(m, "msgId", "-"), str_or(m, "kind", "-"),
           str_or(m, "fromHost", "-"), str_or(xd, "reason", "-"), str_or(m, "reason", "-"));
  }
  if (json_is_true(json_object_get(res, "more")))
    printf("(more are queued than one look reads)\n");
  return FL_EXIT_OK;
}

static int cmd_dlq_list(ctl *c) {
  static const ctl_call call = {"fleet/dlq", NULL, print_dlq_list};
  return ctl_run(c, &call, NULL, json_pack("{s:s}", "op", "list"));
}

static int cmd_dlq_show(ctl *c) {
  static const ctl_call call = {"fleet/dlq", NULL, print_kv_result};
  return ctl_run(c, &call, NULL, json_pack("{s:s, s:s}", "op", "show", "msgId", c->args[0]));
}

static int print_replayed(ctl *c, json_t *res) {
  printf("replayed %s into its inbox\n", str_or(res, "msgId", "?"));
  return FL_EXIT_OK;
}

static int cmd_dlq_replay(ctl *c) {
  static const ctl_call call = {"fleet/dlq", NULL, print_replayed};
  return ctl_run(c, &call, NULL, json_pack("{s:s, s:s}", "op", "replay", "msgId", c->args[0]));
}

static int print_purged(ctl *c, json_t *res) {
  printf("purged %lld message(s) from fleet.dlq\n",
         (long long)json_integer_value(json_object_get(res, "purged")));
  return FL_EXIT_OK;
}

static int cmd_dlq_purge(ctl *c) {
  static const ctl_call call = {"fleet/dlq", NULL, print_purged};
  json_t *p = json_pack("{s:s}", "op", "purge");
  if (c->o->older_than_s >= 0)
    json_object_set_new(p, "olderThanS", json_integer(c->o->older_than_s));
  return ctl_run(c, &call, NULL, p);
}

/* The dashboard's URL from fleet/status, with the token of
 * <stateDir>/http-token when fleetd asks for one. */
static int cmd_dashboard(ctl *c) {
  json_t *res = NULL;
  int st = fl_ctl_open(&c->conn, NULL);
  if (st != FL_EXIT_OK)
    return st;
  if ((st = fl_ctl_call(&c->conn, "fleet/status", NULL, &res)) != FL_EXIT_OK)
    return st;
  json_t *http = json_object_get(res, "http");
  const char *url = str_of(http, "url", NULL), *state = str_or(res, "stateDir", "");
  if (!url) {
    json_decref(res);
    return fl_ctl_report(FL_EXIT_FAIL, 0, NULL,
                         "fleetd serves no dashboard: set \"http\": {\"listen\": \"127.0.0.1:0\"} "
                         "in fleetd.json and restart it");
  }
  int need = json_is_true(json_object_get(http, "tokenRequired"));
  char token[80] = "", full[512];
  if (need) {
    char path[FL_MAX_PATH + 32];
    snprintf(path, sizeof path, "%s/http-token", state);
    FILE *f = fopen(path, "r");
    if (!f || !fgets(token, sizeof token, f)) {
      char msg[FL_MAX_PATH + 128];
      snprintf(msg, sizeof msg, "cannot read the dashboard's token %s: %s (run as fleetd's user)",
               path, strerror(errno));
      if (f)
        fclose(f);
      json_decref(res);
      return fl_ctl_report(FL_EXIT_FAIL, 0, NULL, msg);
    }
    fclose(f);
    token[strcspn(token, "\r\n")] = '\0';
  }
  snprintf(full, sizeof full, "%s%s%s", url, need ? "?token=" : "", token);
  if (c->o->json) {
    json_t *o = json_pack("{s:s, s:s, s:b}", "url", full, "listen", str_or(http, "listen", ""),
                          "tokenRequired", need);
    st = print_json(o);
    json_decref(o);
  } else {
    printf("%s\n", full);
  }
  json_decref(res);
  return st;
}

static int cmd_send(ctl *c) {
  static const ctl_call call = {NULL, "fleet_send", print_sent};
  const fl_ctl_opts *o = c->o;
  const char *to = c->args[0], *content = c->args[1];
  if (!*to)
    return fl_ctl_usage_fail(c->cmd->synopsis,
                             "TO must not be empty: give a name, name@host or gid");
  if (!*content)
    return fl_ctl_usage_fail(c->cmd->synopsis, "CONTENT must not be empty");
  if (strlen(content) > FL_MAX_CONTENT)
    return fl_ctl_fail("CONTENT is %zu bytes; the limit is %u (FL_MAX_CONTENT)", strlen(content),
                       FL_MAX_CONTENT);
  json_t *ident = operator_identity(o);
  if (!ident)
    return fl_ctl_fail("out of memory");
  json_t *args = json_pack("{s:s, s:s}", "to", to, "content", content);
  if (!args) {
    json_decref(ident);
    return fl_ctl_fail("TO and CONTENT must be UTF-8 text");
  }
  if (o->wait_s >= 0 && json_object_set_new(args, "wait_s", json_integer(o->wait_s)) != 0) {
    json_decref(ident);
    json_decref(args);
    return fl_ctl_fail("out of memory");
  }
  return ctl_run(c, &call, ident, args);
}

static int cmd_poll(ctl *c) {
  static const ctl_call call = {NULL, "fleet_poll", print_messages};
  const fl_ctl_opts *o = c->o;
  json_t *ident = operator_identity(o);
  if (!ident)
    return fl_ctl_fail("out of memory");
  json_t *args = json_object();
  int ok = args != NULL;
  if (ok && o->wait_s >= 0)
    ok = json_object_set_new(args, "wait_s", json_integer(o->wait_s)) == 0;
  if (ok && o->max >= 0)
    ok = json_object_set_new(args, "max", json_integer(o->max)) == 0;
  if (ok && o->from)
    ok = json_object_set_new(args, "from", json_string(o->from)) == 0;
  if (!ok) {
    json_decref(ident);
    json_decref(args);
    return fl_ctl_fail("out of memory (or --from is not UTF-8)");
  }
  return ctl_run(c, &call, ident, args);
}

/* "spawned NAME (GID) on HOST from profile P: ready" */
static int print_spawned(ctl *c, json_t *sc) {
  const char *status = str_of(sc, "status", NULL);
  printf("spawned %s (%s) on %s from profile %s: %s\n", str_or(sc, "name", "?"),
         str_or(sc, "gid", "?"), str_or(sc, "host", "?"), str_or(sc, "profile", c->args[0]),
         status ? status : "?");
  if (status && strcmp(status, "pending") == 0)
    printf("it has not registered yet; `fleetctl roster` shows it once it does\n");
  return FL_EXIT_OK;
}

static int print_stopped(ctl *c, json_t *sc) {
  printf("stopped %s (%s) on %s\n", str_or(sc, "name", c->args[0]), str_or(sc, "gid", "?"),
         str_or(sc, "host", "?"));
  return FL_EXIT_OK;
}

static int cmd_spawn(ctl *c) {
  static const ctl_call call = {NULL, "fleet_spawn", print_spawned};
  const fl_ctl_opts *o = c->o;
  if (!*c->args[0])
    return fl_ctl_usage_fail(c->cmd->synopsis, "PROFILE must not be empty");
  json_t *ident = operator_identity(o);
  json_t *args = json_pack("{s:s}", "profile", c->args[0]);
  int ok = ident && args;
  if (ok && o->host)
    ok = json_object_set_new(args, "host", json_string(o->host)) == 0;
  if (ok && o->name)
    ok = json_object_set_new(args, "name", json_string(o->name)) == 0;
  if (ok && o->brief)
    ok = json_object_set_new(args, "brief", json_string(o->brief)) == 0;
  if (ok && o->wait_s >= 0)
    ok = json_object_set_new(args, "wait_s", json_integer(o->wait_s)) == 0;
  if (!ok) {
    json_decref(ident);
    json_decref(args);
    return fl_ctl_fail("out of memory (or an argument is not UTF-8)");
  }
  return ctl_run(c, &call, ident, args);
}

static int cmd_stop(ctl *c) {
  static const ctl_call call = {NULL, "fleet_stop", print_stopped};
  if (!*c->args[0])
    return fl_ctl_usage_fail(c->cmd->synopsis, "give the agent's name, name@host or gid");
  json_t *ident = operator_identity(c->o);
  json_t *args = json_pack("{s:s}", "to", c->args[0]);
  if (!ident || !args) {
    json_decref(ident);
    json_decref(args);
    return fl_ctl_fail("out of memory (or NAME is not UTF-8)");
  }
  return ctl_run(c, &call, ident, args);
}

static int cmd_approvals(ctl *c) {
  static const ctl_call call = {"fleet/approvals", NULL, print_approvals};
  return ctl_run(c, &call, NULL, NULL);
}

static int print_approved(ctl *c, json_t *sc) {
  printf("%s request %s of %s (%s) on %s\n", str_or(sc, "status", "?"),
         str_or(sc, "requestId", c->args[1]), str_or(sc, "name", c->args[0]),
         str_or(sc, "gid", "?"), str_or(sc, "host", "?"));
  return FL_EXIT_OK;
}

static int cmd_approve(ctl *c) {
  static const ctl_call call = {NULL, "fleet_approve", print_approved};
  const char *to = c->args[0], *id = c->args[1], *decision = c->args[2];
  if (!*to)
    return fl_ctl_usage_fail(c->cmd->synopsis, "give the agent's name, name@host or gid");
  if (strcmp(decision, "allow") != 0 && strcmp(decision, "deny") != 0)
    return fl_ctl_usage_fail(c->cmd->synopsis, "the decision is allow or deny, not '%.40s'",
                             decision);
  json_t *ident = operator_identity(c->o);
  json_t *args = json_pack("{s:s, s:s, s:s}", "to", to, "requestId", id, "decision", decision);
  if (ident && args && c->nargs > 3 &&
      json_object_set_new(args, "reason", json_string(c->args[3])) != 0) {
    json_decref(args);
    args = NULL;
  }
  if (!ident || !args) {
    json_decref(ident);
    json_decref(args);
    return fl_ctl_fail("out of memory (or an argument is not UTF-8)");
  }
  return ctl_run(c, &call, ident, args);
}

static int cmd_systemd(ctl *c) {
  (void)c;
  return fl_ctl_systemd();
}

static int cmd_mcp_config(ctl *c) {
  const char *kind = c->args[0];
  fl_mcp_client client;
  if (strcmp(kind, "claude") == 0)
    client = FL_MCP_CLAUDE;
  else if (strcmp(kind, "opencode") == 0)
    client = FL_MCP_OPENCODE;
  else if (strcmp(kind, "codex") == 0)
    client = FL_MCP_CODEX;
  else
    return fl_ctl_usage_fail(c->cmd->synopsis,
                             "mcp-config takes 'claude', 'opencode' or 'codex', not '%s'", kind);
  return fl_ctl_mcp_config(client, c->o->as, c->o->socket);
}

static int cmd_profile(ctl *c) {
  return fl_ctl_profile(c->args[0], c->o->dir, c->o->cwd, c->o->json);
}

static int cmd_hooks(ctl *c) { return fl_ctl_hooks(c->args[0], c->o->check, c->o->json); }

/* ---- the dispatch ------------------------------------------------------------------- */

/* Whether the command word w is the first word of name; *sub is then the
 * rest of name ("" for a one-word command). */
static int cmd_word_is(const char *name, const char *w, const char **sub) {
  size_t n = strcspn(name, " ");
  if (strlen(w) != n || strncmp(name, w, n) != 0)
    return 0;
  *sub = name[n] ? name + n + 1 : "";
  return 1;
}

/* The table row for o's command and, for a command with subcommands, its
 * first argument. NULL after reporting the usage error (*st set). */
static const ctl_cmd *cmd_find(const fl_ctl_opts *o, int *st) {
  int has_subs = 0;
  for (size_t i = 0; i < FL_CTL_NCMDS; i++) {
    const char *sub;
    if (!cmd_word_is(fl_ctl_cmds[i].name, o->cmd, &sub))
      continue;
    if (!*sub)
      return &fl_ctl_cmds[i];
    has_subs = 1;
    if (o->nargs > 0 && strcmp(o->args[0], sub) == 0)
      return &fl_ctl_cmds[i];
  }
  if (!has_subs) {
    *st = fl_ctl_usage_fail(NULL, "unknown command '%s'", o->cmd);
    return NULL;
  }
  /* "add HOST PUBKEY [URL], list, or remove HOST" */
  char subs[512] = "";
  size_t len = 0, nsubs = 0, k = 0;
  for (size_t i = 0; i < FL_CTL_NCMDS; i++) {
    const char *sub;
    nsubs += cmd_word_is(fl_ctl_cmds[i].name, o->cmd, &sub);
  }
  for (size_t i = 0; i < FL_CTL_NCMDS && len < sizeof subs; i++) {
    const char *sub;
    if (!cmd_word_is(fl_ctl_cmds[i].name, o->cmd, &sub))
      continue;
    const char *syn = fl_ctl_cmds[i].synopsis + strlen(o->cmd) + 1;
    k++;
    len += (size_t)snprintf(subs + len, sizeof subs - len, "%s%s%s", k == 1 ? "" : ", ",
                            k > 1 && k == nsubs ? "or " : "", syn);
  }
  if (o->nargs == 0)
    *st = fl_ctl_usage_fail(NULL, "%s needs a subcommand: %s", o->cmd, subs);
  else
    *st = fl_ctl_usage_fail(NULL, "%s has no subcommand '%s': use %s", o->cmd, o->args[0], subs);
  return NULL;
}

/* The required arguments of cmd's synopsis (its upper-case words outside
 * brackets, after the command's own words) from index from on, as a list
 * for a sentence: "TO and CONTENT", "claude or opencode". */
static void args_missing(const ctl_cmd *cmd, int from, char *out, size_t n) {
  const char *p = cmd->synopsis + strlen(cmd->name);
  char words[FL_CTL_MAX_ARGS][64];
  int nwords = 0, depth = 0;
  while (*p) {
    p += strspn(p, " ");
    size_t w = strcspn(p, " ");
    if (w == 0)
      break;
    if (depth == 0 && *p != '[' && nwords < FL_CTL_MAX_ARGS) {
      /* "claude|opencode" reads "claude or opencode". */
      size_t o = 0;
      for (size_t i = 0; i < w && o + 5 < sizeof words[0]; i++) {
        if (p[i] == '|') {
          memcpy(words[nwords] + o, " or ", 4);
          o += 4;
        } else {
          words[nwords][o++] = p[i];
        }
      }
      words[nwords++][o] = '\0';
    }
    for (size_t i = 0; i < w; i++)
      depth += p[i] == '[' ? 1 : p[i] == ']' ? -1 : 0;
    p += w;
  }
  size_t len = 0;
  out[0] = '\0';
  for (int i = from; i < nwords && len < n; i++)
    len += (size_t)snprintf(out + len, n - len, "%s%s",
                            i == from ? "" : (i == nwords - 1 ? " and " : ", "), words[i]);
}

/* Whether cmd has the right number of arguments (nargs, after its own
 * words); else the usage error. */
static int check_nargs(const ctl_cmd *cmd, int nargs, const fl_ctl_opts *o) {
  if (nargs >= cmd->min_args && nargs <= cmd->max_args)
    return 0;
  if (nargs < cmd->min_args) {
    char missing[256];
    args_missing(cmd, nargs, missing, sizeof missing);
    return fl_ctl_usage_fail(cmd->synopsis, "%s needs %s", cmd->name, missing);
  }
  if (cmd->max_args == 0) /* the first argument after the command's words */
    return fl_ctl_usage_fail(cmd->synopsis, "%s takes no arguments, not '%s'", cmd->name,
                             o->args[o->nargs - nargs]);
  return fl_ctl_usage_fail(cmd->synopsis, "%s takes at most %d argument%s, not %d%s", cmd->name,
                           cmd->max_args, cmd->max_args == 1 ? "" : "s", nargs,
                           strstr(cmd->synopsis, "CONTENT") ? " (quote CONTENT that has spaces)"
                                                            : "");
}

/* Whether the name a command acts as follows the name rule; else the usage
 * error naming where the name came from (--as, or $FLEET_NAME for send and
 * poll). A bad name is refused here, before anything connects, rather than
 * written into a config or sent to fleetd. */
static int check_as(const ctl_cmd *cmd, const fl_ctl_opts *o) {
  const char *name = o->as, *from = "--as";
  if (!name && (cmd->takes & CTL_AS_OPERATOR)) {
    name = getenv("FLEET_NAME");
    from = "FLEET_NAME";
  }
  if (!name || !*name || (fl_name_valid(name, FL_MAX_NAME) && !fl_is_uuid(name)))
    return 0;
  return fl_ctl_usage_fail(cmd->synopsis, "%s '%.80s' is not a valid name: use %s, and not a UUID",
                           from, name, fl_name_rule);
}

/* "send and poll": the commands that take one of the options in takes. */
static void cmds_taking(unsigned takes, char *out, size_t n) {
  size_t total = 0, k = 0, len = 0;
  out[0] = '\0';
  for (size_t i = 0; i < FL_CTL_NCMDS; i++)
    total += (fl_ctl_cmds[i].takes & takes) != 0;
  for (size_t i = 0; i < FL_CTL_NCMDS && len < n; i++) {
    if (!(fl_ctl_cmds[i].takes & takes))
      continue;
    k++;
    len += (size_t)snprintf(out + len, n - len, "%s%s", k == 1 ? "" : (k == total ? " and " : ", "),
                            fl_ctl_cmds[i].name);
  }
}

int main(int argc, char **argv) {
  fl_ctl_opts o = {.wait_s = -1, .max = -1, .older_than_s = -1};
  /* --json anywhere before "--" also makes a usage error found before it
   * a JSON object. */
  for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
    if (strcmp(argv[i], "--json") == 0)
      fl_ctl_report_json(1);
  int st = fl_ctl_parse_args(argc, argv, &o);
  if (st != 0)
    return st;
  if (o.help || !o.cmd || strcmp(o.cmd, "help") == 0) {
    if (!o.help && !o.cmd) {
      /* Nothing asked for: the whole usage is the answer. */
      usage(stderr);
      if (o.json)
        fl_ctl_report(FL_EXIT_USAGE, 0, NULL, "no command given");
      return FL_EXIT_USAGE;
    }
    usage(stdout);
    return FL_EXIT_OK;
  }

  fl_alloc_init();
  /* fleetd going away mid-write is an error we report, not a silent death. */
  signal(SIGPIPE, SIG_IGN);

  const ctl_cmd *cmd = cmd_find(&o, &st);
  if (!cmd)
    return st;
  int words = strchr(cmd->name, ' ') ? 2 : 1;
  int nargs = o.nargs - (words - 1);
  if ((st = check_nargs(cmd, nargs, &o)) != 0)
    return st;
  char names[128];
  if (o.wait_s >= 0 && !(cmd->takes & CTL_TAKES_WAIT)) {
    cmds_taking(CTL_TAKES_WAIT, names, sizeof names);
    return fl_ctl_usage_fail(NULL, "--wait is for %s", names);
  }
  if ((o.max >= 0 || o.from) && !(cmd->takes & CTL_TAKES_POLL)) {
    cmds_taking(CTL_TAKES_POLL, names, sizeof names);
    return fl_ctl_usage_fail(NULL, "--max and --from are for %s", names);
  }
  if (o.older_than_s >= 0 && !(cmd->takes & CTL_TAKES_OLDER)) {
    cmds_taking(CTL_TAKES_OLDER, names, sizeof names);
    return fl_ctl_usage_fail(NULL, "--older-than is for %s", names);
  }
  if ((o.host || o.name || o.brief) && !(cmd->takes & CTL_TAKES_SPAWN)) {
    cmds_taking(CTL_TAKES_SPAWN, names, sizeof names);
    return fl_ctl_usage_fail(NULL, "--host, --name and --brief are for %s", names);
  }
  if ((o.dir || o.cwd) && !(cmd->takes & CTL_TAKES_DIR))
    return fl_ctl_usage_fail(NULL, "--dir and --cwd are for profile");
  if (o.check && !(cmd->takes & CTL_TAKES_CHECK))
    return fl_ctl_usage_fail(NULL, "--check is for hooks");
  if ((st = check_as(cmd, &o)) != 0)
    return st;

  /* A command that may wait and does not say how long may still wait for
   * fleetd's default, so the read timeout allows for that. */
  long wait = o.wait_s >= 0 ? o.wait_s : ((cmd->takes & CTL_TAKES_WAIT) ? FL_DEFAULT_WAIT_S : 0);
  ctl c = {.o = &o, .cmd = cmd, .args = o.args + (words - 1), .nargs = nargs};
  fl_ctl_init(&c.conn, o.socket, wait + FL_CTL_MARGIN_S);
  st = cmd->run(&c);
  fl_ctl_close(&c.conn);
  return st;
}
