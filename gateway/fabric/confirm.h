/* confirm.h — a call waiting for the broker to confirm its publish.
 *
 * A send to another host (fabric.c) or to another fleet's lead (coord.c)
 * parks its caller on a CONFIRM waiter until the broker confirms: then it
 * completes with the result prepared for that moment, or, when it is to
 * wait for a reply, turns into a SEND waiter (fl_router_expect_reply). A
 * refused publish completes it with an error naming where it was going.
 * The publish carries an fl_confirm as its request; the waiter and the
 * request let go of each other whichever ends first.
 *
 * Internal to gateway/. Loop thread only. */
#ifndef FL_CONFIRM_H
#define FL_CONFIRM_H

#include <jansson.h>

#include "gateway/gw.h"
#include "gateway/store/store.h"

typedef struct fl_confirm fl_confirm;

/* Parks c on a CONFIRM waiter for m, sent to peer_gid (where: its name for
 * error messages, "" = from the roster). On success *w is the waiter and
 * *req the publish's request; on failure on_confirm is dropped, nothing
 * runs, and err says why. */
int fl_confirm_new(fl_gw *gw, fl_client *c, const fl_msg *m, const char *peer_gid,
                   const char *where, double then_wait_s, json_t *on_confirm, fl_gw_cb cb,
                   void *ctx, fl_wait **w, fl_confirm **req, char *err, size_t errlen);
/* A publish nobody waits on whose outcome cb still wants (status 0, or the
 * code and the broker's words): the request to publish it with, or NULL
 * when out of memory. cb runs once, from fl_confirm_done. */
typedef void (*fl_confirm_note_cb)(void *ctx, int status, const char *why);
fl_confirm *fl_confirm_note(fl_confirm_note_cb cb, void *ctx);
/* A publish in several copies (a broadcast sealed once per host), all
 * carrying req: count each copy handed to the broker with fl_confirm_copy;
 * the call completes once every copy is settled, with the first failure if
 * there was one. A copy that could not even be queued while others are on
 * their way: fl_confirm_fail_later, and the call ends with that failure. */
void fl_confirm_copy(fl_confirm *req);
void fl_confirm_fail_later(fl_confirm *req, int status, const char *why);
/* When the publish carrying req was handed to the link (ms since epoch),
 * for the publish-to-confirm latency. */
long long fl_confirm_sent_ms(const fl_confirm *req);
/* The publish carrying req was not even queued: drops both without a callback. */
void fl_confirm_abort(fl_gw *gw, fl_wait **w, fl_confirm *req);
/* The broker answered the publish carrying req (status 0: confirmed; why
 * as the broker said). Frees req. */
void fl_confirm_done(fl_gw *gw, fl_confirm *req, int status, const char *why);

#endif
