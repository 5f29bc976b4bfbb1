/* config.h — fleetd's configuration: defaults, a JSON file, environment,
 * flags, in rising order of precedence.
 *
 * The file is one JSON object (see docs/user-guide.md for every key). Every
 * error names the file, the key and the fix, and is returned in err. */
#ifndef FL_CONFIG_H
#define FL_CONFIG_H

#include <stddef.h>

#include "gateway/gw.h"

typedef struct fl_config {
  fl_gw_config gw;
  char config_file[1024]; /* the file read, or "" */
  char log_level[16];
} fl_config;

/* Fills cfg from defaults, the file (--config / FLEET_CONFIG, else
 * $XDG_CONFIG_HOME/fleet/fleetd.json or ~/.config/fleet/fleetd.json when it
 * exists), the environment and argv. Returns 0; 1 when argv asked for
 * --help or --version (already printed); FL_ECONFIG with err filled; 2 for a
 * usage error or a host id that breaks the name rule (err filled, ending in a
 * newline). Writes nothing to disk. */
int fl_config_load(fl_config *cfg, int argc, char **argv, char *err, size_t errlen);

#endif
