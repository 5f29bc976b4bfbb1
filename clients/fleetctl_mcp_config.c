/* fleetctl_mcp_config.c — `fleetctl mcp-config`: the MCP client config that
 * starts fleet-mcp (see fleetctl_mcp_config.h).
 *
 * Needs no fleetd. The config names fleet-mcp by absolute path (the MCP
 * client starts it from its own working directory and PATH) and, with
 * --socket, an absolute socket path for the same reason. The config goes
 * to stdout, so it can be redirected into a file; how to install it goes
 * to stderr.
 *
 * Codex starts a stdio MCP server with a clean environment (HOME, PATH,
 * USER, TERM and a few more), so its table also lists in env_vars the
 * variables fleet-mcp reads from the terminal Codex runs in: the other
 * FLEET_* settings, the XDG dirs its default socket path comes from, and
 * the tmux pane to nudge. */
#include "clients/fleetctl_mcp_config.h"

#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clients/client_paths.h"
#include "clients/fleetctl_rpc.h"
#include "common/alloc.h"
#include "common/limits.h"

/* The absolute path of the fleet-mcp to put in a config: the one next to
 * this binary, else the first on PATH, else the bare name (with a warning). */
static void find_fleet_mcp(char *out, size_t n) {
  if (fl_client_sibling("fleet-mcp", out, n) == 0)
    return;
  const char *path = getenv("PATH");
  while (path && *path) {
    size_t dl = strcspn(path, ":");
    char cwd[PATH_MAX];
    const char *dir = path;
    if (dl == 0 && getcwd(cwd, sizeof cwd)) { /* an empty PATH entry is "." */
      dir = cwd;
      dl = strlen(cwd);
    }
    if (dl > 0 && dir[0] == '/') {
      int w = snprintf(out, n, "%.*s/fleet-mcp", (int)dl, dir);
      if (w > 0 && (size_t)w < n && access(out, X_OK) == 0)
        return;
    }
    path += strcspn(path, ":");
    if (*path == ':')
      path++;
  }
  fprintf(stderr, "fleetctl: warning: fleet-mcp is not next to fleetctl nor on PATH; the config "
                  "names it bare, so it must be on the MCP client's PATH\n");
  snprintf(out, n, "fleet-mcp");
}

/* Prints s inside single quotes for a POSIX shell. */
static void fputs_shell_quoted(const char *s, FILE *f) {
  fputc('\'', f);
  for (; *s; s++) {
    if (*s == '\'')
      fputs("'\\''", f);
    else
      fputc(*s, f);
  }
  fputc('\'', f);
}

/* Variables Codex must pass on for fleet-mcp to work as it does elsewhere. */
static const char *const fl_codex_env_vars[] = {
    "FLEET_GROUPS",   "FLEET_GID", "FLEET_CHANNEL", "XDG_RUNTIME_DIR",
    "XDG_STATE_HOME", "TMUX",      "TMUX_PANE"};

/* Prints s as a TOML basic string (JSON's string escapes are TOML's). */
static int put_toml_string(const char *s) {
  json_t *j = json_string(s);
  char *q = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
  json_decref(j);
  if (!q)
    return -1;
  fputs(q, stdout);
  fl_free(q);
  return 0;
}

/* Codex's [mcp_servers.fleet] table, for its config.toml. */
static int print_codex(const char *exe, json_t *envv) {
  fputs("[mcp_servers.fleet]\ncommand = ", stdout);
  if (put_toml_string(exe) != 0)
    return fl_ctl_fail("out of memory (or a path that is not UTF-8)");
  fputs("\nargs = []\nenv = { ", stdout);
  const char *k;
  json_t *v;
  int first = 1;
  json_object_foreach(envv, k, v) {
    printf("%s%s = ", first ? "" : ", ", k); /* FLEET_* names are bare TOML keys */
    if (put_toml_string(json_string_value(v)) != 0)
      return fl_ctl_fail("out of memory (or a name or path that is not UTF-8)");
    first = 0;
  }
  fputs(" }\nenv_vars = [", stdout);
  for (size_t i = 0; i < sizeof fl_codex_env_vars / sizeof fl_codex_env_vars[0]; i++)
    printf("%s\"%s\"", i ? ", " : "", fl_codex_env_vars[i]);
  fputs("]\n", stdout);
  fputs("fleetctl: add this table to Codex's config.toml (~/.codex/config.toml, or "
        "$CODEX_HOME/config.toml); env_vars passes on what fleet-mcp reads from the terminal, "
        "which Codex would otherwise not pass\n",
        stderr);
  return FL_EXIT_OK;
}

int fl_ctl_mcp_config(fl_mcp_client client, const char *as, const char *socket_opt) {
  char exe[PATH_MAX];
  find_fleet_mcp(exe, sizeof exe);

  /* The client starts fleet-mcp in its own working directory, so a relative
   * --socket would point somewhere else there. */
  char sock[PATH_MAX + FL_MAX_PATH];
  const char *sockpath = socket_opt;
  if (sockpath && sockpath[0] != '/') {
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof cwd)) {
      snprintf(sock, sizeof sock, "%s/%s", cwd, sockpath);
      sockpath = sock;
    }
  }

  json_t *envv = json_pack("{s:s, s:s}", "FLEET_NAME", as ? as : "lead", "FLEET_ROLE", "lead");
  if (envv && sockpath && json_object_set_new(envv, "FLEET_SOCKET", json_string(sockpath)) != 0) {
    json_decref(envv);
    envv = NULL;
  }
  if (!envv)
    return fl_ctl_fail("out of memory (or a name or path that is not UTF-8)");
  if (client == FL_MCP_CODEX) {
    int rc = print_codex(exe, envv);
    json_decref(envv);
    return rc;
  }
  int claude = client == FL_MCP_CLAUDE;

  json_t *entry, *doc;
  if (claude) {
    entry =
        json_pack("{s:s, s:s, s:[], s:o}", "type", "stdio", "command", exe, "args", "env", envv);
    doc = entry ? json_pack("{s:{s:O}}", "mcpServers", "fleet", entry) : NULL;
  } else {
    entry = json_pack("{s:s, s:[s], s:b, s:o}", "type", "local", "command", exe, "enabled", 1,
                      "environment", envv);
    doc = entry ? json_pack("{s:s, s:{s:O}}", "$schema", "https://opencode.ai/config.json", "mcp",
                            "fleet", entry)
                : NULL;
  }
  int st = FL_EXIT_FAIL;
  char *text = doc ? json_dumps(doc, JSON_INDENT(2)) : NULL;
  char *compact = entry ? json_dumps(entry, JSON_COMPACT) : NULL;
  if (!text || !compact) {
    fl_ctl_fail("out of memory");
    goto done;
  }
  puts(text);
  if (claude) {
    fputs("fleetctl: paste this into .mcp.json at your project root, or run: "
          "claude mcp add-json fleet ",
          stderr);
    fputs_shell_quoted(compact, stderr);
    fputc('\n', stderr);
  } else {
    fputs("fleetctl: paste this into opencode.json at your project root, or merge its \"mcp\" "
          "block into ~/.config/opencode/opencode.json\n",
          stderr);
  }
  st = FL_EXIT_OK;
done:
  fl_free(text);
  fl_free(compact);
  json_decref(doc);
  json_decref(entry);
  return st;
}
