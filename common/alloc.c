/* alloc.c — the allocation wrappers (see alloc.h for the OOM policy). */
#include "common/alloc.h"

#include <jansson.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static atomic_long fl_fail_countdown = -1;

static int fl_should_fail(void) {
  long c = atomic_load(&fl_fail_countdown);
  if (c < 0)
    return 0;
  if (c == 0) {
    atomic_store(&fl_fail_countdown, -1);
    return 1;
  }
  atomic_store(&fl_fail_countdown, c - 1);
  return 0;
}

void fl_alloc_fail_after(long n) { atomic_store(&fl_fail_countdown, n); }

void *fl_malloc(size_t n) { return fl_should_fail() ? NULL : malloc(n ? n : 1); }

void *fl_calloc(size_t n, size_t size) {
  return fl_should_fail() ? NULL : calloc(n ? n : 1, size ? size : 1);
}

void *fl_realloc(void *p, size_t n) { return fl_should_fail() ? NULL : realloc(p, n ? n : 1); }

char *fl_strndup(const char *s, size_t n) {
  if (!s)
    return NULL;
  size_t len = strnlen(s, n);
  char *d = fl_malloc(len + 1);
  if (!d)
    return NULL;
  memcpy(d, s, len);
  d[len] = '\0';
  return d;
}

char *fl_strdup(const char *s) { return s ? fl_strndup(s, strlen(s)) : NULL; }

void fl_copy(char *dst, size_t n, const char *src) {
  /* Not snprintf: presence copies a few fields of every agent on every
   * beat, and a format string costs more than the copy. */
  if (!n)
    return;
  size_t len = src ? strnlen(src, n - 1) : 0;
  if (len)
    memmove(dst, src, len);
  dst[len] = '\0';
}

void fl_free(void *p) { free(p); }

void fl_alloc_init(void) { json_set_alloc_funcs(fl_malloc, fl_free); }

/* ---- spare big blocks ------------------------------------------------------ */

static struct {
  pthread_mutex_t lock;
  void *p[FL_BIG_SPARES];
  size_t size[FL_BIG_SPARES]; /* usable bytes of p[i]; 0 for an empty slot */
} fl_big = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* The bytes p can hold (malloc_usable_size), or 0 where that is not known:
 * then nothing is kept spare. */
static size_t fl_usable(void *p) {
#ifdef __GLIBC__
  return malloc_usable_size(p);
#else
  (void)p;
  return 0;
#endif
}

void *fl_big_malloc(size_t n, size_t *size) {
  void *p = NULL;
  size_t got = n;
  if (n >= FL_BIG_MIN) {
    pthread_mutex_lock(&fl_big.lock);
    int best = -1;
    for (int i = 0; i < FL_BIG_SPARES; i++)
      if (fl_big.size[i] >= n && (best < 0 || fl_big.size[i] < fl_big.size[best]))
        best = i;
    if (best >= 0) {
      p = fl_big.p[best];
      got = fl_big.size[best];
      fl_big.p[best] = NULL;
      fl_big.size[best] = 0;
    }
    pthread_mutex_unlock(&fl_big.lock);
  }
  if (!p)
    p = fl_malloc(n);
  if (size)
    *size = p ? got : 0;
  return p;
}

void fl_big_free(void *p) {
  size_t size = p ? fl_usable(p) : 0;
  if (size < FL_BIG_MIN || size > FL_BIG_MAX) {
    fl_free(p);
    return;
  }
  pthread_mutex_lock(&fl_big.lock);
  int low = 0;
  for (int i = 1; i < FL_BIG_SPARES; i++)
    if (fl_big.size[i] < fl_big.size[low])
      low = i;
  if (fl_big.size[low] < size) {
    void *q = fl_big.p[low];
    fl_big.p[low] = p;
    fl_big.size[low] = size;
    p = q;
  }
  pthread_mutex_unlock(&fl_big.lock);
  fl_free(p);
}

void fl_alloc_trim(void) {
  void *p[FL_BIG_SPARES];
  pthread_mutex_lock(&fl_big.lock);
  for (int i = 0; i < FL_BIG_SPARES; i++) {
    p[i] = fl_big.p[i];
    fl_big.p[i] = NULL;
    fl_big.size[i] = 0;
  }
  pthread_mutex_unlock(&fl_big.lock);
  for (int i = 0; i < FL_BIG_SPARES; i++)
    fl_free(p[i]);
#ifdef __GLIBC__
  malloc_trim(0);
#endif
}
