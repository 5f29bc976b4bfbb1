/* test_spawn.c — unit tests for gateway/verbs/spawn.c: what fl_gw_spawn refuses
 * before it launches anything (no session name, another host, an unknown
 * profile — the error names the ones there are —, a backend that cannot
 * spawn yet, a bad or taken name), and fl_gw_stop's rules: only the
 * spawner, the operator and whom authority.stop names may stop an agent (a
 * declared role grants nothing unless the config names it), and a stopped
 * agent is gone from resolve, fleet_list and the store (a restart does not
 * bring it back); the spawner and a spawnId are remembered across a
 * restart (the store's spawn record). The launch itself (a tmux window) is covered by
 * tests/integration/spawn.test.mjs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* After the four above: cmocka.h uses them without including them. */
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "gateway/core/gw_internal.h"
#include "gateway/core/roster.h"
#include "gateway/verbs/spawn.h"
#include "tests/support/test_gw.h"
#include "tests/support/test_util.h"

typedef struct fixture {
  fl_test_gw g;
} fixture;

static int setup(void **state) {
  fixture *f = fl_test_fixture_profiles(sizeof *f, "spawn");
  if (!f)
    return -1;
  *state = f;
  return 0;
}

static int teardown(void **state) { return fl_test_fixture_free(*state); }

static fl_client *attach(fixture *f, const char *name, const char *role) {
  fl_ident id = {.name = name, .role = role};
  fl_client *c = NULL;
  char err[512] = "";
  assert_int_equal(fl_gw_attach(f->g.gw, &id, NULL, NULL, &c, err, sizeof err), 0);
  return c;
}

static int spawn(fixture *f, fl_client *c, const char *profile, const char *host, const char *name,
                 char *err, size_t errlen) {
  json_t *result = NULL;
  fl_wait *wait = NULL;
  int rc = fl_gw_spawn(f->g.gw, c, profile, host, name, NULL, -1, NULL, NULL, &result, &wait, err,
                       errlen);
  assert_null(result);
  assert_null(wait);
  return rc;
}

static void test_spawn_refusals(void **state) {
  fixture *f = *state;
  char err[512] = "";
  fl_client *anon = NULL;
  assert_int_equal(fl_gw_attach(f->g.gw, NULL, NULL, NULL, &anon, err, sizeof err), 0);
  assert_int_equal(spawn(f, anon, "claude", NULL, NULL, err, sizeof err), FL_EINVAL);
  assert_non_null(strstr(err, "named session"));

  fl_client *lead = attach(f, "lead", "lead");
  /* Without a broker another host cannot be reached. */
  assert_int_equal(spawn(f, lead, "claude", "hostB", NULL, err, sizeof err), FL_EBROKER);
  assert_non_null(strstr(err, "unknown host 'hostB'"));
  assert_non_null(strstr(err, "no broker"));

  assert_int_equal(spawn(f, lead, "nope", NULL, NULL, err, sizeof err), FL_ENOTFOUND);
  assert_non_null(strstr(err, "unknown profile 'nope'"));
  assert_non_null(strstr(err, "claude, runner"));

  assert_int_equal(spawn(f, lead, "runner", NULL, NULL, err, sizeof err), FL_EINVAL);
  assert_non_null(strstr(err, "not built yet"));

  assert_int_equal(spawn(f, lead, "claude", NULL, "bad name!", err, sizeof err), FL_EINVAL);
  assert_non_null(strstr(err, "not valid"));
  assert_int_equal(spawn(f, lead, "claude", NULL, "lead", err, sizeof err), FL_ENAMETAKEN);
  assert_non_null(strstr(err, "taken"));
  assert_int_equal(f->g.gw->spawns == NULL, 1);

  fl_gw_detach(f->g.gw, &lead);
  fl_gw_detach(f->g.gw, &anon);
}

static int stop(fixture *f, fl_client *c, const char *to, char *err, size_t errlen) {
  json_t *result = NULL;
  fl_wait *wait = NULL;
  int rc = fl_gw_stop(f->g.gw, c, to, NULL, NULL, &result, &wait, err, errlen);
  assert_null(wait); /* a local stop answers at once */
  if (rc == 0) {
    assert_string_equal(json_string_value(json_object_get(result, "status")), "stopped");
    assert_string_equal(json_string_value(json_object_get(result, "name")), to);
  } else {
    assert_null(result);
  }
  json_decref(result);
  return rc;
}

static int listed(fixture *f, fl_client *c, const char *name) {
  json_t *list = NULL;
  assert_int_equal(fl_gw_list(f->g.gw, c, &list), 0);
  size_t i;
  json_t *e;
  int found = 0;
  json_array_foreach(json_object_get(list, "entities"), i, e) {
    if (strcmp(json_string_value(json_object_get(e, "name")), name) == 0)
      found = 1;
  }
  json_decref(list);
  return found;
}

static void test_stop_rules(void **state) {
  fixture *f = *state;
  char err[512] = "";
  fl_client *boss = attach(f, "boss", "architect");
  fl_client *peer = attach(f, "peer", "worker");
  fl_client *orch = attach(f, "orch", "orchestrator");
  fl_client *w1 = attach(f, "w1", "worker");
  fl_client *w2 = attach(f, "w2", "worker");
  /* w1 and w2 as boss spawned them. */
  snprintf(fl_entity_local_by_name(f->g.gw, "w1")->spawn.by, FL_ID_LEN, "%s", fl_client_gid(boss));
  snprintf(fl_entity_local_by_name(f->g.gw, "w2")->spawn.by, FL_ID_LEN, "%s", fl_client_gid(boss));
  fl_gw_detach(f->g.gw, &w1);
  fl_gw_detach(f->g.gw, &w2);

  /* Someone else may not; the message says who may. */
  assert_int_equal(stop(f, peer, "w1", err, sizeof err), FL_EINVAL);
  assert_non_null(strstr(err, "only the agent that spawned 'w1'"));
  assert_int_equal(stop(f, peer, "peer", err, sizeof err), FL_EINVAL);
  assert_int_equal(stop(f, peer, "nobody", err, sizeof err), FL_ENOTFOUND);

  /* The spawner may. A declared orchestrator may not stop what it did not
   * spawn, until this host's config names the role. */
  assert_int_equal(stop(f, boss, "w1", err, sizeof err), 0);
  assert_int_equal(stop(f, orch, "w2", err, sizeof err), FL_EINVAL);
  assert_non_null(strstr(err, "a role grants nothing"));
  assert_int_equal(f->g.gw->counters[FL_C_STOPS_REFUSED], 2);
  fl_authority *a = &f->g.gw->cfg.auth_stop;
  snprintf(a->v[0], sizeof a->v[0], "role:orchestrator");
  a->n = 1;
  a->set = 1;
  assert_int_equal(stop(f, orch, "w2", err, sizeof err), 0);
  assert_int_equal(stop(f, orch, "peer", err, sizeof err), 0);
  assert_int_equal(f->g.gw->counters[FL_C_STOPS], 3);
  /* An entry for a remote role would be only that host's say-so: a
   * session of another host never matches role:, only its host or
   * name@host. */
  assert_false(fl_authority_grants(f->g.gw, a, "orch", "hostB", NULL));
  snprintf(a->v[1], sizeof a->v[1], "lead@hostB");
  a->n = 2;
  assert_true(fl_authority_grants(f->g.gw, a, "lead", "hostB", NULL));
  assert_false(fl_authority_grants(f->g.gw, a, "lead", "hostC", NULL));
  memset(a, 0, sizeof *a);

  /* Gone: from resolve (also by gid), the list and the store. */
  fl_entity *e = NULL;
  assert_int_equal(fl_roster_resolve(f->g.gw, "w1", &e, err, sizeof err), FL_ENOTFOUND);
  assert_false(listed(f, boss, "w1"));
  assert_false(listed(f, boss, "peer"));
  assert_true(listed(f, boss, "boss"));
  fl_entity_rec rec;
  assert_int_equal(fl_store_entity_by_name(f->g.gw->store, "w1", &rec), FL_ENOTFOUND);
  /* Its name is free again. */
  assert_null(fl_entity_local_by_name(f->g.gw, "w1"));

  fl_gw_detach(f->g.gw, &boss);
  fl_gw_detach(f->g.gw, &peer);
  fl_gw_detach(f->g.gw, &orch);
  fl_test_gw_stop(&f->g);
  assert_int_equal(fl_test_gw_start(&f->g), 0);
  assert_null(fl_entity_local_by_name(f->g.gw, "w1"));
  assert_null(fl_entity_local_by_name(f->g.gw, "peer"));
  assert_non_null(fl_entity_local_by_name(f->g.gw, "boss"));
}

/* The spawner is read back from the store's spawn record after a restart
 * (it may still stop its agent; someone else still may not), and a spawnId
 * the store knows is answered by fl_spawn_known, which is what makes a
 * repeated SPAWN start nothing new. */
static void test_spawner_survives_restart(void **state) {
  fixture *f = *state;
  char err[512] = "";
  fl_client *boss = attach(f, "boss", "architect");
  fl_client *peer = attach(f, "peer", "worker");
  fl_client *w1 = attach(f, "w1", "worker");
  char boss_gid[FL_ID_LEN], w1_gid[FL_ID_LEN];
  snprintf(boss_gid, sizeof boss_gid, "%s", fl_client_gid(boss));
  snprintf(w1_gid, sizeof w1_gid, "%s", fl_client_gid(w1));
  fl_spawn_rec r = {.profile = "claude", .name = "w1", .state = "ready"};
  snprintf(r.gid, sizeof r.gid, "%s", w1_gid);
  snprintf(r.by, sizeof r.by, "%s", boss_gid);
  r.ts_ms = fl_now_ms();
  assert_int_equal(fl_store_spawn_put(f->g.gw->store, &r), 0);
  fl_gw_detach(f->g.gw, &w1);
  fl_gw_detach(f->g.gw, &boss);
  fl_gw_detach(f->g.gw, &peer);
  fl_test_gw_stop(&f->g);
  assert_int_equal(fl_test_gw_start(&f->g), 0);

  /* Known: answered with the agent's state, nothing launched. */
  json_t *known = NULL;
  assert_int_equal(fl_spawn_known(f->g.gw, w1_gid, &known, err, sizeof err), 1);
  assert_non_null(known);
  assert_string_equal(json_string_value(json_object_get(known, "name")), "w1");
  assert_string_equal(json_string_value(json_object_get(known, "profile")), "claude");
  assert_string_equal(json_string_value(json_object_get(known, "status")), "ready");
  json_decref(known);
  assert_null(f->g.gw->spawns);
  assert_int_equal(
      fl_spawn_known(f->g.gw, "00000000-0000-4000-8000-000000000009", &known, err, sizeof err), 0);

  boss = attach(f, "boss", "architect");
  peer = attach(f, "peer", "worker");
  fl_entity *e = fl_entity_local_by_name(f->g.gw, "w1");
  assert_non_null(e);
  assert_string_equal(e->spawn.by, ""); /* not attached since the restart */
  assert_false(fl_spawn_may_stop(f->g.gw, fl_entity_local_by_name(f->g.gw, "peer"), 0, e));
  assert_true(fl_spawn_may_stop(f->g.gw, fl_entity_local_by_name(f->g.gw, "boss"), 0, e));
  /* This host's operator may stop any local agent. */
  assert_true(fl_spawn_may_stop(f->g.gw, fl_entity_local_by_name(f->g.gw, "peer"), 1, e));
  /* Another host that signs a STOP in the spawner's gid is not the spawner
   * (the record says it asked from here), nor is an operator there. */
  fl_entity forged;
  memset(&forged, 0, sizeof forged);
  snprintf(forged.gid, sizeof forged.gid, "%s", boss_gid);
  snprintf(forged.name, sizeof forged.name, "boss");
  snprintf(forged.role, sizeof forged.role, "lead");
  snprintf(forged.host, sizeof forged.host, "hostX");
  forged.remote = 1;
  assert_false(fl_spawn_may_stop(f->g.gw, &forged, 1, e));
  assert_int_equal(stop(f, peer, "w1", err, sizeof err), FL_EINVAL);
  assert_int_equal(stop(f, boss, "w1", err, sizeof err), 0);
  /* Stopped: the record says so, and a repeat is refused with that. */
  assert_int_equal(fl_store_spawn_get(f->g.gw->store, w1_gid, &r), 0);
  assert_string_equal(r.state, "stopped");
  assert_int_equal(fl_spawn_known(f->g.gw, w1_gid, &known, err, sizeof err), 1);
  assert_null(known);
  assert_non_null(strstr(err, "stopped"));
  fl_gw_detach(f->g.gw, &boss);
  fl_gw_detach(f->g.gw, &peer);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_spawn_refusals, setup, teardown),
      cmocka_unit_test_setup_teardown(test_stop_rules, setup, teardown),
      cmocka_unit_test_setup_teardown(test_spawner_survives_restart, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
