/* config_profiles.c — the spawn profiles of fleetd's configuration
 * (profiles.<name> in fleetd.json, see config.h): parsing and checking each
 * profile, with errors that name the file, the key path and the fix, and the
 * public view of them that presence announces and fleet_list shows. */
#include <jansson.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/limits.h"
#include "common/names.h"
#include "gateway/config/config.h"
#include "gateway/config/config_internal.h"
#include "gateway/inject/inject_text.h"

static const char *const fl_profile_keys[] = {"backend", "command", "cwd",           "env",
                                              "role",    "groups",  "readyTimeoutS", "prompt",
                                              "busy",    "quietMs", "commandChars",  NULL};

/* profiles.<name>.command: 1..FL_MAX_PROFILE_ARGS non-empty strings. */
static int fl_profile_command(json_t *cmd, const char *key, const char *file, char *err,
                              size_t errlen) {
  if (!cmd) {
    fl_errf(err, errlen,
            "%s: key \"%s.command\" is missing: give the program and its arguments, e.g. "
            "[\"claude\"]",
            file, key);
    return FL_ECONFIG;
  }
  if (!json_is_array(cmd) || json_array_size(cmd) == 0) {
    fl_errf(err, errlen,
            "%s: key \"%s.command\" must be a non-empty array of strings (the program, then its "
            "arguments), e.g. [\"claude\", \"--model\", \"opus\"]; it is %s",
            file, key, json_is_array(cmd) ? "empty" : fl_config_json_kind(cmd));
    return FL_ECONFIG;
  }
  if (json_array_size(cmd) > FL_MAX_PROFILE_ARGS) {
    fl_errf(err, errlen, "%s: key \"%s.command\" has %zu arguments, at most %d: shorten it", file,
            key, json_array_size(cmd), FL_MAX_PROFILE_ARGS);
    return FL_ECONFIG;
  }
  size_t i;
  json_t *a;
  json_array_foreach(cmd, i, a) {
    if (!json_is_string(a) || (i == 0 && json_string_length(a) == 0)) {
      fl_errf(err, errlen,
              "%s: key \"%s.command\" item %zu must be %s, not %s (write every argument as a "
              "JSON string)",
              file, key, i, i == 0 ? "a program name" : "a string",
              json_is_string(a) ? "empty" : fl_config_json_kind(a));
      return FL_ECONFIG;
    }
  }
  return 0;
}

/* profiles.<name>.env: at most FL_MAX_PROFILE_ENV string values under
 * variable names (letters, digits and '_', not starting with a digit). */
static int fl_profile_env(json_t *env, const char *key, const char *file, char *err,
                          size_t errlen) {
  if (!json_is_object(env)) {
    fl_errf(err, errlen,
            "%s: key \"%s.env\" must be an object of strings like {\"FOO\": \"bar\"}, not %s", file,
            key, fl_config_json_kind(env));
    return FL_ECONFIG;
  }
  if (json_object_size(env) > FL_MAX_PROFILE_ENV) {
    fl_errf(err, errlen, "%s: key \"%s.env\" has %zu variables, at most %d: remove some", file, key,
            json_object_size(env), FL_MAX_PROFILE_ENV);
    return FL_ECONFIG;
  }
  const char *name;
  json_t *v;
  json_object_foreach(env, name, v) {
    int ok = name[0] && !(name[0] >= '0' && name[0] <= '9');
    for (const char *c = name; *c && ok; c++)
      ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
           *c == '_';
    if (!ok) {
      fl_errf(err, errlen,
              "%s: key \"%s.env\" names the variable \"%.64s\", which is not a variable name: use "
              "letters, digits and '_', not starting with a digit",
              file, key, name);
      return FL_ECONFIG;
    }
    if (!json_is_string(v)) {
      fl_errf(err, errlen, "%s: key \"%s.env.%.64s\" must be a string, not %s (quote it)", file,
              key, name, fl_config_json_kind(v));
      return FL_ECONFIG;
    }
  }
  return 0;
}

/* A whole number from min to max at obj.field, if present, into dst. */
static int fl_profile_num(json_t *obj, const char *key, const char *field, long min, long max,
                          unsigned *dst, const char *file, char *err, size_t errlen) {
  json_t *v = json_object_get(obj, field);
  if (!v)
    return 0;
  if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max) {
    fl_errf(err, errlen, "%s: key \"%s.%s\" must be a whole number from %ld to %ld", file, key,
            field, min, max);
    return FL_ECONFIG;
  }
  *dst = (unsigned)json_integer_value(v);
  return 0;
}

/* profiles.<name>.role and .groups, by the name rule. */
static int fl_profile_names(fl_profile *pr, json_t *obj, const char *key, const char *file,
                            char *err, size_t errlen) {
  json_t *role = json_object_get(obj, "role");
  if (role) {
    const char *r = json_string_value(role);
    if (!r || !fl_name_valid(r, FL_MAX_ROLE)) {
      fl_errf(err, errlen,
              "%s: key \"%s.role\" must be a role name of 1-%d letters, digits, '-' or '_' (e.g. "
              "worker, lead), not %s%.40s%s",
              file, key, FL_MAX_ROLE, r ? "\"" : "", r ? r : fl_config_json_kind(role),
              r ? "\"" : "");
      return FL_ECONFIG;
    }
    snprintf(pr->role, sizeof pr->role, "%s", r);
  }
  json_t *groups = json_object_get(obj, "groups");
  if (!groups)
    return 0;
  if (!json_is_array(groups)) {
    fl_errf(err, errlen,
            "%s: key \"%s.groups\" must be an array of group names like [\"backend\"], not %s",
            file, key, fl_config_json_kind(groups));
    return FL_ECONFIG;
  }
  if (json_array_size(groups) > FL_MAX_GROUPS) {
    fl_errf(err, errlen, "%s: key \"%s.groups\" has %zu groups, at most %d: remove some", file, key,
            json_array_size(groups), FL_MAX_GROUPS);
    return FL_ECONFIG;
  }
  size_t i;
  json_t *g;
  json_array_foreach(groups, i, g) {
    const char *gn = json_string_value(g);
    if (!gn || !fl_name_valid(gn, FL_MAX_GROUP_NAME)) {
      fl_errf(err, errlen,
              "%s: key \"%s.groups\" item %zu is not a valid group name: use %s, e.g. "
              "\"backend\"",
              file, key, i, fl_name_rule);
      return FL_ECONFIG;
    }
    snprintf(pr->groups[pr->ngroups++], FL_MAX_GROUP_NAME + 1, "%s", gn);
  }
  return 0;
}

/* profiles.<name>.<what> (prompt or busy) into dst (n bytes): a POSIX
 * extended regular expression, "" = none; example is a sample value for
 * the error. */
static int fl_profile_regex(char *dst, size_t n, const char *what, const char *example, json_t *obj,
                            const char *key, const char *file, char *err, size_t errlen) {
  if (fl_config_file_str(obj, key, what, dst, n, file, err, errlen))
    return FL_ECONFIG;
  if (!dst[0])
    return 0;
  regex_t re;
  int rc = regcomp(&re, dst, REG_EXTENDED | REG_NOSUB);
  if (rc != 0) {
    char why[128];
    regerror(rc, &re, why, sizeof why);
    fl_errf(err, errlen,
            "%s: key \"%s.%s\" is not a POSIX extended regular expression (%s): fix it, e.g. "
            "%s",
            file, key, what, why, example);
    return FL_ECONFIG;
  }
  regfree(&re);
  return 0;
}

/* profiles.<name>.commandChars: a few printable ASCII characters. */
static int fl_profile_command_chars(fl_profile *pr, json_t *obj, const char *key, const char *file,
                                    char *err, size_t errlen) {
  snprintf(pr->command_chars, sizeof pr->command_chars, "%s", FL_INJECT_COMMAND_CHARS_DEFAULT);
  json_t *v = json_object_get(obj, "commandChars");
  if (!v)
    return 0;
  const char *c = json_string_value(v);
  if (!c || !fl_inject_text_chars_valid(c)) {
    fl_errf(err, errlen,
            "%s: key \"%s.commandChars\" must be a string of at most %d printable ASCII "
            "characters, no blanks and none of \"%s\", that the agent reads as a command when "
            "input starts with one, e.g. \"%s\" (\"\" for none)",
            file, key, FL_MAX_COMMAND_CHARS, FL_INJECT_TEXT_PREFIX,
            FL_INJECT_COMMAND_CHARS_DEFAULT);
    return FL_ECONFIG;
  }
  snprintf(pr->command_chars, sizeof pr->command_chars, "%s", c);
  return 0;
}

/* One profile: obj (borrowed) at profiles.<name> into pr. */
static int fl_apply_profile(fl_profile *pr, const char *name, json_t *obj, const char *file,
                            char *err, size_t errlen) {
  char key[16 + FL_MAX_NAME];
  snprintf(key, sizeof key, "profiles.%s", name);
  if (!json_is_object(obj)) {
    fl_errf(err, errlen,
            "%s: key \"%s\" must be an object like {\"backend\": \"tmux\", \"command\": "
            "[\"claude\"]}, not %s",
            file, key, fl_config_json_kind(obj));
    return FL_ECONFIG;
  }
  memset(pr, 0, sizeof *pr);
  snprintf(pr->name, sizeof pr->name, "%s", name);
  snprintf(pr->role, sizeof pr->role, "worker");
  pr->ready_timeout_s = FL_PROFILE_READY_DEFAULT_S;
  pr->quiet_ms = FL_PROFILE_QUIET_DEFAULT_MS;
  if (fl_config_known_keys(obj, key, fl_profile_keys, file, err, errlen))
    return FL_ECONFIG;
  const char *backend = json_string_value(json_object_get(obj, "backend"));
  if (!backend || (strcmp(backend, "tmux") != 0 && strcmp(backend, "exec") != 0)) {
    fl_errf(err, errlen,
            "%s: key \"%s.backend\" must be \"tmux\" (a tmux window running the command) or "
            "\"exec\" (the command, given each message on stdin)%s",
            file, key, json_object_get(obj, "backend") ? "" : "; it is missing");
    return FL_ECONFIG;
  }
  snprintf(pr->backend, sizeof pr->backend, "%s", backend);
  json_t *cmd = json_object_get(obj, "command"), *env = json_object_get(obj, "env");
  if (fl_profile_command(cmd, key, file, err, errlen) ||
      (env && fl_profile_env(env, key, file, err, errlen)) ||
      fl_config_file_str(obj, key, "cwd", pr->cwd, sizeof pr->cwd, file, err, errlen) ||
      fl_profile_names(pr, obj, key, file, err, errlen) ||
      fl_profile_num(obj, key, "readyTimeoutS", 1, FL_PROFILE_READY_MAX_S, &pr->ready_timeout_s,
                     file, err, errlen) ||
      fl_profile_num(obj, key, "quietMs", 0, FL_PROFILE_QUIET_MAX_MS, &pr->quiet_ms, file, err,
                     errlen) ||
      fl_profile_regex(pr->prompt, sizeof pr->prompt, "prompt",
                       "\"^> $\" for a line that is just \"> \"", obj, key, file, err, errlen) ||
      fl_profile_regex(pr->busy, sizeof pr->busy, "busy",
                       "\"esc to interrupt\\\\)$\" for a status line the agent shows while at work",
                       obj, key, file, err, errlen) ||
      fl_profile_command_chars(pr, obj, key, file, err, errlen))
    return FL_ECONFIG;
  /* What it runs, kept as one JSON text so the profile stays a flat,
   * copyable struct. */
  json_t *launch = json_object();
  char *text = NULL;
  if (launch && json_object_set(launch, "command", cmd) == 0 &&
      json_object_set_new(launch, "env", env ? json_incref(env) : json_object()) == 0)
    text = json_dumps(launch, JSON_COMPACT);
  json_decref(launch);
  if (!text) {
    fl_errf(err, errlen, "%s: key \"%s\": out of memory", file, key);
    return FL_ECONFIG;
  }
  size_t len = strlen(text);
  if (len >= sizeof pr->launch) {
    fl_errf(err, errlen,
            "%s: key \"%s\": command and env take %zu bytes as JSON, at most %zu: shorten them "
            "(a wrapper script can hold a long command)",
            file, key, len, sizeof pr->launch - 1);
    free(text);
    return FL_ECONFIG;
  }
  memcpy(pr->launch, text, len + 1);
  free(text);
  return 0;
}

static int fl_profile_cmp(const void *a, const void *b) {
  return strcmp(((const fl_profile *)a)->name, ((const fl_profile *)b)->name);
}

/* profiles: {name: profile}; replaces any profiles applied before. */
int fl_config_apply_profiles(fl_config *cfg, json_t *profiles, const char *file, char *err,
                             size_t errlen) {
  fl_gw_config *gw = &cfg->gw;
  gw->nprofiles = 0;
  if (json_is_null(profiles))
    return 0;
  if (!json_is_object(profiles)) {
    fl_errf(err, errlen,
            "%s: key \"profiles\" must be an object of named profiles like {\"claude\": "
            "{\"backend\": \"tmux\", \"command\": [\"claude\"]}}, not %s",
            file, fl_config_json_kind(profiles));
    return FL_ECONFIG;
  }
  if (json_object_size(profiles) > FL_MAX_PROFILES) {
    fl_errf(err, errlen, "%s: key \"profiles\" has %zu profiles, at most %d: remove some", file,
            json_object_size(profiles), FL_MAX_PROFILES);
    return FL_ECONFIG;
  }
  const char *name;
  json_t *obj;
  json_object_foreach(profiles, name, obj) {
    if (!fl_name_valid(name, FL_MAX_NAME)) {
      fl_errf(err, errlen,
              "%s: key \"profiles.%.80s\": the profile name is not valid: use %s, e.g. "
              "\"claude-worker\"",
              file, name, fl_name_rule);
      gw->nprofiles = 0;
      return FL_ECONFIG;
    }
    if (fl_apply_profile(&gw->profiles[gw->nprofiles], name, obj, file, err, errlen)) {
      gw->nprofiles = 0;
      return FL_ECONFIG;
    }
    gw->nprofiles++;
  }
  qsort(gw->profiles, gw->nprofiles, sizeof gw->profiles[0], fl_profile_cmp);
  return 0;
}

json_t *fl_config_profiles_json(const fl_gw_config *gw) {
  json_t *arr = json_array();
  for (size_t i = 0; arr && i < gw->nprofiles; i++) {
    const fl_profile *pr = &gw->profiles[i];
    json_t *groups = json_array();
    for (size_t g = 0; groups && g < pr->ngroups; g++)
      json_array_append_new(groups, json_string(pr->groups[g]));
    json_t *o = groups ? json_pack("{s:s, s:s, s:s, s:o}", "name", pr->name, "backend", pr->backend,
                                   "role", pr->role, "groups", groups)
                       : NULL;
    if (!o || json_array_append_new(arr, o) != 0) {
      json_decref(arr);
      return NULL;
    }
  }
  return arr;
}
