/* test_presence.c — unit tests for gateway/fabric/presence.c.
 *
 * The pure parts first: parsing a beat's body (valid; missing fields; bad
 * names, roles and groups; the group cap; not JSON at all) and the
 * freshness check (stamps that do not parse, an expired beat, a replay
 * older than the newest beat taken). Then taking beats into a real
 * single-host gateway's roster (no broker: presence is driven by hand):
 * a new remote entity, its status over its TTL, a gid that lives on
 * another host or on this one, the roster cap, and the store remembering
 * who lives where across a restart. Then the pins: unpinning a host drops
 * its entities (and the store's memory of them) until a beat takes them
 * back, and beats from a host that is not pinned are each refused and
 * counted, leaving only a hint of the names they announced. Last, host
 * beats, signed for real: every entity one lists is taken under its one
 * signature, a bad entry, a replay (of the whole beat, or for one entity
 * an entity beat of its own has overtaken) and a forged signature are
 * refused, and a host beat that lists nothing says its host expects
 * entity beats. And a full roster: refused while every entity is live,
 * then, once their TTL ran out, it forgets the one that left and those
 * offline longest (from the store too) to take a new one. */
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
#include <unistd.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/log.h"
#include "common/time.h"
#include "gateway/core/gw_internal.h"
#include "gateway/fabric/presence.h"
#include "gateway/proto/envelope.h"
#include "gateway/proto/sign.h"
#include "gateway/proto/topology.h"
#include "tests/support/test_gw.h"
#include "tests/support/test_util.h"

#define GID_A "0b7e3c1a-2f4d-4c8e-9a1b-3d5f7e9a1c2b"
#define GID_B "5c9d1e2f-3a4b-4c6d-8e7f-9a0b1c2d3e4f"
#define GID_B2 "6d0e2f3a-4b5c-4d7e-9f8a-0b1c2d3e4f5a"

static int parse(const char *body, fl_beat *b) { return fl_beat_parse(body, strlen(body), b); }

/* ---- parsing -------------------------------------------------------------------- */

static void test_parse_valid(void **state) {
  fl_beat b;
  assert_int_equal(parse("{\"name\":\"alice\",\"role\":\"worker\",\"groups\":[\"backend\","
                         "\"ops\"],\"status\":\"online\"}",
                         &b),
                   0);
  assert_string_equal(b.name, "alice");
  assert_string_equal(b.role, "worker");
  assert_int_equal(b.ngroups, 2);
  assert_string_equal(b.groups[0], "backend");
  assert_string_equal(b.groups[1], "ops");
  assert_true(b.online);

  /* Only "online" is online; role and groups are optional. */
  assert_int_equal(parse("{\"name\":\"bob\",\"status\":\"offline\"}", &b), 0);
  assert_string_equal(b.name, "bob");
  assert_string_equal(b.role, "agent");
  assert_int_equal(b.ngroups, 0);
  assert_false(b.online);
  assert_int_equal(parse("{\"name\":\"bob\",\"status\":\"ONLINE\"}", &b), 0);
  assert_false(b.online);
}

/* "delivery": "inject" marks an entity whose messages are typed into its
 * terminal; absent or anything else reads as pull. */
static void test_parse_delivery(void **state) {
  (void)state;
  fl_beat b;
  assert_int_equal(parse("{\"name\":\"w\",\"status\":\"online\",\"delivery\":\"inject\"}", &b), 0);
  assert_int_equal(b.inject, 1);
  assert_int_equal(parse("{\"name\":\"w\",\"status\":\"online\",\"delivery\":\"pull\"}", &b), 0);
  assert_int_equal(b.inject, 0);
  assert_int_equal(parse("{\"name\":\"w\",\"status\":\"online\"}", &b), 0);
  assert_int_equal(b.inject, 0);
  assert_int_equal(parse("{\"name\":\"w\",\"status\":\"online\",\"delivery\":7}", &b), 0);
  assert_int_equal(b.inject, 0);
}

static void test_parse_missing_fields(void **state) {
  fl_beat b;
  assert_int_equal(parse("{\"status\":\"online\"}", &b), FL_EINVAL);
  assert_string_equal(b.name, ""); /* a refusal leaves nothing behind */
  assert_int_equal(parse("{\"name\":\"alice\"}", &b), FL_EINVAL);
  assert_int_equal(parse("{\"name\":\"alice\",\"status\":1}", &b), FL_EINVAL);
  assert_int_equal(parse("{\"name\":7,\"status\":\"online\"}", &b), FL_EINVAL);
  assert_int_equal(parse("{}", &b), FL_EINVAL);
  assert_int_equal(parse("[\"alice\",\"online\"]", &b), FL_EINVAL);
  assert_int_equal(parse("not json", &b), FL_EINVAL);
  assert_int_equal(parse("", &b), FL_EINVAL);
  assert_int_equal(fl_beat_parse(NULL, 0, &b), FL_EINVAL);
  /* A body cut short of its closing brace is no body. */
  assert_int_equal(fl_beat_parse("{\"name\":\"a\",\"status\":\"online\"}", 20, &b), FL_EINVAL);
}

static void test_parse_bad_names(void **state) {
  fl_beat b;
  const char *bad[] = {"a.b", "a b", "a@host", "", "caf\\u00e9", "x\\u0000y"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char body[256];
    snprintf(body, sizeof body, "{\"name\":\"%s\",\"status\":\"online\"}", bad[i]);
    assert_int_equal(parse(body, &b), FL_EINVAL);
  }
  char longname[FL_MAX_NAME + 2];
  memset(longname, 'n', sizeof longname - 1);
  longname[sizeof longname - 1] = '\0';
  char body[256];
  snprintf(body, sizeof body, "{\"name\":\"%s\",\"status\":\"online\"}", longname);
  assert_int_equal(parse(body, &b), FL_EINVAL);
  longname[FL_MAX_NAME] = '\0'; /* exactly the limit is fine */
  snprintf(body, sizeof body, "{\"name\":\"%s\",\"status\":\"online\"}", longname);
  assert_int_equal(parse(body, &b), 0);

  /* A bad role reads as "agent"; bad groups are dropped, good ones kept. */
  assert_int_equal(parse("{\"name\":\"c\",\"role\":\"no such role!\",\"groups\":[\"ok\",\"not ok\","
                         "5,\"a.b\",\"fine-2\"],\"status\":\"online\"}",
                         &b),
                   0);
  assert_string_equal(b.role, "agent");
  assert_int_equal(b.ngroups, 2);
  assert_string_equal(b.groups[0], "ok");
  assert_string_equal(b.groups[1], "fine-2");
}

static void test_parse_group_cap(void **state) {
  char body[2048] = "{\"name\":\"many\",\"status\":\"online\",\"groups\":[";
  for (int i = 0; i < FL_MAX_GROUPS * 2; i++) {
    size_t n = strlen(body);
    snprintf(body + n, sizeof body - n, "%s\"g%d\"", i ? "," : "", i);
  }
  strcat(body, "]}");
  fl_beat b;
  assert_int_equal(parse(body, &b), 0);
  assert_int_equal(b.ngroups, FL_MAX_GROUPS);
  assert_string_equal(b.groups[FL_MAX_GROUPS - 1], "g15");
}

/* ---- freshness ------------------------------------------------------------------- */

static void test_fresh(void **state) {
  long long now = fl_now_ms();
  char ts[FL_TS_LEN], exp[FL_TS_LEN], old[FL_TS_LEN], past[FL_TS_LEN];
  fl_rfc3339(now, ts);
  fl_rfc3339(now + 15000, exp);
  fl_rfc3339(now - 60000, old);
  fl_rfc3339(now - 1, past);
  long long got = 0;
  assert_int_equal(fl_beat_fresh(ts, exp, now, NULL, &got), 0);
  assert_int_equal(got, now);

  /* Stamps that do not parse, or are missing. */
  assert_int_equal(fl_beat_fresh("yesterday", exp, now, NULL, &got), FL_EINVAL);
  assert_int_equal(fl_beat_fresh(ts, "2026-13-01T00:00:00Z", now, NULL, &got), FL_EINVAL);
  assert_int_equal(fl_beat_fresh("", exp, now, NULL, &got), FL_EINVAL);
  assert_int_equal(fl_beat_fresh(ts, "", now, NULL, &got), FL_EINVAL);
  assert_int_equal(fl_beat_fresh(NULL, NULL, now, NULL, &got), FL_EINVAL);

  /* Expired: its TTL ran out, even though it is otherwise well formed. */
  assert_int_equal(fl_beat_fresh(old, past, now, NULL, &got), FL_EINVAL);
  assert_int_equal(fl_beat_fresh(ts, ts, now, NULL, &got), FL_EINVAL);

  /* A replay: older than the newest beat taken. The same ts is not older. */
  long long newest = now;
  assert_int_equal(fl_beat_fresh(old, exp, now, &newest, &got), FL_EDUP);
  assert_int_equal(fl_beat_fresh(ts, exp, now, &newest, &got), 0);
  newest = now - 120000;
  assert_int_equal(fl_beat_fresh(old, exp, now, &newest, &got), 0);
  assert_int_equal(got, now - 60000);
}

/* ---- taking beats into a roster ---------------------------------------------------- */

typedef struct fixture {
  fl_test_gw g;
  fl_presence *p;
} fixture;

/* No broker: presence is not started, and is told by hand the link is up. */
static int presence_open(fixture *f, unsigned ttl_ms) {
  int rc = fl_presence_new(f->g.gw, NULL, 1000, ttl_ms, &f->p);
  if (rc)
    return rc;
  fl_presence_load(f->p);
  fl_presence_link(f->p, 1);
  return 0;
}

/* Restarts gateway and presence, as a fleetd restart would. */
static int gw_open(fixture *f, unsigned ttl_ms) {
  int rc = fl_test_gw_start(&f->g);
  return rc ? rc : presence_open(f, ttl_ms);
}

static void gw_close(fixture *f) {
  fl_presence_free(&f->p);
  fl_test_gw_stop(&f->g);
}

static int setup(void **state) {
  fixture *f = fl_test_fixture_new(sizeof *f, "presence");
  if (!f)
    return -1;
  if (presence_open(f, 60) != 0) {
    fl_test_fixture_free(f);
    return -1;
  }
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  fl_presence_free(&f->p);
  return fl_test_fixture_free(f);
}

static void beat_of(fl_beat *b, const char *name, int online) {
  char body[256];
  snprintf(body, sizeof body,
           "{\"name\":\"%s\",\"role\":\"worker\",\"groups\":[\"ops\"],\"status\":\"%s\"}", name,
           online ? "online" : "offline");
  assert_int_equal(parse(body, b), 0);
}

static void test_take_and_ttl(void **state) {
  fixture *f = *state;
  fl_beat b;
  beat_of(&b, "rob", 1);
  size_t before = f->g.gw->nentities;
  assert_int_equal(fl_presence_take(f->p, "hostB", GID_B, &b, fl_now_ms()), 0);
  assert_int_equal(f->g.gw->nentities, before + 1);
  fl_entity *e = fl_entity_by_gid(f->g.gw, GID_B);
  assert_non_null(e);
  assert_true(e->remote);
  assert_string_equal(e->name, "rob");
  assert_string_equal(e->host, "hostB");
  assert_string_equal(e->role, "worker");
  assert_int_equal(e->ngroups, 1);
  assert_string_equal(fl_presence_status(f->p, e), "online");
  /* The TTL is a duration on the monotonic clock: a wall-clock jump (NTP,
   * a suspended VM) neither ends it early nor stretches it. */
  long long left = e->presence.expires_ms - fl_mono_ms();
  assert_true(left > 0 && left <= 60);

  /* The link down: nobody can tell. */
  fl_presence_link(f->p, 0);
  assert_string_equal(fl_presence_status(f->p, e), "unknown");
  fl_presence_link(f->p, 1);

  /* Its TTL (60 ms here) runs out without another beat: offline. */
  usleep(100 * 1000);
  assert_string_equal(fl_presence_status(f->p, e), "offline");

  /* A new beat revives it and may rename it; one saying offline is offline. */
  beat_of(&b, "robert", 0);
  assert_int_equal(fl_presence_take(f->p, "hostB", GID_B, &b, fl_now_ms()), 0);
  assert_int_equal(f->g.gw->nentities, before + 1);
  assert_string_equal(e->name, "robert");
  assert_string_equal(fl_presence_status(f->p, e), "offline");
  beat_of(&b, "robert", 1);
  assert_int_equal(fl_presence_take(f->p, "hostB", GID_B, &b, fl_now_ms()), 0);
  assert_string_equal(fl_presence_status(f->p, e), "online");
}

/* fleet_list keeps each remote entity's object between listings (list.c):
 * a beat that renames it, or changes its role or groups, shows in the next
 * one all the same. */
static void list_has(fl_gw *gw, const char *want, const char *not_want) {
  fl_json_out out;
  assert_int_equal(fl_gw_list_json(gw, NULL, &out), 0);
  assert_non_null(strstr(out.json, want));
  if (not_want)
    assert_null(strstr(out.json, not_want));
  fl_json_out_free(&out);
}

/* The listing has first before second. */
static void list_order(fl_gw *gw, const char *first, const char *second) {
  fl_json_out out;
  assert_int_equal(fl_gw_list_json(gw, NULL, &out), 0);
  const char *a = strstr(out.json, first), *b = strstr(out.json, second);
  assert_non_null(a);
  assert_non_null(b);
  assert_true(a < b);
  fl_json_out_free(&out);
}

static void test_listing_follows_beats(void **state) {
  fixture *f = *state;
  fl_gw *gw = f->g.gw;
  fl_beat b;
  beat_of(&b, "rob", 1);
  assert_int_equal(fl_presence_take(f->p, "hostB", GID_B, &b, fl_now_ms()), 0);
  list_has(gw, "\"name\":\"rob\",\"role\":\"worker\",\"host\":\"hostB\",\"groups\":[\"ops\"]",
           NULL);
  list_has(gw, "\"name\":\"rob\"", NULL); /* from the kept object */
  /* A rename moves it in the name order, which is kept between listings. */
  assert_int_equal(
      parse("{\"name\":\"mia\",\"role\":\"worker\",\"groups\":[],\"status\":\"online\"}", &b), 0);
  assert_int_equal(fl_presence_take(f->p, "hostB", GID_B2, &b, fl_now_ms()), 0);
  list_order(gw, "\"name\":\"mia\"", "\"name\":\"rob\"");
  beat_of(&b, "zoe", 1);
  assert_int_equal(fl_presence_take(f->p, "hostB", GID_B, &b, fl_now_ms()), 0);
  list_order(gw, "\"name\":\"mia\"", "\"name\":\"zoe\"");
  beat_of(&b, "robert", 1);
  assert_int_equal(fl_presence_take(f->p, "hostB", GID_B, &b, fl_now_ms()), 0);
  list_has(gw, "\"name\":\"robert\"", "\"name\":\"rob\"");
  assert_int_equal(parse("{\"name\":\"robert\",\"role\":\"lead\",\"groups\":[\"dev\",\"qa\"],"
                         "\"status\":\"online\"}",
                         &b),
                   0);
  assert_int_equal(fl_presence_take(f->p, "hostB", GID_B, &b, fl_now_ms()), 0);
  list_has(gw,
           "\"name\":\"robert\",\"role\":\"lead\",\"host\":\"hostB\",\"groups\":[\"dev\",\"qa\"]",
           "\"ops\"");
  /* Its lastSeen follows each beat too. */
  fl_entity *e = fl_entity_by_gid(gw, GID_B);
  e->last_seen_ms = 86400000; /* 1970-01-02 */
  list_has(gw, "\"lastSeen\":\"1970-01-02T00:00:00.000Z\"", NULL);
}

static void test_take_refuses_claims(void **state) {
  fixture *f = *state;
  fl_beat b;
  beat_of(&b, "rob", 1);
  /* A gid that lives on this host cannot be claimed by another. */
  fl_entity *local = fl_entity_new(f->g.gw, GID_A, "alice");
  assert_non_null(local);
  assert_int_equal(fl_presence_take(f->p, "hostB", GID_A, &b, fl_now_ms()), FL_EINVAL);
  assert_false(local->remote);
  assert_string_equal(local->name, "alice");

  /* A gid live on hostB cannot move to hostC while hostB's beat holds... */
  assert_int_equal(fl_presence_take(f->p, "hostB", GID_B, &b, fl_now_ms()), 0);
  assert_int_equal(fl_presence_take(f->p, "hostC", GID_B, &b, fl_now_ms()), FL_EINVAL);
  fl_entity *e = fl_entity_by_gid(f->g.gw, GID_B);
  assert_string_equal(e->host, "hostB");
  /* ...nor once that beat has expired: the gid is hostB's for good (issue
   * 26: a quiet host's agents were taken over)... */
  usleep(100 * 1000);
  assert_int_equal(fl_presence_take(f->p, "hostC", GID_B, &b, fl_now_ms()), FL_EINVAL);
  assert_string_equal(e->host, "hostB");
  /* ...nor after a restart, when remote entities come back expired. */
  gw_close(f);
  assert_int_equal(gw_open(f, 50), 0);
  assert_int_equal(fl_presence_take(f->p, "hostC", GID_B, &b, fl_now_ms()), FL_EINVAL);
  e = fl_entity_by_gid(f->g.gw, GID_B);
  assert_non_null(e);
  assert_string_equal(e->host, "hostB");
  assert_int_equal(f->g.gw->counters[FL_C_PRESENCE_GID_REFUSED], 1);
  /* The owner itself still may; the operator's release lets the gid move. */
  assert_int_equal(fl_presence_take(f->p, "hostB", GID_B, &b, fl_now_ms()), 0);
  char owner[64], err[256];
  assert_int_equal(fl_gw_gid_release(f->g.gw, GID_B, owner, sizeof owner, err, sizeof err), 0);
  assert_string_equal(owner, "hostB");
  assert_int_equal(fl_presence_take(f->p, "hostC", GID_B, &b, fl_now_ms()), 0);
  assert_string_equal(e->host, "hostC");
  assert_int_equal(fl_gw_gid_release(f->g.gw, "nope", owner, sizeof owner, err, sizeof err),
                   FL_EINVAL);
  /* Gone from hostB and forgotten across a restart, the gid is still
   * hostC's: a local session cannot register under it either. */
  fl_presence_forget(f->p, "hostC", GID_B, fl_now_ms());
  gw_close(f);
  assert_int_equal(gw_open(f, 50), 0);
  assert_null(fl_entity_by_gid(f->g.gw, GID_B));
  fl_ident id = {.name = "thief", .role = "worker", .gid = GID_B};
  fl_client *c = NULL;
  assert_int_equal(fl_gw_attach(f->g.gw, &id, NULL, NULL, &c, err, sizeof err), FL_EINVAL);
  assert_non_null(strstr(err, "belongs to host 'hostC'"));
  assert_int_equal(fl_presence_take(f->p, "hostB", GID_B, &b, fl_now_ms()), FL_EINVAL);
}

static void test_take_roster_cap(void **state) {
  fixture *f = *state;
  fl_beat b;
  beat_of(&b, "rob", 1);
  /* Filling 10000 entities for real costs nothing here but time: pretend. */
  size_t real = f->g.gw->nentities;
  f->g.gw->nentities = FL_MAX_ENTITIES;
  assert_int_equal(fl_presence_take(f->p, "hostB", GID_B, &b, fl_now_ms()), FL_EFULL);
  assert_null(fl_entity_by_gid(f->g.gw, GID_B));
  f->g.gw->nentities = real;
  assert_int_equal(fl_presence_take(f->p, "hostB", GID_B, &b, fl_now_ms()), 0);
  /* An entity already known is updated even at the cap. */
  f->g.gw->nentities = FL_MAX_ENTITIES;
  assert_int_equal(fl_presence_take(f->p, "hostB", GID_B, &b, fl_now_ms()), 0);
  f->g.gw->nentities = real + 1;
}

static void test_remembered_across_restart(void **state) {
  fixture *f = *state;
  fl_beat b;
  beat_of(&b, "rob", 1);
  assert_int_equal(fl_presence_take(f->p, "hostB", GID_B, &b, fl_now_ms()), 0);
  gw_close(f);
  assert_int_equal(gw_open(f, 60), 0);
  /* Who lived where comes back, offline until its host beats again. */
  fl_entity *e = fl_entity_by_gid(f->g.gw, GID_B);
  assert_non_null(e);
  assert_true(e->remote);
  assert_string_equal(e->name, "rob");
  assert_string_equal(e->host, "hostB");
  assert_int_equal(e->ngroups, 1);
  assert_string_equal(fl_presence_status(f->p, e), "offline");
  /* A remote entity never becomes a local one. */
  assert_null(fl_entity_local_by_name(f->g.gw, "rob"));
}

/* ---- pins ------------------------------------------------------------------------ */

#define KEY_B "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="

static void test_unpinned_dropped_and_back(void **state) {
  fixture *f = *state;
  char err[256];
  fl_beat b;
  beat_of(&b, "rob", 1);
  assert_int_equal(fl_gw_peer_add(f->g.gw, "hostB", KEY_B, NULL, err, sizeof err), 0);
  assert_int_equal(fl_presence_take(f->p, "hostB", GID_B, &b, fl_now_ms()), 0);
  fl_entity *e = fl_entity_by_gid(f->g.gw, GID_B);
  assert_non_null(e);
  assert_false(e->dropped);

  /* Unpinned: dropped at once, offline, and forgotten by the store. */
  assert_int_equal(fl_gw_peer_remove(f->g.gw, "hostB", err, sizeof err), 0);
  assert_true(e->dropped);
  assert_string_equal(fl_presence_status(f->p, e), "offline");
  gw_close(f);
  assert_int_equal(gw_open(f, 60), 0);
  assert_null(fl_entity_by_gid(f->g.gw, GID_B));

  /* Remembered while its host is not pinned (here: taken by hand, as no
   * verified beat could be): loaded dropped after a restart. */
  assert_int_equal(fl_presence_take(f->p, "hostB", GID_B, &b, fl_now_ms()), 0);
  gw_close(f);
  assert_int_equal(gw_open(f, 60), 0);
  e = fl_entity_by_gid(f->g.gw, GID_B);
  assert_non_null(e);
  assert_true(e->dropped);
  /* Pinned, it loads as before. */
  assert_int_equal(fl_gw_peer_add(f->g.gw, "hostB", KEY_B, NULL, err, sizeof err), 0);
  gw_close(f);
  assert_int_equal(gw_open(f, 60), 0);
  e = fl_entity_by_gid(f->g.gw, GID_B);
  assert_non_null(e);
  assert_false(e->dropped);

  /* Dropped, pinned again, and its next beat brings it back: the store
   * remembers it again though nothing about it changed. */
  assert_int_equal(fl_gw_peer_remove(f->g.gw, "hostB", err, sizeof err), 0);
  assert_true(e->dropped);
  assert_int_equal(fl_gw_peer_add(f->g.gw, "hostB", KEY_B, NULL, err, sizeof err), 0);
  assert_int_equal(fl_presence_take(f->p, "hostB", GID_B, &b, fl_now_ms()), 0);
  assert_false(e->dropped);
  assert_string_equal(fl_presence_status(f->p, e), "online");
  gw_close(f);
  assert_int_equal(gw_open(f, 60), 0);
  e = fl_entity_by_gid(f->g.gw, GID_B);
  assert_non_null(e);
  assert_false(e->dropped);
}

typedef struct signer {
  unsigned char pk[FL_SIGN_PK_BYTES], sk[FL_SIGN_SK_BYTES];
} signer;

/* Pins host with a new key pair into s. */
static void pin_new(fixture *f, const char *host, signer *s) {
  crypto_sign_keypair(s->pk, s->sk);
  char b64[FL_SIGN_PK_B64_SIZE], err[256];
  assert_int_equal(fl_b64_encode(s->pk, sizeof s->pk, b64, sizeof b64), 0);
  assert_int_equal(fl_gw_peer_add(f->g.gw, host, b64, NULL, err, sizeof err), 0);
}

/* A PRESENCE beat of host under key gid (FL_GID_GATEWAY for its host
 * beat), in envelope version v, stamped ts_ms and signed by s (NULL:
 * unsigned), received as from the broker. */
static void receive_beat_v(fixture *f, const signer *s, const char *host, const char *gid,
                           const char *body, long long ts_ms, const char *v) {
  fl_envelope env;
  memset(&env, 0, sizeof env);
  snprintf(env.v, sizeof env.v, "%s", v);
  snprintf(env.kind, sizeof env.kind, "%s", fl_envelope_kind_name(FL_KIND_PRESENCE));
  snprintf(env.msg_id, sizeof env.msg_id, "%s", "9f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a");
  int host_beat = strcmp(gid, FL_GID_GATEWAY) == 0;
  snprintf(env.from, sizeof env.from, "%s", host_beat ? "" : gid);
  snprintf(env.from_name, sizeof env.from_name, "%s", host_beat ? FL_GID_GATEWAY : "x");
  snprintf(env.host, sizeof env.host, "%s", host);
  fl_rfc3339(ts_ms, env.ts);
  fl_rfc3339(ts_ms + 60000, env.expires_at);
  if (s)
    assert_int_equal(fl_sign_envelope(&env, body, strlen(body), s->sk), 0);
  char key[160];
  assert_int_equal(fl_topology_roster_key(key, sizeof key, host, gid), 0);
  fl_broker_delivery d = {.source = FL_BROKER_ROSTER,
                          .gid = "",
                          .exchange = "fleet.roster",
                          .routing_key = key,
                          .env = &env,
                          .body = body,
                          .len = strlen(body)};
  fl_presence_receive(f->p, &d);
}

/* The same in the envelope version this gateway writes. */
static void receive_beat(fixture *f, const signer *s, const char *host, const char *gid,
                         const char *body, long long ts_ms) {
  receive_beat_v(f, s, host, gid, body, ts_ms, FL_ENVELOPE_VERSION);
}

static void test_unpinned_beats_refused(void **state) {
  fixture *f = *state;
  const char *body = "{\"name\":\"bob\",\"role\":\"worker\",\"status\":\"online\"}";
  /* Every beat is refused and counted (the log says so once a minute). */
  for (int i = 0; i < 5; i++)
    receive_beat(f, NULL, "trialB", GID_B, body, fl_now_ms());
  assert_int_equal(f->g.gw->counters[FL_C_PRESENCE_REFUSED], 5);
  assert_int_equal(f->g.gw->counters[FL_C_VERIFY_UNPINNED], 5);
  assert_int_equal(f->g.gw->counters[FL_C_PRESENCE_RECEIVED], 0);
  assert_null(fl_entity_by_gid(f->g.gw, GID_B));
  /* What it announced is only a hint, for an error that says what to pin. */
  char host[64] = "";
  assert_int_equal(fl_presence_unpinned_claim(f->p, "bob", host, sizeof host), 1);
  assert_string_equal(host, "trialB");
  assert_int_equal(fl_presence_unpinned_claim(f->p, "carol", host, sizeof host), 0);
}

/* A gid for entity i of the reclaim test. */
static void many_gid(size_t i, char gid[FL_ID_LEN]) {
  snprintf(gid, FL_ID_LEN, "00000000-0000-4000-8000-%012x", (unsigned)i);
}

static void count_remote(void *ctx, const fl_entity_rec *r) {
  (void)r;
  (*(size_t *)ctx)++;
}

static void test_full_roster_forgets_the_stalest(void **state) {
  fixture *f = *state;
  fl_gw *gw = f->g.gw;
  fl_beat b;
  beat_of(&b, "many", 1);
  size_t base = gw->nentities, n = FL_MAX_ENTITIES - base;
  char gid[FL_ID_LEN];
  long long now = fl_now_ms();
  assert_int_equal(fl_store_batch_begin(gw->store), 0);
  for (size_t i = 0; i < n; i++) {
    many_gid(i, gid);
    assert_int_equal(fl_presence_take(f->p, "hostB", gid, &b, now), 0);
    /* Seen in order, entity 0 longest ago, and live however long this takes. */
    fl_entity *e = fl_entity_by_gid(gw, gid);
    e->last_seen_ms = now - 100000 + (long long)i;
    e->presence.expires_ms = fl_mono_ms() + 3600000; /* monotonic */
  }
  assert_int_equal(fl_store_batch_end(gw->store), 0);
  assert_int_equal(gw->nentities, FL_MAX_ENTITIES);
  /* Every one still live: a new one is refused, nothing forgotten. */
  assert_int_equal(fl_presence_take(f->p, "hostB", GID_B, &b, now), FL_EFULL);
  assert_int_equal(gw->counters[FL_C_ROSTER_FORGOTTEN], 0);

  /* Their TTL runs out; entity 7 beats again, entity 500 left. */
  for (size_t i = 0; i < n; i++) {
    many_gid(i, gid);
    fl_entity_by_gid(gw, gid)->presence.expires_ms = fl_mono_ms() - 1;
  }
  many_gid(7, gid);
  assert_int_equal(fl_presence_take(f->p, "hostB", gid, &b, fl_now_ms()), 0);
  many_gid(500, gid);
  fl_presence_forget(f->p, "hostB", gid, fl_now_ms());
  /* A listing keeps its order on the gateway: forgetting must not leave it
   * pointing at freed entities (the sanitizers would see the next one). */
  fl_entity **sorted = NULL;
  size_t nsorted = 0;
  assert_int_equal(fl_roster_sorted(gw, &sorted, &nsorted), 0);
  fl_free(sorted);
  size_t listed_before = nsorted;
  assert_int_equal(fl_presence_take(f->p, "hostB", GID_B, &b, fl_now_ms()), 0);
  uv_run(gw->loop, UV_RUN_NOWAIT); /* the forgotten entities' handles close */
  assert_int_equal(gw->counters[FL_C_ROSTER_FORGOTTEN], FL_ROSTER_RECLAIM_BATCH);
  assert_int_equal(gw->nentities, FL_MAX_ENTITIES - FL_ROSTER_RECLAIM_BATCH + 1);
  assert_non_null(fl_entity_by_gid(gw, GID_B));
  /* The one that left went first, then the longest offline: 0..99 but 7. */
  many_gid(500, gid);
  assert_null(fl_entity_by_gid(gw, gid));
  for (size_t i = 0; i < 101; i++) {
    many_gid(i, gid);
    if (i == 7 || i == 100)
      assert_non_null(fl_entity_by_gid(gw, gid));
    else
      assert_null(fl_entity_by_gid(gw, gid));
  }
  many_gid(101, gid);
  assert_non_null(fl_entity_by_gid(gw, gid));
  /* The store forgot them too: a restart does not bring them back. */
  size_t remembered = 0;
  assert_int_equal(fl_store_remote_each(gw->store, count_remote, &remembered), 0);
  assert_int_equal(remembered, gw->nentities - base);
  /* New agents fill the room again, as many as were listed before, and
   * the next listing has them all. */
  for (size_t i = 0; gw->nentities < listed_before; i++) {
    many_gid(20000 + i, gid);
    assert_int_equal(fl_presence_take(f->p, "hostB", gid, &b, fl_now_ms()), 0);
  }
  assert_int_equal(fl_roster_sorted(gw, &sorted, &nsorted), 0);
  fl_free(sorted);
  assert_int_equal(nsorted, listed_before);
  assert_int_equal(nsorted, gw->nentities);
  /* The walk of the roster still reaches every entity that is left. */
  size_t walked = 0;
  for (fl_entity *e = gw->entities; e; e = e->next)
    walked++;
  assert_int_equal(walked, gw->nentities);
}

/* ---- host beats: one signature for every entity of a host ----------------------- */

#define GID_C "7a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"

/* hostB's host beat: one spawn profile; bob and carol, and an entry with
 * a bad gid. */
static const char *host_beat_body(void) {
  return "{\"host\":\"hostB\",\"version\":\"0.1.0\",\"entities\":3,\"profiles\":"
         "[{\"name\":\"w\",\"backend\":\"tmux\",\"role\":\"worker\",\"groups\":[\"g\",\"h\"]}],"
         "\"agents\":[{\"name\":\"bob\",\"role\":\"worker\",\"groups\":[\"ops\"],"
         "\"status\":\"online\",\"delivery\":\"inject\",\"gid\":\"" GID_B "\"},"
         "{\"name\":\"carol\",\"role\":\"lead\",\"groups\":[],\"status\":\"offline\","
         "\"gid\":\"" GID_C "\"},"
         "{\"name\":\"mallory\",\"status\":\"online\",\"gid\":\"not-a-uuid\"}]}";
}

static void test_host_beat_lists_entities(void **state) {
  fixture *f = *state;
  fl_gw *gw = f->g.gw;
  signer s;
  pin_new(f, "hostB", &s);
  long long t0 = fl_now_ms();
  receive_beat(f, &s, "hostB", FL_GID_GATEWAY, host_beat_body(), t0);
  /* Both valid entries are taken under one signature; the bad gid is not. */
  fl_entity *bob = fl_entity_by_gid(gw, GID_B), *carol = fl_entity_by_gid(gw, GID_C);
  assert_non_null(bob);
  assert_non_null(carol);
  assert_true(bob->remote && carol->remote);
  assert_string_equal(bob->host, "hostB");
  assert_string_equal(bob->name, "bob");
  assert_string_equal(bob->groups[0], "ops");
  assert_true(bob->delivery_inject);
  assert_string_equal(carol->role, "lead");
  assert_string_equal(fl_presence_status(f->p, bob), "online");
  assert_string_equal(fl_presence_status(f->p, carol), "offline");
  assert_int_equal(gw->counters[FL_C_PRESENCE_RECEIVED], 2);
  assert_int_equal(gw->counters[FL_C_PRESENCE_REFUSED], 1);
  assert_int_equal(fl_presence_peers_need_entity_beats(f->p), 0);
  /* Its beat's envelope is this gateway's version, so it reads the packed
   * and the pair-sealed forms; a host never heard from reads neither. */
  assert_int_equal(fl_presence_host_minor(f->p, "hostB"), FL_ENVELOPE_PAIRSEAL_MINOR);
  assert_int_equal(fl_presence_host_minor(f->p, "hostQ"), -1);
  /* Its host and profile as fleet_list's hosts show them (written, then
   * parsed back). */
  json_t *hosts = fl_presence_hosts(f->p);
  assert_non_null(hosts);
  char *dumped = json_dumps(hosts, JSON_COMPACT);
  assert_string_equal(dumped,
                      "[{\"host\":\"hostB\",\"self\":false,\"status\":\"online\",\"profiles\":"
                      "[{\"name\":\"w\",\"backend\":\"tmux\",\"role\":\"worker\","
                      "\"groups\":[\"g\",\"h\"]}]}]");
  fl_free(dumped);
  json_decref(hosts);

  /* A newer entity beat of bob; then a host beat stamped between the two
   * is a replay for bob (refused) but still news for carol. */
  receive_beat(f, &s, "hostB", GID_B,
               "{\"name\":\"bob\",\"role\":\"worker\",\"status\":\"offline\"}", t0 + 2000);
  assert_string_equal(fl_presence_status(f->p, bob), "offline");
  receive_beat(f, &s, "hostB", FL_GID_GATEWAY, host_beat_body(), t0 + 1000);
  assert_string_equal(fl_presence_status(f->p, bob), "offline");
  assert_int_equal(carol->presence.ts_ms, t0 + 1000);
  assert_int_equal(gw->counters[FL_C_PRESENCE_REFUSED], 3); /* bob's replay, mallory again */

  /* The same host beat again is older than the last one taken: refused whole. */
  receive_beat(f, &s, "hostB", FL_GID_GATEWAY, host_beat_body(), t0);
  assert_int_equal(gw->counters[FL_C_PRESENCE_REFUSED], 4);
  assert_int_equal(carol->presence.ts_ms, t0 + 1000);

  /* Signed by another key: refused, nothing taken. */
  signer other;
  crypto_sign_keypair(other.pk, other.sk);
  unsigned long long received = gw->counters[FL_C_PRESENCE_RECEIVED];
  receive_beat(f, &other, "hostB", FL_GID_GATEWAY, host_beat_body(), t0 + 3000);
  assert_int_equal(gw->counters[FL_C_VERIFY_BAD_SIGNATURE], 1);
  assert_int_equal(gw->counters[FL_C_PRESENCE_RECEIVED], received);

  /* A host whose beat lists no entities expects one beat per entity; a
   * host on envelope 1.0 reads one header per field, until it says 1.1. */
  signer c;
  pin_new(f, "hostC", &c);
  receive_beat_v(f, &c, "hostC", FL_GID_GATEWAY,
                 "{\"host\":\"hostC\",\"version\":\"0.1.0\",\"entities\":0,\"profiles\":[]}",
                 fl_now_ms(), "1.0");
  assert_int_equal(fl_presence_peers_need_entity_beats(f->p), 1);
  assert_int_equal(fl_presence_host_minor(f->p, "hostC"), 0);
  receive_beat(f, &c, "hostC", FL_GID_GATEWAY,
               "{\"host\":\"hostC\",\"version\":\"0.1.0\",\"entities\":0,\"profiles\":[],"
               "\"agents\":[]}",
               fl_now_ms() + 1);
  assert_int_equal(fl_presence_peers_need_entity_beats(f->p), 0);
  assert_int_equal(fl_presence_host_minor(f->p, "hostC"), FL_ENVELOPE_PAIRSEAL_MINOR);
  assert_int_equal(fl_presence_host_minor(f->p, "hostB"), FL_ENVELOPE_PAIRSEAL_MINOR);
  assert_int_equal(fl_presence_host_minor(f->p, "host"), -1); /* sorts before them all */
  /* Downgraded: its next beat says 1.0 again. */
  receive_beat_v(f, &c, "hostC", FL_GID_GATEWAY,
                 "{\"host\":\"hostC\",\"version\":\"0.1.0\",\"entities\":0,\"profiles\":[],"
                 "\"agents\":[]}",
                 fl_now_ms() + 2, "1.0");
  assert_int_equal(fl_presence_host_minor(f->p, "hostC"), 0);
}

static void test_host_beat_unpinned_hint(void **state) {
  fixture *f = *state;
  signer s;
  crypto_sign_keypair(s.pk, s.sk);
  receive_beat(f, &s, "hostB", FL_GID_GATEWAY, host_beat_body(), fl_now_ms());
  assert_null(fl_entity_by_gid(f->g.gw, GID_B));
  assert_int_equal(f->g.gw->counters[FL_C_VERIFY_UNPINNED], 1);
  assert_int_equal(fl_presence_host_minor(f->p, "hostB"), -1); /* not believed */
  char host[64] = "";
  assert_int_equal(fl_presence_unpinned_claim(f->p, "carol", host, sizeof host), 1);
  assert_string_equal(host, "hostB");
}

int main(void) {
  fl_alloc_init();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parse_valid),
      cmocka_unit_test(test_parse_missing_fields),
      cmocka_unit_test(test_parse_delivery),
      cmocka_unit_test(test_parse_bad_names),
      cmocka_unit_test(test_parse_group_cap),
      cmocka_unit_test(test_fresh),
      cmocka_unit_test_setup_teardown(test_take_and_ttl, setup, teardown),
      cmocka_unit_test_setup_teardown(test_listing_follows_beats, setup, teardown),
      cmocka_unit_test_setup_teardown(test_take_refuses_claims, setup, teardown),
      cmocka_unit_test_setup_teardown(test_take_roster_cap, setup, teardown),
      cmocka_unit_test_setup_teardown(test_remembered_across_restart, setup, teardown),
      cmocka_unit_test_setup_teardown(test_unpinned_dropped_and_back, setup, teardown),
      cmocka_unit_test_setup_teardown(test_unpinned_beats_refused, setup, teardown),
      cmocka_unit_test_setup_teardown(test_host_beat_lists_entities, setup, teardown),
      cmocka_unit_test_setup_teardown(test_host_beat_unpinned_hint, setup, teardown),
      cmocka_unit_test_setup_teardown(test_full_roster_forgets_the_stalest, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
