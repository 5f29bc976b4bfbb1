/* coord.h — lead-to-lead mailboxes: the core's view of the coordinator link.
 *
 * With a "coordinator" block configured, each local lead (role "lead") has
 * a coordId (<name>@<fleet>, or FLEET_COORD_ID) and a durable mailbox on
 * the coordinator vhost, which the leads of several fleets share. coord.c
 * owns a second broker link to that vhost: it beats every online lead's
 * coordId there, lists the leads it hears, publishes a lead's COORD
 * messages to another lead's mailbox, and holds what arrives in its own
 * lead's mailbox like any other message (store, wake, nudge). The fleet's
 * own broker and traffic do not depend on it.
 *
 * Internal to gateway/: the core calls these, never the link itself. Loop
 * thread only; nothing blocks. */
#ifndef FL_COORD_H
#define FL_COORD_H

#include <jansson.h>
#include <stddef.h>

#include "common/json_writer.h"
#include "common/limits.h"
#include "gateway/gw.h"

typedef struct fl_entity fl_entity;

/* Starts the coordinator link when one is configured (else does nothing).
 * 0, or a negative code with err saying what to fix. */
int fl_coord_start(fl_gw *gw, char *err, size_t errlen);
/* Shutdown: closes the link (no callback after the loop ran once more). */
void fl_coord_stop(fl_gw *gw);
/* Frees it (after stop and a loop run). NULL-safe. */
void fl_coord_free(fl_gw *gw);
/* What a fleet_list result (list.c) shows of the coordinator. Nothing
 * without one. fl_coord_list_id: 1 with e's coordId in id when e is a local
 * lead, else 0. fl_coord_list_write: the result's "coordinators" member
 * (its key, then the leads heard on the coordinator) into w. */
int fl_coord_list_id(fl_gw *gw, const fl_entity *e, char id[FL_MAX_COORD_ID + 1]);
void fl_coord_list_write(fl_gw *gw, fl_jw *w);
/* The link's state for fleetctl status: a new object, or NULL without one. */
json_t *fl_coord_describe(fl_gw *gw);

#endif
