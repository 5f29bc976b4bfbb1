/* alloc.c — the allocation wrappers (see alloc.h for the OOM policy). */
#include "common/alloc.h"

#include <jansson.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdatomic.h>
#include <stdio.h>
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

void fl_copy(char *dst, size_t n, const char *src) { snprintf(dst, n, "%s", src ? src : ""); }

void fl_free(void *p) { free(p); }

void fl_alloc_init(void) { json_set_alloc_funcs(fl_malloc, fl_free); }

void fl_alloc_trim(void) {
#ifdef __GLIBC__
  malloc_trim(0);
#endif
}
