/* fuzz_identity.c — fuzz target for the node identity file.
 *
 * The input is the text of a node-identity.json. It goes through
 * fl_identity_parse (the parser fl_identity_load runs on what it read) for
 * host id "fuzz-host", into an fl_identity poisoned beforehand, so a field
 * left half-set shows. The seed corpus holds a valid file for that host id
 * (a key pair from a fixed seed) and near misses of it, so mutations reach
 * every check. Invariants, checked on every input (a violation aborts):
 *   - a load either succeeds or fails with FL_ECONFIG and a terminated,
 *     non-empty message that names the file; a failed load leaves the
 *     whole fl_identity zero (no half-set field, no key bytes left);
 *   - a load that succeeds yields host id "fuzz-host" (which passes the
 *     name rule), a public key that is the one the secret key derives,
 *     pk_b64 the 44-character padded base64 of that key, and a pair that
 *     signs and verifies;
 *   - the same text loaded for another host id is refused with FL_ECONFIG,
 *     a zero fl_identity and a message naming both host ids;
 *   - nothing leaks (the sanitizers' leak check at exit).
 * Built as a libFuzzer target with -DFLEET_FUZZ=ON (clang), and always as a
 * replay test that runs the seed corpus plus deterministic mutations. */
#include <sodium.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/limits.h"
#include "common/names.h"
#include "gateway/proto/identity.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_PATH "fuzz/node-identity.json"
#define FZ_HOST "fuzz-host"
#define FZ_OTHER "other-host"

static void fz_fail(const char *why, const char *detail) {
  fprintf(stderr, "fuzz_identity: invariant broken: %s: %.300s\n", why, detail);
  abort();
}

static int fz_all_zero(const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++)
    if (b[i])
      return 0;
  return 1;
}

/* A refused load: the one code, a message naming the file, nothing set. */
static void fz_check_refused(int rc, const fl_identity *id, const char *err) {
  if (rc != FL_ECONFIG)
    fz_fail("refused with a code other than FL_ECONFIG", fl_strerror(rc));
  if (!err[0])
    fz_fail("refused without a message", "");
  if (!strstr(err, FZ_PATH))
    fz_fail("the message does not name the file", err);
  if (!fz_all_zero(id, sizeof *id))
    fz_fail("a refused load left fields set", err);
}

static void fz_check_loaded(const fl_identity *id) {
  if (strcmp(id->host_id, FZ_HOST) != 0 || !fl_name_valid(id->host_id, FL_MAX_NAME))
    fz_fail("loaded a host id other than the one asked for", id->host_id);
  unsigned char pk[FL_SIGN_PK_BYTES];
  if (crypto_sign_ed25519_sk_to_pk(pk, id->sk) != 0 || memcmp(pk, id->pk, sizeof pk) != 0)
    fz_fail("the public key is not the secret key's", id->pk_b64);
  unsigned char seed_pk[FL_SIGN_PK_BYTES], seed_sk[FL_SIGN_SK_BYTES];
  crypto_sign_seed_keypair(seed_pk, seed_sk, id->sk);
  if (memcmp(seed_sk, id->sk, sizeof seed_sk) != 0)
    fz_fail("the secret key is not the pair its seed yields", id->pk_b64);
  if (!memchr(id->pk_b64, '\0', sizeof id->pk_b64) || strlen(id->pk_b64) != 44)
    fz_fail("pk_b64 is not 44 characters", "");
  unsigned char back[FL_SIGN_PK_BYTES];
  size_t got = 0;
  if (fl_b64_decode(id->pk_b64, back, sizeof back, &got) != 0 || got != sizeof back ||
      memcmp(back, id->pk, sizeof back) != 0)
    fz_fail("pk_b64 does not decode to the public key", id->pk_b64);
  static const unsigned char msg[] = "fleet-envelope/1\nfuzz";
  unsigned char sig[FL_SIGN_SIG_BYTES];
  crypto_sign_detached(sig, NULL, msg, sizeof msg, id->sk);
  if (crypto_sign_verify_detached(sig, msg, sizeof msg, id->pk) != 0)
    fz_fail("the loaded pair does not sign and verify", id->pk_b64);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fl_identity id;
  char err[1024];
  memset(&id, 0xAA, sizeof id);
  memset(err, 0xAA, sizeof err);
  err[0] = '\0';
  int rc = fl_identity_parse(FZ_PATH, (const char *)data, size, FZ_HOST, &id, err, sizeof err);
  if (!memchr(err, '\0', sizeof err))
    fz_fail("the message is not terminated", "");
  if (rc != 0) {
    fz_check_refused(rc, &id, err);
    return 0;
  }
  fz_check_loaded(&id);
  fl_identity_clear(&id);
  if (!fz_all_zero(&id, sizeof id))
    fz_fail("fl_identity_clear left bytes", "");

  /* A file made for one host id never loads as another. */
  memset(&id, 0xAA, sizeof id);
  err[0] = '\0';
  rc = fl_identity_parse(FZ_PATH, (const char *)data, size, FZ_OTHER, &id, err, sizeof err);
  fz_check_refused(rc, &id, err);
  if (!strstr(err, "\"" FZ_HOST "\"") || !strstr(err, "\"" FZ_OTHER "\""))
    fz_fail("the host id mismatch does not name both ids", err);
  return 0;
}
