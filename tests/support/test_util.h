/* test_util.h — what fleet's C tests share: temporary directories, and the
 * rule for tests that need a real broker.
 *
 * Every unit test and fuzz replay links test_util.c (see CMakeLists.txt), so
 * none keeps its own copy of these. */
#ifndef FL_TEST_UTIL_H
#define FL_TEST_UTIL_H

#include <stddef.h>

/* Makes a fresh directory /tmp/fleet-<tag>-XXXXXX (mode 0700) and writes
 * its path into out (size n). Returns 0 or -errno. */
int fl_test_tmpdir(const char *tag, char *out, size_t n);
/* Removes dir and everything below it. NULL-safe; errors are ignored. */
void fl_test_rmtree(const char *dir);

/* The broker a test may use: $FLEET_TEST_AMQP_URI, or NULL when none is
 * set. With none set, under CI=true a test that needs one must fail (a
 * suite that silently skips its broker tests proves nothing), elsewhere it
 * reports itself skipped. fl_test_broker_missing prints that line for
 * `what` and returns the exit status to use: 1 under CI, 0 elsewhere. */
const char *fl_test_broker_uri(void);
int fl_test_broker_missing(const char *what);

#endif
