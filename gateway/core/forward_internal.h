/* forward_internal.h — what the forward path's two files share, and
 * nothing else includes.
 *
 * The forward path (forward.h) is split by concept:
 *   forward.c       the receiving side: delivery modes, the per-entity
 *                   queue that types one brief at a time, the other door,
 *                   receipts handed on, recovery after a restart;
 *   forward_send.c  the sending side: fl_forward_send, its bound and
 *                   timeout, and the receipts that end its wait.
 *
 * Loop thread only. */
#ifndef FL_FORWARD_INTERNAL_H
#define FL_FORWARD_INTERNAL_H

#include "gateway/core/wait.h"

typedef struct fl_entity fl_entity;

/* The waiting call of local sender for brief msg_id (a forward wait, or
 * one still waiting for the broker's confirm), or NULL. The receiving side
 * writes the typing note into it before a reply can overtake the receipt. */
fl_wait *fl_fwd_waiter(fl_entity *sender, const char *msg_id);

#endif
