/* test_topology.c — unit tests for gateway/proto/topology.c: the broker names the
 * builders make are the ones docs/wire-format.md gives, a part that is not a
 * name is refused (FL_EINVAL), a name that does not fit is FL_ETOOBIG with
 * an empty buffer, and the parsers take back what the builders made. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* After the four above: cmocka.h uses them without including them. */
#include <cmocka.h>

#include <string.h>

#include "common/error.h"
#include "gateway/proto/topology.h"

#define GID "9f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a"

static void test_names(void **state) {
  (void)state;
  char b[256];
  assert_int_equal(fl_topology_inbox_queue(b, sizeof b, GID), 0);
  assert_string_equal(b, "agent." GID ".inbox.v2");
  assert_int_equal(fl_topology_control_queue(b, sizeof b, "alpha"), 0);
  assert_string_equal(b, "control.alpha");
  assert_int_equal(fl_topology_roster_queue(b, sizeof b, "alpha"), 0);
  assert_string_equal(b, "roster.alpha");
  assert_int_equal(fl_topology_roster_key(b, sizeof b, "alpha", GID), 0);
  assert_string_equal(b, "roster.alpha." GID);
  assert_int_equal(fl_topology_roster_key(b, sizeof b, "alpha", FL_GID_GATEWAY), 0);
  assert_string_equal(b, "roster.alpha._gateway");
  assert_int_equal(fl_topology_broadcast_key(b, sizeof b, "testers"), 0);
  assert_string_equal(b, "broadcast.testers");
  assert_int_equal(fl_topology_broadcast_key(b, sizeof b, NULL), 0);
  assert_string_equal(b, FL_KEY_BROADCAST_ALL);
  assert_string_equal(FL_KEY_BROADCAST_ALL, "broadcast.all");
  assert_string_equal(FL_KEY_ROSTER_ALL, "roster.#");
  assert_string_equal(FL_EX_MSG, "fleet.msg");
  assert_string_equal(FL_EX_ROSTER, "fleet.roster");
  assert_string_equal(FL_EX_CONTROL, "fleet.control");
  assert_string_equal(FL_EX_DLX, "fleet.dlx");
  assert_string_equal(FL_Q_DLQ, "fleet.dlq");
}

static void test_refused(void **state) {
  (void)state;
  char b[64];
  /* Parts that would add or split a routing-key word, or bind a wildcard. */
  static const char *const bad[] = {"", "a.b", "a#", "*", "a b", "al/pha"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    b[0] = 'x';
    assert_int_equal(fl_topology_inbox_queue(b, sizeof b, bad[i]), FL_EINVAL);
    assert_string_equal(b, "");
    assert_int_equal(fl_topology_control_queue(b, sizeof b, bad[i]), FL_EINVAL);
    assert_int_equal(fl_topology_roster_queue(b, sizeof b, bad[i]), FL_EINVAL);
    assert_int_equal(fl_topology_roster_key(b, sizeof b, bad[i], GID), FL_EINVAL);
    assert_int_equal(fl_topology_roster_key(b, sizeof b, "alpha", bad[i]), FL_EINVAL);
    assert_int_equal(fl_topology_broadcast_key(b, sizeof b, bad[i]), FL_EINVAL);
  }
  assert_int_equal(fl_topology_inbox_queue(b, sizeof b, NULL), FL_EINVAL);
  assert_int_equal(fl_topology_inbox_queue(NULL, 10, GID), FL_EINVAL);
  assert_int_equal(fl_topology_inbox_queue(b, 0, GID), FL_EINVAL);
  /* Too small: exactly one byte short, then exactly enough. */
  size_t need = strlen("agent." GID ".inbox.v2") + 1;
  b[0] = 'x';
  assert_int_equal(fl_topology_inbox_queue(b, need - 1, GID), FL_ETOOBIG);
  assert_string_equal(b, "");
  assert_int_equal(fl_topology_inbox_queue(b, need, GID), 0);
  assert_int_equal(fl_topology_broadcast_key(b, 5, NULL), FL_ETOOBIG);
  assert_int_equal(fl_topology_roster_key(b, 10, "alpha", GID), FL_ETOOBIG);
}

static void test_parse(void **state) {
  (void)state;
  char b[256];
  assert_int_equal(fl_topology_roster_key(b, sizeof b, "alpha", GID), 0);
  assert_string_equal(fl_topology_roster_key_gid(b, "alpha"), GID);
  assert_null(fl_topology_roster_key_gid(b, "alph"));
  assert_null(fl_topology_roster_key_gid(b, "alpha2"));
  assert_null(fl_topology_roster_key_gid(b, ""));
  assert_null(fl_topology_roster_key_gid(b, NULL));
  assert_null(fl_topology_roster_key_gid("roster.alpha", "alpha"));
  assert_string_equal(fl_topology_roster_key_gid("roster.alpha.", "alpha"), "");
  assert_null(fl_topology_roster_key_gid(NULL, "alpha"));
  assert_string_equal(fl_topology_roster_key_gid("roster.alpha._gateway", "alpha"), FL_GID_GATEWAY);

  assert_int_equal(fl_topology_broadcast_key(b, sizeof b, "testers"), 0);
  assert_string_equal(fl_topology_broadcast_key_group(b), "testers");
  assert_string_equal(fl_topology_broadcast_key_group(FL_KEY_BROADCAST_ALL), "all");
  assert_null(fl_topology_broadcast_key_group(GID));
  assert_null(fl_topology_broadcast_key_group("broadcast"));
  assert_null(fl_topology_broadcast_key_group(NULL));

  /* One host's broadcast keys: built, and read back only for that host. */
  assert_int_equal(fl_topology_host_broadcast_key(b, sizeof b, "alpha", "testers"), 0);
  assert_string_equal(b, "broadcast.alpha.testers");
  assert_string_equal(fl_topology_host_broadcast_key_group(b, "alpha"), "testers");
  assert_null(fl_topology_host_broadcast_key_group(b, "alph"));
  assert_null(fl_topology_host_broadcast_key_group(b, "beta"));
  assert_int_equal(fl_topology_host_broadcast_key(b, sizeof b, "alpha", NULL), 0);
  assert_string_equal(b, "broadcast.alpha.all");
  assert_string_equal(fl_topology_host_broadcast_key_group(b, "alpha"), "all");
  assert_null(fl_topology_host_broadcast_key_group("broadcast.alpha", "alpha"));
  assert_null(fl_topology_host_broadcast_key_group("broadcast.alpha.", "alpha"));
  assert_null(fl_topology_host_broadcast_key_group(FL_KEY_BROADCAST_ALL, "all"));
  assert_null(fl_topology_host_broadcast_key_group(NULL, "alpha"));
  assert_null(fl_topology_host_broadcast_key_group(b, NULL));
  /* Parts that would add or split a routing-key word are refused. */
  assert_int_equal(fl_topology_host_broadcast_key(b, sizeof b, "al.pha", "x"), FL_EINVAL);
  assert_int_equal(fl_topology_host_broadcast_key(b, sizeof b, "alpha", "#"), FL_EINVAL);
  assert_int_equal(fl_topology_host_broadcast_key(b, sizeof b, NULL, "x"), FL_EINVAL);
  assert_int_equal(fl_topology_host_broadcast_key(b, 8, "alpha", "x"), FL_ETOOBIG);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_names),
      cmocka_unit_test(test_refused),
      cmocka_unit_test(test_parse),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
