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
 * elsewhere), and frees the spare big blocks (fl_big_free). Costs a walk of the heap: call it after
 * a burst of big buffers was freed, not per free. */
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

/* Big blocks that are made again and again (a listing of thousands of
 * entities and its response line: megabytes, many times a second). fleetd
 * maps every block of 128 KiB and more fresh (clients/fleetd.c), and the
 * first touch of each page of a fresh map is a fault that zeroes the page:
 * for a 2 MB line that is a third of its cost. So a few freed big blocks
 * are kept spare: fl_big_malloc(n) hands out the smallest spare of at
 * least n bytes (else it is fl_malloc; *size, when size is not NULL, is
 * what the block holds, n or more), fl_big_free(p) keeps p (of
 * FL_BIG_MIN bytes or more) in place of a smaller spare or frees it, and
 * fl_alloc_trim frees every spare. Both are fl_malloc and fl_free for
 * every caller's purposes, and may be called from any thread. */
/* fleetd's mmap threshold: a smaller block comes from the heap, and a
 * spare kept at 256 KiB left the poll result of a hundred 1 KiB messages
 * (130 KB of JSON) a fresh mapping each time. */
#define FL_BIG_MIN (128u * 1024u)
/* How many are kept: a listing's JSON, its escaped text and the response
 * line made from them are big at once. A block over FL_BIG_MAX is freed,
 * not kept, so the spares hold 24 MiB at most (a 10,000-entity listing's
 * line is about 4 MiB). */
#define FL_BIG_SPARES 3
#define FL_BIG_MAX (8u * 1024u * 1024u)
void *fl_big_malloc(size_t n, size_t *size);
void fl_big_free(void *p);

/* Test hook: allocation number n (0 = the next one) fails; -1 turns it off. */
void fl_alloc_fail_after(long n);

#endif
