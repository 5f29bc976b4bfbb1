/* fuzz_peers.c — fuzz target for the pinned-peer file.
 *
 * The input is the text of a peers.json. It goes through fl_peers_parse
 * (the parser fl_peers_load runs on what it read). The seed corpus holds
 * valid pin lists and near misses of them. Invariants, checked on every
 * input (a violation aborts):
 *   - a load either succeeds with a set, or fails with FL_ECONFIG or
 *     FL_EFULL, no set, and a terminated, non-empty message that names the
 *     file;
 *   - a loaded set holds at most FL_PEERS_MAX pins in strictly increasing
 *     host order (so no host twice), each host passing the name rule, each
 *     pk_b64 the 44-character padded base64 of its 32-byte key, each url
 *     empty or printable without spaces, each pinnedAt non-empty, and
 *     lookup of each host yields its key;
 *   - what the file pins is what `fleetctl peer add` would pin: adding every
 *     loaded pin to an empty set succeeds and gives the same set;
 *   - a loaded pin keeps its key: adding another key for its host is
 *     refused with FL_EPINNED and changes nothing;
 *   - nothing leaks (the sanitizers' leak check at exit).
 * Built as a libFuzzer target with -DFLEET_FUZZ=ON (clang), and always as a
 * replay test that runs the seed corpus plus deterministic mutations. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/limits.h"
#include "common/names.h"
#include "gateway/proto/peers.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_PATH "fuzz/peers.json"

static void fz_fail(const char *why, const char *detail) {
  fprintf(stderr, "fuzz_peers: invariant broken: %s: %.300s\n", why, detail);
  abort();
}

static void fz_check_pin(const fl_peers *p, const fl_peer *pin) {
  if (!memchr(pin->host, '\0', sizeof pin->host) || !fl_name_valid(pin->host, FL_MAX_NAME))
    fz_fail("a pinned host breaks the name rule", pin->host);
  if (!memchr(pin->pk_b64, '\0', sizeof pin->pk_b64) || strlen(pin->pk_b64) != 44)
    fz_fail("pk_b64 is not 44 characters", pin->host);
  unsigned char back[FL_SIGN_PK_BYTES];
  size_t got = 0;
  if (fl_b64_decode(pin->pk_b64, back, sizeof back, &got) != 0 || got != sizeof back ||
      memcmp(back, pin->pk, sizeof back) != 0)
    fz_fail("pk_b64 does not decode to the key", pin->pk_b64);
  if (!memchr(pin->url, '\0', sizeof pin->url))
    fz_fail("url is not terminated", pin->host);
  for (const char *c = pin->url; *c; c++)
    if ((unsigned char)*c <= 0x20 || (unsigned char)*c >= 0x7f)
      fz_fail("url has a space or a byte that is not printable ASCII", pin->url);
  if (!memchr(pin->pinned_at, '\0', sizeof pin->pinned_at) || !pin->pinned_at[0])
    fz_fail("pinnedAt is empty or not terminated", pin->host);
  unsigned char pk[FL_SIGN_PK_BYTES];
  if (fl_peers_lookup(p, pin->host, pk) != 0 || memcmp(pk, pin->pk, sizeof pk) != 0)
    fz_fail("lookup does not give the pinned key", pin->host);
}

/* The same pins through fl_peers_add on an empty set. */
static void fz_check_add(const fl_peers *p) {
  static const char empty[] = "{\"version\": 1, \"peers\": {}}";
  fl_peers *q = NULL;
  char err[1024];
  if (fl_peers_parse(FZ_PATH, empty, sizeof empty - 1, &q, err, sizeof err) != 0)
    fz_fail("an empty pin list does not load", err);
  size_t n = fl_peers_count(p);
  for (size_t i = 0; i < n; i++) {
    const fl_peer *pin = fl_peers_at(p, i);
    if (fl_peers_add(q, pin->host, pin->pk_b64, pin->url[0] ? pin->url : NULL, err, sizeof err))
      fz_fail("a pin the file holds is one add refuses", err);
  }
  if (fl_peers_count(q) != n)
    fz_fail("adding the loaded pins gave another count", "");
  for (size_t i = 0; i < n; i++) {
    const fl_peer *a = fl_peers_at(p, i), *b = fl_peers_at(q, i);
    if (strcmp(a->host, b->host) || memcmp(a->pk, b->pk, sizeof a->pk) || strcmp(a->url, b->url) ||
        strcmp(a->pk_b64, b->pk_b64))
      fz_fail("adding the loaded pins gave another set", a->host);
  }
  fl_peers_free(&q);
}

/* Another key for a loaded host is refused and changes nothing. */
static void fz_check_pinned(fl_peers *p) {
  if (fl_peers_count(p) == 0)
    return;
  fl_peer pin = *fl_peers_at(p, 0);
  unsigned char other[FL_SIGN_PK_BYTES];
  memcpy(other, pin.pk, sizeof other);
  other[0] ^= 1;
  char b64[FL_SIGN_PK_B64_SIZE], err[1024] = "";
  if (fl_b64_encode(other, sizeof other, b64, sizeof b64) != 0)
    fz_fail("cannot encode a key", "");
  size_t n = fl_peers_count(p);
  if (fl_peers_add(p, pin.host, b64, NULL, err, sizeof err) != FL_EPINNED || !err[0])
    fz_fail("another key for a pinned host was not refused with FL_EPINNED", pin.host);
  const fl_peer *now = fl_peers_at(p, 0);
  if (fl_peers_count(p) != n || memcmp(now->pk, pin.pk, sizeof pin.pk) != 0 ||
      strcmp(now->url, pin.url) != 0)
    fz_fail("a refused add changed the pin", pin.host);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fl_peers *p = (fl_peers *)&p; /* not NULL, so a failure must clear it */
  char err[1024];
  memset(err, 0xAA, sizeof err);
  err[0] = '\0';
  int rc = fl_peers_parse(FZ_PATH, (const char *)data, size, &p, err, sizeof err);
  if (!memchr(err, '\0', sizeof err))
    fz_fail("the message is not terminated", "");
  if (rc != 0) {
    if (rc != FL_ECONFIG && rc != FL_EFULL)
      fz_fail("refused with a code other than FL_ECONFIG or FL_EFULL", fl_strerror(rc));
    if (p != NULL)
      fz_fail("a refused load left a set", err);
    if (!err[0] || !strstr(err, FZ_PATH))
      fz_fail("the message is empty or does not name the file", err);
    return 0;
  }
  if (!p)
    fz_fail("a load succeeded without a set", "");
  size_t n = fl_peers_count(p);
  if (n > FL_PEERS_MAX)
    fz_fail("more pins than FL_PEERS_MAX", "");
  for (size_t i = 0; i < n; i++) {
    const fl_peer *pin = fl_peers_at(p, i);
    if (!pin)
      fz_fail("a pin below the count is missing", "");
    if (i > 0 && strcmp(fl_peers_at(p, i - 1)->host, pin->host) >= 0)
      fz_fail("pins are not in strictly increasing host order", pin->host);
    fz_check_pin(p, pin);
  }
  if (fl_peers_at(p, n) != NULL)
    fz_fail("a pin past the count", "");
  fz_check_add(p);
  fz_check_pinned(p);
  fl_peers_free(&p);
  return 0;
}
