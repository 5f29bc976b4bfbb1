/* client_paths.h — where the other fleet programs are, seen from a client
 * (fleetctl, fleet-mcp), and the command that starts fleetd for a socket.
 *
 * A new user's build is not on PATH, so a hint that says "fleetd" fails;
 * these name the binaries next to the running one by absolute path. Pure
 * lookups: a readlink and a few access(2) calls, nothing else. */
#ifndef FL_CLIENT_PATHS_H
#define FL_CLIENT_PATHS_H

#include <limits.h>
#include <stddef.h>

/* Room for fl_client_start_cmd's command: two paths (fleetd and the setup
 * script) and the socket twice, each possibly quoted. */
#define FL_CLIENT_START_CMD_MAX (6 * PATH_MAX)

/* The absolute path of the program `name` in the running binary's
 * directory (/proc/self/exe), into out (n bytes). Returns 0 when that file
 * exists and is executable, else FL_ENOTFOUND (out is then ""). */
int fl_client_sibling(const char *name, char *out, size_t n);

/* s as one shell word, into out (n bytes): as it is when it is plain, else
 * in single quotes. */
void fl_client_shell_word(const char *s, char *out, size_t n);

/* The first executable `name` in an absolute directory of PATH, into out
 * (n bytes). Returns 0, or -1 (out is then ""). */
int fl_client_on_path(const char *name, char *out, size_t n);

/* A shell command that starts fleetd listening on socket_path (the socket
 * the client tried; NULL for the default), into out (n bytes): the fleetd
 * next to this binary by absolute path (else plain "fleetd"), with
 * "--socket PATH" when socket_path is not the default socket, then " &";
 * and, when this binary sits in a checkout, the setup script as another way.
 * e.g. "/src/fleet/build/fleetd --socket /tmp/x.sock &  (or
 * FLEET_SOCKET=/tmp/x.sock bash /src/fleet/scripts/setup.sh)". Never empty. */
void fl_client_start_cmd(const char *socket_path, char *out, size_t n);

#endif
