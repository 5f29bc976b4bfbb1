/* fuzz_room_merge.c — fuzz target for the merge path of room federation.
 *
 * The input is the HTTP body of one pull: what a peer answered for
 * GET /v1/rooms/{roomId}. It goes through fl_rooms_merge on a real gateway
 * (a temporary state dir, rooms on, nothing served, a cap of 64 messages per
 * room) that has registered "#fuzz" and pinned host "hostH" to the key of a
 * fixed seed (0x42 repeated), so the seed corpus (signed pages made with that
 * key) reaches the per-message checks. Invariants, checked on every input (a
 * violation aborts):
 *   - the merge returns 0 (the page was read) or FL_EPROTO (refused whole);
 *   - merged plus dropped never exceeds the messages the page could hold;
 *   - the room never holds more than its cap, and everything in it reads
 *     back through fleet_room_watch with origin hostH or hostA (the only
 *     keys that can sign) and hops between 1 and FL_ROOM_MAX_HOPS;
 *   - nothing leaks (the sanitizers' leak check at exit).
 * Built as a libFuzzer target with -DFLEET_FUZZ=ON (clang), and always as a
 * replay test that runs the seed corpus plus deterministic mutations. */
#include <sodium.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "gateway/core/gw_internal.h"
#include "gateway/rooms/room.h"
#include "tests/support/test_gw.h"
#include "tests/support/test_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_CAP 64

static struct {
  fl_test_gw g;
  char room_id[FL_ROOM_ID_SIZE];
} fz;

static void fz_cleanup(void) { fl_test_gw_close(&fz.g); }

static void fz_check(int ok) {
  if (!ok)
    abort();
}

static void fz_init(void) {
  char err[256];
  if (fl_test_init() != 0 || fl_test_gw_open(&fz.g, "fuzz-room") != 0)
    abort();
  fl_test_gw_stop(&fz.g);
  fz.g.cfg.rooms_on = 1;
  fz.g.cfg.rooms_sync_interval_s = 3600;
  fz.g.cfg.rooms_max_messages = FZ_CAP;
  if (fl_test_gw_start(&fz.g) != 0)
    abort();
  unsigned char seed[32], pk[32], sk[64];
  memset(seed, 0x42, sizeof seed);
  crypto_sign_seed_keypair(pk, sk, seed);
  char b64[FL_SIGN_PK_B64_SIZE];
  fz_check(fl_b64_encode(pk, sizeof pk, b64, sizeof b64) == 0);
  fz_check(fl_gw_peer_add(fz.g.gw, "hostH", b64, "http://127.0.0.1:9", err, sizeof err) == 0);
  fz_check(fl_rooms_register(fz.g.gw, "#fuzz", fz.room_id, err, sizeof err) == 0);
  atexit(fz_cleanup);
}

static void fz_check_room(void) {
  json_t *res = NULL;
  fl_wait *wait = NULL;
  char err[256];
  fz_check(fl_gw_room_watch(fz.g.gw, NULL, fz.room_id, 0, 0, FL_ROOM_MAX_PAGE, NULL, NULL, &res,
                            &wait, err, sizeof err) == 0);
  json_t *msgs = json_object_get(res, "messages"), *m;
  fz_check(json_array_size(msgs) <= FZ_CAP);
  size_t i;
  json_array_foreach(msgs, i, m) {
    const char *origin = json_string_value(json_object_get(m, "origin"));
    json_int_t hops = json_integer_value(json_object_get(m, "hops"));
    fz_check(origin && (strcmp(origin, "hostH") == 0 || strcmp(origin, "hostA") == 0));
    fz_check(hops >= 1 && hops <= FL_ROOM_MAX_HOPS);
    fz_check(json_is_object(json_object_get(m, "payload")));
  }
  json_decref(res);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!fz.g.gw)
    fz_init();
  fl_merge_result res;
  char err[512];
  int rc =
      fl_rooms_merge(fz.g.gw, "hostH", fz.room_id, (const char *)data, size, &res, err, sizeof err);
  fz_check(rc == 0 || rc == FL_EPROTO);
  size_t total = res.merged;
  for (int k = 0; k < FL_ROOM_DROP_COUNT; k++)
    total += res.dropped[k];
  fz_check(total <= size / 2 + 1);
  fz_check_room();
  return 0;
}
