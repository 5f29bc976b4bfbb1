/* xqueue.c — the bounded cross-thread queue (see xqueue.h).
 *
 * A ring of pointers under one mutex, a condition variable a full
 * push_wait sleeps on, and one wake-up: a uv_async_t for the loop, or a
 * non-blocking self-pipe for a worker. The pipe only ever says "look":
 * a full pipe means the consumer will look anyway, so a failed write is
 * never an error, and the consumer empties it before it pops. */
#include "common/xqueue.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/error.h"

/* How long a full push_wait sleeps before it looks at the queue again. A
 * pop or a shutdown wakes it sooner; this only bounds a missed wake-up. */
#define XQ_WAIT_NS (100u * 1000u * 1000u)

struct fl_xqueue {
  uv_mutex_t mu;
  uv_cond_t space; /* signalled when a pop or a settle made room, or on shutdown */
  void **v;
  size_t cap, head, n;
  size_t bytes, max_bytes; /* unsettled weight, and its budget (0: none) */
  int shut;
  /* to the loop */
  int to_loop;
  uv_async_t async;
  void (*on_ready)(void *ctx);
  void (*on_closed)(void *ctx);
  void *ctx;
  /* to a worker */
  int wake[2]; /* pipe: [0] the worker polls, [1] a push writes */
};

static void xq_wake_worker(fl_xqueue *q) {
  if (q->wake[1] >= 0 && write(q->wake[1], "x", 1) < 0) {
    /* EAGAIN: the pipe is full, so the worker will wake anyway. */
  }
}

static void xq_on_async(uv_async_t *h) {
  fl_xqueue *q = h->data;
  if (q->on_ready)
    q->on_ready(q->ctx);
}

static void xq_on_close(uv_handle_t *h) {
  fl_xqueue *q = h->data;
  if (q->on_closed)
    q->on_closed(q->ctx);
}

/* Allocates q with its ring and lock; the wake-up is the caller's. */
static int xq_alloc(size_t cap, fl_xqueue **out) {
  fl_xqueue *q = fl_calloc(1, sizeof(*q));
  if (!q)
    return FL_ENOMEM;
  q->wake[0] = q->wake[1] = -1;
  q->cap = cap;
  q->v = fl_calloc(cap, sizeof(*q->v));
  if (!q->v) {
    fl_free(q);
    return FL_ENOMEM;
  }
  int rc = uv_mutex_init(&q->mu);
  if (rc) {
    fl_free(q->v);
    fl_free(q);
    return rc;
  }
  if ((rc = uv_cond_init(&q->space)) != 0) {
    uv_mutex_destroy(&q->mu);
    fl_free(q->v);
    fl_free(q);
    return rc;
  }
  *out = q;
  return 0;
}

/* Undoes xq_alloc (and the pipe); the async handle must be closed. */
static void xq_destroy(fl_xqueue *q) {
  uv_cond_destroy(&q->space);
  uv_mutex_destroy(&q->mu);
  if (q->wake[0] >= 0)
    close(q->wake[0]);
  if (q->wake[1] >= 0)
    close(q->wake[1]);
  fl_free(q->v);
  fl_free(q);
}

int fl_xqueue_new_to_loop(uv_loop_t *loop, size_t cap, void (*on_ready)(void *ctx), void *ctx,
                          fl_xqueue **out) {
  if (!out)
    return FL_EINVAL;
  *out = NULL;
  if (!loop || !on_ready || cap == 0)
    return FL_EINVAL;
  fl_xqueue *q = NULL;
  int rc = xq_alloc(cap, &q);
  if (rc)
    return rc;
  q->to_loop = 1;
  q->on_ready = on_ready;
  q->ctx = ctx;
  /* Last: once the handle exists, freeing q takes a loop turn. */
  if ((rc = uv_async_init(loop, &q->async, xq_on_async)) != 0) {
    xq_destroy(q);
    return rc;
  }
  q->async.data = q;
  *out = q;
  return 0;
}

int fl_xqueue_new_to_worker(size_t cap, fl_xqueue **out) {
  if (!out)
    return FL_EINVAL;
  *out = NULL;
  if (cap == 0)
    return FL_EINVAL;
  fl_xqueue *q = NULL;
  int rc = xq_alloc(cap, &q);
  if (rc)
    return rc;
  if (pipe2(q->wake, O_NONBLOCK | O_CLOEXEC) != 0) {
    rc = -errno;
    q->wake[0] = q->wake[1] = -1;
    xq_destroy(q);
    return rc;
  }
  *out = q;
  return 0;
}

/* Appends under the lock; the caller checked for room. */
static void xq_append(fl_xqueue *q, void *item) {
  q->v[(q->head + q->n) % q->cap] = item;
  q->n++;
}

/* Doubles the ring (lock held). Returns 0 or FL_ENOMEM. */
static int xq_grow(fl_xqueue *q) {
  size_t ncap = q->cap * 2;
  void **nv = fl_calloc(ncap, sizeof(*nv));
  if (!nv)
    return FL_ENOMEM;
  for (size_t i = 0; i < q->n; i++)
    nv[i] = q->v[(q->head + i) % q->cap];
  fl_free(q->v);
  q->v = nv;
  q->cap = ncap;
  q->head = 0;
  return 0;
}

/* Wakes the consumer after a push. A worker's pipe is written only when the
 * push found the queue empty (was_empty): items already waiting mean a byte
 * is still in the pipe, or the worker has emptied it and has yet to take
 * them under the lock, where it takes this one too or, when more are left
 * than it takes, writes the byte itself (fl_xqueue_pop). That saves a write
 * (and the worker a read) for every command but the first of a burst. */
static void xq_wake(fl_xqueue *q, int was_empty) {
  if (q->to_loop)
    uv_async_send(&q->async);
  else if (was_empty)
    xq_wake_worker(q);
}

int fl_xqueue_push(fl_xqueue *q, void *item) {
  if (!q || !item)
    return FL_EINVAL;
  uv_mutex_lock(&q->mu);
  int full = q->n == q->cap, was_empty = q->n == 0;
  if (!full)
    xq_append(q, item);
  uv_mutex_unlock(&q->mu);
  if (full)
    return FL_EFULL;
  xq_wake(q, was_empty);
  return 0;
}

void fl_xqueue_set_max_bytes(fl_xqueue *q, size_t max) {
  if (!q)
    return;
  uv_mutex_lock(&q->mu);
  q->max_bytes = max;
  uv_mutex_unlock(&q->mu);
}

/* Whether an item of bytes must wait for the budget (lock held). */
static int xq_over_budget(const fl_xqueue *q, size_t bytes) {
  if (!q->max_bytes || !q->bytes)
    return 0;
  return bytes >= q->max_bytes || q->bytes > q->max_bytes - bytes;
}

int fl_xqueue_push_wait(fl_xqueue *q, void *item) { return fl_xqueue_push_wait_bytes(q, item, 0); }

int fl_xqueue_push_wait_bytes(fl_xqueue *q, void *item, size_t bytes) {
  if (!q || !item)
    return FL_EINVAL;
  int rc = 0;
  uv_mutex_lock(&q->mu);
  while ((q->n == q->cap || xq_over_budget(q, bytes)) && !q->shut)
    uv_cond_timedwait(&q->space, &q->mu, XQ_WAIT_NS);
  if (q->n == q->cap)
    rc = xq_grow(q);
  int was_empty = q->n == 0;
  if (rc == 0) {
    xq_append(q, item);
    q->bytes += bytes;
  }
  uv_mutex_unlock(&q->mu);
  if (rc == 0)
    xq_wake(q, was_empty);
  return rc;
}

int fl_xqueue_push_here(fl_xqueue *q, void *item, size_t bytes) {
  if (!q || !item)
    return FL_EINVAL;
  int rc = 0;
  uv_mutex_lock(&q->mu);
  if (q->n == q->cap)
    rc = xq_grow(q);
  if (rc == 0) {
    xq_append(q, item);
    q->bytes += bytes;
  }
  uv_mutex_unlock(&q->mu);
  return rc;
}

void fl_xqueue_wake(fl_xqueue *q) {
  if (q)
    xq_wake(q, 1);
}

int fl_xqueue_is_empty(fl_xqueue *q) {
  if (!q)
    return 1;
  uv_mutex_lock(&q->mu);
  int empty = q->n == 0;
  uv_mutex_unlock(&q->mu);
  return empty;
}

int fl_xqueue_over_budget(fl_xqueue *q) {
  if (!q)
    return 0;
  uv_mutex_lock(&q->mu);
  int over = q->n >= q->cap || (q->max_bytes && q->bytes >= q->max_bytes);
  uv_mutex_unlock(&q->mu);
  return over;
}

size_t fl_xqueue_pop(fl_xqueue *q, void **items, size_t max) {
  if (!q || !items)
    return 0;
  if (!q->to_loop) {
    char drain[64];
    while (read(q->wake[0], drain, sizeof(drain)) > 0) {
    }
  }
  size_t got = 0;
  uv_mutex_lock(&q->mu);
  while (got < max && q->n) {
    items[got++] = q->v[q->head];
    q->head = (q->head + 1) % q->cap;
    q->n--;
  }
  size_t left = q->n;
  if (got)
    uv_cond_signal(&q->space);
  uv_mutex_unlock(&q->mu);
  if (left && !q->to_loop)
    xq_wake_worker(q); /* more wait: the next poll must return at once */
  return got;
}

void fl_xqueue_settle_bytes(fl_xqueue *q, size_t bytes) {
  if (!q || bytes == 0)
    return;
  uv_mutex_lock(&q->mu);
  q->bytes -= bytes < q->bytes ? bytes : q->bytes;
  uv_cond_signal(&q->space);
  uv_mutex_unlock(&q->mu);
}

int fl_xqueue_fd(const fl_xqueue *q) { return q && !q->to_loop ? q->wake[0] : -1; }

void fl_xqueue_shutdown(fl_xqueue *q) {
  if (!q)
    return;
  uv_mutex_lock(&q->mu);
  q->shut = 1;
  uv_cond_broadcast(&q->space);
  uv_mutex_unlock(&q->mu);
  if (!q->to_loop)
    xq_wake_worker(q);
}

int fl_xqueue_is_shutdown(fl_xqueue *q) {
  if (!q)
    return 1;
  uv_mutex_lock(&q->mu);
  int s = q->shut;
  uv_mutex_unlock(&q->mu);
  return s;
}

void fl_xqueue_close(fl_xqueue *q, void (*on_closed)(void *ctx)) {
  if (!q || !q->to_loop)
    return;
  q->on_closed = on_closed;
  uv_close((uv_handle_t *)&q->async, xq_on_close);
}

void fl_xqueue_free(fl_xqueue **pq, void (*item_free)(void *item)) {
  if (!pq || !*pq)
    return;
  fl_xqueue *q = *pq;
  *pq = NULL;
  while (q->n) {
    void *it = q->v[q->head];
    q->head = (q->head + 1) % q->cap;
    q->n--;
    if (item_free)
      item_free(it);
  }
  xq_destroy(q);
}
