/* config_hooks.c — the "hooks" key of fleetd.json: how fleet answers an
 * agent's hooks (clients/fleet-hook.c). approveTimeoutMs is how long a
 * worker's permission request waits for a lead's fleet_approve before the
 * agent's own dialog is left to its pane; it cannot pass what fleet-hook
 * itself waits (FL_HOOK_APPROVE_WAIT_S), or fleetd's answer would come to
 * nobody. */
#include "common/error.h"
#include "common/limits.h"
#include "gateway/config/config_internal.h"

static const char *const fl_hooks_keys[] = {"approveTimeoutMs", NULL};

int fl_config_apply_hooks(fl_config *cfg, json_t *hooks, const char *file, char *err,
                          size_t errlen) {
  if (!json_is_object(hooks)) {
    fl_errf(err, errlen,
            "%s: key \"hooks\" must be an object like {\"approveTimeoutMs\": 60000}, not %s", file,
            fl_config_json_kind(hooks));
    return FL_ECONFIG;
  }
  if (fl_config_known_keys(hooks, "hooks", fl_hooks_keys, file, err, errlen) ||
      fl_config_file_ms(hooks, "hooks", "approveTimeoutMs", &cfg->gw.hooks_approve_timeout_ms,
                        FL_HOOK_APPROVE_WAIT_S * 1000L, file, err, errlen))
    return FL_ECONFIG;
  return 0;
}
