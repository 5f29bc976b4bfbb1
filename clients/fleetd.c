/* fleetd.c — the gateway daemon's entry point: wires the gateway (gateway/) and
 * the MCP server (mcp/) onto one loop.
 *
 * Loads the configuration, opens the state dir, starts the gateway core and
 * the MCP socket on one libuv loop, and runs until SIGTERM or SIGINT. On a
 * signal it stops accepting, finishes every waiting call (a send reads
 * "pending", its reply will be held), flushes what each client is owed,
 * closes everything and exits 0. */
#include <errno.h>
#include <fcntl.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/log.h"
#include "common/paths.h"
#include "gateway/config/config.h"
#include "gateway/gateway.h"
#include "mcp/server.h"

typedef struct fl_daemon {
  uv_loop_t loop;
  uv_signal_t sigterm, sigint;
  fl_gw *gw;
  fl_server *fe;
  int stopping;
} fl_daemon;

static void fl_on_signal(uv_signal_t *h, int signum) {
  fl_daemon *d = h->data;
  if (d->stopping)
    return;
  d->stopping = 1;
  fl_info(NULL, "fleetd: %s received; finishing and exiting", strsignal(signum));
  fl_gw_shutdown(d->gw);
  fl_server_stop(d->fe);
  uv_close((uv_handle_t *)&d->sigterm, NULL);
  uv_close((uv_handle_t *)&d->sigint, NULL);
}

static enum fl_log_level fl_level_of(const char *s) {
  if (strcmp(s, "debug") == 0)
    return FL_LOG_DEBUG;
  if (strcmp(s, "warn") == 0)
    return FL_LOG_WARN;
  if (strcmp(s, "error") == 0)
    return FL_LOG_ERROR;
  return FL_LOG_INFO;
}

int main(int argc, char **argv) {
  fl_alloc_init();
#ifdef __GLIBC__
  /* Blocks of 128 KiB and more (a long line, its parse) are mapped and go
   * back to the system when freed. glibc otherwise raises that threshold
   * after the first such free, and a burst of big lines from clients would
   * leave fleetd's heap large for good. */
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);
#endif
  signal(SIGPIPE, SIG_IGN);
  if (sodium_init() < 0) {
    fprintf(stderr, "fleetd: libsodium failed to initialise\n");
    return 1;
  }
  static fl_config cfg;
  char err[2048];
  int rc = fl_config_load(&cfg, argc, argv, err, sizeof err);
  if (rc == 1)
    return 0;
  if (rc == 2) {
    fprintf(stderr, "fleetd: %s", err);
    return 2;
  }
  if (rc) {
    fprintf(stderr, "fleetd: %s\n", err);
    return 1;
  }
  fl_log_set_level(fl_level_of(cfg.log_level));
  if ((rc = fl_paths_mkdir_p(cfg.gw.state_dir, 0700))) {
    fprintf(stderr, "fleetd: cannot create state dir %s: %s (set --state-dir)\n", cfg.gw.state_dir,
            strerror(-rc));
    return 1;
  }
  /* One fleetd per state dir: two would hold the same entities and disagree. */
  char lockpath[sizeof cfg.gw.state_dir + 16];
  snprintf(lockpath, sizeof lockpath, "%s/fleetd.lock", cfg.gw.state_dir);
  int lockfd = open(lockpath, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lockfd < 0 || flock(lockfd, LOCK_EX | LOCK_NB) != 0) {
    fprintf(stderr,
            "fleetd: another fleetd is using the state dir %s (stop it, or give this "
            "one its own --state-dir)\n",
            cfg.gw.state_dir);
    if (lockfd >= 0)
      close(lockfd);
    return 1;
  }

  static fl_daemon d;
  uv_loop_init(&d.loop);
  if ((rc = fl_gw_new(&d.loop, &cfg.gw, &d.gw, err, sizeof err))) {
    fprintf(stderr, "fleetd: %s\n", err);
    uv_loop_close(&d.loop);
    close(lockfd);
    return 1;
  }
  if ((rc = fl_server_start(&d.loop, d.gw, cfg.gw.socket, &d.fe, err, sizeof err))) {
    fprintf(stderr, "fleetd: %s\n", err);
    fl_gw_shutdown(d.gw);
    fl_server_stop(d.fe);
    uv_run(&d.loop, UV_RUN_DEFAULT);
    fl_server_free(&d.fe);
    fl_gw_free(&d.gw);
    uv_loop_close(&d.loop);
    close(lockfd);
    return 1;
  }
  fl_gw_set_status_source(d.gw, fl_server_status, d.fe);
  uv_signal_init(&d.loop, &d.sigterm);
  uv_signal_init(&d.loop, &d.sigint);
  d.sigterm.data = d.sigint.data = &d;
  uv_signal_start(&d.sigterm, fl_on_signal, SIGTERM);
  uv_signal_start(&d.sigint, fl_on_signal, SIGINT);

  fl_info(NULL, "fleetd %s ready: host %s, socket %s, state %s, mode %s", FLEET_VERSION,
          cfg.gw.host_id, cfg.gw.socket, cfg.gw.state_dir,
          cfg.gw.broker_uri[0] ? "broker" : "single-host");
  uv_run(&d.loop, UV_RUN_DEFAULT);

  fl_server_free(&d.fe);
  fl_gw_free(&d.gw);
  rc = uv_loop_close(&d.loop);
  if (rc)
    fl_warn(NULL, "fleetd: loop closed with handles open: %s", uv_strerror(rc));
  fl_info(NULL, "fleetd: stopped");
  close(lockfd);
  return 0;
}
