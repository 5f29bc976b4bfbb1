/* test_util.h — what fleet's C tests share: temporary directories, the
 * rule for tests that need a real broker, a tool call as a client sends it,
 * and the one-byte mutations of a line that the JSON readers' tests run.
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

/* A client's fleet_send request line (JSON-RPC id 42, to "w") whose content
 * is the JSON string body content (already escaped), without its '\n';
 * its length into *len. fl_malloc'd (fl_free it); NULL when out of memory. */
char *fl_test_send_line(const char *content, size_t *len);

/* Every line made from src[0..n) (under 1 KiB) by putting each byte of
 * subst[0..nsubst) in place of one byte, by dropping one byte and by
 * doubling one: check(line, len, ctx) runs on each. Returns how many
 * checks returned non-zero; *tried gets how many lines were made. */
size_t fl_test_mutations(const char *src, size_t n, const unsigned char *subst, size_t nsubst,
                         int (*check)(const char *line, size_t len, void *ctx), void *ctx,
                         size_t *tried);

#endif
