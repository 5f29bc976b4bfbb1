/* config.h — fleetd's configuration: defaults, a JSON file, environment,
 * flags, in rising order of precedence.
 *
 * The file is one JSON object (see docs/user-guide.md for every key). Every
 * error names the file, the key and the fix, and is returned in err. */
#ifndef FL_CONFIG_H
#define FL_CONFIG_H

#include <jansson.h>
#include <stddef.h>

#include "gateway/config/gw_config.h"

typedef struct fl_config {
  fl_gw_config gw;
  char config_file[1024]; /* the file read, or "" */
  char log_level[16];
} fl_config;

/* Fills cfg with the built-in defaults: log level info, nudges on, the
 * machine's short host name as host id, everything else empty or 0. */
void fl_config_defaults(fl_config *cfg);

/* Applies a config file's JSON text (len bytes, borrowed, need not be
 * NUL-terminated) onto cfg, as fl_config_load applies the file it reads;
 * file is the name used in errors. Reads no file and no environment.
 * Returns 0, or FL_ECONFIG with err naming file, the key and the fix (cfg
 * may then be partly changed). Every string it sets is NUL-terminated
 * within its buffer. Does not block. */
int fl_config_parse(fl_config *cfg, const char *text, size_t len, const char *file, char *err,
                    size_t errlen);

/* Fills cfg from defaults, the file (--config / FLEET_CONFIG, else
 * $XDG_CONFIG_HOME/fleet/fleetd.json or ~/.config/fleet/fleetd.json when it
 * exists), the environment and argv. Returns 0; 1 when argv asked for
 * --help or --version (already printed); FL_ECONFIG with err filled (a file
 * that cannot be read or parsed, a bad key or value, a value too long for
 * its buffer); 2 for a usage error or a host id that breaks the name rule
 * (err filled, naming where the host id came from, ending in a newline).
 * argv is borrowed; reads the FLEET_* variables, XDG_CONFIG_HOME, HOME and
 * XDG_RUNTIME_DIR; writes nothing to disk. */
int fl_config_load(fl_config *cfg, int argc, char **argv, char *err, size_t errlen);

/* What this host announces of its spawn profiles (presence beats,
 * fleet_list): a new array of {name, backend, role, groups}, in name order,
 * never the command, cwd or env. NULL on out-of-memory. Pure. */
json_t *fl_config_profiles_json(const fl_gw_config *gw);

#endif
