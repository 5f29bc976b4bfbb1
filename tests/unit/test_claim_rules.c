/* test_claim_rules.c — the ownership rules of claims (gateway/claim_rules.h)
 * and the room id.
 *
 * Every case is replayed in every order of its events: the owner must not
 * depend on the order they arrived in. Covered: the first claim wins; a tie
 * of ts goes to the smallest from; a claim on a held resource changes
 * nothing; the owner's release frees it and a later claim then wins; a
 * release or a handoff from a non-owner changes nothing; a handoff from the
 * owner moves it; a TTL that ran out frees it (by the next event, and by
 * now); the owner's own claim renews it. Then: the same label gives the same
 * roomId, which is BLAKE2b-256 of "fleet-room:" + label in hex. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* After the four above: cmocka.h uses them without including them. */
#include <cmocka.h>

#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "gateway/claim_rules.h"
#include "gateway/room_envelope.h"

#define GID_A "00000000-0000-4000-8000-00000000000a"
#define GID_B "00000000-0000-4000-8000-00000000000b"

static fl_claim_event ev(fl_claim_op op, const char *from, long long ts, long long ttl_ms,
                         const char *to) {
  static int n;
  fl_claim_event e;
  memset(&e, 0, sizeof e);
  e.op = op;
  snprintf(e.msg_id, sizeof e.msg_id, "00000000-0000-4000-8000-%012d", ++n);
  snprintf(e.resource, sizeof e.resource, "deploy-api");
  e.ts_ms = ts;
  e.ttl_ms = ttl_ms;
  snprintf(e.from.gid, sizeof e.from.gid, "%s", from);
  snprintf(e.from.name, sizeof e.from.name, "%s", strcmp(from, GID_A) == 0 ? "a" : "b");
  snprintf(e.from.host, sizeof e.from.host, "%s", strcmp(from, GID_A) == 0 ? "hostA" : "hostB");
  if (to)
    snprintf(e.to.gid, sizeof e.to.gid, "%s", to);
  return e;
}

/* Checks the outcome over every permutation of in (n <= 5). */
static void check_all_orders(const fl_claim_event *in, size_t n, long long now, int owned,
                             const char *owner) {
  size_t idx[5] = {0, 1, 2, 3, 4};
  size_t count = 0;
  for (;;) {
    fl_claim_event v[5];
    for (size_t i = 0; i < n; i++)
      v[i] = in[idx[i]];
    fl_claim_state st;
    fl_claim_compute(v, n, "deploy-api", now, &st);
    assert_int_equal(st.owned, owned);
    if (owned)
      assert_string_equal(st.owner.gid, owner);
    count++;
    /* next permutation of idx[0..n) */
    size_t i = n - 1;
    while (i > 0 && idx[i - 1] >= idx[i])
      i--;
    if (i == 0)
      break;
    size_t j = n - 1;
    while (idx[j] <= idx[i - 1])
      j--;
    size_t t = idx[i - 1];
    idx[i - 1] = idx[j];
    idx[j] = t;
    for (size_t a = i, b = n - 1; a < b; a++, b--) {
      t = idx[a];
      idx[a] = idx[b];
      idx[b] = t;
    }
  }
  assert_true(count >= 1);
}

static void test_first_claim_wins(void **state) {
  (void)state;
  fl_claim_event e[] = {ev(FL_CLAIM_ISSUE, GID_B, 1000, 60000, NULL),
                        ev(FL_CLAIM_ISSUE, GID_A, 1005, 60000, NULL)};
  check_all_orders(e, 2, 2000, 1, GID_B);
}

static void test_tie_goes_to_smallest_from(void **state) {
  (void)state;
  fl_claim_event e[] = {ev(FL_CLAIM_ISSUE, GID_B, 1000, 60000, NULL),
                        ev(FL_CLAIM_ISSUE, GID_A, 1000, 60000, NULL)};
  check_all_orders(e, 2, 2000, 1, GID_A);
}

static void test_release_frees_then_later_claim_wins(void **state) {
  (void)state;
  fl_claim_event e[] = {ev(FL_CLAIM_ISSUE, GID_A, 1000, 60000, NULL),
                        ev(FL_CLAIM_ISSUE, GID_B, 1001, 60000, NULL),
                        ev(FL_CLAIM_RELEASE, GID_A, 2000, 0, NULL)};
  check_all_orders(e, 3, 3000, 0, NULL);
  fl_claim_event f[] = {e[0], e[1], e[2], ev(FL_CLAIM_ISSUE, GID_B, 2500, 60000, NULL)};
  check_all_orders(f, 4, 3000, 1, GID_B);
}

static void test_non_owner_release_and_handoff_change_nothing(void **state) {
  (void)state;
  fl_claim_event e[] = {ev(FL_CLAIM_ISSUE, GID_A, 1000, 60000, NULL),
                        ev(FL_CLAIM_RELEASE, GID_B, 1500, 0, NULL),
                        ev(FL_CLAIM_HANDOFF, GID_B, 1600, 0, GID_B)};
  check_all_orders(e, 3, 3000, 1, GID_A);
}

static void test_handoff_from_owner_moves_it(void **state) {
  (void)state;
  fl_claim_event e[] = {ev(FL_CLAIM_ISSUE, GID_A, 1000, 60000, NULL),
                        ev(FL_CLAIM_HANDOFF, GID_A, 1500, 0, GID_B),
                        ev(FL_CLAIM_RELEASE, GID_A, 1600, 0, NULL)};
  /* A's release after the handoff is a non-owner's: B keeps it. */
  check_all_orders(e, 3, 3000, 1, GID_B);
}

static void test_ttl_expiry_frees(void **state) {
  (void)state;
  fl_claim_event e[] = {ev(FL_CLAIM_ISSUE, GID_A, 1000, 1000, NULL)};
  check_all_orders(e, 1, 1999, 1, GID_A);
  check_all_orders(e, 1, 2000, 0, NULL);
  fl_claim_event f[] = {ev(FL_CLAIM_ISSUE, GID_A, 1000, 1000, NULL),
                        ev(FL_CLAIM_ISSUE, GID_B, 2500, 60000, NULL)};
  check_all_orders(f, 2, 3000, 1, GID_B);
  /* The owner's own claim renews it. */
  fl_claim_event g[] = {ev(FL_CLAIM_ISSUE, GID_A, 1000, 1000, NULL),
                        ev(FL_CLAIM_ISSUE, GID_A, 1800, 1000, NULL),
                        ev(FL_CLAIM_ISSUE, GID_B, 2500, 60000, NULL)};
  check_all_orders(g, 3, 2600, 1, GID_A);
}

static void test_room_id(void **state) {
  (void)state;
  char a[FL_ROOM_ID_SIZE], b[FL_ROOM_ID_SIZE], c[FL_ROOM_ID_SIZE];
  assert_int_equal(fl_room_id("#coordination", a), 0);
  assert_int_equal(fl_room_id("#coordination", b), 0);
  assert_int_equal(fl_room_id("#other", c), 0);
  assert_string_equal(a, b);
  assert_string_not_equal(a, c);
  assert_true(fl_room_id_valid(a));
  /* What the id is, computed here from libsodium's primitive directly. */
  unsigned char h[32];
  const char *in = "fleet-room:#coordination";
  crypto_generichash(h, sizeof h, (const unsigned char *)in, strlen(in), NULL, 0);
  char hex[65];
  sodium_bin2hex(hex, sizeof hex, h, sizeof h);
  assert_string_equal(a, hex);
  assert_int_not_equal(fl_room_id("", a), 0);
  assert_false(fl_room_id_valid("ABC"));
}

int main(void) {
  if (sodium_init() < 0)
    return 1;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_first_claim_wins),
      cmocka_unit_test(test_tie_goes_to_smallest_from),
      cmocka_unit_test(test_release_frees_then_later_claim_wins),
      cmocka_unit_test(test_non_owner_release_and_handoff_change_nothing),
      cmocka_unit_test(test_handoff_from_owner_moves_it),
      cmocka_unit_test(test_ttl_expiry_frees),
      cmocka_unit_test(test_room_id),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
