/* test_claim_rules.c — the ownership rules of claims (gateway/rooms/claim_rules.h)
 * and the room id.
 *
 * Every case is replayed in every order of its events: the owner must not
 * depend on the order they arrived in. Covered: the first claim wins; a tie
 * of ts goes to the smallest from; a claim on a held resource changes
 * nothing; the owner's release frees it and a later claim then wins; a
 * release or a handoff from a non-owner changes nothing; a handoff from the
 * owner moves it; a TTL that ran out frees it (by the next event, and by
 * now); the owner's own claim renews it; a release or handoff naming the
 * owner's gid from another host changes nothing. Admission (fl_claim_admit,
 * as a pinned peer would attack): a claim backdated past the settle window
 * cannot unseat an owner settled here, neither directly nor by a backdated
 * release that frees a resource for a claim queued behind it; one dated in
 * the window, a late one while nothing has settled, the owner's own late
 * word and a late claim on a free resource are admitted; one dated past the
 * window ahead is refused. Then: the same label gives the same
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

#include "gateway/rooms/claim_rules.h"
#include "gateway/rooms/room_envelope.h"

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

static void test_other_host_cannot_speak_for_owner(void **state) {
  (void)state;
  fl_claim_event rel = ev(FL_CLAIM_RELEASE, GID_A, 1500, 0, NULL);
  fl_claim_event hand = ev(FL_CLAIM_HANDOFF, GID_A, 1600, 0, GID_B);
  snprintf(rel.from.host, sizeof rel.from.host, "hostB");
  snprintf(hand.from.host, sizeof hand.from.host, "hostB");
  fl_claim_event e[] = {ev(FL_CLAIM_ISSUE, GID_A, 1000, 60000, NULL), rel, hand};
  check_all_orders(e, 3, 3000, 1, GID_A);
}

#define SETTLE 2000

/* fl_claim_admit of e against log (n events, copied with a spare slot). */
static fl_claim_admit_rc admit(const fl_claim_event *log, size_t n, fl_claim_event e,
                               long long now) {
  fl_claim_event v[8];
  if (n)
    memcpy(v, log, n * sizeof *log);
  return fl_claim_admit(v, n, &e, now, SETTLE);
}

static void test_backdated_claim_cannot_unseat_settled_owner(void **state) {
  (void)state;
  fl_claim_event log[] = {ev(FL_CLAIM_ISSUE, GID_A, 10000, 600000, NULL)};
  long long now = 10000 + SETTLE + 1000; /* A settled here */
  /* B dates its claim before A's: without the check it would win. */
  fl_claim_event steal = ev(FL_CLAIM_ISSUE, GID_B, 5000, 600000, NULL);
  fl_claim_event both[] = {log[0], steal};
  check_all_orders(both, 2, now, 1, GID_B);
  assert_int_equal(admit(log, 1, steal, now), FL_CLAIM_LATE);
  /* The moment A settles, a claim dated just before A's is refused. */
  assert_int_equal(admit(log, 1, ev(FL_CLAIM_ISSUE, GID_B, 9999, 600000, NULL), 10000 + SETTLE),
                   FL_CLAIM_LATE);
  /* A short backdated claim that would leave the resource free. */
  assert_int_equal(admit(log, 1, ev(FL_CLAIM_ISSUE, GID_B, 9000, 5000, NULL), now), FL_CLAIM_LATE);
  /* Within the window it sorts after A and changes nothing: admitted. */
  assert_int_equal(admit(log, 1, ev(FL_CLAIM_ISSUE, GID_B, now - SETTLE + 1, 600000, NULL), now),
                   FL_CLAIM_ADMITTED);
  /* Dated ahead of this clock by more than the window: refused. */
  assert_int_equal(admit(log, 1, ev(FL_CLAIM_ISSUE, GID_B, now + SETTLE + 1, 600000, NULL), now),
                   FL_CLAIM_FUTURE);
  /* The owner's own late renewal or release: admitted. */
  assert_int_equal(admit(log, 1, ev(FL_CLAIM_ISSUE, GID_A, 11000, 600000, NULL), now),
                   FL_CLAIM_ADMITTED);
  assert_int_equal(admit(log, 1, ev(FL_CLAIM_RELEASE, GID_A, 11000, 0, NULL), now),
                   FL_CLAIM_ADMITTED);
}

static void test_backdated_release_cannot_unseat_settled_owner(void **state) {
  (void)state;
  /* B held it, A's claim was refused by the rules, B released, A claimed. */
  fl_claim_event log[] = {
      ev(FL_CLAIM_ISSUE, GID_B, 1000, 600000, NULL), ev(FL_CLAIM_ISSUE, GID_B, 1500, 600000, NULL),
      ev(FL_CLAIM_RELEASE, GID_B, 3000, 0, NULL), ev(FL_CLAIM_ISSUE, GID_A, 4000, 600000, NULL)};
  snprintf(log[1].from.gid, sizeof log[1].from.gid, "00000000-0000-4000-8000-0000000000bb");
  long long now = 4000 + SETTLE + 10;
  fl_claim_state st;
  fl_claim_event v[5];
  memcpy(v, log, sizeof log);
  fl_claim_compute(v, 4, "deploy-api", now, &st);
  assert_string_equal(st.owner.gid, GID_A);
  /* B backdates its release to before its second agent's claim. */
  assert_int_equal(admit(log, 4, ev(FL_CLAIM_RELEASE, GID_B, 1200, 0, NULL), now), FL_CLAIM_LATE);
}

static void test_late_claim_admitted_when_nothing_settled(void **state) {
  (void)state;
  fl_claim_event log[] = {ev(FL_CLAIM_ISSUE, GID_A, 10000, 600000, NULL)};
  /* A is still tentative here: an earlier claim may still arrive. */
  long long now = 10000 + SETTLE - 1;
  assert_int_equal(admit(log, 1, ev(FL_CLAIM_ISSUE, GID_B, 7000, 600000, NULL), now),
                   FL_CLAIM_ADMITTED);
  /* A free resource: a late claim takes nothing from anyone. */
  assert_int_equal(admit(NULL, 0, ev(FL_CLAIM_ISSUE, GID_B, 7000, 600000, NULL), 20000),
                   FL_CLAIM_ADMITTED);
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
      cmocka_unit_test(test_other_host_cannot_speak_for_owner),
      cmocka_unit_test(test_backdated_claim_cannot_unseat_settled_owner),
      cmocka_unit_test(test_backdated_release_cannot_unseat_settled_owner),
      cmocka_unit_test(test_late_claim_admitted_when_nothing_settled),
      cmocka_unit_test(test_room_id),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
