/* test_random.c — common/random.c's pool: the bytes it hands out never
 * repeat, across refills, across threads, and across a fork (the child
 * must not hand out what the parent's pool still held); the nonces and ids
 * made from it stay distinct. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka needs the four headers above first. */
#include <cmocka.h>

#include <pthread.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/limits.h"
#include "common/random.h"

#define NONCE 24
#define MANY 20000

static int cmp_nonce(const void *a, const void *b) { return memcmp(a, b, NONCE); }

/* No two of n nonces (NONCE bytes each, in v) are equal. */
static void assert_distinct(unsigned char *v, size_t n) {
  qsort(v, n, NONCE, cmp_nonce);
  for (size_t i = 1; i < n; i++)
    assert_true(memcmp(v + (i - 1) * NONCE, v + i * NONCE, NONCE) != 0);
}

/* Many nonces, with ids' 16 bytes drawn between them so refills fall
 * anywhere: none repeats. */
static void test_nonces_never_repeat(void **state) {
  (void)state;
  unsigned char *v = malloc((size_t)MANY * NONCE);
  assert_non_null(v);
  unsigned char id[16];
  for (size_t i = 0; i < MANY; i++) {
    fl_random_bytes(v + i * NONCE, NONCE);
    if (i % 3 == 0)
      fl_random_bytes(id, sizeof id);
  }
  assert_distinct(v, MANY);
  free(v);
}

/* A request bigger than the pool is served whole. */
static void test_big_request(void **state) {
  (void)state;
  unsigned char a[2 * FL_RANDOM_POOL_BYTES], b[2 * FL_RANDOM_POOL_BYTES];
  fl_random_bytes(a, sizeof a);
  fl_random_bytes(b, sizeof b);
  assert_true(memcmp(a, b, sizeof a) != 0);
  static const unsigned char zero[64];
  assert_true(memcmp(a + sizeof a - 64, zero, 64) != 0);
}

typedef struct {
  unsigned char v[MANY / 4 * NONCE];
} draws;

static void *draw_many(void *arg) {
  draws *d = arg;
  for (size_t i = 0; i < MANY / 4; i++)
    fl_random_bytes(d->v + i * NONCE, NONCE);
  return NULL;
}

/* Each thread has its own pool: two threads never hand out the same. */
static void test_threads(void **state) {
  (void)state;
  draws *d = malloc(2 * sizeof *d);
  assert_non_null(d);
  pthread_t t[2];
  for (int i = 0; i < 2; i++)
    assert_int_equal(pthread_create(&t[i], NULL, draw_many, &d[i]), 0);
  for (int i = 0; i < 2; i++)
    pthread_join(t[i], NULL);
  assert_distinct((unsigned char *)d, 2 * (MANY / 4));
  free(d);
}

/* After a fork, the child's nonces are not the parent's next ones (its
 * copy of the pool is dropped). */
static void test_fork(void **state) {
  (void)state;
  enum { K = 8 };
  unsigned char first[NONCE];
  fl_random_bytes(first, NONCE); /* the pool is filled, most of it unused */
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    unsigned char mine[K * NONCE];
    for (int i = 0; i < K; i++)
      fl_random_bytes(mine + i * NONCE, NONCE);
    ssize_t w = write(fds[1], mine, sizeof mine);
    _exit(w == (ssize_t)sizeof mine ? 0 : 1);
  }
  close(fds[1]);
  unsigned char all[2 * K * NONCE];
  for (int i = 0; i < K; i++)
    fl_random_bytes(all + i * NONCE, NONCE);
  size_t got = 0;
  while (got < K * NONCE) {
    ssize_t r = read(fds[0], all + K * NONCE + got, K * NONCE - got);
    assert_true(r > 0);
    got += (size_t)r;
  }
  close(fds[0]);
  int st = 0;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  assert_distinct(all, 2 * K);
}

int main(void) {
  if (sodium_init() < 0)
    return 1;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_nonces_never_repeat),
      cmocka_unit_test(test_big_request),
      cmocka_unit_test(test_threads),
      cmocka_unit_test(test_fork),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
