/* fuzz_config.c — fuzz target for fleetd's config file parser.
 *
 * The input is the text of a config file. It goes through fl_config_parse
 * (the same apply step fl_config_load runs on the file it reads) onto a
 * config holding the defaults, with the bytes after each default string's
 * terminator poisoned, so a string written without its NUL shows. The
 * invariant: either 0, with every string field NUL-terminated within its
 * buffer and the checked values in range, or FL_ECONFIG with a non-empty
 * err that names the file. Anything else aborts. Built as a libFuzzer target
 * with -DFLEET_FUZZ=ON (clang), and always as a replay test that runs the
 * seed corpus plus deterministic mutations. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "gateway/config/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_FILE "fuzz/fleetd.json"

static void fz_fail(const char *why, const char *detail) {
  fprintf(stderr, "fuzz_config: %s: %s\n", why, detail);
  abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static fl_config cfg;
  fl_config_defaults(&cfg);
  fl_gw_config *gw = &cfg.gw;
  const struct {
    const char *name;
    char *s;
    size_t n;
  } fields[] = {
      {"hostId", gw->host_id, sizeof gw->host_id},
      {"stateDir", gw->state_dir, sizeof gw->state_dir},
      {"socket", gw->socket, sizeof gw->socket},
      {"broker.uri", gw->broker_uri, sizeof gw->broker_uri},
      {"broker.caFile", gw->broker_ca_file, sizeof gw->broker_ca_file},
      {"broker.queueType", gw->broker_queue_type, sizeof gw->broker_queue_type},
      {"nudge.text", gw->nudge.text, sizeof gw->nudge.text},
      {"logLevel", cfg.log_level, sizeof cfg.log_level},
      {"config_file", cfg.config_file, sizeof cfg.config_file},
  };
  const size_t nfields = sizeof fields / sizeof fields[0];
  for (size_t i = 0; i < nfields; i++) {
    size_t len = strlen(fields[i].s);
    if (len + 1 < fields[i].n)
      memset(fields[i].s + len + 1, 0xAA, fields[i].n - len - 1);
  }

  char err[512] = "";
  int rc = fl_config_parse(&cfg, (const char *)data, size, FZ_FILE, err, sizeof err);
  if (rc == 0) {
    for (size_t i = 0; i < nfields; i++)
      if (!memchr(fields[i].s, '\0', fields[i].n))
        fz_fail("string not NUL-terminated in its buffer", fields[i].name);
    if (gw->broker_queue_type[0] && strcmp(gw->broker_queue_type, "classic") != 0 &&
        strcmp(gw->broker_queue_type, "quorum") != 0)
      fz_fail("accepted a bad broker.queueType", gw->broker_queue_type);
    if (gw->nudge.backoff_ms == 0 || gw->nudge.first_ms > 86400000 || gw->nudge.max_ms > 86400000 ||
        gw->broker_prefetch > 65535 || gw->broker_heartbeat_s > 3600)
      fz_fail("accepted a number out of range", "nudge or broker");
  } else {
    if (rc != FL_ECONFIG)
      fz_fail("failed with a code other than FL_ECONFIG", fl_strerror(rc));
    if (!memchr(err, '\0', sizeof err) || !err[0])
      fz_fail("failed with an empty or unterminated err", "");
    if (!strstr(err, FZ_FILE))
      fz_fail("err does not name the file", err);
  }
  return 0;
}
