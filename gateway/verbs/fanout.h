/* fanout.h — parallel briefs: one brief to several recipients, their
 * replies gathered into one result.
 *
 * fl_gw_send_many (gw.h) sends the same content to each recipient as a
 * separate SEND, all sharing one traceId, and parks one waiter
 * (FL_WAIT_FANOUT) that collects the replies in arrival order until every
 * recipient answered or the wait ran out. Replies that come later are held
 * for a poll like any other.
 *
 * Internal to gateway/. Loop thread only. */
#ifndef FL_FANOUT_H
#define FL_FANOUT_H

#include "gateway/gw.h"
#include "gateway/store/store.h"

typedef struct fl_entity fl_entity;

/* The just-accepted m for local to: if it is a reply a waiting parallel
 * brief of to expects, takes it out of the store into that brief's result
 * and returns 1; else 0. */
int fl_fanout_wake(fl_gw *gw, fl_entity *to, const fl_msg *m);
/* 1 when fl_fanout_wake would take m for to (a pure check). */
int fl_fanout_wants(const fl_entity *to, const fl_msg *m);

#endif
