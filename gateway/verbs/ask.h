/* ask.h — asks: a question put mid-turn, answered on its turn, live only.
 *
 * fl_gw_ask (gw.h) sends an ASK with a new turnId and an expiresAt. Where
 * the asked entity lives, the ASK surfaces at once on an open waiting call
 * of its session (a waiting send to the asker reads "asked", a waiting poll
 * returns it as a message of kind ASK); with no such call, NO_WAITER goes
 * straight back and the ask reads "no_waiter". fl_gw_answer answers by
 * turnId: the answer reaches the asker only while its turn still waits,
 * else it is dropped and the answerer reads "too_late". Nothing of an ask
 * is held in the store: a restart forgets every turn.
 *
 * Across hosts the ASK, ANSWER and their notices (NO_WAITER, TOO_LATE, and
 * INJECTED with the turnId for an answer that reached its turn) go through
 * the cross-host backend (remote.h); inbound.c hands what arrives to
 * fl_ask_receive.
 *
 * Internal to gateway/. Loop thread only. */
#ifndef FL_ASK_H
#define FL_ASK_H

#include <jansson.h>

#include "gateway/gw.h"
#include "gateway/store/store.h"

typedef struct fl_entity fl_entity;

/* 1 when kind belongs to a turn (ASK, ANSWER, NO_WAITER, TOO_LATE) or is
 * an INJECTED that names a turn (turn_id not ""). */
int fl_ask_kind(const char *kind, const char *turn_id);
/* A turn message from another host, past the receive checks, for local to:
 * does what its kind asks. m is borrowed. The caller acks the delivery: a
 * turn is never held. */
void fl_ask_receive(fl_gw *gw, fl_entity *to, const fl_msg *m);
/* Forgets every turn (gateway freed). */
void fl_ask_free(fl_gw *gw);

#endif
