/* xqueue.h — a bounded queue that carries pointers between the loop thread
 * and a worker thread, with the wake-up that goes with it.
 *
 * A worker that has to block (the rabbitmq-c connection today, an HTTP
 * client later) never touches loop state: the two sides hand each other
 * items through a pair of these, one per direction. Which side a push wakes
 * is chosen when the queue is made:
 *
 *   - to the loop (fl_xqueue_new_to_loop): workers push, the loop pops. A
 *     push wakes the loop through a uv_async_t, and on_ready runs on the
 *     loop to pop. A worker that finds the queue full may wait for room
 *     (fl_xqueue_push_wait), so a slow loop slows the worker instead of
 *     growing memory.
 *   - to a worker (fl_xqueue_new_to_worker): the loop pushes, a worker pops.
 *     A push into an empty queue writes a byte to a non-blocking pipe whose
 *     read end (fl_xqueue_fd) the worker polls together with its own
 *     sockets (a push behind waiting items needs none: see xqueue.c). The
 *     loop never waits: a full queue is FL_EFULL.
 *
 * Items are the caller's pointers; the queue never looks at them. An item
 * belongs to the queue once a push returns 0 (on failure the caller keeps
 * it), and to whoever pops it. One mutex guards the ring, so any thread may
 * push or pop, but each wake-up is meant for one consumer.
 *
 * fl_xqueue_shutdown marks the end of a queue's life: pushes still work,
 * push_wait no longer waits (the queue grows past its cap instead, so a
 * worker finishing up never blocks on a loop that is joining it; whatever
 * bounds the work in flight bounds that growth), and fl_xqueue_is_shutdown
 * tells a worker to finish. */
#ifndef FL_XQUEUE_H
#define FL_XQUEUE_H

#include <stddef.h>

#include <uv.h>

typedef struct fl_xqueue fl_xqueue;

/* A queue into the loop: on_ready(ctx) runs on loop's thread, from the
 * loop, some time after one or more pushes (wake-ups coalesce, so it must
 * pop until the queue is empty). Call on the loop thread. cap > 0. Returns
 * 0 and sets *out, FL_EINVAL, FL_ENOMEM or a libuv error; the caller owns
 * *out: fl_xqueue_close, then fl_xqueue_free once on_closed ran. */
int fl_xqueue_new_to_loop(uv_loop_t *loop, size_t cap, void (*on_ready)(void *ctx), void *ctx,
                          fl_xqueue **out);

/* A queue into a worker thread, which polls fl_xqueue_fd. Any thread.
 * cap > 0. Returns 0 and sets *out, FL_EINVAL, FL_ENOMEM or -errno; the
 * caller frees *out with fl_xqueue_free. */
int fl_xqueue_new_to_worker(size_t cap, fl_xqueue **out);

/* Adds item (not NULL) at the tail and wakes the consumer. Never blocks.
 * Returns 0, FL_EFULL (cap items wait) or FL_EINVAL. */
int fl_xqueue_push(fl_xqueue *q, void *item);

/* As fl_xqueue_push, but while the queue is full it waits (on the calling
 * thread, which must not be the loop thread) until the consumer makes room
 * or the queue is shut down; after shutdown a full queue grows instead.
 * Returns 0, FL_ENOMEM (shut down and no memory to grow) or FL_EINVAL. */
int fl_xqueue_push_wait(fl_xqueue *q, void *item);

/* A budget of bytes on top of the count (0, the default, is none): the
 * items pushed with fl_xqueue_push_wait_bytes and not yet settled by the
 * consumer weigh at most max bytes, so a burst of big items waits in the
 * producer's thread (and, behind it, in the socket it reads) instead of in
 * memory. Call before any push. */
void fl_xqueue_set_max_bytes(fl_xqueue *q, size_t max);

/* As fl_xqueue_push_wait, but the item weighs bytes, and the push also
 * waits while the weight of the unsettled items plus this one would pass
 * the budget. An item heavier than the whole budget goes when nothing else
 * weighs on it, so no item waits forever; after shutdown nothing waits. */
int fl_xqueue_push_wait_bytes(fl_xqueue *q, void *item, size_t bytes);

/* From the consumer's own thread (a loop that reads a worker's source
 * itself while the worker sleeps): adds item weighing bytes without waiting
 * and without a wake-up, past the cap and the budget if need be (the ring
 * grows), because the caller pops next. The caller bounds what it adds by
 * fl_xqueue_over_budget. Returns 0, FL_ENOMEM (the ring could not grow) or
 * FL_EINVAL. */
int fl_xqueue_push_here(fl_xqueue *q, void *item, size_t bytes);

/* Wakes the consumer as a push does (after fl_xqueue_push_here when the
 * caller will not pop next itself). Any thread. */
void fl_xqueue_wake(fl_xqueue *q);

/* 1 when no item waits, else 0. Any thread; a snapshot unless the caller
 * is the only one who pushes and pops only happen where it can see. */
int fl_xqueue_is_empty(fl_xqueue *q);

/* 1 when the items not yet settled weigh the whole budget or more, or cap
 * items wait, else 0. Any thread. */
int fl_xqueue_over_budget(fl_xqueue *q);

/* The consumer is done with items weighing bytes (it freed them): their
 * weight leaves the budget, and a push waiting for it goes on. Any thread. */
void fl_xqueue_settle_bytes(fl_xqueue *q, size_t bytes);

/* Takes up to max items from the head into items, oldest first, and
 * returns how many (0 when empty). Never blocks; wakes a waiting push_wait.
 * For a to-worker queue it also clears the pipe first, and leaves it
 * readable when items remain, so the worker's next poll returns at once. */
size_t fl_xqueue_pop(fl_xqueue *q, void **items, size_t max);

/* The read end of a to-worker queue's pipe, readable (POLLIN) when items
 * may wait; -1 for a to-loop queue. The queue owns it. */
int fl_xqueue_fd(const fl_xqueue *q);

/* Marks q shut down (see the top of this file), wakes a waiting push_wait
 * and, for a to-worker queue, the worker. Idempotent; any thread. */
void fl_xqueue_shutdown(fl_xqueue *q);

/* 1 once fl_xqueue_shutdown ran, else 0. Any thread. */
int fl_xqueue_is_shutdown(fl_xqueue *q);

/* To-loop queues only, on the loop thread, once no thread can push any more
 * (a push wakes the handle; e.g. after joining the worker): closes the
 * uv_async_t. No on_ready runs after this call; on_closed(ctx) (may be
 * NULL) runs from the loop once the handle is closed, and only then may q
 * be freed. */
void fl_xqueue_close(fl_xqueue *q, void (*on_closed)(void *ctx));

/* Frees q, handing every item still in it to item_free (NULL = leave them),
 * and sets *q to NULL. A to-loop queue must have been closed first (its
 * on_closed ran). NULL-safe. */
void fl_xqueue_free(fl_xqueue **q, void (*item_free)(void *item));

#endif
