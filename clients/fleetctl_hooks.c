/* fleetctl_hooks.c — the Claude Code hooks that run fleet-hook (see
 * fleetctl_hooks.h and clients/fleet-hook.c).
 *
 * One table, fl_claude_hooks, says which hook events fleet needs and how
 * each must run fleet-hook; the settings `fleetctl profile claude` writes
 * are built from it, and `fleetctl hooks claude --check FILE` checks a
 * settings file against it, so the two never disagree:
 *
 *   SessionStart       fleet-hook --wake, asyncRewake: the waiter of a new,
 *                      idle session (a message for it wakes it)
 *   UserPromptSubmit   fleet-hook: the worker is busy; a message held for it
 *                      goes in with the turn as additionalContext
 *   Stop               fleet-hook --wake, asyncRewake: the worker is idle,
 *                      and waits for its next message
 *   PermissionRequest  fleet-hook: the worker is blocked on a tool; a lead's
 *                      fleet_approve answers the dialog
 *   Notification       fleet-hook, for permission_prompt, idle_prompt and
 *                      elicitation_dialog: blocked on a dialog, or idle
 *
 * An asyncRewake hook runs in the background and wakes the idle session
 * when it exits with status 2; a waiter must be allowed to wait as long as
 * a session may stay idle (its timeout at least FL_HOOK_WAKE_S). A
 * PermissionRequest hook must be allowed the time fleet-hook waits for a
 * lead (FL_HOOK_APPROVE_WAIT_S) and its call. */
#include "clients/fleetctl_hooks.h"

#include <limits.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "clients/client_paths.h"
#include "clients/fleetctl_report.h"
#include "common/alloc.h"
#include "common/limits.h"

/* A sync hook's timeout: fleet-hook's own bound plus room to start. */
#define FL_HOOK_SYNC_TIMEOUT_S (FL_HOOK_CALL_S + 5)
#define FL_HOOK_APPROVE_TIMEOUT_S (FL_HOOK_APPROVE_WAIT_S + FL_HOOK_CALL_S + 5)

/* Claude Code's notification types fleet reads. */
static const char *const fl_notification_types[] = {"permission_prompt", "idle_prompt",
                                                    "elicitation_dialog", NULL};

typedef struct fl_hook_need {
  const char *event;
  int wake;          /* runs fleet-hook --wake as an asyncRewake hook */
  int timeout_s;     /* the least timeout that works */
  int notifications; /* its matcher must cover fl_notification_types */
  const char *why;   /* what fleet loses without it */
} fl_hook_need;

static const fl_hook_need fl_claude_hooks[] = {
    {"SessionStart", 1, FL_HOOK_WAKE_S, 0,
     "a new worker's first message is typed instead of handed over by the hook"},
    {"UserPromptSubmit", 0, FL_HOOK_SYNC_TIMEOUT_S, 0,
     "fleet does not see the worker turn busy, and a busy worker's messages wait for its screen"},
    {"Stop", 1, FL_HOOK_WAKE_S, 0,
     "fleet does not see the worker turn idle, and its messages are typed"},
    {"PermissionRequest", 0, FL_HOOK_APPROVE_TIMEOUT_S, 0,
     "a lead's fleet_approve cannot answer the worker's permission dialogs"},
    {"Notification", 0, FL_HOOK_SYNC_TIMEOUT_S, 1,
     "fleet does not see the worker blocked on a dialog"},
};
#define FL_CLAUDE_NHOOKS (sizeof fl_claude_hooks / sizeof fl_claude_hooks[0])

void fl_hooks_find(char *out, size_t n) {
  if (fl_client_sibling("fleet-hook", out, n) != 0 && fl_client_on_path("fleet-hook", out, n) != 0)
    snprintf(out, n, "fleet-hook");
}

json_t *fl_hooks_claude(const char *fleet_hook) {
  char word[2 * PATH_MAX + 16];
  fl_client_shell_word(fleet_hook, word, sizeof word - 8);
  json_t *hooks = json_object();
  for (size_t i = 0; hooks && i < FL_CLAUDE_NHOOKS; i++) {
    const fl_hook_need *h = &fl_claude_hooks[i];
    json_t *cmd = json_pack("{s:s, s:s+, s:i}", "type", "command", "command", word,
                            h->wake ? " --wake" : "", "timeout", h->timeout_s);
    if (cmd && h->wake && json_object_set_new(cmd, "asyncRewake", json_true()) != 0) {
      json_decref(cmd);
      cmd = NULL;
    }
    json_t *group = cmd ? json_pack("{s:[o]}", "hooks", cmd) : NULL;
    if (group && h->notifications &&
        json_object_set_new(group, "matcher",
                            json_string("permission_prompt|idle_prompt|elicitation_dialog")) != 0) {
      json_decref(group);
      group = NULL;
    }
    if (!group || json_object_set_new(hooks, h->event, json_pack("[o]", group)) != 0) {
      json_decref(hooks);
      hooks = NULL;
    }
  }
  return hooks;
}

/* ---- the check ------------------------------------------------------------------------- */

/* Whether command runs fleet-hook (its first word's last part is
 * fleet-hook, quoted or not) and whether it passes --wake. */
static int runs_fleet_hook(const char *command, int *wake) {
  const char *p = command + strspn(command, " \t");
  char first[PATH_MAX];
  size_t n = 0;
  char quote = 0;
  for (; *p && n + 1 < sizeof first; p++) {
    if (quote) {
      if (*p == quote)
        quote = 0;
      else
        first[n++] = *p;
    } else if (*p == '\'' || *p == '"') {
      quote = *p;
    } else if (*p == ' ' || *p == '\t') {
      break;
    } else {
      first[n++] = *p;
    }
  }
  first[n] = '\0';
  const char *base = strrchr(first, '/');
  base = base ? base + 1 : first;
  if (strcmp(base, "fleet-hook") != 0)
    return 0;
  *wake = 0;
  for (const char *w = strstr(p, "--wake"); w; w = strstr(w + 1, "--wake"))
    if ((w[-1] == ' ' || w[-1] == '\t') && (w[6] == '\0' || w[6] == ' ' || w[6] == '\t'))
      *wake = 1;
  return 1;
}

/* Whether a matcher (absent, "", "*" or a regex Claude Code matches against
 * the notification type) lets type through. */
static int matcher_covers(const char *matcher, const char *type) {
  if (!matcher || !*matcher || strcmp(matcher, "*") == 0)
    return 1;
  char anchored[512];
  if (snprintf(anchored, sizeof anchored, "^(%s)$", matcher) >= (int)sizeof anchored)
    return 0;
  regex_t re;
  if (regcomp(&re, anchored, REG_EXTENDED | REG_NOSUB) != 0)
    return strcmp(matcher, type) == 0;
  int ok = regexec(&re, type, 0, NULL, 0) == 0;
  regfree(&re);
  return ok;
}

static int problem(json_t *problems, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int problem(json_t *problems, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return json_array_append_new(problems, json_string(msg));
}

/* Checks one needed hook against the settings' hooks[h->event]. */
static void check_one(const fl_hook_need *h, json_t *groups, json_t *problems) {
  int found = 0;
  size_t i, j;
  json_t *g, *cmd;
  int covered[sizeof fl_notification_types / sizeof fl_notification_types[0]] = {0};
  json_array_foreach(groups, i, g) {
    const char *matcher = json_string_value(json_object_get(g, "matcher"));
    json_array_foreach(json_object_get(g, "hooks"), j, cmd) {
      const char *command = json_string_value(json_object_get(cmd, "command"));
      const char *type = json_string_value(json_object_get(cmd, "type"));
      int wake = 0;
      if (!command || !type || strcmp(type, "command") != 0 || !runs_fleet_hook(command, &wake))
        continue;
      int rewake = json_is_true(json_object_get(cmd, "asyncRewake"));
      int async = json_is_true(json_object_get(cmd, "async"));
      json_t *t = json_object_get(cmd, "timeout");
      if (h->wake != wake || h->wake != rewake) {
        problem(problems, "%s: %s must %s (it is \"%s\"%s)", h->event, "the fleet-hook command",
                h->wake ? "be `fleet-hook --wake` with \"asyncRewake\": true"
                        : "be `fleet-hook` without --wake and without asyncRewake",
                command, rewake ? ", asyncRewake" : "");
        found = 1;
        continue;
      }
      if (async && !rewake)
        problem(problems,
                "%s: \"async\": true makes Claude Code ignore fleet-hook's answer; "
                "remove it",
                h->event);
      if (!json_is_number(t) || json_number_value(t) < h->timeout_s)
        problem(problems, "%s: \"timeout\" must be at least %d (seconds), not %s", h->event,
                h->timeout_s, json_is_number(t) ? "less" : "left to the default");
      for (size_t k = 0; fl_notification_types[k]; k++)
        covered[k] |= matcher_covers(matcher, fl_notification_types[k]);
      found = 1;
    }
  }
  if (!found) {
    problem(problems, "%s: no hook runs fleet-hook%s: %s", h->event, h->wake ? " --wake" : "",
            h->why);
    return;
  }
  for (size_t k = 0; h->notifications && fl_notification_types[k]; k++)
    if (!covered[k])
      problem(problems, "%s: the fleet-hook hook's matcher leaves out %s: %s", h->event,
              fl_notification_types[k], h->why);
}

static int check_file(const char *file, int json) {
  json_error_t jerr;
  json_t *doc = json_load_file(file, 0, &jerr);
  if (!doc)
    return fl_ctl_fail("%s: not a JSON settings file (%s, line %d)", file, jerr.text, jerr.line);
  json_t *problems = json_array();
  if (!problems) {
    json_decref(doc);
    return fl_ctl_fail("out of memory");
  }
  json_t *hooks = json_object_get(doc, "hooks");
  if (json_is_true(json_object_get(doc, "disableAllHooks")))
    problem(problems, "\"disableAllHooks\": true turns every hook off, fleet's too");
  if (!json_is_object(hooks))
    problem(problems, "no \"hooks\" object: `fleetctl hooks claude` prints it");
  else
    for (size_t i = 0; i < FL_CLAUDE_NHOOKS; i++)
      check_one(&fl_claude_hooks[i], json_object_get(hooks, fl_claude_hooks[i].event), problems);
  int ok = json_array_size(problems) == 0;
  if (json) {
    json_t *out = json_pack("{s:s, s:b, s:O}", "file", file, "ok", ok, "problems", problems);
    char *text = out ? json_dumps(out, JSON_INDENT(2)) : NULL;
    json_decref(out);
    if (text)
      puts(text);
    fl_free(text);
  } else if (ok) {
    printf("%s: the fleet hooks are set up right\n", file);
  } else {
    printf("%s: the fleet hooks are not set up right:\n", file);
    size_t i;
    json_t *p;
    json_array_foreach(problems, i, p) printf("- %s\n", json_string_value(p));
    puts("`fleetctl hooks claude` prints the hooks to put there; `fleetctl profile claude` a "
         "whole worker profile with them.");
  }
  json_decref(problems);
  json_decref(doc);
  return ok ? FL_EXIT_OK : FL_EXIT_FAIL;
}

int fl_ctl_hooks(const char *agent, const char *file, int json) {
  if (strcmp(agent, "claude") != 0)
    return fl_ctl_usage_fail("hooks claude [--check FILE]",
                             "hooks takes 'claude' (the one agent whose hooks fleet uses), not "
                             "'%s'",
                             agent);
  if (file)
    return check_file(file, json);
  char fh[PATH_MAX];
  fl_hooks_find(fh, sizeof fh);
  json_t *doc = json_pack("{s:o}", "hooks", fl_hooks_claude(fh));
  char *text = doc ? json_dumps(doc, JSON_INDENT(2)) : NULL;
  json_decref(doc);
  if (!text)
    return fl_ctl_fail("out of memory (or a path that is not UTF-8)");
  puts(text);
  fl_free(text);
  if (strcmp(fh, "fleet-hook") == 0)
    fprintf(stderr, "fleetctl: warning: fleet-hook is not next to fleetctl nor on PATH; the hooks "
                    "name it bare, so it must be on the agent's PATH\n");
  return FL_EXIT_OK;
}
