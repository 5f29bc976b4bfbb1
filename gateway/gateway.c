/* gateway.c — the composition root (see gateway.h): the module table.
 *
 * Each row says what the core runs for one feature (core/module.h). The
 * rows start, stop and are freed in this order, which is the order
 * fl_gw_shutdown has always stopped them in: spawns end first (a spawn for
 * another host still answers through the broker link), the broker link
 * stops after the rooms and the dashboard, the coordinator link last. The
 * frees are each module's own memory and depend on no other. */
#include "gateway/gateway.h"

#include "gateway/core/module.h"
#include "gateway/core/remote.h"
#include "gateway/dash/dashboard.h"
#include "gateway/fabric/coord.h"
#include "gateway/fabric/dlq.h"
#include "gateway/fabric/fabric.h"
#include "gateway/rooms/claims.h"
#include "gateway/rooms/room.h"
#include "gateway/verbs/approve.h"
#include "gateway/verbs/ask.h"
#include "gateway/verbs/hook.h"
#include "gateway/verbs/hook_deliver.h"
#include "gateway/verbs/spawn.h"

/* The cross-host backend: the AMQP fabric, when a broker URI is set. */
static int fl_broker_start(fl_gw *gw, char *err, size_t errlen) {
  return fl_remote_start(gw, &fl_fabric_type, err, errlen);
}

static const fl_module fl_spawn_row = {
    .name = "spawn", .stop = fl_spawn_shutdown, .entity_attached = fl_spawn_attached};

static const fl_module fl_rooms_row = {.name = "rooms",
                                       .start = fl_rooms_start,
                                       .stop = fl_rooms_stop,
                                       .free = fl_rooms_free,
                                       .http_stats = fl_rooms_http_stats,
                                       .peer_json = fl_rooms_peer_json};

static const fl_module fl_claims_row = {.name = "claims", .start = fl_claims_start};

static const fl_module fl_dash_row = {.name = "http",
                                      .start = fl_dash_start,
                                      .stop = fl_dash_stop,
                                      .free = fl_dash_free,
                                      .describe = fl_dash_describe,
                                      .http_stats = fl_dash_http_stats,
                                      .msg_routed = fl_dash_note_msg};

static const fl_module fl_broker_row = {
    .name = "broker", .start = fl_broker_start, .stop = fl_remote_stop, .free = fl_remote_free};

static const fl_module fl_coord_row = {.name = "coordinator",
                                       .start = fl_coord_start,
                                       .stop = fl_coord_stop,
                                       .free = fl_coord_free,
                                       .describe = fl_coord_describe,
                                       .list_id = fl_coord_list_id,
                                       .list_write = fl_coord_list_write};

static const fl_module fl_dlq_row = {.name = "dlq", .free = fl_dlq_free};

static const fl_module fl_ask_row = {.name = "ask", .free = fl_ask_free};

static const fl_module fl_hooks_row = {.name = "hooks",
                                       .describe = fl_hooks_describe,
                                       .free = fl_hooks_free,
                                       .entity_write = fl_hooks_entity_write,
                                       .screen_seen = fl_hooks_screen_seen};

static const fl_module fl_approvals_row = {
    .name = "approvals", .describe = fl_approve_describe, .free = fl_approve_free};

static const fl_module fl_hook_doors_row = {.name = "hookDelivery",
                                            .describe = fl_hook_doors_describe,
                                            .free = fl_hook_doors_free,
                                            .offer = fl_hook_doors_offer};

static const fl_module *const fl_rows[] = {
    &fl_spawn_row,  &fl_rooms_row,     &fl_claims_row,     &fl_dash_row,
    &fl_broker_row, &fl_coord_row,     &fl_dlq_row,        &fl_ask_row,
    &fl_hooks_row,  &fl_approvals_row, &fl_hook_doors_row,
};

int fl_gw_new(uv_loop_t *loop, const fl_gw_config *cfg, fl_gw **out, char *err, size_t errlen) {
  return fl_gw_open(loop, cfg, fl_rows, sizeof fl_rows / sizeof fl_rows[0], out, err, errlen);
}
