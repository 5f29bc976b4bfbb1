/* coord.c — lead-to-lead mailboxes on the coordinator vhost. */
#include "gateway/gw_internal.h"

#include "common/error.h"

int fl_gw_coord_send(fl_gw *gw, fl_client *c, const char *coord_id, const char *content,
                     double wait_s, fl_gw_cb cb, void *ctx, json_t **result, fl_wait **wait,
                     char *err, size_t errlen) {
  *result = NULL;
  *wait = NULL;
  fl_errf(err, errlen, "no coordinator is configured (config \"coordinator\": {uri, fleet})");
  return FL_EBROKER;
}
