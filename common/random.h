/* random.h — random bytes for public values (ids, nonces) from a per-thread
 * pool, refilled from the kernel a block at a time.
 *
 * libsodium's randombytes_buf is one getrandom system call per call: one
 * for each id and each nonce, several a message on the hot path. The pool
 * asks the kernel for FL_RANDOM_POOL_BYTES at once and hands them out in
 * order, each byte once: the bytes handed out are wiped from the pool as
 * they go. A forked child never hands out what its parent's pool held (the
 * pool is dropped in the child: pthread_atfork). Not for secret keys: those
 * come from libsodium directly. Thread-safe (each thread has its own pool);
 * sodium_init must have run. */
#ifndef FL_RANDOM_H
#define FL_RANDOM_H

#include <stddef.h>

/* n random bytes into buf. Requests bigger than the pool go to the kernel
 * directly. */
void fl_random_bytes(void *buf, size_t n);

#endif
