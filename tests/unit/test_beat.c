/* test_beat.c — unit tests for gateway/fabric/beat.c, the presence beat bodies.
 *
 * A host beat built with the builders parses back to what went in (the
 * profiles, each listed entity with its gid, status and delivery); a body
 * without `agents` says so; entries past FL_MAX_BEAT_AGENTS and malformed
 * ones are dropped and counted; a body naming another host is refused. The
 * entity-beat parser itself is covered in test_presence.c. */
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
#include "gateway/fabric/beat.h"

/* A fixed UUID for entry i. */
static void gid_of(size_t i, char gid[FL_ID_LEN]) {
  snprintf(gid, FL_ID_LEN, "00000000-0000-4000-8000-%012zx", i);
}

static char *dump(json_t *o) {
  assert_non_null(o);
  char *t = json_dumps(o, JSON_COMPACT);
  json_decref(o);
  assert_non_null(t);
  return t;
}

static void test_round_trip(void **state) {
  (void)state;
  static const char groups[2][FL_MAX_GROUP_NAME + 1] = {"ops", "db"};
  json_t *agents = json_array();
  char g0[FL_ID_LEN], g1[FL_ID_LEN];
  gid_of(0, g0);
  gid_of(1, g1);
  assert_int_equal(
      fl_beat_list(agents, g0, fl_beat_json("alice", "worker", groups, 2, "online", "inject")), 0);
  assert_int_equal(fl_beat_list(agents, g1, fl_beat_json("bob", "lead", NULL, 0, "offline", NULL)),
                   0);
  json_t *profiles = json_pack("[{s:s, s:s, s:s, s:[s]}]", "name", "w", "backend", "tmux", "role",
                               "worker", "groups", "ops");
  char *text = dump(fl_beat_gateway_json("hostB", "0.1.0", 2, profiles, agents));
  fl_gateway_beat b;
  assert_int_equal(fl_beat_parse_gateway(text, strlen(text), "hostB", &b), 0);
  assert_true(b.lists_agents);
  assert_int_equal(b.nprofiles, 1);
  assert_string_equal(b.profiles[0].name, "w");
  assert_int_equal(b.nagents, 2);
  assert_int_equal(b.agents_dropped, 0);
  assert_string_equal(b.agents[0].gid, g0);
  assert_string_equal(b.agents[0].b.name, "alice");
  assert_int_equal(b.agents[0].b.ngroups, 2);
  assert_string_equal(b.agents[0].b.groups[1], "db");
  assert_true(b.agents[0].b.online && b.agents[0].b.inject);
  assert_string_equal(b.agents[1].b.role, "lead");
  assert_false(b.agents[1].b.online || b.agents[1].b.inject || b.agents[1].b.gone);
  fl_beat_gateway_clear(&b);
  /* Another host's name in the body: refused whole. */
  assert_int_equal(fl_beat_parse_gateway(text, strlen(text), "hostC", &b), FL_EINVAL);
  assert_null(b.agents);
  fl_free(text);

  /* An entity body alone parses with the entity parser. */
  text = dump(fl_beat_json("carol", "agent", groups, 1, "gone", NULL));
  assert_string_equal(text, "{\"name\":\"carol\",\"role\":\"agent\",\"groups\":[\"ops\"],"
                            "\"status\":\"gone\"}");
  fl_beat e;
  assert_int_equal(fl_beat_parse(text, strlen(text), &e), 0);
  assert_true(e.gone);
  fl_free(text);
}

static void test_without_agents(void **state) {
  (void)state;
  char *text = dump(fl_beat_gateway_json("hostB", "0.1.0", 0, json_array(), NULL));
  assert_null(strstr(text, "agents"));
  fl_gateway_beat b;
  assert_int_equal(fl_beat_parse_gateway(text, strlen(text), "hostB", &b), 0);
  assert_false(b.lists_agents);
  assert_int_equal(b.nagents, 0);
  fl_free(text);
  const char *odd = "{\"host\":\"hostB\",\"agents\":{\"gid\":\"x\"}}";
  assert_int_equal(fl_beat_parse_gateway(odd, strlen(odd), "hostB", &b), 0);
  assert_false(b.lists_agents);
  /* NULL profiles (out of memory upstream) builds nothing. */
  assert_null(fl_beat_gateway_json("hostB", "0.1.0", 0, NULL, json_array()));
}

static void test_cap_and_malformed(void **state) {
  (void)state;
  json_t *agents = json_array();
  char gid[FL_ID_LEN], name[32];
  for (size_t i = 0; i < FL_MAX_BEAT_AGENTS + 3; i++) {
    gid_of(i, gid);
    snprintf(name, sizeof name, "a%zu", i);
    assert_int_equal(fl_beat_list(agents, gid, fl_beat_json(name, "w", NULL, 0, "online", NULL)),
                     0);
  }
  /* Malformed entries: no gid, a gid that is no UUID, no status, not an object. */
  json_array_append_new(agents, json_pack("{s:s, s:s}", "name", "x", "status", "online"));
  json_array_append_new(agents,
                        json_pack("{s:s, s:s, s:s}", "gid", "zz", "name", "x", "status", "online"));
  gid_of(999, gid);
  json_array_append_new(agents, json_pack("{s:s, s:s}", "gid", gid, "name", "x"));
  json_array_append_new(agents, json_integer(7));
  char *text = dump(fl_beat_gateway_json("hostB", "0.1.0", 0, json_array(), agents));
  fl_gateway_beat b;
  assert_int_equal(fl_beat_parse_gateway(text, strlen(text), "hostB", &b), 0);
  assert_int_equal(b.nagents, FL_MAX_BEAT_AGENTS);
  assert_int_equal(b.agents_dropped, 3 + 4);
  gid_of(FL_MAX_BEAT_AGENTS - 1, gid);
  assert_string_equal(b.agents[FL_MAX_BEAT_AGENTS - 1].gid, gid);
  fl_beat_gateway_clear(&b);
  fl_beat_gateway_clear(NULL);
  fl_free(text);
}

int main(void) {
  fl_alloc_init();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_round_trip),
      cmocka_unit_test(test_without_agents),
      cmocka_unit_test(test_cap_and_malformed),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
