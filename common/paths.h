/* paths.h — where fleet keeps its state and its socket.
 *
 * One place resolves the defaults so fleetd, fleet-mcp and fleetctl agree:
 *   state dir: $FLEET_STATE_DIR, else $XDG_STATE_HOME/fleet, else
 *              $HOME/.local/state/fleet
 *   socket:    $FLEET_SOCKET, else $XDG_RUNTIME_DIR/fleet/fleetd.sock, else
 *              <state dir>/fleetd.sock
 * Flags (when a program has them) beat these; the caller applies them. */
#ifndef FL_PATHS_H
#define FL_PATHS_H

#include <stddef.h>

/* Each writes a NUL-terminated path into out (size n). state_dir may be NULL
 * (then the default state dir is used). Returns 0, or -ENAMETOOLONG, or
 * FL_ECONFIG when no HOME/XDG variable gives a place. */
int fl_paths_state_dir(char *out, size_t n);
int fl_paths_socket(const char *state_dir, char *out, size_t n);

/* mkdir -p with mode for each created component. Returns 0 or -errno. */
int fl_paths_mkdir_p(const char *path, unsigned mode);

#endif
