/* config.c — loading fleetd's configuration (see config.h).
 *
 * Four layers, each overriding the one before: built-in defaults, one JSON
 * file, FLEET_* environment variables, command-line flags. The file is read
 * in two steps, open-and-load then apply, so the apply step also serves
 * fl_config_parse (a JSON text already in memory, for tests and the fuzzer).
 * Every error goes into the caller's err buffer through fl_errf and says
 * where the bad value came from (the file and key, the variable, the flag)
 * and what to do about it. Nothing here writes to disk. */
#include "gateway/config.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"
#include "common/limits.h"
#include "common/names.h"
#include "common/paths.h"

static const char fl_usage[] =
    "usage: fleetd [--config FILE] [--state-dir DIR] [--socket PATH] [--host-id ID]\n"
    "              [--broker URI] [--log-level debug|info|warn|error]\n"
    "\n"
    "The fleet gateway daemon. With no broker it serves this host on its own.\n"
    "Environment: FLEET_CONFIG, FLEET_STATE_DIR, FLEET_SOCKET, FLEET_HOST_ID,\n"
    "FLEET_BROKER_URI, FLEET_LOG_LEVEL. Flags beat environment, environment beats the file.\n";

/* The keys each object of the file may hold, for the unknown-key check and
 * its message. */
static const char *const fl_top_keys[] = {"hostId", "stateDir", "socket",   "broker",
                                          "nudge",  "logLevel", "profiles", NULL};
static const char *const fl_broker_keys[] = {"uri",           "caFile",     "queueType",
                                             "prefetch",      "heartbeatS", "presenceIntervalMs",
                                             "presenceTtlMs", NULL};
static const char *const fl_profile_keys[] = {"backend", "command", "cwd",           "env",
                                              "role",    "groups",  "readyTimeoutS", "prompt",
                                              "quietMs", NULL};
static const char *const fl_nudge_keys[] = {"enabled", "firstDelayMs", "backoffMs", "maxBackoffMs",
                                            "text",    "prompt",       "quietMs",   NULL};

/* What a JSON value is, for "must be a string, not a number". */
static const char *fl_json_kind(const json_t *v) {
  switch (json_typeof(v)) {
  case JSON_OBJECT:
    return "an object";
  case JSON_ARRAY:
    return "an array";
  case JSON_STRING:
    return "a string";
  case JSON_INTEGER:
  case JSON_REAL:
    return "a number";
  case JSON_TRUE:
  case JSON_FALSE:
    return "true or false";
  default:
    return "null";
  }
}

/* Copies v into dst (n bytes) or fails naming `what` (a flag, a variable or
 * "file: key"). */
static int fl_set(char *dst, size_t n, const char *v, const char *what, char *err, size_t errlen) {
  size_t len = strlen(v);
  if (len >= n) {
    fl_errf(err, errlen, "%s is too long (at most %zu bytes): shorten it", what, n - 1);
    return FL_ECONFIG;
  }
  memcpy(dst, v, len + 1);
  return 0;
}

/* The key as the user wrote it: "uri" inside "broker" is "broker.uri". */
static void fl_key_name(char *out, size_t n, const char *section, const char *key) {
  if (section)
    snprintf(out, n, "%s.%s", section, key);
  else
    snprintf(out, n, "%s", key);
}

/* A string at obj.key, if present, into dst. */
static int fl_file_str(json_t *obj, const char *section, const char *key, char *dst, size_t n,
                       const char *file, char *err, size_t errlen) {
  json_t *v = json_object_get(obj, key);
  if (!v)
    return 0;
  char name[128]; /* "profiles.<name>.readyTimeoutS" at the longest */
  fl_key_name(name, sizeof name, section, key);
  if (!json_is_string(v)) {
    fl_errf(err, errlen, "%s: key \"%s\" must be a string, not %s", file, name, fl_json_kind(v));
    return FL_ECONFIG;
  }
  char what[1200];
  snprintf(what, sizeof what, "%s: key \"%s\"", file, name);
  return fl_set(dst, n, json_string_value(v), what, err, errlen);
}

/* A whole number from 0 to max at obj.key, if present, into dst. */
static int fl_file_ms(json_t *obj, const char *section, const char *key, unsigned *dst, long max,
                      const char *file, char *err, size_t errlen) {
  json_t *v = json_object_get(obj, key);
  if (!v)
    return 0;
  if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > max) {
    fl_errf(err, errlen, "%s: key \"%s.%s\" must be a whole number from 0 to %ld", file, section,
            key, max);
    return FL_ECONFIG;
  }
  *dst = (unsigned)json_integer_value(v);
  return 0;
}

/* Fails on the first key of obj not in known, listing the known ones. */
static int fl_known_keys(json_t *obj, const char *section, const char *const known[],
                         const char *file, char *err, size_t errlen) {
  const char *key;
  json_t *val;
  json_object_foreach(obj, key, val) {
    int ok = 0;
    for (int i = 0; known[i]; i++)
      ok |= strcmp(key, known[i]) == 0;
    if (ok)
      continue;
    char list[256] = "";
    size_t used = 0;
    for (int i = 0; known[i] && used < sizeof list; i++)
      used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", known[i]);
    char name[1100];
    fl_key_name(name, sizeof name, section, key);
    fl_errf(err, errlen, "%s: unknown key \"%s\" (known: %s)", file, name, list);
    return FL_ECONFIG;
  }
  return 0;
}

static int fl_apply_broker(fl_config *cfg, json_t *broker, const char *file, char *err,
                           size_t errlen) {
  if (!json_is_object(broker)) {
    fl_errf(err, errlen,
            "%s: key \"broker\" must be an object like {\"uri\": "
            "\"amqp://user:pass@host:5672/\"}",
            file);
    return FL_ECONFIG;
  }
  unsigned prefetch = 0, hb = 0;
  fl_gw_config *gw = &cfg->gw;
  if (fl_known_keys(broker, "broker", fl_broker_keys, file, err, errlen) ||
      fl_file_str(broker, "broker", "uri", gw->broker_uri, sizeof gw->broker_uri, file, err,
                  errlen) ||
      fl_file_str(broker, "broker", "caFile", gw->broker_ca_file, sizeof gw->broker_ca_file, file,
                  err, errlen) ||
      fl_file_str(broker, "broker", "queueType", gw->broker_queue_type,
                  sizeof gw->broker_queue_type, file, err, errlen) ||
      fl_file_ms(broker, "broker", "prefetch", &prefetch, 65535, file, err, errlen) ||
      fl_file_ms(broker, "broker", "heartbeatS", &hb, 3600, file, err, errlen) ||
      fl_file_ms(broker, "broker", "presenceIntervalMs", &gw->presence_interval_ms, 3600000, file,
                 err, errlen) ||
      fl_file_ms(broker, "broker", "presenceTtlMs", &gw->presence_ttl_ms, 86400000, file, err,
                 errlen))
    return FL_ECONFIG;
  gw->broker_prefetch = prefetch;
  gw->broker_heartbeat_s = hb;
  if (gw->broker_queue_type[0] && strcmp(gw->broker_queue_type, "classic") != 0 &&
      strcmp(gw->broker_queue_type, "quorum") != 0) {
    fl_errf(err, errlen, "%s: key \"broker.queueType\" must be \"classic\" or \"quorum\"", file);
    return FL_ECONFIG;
  }
  return 0;
}

static int fl_apply_nudge(fl_config *cfg, json_t *nudge, const char *file, char *err,
                          size_t errlen) {
  if (!json_is_object(nudge)) {
    fl_errf(err, errlen, "%s: key \"nudge\" must be an object like {\"enabled\": false}", file);
    return FL_ECONFIG;
  }
  fl_nudge_config *n = &cfg->gw.nudge;
  if (fl_known_keys(nudge, "nudge", fl_nudge_keys, file, err, errlen))
    return FL_ECONFIG;
  json_t *en = json_object_get(nudge, "enabled");
  if (en && !json_is_boolean(en)) {
    fl_errf(err, errlen, "%s: key \"nudge.enabled\" must be true or false", file);
    return FL_ECONFIG;
  }
  if (en)
    n->enabled = json_is_true(en);
  /* A day bounds every delay: longer is surely a typo. */
  if (fl_file_ms(nudge, "nudge", "firstDelayMs", &n->first_ms, 86400000, file, err, errlen) ||
      fl_file_ms(nudge, "nudge", "backoffMs", &n->backoff_ms, 86400000, file, err, errlen) ||
      fl_file_ms(nudge, "nudge", "maxBackoffMs", &n->max_ms, 86400000, file, err, errlen) ||
      fl_file_str(nudge, "nudge", "text", n->text, sizeof n->text, file, err, errlen) ||
      fl_file_str(nudge, "nudge", "prompt", n->prompt, sizeof n->prompt, file, err, errlen) ||
      fl_file_ms(nudge, "nudge", "quietMs", &n->quiet_ms, FL_MAX_QUIET_MS, file, err, errlen))
    return FL_ECONFIG;
  if (n->backoff_ms == 0) {
    fl_errf(err, errlen, "%s: key \"nudge.backoffMs\" must be above 0", file);
    return FL_ECONFIG;
  }
  /* The prompt is compiled again for each look at a pane (inject_tmux.c);
   * here it only has to compile. */
  regex_t re;
  int rc = n->prompt[0] ? regcomp(&re, n->prompt, REG_EXTENDED | REG_NOSUB) : 0;
  if (rc) {
    char why[128];
    regerror(rc, &re, why, sizeof why);
    fl_errf(err, errlen,
            "%s: key \"nudge.prompt\" is not a valid POSIX extended regular expression (%s): "
            "fix it, or set \"\" to type without looking for a prompt",
            file, why);
    return FL_ECONFIG;
  }
  if (n->prompt[0])
    regfree(&re);
  return 0;
}

/* ---- spawn profiles ----------------------------------------------------------- */

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
            file, key, json_is_array(cmd) ? "empty" : fl_json_kind(cmd));
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
              json_is_string(a) ? "empty" : fl_json_kind(a));
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
            key, fl_json_kind(env));
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
              key, name, fl_json_kind(v));
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
              file, key, FL_MAX_ROLE, r ? "\"" : "", r ? r : fl_json_kind(role), r ? "\"" : "");
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
            file, key, fl_json_kind(groups));
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

/* profiles.<name>.prompt: a POSIX extended regular expression. */
static int fl_profile_prompt(fl_profile *pr, json_t *obj, const char *key, const char *file,
                             char *err, size_t errlen) {
  if (fl_file_str(obj, key, "prompt", pr->prompt, sizeof pr->prompt, file, err, errlen))
    return FL_ECONFIG;
  if (!pr->prompt[0])
    return 0;
  regex_t re;
  int rc = regcomp(&re, pr->prompt, REG_EXTENDED | REG_NOSUB);
  if (rc != 0) {
    char why[128];
    regerror(rc, &re, why, sizeof why);
    fl_errf(err, errlen,
            "%s: key \"%s.prompt\" is not a POSIX extended regular expression (%s): fix it, e.g. "
            "\"^> $\" for a line that is just \"> \"",
            file, key, why);
    return FL_ECONFIG;
  }
  regfree(&re);
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
            file, key, fl_json_kind(obj));
    return FL_ECONFIG;
  }
  memset(pr, 0, sizeof *pr);
  snprintf(pr->name, sizeof pr->name, "%s", name);
  snprintf(pr->role, sizeof pr->role, "worker");
  pr->ready_timeout_s = FL_PROFILE_READY_DEFAULT_S;
  pr->quiet_ms = FL_PROFILE_QUIET_DEFAULT_MS;
  if (fl_known_keys(obj, key, fl_profile_keys, file, err, errlen))
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
      fl_file_str(obj, key, "cwd", pr->cwd, sizeof pr->cwd, file, err, errlen) ||
      fl_profile_names(pr, obj, key, file, err, errlen) ||
      fl_profile_num(obj, key, "readyTimeoutS", 1, FL_PROFILE_READY_MAX_S, &pr->ready_timeout_s,
                     file, err, errlen) ||
      fl_profile_num(obj, key, "quietMs", 0, FL_PROFILE_QUIET_MAX_MS, &pr->quiet_ms, file, err,
                     errlen) ||
      fl_profile_prompt(pr, obj, key, file, err, errlen))
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
static int fl_apply_profiles(fl_config *cfg, json_t *profiles, const char *file, char *err,
                             size_t errlen) {
  fl_gw_config *gw = &cfg->gw;
  gw->nprofiles = 0;
  if (json_is_null(profiles))
    return 0;
  if (!json_is_object(profiles)) {
    fl_errf(err, errlen,
            "%s: key \"profiles\" must be an object of named profiles like {\"claude\": "
            "{\"backend\": \"tmux\", \"command\": [\"claude\"]}}, not %s",
            file, fl_json_kind(profiles));
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

/* Applies a loaded file (borrowed) onto cfg. */
static int fl_apply(fl_config *cfg, json_t *root, const char *file, char *err, size_t errlen) {
  if (!json_is_object(root)) {
    fl_errf(err, errlen,
            "%s: the file must hold one JSON object, not %s (put the keys in one {...})", file,
            fl_json_kind(root));
    return FL_ECONFIG;
  }
  fl_gw_config *gw = &cfg->gw;
  if (fl_known_keys(root, NULL, fl_top_keys, file, err, errlen) ||
      fl_file_str(root, NULL, "hostId", gw->host_id, sizeof gw->host_id, file, err, errlen) ||
      fl_file_str(root, NULL, "stateDir", gw->state_dir, sizeof gw->state_dir, file, err, errlen) ||
      fl_file_str(root, NULL, "socket", gw->socket, sizeof gw->socket, file, err, errlen) ||
      fl_file_str(root, NULL, "logLevel", cfg->log_level, sizeof cfg->log_level, file, err, errlen))
    return FL_ECONFIG;
  json_t *broker = json_object_get(root, "broker");
  if (broker && !json_is_null(broker) && fl_apply_broker(cfg, broker, file, err, errlen))
    return FL_ECONFIG;
  json_t *nudge = json_object_get(root, "nudge");
  if (nudge && fl_apply_nudge(cfg, nudge, file, err, errlen))
    return FL_ECONFIG;
  json_t *profiles = json_object_get(root, "profiles");
  if (profiles && fl_apply_profiles(cfg, profiles, file, err, errlen))
    return FL_ECONFIG;
  return 0;
}

/* A JSON syntax error, at its line when jansson knows it. */
static void fl_json_error(const char *file, const json_error_t *je, char *err, size_t errlen) {
  if (je->line > 0)
    fl_errf(err, errlen, "%s:%d: %s (fix the JSON, or point --config elsewhere)", file, je->line,
            je->text);
  else
    fl_errf(err, errlen, "%s: %s (fix the JSON, or point --config elsewhere)", file, je->text);
}

/* Why file could not be read, and where to fix the path: from names the flag
 * or variable that gave it, NULL for the default path. */
static void fl_read_error(const char *file, const char *from, int e, char *err, size_t errlen) {
  if (from)
    fl_errf(err, errlen, "cannot read config file %s: %s (check the path given to %s)", file,
            strerror(e), from);
  else
    fl_errf(err, errlen,
            "cannot read config file %s: %s (make it readable, or point --config at another "
            "file)",
            file, strerror(e));
}

static int fl_load_file(fl_config *cfg, const char *file, const char *from, char *err,
                        size_t errlen) {
  int rc = FL_ECONFIG;
  json_t *root = NULL;
  FILE *fp = fopen(file, "rb");
  if (!fp) {
    fl_read_error(file, from, errno, err, errlen);
    return FL_ECONFIG;
  }
  /* fopen opens a directory too; reading it would fail with a vaguer
   * message. */
  struct stat st;
  if (fstat(fileno(fp), &st) != 0) {
    fl_read_error(file, from, errno, err, errlen);
    goto out;
  }
  if (S_ISDIR(st.st_mode)) {
    fl_read_error(file, from, EISDIR, err, errlen);
    goto out;
  }
  json_error_t je;
  root = json_loadf(fp, 0, &je);
  if (!root) {
    fl_json_error(file, &je, err, errlen);
    goto out;
  }
  rc = fl_apply(cfg, root, file, err, errlen);
out:
  json_decref(root);
  fclose(fp);
  return rc;
}

int fl_config_parse(fl_config *cfg, const char *text, size_t len, const char *file, char *err,
                    size_t errlen) {
  json_error_t je;
  json_t *root = json_loadb(text, len, 0, &je);
  if (!root) {
    fl_json_error(file, &je, err, errlen);
    return FL_ECONFIG;
  }
  int rc = fl_apply(cfg, root, file, err, errlen);
  json_decref(root);
  return rc;
}

/* nudge.prompt's default: the empty input line of Claude Code, "> " (or
 * "❯ "), alone or inside the box border "│ > … │" (or ASCII "|"), with any
 * spaces or no-break spaces (U+00A0) around it. A plain shell's "$ " is
 * deliberately not in it: a shell is not an agent waiting for input. */
#define FL_NUDGE_PROMPT_DEFAULT                                                                    \
  "^(\xe2\x94\x82|\\|)?( |\xc2\xa0)*(>|\xe2\x9d\xaf)( |\xc2\xa0)*(\xe2\x94\x82|\\|)?( "            \
  "|\xc2\xa0)*$"

void fl_config_defaults(fl_config *cfg) {
  memset(cfg, 0, sizeof *cfg);
  snprintf(cfg->log_level, sizeof cfg->log_level, "info");
  cfg->gw.nudge.enabled = 1;
  cfg->gw.presence_interval_ms = 5000; /* a joiner shows up elsewhere within ~5 s */
  cfg->gw.nudge.first_ms = 1000;       /* let a client that is about to poll do so */
  cfg->gw.nudge.backoff_ms = 30000;    /* then remind every 30 s, doubling ... */
  cfg->gw.nudge.max_ms = 600000;       /* ... up to every 10 minutes */
  snprintf(cfg->gw.nudge.text, sizeof cfg->gw.nudge.text,
           "fleet: new message(s) waiting - call the fleet_poll tool to read them");
  /* Typed only into an idle, empty input: Claude Code's input line is "> "
   * (inside a box "│ > … │" in older versions), and the screen must hold
   * still for half a second (its spinner moves while it works). */
  snprintf(cfg->gw.nudge.prompt, sizeof cfg->gw.nudge.prompt, "%s", FL_NUDGE_PROMPT_DEFAULT);
  cfg->gw.nudge.quiet_ms = 500;
  /* The host id defaults to the machine's short host name. */
  char host[128] = "localhost";
  gethostname(host, sizeof host - 1);
  char *dot = strchr(host, '.');
  if (dot)
    *dot = '\0';
  snprintf(cfg->gw.host_id, sizeof cfg->gw.host_id, "%s", host);
}

/* A FLEET_* variable, when set and not empty, into dst. */
static int fl_env(char *dst, size_t n, const char *name, char *err, size_t errlen) {
  const char *v = getenv(name);
  if (!v || !*v)
    return 0;
  return fl_set(dst, n, v, name, err, errlen);
}

int fl_config_load(fl_config *cfg, int argc, char **argv, char *err, size_t errlen) {
  fl_config_defaults(cfg);
  char host[sizeof cfg->gw.host_id];
  memcpy(host, cfg->gw.host_id, sizeof host);
  /* Where the host id and log level came from, for the errors when they
   * break their rule. */
  char host_from[1100] = "the machine's host name (set --host-id)";
  char level_from[1100] = "the default";

  static const struct option opts[] = {{"config", required_argument, 0, 'c'},
                                       {"state-dir", required_argument, 0, 's'},
                                       {"socket", required_argument, 0, 'S'},
                                       {"host-id", required_argument, 0, 'H'},
                                       {"broker", required_argument, 0, 'b'},
                                       {"log-level", required_argument, 0, 'l'},
                                       {"help", no_argument, 0, 'h'},
                                       {"version", no_argument, 0, 'V'},
                                       {0, 0, 0, 0}};
  const char *f_config = NULL, *f_state = NULL, *f_socket = NULL, *f_host = NULL, *f_broker = NULL,
             *f_level = NULL;
  int ch;
  optind = 1;
  while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    switch (ch) {
    case 'c':
      f_config = optarg;
      break;
    case 's':
      f_state = optarg;
      break;
    case 'S':
      f_socket = optarg;
      break;
    case 'H':
      f_host = optarg;
      break;
    case 'b':
      f_broker = optarg;
      break;
    case 'l':
      f_level = optarg;
      break;
    case 'h':
      fputs(fl_usage, stdout);
      return 1;
    case 'V':
      printf("fleetd %s\n", FLEET_VERSION);
      return 1;
    default:
      fl_errf(err, errlen, "%s", fl_usage);
      return 2;
    }
  }
  if (optind < argc) {
    fl_errf(err, errlen, "unexpected argument '%s'\n%s", argv[optind], fl_usage);
    return 2;
  }

  /* The file: --config, else FLEET_CONFIG, else the default path if it
   * exists. */
  int rc;
  const char *env_config = getenv("FLEET_CONFIG");
  const char *file = f_config ? f_config : env_config;
  if (file && *file) {
    if ((rc = fl_set(cfg->config_file, sizeof cfg->config_file, file,
                     f_config ? "--config" : "FLEET_CONFIG", err, errlen)) ||
        (rc = fl_load_file(cfg, file, f_config ? "--config" : "FLEET_CONFIG", err, errlen)))
      return rc;
  } else {
    char def[1024];
    const char *x = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
    int w = -1;
    if (x && *x)
      w = snprintf(def, sizeof def, "%s/fleet/fleetd.json", x);
    else if (home && *home)
      w = snprintf(def, sizeof def, "%s/.config/fleet/fleetd.json", home);
    if (w > 0 && (size_t)w < sizeof def && access(def, F_OK) == 0) {
      snprintf(cfg->config_file, sizeof cfg->config_file, "%s", def);
      if ((rc = fl_load_file(cfg, def, NULL, err, errlen)))
        return rc;
    }
  }
  if (strcmp(cfg->gw.host_id, host) != 0)
    snprintf(host_from, sizeof host_from, "%s: \"hostId\"", cfg->config_file);
  if (strcmp(cfg->log_level, "info") != 0)
    snprintf(level_from, sizeof level_from, "%s: key \"logLevel\"", cfg->config_file);

  /* Environment, then flags. */
  const char *env_host = getenv("FLEET_HOST_ID"), *env_level = getenv("FLEET_LOG_LEVEL");
  if (env_host && *env_host)
    snprintf(host_from, sizeof host_from, "FLEET_HOST_ID");
  if (env_level && *env_level)
    snprintf(level_from, sizeof level_from, "FLEET_LOG_LEVEL");
  if (f_host)
    snprintf(host_from, sizeof host_from, "--host-id");
  if (f_level)
    snprintf(level_from, sizeof level_from, "--log-level");
  fl_gw_config *gw = &cfg->gw;
  if ((rc = fl_env(gw->state_dir, sizeof gw->state_dir, "FLEET_STATE_DIR", err, errlen)) ||
      (rc = fl_env(gw->socket, sizeof gw->socket, "FLEET_SOCKET", err, errlen)) ||
      (rc = fl_env(gw->host_id, sizeof gw->host_id, "FLEET_HOST_ID", err, errlen)) ||
      (rc = fl_env(gw->broker_uri, sizeof gw->broker_uri, "FLEET_BROKER_URI", err, errlen)) ||
      (rc = fl_env(cfg->log_level, sizeof cfg->log_level, "FLEET_LOG_LEVEL", err, errlen)))
    return rc;
  if ((f_state &&
       (rc = fl_set(gw->state_dir, sizeof gw->state_dir, f_state, "--state-dir", err, errlen))) ||
      (f_socket &&
       (rc = fl_set(gw->socket, sizeof gw->socket, f_socket, "--socket", err, errlen))) ||
      (f_host &&
       (rc = fl_set(gw->host_id, sizeof gw->host_id, f_host, "--host-id", err, errlen))) ||
      (f_broker &&
       (rc = fl_set(gw->broker_uri, sizeof gw->broker_uri, f_broker, "--broker", err, errlen))) ||
      (f_level &&
       (rc = fl_set(cfg->log_level, sizeof cfg->log_level, f_level, "--log-level", err, errlen))))
    return rc;

  /* Derived defaults. */
  if (!gw->state_dir[0] && fl_paths_state_dir(gw->state_dir, sizeof gw->state_dir) != 0) {
    fl_errf(err, errlen, "no state directory: set --state-dir, FLEET_STATE_DIR or HOME");
    return FL_ECONFIG;
  }
  if (!gw->socket[0]) {
    /* The default socket path honours XDG_RUNTIME_DIR, else the state dir. */
    const char *xr = getenv("XDG_RUNTIME_DIR");
    int w = (xr && *xr) ? snprintf(gw->socket, sizeof gw->socket, "%s/fleet/fleetd.sock", xr)
                        : snprintf(gw->socket, sizeof gw->socket, "%s/fleetd.sock", gw->state_dir);
    if (w < 0 || (size_t)w >= sizeof gw->socket) {
      fl_errf(err, errlen, "socket path too long: set --socket");
      return FL_ECONFIG;
    }
  }
  static const char *const levels[] = {"debug", "info", "warn", "error", NULL};
  int ok = 0;
  for (int i = 0; levels[i]; i++)
    ok |= strcmp(cfg->log_level, levels[i]) == 0;
  if (!ok) {
    fl_errf(err, errlen, "log level '%s' is not one of debug, info, warn, error (set by %s)",
            cfg->log_level, level_from);
    return FL_ECONFIG;
  }
  /* Checked before anything is written: a bad host id leaves no state. */
  if (fl_name_check_host(gw->host_id, host_from, err, errlen) != 0) {
    size_t n = err && errlen ? strlen(err) : 0;
    if (err && n + 1 < errlen) {
      err[n] = '\n';
      err[n + 1] = '\0';
    }
    return 2;
  }
  return 0;
}
