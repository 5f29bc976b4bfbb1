/* test_xqueue.c — unit tests for common/xqueue.c, the bounded queue
 * between the loop thread and a worker thread.
 *
 * To a worker: FIFO order, FL_EFULL at the cap, the pipe readable exactly
 * while items wait (also when a pop leaves some behind), shutdown waking the
 * worker. To the loop: a worker thread pushing far more than the cap with
 * push_wait, each item arriving once and in order through on_ready, then a
 * clean close. Shutdown releasing a push_wait blocked on a full queue, which
 * then grows. Argument checks, an injected allocation failure, and free
 * handing leftover items to the callback. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* After the four above: cmocka.h uses them without including them. */
#include <cmocka.h>

#include <poll.h>
#include <uv.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/xqueue.h"

/* Items are small integers cast to pointers; 0 is not allowed (NULL). */
#define ITEM(i) ((void *)(uintptr_t)(i))
#define NUM(p) ((int)(uintptr_t)(p))

static int readable(int fd) {
  struct pollfd p = {fd, POLLIN, 0};
  return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

static int freed;
static void count_free(void *it) {
  (void)it;
  freed++;
}

static void test_to_worker(void **state) {
  (void)state;
  fl_xqueue *q = NULL;
  assert_int_equal(fl_xqueue_new_to_worker(4, &q), 0);
  int fd = fl_xqueue_fd(q);
  assert_true(fd >= 0);
  assert_false(readable(fd));
  for (int i = 1; i <= 4; i++)
    assert_int_equal(fl_xqueue_push(q, ITEM(i)), 0);
  assert_int_equal(fl_xqueue_push(q, ITEM(5)), FL_EFULL);
  assert_int_equal(fl_xqueue_push(q, NULL), FL_EINVAL);
  assert_true(readable(fd));
  void *got[8];
  /* A partial pop leaves the pipe readable: more wait. */
  assert_int_equal(fl_xqueue_pop(q, got, 3), 3);
  assert_int_equal(NUM(got[0]), 1);
  assert_int_equal(NUM(got[2]), 3);
  assert_true(readable(fd));
  assert_int_equal(fl_xqueue_push(q, ITEM(5)), 0);
  assert_int_equal(fl_xqueue_pop(q, got, 8), 2);
  assert_int_equal(NUM(got[0]), 4);
  assert_int_equal(NUM(got[1]), 5);
  assert_false(readable(fd));
  assert_int_equal(fl_xqueue_pop(q, got, 8), 0);
  /* Shutdown wakes the worker and is seen; pushes still work. */
  assert_false(fl_xqueue_is_shutdown(q));
  fl_xqueue_shutdown(q);
  assert_true(fl_xqueue_is_shutdown(q));
  assert_true(readable(fd));
  assert_int_equal(fl_xqueue_push(q, ITEM(6)), 0);
  assert_int_equal(fl_xqueue_push(q, ITEM(7)), 0);
  freed = 0;
  fl_xqueue_free(&q, count_free);
  assert_null(q);
  assert_int_equal(freed, 2);
  fl_xqueue_free(&q, count_free); /* NULL-safe */
  fl_xqueue_free(NULL, NULL);
}

static void test_arguments(void **state) {
  (void)state;
  fl_xqueue *q = (fl_xqueue *)&q;
  assert_int_equal(fl_xqueue_new_to_worker(0, &q), FL_EINVAL);
  assert_int_equal(fl_xqueue_new_to_worker(4, NULL), FL_EINVAL);
  uv_loop_t loop;
  assert_int_equal(uv_loop_init(&loop), 0);
  assert_int_equal(fl_xqueue_new_to_loop(NULL, 4, count_free, NULL, &q), FL_EINVAL);
  assert_int_equal(fl_xqueue_new_to_loop(&loop, 4, NULL, NULL, &q), FL_EINVAL);
  assert_int_equal(fl_xqueue_new_to_loop(&loop, 0, count_free, NULL, &q), FL_EINVAL);
  fl_alloc_fail_after(0);
  assert_int_equal(fl_xqueue_new_to_worker(4, &q), FL_ENOMEM);
  fl_alloc_fail_after(1);
  assert_int_equal(fl_xqueue_new_to_loop(&loop, 4, count_free, NULL, &q), FL_ENOMEM);
  fl_alloc_fail_after(-1);
  assert_null(q);
  assert_int_equal(uv_loop_close(&loop), 0);
  assert_int_equal(fl_xqueue_fd(NULL), -1);
  assert_int_equal(fl_xqueue_pop(NULL, NULL, 1), 0);
}

/* ---- to the loop, from a worker thread ---- */

#define N_ITEMS 5000

struct loopfx {
  uv_loop_t loop;
  fl_xqueue *q;
  int next;   /* the item expected next */
  int wakes;  /* on_ready calls */
  int closed; /* on_closed ran */
  int order_ok;
};

static void on_ready(void *ctx) {
  struct loopfx *f = ctx;
  void *got[16];
  size_t n;
  f->wakes++;
  while ((n = fl_xqueue_pop(f->q, got, 16)) > 0)
    for (size_t i = 0; i < n; i++)
      f->order_ok &= NUM(got[i]) == f->next++;
}

static void on_closed(void *ctx) {
  struct loopfx *f = ctx;
  f->closed = 1;
}

static void producer(void *arg) {
  struct loopfx *f = arg;
  for (int i = 1; i <= N_ITEMS; i++)
    if (fl_xqueue_push_wait(f->q, ITEM(i)) != 0)
      return;
}

static void test_to_loop(void **state) {
  (void)state;
  struct loopfx f = {.next = 1, .order_ok = 1};
  assert_int_equal(uv_loop_init(&f.loop), 0);
  /* A cap far below the item count: the producer must wait for room. */
  assert_int_equal(fl_xqueue_new_to_loop(&f.loop, 8, on_ready, &f, &f.q), 0);
  assert_int_equal(fl_xqueue_fd(f.q), -1);
  uv_thread_t t;
  assert_int_equal(uv_thread_create(&t, producer, &f), 0);
  while (f.next <= N_ITEMS)
    uv_run(&f.loop, UV_RUN_ONCE);
  /* Closed only once no producer can push any more. */
  uv_thread_join(&t);
  assert_true(f.order_ok);
  assert_int_equal(f.next, N_ITEMS + 1);
  assert_true(f.wakes >= 1);
  fl_xqueue_close(f.q, on_closed);
  uv_run(&f.loop, UV_RUN_DEFAULT);
  assert_int_equal(f.closed, 1);
  fl_xqueue_free(&f.q, NULL);
  assert_int_equal(uv_loop_close(&f.loop), 0);
}

static void test_close_callback(void **state) {
  (void)state;
  struct loopfx f = {.next = 1, .order_ok = 1};
  assert_int_equal(uv_loop_init(&f.loop), 0);
  assert_int_equal(fl_xqueue_new_to_loop(&f.loop, 2, on_ready, &f, &f.q), 0);
  assert_int_equal(fl_xqueue_push(f.q, ITEM(1)), 0);
  fl_xqueue_close(f.q, on_closed);
  uv_run(&f.loop, UV_RUN_DEFAULT);
  /* No on_ready after close; the item is still there for free. */
  assert_int_equal(f.wakes, 0);
  assert_int_equal(f.closed, 1);
  freed = 0;
  fl_xqueue_free(&f.q, count_free);
  assert_int_equal(freed, 1);
  assert_int_equal(uv_loop_close(&f.loop), 0);
}

/* ---- shutdown releases a blocked push_wait ---- */

struct blocked {
  fl_xqueue *q;
  int rc;
  int done;
};

static void push_one(void *arg) {
  struct blocked *bl = arg;
  bl->rc = fl_xqueue_push_wait(bl->q, ITEM(3));
  __atomic_store_n(&bl->done, 1, __ATOMIC_SEQ_CST);
}

static void test_shutdown_grows(void **state) {
  (void)state;
  struct blocked bl = {.rc = 99};
  assert_int_equal(fl_xqueue_new_to_worker(2, &bl.q), 0);
  assert_int_equal(fl_xqueue_push(bl.q, ITEM(1)), 0);
  assert_int_equal(fl_xqueue_push(bl.q, ITEM(2)), 0);
  uv_thread_t t;
  assert_int_equal(uv_thread_create(&t, push_one, &bl), 0);
  /* It stays blocked while the queue is full (not a proof, a sanity check). */
  uv_sleep(50);
  assert_int_equal(__atomic_load_n(&bl.done, __ATOMIC_SEQ_CST), 0);
  fl_xqueue_shutdown(bl.q);
  uv_thread_join(&t);
  assert_int_equal(bl.rc, 0);
  /* Past its cap now, the push is not lost, and the order holds. */
  void *got[4];
  assert_int_equal(fl_xqueue_pop(bl.q, got, 4), 3);
  assert_int_equal(NUM(got[0]), 1);
  assert_int_equal(NUM(got[2]), 3);
  /* After shutdown a full queue grows at once instead of waiting. */
  for (int i = 1; i <= 10; i++)
    assert_int_equal(fl_xqueue_push_wait(bl.q, ITEM(i)), 0);
  assert_int_equal(fl_xqueue_pop(bl.q, got, 4), 4);
  freed = 0;
  fl_xqueue_free(&bl.q, count_free);
  assert_int_equal(freed, 6);
}

/* A pop by the consumer releases a producer waiting for room. */
static void test_pop_releases(void **state) {
  (void)state;
  struct blocked bl = {.rc = 99};
  assert_int_equal(fl_xqueue_new_to_worker(1, &bl.q), 0);
  assert_int_equal(fl_xqueue_push(bl.q, ITEM(1)), 0);
  uv_thread_t t;
  assert_int_equal(uv_thread_create(&t, push_one, &bl), 0);
  void *got[2];
  size_t total = 0;
  while (total < 2) {
    total += fl_xqueue_pop(bl.q, got + total, 2 - total);
    if (total < 2)
      uv_sleep(1);
  }
  uv_thread_join(&t);
  assert_int_equal(bl.rc, 0);
  assert_int_equal(NUM(got[0]), 1);
  assert_int_equal(NUM(got[1]), 3);
  assert_false(fl_xqueue_is_shutdown(bl.q));
  fl_xqueue_free(&bl.q, NULL);
}

/* ---- the byte budget ---- */

struct heavy {
  fl_xqueue *q;
  int item;
  size_t bytes;
  int rc;
  int done;
};

static void push_heavy(void *arg) {
  struct heavy *h = arg;
  h->rc = fl_xqueue_push_wait_bytes(h->q, ITEM(h->item), h->bytes);
  __atomic_store_n(&h->done, 1, __ATOMIC_SEQ_CST);
}

static int heavy_done(struct heavy *h) { return __atomic_load_n(&h->done, __ATOMIC_SEQ_CST); }

/* Items weigh until the consumer settles them, not only while queued: a
 * push that would pass the budget waits for a settle, a pop is not enough.
 * An item heavier than the whole budget goes when nothing else weighs. A
 * shutdown releases a push waiting for the budget. */
static void test_byte_budget(void **state) {
  (void)state;
  fl_xqueue *q = NULL;
  assert_int_equal(fl_xqueue_new_to_worker(16, &q), 0);
  fl_xqueue_set_max_bytes(q, 100);
  assert_int_equal(fl_xqueue_push_wait_bytes(q, ITEM(1), 60), 0);

  struct heavy h = {.q = q, .item = 2, .bytes = 60, .rc = 99};
  uv_thread_t t;
  assert_int_equal(uv_thread_create(&t, push_heavy, &h), 0);
  uv_sleep(50);
  assert_int_equal(heavy_done(&h), 0); /* 60 + 60 > 100 */
  void *got[4];
  assert_int_equal(fl_xqueue_pop(q, got, 4), 1);
  assert_int_equal(NUM(got[0]), 1);
  uv_sleep(50);
  assert_int_equal(heavy_done(&h), 0); /* popped, not yet settled */
  fl_xqueue_settle_bytes(q, 60);
  uv_thread_join(&t);
  assert_int_equal(h.rc, 0);
  assert_int_equal(fl_xqueue_pop(q, got, 4), 1);
  assert_int_equal(NUM(got[0]), 2);

  /* Within the budget nothing waits: 60 + 40 is exactly 100. */
  assert_int_equal(fl_xqueue_push_wait_bytes(q, ITEM(3), 40), 0);
  assert_int_equal(fl_xqueue_pop(q, got, 4), 1);
  fl_xqueue_settle_bytes(q, 100);

  /* Alone, an item over the whole budget goes at once. */
  assert_int_equal(fl_xqueue_push_wait_bytes(q, ITEM(4), 500), 0);
  /* Behind it even a small one waits, until a shutdown. */
  struct heavy h2 = {.q = q, .item = 5, .bytes = 1, .rc = 99};
  assert_int_equal(uv_thread_create(&t, push_heavy, &h2), 0);
  uv_sleep(50);
  assert_int_equal(heavy_done(&h2), 0);
  fl_xqueue_shutdown(q);
  uv_thread_join(&t);
  assert_int_equal(h2.rc, 0);
  assert_int_equal(fl_xqueue_pop(q, got, 4), 2);
  assert_int_equal(NUM(got[0]), 4);
  assert_int_equal(NUM(got[1]), 5);
  /* Settling more than is owed does not wrap the count. */
  fl_xqueue_settle_bytes(q, 10000);
  fl_xqueue_free(&q, NULL);
}

/* The loop pushing into its own queue (it reads a worker's socket while the
 * worker sleeps): nothing waits and nothing wakes it, the ring grows past
 * its cap, and fl_xqueue_over_budget tells it when to stop adding. */
static void test_push_here(void **state) {
  (void)state;
  struct loopfx f = {.next = 1, .order_ok = 1};
  assert_int_equal(uv_loop_init(&f.loop), 0);
  assert_int_equal(fl_xqueue_new_to_loop(&f.loop, 2, on_ready, &f, &f.q), 0);
  fl_xqueue_set_max_bytes(f.q, 100);
  assert_false(fl_xqueue_over_budget(f.q));
  assert_int_equal(fl_xqueue_push_here(f.q, ITEM(1), 10), 0);
  assert_false(fl_xqueue_over_budget(f.q));
  assert_int_equal(fl_xqueue_push_here(f.q, ITEM(2), 10), 0);
  assert_true(fl_xqueue_over_budget(f.q));                    /* cap items wait */
  assert_int_equal(fl_xqueue_push_here(f.q, ITEM(3), 90), 0); /* past the cap and the budget */
  assert_int_equal(fl_xqueue_push_here(f.q, NULL, 0), FL_EINVAL);
  uv_run(&f.loop, UV_RUN_NOWAIT);
  assert_int_equal(f.wakes, 0); /* no wake-up: the pusher pops next */
  void *got[8];
  assert_int_equal(fl_xqueue_pop(f.q, got, 8), 3);
  assert_int_equal(NUM(got[0]), 1);
  assert_int_equal(NUM(got[2]), 3);
  assert_true(fl_xqueue_over_budget(f.q)); /* popped, not settled: 110 bytes */
  fl_xqueue_settle_bytes(f.q, 20);
  assert_false(fl_xqueue_over_budget(f.q)); /* 90 */
  fl_xqueue_settle_bytes(f.q, 90);
  fl_xqueue_close(f.q, on_closed);
  uv_run(&f.loop, UV_RUN_DEFAULT);
  fl_xqueue_free(&f.q, NULL);
  assert_int_equal(uv_loop_close(&f.loop), 0);
}

int main(void) {
  fl_alloc_init();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_to_worker),      cmocka_unit_test(test_arguments),
      cmocka_unit_test(test_to_loop),        cmocka_unit_test(test_close_callback),
      cmocka_unit_test(test_shutdown_grows), cmocka_unit_test(test_pop_releases),
      cmocka_unit_test(test_byte_budget),    cmocka_unit_test(test_push_here),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
