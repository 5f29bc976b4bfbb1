/* fuzz_presence.c — fuzz target for the body of a presence beat.
 *
 * A beat's body comes from another host; its signature says who sent it,
 * not that it is well formed. The input is such a body. It goes through
 * fl_beat_parse, and every beat the parser yields is taken into the
 * roster of a real single-host gateway (made once, in a temporary state
 * dir, removed at exit) under a gid derived from the input, so the roster
 * fills up and its cap is reached under libFuzzer. Invariants, checked on
 * every input (a violation aborts):
 *   - a parse either refuses (and leaves an empty beat) or yields a name,
 *     role and groups that all pass fl_name_valid, with at most
 *     FL_MAX_GROUPS groups;
 *   - taking a parsed beat either refuses or leaves a remote entity with
 *     exactly that name, role and groups;
 *   - the roster never holds more than FL_MAX_ENTITIES entities;
 *   - nothing leaks (the sanitizers' leak check at exit).
 * The same input is parsed as a host beat (its profiles and the entities
 * it lists: every listed gid a UUID, every listed beat valid as above, at
 * most FL_MAX_BEAT_AGENTS), and, cut at its first NUL, fed to the
 * freshness check as a timestamp. Built as a libFuzzer target with -DFLEET_FUZZ=ON (clang), and
 * always as a replay test that runs the seed corpus plus deterministic
 * mutations. */
#include <sodium.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/log.h"
#include "common/time.h"
#include "gateway/core/gw_internal.h"
#include "gateway/fabric/presence.h"
#include "tests/support/test_gw.h"
#include "tests/support/test_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct {
  fl_test_gw g;
  fl_presence *p;
} fz;

static void fz_cleanup(void) {
  fl_presence_free(&fz.p);
  fl_test_gw_close(&fz.g);
}

static void fz_init(void) {
  if (fl_test_init() != 0 || fl_test_gw_open(&fz.g, "fuzz-presence") != 0)
    abort();
  if (fl_presence_new(fz.g.gw, NULL, 1000, 60000, &fz.p) != 0)
    abort();
  fl_presence_link(fz.p, 1);
  atexit(fz_cleanup);
}

static void fz_check(int ok) {
  if (!ok)
    abort();
}

/* A gid from the input's bytes (FNV-1a), so equal bodies share an entity. */
static void fz_gid(const uint8_t *data, size_t size, char gid[FL_ID_LEN]) {
  uint64_t h1 = 0xcbf29ce484222325ull, h2 = 0x84222325cbf29ce4ull;
  for (size_t i = 0; i < size; i++) {
    h1 = (h1 ^ data[i]) * 0x100000001b3ull;
    h2 = (h2 ^ data[i]) * 0x100000001b3ull + 1;
  }
  snprintf(gid, FL_ID_LEN, "%08x-%04x-4%03x-8%03x-%012llx", (unsigned)(h1 >> 32),
           (unsigned)(h1 >> 16) & 0xffff, (unsigned)h1 & 0xfff, (unsigned)(h2 >> 52) & 0xfff,
           (unsigned long long)(h2 & 0xffffffffffffull));
}

static void fz_check_beat(const fl_beat *b) {
  fz_check(fl_name_valid(b->name, FL_MAX_NAME));
  fz_check(fl_name_valid(b->role, FL_MAX_ROLE));
  fz_check(b->ngroups <= FL_MAX_GROUPS);
  for (size_t i = 0; i < b->ngroups; i++)
    fz_check(fl_name_valid(b->groups[i], FL_MAX_GROUP_NAME));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!fz.g.gw)
    fz_init();
  fl_beat b;
  int rc = fl_beat_parse((const char *)data, size, &b);
  if (rc != 0) {
    fz_check(rc == FL_EINVAL);
    fz_check(b.name[0] == '\0' && b.ngroups == 0);
  } else {
    fz_check_beat(&b);
    char gid[FL_ID_LEN];
    fz_gid(data, size, gid);
    rc = fl_presence_take(fz.p, "hostB", gid, &b, fl_now_ms());
    fz_check(rc == 0 || rc == FL_EFULL || rc == FL_EINVAL || rc == FL_ENOMEM);
    fl_entity *e = fl_entity_by_gid(fz.g.gw, gid);
    if (rc == 0) {
      fz_check(e && e->remote && strcmp(e->host, "hostB") == 0);
      fz_check(strcmp(e->name, b.name) == 0 && strcmp(e->role, b.role) == 0);
      fz_check(e->ngroups == b.ngroups);
      for (size_t i = 0; i < e->ngroups; i++)
        fz_check(strcmp(e->groups[i], b.groups[i]) == 0);
    }
  }
  fz_check(fz.g.gw->nentities <= FL_MAX_ENTITIES);

  /* The same bytes as a host beat of hostB. */
  fl_gateway_beat *gb = malloc(sizeof *gb);
  fz_check(gb != NULL);
  rc = fl_beat_parse_gateway((const char *)data, size, "hostB", gb);
  fz_check(rc == 0 || rc == FL_EINVAL || rc == FL_ENOMEM);
  if (rc == 0) {
    fz_check(gb->nprofiles <= FL_MAX_PROFILES && gb->nagents <= FL_MAX_BEAT_AGENTS);
    fz_check(gb->lists_agents || (gb->nagents == 0 && gb->agents_dropped == 0));
    for (size_t i = 0; i < gb->nagents; i++) {
      fz_check(fl_is_uuid(gb->agents[i].gid));
      fz_check_beat(&gb->agents[i].b);
    }
    fl_beat_gateway_clear(gb);
  } else {
    fz_check(gb->agents == NULL && gb->nagents == 0);
  }
  free(gb);

  /* The same bytes as a timestamp. */
  char ts[64];
  size_t n = size < sizeof ts - 1 ? size : sizeof ts - 1;
  memcpy(ts, data, n);
  ts[n] = '\0';
  char exp[FL_TS_LEN];
  long long now = fl_now_ms(), got = 0, newest = now;
  fl_rfc3339(now + 1000, exp);
  rc = fl_beat_fresh(ts, exp, now, &newest, &got);
  fz_check(rc == 0 || rc == FL_EINVAL || rc == FL_EDUP);
  if (rc == 0)
    fz_check(got >= newest && got != 0);
  return 0;
}
