/* store_gids.h — which host owns each gid, for good.
 *
 * A gid belongs to the host that first announced it: this host for its
 * own entities (kept as host ""), or the remote host whose verified beat
 * first named it. The row is written by the store itself when an entity or
 * a remote entity is first recorded (a trigger), so no caller can forget
 * it, and it outlives the entity: a host that goes quiet, restarts or is
 * unpinned keeps its gids. Only fl_store_gid_release (an operator's
 * `fleetctl gid release`) lets another host take a gid.
 *
 * Same rules as store.h: synchronous, loop thread. */
#ifndef FL_STORE_GIDS_H
#define FL_STORE_GIDS_H

#include <stddef.h>

#include "gateway/store/store.h"

/* The owner of gid into host (hostlen bytes; "" = this host): 0, or
 * FL_ENOTFOUND when no host owns it yet, FL_EINVAL or FL_ESTORE. */
int fl_store_gid_owner(fl_store *s, const char *gid, char *host, size_t hostlen);

/* Forgets gid's owner, so the next host to announce it owns it: 0, or
 * FL_ENOTFOUND when no host owned it, FL_EINVAL or FL_ESTORE. */
int fl_store_gid_release(fl_store *s, const char *gid);

#endif
