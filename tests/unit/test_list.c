/* test_list.c — unit tests for gateway/core/list.c, fleet_list's result.
 *
 * The result is written straight as JSON; it must be the very bytes that
 * building it as a jansson tree and dumping it gave before (old_list below
 * is that builder, kept here as the reference), for a roster that has every
 * case the result treats apart: an online session (self, lastSeen now) and
 * an anonymous caller (self null), an offline local entity with messages
 * held for it, one never seen (no lastSeen), remote entities whose status
 * the cross-host backend gives, same names on several hosts, groups, dropped
 * and removed entities (left out), this host's spawn profiles and other
 * hosts from the backend (the coordinator's part is covered by
 * tests/integration/coordinator.test.mjs). fl_gw_list's tree is the same
 * JSON, and the order
 * stays right when the roster changes between two listings (a new entity, a
 * rename, one dropped and one back). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* After the four above: cmocka.h uses them without including them. */
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/time.h"
#include "gateway/config/config.h"
#include "gateway/core/gw_internal.h"
#include "gateway/core/remote.h"
#include "gateway/core/roster.h"
#include "gateway/store/store.h"
#include "tests/support/test_gw.h"
#include "tests/support/test_util.h"

typedef struct fixture {
  fl_test_gw g;
} fixture;

static int setup(void **state) {
  fixture *f = fl_test_fixture_profiles(sizeof *f, "list");
  if (!f)
    return -1;
  *state = f;
  return 0;
}

static int teardown(void **state) { return fl_test_fixture_free(*state); }

/* ---- a cross-host backend that only answers status and hosts ------------- */

/* Remote entities whose name ends in an even digit are online. */
static const char *stub_status(void *ctx, const fl_entity *e) {
  (void)ctx;
  size_t n = strlen(e->name);
  return n && (e->name[n - 1] - '0') % 2 == 0 ? "online" : "offline";
}
static void stub_hosts(void *ctx, fl_jw *w) {
  (void)ctx;
  json_t *hosts =
      json_loads("[{\"host\":\"hostB\",\"self\":false,\"status\":\"online\",\"profiles\":"
                 "[{\"name\":\"w\",\"backend\":\"tmux\",\"role\":\"worker\",\"groups\":[\"g\"]}]},"
                 "{\"host\":\"hostC\",\"self\":false,\"status\":\"unknown\",\"profiles\":[]}]",
                 0, NULL);
  size_t i;
  json_t *h;
  json_array_foreach(hosts, i, h) fl_jw_json(w, h);
  json_decref(hosts);
}
/* The stub backend, with the status and hosts above. */
static fl_remote_ops stub_ops;

/* ---- the reference: fleet_list as the jansson tree it used to be ---------- */

static int by_name_then_roster(const void *a, const void *b) {
  const fl_entity *const *x = a, *const *y = b;
  int c = strcmp((*x)->name, (*y)->name);
  if (c)
    return c;
  /* The roster is newest first: the later made goes first. */
  for (const fl_entity *e = (*x)->gw->entities; e; e = e->next) {
    if (e == *x)
      return -1;
    if (e == *y)
      return 1;
  }
  return 0;
}

static json_t *old_list(fl_gw *gw, fl_client *c) {
  size_t n = 0;
  for (fl_entity *e = gw->entities; e; e = e->next)
    n += !(e->dropped || e->removed);
  fl_entity **v = calloc(n ? n : 1, sizeof *v);
  assert_non_null(v);
  size_t k = 0;
  for (fl_entity *e = gw->entities; e; e = e->next)
    if (!(e->dropped || e->removed))
      v[k++] = e;
  qsort(v, n, sizeof *v, by_name_then_roster);
  json_t *arr = json_array();
  long long now = fl_now_ms();
  for (k = 0; k < n; k++) {
    fl_entity *e = v[k];
    size_t held = 0;
    if (!e->remote)
      fl_store_count(gw->store, e->gid, now, &held);
    json_t *groups = json_array();
    for (size_t i = 0; i < e->ngroups; i++)
      json_array_append_new(groups, json_string(e->groups[i]));
    const char *status = e->remote ? fl_remote_status(gw, e) : e->client ? "online" : "offline";
    json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:o, s:s, s:b, s:I}", "gid", e->gid, "name",
                          e->name, "role", e->role, "host", fl_entity_host(e), "groups", groups,
                          "status", status, "self", c && c->entity == e, "held", (json_int_t)held);
    long long seen = e->client ? now : e->last_seen_ms;
    if (o && seen) {
      char ts[32];
      fl_rfc3339(seen, ts);
      json_object_set_new(o, "lastSeen", json_string(ts));
    }
    json_array_append_new(arr, o);
  }
  free(v);
  json_t *hosts = json_array(), *mine = fl_config_profiles_json(&gw->cfg);
  json_t *others = fl_remote_hosts(gw);
  json_array_append_new(hosts, json_pack("{s:s, s:b, s:s, s:O}", "host", gw->cfg.host_id, "self", 1,
                                         "status", "online", "profiles", mine));
  json_array_extend(hosts, others);
  json_decref(mine);
  json_decref(others);
  json_t *r = json_pack("{s:s, s:s?, s:o, s:o}", "host", gw->cfg.host_id, "self",
                        (c && c->entity) ? c->entity->gid : NULL, "entities", arr, "hosts", hosts);
  assert_non_null(r);
  return r;
}

/* Both builders read the clock: an online session's lastSeen is "now".
 * Every lastSeen in [t0, t1], the window the builders ran in, becomes X's,
 * so the rest can be compared byte for byte. */
static void mask_now(char *s, long long t0, long long t1) {
  static const char key[] = "\"lastSeen\":\"";
  for (char *p = strstr(s, key); p; p = strstr(p, key)) {
    p += sizeof key - 1;
    char ts[FL_TS_LEN];
    size_t n = strcspn(p, "\"");
    assert_true(n < sizeof ts);
    memcpy(ts, p, n);
    ts[n] = '\0';
    long long ms;
    assert_int_equal(fl_rfc3339_parse(ts, &ms), 0);
    if (ms >= t0 && ms <= t1)
      memset(p, 'X', n);
  }
}

/* The written result is the reference's dump, byte for byte, and
 * fl_gw_list's tree dumps to it too. */
static void check_same(fl_gw *gw, fl_client *c) {
  long long t0 = fl_now_ms();
  json_t *old = old_list(gw, c);
  fl_json_out out;
  assert_int_equal(fl_gw_list_json(gw, c, &out), 0);
  json_t *tree = NULL;
  assert_int_equal(fl_gw_list(gw, c, &tree), 0);
  long long t1 = fl_now_ms();
  char *got = out.json;
  size_t len = out.len;
  assert_int_equal(len, strlen(got));
  /* The text made as the JSON was written (kept objects and fresh ones)
   * is that JSON escaped, byte for byte. */
  char *esc = fl_malloc(fl_json_escaped_len(got, len) + 1);
  assert_non_null(esc);
  size_t elen = (size_t)(fl_json_escape(esc, got, len) - esc);
  assert_non_null(out.text);
  assert_int_equal(out.text_len, elen);
  assert_memory_equal(out.text, esc, elen);
  fl_free(esc);
  char *want = json_dumps(old, JSON_COMPACT), *again = json_dumps(tree, JSON_COMPACT);
  assert_non_null(want);
  assert_non_null(again);
  mask_now(got, t0, t1);
  mask_now(want, t0, t1);
  mask_now(again, t0, t1);
  assert_string_equal(got, want);
  assert_string_equal(again, want);
  fl_free(again);
  fl_free(want);
  fl_json_out_free(&out);
  json_decref(tree);
  json_decref(old);
}

static fl_entity *remote_new(fl_gw *gw, const char *gid, const char *name, const char *host) {
  fl_entity *e = fl_entity_new(gw, gid, name);
  assert_non_null(e);
  e->remote = 1;
  fl_copy(e->host, sizeof e->host, host);
  fl_copy(e->role, sizeof e->role, "worker");
  return e;
}

static fl_client *attach(fixture *f, const char *name, const char *role, const char *groups) {
  fl_ident id = {.name = name, .role = role};
  char buf[64];
  snprintf(buf, sizeof buf, "%s", groups ? groups : "");
  for (char *tok = strtok(buf, ","); tok && id.ngroups < 16; tok = strtok(NULL, ","))
    id.groups[id.ngroups++] = tok;
  id.groups_given = groups != NULL;
  fl_client *c = NULL;
  char err[512] = "";
  assert_int_equal(fl_gw_attach(f->g.gw, &id, NULL, NULL, &c, err, sizeof err), 0);
  return c;
}

static void test_empty_roster(void **state) {
  fixture *f = *state;
  check_same(f->g.gw, NULL);
}

static void test_same_bytes_as_the_tree(void **state) {
  fixture *f = *state;
  fl_gw *gw = f->g.gw;
  stub_ops = fl_test_stub_ops;
  stub_ops.status = stub_status;
  stub_ops.hosts = stub_hosts;
  fl_gw_set_remote(gw, &stub_ops, NULL);
  fl_client *lead = attach(f, "lead", "lead", "core,ops");
  fl_client *gone = attach(f, "gone", "worker", NULL);
  fl_gw_detach(gw, &gone); /* offline, last seen now */
  fl_entity *never = fl_entity_new(gw, "00000000-1111-4222-8333-444455556666", "never");
  assert_non_null(never);
  fl_copy(never->role, sizeof never->role, "worker");

  /* Two messages held for the offline one. */
  for (int i = 0; i < 2; i++) {
    json_t *res = NULL;
    fl_wait *wait = NULL;
    char err[256] = "";
    assert_int_equal(
        fl_gw_send(gw, lead, "gone", "hello", 0, NULL, NULL, &res, &wait, err, sizeof err), 0);
    json_decref(res);
  }

  /* Remote entities: names repeat on three hosts, various groups and ages. */
  long long now = fl_now_ms();
  for (int i = 0; i < 300; i++) {
    char gid[40], name[32], host[16];
    snprintf(gid, sizeof gid, "%08x-aaaa-4bbb-8ccc-%012x", (unsigned)(300 - i) * 7919u, i);
    snprintf(name, sizeof name, "w%03d", (i * 37) % 100);
    snprintf(host, sizeof host, "host%c", "BCD"[i % 3]);
    fl_entity *e = remote_new(gw, gid, name, host);
    e->last_seen_ms = i % 5 == 0 ? 0 : now - i * 1234;
    char groups[64];
    snprintf(groups, sizeof groups, i % 4 == 0 ? "" : "g%d,all", i % 3);
    fl_entity_set_groups(e, groups);
    if (i == 17)
      fl_entity_set_dropped(e, 1);
    if (i == 18)
      fl_entity_set_removed(e);
  }
  check_same(gw, lead);
  check_same(gw, NULL);

  /* The roster changes between listings: the order follows. */
  fl_entity *late = remote_new(gw, "99999999-aaaa-4bbb-8ccc-000000000001", "w050", "hostB");
  late->last_seen_ms = now;
  check_same(gw, lead);
  /* Presence renames, and forgets the kept object as it does. */
  fl_entity_set_name(late, "aaa-first");
  fl_entity_listed_forget(late);
  check_same(gw, lead);
  fl_entity_set_name(late, "w010"); /* same name as others, newest */
  fl_entity_listed_forget(late);
  check_same(gw, lead);
  /* A beat moves lastSeen on: the kept object is written again. */
  late->last_seen_ms = now - 777;
  check_same(gw, lead);
  fl_entity_set_dropped(late, 1);
  fl_entity_set_removed(never);
  check_same(gw, lead);
  fl_entity_set_dropped(late, 0);
  check_same(gw, lead);

  fl_gw_detach(gw, &lead);
  check_same(gw, NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_empty_roster, setup, teardown),
      cmocka_unit_test_setup_teardown(test_same_bytes_as_the_tree, setup, teardown),
  };
  return cmocka_run_group_tests_name("list", tests, NULL, NULL);
}
