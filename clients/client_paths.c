/* client_paths.c — the fleet programs next to this one, and how to start
 * fleetd (see client_paths.h).
 *
 * The socket flag is added only when the socket differs from the default
 * one (common/paths.h), which fleetd started from the same shell works out
 * the same way: a hint the user can paste as it is. Paths with characters a
 * shell would split or expand are single-quoted. */
#include "clients/client_paths.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"
#include "common/limits.h"
#include "common/paths.h"

/* The running binary's directory into out; 0 or FL_ENOTFOUND. */
static int fl_self_dir(char *out, size_t n) {
  char self[PATH_MAX];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0)
    return FL_ENOTFOUND;
  self[len] = '\0';
  char *slash = strrchr(self, '/');
  if (!slash || (size_t)(slash - self) >= n)
    return FL_ENOTFOUND;
  *slash = '\0';
  memcpy(out, self, (size_t)(slash - self) + 1);
  return 0;
}

int fl_client_sibling(const char *name, char *out, size_t n) {
  char dir[PATH_MAX];
  if (n)
    out[0] = '\0';
  if (fl_self_dir(dir, sizeof dir) != 0)
    return FL_ENOTFOUND;
  int w = snprintf(out, n, "%s/%s", dir, name);
  if (w > 0 && (size_t)w < n && access(out, X_OK) == 0)
    return 0;
  if (n)
    out[0] = '\0';
  return FL_ENOTFOUND;
}

/* See client_paths.h. */
void fl_client_shell_word(const char *s, char *out, size_t n) {
  if (s[0] &&
      strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/._-+:@,=") ==
          strlen(s)) {
    snprintf(out, n, "%s", s);
    return;
  }
  size_t o = 0;
  if (o + 1 < n)
    out[o++] = '\'';
  for (; *s && o + 5 < n; s++) {
    if (*s == '\'') {
      memcpy(out + o, "'\\''", 4);
      o += 4;
    } else {
      out[o++] = *s;
    }
  }
  if (o + 1 < n)
    out[o++] = '\'';
  out[o < n ? o : n - 1] = '\0';
}

void fl_client_start_cmd(const char *socket_path, char *out, size_t n) {
  char fleetd[PATH_MAX], fleetd_w[2 * PATH_MAX];
  if (fl_client_sibling("fleetd", fleetd, sizeof fleetd) != 0)
    snprintf(fleetd, sizeof fleetd, "fleetd");
  fl_client_shell_word(fleetd, fleetd_w, sizeof fleetd_w);

  /* An explicit socket only when fleetd would not pick it by itself. */
  char def[FL_MAX_PATH], abs[PATH_MAX + FL_MAX_PATH], sock_w[2 * (PATH_MAX + FL_MAX_PATH)];
  sock_w[0] = '\0';
  if (socket_path && *socket_path &&
      (fl_paths_socket(NULL, def, sizeof def) != 0 || strcmp(def, socket_path) != 0)) {
    char cwd[PATH_MAX];
    /* The setup script runs from the checkout: a relative path must not
     * move with it. */
    if (socket_path[0] != '/' && getcwd(cwd, sizeof cwd))
      snprintf(abs, sizeof abs, "%s/%s", cwd, socket_path);
    else
      snprintf(abs, sizeof abs, "%s", socket_path);
    fl_client_shell_word(abs, sock_w, sizeof sock_w);
  }

  int w = snprintf(out, n, "%s%s%s &", fleetd_w, sock_w[0] ? " --socket " : "", sock_w);
  if (w < 0 || (size_t)w >= n)
    return;

  /* build/fleetd in a checkout: scripts/setup.sh builds and starts it. */
  char dir[PATH_MAX], setup[PATH_MAX + 32], real[PATH_MAX], setup_w[2 * PATH_MAX];
  if (fl_self_dir(dir, sizeof dir) != 0)
    return;
  snprintf(setup, sizeof setup, "%s/../scripts/setup.sh", dir);
  if (!realpath(setup, real) || access(real, R_OK) != 0)
    return;
  fl_client_shell_word(real, setup_w, sizeof setup_w);
  snprintf(out + w, n - (size_t)w, "  (or %s%s%sbash %s)", sock_w[0] ? "FLEET_SOCKET=" : "", sock_w,
           sock_w[0] ? " " : "", setup_w);
}

/* See client_paths.h. */
int fl_client_on_path(const char *name, char *out, size_t n) {
  const char *path = getenv("PATH");
  while (path && *path) {
    size_t dl = strcspn(path, ":");
    if (dl > 0 && path[0] == '/') {
      int w = snprintf(out, n, "%.*s/%s", (int)dl, path, name);
      if (w > 0 && (size_t)w < n && access(out, X_OK) == 0)
        return 0;
    }
    path += dl;
    if (*path == ':')
      path++;
  }
  out[0] = '\0';
  return -1;
}
