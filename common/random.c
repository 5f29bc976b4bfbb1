/* random.c — the per-thread pool of random bytes (see random.h). */
#include "common/random.h"

#include <pthread.h>
#include <sodium.h>
#include <string.h>

#include "common/limits.h"

/* Moves on in every forked child, so a pool filled before the fork is
 * dropped there rather than handed out a second time. */
static volatile unsigned fl_fork_gen;
static pthread_once_t fl_atfork_once = PTHREAD_ONCE_INIT;

static void fl_on_fork_child(void) { fl_fork_gen++; }
static void fl_atfork_register(void) { pthread_atfork(NULL, NULL, fl_on_fork_child); }

static _Thread_local struct {
  unsigned char b[FL_RANDOM_POOL_BYTES];
  size_t used; /* b[0..used) are handed out (and zero) */
  unsigned gen;
  int filled;
} fl_pool;

void fl_random_bytes(void *buf, size_t n) {
  if (n > FL_RANDOM_POOL_BYTES / 2) {
    randombytes_buf(buf, n);
    return;
  }
  if (!fl_pool.filled || fl_pool.gen != fl_fork_gen || n > FL_RANDOM_POOL_BYTES - fl_pool.used) {
    pthread_once(&fl_atfork_once, fl_atfork_register);
    fl_pool.gen = fl_fork_gen;
    randombytes_buf(fl_pool.b, sizeof fl_pool.b);
    fl_pool.used = 0;
    fl_pool.filled = 1;
  }
  unsigned char *p = fl_pool.b + fl_pool.used;
  memcpy(buf, p, n);
  sodium_memzero(p, n);
  fl_pool.used += n;
}
