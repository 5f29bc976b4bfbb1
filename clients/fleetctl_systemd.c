/* fleetctl_systemd.c — `fleetctl systemd` (see fleetctl_systemd.h).
 *
 * The unit text is clients/fleetd.service, embedded at build time, so the
 * file in the tree and what fleetctl prints cannot drift apart. Only its
 * ExecStart line changes: the unit names fleetd at %h/.local/bin, and a
 * build that was not installed there is named where it is. The unit goes to
 * stdout (to redirect into the unit file), the steps to stderr. */
#include "clients/fleetctl_systemd.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "clients/client_paths.h"
#include "clients/fleetctl_report.h"

extern const char fl_unit_fleetd_service[];

int fl_ctl_systemd(void) {
  char fleetd[PATH_MAX];
  int found = fl_client_sibling("fleetd", fleetd, sizeof fleetd) == 0;
  const char *p = fl_unit_fleetd_service;
  while (*p) {
    size_t n = strcspn(p, "\n");
    if (found && strncmp(p, "ExecStart=", 10) == 0)
      printf("ExecStart=%s\n", fleetd);
    else
      printf("%.*s\n", (int)n, p);
    p += n;
    if (*p == '\n')
      p++;
  }
  fputs("To run fleetd as a systemd user service:\n"
        "  mkdir -p ~/.config/systemd/user\n"
        "  fleetctl systemd > ~/.config/systemd/user/fleetd.service\n"
        "  systemctl --user daemon-reload\n"
        "  systemctl --user enable --now fleetd\n"
        "  loginctl enable-linger \"$USER\"   # keep it running while you are logged out\n",
        stderr);
  if (!found)
    fputs("fleetd is not next to this fleetctl: install it as ~/.local/bin/fleetd, where the "
          "unit looks for it\n",
          stderr);
  return FL_EXIT_OK;
}
