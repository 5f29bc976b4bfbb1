/* dlq.h — fleetctl dlq on the loop: what fleet.dlq holds, why each message
 * is there, replaying one that would now pass verification, purging.
 *
 * The broker thread reads the queue (broker_dlq.c) without losing anything;
 * this file turns what it read into the answers, checks a replay against
 * the pins (the same origin check inbound.c runs) before the thread
 * republishes it, and remembers the reason this gateway gave each message it
 * dead-lettered, which RabbitMQ's x-death cannot carry. */
#ifndef FL_DLQ_H
#define FL_DLQ_H

#include <jansson.h>
#include <stddef.h>

typedef struct fl_gw fl_gw;
struct fl_broker_dead;

/* This gateway dead-lettered msg_id because why (inbound.c). */
void fl_dlq_note(fl_gw *gw, const char *msg_id, const char *why);
/* A fleet.dlq command of req finished (the fabric's on_dlq). */
void fl_dlq_done(fl_gw *gw, void *req, int status, const char *why,
                 const struct fl_broker_dead *dead, size_t ndead, size_t affected);
void fl_dlq_free(fl_gw *gw);

/* The dashboard's view: fl_dlq_refresh asks the broker for a new list in
 * the background (one at a time); fl_dlq_snapshot is the last one as
 * {available, messages, at} or {available: false, why} (new reference). */
void fl_dlq_refresh(fl_gw *gw);
json_t *fl_dlq_snapshot(fl_gw *gw);

#endif
