/* fleetctl_profile.c — `fleetctl profile AGENT`: a spawn profile for
 * fleetd.json that starts a real agent CLI as a fleet worker, with the
 * files that agent needs (see fleetctl_profile.h).
 *
 * One row of fl_profile_agents per agent: the program looked up on PATH,
 * the regex of its idle, empty input line (`prompt`), the regex of a line
 * it shows only while at work (`busy`, for an agent whose input line looks
 * the same then), how long its screen must stay still before fleet types
 * (`quietMs`), the leading characters it treats as commands
 * (`commandChars`), and a function that adds its files and command-line
 * arguments. What every profile shares:
 *
 *  - The command names the agent by absolute path. fleetd opens the window
 *    with `tmux new-window`, so tmux finds a bare name on the tmux server's
 *    PATH; a profile's env.PATH only reaches the agent once it runs.
 *  - The worker's MCP config runs fleet-mcp by absolute path and sets no
 *    FLEET_* variable: fleet-mcp takes FLEET_GID, FLEET_NAME, FLEET_ROLE
 *    and FLEET_SOCKET from the window's environment, which fleetd sets.
 *  - The files live in one directory of their own (--dir; by default
 *    <state dir>/profiles/<agent>), so nothing of the user's own agent
 *    config is touched.
 *
 * The Claude Code row also writes the hooks that run fleet-hook
 * (fleetctl_hooks.c) into its settings.json.
 *
 * The Claude Code row is what tests/clis/claude.test.mjs runs. Nothing is
 * written here: the output (--json: {profile, files, notes}) is what a user
 * or a test writes. */
#include "clients/fleetctl_profile.h"

#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clients/client_paths.h"
#include "clients/fleetctl_hooks.h"
#include "clients/fleetctl_report.h"
#include "clients/fleetctl_rpc.h"
#include "common/alloc.h"
#include "common/limits.h"
#include "common/paths.h"

/* Long enough for any agent to start, show its screen and have its MCP
 * client register; a first start that migrates its config takes longest. */
#define FL_PROFILE_READY_S 60

/* What every agent's builder gets. */
typedef struct fl_profile_ctx {
  const char *dir;        /* absolute: where the files go */
  const char *cwd;        /* absolute: the agent's working directory */
  const char *fleet_mcp;  /* absolute path of fleet-mcp (or the bare name) */
  const char *fleet_hook; /* absolute path of fleet-hook (or the bare name) */
  json_t *command;        /* the profile's command; [0] is the agent */
  json_t *env;            /* the profile's env */
  json_t *files;          /* [{path, content}] */
  json_t *notes;          /* [string] */
} fl_profile_ctx;

typedef struct fl_profile_agent {
  const char *name;          /* the profile's name and the argument of `fleetctl profile` */
  const char *program;       /* looked up on PATH */
  const char *prompt;        /* the idle, empty input line (a POSIX ERE) */
  const char *busy;          /* a line shown only while at work (a POSIX ERE), NULL = none */
  int quiet_ms;              /* the screen must be still this long before typing */
  const char *command_chars; /* leading characters the agent reads as commands */
  int (*build)(fl_profile_ctx *x);
} fl_profile_agent;

/* ---- helpers --------------------------------------------------------------------- */

/* p made absolute against the current directory (and without a trailing
 * '/'), into out; 0 or -1 when it does not fit. */
static int absolute(const char *p, char *out, size_t n) {
  char cwd[PATH_MAX];
  int w;
  if (p[0] == '/')
    w = snprintf(out, n, "%s", p);
  else if (getcwd(cwd, sizeof cwd))
    w = snprintf(out, n, "%s/%s", cwd, p);
  else
    return -1;
  if (w <= 0 || (size_t)w >= n)
    return -1;
  size_t len = (size_t)w;
  while (len > 1 && out[len - 1] == '/')
    out[--len] = '\0';
  return 0;
}

/* Adds {path: dir/name, content: doc as indented JSON + '\n'}; steals doc. */
static int add_json_file(fl_profile_ctx *x, const char *name, json_t *doc) {
  char path[PATH_MAX];
  char *text = doc ? json_dumps(doc, JSON_INDENT(2)) : NULL;
  json_decref(doc);
  int ok = text && snprintf(path, sizeof path, "%s/%s", x->dir, name) < (int)sizeof path;
  json_t *content = ok ? json_sprintf("%s\n", text) : NULL;
  fl_free(text);
  ok = content && json_array_append_new(
                      x->files, json_pack("{s:s, s:o}", "path", path, "content", content)) == 0;
  return ok ? 0 : -1;
}

static int note(fl_profile_ctx *x, const char *text) {
  return json_array_append_new(x->notes, json_string(text));
}

/* A path under dir as a new JSON string. */
static json_t *under(const fl_profile_ctx *x, const char *name) {
  return json_sprintf("%s/%s", x->dir, name);
}

/* ---- Claude Code ------------------------------------------------------------------- */

/* Claude Code keeps its state in CLAUDE_CONFIG_DIR (default ~). Before it
 * takes input on a fresh config it asks, each blocking a spawned worker:
 * the onboarding (which first checks that api.anthropic.com is reachable),
 * whether to use an ANTHROPIC_API_KEY it finds in its environment, and
 * whether to trust the working directory. .claude.json answers them:
 * hasCompletedOnboarding, customApiKeyResponses.approved (the key's last 20
 * characters) and projects[cwd].hasTrustDialogAccepted. */
#define FL_CLAUDE_KEY_TAIL 20

static int build_claude(fl_profile_ctx *x) {
  json_t *cfgdir = under(x, "config");
  if (!cfgdir || json_object_set_new(x->env, "CLAUDE_CONFIG_DIR", cfgdir) != 0)
    return -1;
  if (json_array_append_new(x->command, json_string("--mcp-config")) != 0 ||
      json_array_append_new(x->command, under(x, "worker.mcp.json")) != 0 ||
      json_array_append_new(x->command, json_string("--settings")) != 0 ||
      json_array_append_new(x->command, under(x, "settings.json")) != 0)
    return -1;

  json_t *mcp = json_pack("{s:{s:{s:s, s:s, s:[]}}}", "mcpServers", "fleet", "type", "stdio",
                          "command", x->fleet_mcp, "args");
  json_t *settings = json_pack("{s:{s:[s], s:s}, s:o}", "permissions", "allow", "mcp__fleet",
                               "defaultMode", "default", "hooks", fl_hooks_claude(x->fleet_hook));
  json_t *state = json_pack("{s:b, s:{s:{s:b}}}", "hasCompletedOnboarding", 1, "projects", x->cwd,
                            "hasTrustDialogAccepted", 1);
  const char *key = getenv("ANTHROPIC_API_KEY");
  int with_key = key && strlen(key) >= FL_CLAUDE_KEY_TAIL;
  if (state && with_key &&
      json_object_set_new(state, "customApiKeyResponses",
                          json_pack("{s:[s], s:[]}", "approved",
                                    key + strlen(key) - FL_CLAUDE_KEY_TAIL, "rejected")) != 0) {
    json_decref(state);
    state = NULL;
  }
  if (add_json_file(x, "worker.mcp.json", mcp) || add_json_file(x, "settings.json", settings) ||
      add_json_file(x, "config/.claude.json", state))
    return -1;

  if (note(x, "worker.mcp.json runs fleet-mcp with no FLEET_* settings of its own: fleet-mcp takes "
              "FLEET_GID, FLEET_NAME, FLEET_ROLE and FLEET_SOCKET from the window fleetd opens, "
              "which Claude Code passes on to it.") ||
      note(x, "settings.json allows the fleet tools (permissions.allow [\"mcp__fleet\"]): without "
              "it Claude Code stops at a permission prompt on the first fleet call, and claude -p "
              "refuses every fleet call.") ||
      note(x, "settings.json sets the hooks that run fleet-hook (`fleetctl hooks claude --check "
              "FILE` checks a settings file for them). They report to fleetd when a prompt is "
              "submitted (UserPromptSubmit), a turn ends (Stop), a tool asks for permission "
              "(PermissionRequest) and a dialog or the idle prompt shows (Notification), and "
              "let fleetd answer: a message for the turn (additionalContext), a wake-up of the "
              "idle session (the asyncRewake waiter of SessionStart and Stop), a decision on the "
              "permission. With no fleetd, or one that does not serve fleet/hook, fleet-hook "
              "exits 0 silently and the worker runs as without them.") ||
      note(x, "settings.json sets permissions.defaultMode \"default\": a tool call outside "
              "permissions.allow asks at a dialog, which the PermissionRequest hook reports. "
              "Claude Code's auto mode checks each call on Anthropic's servers, and where that "
              "check cannot be reached (a model behind a gateway) it stops at a dialog of its "
              "own that no hook answers.") ||
      note(x, "The worker keeps its own Claude Code config (CLAUDE_CONFIG_DIR, the config "
              "directory here), so nothing of yours is touched. Its .claude.json pre-answers the "
              "first-run dialogs that would block a spawned worker: onboarding "
              "(hasCompletedOnboarding), trust of the working directory "
              "(projects[cwd].hasTrustDialogAccepted) and, when ANTHROPIC_API_KEY was set here, "
              "the use of that key (customApiKeyResponses, its last 20 characters).") ||
      json_array_append_new(
          x->notes,
          json_sprintf("Sign the worker's config in once, or give it an API key: run "
                       "`CLAUDE_CONFIG_DIR=%s/config claude` and /login, or have ANTHROPIC_API_KEY "
                       "in the environment of the tmux server fleetd opens windows on (or in the "
                       "profile's env) and run `fleetctl profile claude` again with it set, so its "
                       "use is pre-approved.",
                       x->dir)) != 0 ||
      note(x, "A spawn for another working directory needs its own hasTrustDialogAccepted entry "
              "(an entry also covers the directories below it): run fleetctl profile again with "
              "--cwd.") ||
      note(x, "Only the fleet tools are allowed: any other tool call Claude Code wants confirmed "
              "stops the worker at a dialog in its pane, and its briefs wait until someone answers "
              "it there. Add --permission-mode to the command, or rules to settings.json, for what "
              "the worker's tasks need."))
    return -1;
  if (!with_key &&
      note(x, "ANTHROPIC_API_KEY is not set here, so its use is not pre-approved: with a key in "
              "the worker's environment, Claude Code would stop at \"Do you want to use this API "
              "key?\"."))
    return -1;
  return 0;
}

/* ---- opencode ------------------------------------------------------------------------ */

/* opencode reads the config file named by OPENCODE_CONFIG on top of the
 * user's own (global and project) config, so the worker keeps the user's
 * provider, model and login and gets only the fleet server added. It
 * passes its environment on to a local MCP server. */
static int build_opencode(fl_profile_ctx *x) {
  json_t *cfg = under(x, "opencode.json");
  if (!cfg || json_object_set_new(x->env, "OPENCODE_CONFIG", cfg) != 0)
    return -1;
  json_t *doc =
      json_pack("{s:s, s:{s:{s:s, s:[s], s:b}}}", "$schema", "https://opencode.ai/config.json",
                "mcp", "fleet", "type", "local", "command", x->fleet_mcp, "enabled", 1);
  if (add_json_file(x, "opencode.json", doc) ||
      note(x, "opencode.json runs fleet-mcp with no FLEET_* settings of its own: opencode passes "
              "its environment on, so fleet-mcp takes FLEET_GID, FLEET_NAME, FLEET_ROLE and "
              "FLEET_SOCKET from the window fleetd opens. OPENCODE_CONFIG adds this file to your "
              "own opencode config, so the worker uses your provider, model and login.") ||
      note(x, "opencode's idle input line shows a placeholder (┃  Ask anything… \"Fix broken "
              "tests\" on the start screen, an empty ┃ in a session); the prompt matches both and "
              "nothing typed. It draws its first screen only after its config and MCP servers are "
              "loaded, which can take tens of seconds on a busy machine.") ||
      note(x, "opencode reads a leading ! as a shell command and a leading / as one of its "
              "commands; fleet neutralizes such a leading character of a brief (commandChars)."))
    return -1;
  return 0;
}

/* ---- Codex ------------------------------------------------------------------------------ */

/* Codex keeps one config.toml in CODEX_HOME (~/.codex), with the user's
 * login and model. The worker leaves it alone and adds what fleet needs
 * with -c overrides, each a TOML value: the fleet MCP server (Codex gives a
 * stdio server a clean environment, with only the variables env_vars
 * names), no background daemon left behind (features.daemon_auto_start),
 * and the working directory trusted, since Codex asks before it works in
 * a folder of a git repository it has not been told to trust (the inline
 * `projects` table keeps a path with dots in it one key). */
/* Appends "-c" and v to the command; steals v (NULL: fails). */
static int add_override(fl_profile_ctx *x, json_t *v) {
  if (!v)
    return -1;
  if (json_array_append_new(x->command, json_string("-c")) != 0) {
    json_decref(v);
    return -1;
  }
  return json_array_append_new(x->command, v) != 0 ? -1 : 0;
}

/* s as a TOML basic string (JSON's string escapes are TOML's), new; NULL on failure. */
static char *toml_string(const char *s) {
  json_t *j = json_string(s);
  char *q = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
  json_decref(j);
  return q;
}

static int build_codex(fl_profile_ctx *x) {
  char *qmcp = toml_string(x->fleet_mcp);
  char *qcwd = toml_string(x->cwd);
  int rc = -1;
  if (!qmcp || !qcwd)
    goto done;
  if (add_override(x, json_sprintf("mcp_servers.fleet.command=%s", qmcp)) ||
      add_override(x, json_string("mcp_servers.fleet.args=[]")) ||
      add_override(x, json_string("mcp_servers.fleet.env_vars=[\"FLEET_GID\",\"FLEET_NAME\","
                                  "\"FLEET_ROLE\",\"FLEET_GROUPS\",\"FLEET_SOCKET\",\"TMUX\","
                                  "\"TMUX_PANE\"]")) ||
      add_override(x, json_string("features.daemon_auto_start=false")) ||
      add_override(x, json_sprintf("projects={%s={trust_level=\"trusted\"}}", qcwd)))
    goto done;
  if (note(x, "The command adds the fleet MCP server to your own Codex config with -c overrides: "
              "the worker keeps your CODEX_HOME (~/.codex), with your login and model, and no "
              "file is written.") ||
      note(x, "mcp_servers.fleet.env_vars passes the FLEET_* variables of the window fleetd "
              "opens: Codex starts a stdio MCP server with a clean environment and only the "
              "variables env_vars names.") ||
      note(x, "features.daemon_auto_start=false keeps Codex from leaving a background daemon "
              "behind when the worker stops.") ||
      note(x, "projects={cwd={trust_level=\"trusted\"}} answers Codex's \"Trust this folder?\" "
              "question, which it asks before working in a git repository's folder and which "
              "would block a spawned worker. A spawn for another working directory needs it for "
              "that one: run fleetctl profile again with --cwd.") ||
      note(x, "Codex's idle input line is › with a placeholder (› Ask Codex to do anything); the "
              "prompt matches it and nothing typed. Codex shows that same line while it works, "
              "so busy matches the status line it shows above it for the whole turn (• Working "
              "(5s • esc to interrupt)): a screen with that line is busy, however still.") ||
      note(x, "Codex reads a leading / as one of its "
              "commands and a leading ! as a shell command; fleet neutralizes such a leading "
              "character of a brief (commandChars)."))
    goto done;
  rc = 0;
done:
  fl_free(qmcp);
  fl_free(qcwd);
  return rc;
}

/* ---- the table ---------------------------------------------------------------------------- */

static const fl_profile_agent fl_profile_agents[] = {
    /* Claude Code's idle input line: "❯" and a no-break space, or "> " inside
     * a box border on older versions; padded with spaces or no-break spaces.
     * Claude Code keeps that empty line while it works too, and its status
     * bar under it says "esc to interrupt" for the whole turn ("⏸ manual
     * mode on · esc to interrupt · ← for agents"; "? for shortcuts" when
     * idle). Its spinner keeps the screen moving, but on a loaded machine
     * its redraw can stall for longer than quietMs: busy is that bar. */
    {"claude", "claude", "^(│|\\|)?( |\u00a0)*(>|❯)( |\u00a0)*(│|\\|)?( |\u00a0)*$",
     "(^ *|· )esc to interrupt( ·|$)", 500, "!/#", build_claude},
    /* opencode's idle input line: a "┃" border, empty in a session, with a
     * placeholder ("Ask anything… \"Fix broken tests\"") on its start screen.
     * quietMs 2000: on a loaded machine opencode answers keys late for a while
     * after it redraws; with 500 its first briefs failed more often there. */
    {"opencode", "opencode", "^ *┃ *(Ask anything.*)?$", NULL, 2000, "!/#", build_opencode},
    /* Codex's idle input line: "›" and its placeholder. Codex keeps that
     * line, placeholder and all, while it works, and its status line above
     * it ("• Working (5s • esc to interrupt)", the spinner blinking • and ◦
     * every ~0.6 s, the seconds counting) can stay still for longer than
     * quietMs: busy is that status line, which shows for a whole turn. */
    {"codex", "codex", "^ *› *(Ask Codex to do anything.*)?$",
     "^(•|◦) .*\\(([0-9]+[hms] ?)+ • esc to interrupt", 500, "!/#", build_codex},
};
#define FL_PROFILE_NAGENTS (sizeof fl_profile_agents / sizeof fl_profile_agents[0])

/* ---- output -----------------------------------------------------------------------------------
 */

static int print_human(const char *name, json_t *profile, json_t *files, json_t *notes) {
  char *ptext = json_dumps(profile, JSON_INDENT(2));
  if (!ptext)
    return fl_ctl_fail("out of memory");
  printf("# fleetd.json: put this under \"profiles\"\n\"%s\": %s\n", name, ptext);
  fl_free(ptext);
  size_t i;
  json_t *f;
  json_array_foreach(files, i, f) {
    printf("\n# write %s:\n%s", json_string_value(json_object_get(f, "path")),
           json_string_value(json_object_get(f, "content")));
  }
  puts("\n# notes");
  json_t *n;
  json_array_foreach(notes, i, n) printf("- %s\n", json_string_value(n));
  puts("\n# `fleetctl profile --json` prints all of this as one JSON object.");
  return FL_EXIT_OK;
}

int fl_ctl_profile(const char *agent, const char *dir_opt, const char *cwd_opt, int json) {
  const fl_profile_agent *a = NULL;
  for (size_t i = 0; i < FL_PROFILE_NAGENTS; i++)
    if (strcmp(fl_profile_agents[i].name, agent) == 0)
      a = &fl_profile_agents[i];
  if (!a)
    return fl_ctl_usage_fail("profile claude|opencode|codex [--dir DIR] [--cwd DIR]",
                             "profile takes 'claude', 'opencode' or 'codex', not '%s'", agent);

  char dir[PATH_MAX], cwd[PATH_MAX], real[PATH_MAX], exe[PATH_MAX], mcp[PATH_MAX];
  if (dir_opt) {
    if (absolute(dir_opt, dir, sizeof dir) != 0)
      return fl_ctl_fail("--dir %s: the path is too long", dir_opt);
  } else {
    char state[PATH_MAX];
    if (fl_paths_state_dir(state, sizeof state) != 0 ||
        snprintf(dir, sizeof dir, "%s/profiles/%s", state, a->name) >= (int)sizeof dir)
      return fl_ctl_fail("no state directory (set HOME, XDG_STATE_HOME or FLEET_STATE_DIR), or "
                         "give the files' directory with --dir");
  }
  if (absolute(cwd_opt ? cwd_opt : ".", cwd, sizeof cwd) != 0)
    return fl_ctl_fail("--cwd: the path is too long");
  /* The agent keys its per-directory state by the real path. */
  if (realpath(cwd, real) && strlen(real) < sizeof cwd)
    memcpy(cwd, real, strlen(real) + 1);

  int found = fl_client_on_path(a->program, exe, sizeof exe) == 0;
  if (!found)
    snprintf(exe, sizeof exe, "%s", a->program);
  if (fl_client_sibling("fleet-mcp", mcp, sizeof mcp) != 0 &&
      fl_client_on_path("fleet-mcp", mcp, sizeof mcp) != 0)
    snprintf(mcp, sizeof mcp, "fleet-mcp");
  char hook[PATH_MAX];
  fl_hooks_find(hook, sizeof hook);

  int st = FL_EXIT_FAIL;
  json_t *profile = NULL;
  fl_profile_ctx x = {.dir = dir,
                      .cwd = cwd,
                      .fleet_mcp = mcp,
                      .fleet_hook = hook,
                      .command = json_pack("[s]", exe),
                      .env = json_object(),
                      .files = json_array(),
                      .notes = json_array()};
  if (!x.command || !x.env || !x.files || !x.notes || a->build(&x) != 0)
    goto oom;
  if (!found) {
    char msg[PATH_MAX + 256];
    snprintf(msg, sizeof msg,
             "%s was not found on PATH: command[0] is the bare name, which works only if it is on "
             "the PATH of the tmux server fleetd opens windows on. Install it, or put its absolute "
             "path there.",
             a->program);
    fprintf(stderr, "fleetctl: warning: %s\n", msg);
    if (note(&x, msg))
      goto oom;
  }
  if (strcmp(mcp, "fleet-mcp") == 0) {
    fprintf(stderr, "fleetctl: warning: fleet-mcp is not next to fleetctl nor on PATH; the MCP "
                    "config names it bare, so it must be on the agent's PATH\n");
  }
  if (note(&x, "The command names the agent by absolute path: fleetd opens the window with tmux, "
               "which looks a bare name up on the tmux server's PATH; the profile's env.PATH does "
               "not decide it."))
    goto oom;
  profile = json_pack("{s:s, s:O, s:s, s:O, s:s, s:i, s:s, s:i, s:s}", "backend", "tmux", "command",
                      x.command, "cwd", cwd, "env", x.env, "role", "worker", "readyTimeoutS",
                      FL_PROFILE_READY_S, "prompt", a->prompt, "quietMs", a->quiet_ms,
                      "commandChars", a->command_chars);
  if (!profile || (a->busy && json_object_set_new(profile, "busy", json_string(a->busy)) != 0))
    goto oom;
  if (json) {
    json_t *doc = json_pack("{s:s, s:O, s:O, s:O}", "name", a->name, "profile", profile, "files",
                            x.files, "notes", x.notes);
    char *text = doc ? json_dumps(doc, JSON_INDENT(2)) : NULL;
    json_decref(doc);
    if (!text)
      goto oom;
    puts(text);
    fl_free(text);
    st = FL_EXIT_OK;
  } else {
    st = print_human(a->name, profile, x.files, x.notes);
  }
  goto done;
oom:
  st = fl_ctl_fail("out of memory (or a path that is not UTF-8)");
done:
  json_decref(profile);
  json_decref(x.command);
  json_decref(x.env);
  json_decref(x.files);
  json_decref(x.notes);
  return st;
}
