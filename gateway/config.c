/* config.c — loading fleetd's configuration (see config.h). */
#include "gateway/config.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"
#include "common/names.h"
#include "common/paths.h"

static const char fl_usage[] =
    "usage: fleetd [--config FILE] [--state-dir DIR] [--socket PATH] [--host-id ID]\n"
    "              [--broker URI] [--log-level debug|info|warn|error]\n"
    "\n"
    "The fleet gateway daemon. With no broker it serves this host on its own.\n"
    "Environment: FLEET_CONFIG, FLEET_STATE_DIR, FLEET_SOCKET, FLEET_HOST_ID,\n"
    "FLEET_BROKER_URI, FLEET_LOG_LEVEL. Flags beat environment, environment beats the file.\n";

static int fl_set(char *dst, size_t n, const char *v, const char *what, char *err, size_t errlen) {
  if (strlen(v) >= n) {
    snprintf(err, errlen, "%s is too long (at most %zu bytes)", what, n - 1);
    return FL_ECONFIG;
  }
  memcpy(dst, v, strlen(v) + 1);
  return 0;
}

static int fl_file_str(json_t *root, const char *key, char *dst, size_t n, const char *file,
                       char *err, size_t errlen) {
  json_t *v = json_object_get(root, key);
  if (!v)
    return 0;
  if (!json_is_string(v)) {
    snprintf(err, errlen, "%s: key \"%s\" must be a string", file, key);
    return FL_ECONFIG;
  }
  char what[256];
  snprintf(what, sizeof what, "%s: key \"%s\"", file, key);
  return fl_set(dst, n, json_string_value(v), what, err, errlen);
}

/* A whole number from 0 to max at obj.key (section names obj in errors). */
static int fl_file_ms(json_t *obj, const char *section, const char *key, unsigned *dst,
                      long max, const char *file, char *err, size_t errlen) {
  json_t *v = json_object_get(obj, key);
  if (!v)
    return 0;
  if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > max) {
    snprintf(err, errlen, "%s: key \"%s.%s\" must be a whole number from 0 to %ld", file,
             section, key, max);
    return FL_ECONFIG;
  }
  *dst = (unsigned)json_integer_value(v);
  return 0;
}

static int fl_load_file(fl_config *cfg, const char *file, int must_exist, char *err,
                        size_t errlen) {
  if (!must_exist && access(file, F_OK) != 0)
    return 0;
  json_error_t je;
  json_t *root = json_load_file(file, 0, &je);
  if (!root) {
    snprintf(err, errlen, "%s:%d: %s (fix the JSON, or point --config elsewhere)", file,
             je.line, je.text);
    return FL_ECONFIG;
  }
  int rc = FL_ECONFIG;
  if (!json_is_object(root)) {
    snprintf(err, errlen, "%s: the file must hold one JSON object", file);
    goto out;
  }
  static const char *const known[] = {"hostId", "stateDir", "socket", "broker", "nudge",
                                      "logLevel", NULL};
  const char *key;
  json_t *val;
  json_object_foreach(root, key, val) {
    int ok = 0;
    for (int i = 0; known[i]; i++)
      ok |= strcmp(key, known[i]) == 0;
    if (!ok) {
      snprintf(err, errlen, "%s: unknown key \"%s\" (known: hostId, stateDir, socket, broker, "
               "nudge, logLevel)", file, key);
      goto out;
    }
  }
  if (fl_file_str(root, "hostId", cfg->gw.host_id, sizeof cfg->gw.host_id, file, err, errlen) ||
      fl_file_str(root, "stateDir", cfg->gw.state_dir, sizeof cfg->gw.state_dir, file, err,
                  errlen) ||
      fl_file_str(root, "socket", cfg->gw.socket, sizeof cfg->gw.socket, file, err, errlen) ||
      fl_file_str(root, "logLevel", cfg->log_level, sizeof cfg->log_level, file, err, errlen))
    goto out;
  json_t *broker = json_object_get(root, "broker");
  if (broker && !json_is_null(broker)) {
    if (!json_is_object(broker)) {
      snprintf(err, errlen, "%s: key \"broker\" must be an object like {\"uri\": "
               "\"amqp://user:pass@host:5672/\"}", file);
      goto out;
    }
    static const char *const bknown[] = {"uri", "caFile", "queueType", "prefetch",
                                         "heartbeatS", "presenceIntervalMs", "presenceTtlMs",
                                         NULL};
    json_object_foreach(broker, key, val) {
      int ok = 0;
      for (int i = 0; bknown[i]; i++)
        ok |= strcmp(key, bknown[i]) == 0;
      if (!ok) {
        snprintf(err, errlen, "%s: unknown key \"broker.%s\" (known: uri, caFile, queueType, "
                 "prefetch, heartbeatS, presenceIntervalMs, presenceTtlMs)", file, key);
        goto out;
      }
    }
    unsigned prefetch = 0, hb = 0;
    if (fl_file_str(broker, "uri", cfg->gw.broker_uri, sizeof cfg->gw.broker_uri, file, err,
                    errlen) ||
        fl_file_str(broker, "caFile", cfg->gw.broker_ca_file, sizeof cfg->gw.broker_ca_file,
                    file, err, errlen) ||
        fl_file_str(broker, "queueType", cfg->gw.broker_queue_type,
                    sizeof cfg->gw.broker_queue_type, file, err, errlen) ||
        fl_file_ms(broker, "broker", "prefetch", &prefetch, 65535, file, err, errlen) ||
        fl_file_ms(broker, "broker", "heartbeatS", &hb, 3600, file, err, errlen) ||
        fl_file_ms(broker, "broker", "presenceIntervalMs", &cfg->gw.presence_interval_ms,
                   3600000, file, err, errlen) ||
        fl_file_ms(broker, "broker", "presenceTtlMs", &cfg->gw.presence_ttl_ms, 86400000, file,
                   err, errlen))
      goto out;
    cfg->gw.broker_prefetch = prefetch;
    cfg->gw.broker_heartbeat_s = hb;
    if (cfg->gw.broker_queue_type[0] && strcmp(cfg->gw.broker_queue_type, "classic") != 0 &&
        strcmp(cfg->gw.broker_queue_type, "quorum") != 0) {
      snprintf(err, errlen, "%s: key \"broker.queueType\" must be \"classic\" or \"quorum\"",
               file);
      goto out;
    }
  }
  json_t *nudge = json_object_get(root, "nudge");
  if (nudge) {
    if (!json_is_object(nudge)) {
      snprintf(err, errlen, "%s: key \"nudge\" must be an object", file);
      goto out;
    }
    static const char *const nknown[] = {"enabled", "firstDelayMs", "backoffMs",
                                         "maxBackoffMs", "text", NULL};
    json_object_foreach(nudge, key, val) {
      int ok = 0;
      for (int i = 0; nknown[i]; i++)
        ok |= strcmp(key, nknown[i]) == 0;
      if (!ok) {
        snprintf(err, errlen, "%s: unknown key \"nudge.%s\" (known: enabled, firstDelayMs, "
                 "backoffMs, maxBackoffMs, text)", file, key);
        goto out;
      }
    }
    json_t *en = json_object_get(nudge, "enabled");
    if (en && !json_is_boolean(en)) {
      snprintf(err, errlen, "%s: key \"nudge.enabled\" must be true or false", file);
      goto out;
    }
    if (en)
      cfg->gw.nudge.enabled = json_is_true(en);
    /* A day bounds every delay: longer is surely a typo. */
    if (fl_file_ms(nudge, "nudge", "firstDelayMs", &cfg->gw.nudge.first_ms, 86400000, file, err,
                   errlen) ||
        fl_file_ms(nudge, "nudge", "backoffMs", &cfg->gw.nudge.backoff_ms, 86400000, file, err,
                   errlen) ||
        fl_file_ms(nudge, "nudge", "maxBackoffMs", &cfg->gw.nudge.max_ms, 86400000, file, err,
                   errlen) ||
        fl_file_str(nudge, "text", cfg->gw.nudge.text, sizeof cfg->gw.nudge.text, file, err,
                    errlen))
      goto out;
    if (cfg->gw.nudge.backoff_ms == 0) {
      snprintf(err, errlen, "%s: key \"nudge.backoffMs\" must be above 0", file);
      goto out;
    }
  }
  rc = 0;
out:
  json_decref(root);
  return rc;
}

static void fl_env(char *dst, size_t n, const char *name) {
  const char *v = getenv(name);
  if (v && *v && strlen(v) < n)
    memcpy(dst, v, strlen(v) + 1);
}

int fl_config_load(fl_config *cfg, int argc, char **argv, char *err, size_t errlen) {
  memset(cfg, 0, sizeof *cfg);
  /* Defaults. */
  snprintf(cfg->log_level, sizeof cfg->log_level, "info");
  cfg->gw.nudge.enabled = 1;
  cfg->gw.presence_interval_ms = 5000; /* a joiner shows up elsewhere within ~5 s */
  cfg->gw.nudge.first_ms = 1000;     /* let a client that is about to poll do so */
  cfg->gw.nudge.backoff_ms = 30000;  /* then remind every 30 s, doubling ... */
  cfg->gw.nudge.max_ms = 600000;     /* ... up to every 10 minutes */
  snprintf(cfg->gw.nudge.text, sizeof cfg->gw.nudge.text,
           "fleet: new message(s) waiting - call the fleet_poll tool to read them");
  char host[128] = "localhost";
  gethostname(host, sizeof host - 1);
  char *dot = strchr(host, '.');
  if (dot)
    *dot = '\0';
  snprintf(cfg->gw.host_id, sizeof cfg->gw.host_id, "%s", host);
  /* Where the host id came from, for the error when it breaks the rule. */
  char host_from[1100] = "the machine's host name (set --host-id)";

  static const struct option opts[] = {
      {"config", required_argument, 0, 'c'},   {"state-dir", required_argument, 0, 's'},
      {"socket", required_argument, 0, 'S'},   {"host-id", required_argument, 0, 'H'},
      {"broker", required_argument, 0, 'b'},   {"log-level", required_argument, 0, 'l'},
      {"help", no_argument, 0, 'h'},           {"version", no_argument, 0, 'V'},
      {0, 0, 0, 0}};
  const char *f_config = NULL, *f_state = NULL, *f_socket = NULL, *f_host = NULL,
             *f_broker = NULL, *f_level = NULL;
  int ch;
  optind = 1;
  while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    switch (ch) {
    case 'c': f_config = optarg; break;
    case 's': f_state = optarg; break;
    case 'S': f_socket = optarg; break;
    case 'H': f_host = optarg; break;
    case 'b': f_broker = optarg; break;
    case 'l': f_level = optarg; break;
    case 'h': fputs(fl_usage, stdout); return 1;
    case 'V': printf("fleetd %s\n", FLEET_VERSION); return 1;
    default: snprintf(err, errlen, "%s", fl_usage); return 2;
    }
  }
  if (optind < argc) {
    snprintf(err, errlen, "unexpected argument '%s'\n%s", argv[optind], fl_usage);
    return 2;
  }

  /* The file. */
  int rc;
  const char *file = f_config ? f_config : getenv("FLEET_CONFIG");
  if (file && *file) {
    if ((rc = fl_set(cfg->config_file, sizeof cfg->config_file, file, "config path", err,
                     errlen)) ||
        (rc = fl_load_file(cfg, file, 1, err, errlen)))
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
      if ((rc = fl_load_file(cfg, def, 0, err, errlen)))
        return rc;
    }
  }

  if (strcmp(cfg->gw.host_id, host) != 0)
    snprintf(host_from, sizeof host_from, "%s: \"hostId\"", cfg->config_file);

  /* Environment, then flags. */
  const char *env_host = getenv("FLEET_HOST_ID");
  if (env_host && *env_host)
    snprintf(host_from, sizeof host_from, "FLEET_HOST_ID");
  if (f_host)
    snprintf(host_from, sizeof host_from, "--host-id");
  fl_env(cfg->gw.state_dir, sizeof cfg->gw.state_dir, "FLEET_STATE_DIR");
  fl_env(cfg->gw.socket, sizeof cfg->gw.socket, "FLEET_SOCKET");
  fl_env(cfg->gw.host_id, sizeof cfg->gw.host_id, "FLEET_HOST_ID");
  fl_env(cfg->gw.broker_uri, sizeof cfg->gw.broker_uri, "FLEET_BROKER_URI");
  fl_env(cfg->log_level, sizeof cfg->log_level, "FLEET_LOG_LEVEL");
  if ((f_state && (rc = fl_set(cfg->gw.state_dir, sizeof cfg->gw.state_dir, f_state,
                               "--state-dir", err, errlen))) ||
      (f_socket && (rc = fl_set(cfg->gw.socket, sizeof cfg->gw.socket, f_socket, "--socket",
                                err, errlen))) ||
      (f_host && (rc = fl_set(cfg->gw.host_id, sizeof cfg->gw.host_id, f_host, "--host-id",
                              err, errlen))) ||
      (f_broker && (rc = fl_set(cfg->gw.broker_uri, sizeof cfg->gw.broker_uri, f_broker,
                                "--broker", err, errlen))) ||
      (f_level && (rc = fl_set(cfg->log_level, sizeof cfg->log_level, f_level, "--log-level",
                               err, errlen))))
    return rc;

  /* Derived defaults. */
  if (!cfg->gw.state_dir[0] &&
      (rc = fl_paths_state_dir(cfg->gw.state_dir, sizeof cfg->gw.state_dir))) {
    snprintf(err, errlen, "no state directory: set --state-dir, FLEET_STATE_DIR or HOME");
    return FL_ECONFIG;
  }
  if (!cfg->gw.socket[0]) {
    /* The default socket path honours XDG_RUNTIME_DIR, else the state dir. */
    const char *xr = getenv("XDG_RUNTIME_DIR");
    int w = (xr && *xr) ? snprintf(cfg->gw.socket, sizeof cfg->gw.socket, "%s/fleet/fleetd.sock", xr)
                        : snprintf(cfg->gw.socket, sizeof cfg->gw.socket, "%s/fleetd.sock",
                                   cfg->gw.state_dir);
    if (w < 0 || (size_t)w >= sizeof cfg->gw.socket) {
      snprintf(err, errlen, "socket path too long: set --socket");
      return FL_ECONFIG;
    }
  }
  static const char *const levels[] = {"debug", "info", "warn", "error", NULL};
  int ok = 0;
  for (int i = 0; levels[i]; i++)
    ok |= strcmp(cfg->log_level, levels[i]) == 0;
  if (!ok) {
    snprintf(err, errlen, "log level '%s' is not one of debug, info, warn, error",
             cfg->log_level);
    return FL_ECONFIG;
  }
  /* Checked before anything is written: a bad host id leaves no state. */
  if (fl_name_check_host(cfg->gw.host_id, host_from, err, errlen) != 0) {
    size_t n = strlen(err);
    if (n + 1 < errlen) {
      err[n] = '\n';
      err[n + 1] = '\0';
    }
    return 2;
  }
  (void)errno;
  return 0;
}
