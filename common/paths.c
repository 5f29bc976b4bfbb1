/* paths.c — default locations (see paths.h). */
#include "common/paths.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/error.h"

static int fl_fmt(char *out, size_t n, const char *fmt, const char *a, const char *b) {
  int w = snprintf(out, n, fmt, a, b);
  return (w < 0 || (size_t)w >= n) ? -ENAMETOOLONG : 0;
}

static const char *fl_env(const char *name) {
  const char *v = getenv(name);
  return (v && *v) ? v : NULL;
}

int fl_paths_state_dir(char *out, size_t n) {
  const char *v;
  if ((v = fl_env("FLEET_STATE_DIR")))
    return fl_fmt(out, n, "%s%s", v, "");
  if ((v = fl_env("XDG_STATE_HOME")))
    return fl_fmt(out, n, "%s/%s", v, "fleet");
  if ((v = fl_env("HOME")))
    return fl_fmt(out, n, "%s/%s", v, ".local/state/fleet");
  return FL_ECONFIG;
}

int fl_paths_socket(const char *state_dir, char *out, size_t n) {
  const char *v;
  if ((v = fl_env("FLEET_SOCKET")))
    return fl_fmt(out, n, "%s%s", v, "");
  if ((v = fl_env("XDG_RUNTIME_DIR")))
    return fl_fmt(out, n, "%s/%s", v, "fleet/fleetd.sock");
  char dir[4096];
  if (!state_dir) {
    int rc = fl_paths_state_dir(dir, sizeof dir);
    if (rc)
      return rc;
    state_dir = dir;
  }
  return fl_fmt(out, n, "%s/%s", state_dir, "fleetd.sock");
}

int fl_paths_mkdir_p(const char *path, unsigned mode) {
  char buf[4096];
  size_t len = strlen(path);
  if (len == 0 || len >= sizeof buf)
    return -ENAMETOOLONG;
  memcpy(buf, path, len + 1);
  for (char *p = buf + 1; *p; p++) {
    if (*p != '/')
      continue;
    *p = '\0';
    if (mkdir(buf, mode) != 0 && errno != EEXIST)
      return -errno;
    *p = '/';
  }
  if (mkdir(buf, mode) != 0 && errno != EEXIST)
    return -errno;
  return 0;
}
