/* test_util.c — shared test helpers (see test_util.h). */
#include "tests/support/test_util.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
