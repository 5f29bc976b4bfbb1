/* test_roster.c — unit tests for gateway/core/roster.c (and the session checks
 * of session.c that decide which entity a name gets).
 *
 * Each test runs a real single-host gateway (fl_gw_new with a fresh state
 * dir and no broker URI) on its own libuv loop, and shuts it down after.
 * Covered: creating entities and finding them by gid (any case) and by
 * local name, groups from a comma list, the store record of an entity,
 * name resolution by gid, name and name@host, an unknown name, a name on
 * two hosts (ambiguous, with every candidate listed), and the persistence
 * round trip (a name that comes back after a restart resumes its gid, role
 * and groups). With a (stub) cross-host backend registered: a name behind
 * a host that is not pinned is FL_EUNPINNED with the command to pin it, and
 * unpinning a host drops its entities from resolve, list and status.
 * A roster of thousands: every entity is found by its gid, and the sorted
 * listing has every shown entity once, by name, with same-named ones in
 * roster order and dropped or removed ones left out, also after the roster
 * changed since the listing before (its order is kept between listings). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* After the four above: cmocka.h uses them without including them. */
#include <cmocka.h>

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/log.h"
#include "gateway/core/gw_internal.h"
#include "gateway/core/remote.h"
#include "gateway/core/roster.h"
#include "tests/support/test_gw.h"
#include "tests/support/test_util.h"

#define GID_A "0b7e3c1a-2f4d-4c8e-9a1b-3d5f7e9a1c2b"
#define GID_B "5c9d1e2f-3a4b-4c6d-8e7f-9a0b1c2d3e4f"

typedef struct fixture {
  fl_test_gw g;
} fixture;

static int setup(void **state) {
  *state = fl_test_fixture_new(sizeof(fixture), "roster");
  return *state ? 0 : -1;
}

static int teardown(void **state) { return fl_test_fixture_free(*state); }

/* A remote entity as presence would leave it. */
static fl_entity *remote_new(fl_gw *gw, const char *gid, const char *name, const char *host) {
  fl_entity *e = fl_entity_new(gw, gid, name);
  assert_non_null(e);
  e->remote = 1;
  fl_copy(e->host, sizeof e->host, host);
  return e;
}

static void test_entity_new_and_lookup(void **state) {
  fixture *f = *state;
  size_t before = f->g.gw->nentities;
  fl_entity *a = fl_entity_new(f->g.gw, GID_A, "alice");
  assert_non_null(a);
  assert_int_equal(f->g.gw->nentities, before + 1);
  assert_ptr_equal(fl_entity_by_gid(f->g.gw, GID_A), a);
  /* gids compare in any case: a UUID typed in capitals is the same one. */
  assert_ptr_equal(fl_entity_by_gid(f->g.gw, "0B7E3C1A-2F4D-4C8E-9A1B-3D5F7E9A1C2B"), a);
  assert_ptr_equal(fl_entity_local_by_name(f->g.gw, "alice"), a);
  assert_null(fl_entity_by_gid(f->g.gw, GID_B));
  assert_null(fl_entity_local_by_name(f->g.gw, "nobody"));
  assert_string_equal(fl_entity_host(a), "hostA");

  /* A remote entity is no local name. */
  fl_entity *r = remote_new(f->g.gw, GID_B, "rob", "hostB");
  assert_null(fl_entity_local_by_name(f->g.gw, "rob"));
  assert_ptr_equal(fl_entity_by_gid(f->g.gw, GID_B), r);
  assert_string_equal(fl_entity_host(r), "hostB");

  json_t *ref = fl_entity_ref_json(a);
  assert_string_equal(json_string_value(json_object_get(ref, "gid")), GID_A);
  assert_string_equal(json_string_value(json_object_get(ref, "name")), "alice");
  json_decref(ref);
}

static void test_groups_and_record(void **state) {
  fixture *f = *state;
  fl_entity *e = fl_entity_new(f->g.gw, GID_A, "alice");
  assert_non_null(e);
  char long_group[FL_MAX_GROUP_NAME + 8];
  memset(long_group, 'g', sizeof long_group - 1);
  long_group[sizeof long_group - 1] = '\0';
  char csv[256];
  snprintf(csv, sizeof csv, "backend,,reviewers,%s,ops", long_group);
  fl_entity_set_groups(e, csv);
  /* Empty and overlong items are dropped. */
  assert_int_equal(e->ngroups, 3);
  assert_string_equal(e->groups[0], "backend");
  assert_string_equal(e->groups[1], "reviewers");
  assert_string_equal(e->groups[2], "ops");
  assert_true(fl_entity_in_group(e, "ops"));
  assert_false(fl_entity_in_group(e, "op"));

  /* At most FL_MAX_GROUPS. */
  char many[1024] = "";
  for (int i = 0; i < FL_MAX_GROUPS + 4; i++) {
    size_t n = strlen(many);
    snprintf(many + n, sizeof many - n, "%sg%d", i ? "," : "", i);
  }
  fl_entity_set_groups(e, many);
  assert_int_equal(e->ngroups, FL_MAX_GROUPS);

  fl_entity_set_groups(e, "x,y");
  fl_copy(e->role, sizeof e->role, "worker");
  fl_entity_rec r;
  fl_entity_rec_of(e, &r);
  assert_string_equal(r.gid, GID_A);
  assert_string_equal(r.name, "alice");
  assert_string_equal(r.role, "worker");
  assert_string_equal(r.groups, "x,y");
  assert_string_equal(r.host, ""); /* local: no host recorded */
}

static void test_resolve_gid_name_host(void **state) {
  fixture *f = *state;
  fl_entity *a = fl_entity_new(f->g.gw, GID_A, "alice");
  fl_entity *r = remote_new(f->g.gw, GID_B, "rob", "hostB");
  fl_entity *got = NULL;
  char err[512] = "";
  assert_int_equal(fl_roster_resolve(f->g.gw, GID_A, &got, err, sizeof err), 0);
  assert_ptr_equal(got, a);
  assert_int_equal(fl_roster_resolve(f->g.gw, "alice", &got, err, sizeof err), 0);
  assert_ptr_equal(got, a);
  assert_int_equal(fl_roster_resolve(f->g.gw, "alice@hostA", &got, err, sizeof err), 0);
  assert_ptr_equal(got, a);
  assert_int_equal(fl_roster_resolve(f->g.gw, "rob", &got, err, sizeof err), 0);
  assert_ptr_equal(got, r);
  assert_int_equal(fl_roster_resolve(f->g.gw, "rob@hostB", &got, err, sizeof err), 0);
  assert_ptr_equal(got, r);
  assert_int_equal(fl_roster_resolve(f->g.gw, GID_B, &got, err, sizeof err), 0);
  assert_ptr_equal(got, r);
}

static void test_resolve_unknown(void **state) {
  fixture *f = *state;
  fl_entity_new(f->g.gw, GID_A, "alice");
  fl_entity *got = (fl_entity *)1;
  char err[512] = "";
  assert_int_equal(fl_roster_resolve(f->g.gw, "bob", &got, err, sizeof err), FL_ENOTFOUND);
  assert_null(got);
  /* Single-host mode: the error says where it looked and how to find out. */
  assert_non_null(strstr(err, "no entity 'bob' on this host"));
  assert_non_null(strstr(err, "list the roster"));
  /* The right name on the wrong host is unknown too. */
  assert_int_equal(fl_roster_resolve(f->g.gw, "alice@hostZ", &got, err, sizeof err), FL_ENOTFOUND);
  assert_non_null(strstr(err, "alice@hostZ"));
  /* A gid nobody has. */
  assert_int_equal(fl_roster_resolve(f->g.gw, GID_B, &got, err, sizeof err), FL_ENOTFOUND);
  /* The error fits any buffer, even none. */
  char tiny[8];
  assert_int_equal(fl_roster_resolve(f->g.gw, "bob", &got, tiny, sizeof tiny), FL_ENOTFOUND);
  assert_int_equal(strlen(tiny), sizeof tiny - 1);
  assert_int_equal(fl_roster_resolve(f->g.gw, "bob", &got, NULL, 0), FL_ENOTFOUND);
}

static void test_resolve_ambiguous(void **state) {
  fixture *f = *state;
  fl_entity *a = fl_entity_new(f->g.gw, GID_A, "dup");
  fl_entity *r = remote_new(f->g.gw, GID_B, "dup", "hostB");
  fl_entity *got = (fl_entity *)1;
  char err[512] = "";
  assert_int_equal(fl_roster_resolve(f->g.gw, "dup", &got, err, sizeof err), FL_EAMBIGUOUS);
  assert_null(got);
  assert_non_null(strstr(err, "more than one host"));
  assert_non_null(strstr(err, "dup@hostA"));
  assert_non_null(strstr(err, "dup@hostB"));
  /* Each candidate, as listed, resolves to one entity. */
  assert_int_equal(fl_roster_resolve(f->g.gw, "dup@hostA", &got, err, sizeof err), 0);
  assert_ptr_equal(got, a);
  assert_int_equal(fl_roster_resolve(f->g.gw, "dup@hostB", &got, err, sizeof err), 0);
  assert_ptr_equal(got, r);
  /* So does the gid. */
  assert_int_equal(fl_roster_resolve(f->g.gw, GID_B, &got, err, sizeof err), 0);
  assert_ptr_equal(got, r);
}

static void test_persist_round_trip(void **state) {
  fixture *f = *state;
  const char *groups[] = {"backend", "reviewers"};
  fl_ident id = {.name = "carol", .role = "worker", .ngroups = 2, .groups_given = 1};
  id.groups[0] = groups[0];
  id.groups[1] = groups[1];
  fl_client *c = NULL;
  char err[512] = "";
  assert_int_equal(fl_gw_attach(f->g.gw, &id, NULL, NULL, &c, err, sizeof err), 0);
  char gid[FL_ID_LEN];
  snprintf(gid, sizeof gid, "%s", fl_client_gid(c));
  assert_true(fl_is_uuid(gid));
  assert_string_equal(fl_client_name(c), "carol");

  /* A live name cannot be taken; the error names it and says it is in use. */
  fl_client *c2 = NULL;
  assert_int_equal(fl_gw_attach(f->g.gw, &id, NULL, NULL, &c2, err, sizeof err), FL_ENAMETAKEN);
  assert_null(c2);
  assert_non_null(strstr(err, "carol"));
  assert_non_null(strstr(err, "in use"));
  fl_gw_detach(f->g.gw, &c);
  assert_null(c);

  /* Restart: the name resumes its gid, role and groups from the store. */
  fl_test_gw_stop(&f->g);
  assert_int_equal(fl_test_gw_start(&f->g), 0);
  fl_entity *e = fl_entity_local_by_name(f->g.gw, "carol");
  assert_non_null(e);
  assert_string_equal(e->gid, gid);
  assert_string_equal(e->role, "worker");
  assert_int_equal(e->ngroups, 2);
  assert_string_equal(e->groups[0], "backend");
  assert_string_equal(e->groups[1], "reviewers");
  assert_null(e->client);

  /* Attaching again without groups keeps them, and keeps the gid. */
  fl_ident again = {.name = "carol"};
  assert_int_equal(fl_gw_attach(f->g.gw, &again, NULL, NULL, &c, err, sizeof err), 0);
  assert_string_equal(fl_client_gid(c), gid);
  assert_int_equal(e->ngroups, 2);
  fl_gw_detach(f->g.gw, &c);
}

static void test_attach_refusals(void **state) {
  fixture *f = *state;
  fl_client *c = (fl_client *)1;
  char err[512] = "";
  fl_ident bad_name = {.name = "no spaces"};
  assert_int_equal(fl_gw_attach(f->g.gw, &bad_name, NULL, NULL, &c, err, sizeof err), FL_EINVAL);
  assert_null(c);
  assert_non_null(strstr(err, "no spaces"));
  fl_ident uuid_name = {.name = GID_A};
  assert_int_equal(fl_gw_attach(f->g.gw, &uuid_name, NULL, NULL, &c, err, sizeof err), FL_EINVAL);
  fl_ident bad_gid = {.name = "dan", .gid = "not-a-uuid"};
  assert_int_equal(fl_gw_attach(f->g.gw, &bad_gid, NULL, NULL, &c, err, sizeof err), FL_EINVAL);
  assert_non_null(strstr(err, "not-a-uuid"));
  /* None of the refusals left an entity behind. */
  assert_null(fl_entity_local_by_name(f->g.gw, "dan"));
  /* The gateway's own words name no frontend setting. */
  assert_null(strstr(err, "FLEET_"));
}

/* ---- with other hosts: pins decide who is believed ---------------------- */

#define KEY_B "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
#define UNPINNED_B                                                                                 \
  "host 'hostB' is not pinned here: fleetctl peer add hostB KEY (run fleetctl identity on hostB "  \
  "for its key)"

/* The stub backend, but hostC's refused beats named carol. */
static int stub_claim(void *ctx, const char *name, char *host, size_t n) {
  (void)ctx;
  if (strcmp(name, "carol") != 0)
    return 0;
  snprintf(host, n, "hostC");
  return 1;
}
static fl_remote_ops stub_ops;

static int listed(fl_gw *gw, const char *name) {
  json_t *res = NULL;
  assert_int_equal(fl_gw_list(gw, NULL, &res), 0);
  json_t *e;
  size_t i;
  int found = 0;
  json_array_foreach(json_object_get(res, "entities"), i, e) found +=
      strcmp(json_string_value(json_object_get(e, "name")), name) == 0;
  json_decref(res);
  return found;
}

static void test_resolve_unpinned(void **state) {
  fixture *f = *state;
  stub_ops = fl_test_stub_ops;
  stub_ops.unpinned_claim = stub_claim;
  fl_gw_set_remote(f->g.gw, &stub_ops, NULL);
  fl_entity *a = fl_entity_new(f->g.gw, GID_A, "alice");
  fl_entity *r = remote_new(f->g.gw, GID_B, "rob", "hostB");
  fl_entity *got = (fl_entity *)1;
  char err[512] = "";

  /* name@host of a host nobody pinned: say so, and how to pin it. */
  assert_int_equal(fl_roster_resolve(f->g.gw, "bob@hostB", &got, err, sizeof err), FL_EUNPINNED);
  assert_null(got);
  assert_string_equal(err, UNPINNED_B);
  assert_int_equal(fl_roster_resolve(f->g.gw, "rob@hostB", &got, err, sizeof err), FL_EUNPINNED);
  /* This host needs no pin. */
  assert_int_equal(fl_roster_resolve(f->g.gw, "alice@hostA", &got, err, sizeof err), 0);
  assert_ptr_equal(got, a);

  /* Pinned: found, and a name it does not have is simply unknown. */
  assert_int_equal(fl_gw_peer_add(f->g.gw, "hostB", KEY_B, NULL, err, sizeof err), 0);
  assert_int_equal(fl_roster_resolve(f->g.gw, "rob@hostB", &got, err, sizeof err), 0);
  assert_ptr_equal(got, r);
  assert_int_equal(fl_roster_resolve(f->g.gw, "bob@hostB", &got, err, sizeof err), FL_ENOTFOUND);
  assert_true(listed(f->g.gw, "rob"));

  /* A bare name nobody here has, that an unpinned host announced. */
  assert_int_equal(fl_roster_resolve(f->g.gw, "carol", &got, err, sizeof err), FL_EUNPINNED);
  assert_non_null(strstr(err, "host 'hostC' is not pinned here: fleetctl peer add hostC KEY"));
  assert_non_null(strstr(err, "'carol'"));
  assert_int_equal(fl_roster_resolve(f->g.gw, "dave", &got, err, sizeof err), FL_ENOTFOUND);

  /* Unpinned: rob leaves the roster at once, by name, gid and list. */
  json_t *st = fl_gw_status(f->g.gw);
  json_int_t before = json_integer_value(json_object_get(st, "entities"));
  json_decref(st);
  assert_int_equal(fl_gw_peer_remove(f->g.gw, "hostB", err, sizeof err), 0);
  assert_true(r->dropped);
  assert_false(a->dropped);
  assert_int_equal(fl_roster_resolve(f->g.gw, "rob@hostB", &got, err, sizeof err), FL_EUNPINNED);
  assert_string_equal(err, UNPINNED_B);
  assert_int_equal(fl_roster_resolve(f->g.gw, "rob", &got, err, sizeof err), FL_EUNPINNED);
  assert_non_null(strstr(err, UNPINNED_B "; 'rob' is on that host"));
  assert_int_equal(fl_roster_resolve(f->g.gw, GID_B, &got, err, sizeof err), FL_EUNPINNED);
  assert_non_null(strstr(err, UNPINNED_B));
  assert_false(listed(f->g.gw, "rob"));
  assert_true(listed(f->g.gw, "alice"));
  st = fl_gw_status(f->g.gw);
  assert_int_equal(json_integer_value(json_object_get(st, "entities")), before - 1);
  json_decref(st);
  /* Dropped, not freed: the pointer stays valid. */
  assert_ptr_equal(fl_entity_by_gid(f->g.gw, GID_B), r);

  /* Pinned again, rob stays out until a beat of hostB brings it back
   * (presence.c); meanwhile its name is merely unknown. */
  assert_int_equal(fl_gw_peer_add(f->g.gw, "hostB", KEY_B, NULL, err, sizeof err), 0);
  assert_int_equal(fl_roster_resolve(f->g.gw, "rob", &got, err, sizeof err), FL_ENOTFOUND);
  assert_int_equal(fl_roster_resolve(f->g.gw, GID_B, &got, err, sizeof err), FL_ENOTFOUND);
  fl_gw_set_remote(f->g.gw, NULL, NULL);
}

/* Thousands of remote entities, as presence from a large fleet leaves them. */
static void test_many_and_sorted(void **state) {
  fixture *f = *state;
  fl_gw *gw = f->g.gw;
  enum { MANY = 3000 };
  static fl_entity *made[MANY];
  for (size_t i = 0; i < MANY; i++) {
    char gid[40], name[32], host[16];
    snprintf(gid, sizeof gid, "%08zx-aaaa-4bbb-8ccc-%012zx", (MANY - i) * 7919u, i);
    /* Names repeat across hosts: n0000..n0999 on each of three hosts. */
    snprintf(name, sizeof name, "n%04zu", (i * 37) % 1000);
    snprintf(host, sizeof host, "h%zu", i % 3);
    made[i] = remote_new(gw, gid, name, host);
  }
  for (size_t i = 0; i < MANY; i++)
    assert_ptr_equal(fl_entity_by_gid(gw, made[i]->gid), made[i]);
  fl_entity_set_dropped(made[5], 1);
  fl_entity_set_removed(made[6]);
  fl_entity **v = NULL;
  size_t n = 0;
  /* The order is kept between calls: changes made after the first one
   * (a rename, one dropped, one back, a new one) must show in the next. */
  assert_int_equal(fl_roster_sorted(gw, &v, &n), 0);
  fl_free(v);
  /* A rename alone shows in the next order. */
  fl_entity_set_name(made[12], "0-renamed");
  assert_int_equal(fl_roster_sorted(gw, &v, &n), 0);
  assert_ptr_equal(v[0], made[12]);
  fl_free(v);
  fl_entity_set_name(made[7], "a-first");
  fl_entity_set_name(made[8], made[9]->name);
  fl_entity_set_dropped(made[10], 1);
  fl_entity_set_dropped(made[5], 0);
  assert_int_equal(fl_roster_sorted(gw, &v, &n), 0);
  fl_free(v);
  fl_entity_set_removed(made[11]);
  remote_new(gw, "ffffffff-aaaa-4bbb-8ccc-000000000000", "n0500", "h9");
  assert_int_equal(fl_roster_sorted(gw, &v, &n), 0);
  assert_string_equal(v[0]->name, "0-renamed");
  assert_string_equal(v[1]->name, "a-first");
  size_t shown = 0;
  for (fl_entity *e = gw->entities; e; e = e->next)
    shown += !(e->dropped || e->removed);
  assert_int_equal(n, shown);
  for (size_t i = 0; i < n; i++) {
    assert_false(v[i]->dropped || v[i]->removed);
    if (i == 0)
      continue;
    int c = strcmp(v[i - 1]->name, v[i]->name);
    assert_true(c <= 0);
    if (c == 0) { /* same name: roster order, which is newest first */
      size_t before = 0;
      for (fl_entity *e = gw->entities; e && e != v[i]; e = e->next)
        before += e == v[i - 1];
      assert_int_equal(before, 1);
    }
  }
  fl_free(v);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_entity_new_and_lookup, setup, teardown),
      cmocka_unit_test_setup_teardown(test_groups_and_record, setup, teardown),
      cmocka_unit_test_setup_teardown(test_resolve_gid_name_host, setup, teardown),
      cmocka_unit_test_setup_teardown(test_resolve_unknown, setup, teardown),
      cmocka_unit_test_setup_teardown(test_resolve_ambiguous, setup, teardown),
      cmocka_unit_test_setup_teardown(test_persist_round_trip, setup, teardown),
      cmocka_unit_test_setup_teardown(test_attach_refusals, setup, teardown),
      cmocka_unit_test_setup_teardown(test_resolve_unpinned, setup, teardown),
      cmocka_unit_test_setup_teardown(test_many_and_sorted, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
