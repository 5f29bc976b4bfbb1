/* test_seal.c — sealed bodies (gateway/proto/seal.c): a round trip between two
 * gateways' node keys, a flipped byte, the wrong recipient or sender, short
 * and empty bodies, the size cap, and the "sealed" vectors of
 * schema/signing-vectors.json (X25519 keys, sealed bytes, canonical form
 * with sealedTo, signature over the ciphertext). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <jansson.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/limits.h"
#include "gateway/proto/seal.h"
#include "gateway/proto/sign.h"

extern const char fl_schema_signing_vectors[];

typedef struct keys {
  unsigned char pk[FL_SIGN_PK_BYTES], sk[FL_SIGN_SK_BYTES];
} keys;

static keys alpha, beta, gamma_;

static int setup(void **state) {
  (void)state;
  if (sodium_init() < 0)
    return -1;
  crypto_sign_keypair(alpha.pk, alpha.sk);
  crypto_sign_keypair(beta.pk, beta.sk);
  crypto_sign_keypair(gamma_.pk, gamma_.sk);
  return 0;
}

static void test_round_trip(void **state) {
  (void)state;
  const char *msg = "secret for bob only: Grüße";
  unsigned char *sealed = NULL;
  size_t slen = 0;
  assert_int_equal(fl_seal(msg, strlen(msg), NULL, beta.pk, alpha.sk, &sealed, &slen), 0);
  assert_int_equal(slen, strlen(msg) + FL_SEAL_OVERHEAD);
  /* The clear text is nowhere in the sealed bytes. */
  assert_null(memmem(sealed, slen, "secret", 6));
  char *plain = NULL;
  size_t plen = 0;
  assert_int_equal(fl_unseal(sealed, slen, alpha.pk, beta.sk, &plain, &plen), 0);
  assert_int_equal(plen, strlen(msg));
  assert_string_equal(plain, msg);
  fl_free(plain);

  /* Two seals of the same body differ: a fresh nonce each time. */
  unsigned char *again = NULL;
  size_t alen = 0;
  assert_int_equal(fl_seal(msg, strlen(msg), NULL, beta.pk, alpha.sk, &again, &alen), 0);
  assert_int_equal(alen, slen);
  assert_true(memcmp(again, sealed, slen) != 0);
  fl_free(again);
  fl_free(sealed);

  /* An empty body seals to just the nonce and the MAC, and opens to "". */
  assert_int_equal(fl_seal("", 0, NULL, beta.pk, alpha.sk, &sealed, &slen), 0);
  assert_int_equal(slen, FL_SEAL_OVERHEAD);
  assert_int_equal(fl_unseal(sealed, slen, alpha.pk, beta.sk, &plain, &plen), 0);
  assert_int_equal(plen, 0);
  assert_string_equal(plain, "");
  fl_free(plain);
  fl_free(sealed);
}

static void test_flipped_byte(void **state) {
  (void)state;
  const char *msg = "hello beta";
  unsigned char *sealed = NULL;
  size_t slen = 0;
  assert_int_equal(fl_seal(msg, strlen(msg), NULL, beta.pk, alpha.sk, &sealed, &slen), 0);
  /* Any one byte changed — nonce, MAC or ciphertext — and it does not open. */
  for (size_t i = 0; i < slen; i++) {
    sealed[i] ^= 0x01;
    char *plain = (char *)1;
    size_t plen = 99;
    assert_int_equal(fl_unseal(sealed, slen, alpha.pk, beta.sk, &plain, &plen), FL_EBADSIG);
    assert_null(plain);
    assert_int_equal(plen, 0);
    sealed[i] ^= 0x01;
  }
  /* One byte fewer, or too short to hold a nonce and a MAC. */
  char *plain = NULL;
  size_t plen = 0;
  assert_int_equal(fl_unseal(sealed, slen - 1, alpha.pk, beta.sk, &plain, &plen), FL_EBADSIG);
  assert_int_equal(fl_unseal(sealed, FL_SEAL_OVERHEAD - 1, alpha.pk, beta.sk, &plain, &plen),
                   FL_EBADSIG);
  assert_int_equal(fl_unseal(sealed, 0, alpha.pk, beta.sk, &plain, &plen), FL_EBADSIG);
  /* Untouched, it still opens. */
  assert_int_equal(fl_unseal(sealed, slen, alpha.pk, beta.sk, &plain, &plen), 0);
  fl_free(plain);
  fl_free(sealed);
}

static void test_wrong_recipient(void **state) {
  (void)state;
  const char *msg = "for beta";
  unsigned char *sealed = NULL;
  size_t slen = 0;
  assert_int_equal(fl_seal(msg, strlen(msg), NULL, beta.pk, alpha.sk, &sealed, &slen), 0);
  char *plain = NULL;
  size_t plen = 0;
  /* gamma cannot open what alpha sealed to beta (a box's key is the pair's
   * shared secret, so only alpha and beta hold it) ... */
  assert_int_equal(fl_unseal(sealed, slen, alpha.pk, gamma_.sk, &plain, &plen), FL_EBADSIG);
  assert_int_equal(fl_unseal(sealed, slen, beta.pk, gamma_.sk, &plain, &plen), FL_EBADSIG);
  /* ... and beta finds it was not sealed by gamma. */
  assert_int_equal(fl_unseal(sealed, slen, gamma_.pk, beta.sk, &plain, &plen), FL_EBADSIG);
  assert_null(plain);
  fl_free(sealed);
}

/* The box key of a pair is the same from both ends, and sealing with it is
 * sealing with the two keys. */
static void test_shared_key(void **state) {
  (void)state;
  unsigned char kab[FL_SEAL_KEY_BYTES], kba[FL_SEAL_KEY_BYTES], kag[FL_SEAL_KEY_BYTES];
  assert_int_equal(fl_seal_shared(beta.pk, alpha.sk, kab), 0);
  assert_int_equal(fl_seal_shared(alpha.pk, beta.sk, kba), 0);
  assert_int_equal(fl_seal_shared(gamma_.pk, alpha.sk, kag), 0);
  assert_memory_equal(kab, kba, sizeof kab);
  assert_true(memcmp(kab, kag, sizeof kab) != 0);
  unsigned char *sealed = NULL;
  size_t slen = 0;
  char *plain = NULL;
  size_t plen = 0;
  assert_int_equal(fl_seal_with(kab, "with the box key", 16, NULL, &sealed, &slen), 0);
  assert_int_equal(fl_unseal(sealed, slen, alpha.pk, beta.sk, &plain, &plen), 0);
  assert_string_equal(plain, "with the box key");
  fl_free(plain);
  assert_int_equal(fl_unseal_with(kag, sealed, slen, &plain, &plen), FL_EBADSIG);
  fl_free(sealed);
  assert_int_equal(fl_seal("two keys", 8, NULL, beta.pk, alpha.sk, &sealed, &slen), 0);
  assert_int_equal(fl_unseal_with(kba, sealed, slen, &plain, &plen), 0);
  assert_string_equal(plain, "two keys");
  fl_free(plain);
  fl_free(sealed);
  unsigned char bad[FL_SIGN_PK_BYTES];
  memset(bad, 0xff, sizeof bad);
  assert_int_equal(fl_seal_shared(bad, alpha.sk, kab), FL_EINVAL);
}

static void test_arguments(void **state) {
  (void)state;
  unsigned char *sealed = NULL;
  size_t slen = 0;
  char *plain = NULL;
  size_t plen = 0;
  assert_int_equal(fl_seal(NULL, 1, NULL, beta.pk, alpha.sk, &sealed, &slen), FL_EINVAL);
  assert_int_equal(fl_seal("x", 1, NULL, NULL, alpha.sk, &sealed, &slen), FL_EINVAL);
  assert_int_equal(fl_seal("x", 1, NULL, beta.pk, NULL, &sealed, &slen), FL_EINVAL);
  assert_int_equal(fl_unseal(NULL, 1, alpha.pk, beta.sk, &plain, &plen), FL_EINVAL);
  /* A public key that is no curve point cannot be sealed to. */
  unsigned char bad[FL_SIGN_PK_BYTES];
  memset(bad, 0xff, sizeof bad);
  unsigned char x[FL_SEAL_KEY_BYTES];
  assert_int_equal(fl_seal_x25519_pk(bad, x), FL_EINVAL);
  assert_int_equal(fl_seal("x", 1, NULL, bad, alpha.sk, &sealed, &slen), FL_EINVAL);
  assert_null(sealed);
  /* The size cap: content at FL_MAX_CONTENT seals to FL_MAX_WIRE_BODY bytes. */
  char *big = malloc(FL_MAX_CONTENT + 1);
  assert_non_null(big);
  memset(big, 'a', FL_MAX_CONTENT + 1);
  assert_int_equal(fl_seal(big, FL_MAX_CONTENT + 1, NULL, beta.pk, alpha.sk, &sealed, &slen),
                   FL_ETOOBIG);
  assert_int_equal(fl_seal(big, FL_MAX_CONTENT, NULL, beta.pk, alpha.sk, &sealed, &slen), 0);
  assert_int_equal(slen, FL_MAX_WIRE_BODY);
  assert_int_equal(fl_unseal(sealed, slen, alpha.pk, beta.sk, &plain, &plen), 0);
  assert_int_equal(plen, FL_MAX_CONTENT);
  assert_memory_equal(plain, big, FL_MAX_CONTENT);
  fl_free(plain);
  fl_free(sealed);
  free(big);
}

static void from_hex(const char *hex, unsigned char *out, size_t n) {
  size_t got = 0;
  assert_int_equal(sodium_hex2bin(out, n, hex, strlen(hex), NULL, &got, NULL), 0);
  assert_int_equal(got, n);
}

static void assert_hex(const unsigned char *b, size_t n, const char *want, const char *what) {
  char *hex = malloc(2 * n + 1);
  assert_non_null(hex);
  sodium_bin2hex(hex, 2 * n + 1, b, n);
  if (strcmp(hex, want) != 0)
    fail_msg("%s differs:\n got %s\nwant %s", what, hex, want);
  free(hex);
}

static const char *str(json_t *o, const char *k) {
  const char *s = json_string_value(json_object_get(o, k));
  if (!s)
    fail_msg("vector has no string %s", k);
  return s;
}

static void test_vectors(void **state) {
  (void)state;
  json_error_t jerr;
  json_t *root = json_loads(fl_schema_signing_vectors, 0, &jerr);
  if (!root)
    fail_msg("schema/signing-vectors.json: %d: %s", jerr.line, jerr.text);
  json_t *vectors = json_object_get(root, "sealed");
  assert_true(json_array_size(vectors) >= 2);
  size_t i;
  json_t *vec;
  int empty = 0;
  json_array_foreach(vectors, i, vec) {
    keys s, r;
    unsigned char seed[32], nonce[FL_SEAL_NONCE_BYTES];
    from_hex(str(vec, "senderSeed"), seed, sizeof seed);
    crypto_sign_seed_keypair(s.pk, s.sk, seed);
    from_hex(str(vec, "recipientSeed"), seed, sizeof seed);
    crypto_sign_seed_keypair(r.pk, r.sk, seed);
    char b64[FL_SIGN_PK_B64_SIZE];
    fl_b64_encode(s.pk, sizeof s.pk, b64, sizeof b64);
    assert_string_equal(b64, str(vec, "senderPublicKey"));
    fl_b64_encode(r.pk, sizeof r.pk, b64, sizeof b64);
    assert_string_equal(b64, str(vec, "recipientPublicKey"));
    unsigned char x[FL_SEAL_KEY_BYTES];
    assert_int_equal(fl_seal_x25519_pk(s.pk, x), 0);
    assert_hex(x, sizeof x, str(vec, "senderX25519"), "sender X25519 key");
    assert_int_equal(fl_seal_x25519_pk(r.pk, x), 0);
    assert_hex(x, sizeof x, str(vec, "recipientX25519"), "recipient X25519 key");
    /* The secret half matches the public half: X25519 base point times it. */
    unsigned char xs[FL_SEAL_KEY_BYTES], xp[FL_SEAL_KEY_BYTES];
    assert_int_equal(fl_seal_x25519_sk(r.sk, xs), 0);
    assert_int_equal(crypto_scalarmult_base(xp, xs), 0);
    assert_memory_equal(xp, x, sizeof x);

    from_hex(str(vec, "nonce"), nonce, sizeof nonce);
    const char *body = str(vec, "body");
    size_t blen = strlen(body);
    empty |= blen == 0;
    unsigned char *sealed = NULL;
    size_t slen = 0;
    assert_int_equal(fl_seal(body, blen, nonce, r.pk, s.sk, &sealed, &slen), 0);
    assert_hex(sealed, slen, str(vec, "sealedHex"), "sealed bytes");
    char *plain = NULL;
    size_t plen = 0;
    assert_int_equal(fl_unseal(sealed, slen, s.pk, r.sk, &plain, &plen), 0);
    assert_int_equal(plen, blen);
    assert_memory_equal(plain, body, blen);
    fl_free(plain);

    fl_envelope env;
    memset(&env, 0, sizeof env);
    const char *key;
    json_t *val;
    json_object_foreach(json_object_get(vec, "envelope"), key, val) {
      const fl_envelope_field *f = fl_envelope_field_find(key, strlen(key));
      assert_non_null(f);
      assert_true(f->is_signed);
      assert_int_equal(fl_envelope_set(&env, f, json_string_value(val), json_string_length(val)),
                       0);
    }
    assert_true(env.sealed_to[0] != '\0');
    unsigned char *canon = NULL;
    size_t clen = 0;
    assert_int_equal(fl_sign_canonical(&env, (const char *)sealed, slen, &canon, &clen), 0);
    assert_hex(canon, clen, str(vec, "canonicalHex"), "canonical bytes");
    fl_free(canon);
    assert_int_equal(fl_sign_envelope(&env, (const char *)sealed, slen, s.sk), 0);
    assert_string_equal(env.sig, str(vec, "signature"));
    assert_int_equal(fl_verify_envelope(&env, (const char *)sealed, slen, s.pk), 0);
    /* sealedTo is covered: changed or stripped, the signature fails. */
    fl_envelope t = env;
    t.sealed_to[0] ^= 0x01;
    assert_int_equal(fl_verify_envelope(&t, (const char *)sealed, slen, s.pk), FL_EBADSIG);
    t = env;
    t.sealed_to[0] = '\0';
    assert_int_equal(fl_verify_envelope(&t, (const char *)sealed, slen, s.pk), FL_EBADSIG);
    fl_free(sealed);
  }
  assert_true(empty);
  json_decref(root);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_round_trip),      cmocka_unit_test(test_flipped_byte),
      cmocka_unit_test(test_wrong_recipient), cmocka_unit_test(test_shared_key),
      cmocka_unit_test(test_arguments),       cmocka_unit_test(test_vectors),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
