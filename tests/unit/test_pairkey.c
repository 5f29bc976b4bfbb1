/* test_pairkey.c — pair keys and the pair-sealed form (gateway/proto/pairkey.c):
 * both ends derive the same key, each direction and each pair of host ids
 * its own; the AEAD opens only under its key and its associated data (the
 * canonical head, sign.h); the per-peer cache keeps keys per pinned key,
 * drops them on unpin or a new pin; and the "pairSealed" vectors of
 * schema/signing-vectors.json. */
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
#include "gateway/proto/pairkey.h"
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

static void test_derive(void **state) {
  (void)state;
  unsigned char ab_a[32], ab_b[32], ba_a[32], ba_b[32], other[32];
  /* alpha -> beta, computed at either end. */
  assert_int_equal(fl_pairkey_derive(alpha.sk, beta.pk, "alpha", "beta", 1, ab_a), 0);
  assert_int_equal(fl_pairkey_derive(beta.sk, alpha.pk, "alpha", "beta", 0, ab_b), 0);
  assert_memory_equal(ab_a, ab_b, 32);
  /* beta -> alpha is another key, again the same at both ends. */
  assert_int_equal(fl_pairkey_derive(beta.sk, alpha.pk, "beta", "alpha", 1, ba_b), 0);
  assert_int_equal(fl_pairkey_derive(alpha.sk, beta.pk, "beta", "alpha", 0, ba_a), 0);
  assert_memory_equal(ba_a, ba_b, 32);
  assert_memory_not_equal(ab_a, ba_a, 32);
  /* The host ids are bound: the same keys under other names give another key. */
  assert_int_equal(fl_pairkey_derive(alpha.sk, beta.pk, "alpha", "gamma", 1, other), 0);
  assert_memory_not_equal(ab_a, other, 32);
  assert_int_equal(fl_pairkey_derive(alpha.sk, beta.pk, "alph", "abeta", 1, other), 0);
  assert_memory_not_equal(ab_a, other, 32);
  /* Another peer, another key. */
  assert_int_equal(fl_pairkey_derive(alpha.sk, gamma_.pk, "alpha", "beta", 1, other), 0);
  assert_memory_not_equal(ab_a, other, 32);
  /* Refused: no host, a too-long host, NULLs, a key that is no point. */
  char longhost[FL_HOST_ID_SIZE + 1];
  memset(longhost, 'h', sizeof longhost - 1);
  longhost[sizeof longhost - 1] = '\0';
  assert_int_equal(fl_pairkey_derive(alpha.sk, beta.pk, "", "beta", 1, other), FL_EINVAL);
  assert_int_equal(fl_pairkey_derive(alpha.sk, beta.pk, longhost, "beta", 1, other), FL_EINVAL);
  assert_int_equal(fl_pairkey_derive(NULL, beta.pk, "a", "b", 1, other), FL_EINVAL);
  assert_int_equal(fl_pairkey_derive(alpha.sk, NULL, "a", "b", 1, other), FL_EINVAL);
  assert_int_equal(fl_pairkey_derive(alpha.sk, beta.pk, "a", "b", 1, NULL), FL_EINVAL);
  unsigned char bad[FL_SIGN_PK_BYTES];
  memset(bad, 0xff, sizeof bad);
  assert_int_equal(fl_pairkey_derive(alpha.sk, bad, "a", "b", 1, other), FL_EINVAL);
  /* The identity point converts, but its shared secret is all zeros. */
  unsigned char ident[FL_SIGN_PK_BYTES] = {1};
  assert_int_equal(fl_pairkey_derive(alpha.sk, ident, "a", "b", 1, other), FL_EINVAL);
  unsigned char zero[32] = {0};
  assert_memory_equal(other, zero, 32);
}

static void test_aead(void **state) {
  (void)state;
  unsigned char k[32], kr[32];
  assert_int_equal(fl_pairkey_derive(alpha.sk, beta.pk, "alpha", "beta", 1, k), 0);
  assert_int_equal(fl_pairkey_derive(alpha.sk, beta.pk, "beta", "alpha", 0, kr), 0);
  const unsigned char ad[] = "fleet-envelope/1\nv:3:1.2\n";
  size_t adlen = sizeof ad - 1;
  const char *msg = "secret for beta: Grüße";
  unsigned char *sealed = NULL;
  size_t slen = 0;
  assert_int_equal(fl_aead_seal(k, ad, adlen, msg, strlen(msg), NULL, &sealed, &slen), 0);
  assert_int_equal(slen, strlen(msg) + FL_SEAL_OVERHEAD);
  assert_null(memmem(sealed, slen, "secret", 6));
  char *plain = NULL;
  size_t plen = 0;
  assert_int_equal(fl_aead_open(k, ad, adlen, sealed, slen, &plain, &plen), 0);
  assert_int_equal(plen, strlen(msg));
  assert_string_equal(plain, msg);
  fl_free(plain);
  /* Any byte of the seal changed: it does not open. */
  for (size_t i = 0; i < slen; i++) {
    sealed[i] ^= 0x01;
    assert_int_equal(fl_aead_open(k, ad, adlen, sealed, slen, &plain, &plen), FL_EBADSIG);
    assert_null(plain);
    sealed[i] ^= 0x01;
  }
  /* Any byte of the associated data changed, or some cut off: it does not open. */
  unsigned char ad2[sizeof ad];
  for (size_t i = 0; i < adlen; i++) {
    memcpy(ad2, ad, sizeof ad);
    ad2[i] ^= 0x01;
    assert_int_equal(fl_aead_open(k, ad2, adlen, sealed, slen, &plain, &plen), FL_EBADSIG);
  }
  assert_int_equal(fl_aead_open(k, ad, adlen - 1, sealed, slen, &plain, &plen), FL_EBADSIG);
  /* The other direction's key, or a short seal, does not open it. */
  assert_int_equal(fl_aead_open(kr, ad, adlen, sealed, slen, &plain, &plen), FL_EBADSIG);
  assert_int_equal(fl_aead_open(k, ad, adlen, sealed, FL_SEAL_OVERHEAD - 1, &plain, &plen),
                   FL_EBADSIG);
  assert_int_equal(fl_aead_open(k, ad, adlen, sealed, slen - 1, &plain, &plen), FL_EBADSIG);
  fl_free(sealed);
  /* An empty body: just the nonce and the tag; two seals differ. */
  unsigned char *again = NULL;
  size_t alen = 0;
  assert_int_equal(fl_aead_seal(k, ad, adlen, "", 0, NULL, &sealed, &slen), 0);
  assert_int_equal(fl_aead_seal(k, ad, adlen, "", 0, NULL, &again, &alen), 0);
  assert_int_equal(slen, FL_SEAL_OVERHEAD);
  assert_memory_not_equal(sealed, again, slen);
  assert_int_equal(fl_aead_open(k, ad, adlen, sealed, slen, &plain, &plen), 0);
  assert_int_equal(plen, 0);
  assert_string_equal(plain, "");
  fl_free(plain);
  fl_free(sealed);
  fl_free(again);
  /* The size cap. */
  char *big = calloc(1, FL_MAX_CONTENT + 1);
  assert_non_null(big);
  assert_int_equal(fl_aead_seal(k, ad, adlen, big, FL_MAX_CONTENT + 1, NULL, &sealed, &slen),
                   FL_ETOOBIG);
  assert_null(sealed);
  free(big);
  assert_int_equal(fl_aead_seal(NULL, ad, adlen, "x", 1, NULL, &sealed, &slen), FL_EINVAL);
  assert_int_equal(fl_aead_seal(k, NULL, 1, "x", 1, NULL, &sealed, &slen), FL_EINVAL);
  assert_int_equal(fl_aead_open(k, ad, adlen, NULL, 1, &plain, &plen), FL_EINVAL);
}

static void test_cache(void **state) {
  (void)state;
  fl_identity id;
  memset(&id, 0, sizeof id);
  fl_copy(id.host_id, sizeof id.host_id, "alpha");
  memcpy(id.pk, alpha.pk, sizeof id.pk);
  memcpy(id.sk, alpha.sk, sizeof id.sk);
  fl_pairkeys *c = NULL;
  assert_int_equal(fl_pairkeys_new(&id, &c), 0);
  const fl_pairkey *k = NULL;
  assert_int_equal(fl_pairkeys_get(c, "beta", beta.pk, &k), 0);
  unsigned char want[32];
  assert_int_equal(fl_pairkey_derive(alpha.sk, beta.pk, "alpha", "beta", 1, want), 0);
  assert_memory_equal(k->send, want, 32);
  assert_int_equal(fl_pairkey_derive(beta.sk, alpha.pk, "beta", "alpha", 1, want), 0);
  assert_memory_equal(k->recv, want, 32);
  assert_int_equal(fl_seal_shared(beta.pk, alpha.sk, want), 0);
  assert_memory_equal(k->box, want, 32);
  /* Asked again: the same entry. */
  const fl_pairkey *k2 = NULL;
  assert_int_equal(fl_pairkeys_get(c, "beta", beta.pk, &k2), 0);
  assert_ptr_equal(k, k2);
  assert_int_equal(fl_pairkeys_count(c), 1);
  /* beta re-pinned to another key: the keys are made again from it. */
  assert_int_equal(fl_pairkeys_get(c, "beta", gamma_.pk, &k), 0);
  assert_int_equal(fl_pairkey_derive(alpha.sk, gamma_.pk, "alpha", "beta", 1, want), 0);
  assert_memory_equal(k->send, want, 32);
  assert_int_equal(fl_pairkeys_count(c), 1);
  /* Many hosts grow the cache; each keeps its own keys. */
  char host[16];
  for (int i = 0; i < 20; i++) {
    snprintf(host, sizeof host, "h%d", i);
    assert_int_equal(fl_pairkeys_get(c, host, gamma_.pk, &k), 0);
  }
  assert_int_equal(fl_pairkeys_count(c), 21);
  assert_int_equal(fl_pairkeys_get(c, "h7", gamma_.pk, &k), 0);
  assert_int_equal(fl_pairkey_derive(alpha.sk, gamma_.pk, "alpha", "h7", 1, want), 0);
  assert_memory_equal(k->send, want, 32);
  /* Unpinned: dropped; a host not cached is no error. */
  fl_pairkeys_drop(c, "beta");
  fl_pairkeys_drop(c, "nobody");
  fl_pairkeys_drop(NULL, "beta");
  assert_int_equal(fl_pairkeys_count(c), 20);
  assert_int_equal(fl_pairkeys_get(c, "h19", gamma_.pk, &k), 0);
  assert_int_equal(fl_pairkey_derive(alpha.sk, gamma_.pk, "alpha", "h19", 1, want), 0);
  assert_memory_equal(k->send, want, 32);
  /* Bad arguments. */
  unsigned char bad[FL_SIGN_PK_BYTES];
  memset(bad, 0xff, sizeof bad);
  assert_int_equal(fl_pairkeys_get(c, "delta", bad, &k), FL_EINVAL);
  assert_null(k);
  assert_int_equal(fl_pairkeys_get(c, "", beta.pk, &k), FL_EINVAL);
  assert_int_equal(fl_pairkeys_count(c), 20);
  fl_pairkeys_free(&c);
  assert_null(c);
  fl_pairkeys_free(&c);
  fl_pairkeys_free(NULL);
  sodium_memzero(&id, sizeof id);
}

/* The canonical head is the canonical form without its body part, and an
 * envelope with every field at its longest fits FL_SIGN_HEAD_MAX. */
static void test_head(void **state) {
  (void)state;
  fl_envelope env;
  memset(&env, 0, sizeof env);
  for (size_t i = 0; i < FL_ENVELOPE_NFIELDS; i++) {
    const fl_envelope_field *f = &fl_envelope_fields[i];
    memset((char *)&env + f->off, 'x', f->size - 1);
  }
  unsigned char head[FL_SIGN_HEAD_MAX];
  size_t hlen = 0;
  assert_int_equal(fl_sign_canonical_head(&env, head, &hlen), 0);
  unsigned char *canon = NULL;
  size_t clen = 0;
  assert_int_equal(fl_sign_canonical(&env, "body", 4, &canon, &clen), 0);
  assert_int_equal(clen, hlen + strlen("body:4:body"));
  assert_memory_equal(canon, head, hlen);
  assert_memory_equal(canon + hlen, "body:4:body", clen - hlen);
  fl_free(canon);
  /* A field without its NUL is refused. */
  memset(env.host, 'x', sizeof env.host);
  assert_int_equal(fl_sign_canonical_head(&env, head, &hlen), FL_EINVAL);
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
  json_t *vectors = json_object_get(root, "pairSealed");
  assert_true(json_array_size(vectors) >= 2);
  size_t i;
  json_t *vec;
  int empty = 0, nonascii = 0;
  json_array_foreach(vectors, i, vec) {
    keys s, r;
    unsigned char seed[32], nonce[FL_AEAD_NONCE_BYTES];
    from_hex(str(vec, "senderSeed"), seed, sizeof seed);
    crypto_sign_seed_keypair(s.pk, s.sk, seed);
    from_hex(str(vec, "recipientSeed"), seed, sizeof seed);
    crypto_sign_seed_keypair(r.pk, r.sk, seed);
    char b64[FL_SIGN_PK_B64_SIZE];
    fl_b64_encode(s.pk, sizeof s.pk, b64, sizeof b64);
    assert_string_equal(b64, str(vec, "senderPublicKey"));
    fl_b64_encode(r.pk, sizeof r.pk, b64, sizeof b64);
    assert_string_equal(b64, str(vec, "recipientPublicKey"));
    const char *sh = str(vec, "senderHost"), *rh = str(vec, "recipientHost");
    unsigned char k[32], k2[32], kr[32];
    assert_int_equal(fl_pairkey_derive(s.sk, r.pk, sh, rh, 1, k), 0);
    assert_hex(k, 32, str(vec, "pairKey"), "pair key (sender's end)");
    assert_int_equal(fl_pairkey_derive(r.sk, s.pk, sh, rh, 0, k2), 0);
    assert_hex(k2, 32, str(vec, "pairKey"), "pair key (recipient's end)");
    assert_int_equal(fl_pairkey_derive(r.sk, s.pk, rh, sh, 1, kr), 0);
    assert_hex(kr, 32, str(vec, "reverseKey"), "the other direction's key");

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
    assert_string_equal(env.host, sh);
    assert_string_equal(env.sealed_to, rh);
    assert_string_equal(env.sig, "");
    unsigned char head[FL_SIGN_HEAD_MAX];
    size_t hlen = 0;
    assert_int_equal(fl_sign_canonical_head(&env, head, &hlen), 0);
    assert_hex(head, hlen, str(vec, "headHex"), "canonical head");

    from_hex(str(vec, "nonce"), nonce, sizeof nonce);
    const char *body = str(vec, "body");
    size_t blen = strlen(body);
    empty |= blen == 0;
    for (size_t j = 0; j < blen; j++)
      nonascii |= (unsigned char)body[j] >= 0x80;
    unsigned char *sealed = NULL;
    size_t slen = 0;
    assert_int_equal(fl_aead_seal(k, head, hlen, body, blen, nonce, &sealed, &slen), 0);
    assert_hex(sealed, slen, str(vec, "sealedHex"), "sealed bytes");
    char *plain = NULL;
    size_t plen = 0;
    assert_int_equal(fl_aead_open(k2, head, hlen, sealed, slen, &plain, &plen), 0);
    assert_int_equal(plen, blen);
    assert_memory_equal(plain, body, blen);
    fl_free(plain);
    assert_int_equal(fl_aead_open(kr, head, hlen, sealed, slen, &plain, &plen), FL_EBADSIG);
    /* Every field is covered: any one changed, the seal does not open. */
    for (size_t f = 0; f < FL_ENVELOPE_NFIELDS; f++) {
      if (!fl_envelope_fields[f].is_signed)
        continue;
      fl_envelope t = env;
      char *v = (char *)&t + fl_envelope_fields[f].off;
      if (v[0])
        v[0] ^= 0x01;
      else
        v[0] = 'x';
      unsigned char th[FL_SIGN_HEAD_MAX];
      size_t tlen = 0;
      assert_int_equal(fl_sign_canonical_head(&t, th, &tlen), 0);
      if (fl_aead_open(k2, th, tlen, sealed, slen, &plain, &plen) != FL_EBADSIG)
        fail_msg("field %s changed, the seal still opens", fl_envelope_fields[f].key);
    }
    fl_free(sealed);
  }
  assert_true(empty);
  assert_true(nonascii);
  json_decref(root);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_derive), cmocka_unit_test(test_aead),    cmocka_unit_test(test_cache),
      cmocka_unit_test(test_head),   cmocka_unit_test(test_vectors),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
