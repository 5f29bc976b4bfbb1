/* config_authority.c — the "authority" key of fleetd.json: who, beyond the
 * defaults, may stop, spawn or approve for agents on this host. Each list holds host ids
 * (any session of that host), "name@host" (one session) or "role:<role>"
 * (a local session that declares the role; a remote one never matches, as
 * its role is only its host's say-so). What the entries grant is decided in
 * spawn.c; here they are only checked for form. */
#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/limits.h"
#include "common/names.h"
#include "gateway/config/config_internal.h"

static const char *const fl_authority_keys[] = {"stop", "spawn", "approve", NULL};

/* One entry's form: 1 if it is "<host>", "<name>@<host>" or "role:<role>". */
static int fl_authority_entry_ok(const char *s) {
  if (strncmp(s, "role:", 5) == 0)
    return fl_name_valid(s + 5, FL_MAX_ROLE);
  const char *at = strchr(s, '@');
  if (!at)
    return fl_name_valid(s, FL_MAX_NAME);
  size_t n = (size_t)(at - s);
  char name[FL_MAX_NAME + 1];
  if (n == 0 || n > FL_MAX_NAME)
    return 0;
  memcpy(name, s, n);
  name[n] = '\0';
  return fl_name_valid(name, FL_MAX_NAME) && fl_name_valid(at + 1, FL_MAX_NAME);
}

static int fl_authority_list(json_t *obj, const char *key, fl_authority *out, const char *file,
                             char *err, size_t errlen) {
  json_t *v = json_object_get(obj, key);
  if (!v)
    return 0;
  if (!json_is_array(v)) {
    fl_errf(err, errlen,
            "%s: key \"authority.%s\" must be a list like [\"hostB\", \"alice@hostA\", "
            "\"role:lead\"], not %s",
            file, key, fl_config_json_kind(v));
    return FL_ECONFIG;
  }
  if (json_array_size(v) > FL_MAX_AUTHORITY) {
    fl_errf(err, errlen, "%s: key \"authority.%s\" has %zu entries; at most %d", file, key,
            json_array_size(v), FL_MAX_AUTHORITY);
    return FL_ECONFIG;
  }
  memset(out, 0, sizeof *out);
  size_t i;
  json_t *e;
  json_array_foreach(v, i, e) {
    const char *s = json_string_value(e);
    if (!s || strlen(s) > FL_MAX_AUTHORITY_ENTRY || !fl_authority_entry_ok(s)) {
      fl_errf(err, errlen,
              "%s: key \"authority.%s\" entry %zu is not a host id, name@host or role:<role> "
              "(each part %s)",
              file, key, i, fl_name_rule);
      return FL_ECONFIG;
    }
    fl_copy(out->v[out->n++], sizeof out->v[0], s);
  }
  out->set = 1;
  return 0;
}

int fl_config_apply_authority(fl_config *cfg, json_t *authority, const char *file, char *err,
                              size_t errlen) {
  if (!json_is_object(authority)) {
    fl_errf(err, errlen,
            "%s: key \"authority\" must be an object like {\"stop\": [\"role:lead\"]}, not %s",
            file, fl_config_json_kind(authority));
    return FL_ECONFIG;
  }
  if (fl_config_known_keys(authority, "authority", fl_authority_keys, file, err, errlen) ||
      fl_authority_list(authority, "stop", &cfg->gw.auth_stop, file, err, errlen) ||
      fl_authority_list(authority, "spawn", &cfg->gw.auth_spawn, file, err, errlen) ||
      fl_authority_list(authority, "approve", &cfg->gw.auth_approve, file, err, errlen))
    return FL_ECONFIG;
  return 0;
}
