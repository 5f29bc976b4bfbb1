/* config_http.c — the "http" key of fleetd.json: where the dashboard, the
 * JSON API and /metrics are served, and whether a request needs the token. */
#include <string.h>

#include "common/error.h"
#include "gateway/config/config_internal.h"

static const char *const fl_http_keys[] = {"listen", "requireToken", NULL};

int fl_config_apply_http(fl_config *cfg, json_t *http, const char *file, char *err, size_t errlen) {
  fl_gw_config *gw = &cfg->gw;
  if (json_is_null(http)) {
    gw->http_on = 0;
    return 0;
  }
  if (!json_is_object(http)) {
    fl_errf(err, errlen,
            "%s: key \"http\" must be an object like {\"listen\": \"127.0.0.1:0\"}, not %s", file,
            fl_config_json_kind(http));
    return FL_ECONFIG;
  }
  snprintf(gw->http_listen, sizeof gw->http_listen, "127.0.0.1:0");
  if (fl_config_known_keys(http, "http", fl_http_keys, file, err, errlen) ||
      fl_config_file_str(http, "http", "listen", gw->http_listen, sizeof gw->http_listen, file, err,
                         errlen))
    return FL_ECONFIG;
  if (!gw->http_listen[0]) {
    fl_errf(err, errlen,
            "%s: key \"http.listen\" must be HOST:PORT (e.g. \"127.0.0.1:0\"), not empty; "
            "remove \"http\" to serve nothing",
            file);
    return FL_ECONFIG;
  }
  json_t *req = json_object_get(http, "requireToken");
  gw->http_require_token = -1;
  if (req) {
    if (!json_is_boolean(req)) {
      fl_errf(err, errlen, "%s: key \"http.requireToken\" must be true or false, not %s", file,
              fl_config_json_kind(req));
      return FL_ECONFIG;
    }
    gw->http_require_token = json_is_true(req);
  }
  gw->http_on = 1;
  return 0;
}
