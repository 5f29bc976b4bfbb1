/* test_config.c — unit tests for gateway/config/config.c: fleetd's configuration.
 *
 * Each test runs fl_config_load on an argv array, with config files written
 * to a fresh temporary directory and FLEET_* variables set just for it. The
 * setup clears every FLEET_* variable and XDG_CONFIG_HOME, XDG_STATE_HOME and
 * XDG_RUNTIME_DIR, and points HOME at the temporary directory, so neither the
 * machine's environment nor its ~/.config/fleet/fleetd.json leaks in. The
 * errors are what a user reads, so the tests assert on their exact words:
 * the file, the key or the flag or variable, and the fix. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* After the four above: cmocka.h uses them without including them. */
#include <cmocka.h>

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/error.h"
#include "common/names.h"
#include "gateway/config/config.h"
#include "tests/support/test_util.h"

extern char **environ;

typedef struct fx {
  char dir[256];
  char file[320]; /* <dir>/fleetd.json, written by fx_write */
  fl_config cfg;
  char err[2048];
} fx;

/* Unsets every variable that starts with prefix. */
static void unset_prefix(const char *prefix) {
  size_t n = strlen(prefix);
  for (;;) {
    char name[256] = "";
    for (char **e = environ; *e; e++) {
      const char *eq = strchr(*e, '=');
      if (strncmp(*e, prefix, n) == 0 && eq && (size_t)(eq - *e) < sizeof name) {
        memcpy(name, *e, (size_t)(eq - *e));
        name[eq - *e] = '\0';
        break;
      }
    }
    if (!name[0])
      return;
    unsetenv(name);
  }
}

static int setup(void **state) {
  static fx f;
  memset(&f, 0, sizeof f);
  if (fl_test_tmpdir("config", f.dir, sizeof f.dir) != 0)
    return -1;
  snprintf(f.file, sizeof f.file, "%s/fleetd.json", f.dir);
  unset_prefix("FLEET_");
  unsetenv("XDG_CONFIG_HOME");
  unsetenv("XDG_STATE_HOME");
  unsetenv("XDG_RUNTIME_DIR");
  setenv("HOME", f.dir, 1);
  *state = &f;
  return 0;
}

static int teardown(void **state) {
  fx *f = *state;
  fl_test_rmtree(f->dir);
  unset_prefix("FLEET_");
  unsetenv("XDG_CONFIG_HOME");
  return 0;
}

/* Writes text to the fixture's fleetd.json. */
static void fx_write(fx *f, const char *text) {
  FILE *fp = fopen(f->file, "w");
  assert_non_null(fp);
  fputs(text, fp);
  fclose(fp);
}

#define ARGC(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* Runs fl_config_load on argv; returns its code. */
static int fx_load(fx *f, int argc, char **argv) {
  f->err[0] = '\0';
  return fl_config_load(&f->cfg, argc, argv, f->err, sizeof f->err);
}

/* Asserts err contains want. */
static void assert_err_has(const fx *f, const char *want) {
  if (!strstr(f->err, want))
    fail_msg("err \"%s\" does not contain \"%s\"", f->err, want);
}

static void test_unknown_key_names_key_and_file(void **state) {
  fx *f = *state;
  fx_write(f, "{\"hostId\": \"box\", \"colour\": \"red\"}");
  char *argv[] = {"fleetd", "--config", f->file};
  assert_int_equal(fx_load(f, ARGC(argv), argv), FL_ECONFIG);
  char want[512];
  snprintf(want, sizeof want,
           "%s: unknown key \"colour\" (known: hostId, stateDir, socket, broker, nudge, "
           "logLevel, profiles, store, inject, coordinator, rooms, claims, http, authority, hooks)",
           f->file);
  assert_string_equal(f->err, want);
}

static void test_coordinator_block(void **state) {
  fx *f = *state;
  char *argv[] = {"fleetd", "--config", f->file};
  fx_write(f, "{\"coordinator\": {\"uri\": \"amqp://c/coord\", \"fleet\": \"alpha\"}}");
  assert_int_equal(fx_load(f, ARGC(argv), argv), 0);
  assert_string_equal(f->cfg.gw.coord_uri, "amqp://c/coord");
  assert_string_equal(f->cfg.gw.coord_fleet, "alpha");
  fx_write(f, "{\"coordinator\": {\"uri\": \"amqp://c/coord\"}}");
  assert_int_equal(fx_load(f, ARGC(argv), argv), FL_ECONFIG);
  assert_err_has(f, "key \"coordinator\" needs \"uri\"");
  assert_err_has(f, f->file);
  fx_write(f, "{\"coordinator\": {\"uri\": \"amqp://c/\", \"fleet\": \"no.dots\"}}");
  assert_int_equal(fx_load(f, ARGC(argv), argv), FL_ECONFIG);
  assert_err_has(f, "\"fleet\" (this fleet's name");
  fx_write(f, "{\"coordinator\": {\"uri\": \"amqp://c/\", \"fleet\": \"a\", \"vhost\": 1}}");
  assert_int_equal(fx_load(f, ARGC(argv), argv), FL_ECONFIG);
  assert_err_has(f, "unknown key \"coordinator.vhost\" (known: uri, fleet)");
  fx_write(f, "{\"coordinator\": \"amqp://c/\"}");
  assert_int_equal(fx_load(f, ARGC(argv), argv), FL_ECONFIG);
  assert_err_has(f, "key \"coordinator\" must be an object");
}

static void test_coord_id_rule(void **state) {
  (void)state;
  assert_int_equal(fl_coord_id_valid("lead@alpha"), 1);
  assert_int_equal(fl_coord_id_valid("boss_1@beta-2"), 1);
  assert_int_equal(fl_coord_id_valid("lead"), 0);
  assert_int_equal(fl_coord_id_valid("@alpha"), 0);
  assert_int_equal(fl_coord_id_valid("lead@"), 0);
  assert_int_equal(fl_coord_id_valid("lead@al@pha"), 0);
  assert_int_equal(fl_coord_id_valid("le ad@alpha"), 0);
  char long_id[80];
  memset(long_id, 'a', sizeof long_id);
  long_id[40] = '@';
  long_id[sizeof long_id - 1] = '\0';
  assert_int_equal(fl_coord_id_valid(long_id), 0); /* 79 > 64 */
  assert_int_equal(fl_coord_id_valid(NULL), 0);
}

static void test_unknown_nested_keys(void **state) {
  fx *f = *state;
  char *argv[] = {"fleetd", "--config", f->file};
  fx_write(f, "{\"nudge\": {\"firstDelay\": 100}}");
  assert_int_equal(fx_load(f, ARGC(argv), argv), FL_ECONFIG);
  assert_err_has(f, ": unknown key \"nudge.firstDelay\" (known: enabled, firstDelayMs, "
                    "backoffMs, maxBackoffMs, text, prompt, quietMs)");
  assert_err_has(f, f->file);
  fx_write(f, "{\"broker\": {\"url\": \"amqp://h/\"}}");
  assert_int_equal(fx_load(f, ARGC(argv), argv), FL_ECONFIG);
  assert_err_has(f, ": unknown key \"broker.url\" (known: uri, caFile, queueType, prefetch, "
                    "heartbeatS, presenceIntervalMs, presenceTtlMs, seal, acceptUnsealed, "
                    "pairSeal)");
}

static void test_wrong_types(void **state) {
  fx *f = *state;
  char *argv[] = {"fleetd", "--config", f->file};
  static const struct {
    const char *json, *want;
  } cases[] = {
      {"{\"hostId\": 3}", "key \"hostId\" must be a string, not a number"},
      {"{\"stateDir\": [\"/x\"]}", "key \"stateDir\" must be a string, not an array"},
      {"{\"broker\": {\"uri\": true}}", "key \"broker.uri\" must be a string, not true or false"},
      {"{\"broker\": {\"prefetch\": \"8\"}}",
       "key \"broker.prefetch\" must be a whole number from 0 to 65535"},
      {"{\"broker\": {\"heartbeatS\": -1}}",
       "key \"broker.heartbeatS\" must be a whole number from 0 to 3600"},
      {"{\"broker\": {\"queueType\": \"fast\"}}",
       "key \"broker.queueType\" must be \"classic\" or \"quorum\""},
      {"{\"broker\": \"amqp://h/\"}", "key \"broker\" must be an object like {\"uri\": "},
      {"{\"nudge\": {\"enabled\": \"yes\"}}", "key \"nudge.enabled\" must be true or false"},
      {"{\"broker\": {\"seal\": 0}}", "key \"broker.seal\" must be true or false"},
      {"{\"broker\": {\"acceptUnsealed\": \"no\"}}",
       "key \"broker.acceptUnsealed\" must be true or false"},
      {"{\"nudge\": {\"backoffMs\": 0}}", "key \"nudge.backoffMs\" must be above 0"},
      {"{\"nudge\": {\"firstDelayMs\": 86400001}}",
       "key \"nudge.firstDelayMs\" must be a whole number from 0 to 86400000"},
      {"{\"nudge\": []}", "key \"nudge\" must be an object"},
      {"[{\"hostId\": \"box\"}]", "the file must hold one JSON object, not an array"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    fx_write(f, cases[i].json);
    assert_int_equal(fx_load(f, ARGC(argv), argv), FL_ECONFIG);
    char want[1024];
    snprintf(want, sizeof want, "%s: %s", f->file, cases[i].want);
    assert_err_has(f, want);
  }
}

static void test_too_long_values_name_their_source(void **state) {
  fx *f = *state;
  char long_path[1100];
  memset(long_path, 'a', sizeof long_path - 1);
  long_path[0] = '/';
  long_path[sizeof long_path - 1] = '\0';
  char *argv[] = {"fleetd", "--state-dir", long_path};
  assert_int_equal(fx_load(f, ARGC(argv), argv), FL_ECONFIG);
  assert_string_equal(f->err, "--state-dir is too long (at most 1023 bytes): shorten it");
  /* A variable too long for its buffer is an error too, not ignored. */
  setenv("FLEET_SOCKET", long_path, 1);
  char *argv2[] = {"fleetd"};
  assert_int_equal(fx_load(f, ARGC(argv2), argv2), FL_ECONFIG);
  assert_string_equal(f->err, "FLEET_SOCKET is too long (at most 1023 bytes): shorten it");
  unsetenv("FLEET_SOCKET");
  char json[1300];
  snprintf(json, sizeof json, "{\"nudge\": {\"text\": \"%.300s\"}}", long_path);
  fx_write(f, json);
  char *argv3[] = {"fleetd", "--config", f->file};
  assert_int_equal(fx_load(f, ARGC(argv3), argv3), FL_ECONFIG);
  char want[512];
  snprintf(want, sizeof want, "%s: key \"nudge.text\" is too long (at most 255 bytes)", f->file);
  assert_err_has(f, want);
}

static void test_missing_file(void **state) {
  fx *f = *state;
  char path[400], want[600];
  snprintf(path, sizeof path, "%s/nope.json", f->dir);
  char *argv[] = {"fleetd", "--config", path};
  assert_int_equal(fx_load(f, ARGC(argv), argv), FL_ECONFIG);
  snprintf(want, sizeof want,
           "cannot read config file %s: No such file or directory (check the path given to "
           "--config)",
           path);
  assert_string_equal(f->err, want);
  assert_null(strstr(f->err, ":-1"));
  /* The same from FLEET_CONFIG names the variable. */
  setenv("FLEET_CONFIG", path, 1);
  char *argv2[] = {"fleetd"};
  assert_int_equal(fx_load(f, ARGC(argv2), argv2), FL_ECONFIG);
  snprintf(want, sizeof want,
           "cannot read config file %s: No such file or directory (check the path given to "
           "FLEET_CONFIG)",
           path);
  assert_string_equal(f->err, want);
  /* A directory is not a config file. */
  setenv("FLEET_CONFIG", f->dir, 1);
  assert_int_equal(fx_load(f, ARGC(argv2), argv2), FL_ECONFIG);
  assert_err_has(f, ": Is a directory (check the path given to FLEET_CONFIG)");
}

static void test_malformed_json_gives_its_line(void **state) {
  fx *f = *state;
  fx_write(f, "{\n  \"hostId\": \"box\",\n  \"socket\" \"/tmp/s\"\n}\n");
  char *argv[] = {"fleetd", "--config", f->file};
  assert_int_equal(fx_load(f, ARGC(argv), argv), FL_ECONFIG);
  char want[400];
  snprintf(want, sizeof want, "%s:3: ", f->file);
  if (strncmp(f->err, want, strlen(want)) != 0)
    fail_msg("err \"%s\" does not start with \"%s\"", f->err, want);
  assert_err_has(f, "(fix the JSON, or point --config elsewhere)");
  /* An empty file has no line to point at but still names the file. */
  fx_write(f, "");
  assert_int_equal(fx_load(f, ARGC(argv), argv), FL_ECONFIG);
  assert_err_has(f, f->file);
  assert_null(strstr(f->err, ":-1"));
}

static void test_bad_host_id_from_flag(void **state) {
  fx *f = *state;
  char sd[400];
  snprintf(sd, sizeof sd, "%s/state", f->dir);
  char *argv[] = {"fleetd", "--host-id", "ci.box", "--state-dir", sd};
  assert_int_equal(fx_load(f, ARGC(argv), argv), 2);
  assert_string_equal(f->err, "--host-id 'ci.box' is not a valid host id: use 1-63 letters, "
                              "digits, '-' or '_' (it becomes part of broker routing keys)\n");
  /* Loading writes nothing. */
  struct stat st;
  assert_int_not_equal(stat(sd, &st), 0);
}

static void test_bad_host_id_from_env(void **state) {
  fx *f = *state;
  setenv("FLEET_HOST_ID", "ci box", 1);
  char *argv[] = {"fleetd"};
  assert_int_equal(fx_load(f, ARGC(argv), argv), 2);
  assert_err_has(f, "FLEET_HOST_ID 'ci box' is not a valid host id: use 1-63 letters");
  /* A name over 63 characters breaks the rule as well. */
  setenv("FLEET_HOST_ID", "a123456789b123456789c123456789d123456789e123456789f123456789g123", 1);
  assert_int_equal(fx_load(f, ARGC(argv), argv), 2);
  assert_err_has(f, "FLEET_HOST_ID 'a123456789");
}

static void test_bad_host_id_from_file(void **state) {
  fx *f = *state;
  fx_write(f, "{\"hostId\": \"box@home\"}");
  char *argv[] = {"fleetd", "--config", f->file};
  assert_int_equal(fx_load(f, ARGC(argv), argv), 2);
  char want[512];
  snprintf(want, sizeof want, "%s: \"hostId\" 'box@home' is not a valid host id", f->file);
  assert_err_has(f, want);
  /* The default path, found through XDG_CONFIG_HOME, is named the same way. */
  char xdg[400], dir[420], file[450];
  snprintf(xdg, sizeof xdg, "%s/xdg", f->dir);
  snprintf(dir, sizeof dir, "%s/fleet", xdg);
  snprintf(file, sizeof file, "%s/fleetd.json", dir);
  assert_int_equal(mkdir(xdg, 0700), 0);
  assert_int_equal(mkdir(dir, 0700), 0);
  FILE *fp = fopen(file, "w");
  assert_non_null(fp);
  fputs("{\"hostId\": \"a.b\"}", fp);
  fclose(fp);
  setenv("XDG_CONFIG_HOME", xdg, 1);
  char *argv2[] = {"fleetd"};
  assert_int_equal(fx_load(f, ARGC(argv2), argv2), 2);
  snprintf(want, sizeof want, "%s: \"hostId\" 'a.b' is not a valid host id", file);
  assert_err_has(f, want);
}

/* The machine's host name is the last source. Changing it needs a UTS
 * namespace of our own, so the check runs in a child that makes one; where
 * the kernel or the sandbox refuses, the test reports itself skipped. */
static void test_bad_host_id_from_host_name(void **state) {
  fx *f = *state;
  int pipefd[2];
  assert_int_equal(pipe(pipefd), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    close(pipefd[0]);
    if (unshare(CLONE_NEWUTS) != 0 && unshare(CLONE_NEWUSER | CLONE_NEWUTS) != 0)
      _exit(77);
    /* The host id is the name before the first dot. */
    if (sethostname("ci+box.example", 14) != 0)
      _exit(77);
    char *argv[] = {"fleetd"};
    int rc = fl_config_load(&f->cfg, 1, argv, f->err, sizeof f->err);
    if (write(pipefd[1], f->err, strlen(f->err)) < 0)
      _exit(3);
    _exit(rc == 2 ? 0 : 1);
  }
  close(pipefd[1]);
  char got[2048] = "";
  size_t n = 0;
  ssize_t r;
  while (n + 1 < sizeof got && (r = read(pipefd[0], got + n, sizeof got - 1 - n)) > 0)
    n += (size_t)r;
  got[n] = '\0';
  close(pipefd[0]);
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  if (WEXITSTATUS(status) == 77)
    skip();
  if (WEXITSTATUS(status) != 0)
    fail_msg("child exit %d, err \"%s\"", WEXITSTATUS(status), got);
  assert_string_equal(got, "the machine's host name (set --host-id) 'ci+box' is not a valid host "
                           "id: use 1-63 letters, digits, '-' or '_' (it becomes part of broker "
                           "routing keys)\n");
}

static void test_flag_beats_env_beats_file(void **state) {
  fx *f = *state;
  fx_write(f, "{\"hostId\": \"filehost\", \"stateDir\": \"/f/state\", \"socket\": \"/f/sock\", "
              "\"logLevel\": \"debug\", \"broker\": {\"uri\": \"amqp://file/\"}}");
  char *argv[] = {"fleetd", "--config", f->file};
  assert_int_equal(fx_load(f, ARGC(argv), argv), 0);
  assert_string_equal(f->cfg.gw.host_id, "filehost");
  assert_string_equal(f->cfg.gw.state_dir, "/f/state");
  assert_string_equal(f->cfg.gw.socket, "/f/sock");
  assert_string_equal(f->cfg.gw.broker_uri, "amqp://file/");
  assert_string_equal(f->cfg.log_level, "debug");
  assert_string_equal(f->cfg.config_file, f->file);

  setenv("FLEET_HOST_ID", "envhost", 1);
  setenv("FLEET_STATE_DIR", "/e/state", 1);
  setenv("FLEET_BROKER_URI", "amqp://env/", 1);
  setenv("FLEET_LOG_LEVEL", "warn", 1);
  assert_int_equal(fx_load(f, ARGC(argv), argv), 0);
  assert_string_equal(f->cfg.gw.host_id, "envhost");
  assert_string_equal(f->cfg.gw.state_dir, "/e/state");
  assert_string_equal(f->cfg.gw.socket, "/f/sock");
  assert_string_equal(f->cfg.gw.broker_uri, "amqp://env/");
  assert_string_equal(f->cfg.log_level, "warn");

  char *argv2[] = {"fleetd",   "--config", f->file,        "--host-id",   "flaghost", "--state-dir",
                   "/g/state", "--broker", "amqp://flag/", "--log-level", "error"};
  assert_int_equal(fx_load(f, ARGC(argv2), argv2), 0);
  assert_string_equal(f->cfg.gw.host_id, "flaghost");
  assert_string_equal(f->cfg.gw.state_dir, "/g/state");
  assert_string_equal(f->cfg.gw.socket, "/f/sock");
  assert_string_equal(f->cfg.gw.broker_uri, "amqp://flag/");
  assert_string_equal(f->cfg.log_level, "error");

  /* A good flag overrides a bad variable; the error would name the winner. */
  setenv("FLEET_HOST_ID", "bad.env", 1);
  assert_int_equal(fx_load(f, ARGC(argv2), argv2), 0);
  assert_string_equal(f->cfg.gw.host_id, "flaghost");
}

static void test_defaults(void **state) {
  fx *f = *state;
  char *argv[] = {"fleetd", "--host-id", "box"};
  assert_int_equal(fx_load(f, ARGC(argv), argv), 0);
  char want[400];
  snprintf(want, sizeof want, "%s/.local/state/fleet", f->dir);
  assert_string_equal(f->cfg.gw.state_dir, want);
  snprintf(want, sizeof want, "%s/.local/state/fleet/fleetd.sock", f->dir);
  assert_string_equal(f->cfg.gw.socket, want);
  assert_string_equal(f->cfg.log_level, "info");
  assert_string_equal(f->cfg.config_file, "");
  assert_int_equal(f->cfg.gw.nudge.enabled, 1);
  assert_int_equal(f->cfg.gw.nudge.backoff_ms, 30000);
  /* Sealing is on, and bodies in clear are refused, unless said otherwise. */
  assert_int_equal(f->cfg.gw.broker_no_seal, 0);
  assert_int_equal(f->cfg.gw.broker_accept_unsealed, 0);
}

static void test_seal_keys(void **state) {
  fx *f = *state;
  char *argv[] = {"fleetd", "--host-id", "box", "--config", f->file};
  fx_write(f, "{\"broker\": {\"uri\": \"amqp://h/\", \"seal\": false, \"acceptUnsealed\": true}}");
  assert_int_equal(fx_load(f, ARGC(argv), argv), 0);
  assert_int_equal(f->cfg.gw.broker_no_seal, 1);
  assert_int_equal(f->cfg.gw.broker_accept_unsealed, 1);
  assert_int_equal(f->cfg.gw.broker_no_pair_seal, 0);
  fx_write(f, "{\"broker\": {\"uri\": \"amqp://h/\", \"seal\": true, \"pairSeal\": false}}");
  assert_int_equal(fx_load(f, ARGC(argv), argv), 0);
  assert_int_equal(f->cfg.gw.broker_no_seal, 0);
  assert_int_equal(f->cfg.gw.broker_accept_unsealed, 0);
  assert_int_equal(f->cfg.gw.broker_no_pair_seal, 1);
}

static void test_log_level_not_in_list(void **state) {
  fx *f = *state;
  fx_write(f, "{\"logLevel\": \"loud\"}");
  char *argv[] = {"fleetd", "--config", f->file};
  assert_int_equal(fx_load(f, ARGC(argv), argv), FL_ECONFIG);
  char want[512];
  snprintf(want, sizeof want,
           "log level 'loud' is not one of debug, info, warn, error (set by %s: key "
           "\"logLevel\")",
           f->file);
  assert_string_equal(f->err, want);
  setenv("FLEET_LOG_LEVEL", "trace", 1);
  assert_int_equal(fx_load(f, ARGC(argv), argv), FL_ECONFIG);
  assert_string_equal(f->err, "log level 'trace' is not one of debug, info, warn, error (set by "
                              "FLEET_LOG_LEVEL)");
  char *argv2[] = {"fleetd", "--log-level", "verbose"};
  assert_int_equal(fx_load(f, ARGC(argv2), argv2), FL_ECONFIG);
  assert_string_equal(f->err, "log level 'verbose' is not one of debug, info, warn, error (set by "
                              "--log-level)");
}

static void test_store_synchronous(void **state) {
  fx *f = *state;
  char *argv[] = {"fleetd", "--config", f->file};
  fx_write(f, "{}");
  assert_int_equal(fx_load(f, ARGC(argv), argv), 0);
  assert_int_equal(f->cfg.gw.store_sync_full, 0); /* normal by default */
  fx_write(f, "{\"store\": {\"synchronous\": \"full\"}}");
  assert_int_equal(fx_load(f, ARGC(argv), argv), 0);
  assert_int_equal(f->cfg.gw.store_sync_full, 1);
  fx_write(f, "{\"store\": {\"synchronous\": \"normal\"}}");
  assert_int_equal(fx_load(f, ARGC(argv), argv), 0);
  assert_int_equal(f->cfg.gw.store_sync_full, 0);
  fx_write(f, "{\"store\": {\"synchronous\": \"off\"}}");
  assert_int_equal(fx_load(f, ARGC(argv), argv), FL_ECONFIG);
  assert_err_has(f, "key \"store.synchronous\" must be \"normal\"");
  assert_err_has(f, f->file);
  fx_write(f, "{\"store\": {\"sync\": \"full\"}}");
  assert_int_equal(fx_load(f, ARGC(argv), argv), FL_ECONFIG);
  assert_err_has(f, "unknown key \"store.sync\" (known: synchronous, maxSeen)");
  fx_write(f, "{\"store\": true}");
  assert_int_equal(fx_load(f, ARGC(argv), argv), FL_ECONFIG);
  assert_err_has(f, "key \"store\" must be an object");
  /* The seen-set's bound. */
  fx_write(f, "{\"store\": {\"maxSeen\": 500}}");
  assert_int_equal(fx_load(f, ARGC(argv), argv), 0);
  assert_int_equal(f->cfg.gw.store_max_seen, 500);
  fx_write(f, "{\"store\": {\"maxSeen\": 5}}");
  assert_int_equal(fx_load(f, ARGC(argv), argv), FL_ECONFIG);
  assert_err_has(f, "key \"store.maxSeen\" must be 100 to 10000000");
}

static void test_broker_uri_list(void **state) {
  fx *f = *state;
  char *argv[] = {"fleetd", "--config", f->file};
  fx_write(f, "{\"broker\": {\"uri\": [\"amqp://a:1/\", \"amqp://b:2/\", \"amqp://c:3/\"]}}");
  assert_int_equal(fx_load(f, ARGC(argv), argv), 0);
  assert_string_equal(f->cfg.gw.broker_uri, "amqp://a:1/,amqp://b:2/,amqp://c:3/");
  fx_write(f, "{\"broker\": {\"uri\": []}}");
  assert_int_equal(fx_load(f, ARGC(argv), argv), FL_ECONFIG);
  assert_err_has(f, "key \"broker.uri\" must list 1 to 8 URIs, not 0");
  fx_write(f, "{\"broker\": {\"uri\": [\"amqp://a/\", 7]}}");
  assert_int_equal(fx_load(f, ARGC(argv), argv), FL_ECONFIG);
  assert_err_has(f, "key \"broker.uri\" item 2 must be a URI string");
  assert_err_has(f, f->file);
}

static void test_usage_errors(void **state) {
  fx *f = *state;
  char *argv[] = {"fleetd", "extra"};
  assert_int_equal(fx_load(f, ARGC(argv), argv), 2);
  assert_err_has(f, "unexpected argument 'extra'\nusage: fleetd [--config FILE]");
}

static void test_parse_in_memory(void **state) {
  fx *f = *state;
  fl_config_defaults(&f->cfg);
  /* Not NUL-terminated: the length bounds the text. */
  static const char text[] = "{\"broker\": {\"uri\": \"amqp://m/\", \"queueType\": \"quorum\"}}XX";
  assert_int_equal(
      fl_config_parse(&f->cfg, text, sizeof text - 3, "mem.json", f->err, sizeof f->err), 0);
  assert_string_equal(f->cfg.gw.broker_uri, "amqp://m/");
  assert_string_equal(f->cfg.gw.broker_queue_type, "quorum");
  assert_int_equal(
      fl_config_parse(&f->cfg, text, sizeof text - 1, "mem.json", f->err, sizeof f->err),
      FL_ECONFIG);
  assert_err_has(f, "mem.json:1: ");
}

/* Parses text as mem.json onto defaults; returns fl_config_parse's code. */
static int fx_parse(fx *f, const char *text) {
  fl_config_defaults(&f->cfg);
  f->err[0] = '\0';
  return fl_config_parse(&f->cfg, text, strlen(text), "mem.json", f->err, sizeof f->err);
}

/* Asserts text fails to parse with an error holding want. */
static void assert_profile_err(fx *f, const char *text, const char *want) {
  if (fx_parse(f, text) != FL_ECONFIG)
    fail_msg("accepted: %s", text);
  assert_err_has(f, "mem.json: ");
  assert_err_has(f, want);
  assert_int_equal(f->cfg.gw.nprofiles, 0);
}

static void test_profiles_round_trip(void **state) {
  fx *f = *state;
  static const char text[] =
      "{\"profiles\": {"
      "\"claude\": {\"backend\": \"tmux\", \"command\": [\"claude\", \"--model\", \"opus\"],"
      " \"cwd\": \"/srv/repo\", \"env\": {\"FOO\": \"bar\", \"_X1\": \"\"}, \"role\": \"lead\","
      " \"groups\": [\"backend\", \"web\"], \"readyTimeoutS\": 90, \"prompt\": \"^> *$\","
      " \"busy\": \"esc to interrupt\\\\)$\", \"quietMs\": 1500},"
      "\"aider\": {\"backend\": \"exec\", \"command\": [\"aider\"]}}}";
  assert_int_equal(fx_parse(f, text), 0);
  const fl_gw_config *gw = &f->cfg.gw;
  assert_int_equal(gw->nprofiles, 2);
  /* Sorted by name, defaults filled in. */
  const fl_profile *a = &gw->profiles[0], *c = &gw->profiles[1];
  assert_string_equal(a->name, "aider");
  assert_string_equal(a->backend, "exec");
  assert_string_equal(a->role, "worker");
  assert_int_equal(a->ngroups, 0);
  assert_string_equal(a->cwd, "");
  assert_string_equal(a->prompt, "");
  assert_string_equal(a->busy, "");
  assert_int_equal(a->ready_timeout_s, FL_PROFILE_READY_DEFAULT_S);
  assert_int_equal(a->quiet_ms, FL_PROFILE_QUIET_DEFAULT_MS);
  assert_string_equal(a->launch, "{\"command\":[\"aider\"],\"env\":{}}");
  assert_string_equal(c->name, "claude");
  assert_string_equal(c->backend, "tmux");
  assert_string_equal(c->role, "lead");
  assert_int_equal(c->ngroups, 2);
  assert_string_equal(c->groups[0], "backend");
  assert_string_equal(c->groups[1], "web");
  assert_string_equal(c->cwd, "/srv/repo");
  assert_string_equal(c->prompt, "^> *$");
  assert_string_equal(c->busy, "esc to interrupt\\)$");
  assert_int_equal(c->ready_timeout_s, 90);
  assert_int_equal(c->quiet_ms, 1500);
  json_t *launch = json_loads(c->launch, 0, NULL);
  assert_non_null(launch);
  json_t *want = json_pack("{s:[s,s,s], s:{s:s, s:s}}", "command", "claude", "--model", "opus",
                           "env", "FOO", "bar", "_X1", "");
  assert_true(json_equal(launch, want));
  json_decref(launch);
  json_decref(want);
  /* A later file's profiles replace the earlier ones; null means none. */
  assert_int_equal(
      fl_config_parse(&f->cfg, "{\"profiles\": null}", 18, "mem.json", f->err, sizeof f->err), 0);
  assert_int_equal(f->cfg.gw.nprofiles, 0);
  /* The bounds themselves are accepted. */
  assert_int_equal(fx_parse(f, "{\"profiles\": {\"p\": {\"backend\": \"exec\", \"command\": "
                               "[\"x\", \"\"], \"readyTimeoutS\": 600, \"quietMs\": 0}}}"),
                   0);
  assert_int_equal(f->cfg.gw.profiles[0].ready_timeout_s, 600);
  assert_int_equal(f->cfg.gw.profiles[0].quiet_ms, 0);
  /* commandChars: the default when not given, "" for none, or the profile's. */
  assert_string_equal(f->cfg.gw.profiles[0].command_chars, "!/#");
  assert_int_equal(fx_parse(f, "{\"profiles\": {\"p\": {\"backend\": \"tmux\", \"command\": "
                               "[\"x\"], \"commandChars\": \"\"}}}"),
                   0);
  assert_string_equal(f->cfg.gw.profiles[0].command_chars, "");
  assert_int_equal(fx_parse(f, "{\"profiles\": {\"p\": {\"backend\": \"tmux\", \"command\": "
                               "[\"x\"], \"commandChars\": \"/$\"}}}"),
                   0);
  assert_string_equal(f->cfg.gw.profiles[0].command_chars, "/$");
}

static void test_profiles_errors(void **state) {
  fx *f = *state;
#define P(body) "{\"profiles\": {\"claude\": {" body "}}}"
#define OK "\"backend\": \"tmux\", \"command\": [\"claude\"]"
  assert_profile_err(f, "{\"profiles\": [1]}",
                     "key \"profiles\" must be an object of named profiles like");
  assert_profile_err(f, "{\"profiles\": {\"claude\": 3}}",
                     "key \"profiles.claude\" must be an object like {\"backend\": \"tmux\"");
  assert_profile_err(f, "{\"profiles\": {\"bad name\": {" OK "}}}",
                     "key \"profiles.bad name\": the profile name is not valid: use 1-63 "
                     "letters, digits, '-' or '_'");
  assert_profile_err(f, "{\"profiles\": {\"a.b\": {" OK "}}}", "\"profiles.a.b\": the profile");
  assert_profile_err(f, P(OK ", \"comand\": []"),
                     "unknown key \"profiles.claude.comand\" (known: backend, command, cwd, env, "
                     "role, groups, readyTimeoutS, prompt, busy, quietMs, commandChars)");
  /* backend */
  assert_profile_err(f, P("\"command\": [\"claude\"]"),
                     "key \"profiles.claude.backend\" must be \"tmux\" (a tmux window running "
                     "the command) or \"exec\" (the command, given each message on stdin); it is "
                     "missing");
  assert_profile_err(f, P("\"backend\": \"herdr\", \"command\": [\"claude\"]"),
                     "key \"profiles.claude.backend\" must be \"tmux\"");
  /* command */
  assert_profile_err(f, P("\"backend\": \"tmux\""),
                     "key \"profiles.claude.command\" is missing: give the program and its "
                     "arguments, e.g. [\"claude\"]");
  assert_profile_err(f, P("\"backend\": \"tmux\", \"command\": []"),
                     "key \"profiles.claude.command\" must be a non-empty array of strings (the "
                     "program, then its arguments), e.g. [\"claude\", \"--model\", \"opus\"]; it "
                     "is empty");
  assert_profile_err(f, P("\"backend\": \"tmux\", \"command\": \"claude\""),
                     "key \"profiles.claude.command\" must be a non-empty array of strings");
  assert_profile_err(f, P("\"backend\": \"tmux\", \"command\": [\"claude\", 3]"),
                     "key \"profiles.claude.command\" item 1 must be a string, not a number");
  assert_profile_err(f, P("\"backend\": \"tmux\", \"command\": [\"\"]"),
                     "key \"profiles.claude.command\" item 0 must be a program name, not empty");
  /* wrong types */
  assert_profile_err(f, P(OK ", \"cwd\": 1"),
                     "key \"profiles.claude.cwd\" must be a string, not a number");
  assert_profile_err(f, P(OK ", \"env\": []"),
                     "key \"profiles.claude.env\" must be an object of strings like {\"FOO\": "
                     "\"bar\"}, not an array");
  assert_profile_err(f, P(OK ", \"env\": {\"N\": 1}"),
                     "key \"profiles.claude.env.N\" must be a string, not a number (quote it)");
  assert_profile_err(f, P(OK ", \"env\": {\"A=B\": \"x\"}"),
                     "key \"profiles.claude.env\" names the variable \"A=B\", which is not a "
                     "variable name");
  assert_profile_err(f, P(OK ", \"readyTimeoutS\": 0"),
                     "key \"profiles.claude.readyTimeoutS\" must be a whole number from 1 to 600");
  assert_profile_err(f, P(OK ", \"readyTimeoutS\": 601"),
                     "key \"profiles.claude.readyTimeoutS\" must be a whole number from 1 to 600");
  assert_profile_err(f, P(OK ", \"readyTimeoutS\": \"60\""),
                     "key \"profiles.claude.readyTimeoutS\" must be a whole number");
  assert_profile_err(f, P(OK ", \"quietMs\": -1"),
                     "key \"profiles.claude.quietMs\" must be a whole number from 0 to 60000");
  assert_profile_err(f, P(OK ", \"commandChars\": \"! /\""),
                     "key \"profiles.claude.commandChars\" must be a string of at most 16 "
                     "printable ASCII characters");
  assert_profile_err(f, P(OK ", \"commandChars\": [\"!\"]"),
                     "key \"profiles.claude.commandChars\" must be a string");
  assert_profile_err(f, P(OK ", \"prompt\": true"),
                     "key \"profiles.claude.prompt\" must be a string, not true or false");
  /* role and groups by the name rule */
  assert_profile_err(f, P(OK ", \"role\": \"team lead\""),
                     "key \"profiles.claude.role\" must be a role name of 1-32 letters, digits, "
                     "'-' or '_' (e.g. worker, lead), not \"team lead\"");
  assert_profile_err(f, P(OK ", \"role\": 7"),
                     "key \"profiles.claude.role\" must be a role name of 1-32");
  assert_profile_err(f, P(OK ", \"groups\": \"web\""),
                     "key \"profiles.claude.groups\" must be an array of group names like "
                     "[\"backend\"], not a string");
  assert_profile_err(f, P(OK ", \"groups\": [\"web\", \"a b\"]"),
                     "key \"profiles.claude.groups\" item 1 is not a valid group name: use 1-63 "
                     "letters, digits, '-' or '_'");
  /* the prompt regex must compile */
  assert_profile_err(f, P(OK ", \"prompt\": \"(unclosed\""),
                     "key \"profiles.claude.prompt\" is not a POSIX extended regular expression (");
  assert_profile_err(f, P(OK ", \"busy\": \"[unclosed\""),
                     "key \"profiles.claude.busy\" is not a POSIX extended regular expression (");
  assert_profile_err(f, P(OK ", \"busy\": 1"),
                     "key \"profiles.claude.busy\" must be a string, not");
  /* too many profiles */
  char big[8192] = "{\"profiles\": {";
  for (int i = 0; i <= FL_MAX_PROFILES; i++) {
    char one[128];
    snprintf(one, sizeof one, "%s\"p%d\": {" OK "}", i ? ", " : "", i);
    strcat(big, one);
  }
  strcat(big, "}}");
  assert_profile_err(f, big, "key \"profiles\" has 33 profiles, at most 32: remove some");
  /* a launch text over its cap */
  char longcmd[FL_MAX_PROFILE_LAUNCH + 256];
  snprintf(longcmd, sizeof longcmd, P("\"backend\": \"exec\", \"command\": [\"%0*d\"]"),
           FL_MAX_PROFILE_LAUNCH, 7);
  assert_profile_err(f, longcmd, "key \"profiles.claude\": command and env take ");
  /* the file name is in every message, as from fl_config_load */
  fx_write(f, P(OK ", \"colour\": 1"));
  char *argv[] = {"fleetd", "--config", f->file};
  assert_int_equal(fx_load(f, ARGC(argv), argv), FL_ECONFIG);
  char want[512];
  snprintf(want, sizeof want, "%s: unknown key \"profiles.claude.colour\"", f->file);
  assert_err_has(f, want);
#undef P
#undef OK
}

/* inject.timeoutS and inject.onDraft: defaults, values, and errors that
 * name the key. */
static void test_inject_keys(void **state) {
  fx *f = *state;
  assert_int_equal(fx_parse(f, "{}"), 0);
  assert_int_equal(f->cfg.gw.inject.timeout_s, 120);
  assert_int_equal(f->cfg.gw.inject.on_draft_fail, 0);
  assert_int_equal(fx_parse(f, "{\"inject\": {\"timeoutS\": 7, \"onDraft\": \"fail\"}}"), 0);
  assert_int_equal(f->cfg.gw.inject.timeout_s, 7);
  assert_int_equal(f->cfg.gw.inject.on_draft_fail, 1);
  assert_int_equal(fx_parse(f, "{\"inject\": {\"onDraft\": \"wait\"}}"), 0);
  assert_int_equal(f->cfg.gw.inject.on_draft_fail, 0);
  assert_int_equal(fx_parse(f, "{\"inject\": {\"timeoutS\": 0}}"), FL_ECONFIG);
  assert_err_has(f, "inject.timeoutS");
  assert_int_equal(fx_parse(f, "{\"inject\": {\"timeoutS\": \"5\"}}"), FL_ECONFIG);
  assert_err_has(f, "inject.timeoutS");
  assert_int_equal(fx_parse(f, "{\"inject\": {\"onDraft\": \"type\"}}"), FL_ECONFIG);
  assert_err_has(f, "inject.onDraft");
  assert_int_equal(fx_parse(f, "{\"inject\": {\"retries\": 1}}"), FL_ECONFIG);
  assert_err_has(f, "unknown key \"inject.retries\"");
  assert_int_equal(fx_parse(f, "{\"inject\": 5}"), FL_ECONFIG);
  assert_err_has(f, "\"inject\" must be an object");
}

/* hooks.approveTimeoutMs and authority.approve: defaults, values, and
 * errors that name the key. */
static void test_approve_keys(void **state) {
  fx *f = *state;
  assert_int_equal(fx_parse(f, "{}"), 0);
  assert_int_equal(f->cfg.gw.hooks_approve_timeout_ms, FL_HOOK_APPROVE_TIMEOUT_MS);
  assert_true(f->cfg.gw.hooks_approve_timeout_ms < FL_HOOK_APPROVE_WAIT_S * 1000);
  assert_int_equal(f->cfg.gw.auth_approve.set, 0);
  assert_int_equal(fx_parse(f, "{\"hooks\": {\"approveTimeoutMs\": 0}, \"authority\": "
                               "{\"approve\": [\"hostB\", \"lead@hostA\", \"role:lead\"]}}"),
                   0);
  assert_int_equal(f->cfg.gw.hooks_approve_timeout_ms, 0);
  assert_int_equal(f->cfg.gw.auth_approve.n, 3);
  assert_string_equal(f->cfg.gw.auth_approve.v[1], "lead@hostA");
  assert_int_equal(fx_parse(f, "{\"hooks\": {\"approveTimeoutMs\": 120001}}"), FL_ECONFIG);
  assert_err_has(f, "hooks.approveTimeoutMs");
  assert_int_equal(fx_parse(f, "{\"hooks\": {\"approveTimeout\": 5}}"), FL_ECONFIG);
  assert_err_has(f, "unknown key \"hooks.approveTimeout\"");
  assert_int_equal(fx_parse(f, "{\"hooks\": 5}"), FL_ECONFIG);
  assert_err_has(f, "\"hooks\" must be an object");
  assert_int_equal(fx_parse(f, "{\"authority\": {\"approve\": [\"a b\"]}}"), FL_ECONFIG);
  assert_err_has(f, "authority.approve");
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_unknown_key_names_key_and_file),
      T(test_unknown_nested_keys),
      T(test_coordinator_block),
      T(test_coord_id_rule),
      T(test_wrong_types),
      T(test_too_long_values_name_their_source),
      T(test_missing_file),
      T(test_malformed_json_gives_its_line),
      T(test_bad_host_id_from_flag),
      T(test_bad_host_id_from_env),
      T(test_bad_host_id_from_file),
      T(test_bad_host_id_from_host_name),
      T(test_flag_beats_env_beats_file),
      T(test_defaults),
      T(test_seal_keys),
      T(test_log_level_not_in_list),
      T(test_store_synchronous),
      T(test_broker_uri_list),
      T(test_usage_errors),
      T(test_parse_in_memory),
      T(test_profiles_round_trip),
      T(test_profiles_errors),
      T(test_inject_keys),
      T(test_approve_keys),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
