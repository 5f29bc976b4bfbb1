/* config.c — loading fleetd's configuration (see config.h).
 *
 * Four layers, each overriding the one before: built-in defaults, one JSON
 * file, FLEET_* environment variables, command-line flags. The file is read
 * in two steps, open-and-load then apply, so the apply step also serves
 * fl_config_parse (a JSON text already in memory, for tests and the fuzzer).
 * Every error goes into the caller's err buffer through fl_errf and says
 * where the bad value came from (the file and key, the variable, the flag)
 * and what to do about it. Nothing here writes to disk. */
#include "gateway/config/config.h"
#include "gateway/config/config_internal.h"

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
#include "common/json_read.h"
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
static const char *const fl_top_keys[] = {
    "hostId", "stateDir",    "socket", "broker", "nudge", "logLevel",  "profiles", "store",
    "inject", "coordinator", "rooms",  "claims", "http",  "authority", "hooks",    NULL};
static const char *const fl_coord_keys[] = {"uri", "fleet", NULL};
static const char *const fl_broker_keys[] = {
    "uri",           "caFile", "queueType",      "prefetch", "heartbeatS", "presenceIntervalMs",
    "presenceTtlMs", "seal",   "acceptUnsealed", "pairSeal", NULL};
static const char *const fl_nudge_keys[] = {"enabled", "firstDelayMs", "backoffMs", "maxBackoffMs",
                                            "text",    "prompt",       "quietMs",   NULL};

/* What a JSON value is, for "must be a string, not a number". */
const char *fl_config_json_kind(const json_t *v) {
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
void fl_config_key_name(char *out, size_t n, const char *section, const char *key) {
  if (section)
    snprintf(out, n, "%s.%s", section, key);
  else
    snprintf(out, n, "%s", key);
}

/* A string at obj.key, if present, into dst. */
int fl_config_file_str(json_t *obj, const char *section, const char *key, char *dst, size_t n,
                       const char *file, char *err, size_t errlen) {
  json_t *v = json_object_get(obj, key);
  if (!v)
    return 0;
  char name[128]; /* "profiles.<name>.readyTimeoutS" at the longest */
  fl_config_key_name(name, sizeof name, section, key);
  if (!json_is_string(v)) {
    fl_errf(err, errlen, "%s: key \"%s\" must be a string, not %s", file, name,
            fl_config_json_kind(v));
    return FL_ECONFIG;
  }
  char what[1200];
  snprintf(what, sizeof what, "%s: key \"%s\"", file, name);
  return fl_set(dst, n, json_string_value(v), what, err, errlen);
}

/* A whole number from 0 to max at obj.key, if present, into dst. */
int fl_config_file_ms(json_t *obj, const char *section, const char *key, unsigned *dst, long max,
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

int fl_config_file_bool(json_t *obj, const char *section, const char *key, int *dst,
                        const char *file, char *err, size_t errlen) {
  json_t *v = json_object_get(obj, key);
  if (!v)
    return 0;
  if (!json_is_boolean(v)) {
    fl_errf(err, errlen, "%s: key \"%s.%s\" must be true or false", file, section, key);
    return FL_ECONFIG;
  }
  *dst = json_is_true(v);
  return 0;
}

/* Fails on the first key of obj not in known, listing the known ones. */
int fl_config_known_keys(json_t *obj, const char *section, const char *const known[],
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
    fl_config_key_name(name, sizeof name, section, key);
    fl_errf(err, errlen, "%s: unknown key \"%s\" (known: %s)", file, name, list);
    return FL_ECONFIG;
  }
  return 0;
}

/* broker.uri: one URI, or a list of them (a cluster's nodes), kept as one
 * comma-separated string, the form --broker and FLEET_BROKER_URI take. */
static int fl_config_broker_uri(json_t *broker, char *dst, size_t n, const char *file, char *err,
                                size_t errlen) {
  json_t *v = json_object_get(broker, "uri");
  if (!json_is_array(v))
    return fl_config_file_str(broker, "broker", "uri", dst, n, file, err, errlen);
  size_t count = json_array_size(v);
  if (count == 0 || count > FL_BROKER_MAX_URIS) {
    fl_errf(err, errlen, "%s: key \"broker.uri\" must list 1 to %d URIs, not %zu", file,
            FL_BROKER_MAX_URIS, count);
    return FL_ECONFIG;
  }
  size_t used = 0;
  dst[0] = '\0';
  for (size_t i = 0; i < count; i++) {
    const char *u = json_string_value(json_array_get(v, i));
    if (!u || !*u || strchr(u, ',')) {
      fl_errf(err, errlen,
              "%s: key \"broker.uri\" item %zu must be a URI string like "
              "\"amqp://user:pass@host:5672/\" (no commas)",
              file, i + 1);
      return FL_ECONFIG;
    }
    int w = snprintf(dst + used, n - used, "%s%s", i ? "," : "", u);
    if (w < 0 || (size_t)w >= n - used) {
      fl_errf(err, errlen, "%s: key \"broker.uri\" is too long (at most %zu bytes in all)", file,
              n - 1);
      return FL_ECONFIG;
    }
    used += (size_t)w;
  }
  return 0;
}

/* "coordinator": {uri, fleet}: both, the fleet a name. */
static int fl_apply_coordinator(fl_config *cfg, json_t *co, const char *file, char *err,
                                size_t errlen) {
  fl_gw_config *gw = &cfg->gw;
  if (!json_is_object(co)) {
    fl_errf(err, errlen,
            "%s: key \"coordinator\" must be an object like {\"uri\": "
            "\"amqp://user:pass@host:5672/coord\", \"fleet\": \"alpha\"}",
            file);
    return FL_ECONFIG;
  }
  if (fl_config_known_keys(co, "coordinator", fl_coord_keys, file, err, errlen) ||
      fl_config_file_str(co, "coordinator", "uri", gw->coord_uri, sizeof gw->coord_uri, file, err,
                         errlen) ||
      fl_config_file_str(co, "coordinator", "fleet", gw->coord_fleet, sizeof gw->coord_fleet, file,
                         err, errlen))
    return FL_ECONFIG;
  if (!gw->coord_uri[0] || !fl_name_valid(gw->coord_fleet, FL_MAX_NAME)) {
    fl_errf(err, errlen,
            "%s: key \"coordinator\" needs \"uri\" (the coordinator vhost, e.g. "
            "amqp://user:pass@host:5672/coord) and \"fleet\" (this fleet's name: %s)",
            file, fl_name_rule);
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
  if (fl_config_known_keys(broker, "broker", fl_broker_keys, file, err, errlen) ||
      fl_config_broker_uri(broker, gw->broker_uri, sizeof gw->broker_uri, file, err, errlen) ||
      fl_config_file_str(broker, "broker", "caFile", gw->broker_ca_file, sizeof gw->broker_ca_file,
                         file, err, errlen) ||
      fl_config_file_str(broker, "broker", "queueType", gw->broker_queue_type,
                         sizeof gw->broker_queue_type, file, err, errlen) ||
      fl_config_file_ms(broker, "broker", "prefetch", &prefetch, 65535, file, err, errlen) ||
      fl_config_file_ms(broker, "broker", "heartbeatS", &hb, 3600, file, err, errlen) ||
      fl_config_file_ms(broker, "broker", "presenceIntervalMs", &gw->presence_interval_ms, 3600000,
                        file, err, errlen) ||
      fl_config_file_ms(broker, "broker", "presenceTtlMs", &gw->presence_ttl_ms, 86400000, file,
                        err, errlen))
    return FL_ECONFIG;
  gw->broker_prefetch = prefetch;
  gw->broker_heartbeat_s = hb;
  int seal = 1, accept = 0, pair = 1;
  if (fl_config_file_bool(broker, "broker", "seal", &seal, file, err, errlen) ||
      fl_config_file_bool(broker, "broker", "acceptUnsealed", &accept, file, err, errlen) ||
      fl_config_file_bool(broker, "broker", "pairSeal", &pair, file, err, errlen))
    return FL_ECONFIG;
  gw->broker_no_seal = !seal;
  gw->broker_no_pair_seal = !pair;
  gw->broker_accept_unsealed = accept;
  if (gw->broker_queue_type[0] && strcmp(gw->broker_queue_type, "classic") != 0 &&
      strcmp(gw->broker_queue_type, "quorum") != 0) {
    fl_errf(err, errlen, "%s: key \"broker.queueType\" must be \"classic\" or \"quorum\"", file);
    return FL_ECONFIG;
  }
  return 0;
}

static const char *const fl_store_keys[] = {"synchronous", "maxSeen", NULL};

static int fl_apply_store(fl_config *cfg, json_t *store, const char *file, char *err,
                          size_t errlen) {
  if (!json_is_object(store)) {
    fl_errf(err, errlen, "%s: key \"store\" must be an object like {\"synchronous\": \"full\"}",
            file);
    return FL_ECONFIG;
  }
  if (fl_config_known_keys(store, "store", fl_store_keys, file, err, errlen))
    return FL_ECONFIG;
  char sync[16] = "normal";
  if (fl_config_file_str(store, "store", "synchronous", sync, sizeof sync, file, err, errlen))
    return FL_ECONFIG;
  if (strcmp(sync, "normal") != 0 && strcmp(sync, "full") != 0) {
    fl_errf(err, errlen,
            "%s: key \"store.synchronous\" must be \"normal\" (survives a crash of fleetd) or "
            "\"full\" (survives a power loss too), not \"%s\"",
            file, sync);
    return FL_ECONFIG;
  }
  cfg->gw.store_sync_full = strcmp(sync, "full") == 0;
  if (fl_config_file_ms(store, "store", "maxSeen", &cfg->gw.store_max_seen, FL_MAX_MAX_SEEN, file,
                        err, errlen))
    return FL_ECONFIG;
  if (json_object_get(store, "maxSeen") && cfg->gw.store_max_seen < FL_MIN_SEEN) {
    fl_errf(err, errlen, "%s: key \"store.maxSeen\" must be %d to %d", file, FL_MIN_SEEN,
            FL_MAX_MAX_SEEN);
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
  if (fl_config_known_keys(nudge, "nudge", fl_nudge_keys, file, err, errlen))
    return FL_ECONFIG;
  json_t *en = json_object_get(nudge, "enabled");
  if (en && !json_is_boolean(en)) {
    fl_errf(err, errlen, "%s: key \"nudge.enabled\" must be true or false", file);
    return FL_ECONFIG;
  }
  if (en)
    n->enabled = json_is_true(en);
  /* A day bounds every delay: longer is surely a typo. */
  if (fl_config_file_ms(nudge, "nudge", "firstDelayMs", &n->first_ms, 86400000, file, err,
                        errlen) ||
      fl_config_file_ms(nudge, "nudge", "backoffMs", &n->backoff_ms, 86400000, file, err, errlen) ||
      fl_config_file_ms(nudge, "nudge", "maxBackoffMs", &n->max_ms, 86400000, file, err, errlen) ||
      fl_config_file_str(nudge, "nudge", "text", n->text, sizeof n->text, file, err, errlen) ||
      fl_config_file_str(nudge, "nudge", "prompt", n->prompt, sizeof n->prompt, file, err,
                         errlen) ||
      fl_config_file_ms(nudge, "nudge", "quietMs", &n->quiet_ms, FL_MAX_QUIET_MS, file, err,
                        errlen))
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

/* inject.timeoutS (1 s to a day) and inject.onDraft ("wait" or "fail"). */
static int fl_apply_inject(fl_config *cfg, json_t *inject, const char *file, char *err,
                           size_t errlen) {
  static const char *const keys[] = {"timeoutS", "onDraft", NULL};
  if (!json_is_object(inject)) {
    fl_errf(err, errlen, "%s: key \"inject\" must be an object like {\"timeoutS\": 120}", file);
    return FL_ECONFIG;
  }
  if (fl_config_known_keys(inject, "inject", keys, file, err, errlen))
    return FL_ECONFIG;
  json_t *t = json_object_get(inject, "timeoutS");
  if (t && (!json_is_integer(t) || json_integer_value(t) < 1 || json_integer_value(t) > 86400)) {
    fl_errf(err, errlen,
            "%s: key \"inject.timeoutS\" must be a whole number of seconds from 1 to 86400", file);
    return FL_ECONFIG;
  }
  if (t)
    cfg->gw.inject.timeout_s = (unsigned)json_integer_value(t);
  json_t *d = json_object_get(inject, "onDraft");
  const char *dv = json_string_value(d);
  if (d && (!dv || (strcmp(dv, "wait") != 0 && strcmp(dv, "fail") != 0))) {
    fl_errf(err, errlen, "%s: key \"inject.onDraft\" must be \"wait\" or \"fail\"", file);
    return FL_ECONFIG;
  }
  if (dv)
    cfg->gw.inject.on_draft_fail = strcmp(dv, "fail") == 0;
  return 0;
}

/* ---- spawn profiles ----------------------------------------------------------- */

/* Applies a loaded file (borrowed) onto cfg. */
static int fl_apply(fl_config *cfg, json_t *root, const char *file, char *err, size_t errlen) {
  if (!json_is_object(root)) {
    fl_errf(err, errlen,
            "%s: the file must hold one JSON object, not %s (put the keys in one {...})", file,
            fl_config_json_kind(root));
    return FL_ECONFIG;
  }
  fl_gw_config *gw = &cfg->gw;
  if (fl_config_known_keys(root, NULL, fl_top_keys, file, err, errlen) ||
      fl_config_file_str(root, NULL, "hostId", gw->host_id, sizeof gw->host_id, file, err,
                         errlen) ||
      fl_config_file_str(root, NULL, "stateDir", gw->state_dir, sizeof gw->state_dir, file, err,
                         errlen) ||
      fl_config_file_str(root, NULL, "socket", gw->socket, sizeof gw->socket, file, err, errlen) ||
      fl_config_file_str(root, NULL, "logLevel", cfg->log_level, sizeof cfg->log_level, file, err,
                         errlen))
    return FL_ECONFIG;
  json_t *broker = json_object_get(root, "broker");
  if (broker && !json_is_null(broker) && fl_apply_broker(cfg, broker, file, err, errlen))
    return FL_ECONFIG;
  json_t *coord = json_object_get(root, "coordinator");
  if (coord && !json_is_null(coord) && fl_apply_coordinator(cfg, coord, file, err, errlen))
    return FL_ECONFIG;
  json_t *nudge = json_object_get(root, "nudge");
  if (nudge && fl_apply_nudge(cfg, nudge, file, err, errlen))
    return FL_ECONFIG;
  json_t *store = json_object_get(root, "store");
  if (store && fl_apply_store(cfg, store, file, err, errlen))
    return FL_ECONFIG;
  json_t *inject = json_object_get(root, "inject");
  if (inject && fl_apply_inject(cfg, inject, file, err, errlen))
    return FL_ECONFIG;
  json_t *profiles = json_object_get(root, "profiles");
  if (profiles && fl_config_apply_profiles(cfg, profiles, file, err, errlen))
    return FL_ECONFIG;
  json_t *rooms = json_object_get(root, "rooms"), *claims = json_object_get(root, "claims");
  if ((rooms && fl_config_apply_rooms(cfg, rooms, file, err, errlen)) ||
      (claims && fl_config_apply_claims(cfg, claims, file, err, errlen)))
    return FL_ECONFIG;
  json_t *http = json_object_get(root, "http");
  if (http && fl_config_apply_http(cfg, http, file, err, errlen))
    return FL_ECONFIG;
  json_t *authority = json_object_get(root, "authority");
  if (authority && fl_config_apply_authority(cfg, authority, file, err, errlen))
    return FL_ECONFIG;
  json_t *hooks = json_object_get(root, "hooks");
  if (hooks && fl_config_apply_hooks(cfg, hooks, file, err, errlen))
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
  json_t *root = fl_json_loadb(text, len, 0, &je);
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
  cfg->gw.rooms_sync_interval_s = 20;
  cfg->gw.rooms_max_messages = FL_ROOM_DEFAULT_MAX_MESSAGES;
  cfg->gw.nudge.first_ms = 1000;    /* let a client that is about to poll do so */
  cfg->gw.nudge.backoff_ms = 30000; /* then remind every 30 s, doubling ... */
  cfg->gw.nudge.max_ms = 600000;    /* ... up to every 10 minutes */
  snprintf(cfg->gw.nudge.text, sizeof cfg->gw.nudge.text,
           "fleet: new message(s) waiting - call the fleet_poll tool to read them");
  /* Typed only into an idle, empty input: Claude Code's input line is "> "
   * (inside a box "│ > … │" in older versions), and the screen must hold
   * still for half a second (its spinner moves while it works). */
  snprintf(cfg->gw.nudge.prompt, sizeof cfg->gw.nudge.prompt, "%s", FL_NUDGE_PROMPT_DEFAULT);
  cfg->gw.nudge.quiet_ms = 500;
  /* Two minutes for a busy worker to come back to its prompt. */
  cfg->gw.inject.timeout_s = 120;
  cfg->gw.hooks_approve_timeout_ms = FL_HOOK_APPROVE_TIMEOUT_MS;
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
