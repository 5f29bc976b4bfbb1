/* test_store.h — a real store for C tests, in a temporary directory of its
 * own, opened the same way by every test that needs one. */
#ifndef FL_TEST_STORE_H
#define FL_TEST_STORE_H

#include <stddef.h>

#include "gateway/store/store.h"

/* Runs fl_alloc_init, makes /tmp/fleet-<tag>-XXXXXX (its path into dir,
 * size dn), and opens the store holds.db in it (its path into path, size
 * pn; the store into *out). Returns 0, or -1 with nothing left behind. */
int fl_test_store_open(const char *tag, char *dir, size_t dn, char *path, size_t pn,
                       fl_store **out);

/* Holds a plain 4-byte SEND from "X" with msgId id for to (ts 1000, no
 * expiry): fl_store_put's result. */
int fl_test_store_put(fl_store *s, const char *id, const char *to);

#endif
