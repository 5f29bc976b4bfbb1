/* config_rooms.c — the "rooms" and "claims" keys of fleetd.json: room
 * federation (what is served, how often peers are pulled, the cap of each
 * room) and the claims' settle window. */
#include <string.h>

#include "common/error.h"
#include "common/limits.h"
#include "gateway/config/config_internal.h"

static const char *const fl_rooms_keys[] = {"listen", "syncIntervalS", "maxMessages", NULL};
static const char *const fl_claims_keys[] = {"settleMs", NULL};

int fl_config_apply_rooms(fl_config *cfg, json_t *rooms, const char *file, char *err,
                          size_t errlen) {
  fl_gw_config *gw = &cfg->gw;
  if (json_is_null(rooms)) {
    gw->rooms_on = 0;
    return 0;
  }
  if (!json_is_object(rooms)) {
    fl_errf(err, errlen,
            "%s: key \"rooms\" must be an object like {\"listen\": \"127.0.0.1:7777\"}, not %s",
            file, fl_config_json_kind(rooms));
    return FL_ECONFIG;
  }
  if (fl_config_known_keys(rooms, "rooms", fl_rooms_keys, file, err, errlen) ||
      fl_config_file_str(rooms, "rooms", "listen", gw->rooms_listen, sizeof gw->rooms_listen, file,
                         err, errlen) ||
      fl_config_file_ms(rooms, "rooms", "syncIntervalS", &gw->rooms_sync_interval_s, 86400, file,
                        err, errlen) ||
      fl_config_file_ms(rooms, "rooms", "maxMessages", &gw->rooms_max_messages,
                        FL_ROOM_MAX_MAX_MESSAGES, file, err, errlen))
    return FL_ECONFIG;
  if (gw->rooms_sync_interval_s == 0 || gw->rooms_max_messages == 0) {
    fl_errf(err, errlen,
            "%s: keys \"rooms.syncIntervalS\" and \"rooms.maxMessages\" must be above 0", file);
    return FL_ECONFIG;
  }
  gw->rooms_on = 1;
  return 0;
}

int fl_config_apply_claims(fl_config *cfg, json_t *claims, const char *file, char *err,
                           size_t errlen) {
  if (!json_is_object(claims)) {
    fl_errf(err, errlen, "%s: key \"claims\" must be an object like {\"settleMs\": 500}, not %s",
            file, fl_config_json_kind(claims));
    return FL_ECONFIG;
  }
  if (fl_config_known_keys(claims, "claims", fl_claims_keys, file, err, errlen) ||
      fl_config_file_ms(claims, "claims", "settleMs", &cfg->gw.claims_settle_ms, 3600000, file, err,
                        errlen))
    return FL_ECONFIG;
  return 0;
}
