/* test_util.c — shared test helpers (see test_util.h). */
#include "tests/support/test_util.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/alloc.h"

int fl_test_tmpdir(const char *tag, char *out, size_t n) {
  int w = snprintf(out, n, "/tmp/fleet-%s-XXXXXX", tag ? tag : "test");
  if (w < 0 || (size_t)w >= n)
    return -ENAMETOOLONG;
  return mkdtemp(out) ? 0 : -errno;
}

static int fl_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st;
  (void)flag;
  (void)ftw;
  remove(path);
  return 0;
}

void fl_test_rmtree(const char *dir) {
  if (dir && *dir)
    nftw(dir, fl_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

const char *fl_test_broker_uri(void) {
  const char *uri = getenv("FLEET_TEST_AMQP_URI");
  return (uri && *uri) ? uri : NULL;
}

int fl_test_broker_missing(const char *what) {
  const char *ci = getenv("CI");
  int in_ci = ci && *ci && strcmp(ci, "false") != 0 && strcmp(ci, "0") != 0;
  if (in_ci) {
    fprintf(stderr,
            "%s: FAILED: FLEET_TEST_AMQP_URI is not set under CI=true; the tests that need a "
            "broker cannot run (scripts/test.sh starts one)\n",
            what);
    return 1;
  }
  printf("%s: SKIPPED the tests that need a broker: FLEET_TEST_AMQP_URI is not set "
         "(scripts/test.sh starts a private one)\n",
         what);
  return 0;
}

char *fl_test_send_line(const char *content, size_t *len) {
  static const char fmt[] =
      "{\"jsonrpc\":\"2.0\",\"id\":42,\"method\":\"tools/call\",\"params\":{\"name\":"
      "\"fleet_send\",\"arguments\":{\"to\":\"w\",\"content\":\"%s\"}}}";
  size_t cap = strlen(content) + sizeof fmt;
  char *line = fl_malloc(cap);
  if (!line)
    return NULL;
  int n = snprintf(line, cap, fmt, content);
  if (n < 0 || (size_t)n >= cap) {
    fl_free(line);
    return NULL;
  }
  *len = (size_t)n;
  return line;
}

size_t fl_test_mutations(const char *src, size_t n, const unsigned char *subst, size_t nsubst,
                         int (*check)(const char *line, size_t len, void *ctx), void *ctx,
                         size_t *tried) {
  char buf[1024];
  size_t yes = 0;
  *tried = 0;
  if (n + 1 >= sizeof buf)
    return 0;
  for (size_t at = 0; at < n; at++) {
    for (size_t j = 0; j < nsubst; j++) {
      memcpy(buf, src, n);
      buf[at] = (char)subst[j];
      yes += check(buf, n, ctx) != 0;
    }
    memcpy(buf, src, at); /* at dropped */
    memcpy(buf + at, src + at + 1, n - at - 1);
    yes += check(buf, n - 1, ctx) != 0;
    memcpy(buf, src, at + 1); /* at doubled */
    memcpy(buf + at + 1, src + at, n - at);
    yes += check(buf, n + 1, ctx) != 0;
    *tried += nsubst + 2;
  }
  return yes;
}
