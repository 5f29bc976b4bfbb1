/* hook.h — what an agent's hooks report (fleet-hook, fleet/hook): the
 * worker's activity, busy, idle or blocked with the reason.
 *
 * fl_gw_hook (gw.h) takes one report for a local entity by gid and updates
 * its activity by the rules in hook.c; fleet_list shows it as
 *
 *   activity: {state: "busy" | "idle" | "blocked", reason?, since, source: "hooks"}
 *
 * for an entity whose hooks have reported (the module row's entity_write).
 * An entity with no reports has no activity: fleet reads it off its screen
 * as before. Briefs go by the hooks' state (hook_deliver.h: fl_hooks_state);
 * where the screen shows the idle prompt while the hooks say busy or
 * blocked and no Stop follows (hooks gone silent), the disagreement is
 * logged and counted (fleetctl status: hooks.disagreements; the row's
 * screen_seen), and the screen decides until the hooks report again.
 *
 * Internal to gateway/. Loop thread only. */
#ifndef FL_HOOK_H
#define FL_HOOK_H

#include <jansson.h>

#include "common/json_writer.h"
#include "gateway/gw.h"

typedef struct fl_entity fl_entity;

/* A lead answered gid's permission request (approve.c): its dialog closes
 * and its turn goes on, so a blocked gid is busy again (until its Stop). */
void fl_hooks_unblocked(fl_gw *gw, const char *gid);

/* The module row's members (gateway.c). */
json_t *fl_hooks_describe(fl_gw *gw);
void fl_hooks_entity_write(fl_gw *gw, const fl_entity *e, fl_jw *w);
void fl_hooks_screen_seen(fl_gw *gw, const fl_entity *e, int idle);
void fl_hooks_free(fl_gw *gw);

/* gid's activity by its hooks ("busy", "idle" or "blocked"), or NULL when
 * its hooks never reported or have gone silent (disagreed with its
 * screen): then the screen decides. */
const char *fl_hooks_state(fl_gw *gw, const char *gid);

#endif
