/* test_store.c — see test_store.h. */
#include "tests/support/test_store.h"

#include <stdio.h>
#include <string.h>

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

int fl_test_store_put(fl_store *s, const char *id, const char *to) {
  fl_msg m;
  memset(&m, 0, sizeof m);
  snprintf(m.msg_id, sizeof m.msg_id, "%s", id);
  snprintf(m.to_gid, sizeof m.to_gid, "%s", to);
  snprintf(m.from_gid, sizeof m.from_gid, "X");
  snprintf(m.kind, sizeof m.kind, "SEND");
  m.ts_ms = 1000;
  m.content = (char *)"body";
  m.content_len = 4;
  return fl_store_put(s, &m);
}
