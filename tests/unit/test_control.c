/* test_control.c — the pure parts of the control plane: the SPAWN body and
 * the answer body parsers (control.c), a "gone" presence beat
 * (presence.c), and the store's spawn records, which are what makes a
 * repeated SPAWN start nothing new after a restart (store_spawn.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "common/error.h"
#include "common/limits.h"
#include "gateway/fabric/control.h"
#include "gateway/fabric/presence.h"
#include "gateway/store/store.h"
#include "tests/support/test_util.h"

#define S(lit) lit, strlen(lit)

static void test_parse_spawn(void **state) {
  (void)state;
  json_t *o;
  const char *p, *n, *b;
  char err[128];
  assert_int_equal(
      fl_control_parse_spawn(S("{\"profile\":\"agent\",\"name\":\"w1\",\"brief\":\"go\"}"), &o, &p,
                             &n, &b, err, sizeof err),
      0);
  assert_string_equal(p, "agent");
  assert_string_equal(n, "w1");
  assert_string_equal(b, "go");
  json_decref(o);
  assert_int_equal(
      fl_control_parse_spawn(S("{\"profile\":\"agent\"}"), &o, &p, &n, &b, err, sizeof err), 0);
  assert_null(n);
  assert_null(b);
  json_decref(o);
}

static void test_parse_spawn_bad(void **state) {
  (void)state;
  json_t *o;
  const char *p, *n, *b;
  char err[128];
  static const char *const bad[] = {"",
                                    "not json",
                                    "[1]",
                                    "{}",
                                    "{\"profile\":\"\"}",
                                    "{\"profile\":7}",
                                    "{\"profile\":\"a\",\"name\":3}",
                                    "{\"profile\":\"a\",\"brief\":{}}"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    err[0] = '\0';
    assert_int_equal(
        fl_control_parse_spawn(bad[i], strlen(bad[i]), &o, &p, &n, &b, err, sizeof err), FL_EPROTO);
    assert_null(o);
    assert_true(err[0] != '\0');
  }
  /* No body at all. */
  assert_int_equal(fl_control_parse_spawn(NULL, 0, &o, &p, &n, &b, err, sizeof err), FL_EPROTO);
}

static void test_parse_answer(void **state) {
  (void)state;
  json_t *r;
  char err[128] = "";
  assert_int_equal(fl_control_parse_answer(S("{\"gid\":\"g\",\"status\":\"ready\",\"name\":\"w\"}"),
                                           &r, err, sizeof err),
                   0);
  assert_non_null(r);
  assert_string_equal(json_string_value(json_object_get(r, "status")), "ready");
  json_decref(r);
  assert_int_equal(
      fl_control_parse_answer(S("{\"error\":\"unknown profile 'x'\"}"), &r, err, sizeof err), 0);
  assert_null(r);
  assert_string_equal(err, "unknown profile 'x'");
  assert_int_equal(fl_control_parse_answer(S("{\"status\":\"ready\"}"), &r, err, sizeof err),
                   FL_EPROTO);
  assert_null(r);
  assert_int_equal(fl_control_parse_answer(S("junk"), &r, err, sizeof err), FL_EPROTO);
  assert_int_equal(fl_control_parse_answer(NULL, 0, &r, err, sizeof err), FL_EPROTO);
}

static void test_beat_gone(void **state) {
  (void)state;
  fl_beat b;
  assert_int_equal(fl_beat_parse(S("{\"name\":\"w1\",\"status\":\"gone\"}"), &b), 0);
  assert_int_equal(b.gone, 1);
  assert_int_equal(b.online, 0);
  assert_int_equal(fl_beat_parse(S("{\"name\":\"w1\",\"status\":\"online\"}"), &b), 0);
  assert_int_equal(b.gone, 0);
  assert_int_equal(b.online, 1);
}

static void test_spawn_records(void **state) {
  (void)state;
  char dir[256], path[300];
  assert_int_equal(fl_test_tmpdir("control", dir, sizeof dir), 0);
  snprintf(path, sizeof path, "%s/fleet.db", dir);
  fl_store *s = NULL;
  assert_int_equal(fl_store_open(path, &s), 0);
  fl_spawn_rec r = {.gid = "3F0C2A9E-0000-4000-8000-000000000001",
                    .by = "11111111-0000-4000-8000-000000000001",
                    .by_host = "hostA",
                    .profile = "agent",
                    .name = "w1",
                    .state = "launching",
                    .ts_ms = 1000000000000LL};
  assert_int_equal(fl_store_spawn_put(s, &r), 0);
  snprintf(r.state, sizeof r.state, "failed");
  snprintf(r.why, sizeof r.why, "not ready within 2 s");
  r.ts_ms += 5;
  assert_int_equal(fl_store_spawn_put(s, &r), 0);
  fl_store_close(&s);

  /* Reopened (a restart): found by gid in any case, with the new state. */
  assert_int_equal(fl_store_open(path, &s), 0);
  fl_spawn_rec got;
  assert_int_equal(fl_store_spawn_get(s, "3f0c2a9e-0000-4000-8000-000000000001", &got), 0);
  assert_string_equal(got.state, "failed");
  assert_string_equal(got.why, "not ready within 2 s");
  assert_string_equal(got.by, r.by);
  assert_string_equal(got.by_host, "hostA");
  assert_string_equal(got.name, "w1");
  assert_int_equal(fl_store_spawn_get(s, "22222222-0000-4000-8000-000000000001", &got),
                   FL_ENOTFOUND);

  /* A record older than the keep window goes when a newer one is put. */
  fl_spawn_rec later = r;
  snprintf(later.gid, sizeof later.gid, "33333333-0000-4000-8000-000000000001");
  later.ts_ms = r.ts_ms + FL_SPAWN_RECORD_KEEP_MS + 1;
  assert_int_equal(fl_store_spawn_put(s, &later), 0);
  assert_int_equal(fl_store_spawn_get(s, r.gid, &got), FL_ENOTFOUND);
  assert_int_equal(fl_store_spawn_get(s, later.gid, &got), 0);

  fl_spawn_rec empty = {0};
  assert_int_equal(fl_store_spawn_put(s, &empty), FL_EINVAL);
  fl_store_close(&s);
  fl_test_rmtree(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parse_spawn),   cmocka_unit_test(test_parse_spawn_bad),
      cmocka_unit_test(test_parse_answer),  cmocka_unit_test(test_beat_gone),
      cmocka_unit_test(test_spawn_records),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
