/* alloc.h — the one allocator every fleet module uses.
 *
 * Out-of-memory policy: allocation failure is reported, not fatal. Every
 * wrapper returns NULL on failure and callers turn that into FL_ENOMEM (a
 * tool call then fails with a clear error and the daemon keeps serving).
 * fl_alloc_fail_after() lets tests make the Nth next allocation fail. jansson
 * is pointed at these wrappers by fl_alloc_init() so its allocations count
 * too. */
#ifndef FL_ALLOC_H
#define FL_ALLOC_H

#include <stddef.h>

void fl_alloc_init(void);

/* Gives free heap memory back to the system (glibc's malloc_trim; nothing
 * elsewhere). Costs a walk of the heap: call it after a burst of big
 * buffers was freed, not per free. */
void fl_alloc_trim(void);
void *fl_malloc(size_t n);
void *fl_calloc(size_t n, size_t size);
void *fl_realloc(void *p, size_t n);
char *fl_strdup(const char *s);
char *fl_strndup(const char *s, size_t n);
/* Copies src (NULL reads as "") into dst of size n, truncating. */
void fl_copy(char *dst, size_t n, const char *src);
/* NULL-safe. */
void fl_free(void *p);

/* Test hook: allocation number n (0 = the next one) fails; -1 turns it off. */
void fl_alloc_fail_after(long n);

#endif
