/* result_write.h — a message as a poll shows it, and the results that hand
 * messages to a waiting call (a long poll's, a send's reply), written with
 * the JSON writer (common/json_writer.h).
 *
 * These are the hot path's results: built as a jansson tree, each body was
 * copied into the tree and then dumped from it; written, each body is
 * escaped once, straight into the result. The bytes are what json_dumps
 * wrote for the tree (the same keys in the same order). Internal to
 * gateway/. */
#ifndef FL_RESULT_WRITE_H
#define FL_RESULT_WRITE_H

#include <jansson.h>
#include <stddef.h>

#include "common/json_writer.h"
#include "gateway/store/store.h"

struct fl_entity;
struct fl_wait;

/* m as a poll shows it: {"msgId", "kind", "from": {"gid", "name"}, "to",
 * "content", "ts", "traceId"} and, when set, "inReplyTo", an ask's
 * "turnId" and "expiresAt", a lead's "coordId", a BLOCKED message's
 * "request". */
void fl_msg_write(fl_jw *w, const fl_msg *m);
/* The same as a new tree, for the readers that want one (NULL when out of
 * memory, or when m's text is not UTF-8). */
json_t *fl_router_msg_json(const fl_msg *m);

/* {"messages": [the n messages of msgs], "remaining": remaining} into out
 * (emptied first). 0, or the writer's error (out then empty). */
int fl_poll_write(fl_json_out *out, const fl_msg *msgs, size_t n, size_t remaining);
/* A send's result once its reply came: {"msgId", "traceId" (w's), "to":
 * {"gid", "name"} (to's), "status": "replied", "reply": reply as a poll
 * shows it} and w's "note" when it has one. 0, or the writer's error. */
int fl_replied_write(fl_json_out *out, const struct fl_wait *w, const struct fl_entity *to,
                     const fl_msg *reply);

#endif
