/* test_store.c — see test_store.h. */
#include "tests/support/test_store.h"

#include <stdio.h>

#include "common/alloc.h"
#include "tests/support/test_util.h"

int fl_test_store_open(const char *tag, char *dir, size_t dn, char *path, size_t pn,
                       fl_store **out) {
  fl_alloc_init();
  *out = NULL;
  if (fl_test_tmpdir(tag, dir, dn) != 0)
    return -1;
  snprintf(path, pn, "%s/holds.db", dir);
  if (fl_store_open(path, out) != 0) {
    fl_test_rmtree(dir);
    return -1;
  }
  return 0;
}
