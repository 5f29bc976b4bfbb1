/* sign.c — canonical envelope bytes, Ed25519 sign and verify, base64 (see
 * sign.h for the canonical form).
 *
 * The canonical string is built in two passes over the envelope's field
 * table (fl_envelope_fields, its signed rows): the first adds up its exact
 * size, the second writes it, so there is one allocation and no growing
 * buffer. The table's order is the wire contract: changing it breaks every
 * signature, which schema/signing-vectors.json and the tests catch. */
#include "gateway/proto/sign.h"

#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/limits.h"

/* Decimal digits of n (n <= FL_MAX_WIRE_BODY, so at most 7). */
static size_t sign_digits(size_t n) {
  size_t d = 1;
  while (n >= 10) {
    n /= 10;
    d++;
  }
  return d;
}

/* Appends "name:len:" at p and returns the position after it. The caller
 * sized the buffer with sign_digits, so snprintf never truncates. */
static unsigned char *sign_put_head(unsigned char *p, const char *name, size_t len) {
  size_t nl = strlen(name);
  memcpy(p, name, nl);
  p += nl;
  *p++ = ':';
  char num[24];
  int w = snprintf(num, sizeof num, "%zu", len);
  memcpy(p, num, (size_t)w);
  p += w;
  *p++ = ':';
  return p;
}

int fl_b64_encode(const unsigned char *bin, size_t len, char *out, size_t outsize) {
  if (!out || (!bin && len))
    return FL_EINVAL;
  if (outsize < sodium_base64_ENCODED_LEN(len, sodium_base64_VARIANT_ORIGINAL))
    return FL_ETOOBIG;
  sodium_bin2base64(out, outsize, bin, len, sodium_base64_VARIANT_ORIGINAL);
  return 0;
}

int fl_b64_decode(const char *b64, unsigned char *out, size_t outsize, size_t *outlen) {
  if (!b64 || !out || !outlen)
    return FL_EINVAL;
  *outlen = 0;
  size_t n = strlen(b64);
  /* Padded base64 always comes in whole 4-character groups; checking here
   * tells "too long" (FL_ETOOBIG) apart from "not base64" below. */
  if (n % 4 != 0)
    return FL_EINVAL;
  size_t pad = (n >= 1 && b64[n - 1] == '=') + (n >= 2 && b64[n - 2] == '=');
  if (n / 4 * 3 - pad > outsize)
    return FL_ETOOBIG;
  const char *end = NULL;
  size_t got = 0;
  if (sodium_base642bin(out, outsize, b64, n, NULL, &got, &end, sodium_base64_VARIANT_ORIGINAL) !=
      0)
    return FL_EINVAL;
  if (end != b64 + n)
    return FL_EINVAL;
  *outlen = got;
  return 0;
}

/* The size of the canonical head of env (prefix and field lines), with
 * each signed field's length in vlen; 0 when a field is not NUL-terminated
 * within its slot. */
static size_t sign_head_size(const fl_envelope *env, size_t vlen[FL_ENVELOPE_NFIELDS]) {
  size_t total = strlen(FL_SIGN_CANON_PREFIX);
  for (size_t i = 0; i < FL_ENVELOPE_NFIELDS; i++) {
    const fl_envelope_field *f = &fl_envelope_fields[i];
    if (!f->is_signed)
      continue;
    vlen[i] = strnlen(fl_envelope_get(env, f), f->size);
    if (vlen[i] == f->size)
      return 0; /* no NUL inside the slot */
    if (f->is_signed == FL_SIGNED_IF_PRESENT && vlen[i] == 0)
      continue;
    total += strlen(f->key) + 1 + sign_digits(vlen[i]) + 1 + vlen[i] + 1;
  }
  return total;
}

/* Writes the canonical head at p (sized by sign_head_size) and returns the
 * position after it. */
static unsigned char *sign_put_fields(unsigned char *p, const fl_envelope *env,
                                      const size_t vlen[FL_ENVELOPE_NFIELDS]) {
  memcpy(p, FL_SIGN_CANON_PREFIX, strlen(FL_SIGN_CANON_PREFIX));
  p += strlen(FL_SIGN_CANON_PREFIX);
  for (size_t i = 0; i < FL_ENVELOPE_NFIELDS; i++) {
    const fl_envelope_field *f = &fl_envelope_fields[i];
    if (!f->is_signed || (f->is_signed == FL_SIGNED_IF_PRESENT && vlen[i] == 0))
      continue;
    p = sign_put_head(p, f->key, vlen[i]);
    memcpy(p, fl_envelope_get(env, f), vlen[i]);
    p += vlen[i];
    *p++ = '\n';
  }
  return p;
}

int fl_sign_canonical_head(const fl_envelope *env, unsigned char out[FL_SIGN_HEAD_MAX],
                           size_t *outlen) {
  if (!env || !out || !outlen)
    return FL_EINVAL;
  *outlen = 0;
  size_t vlen[FL_ENVELOPE_NFIELDS];
  size_t total = sign_head_size(env, vlen);
  if (total == 0)
    return FL_EINVAL;
  if (total > FL_SIGN_HEAD_MAX)
    return FL_ETOOBIG; /* cannot be: every field fits its slot (test_trust checks the bound) */
  *outlen = (size_t)(sign_put_fields(out, env, vlen) - out);
  return 0;
}

int fl_sign_canonical(const fl_envelope *env, const char *body, size_t len, unsigned char **out,
                      size_t *outlen) {
  if (!env || !out || !outlen || (!body && len))
    return FL_EINVAL;
  if (len > FL_MAX_WIRE_BODY)
    return FL_ETOOBIG;
  size_t vlen[FL_ENVELOPE_NFIELDS];
  size_t total = sign_head_size(env, vlen);
  if (total == 0)
    return FL_EINVAL;
  total += strlen("body:") + sign_digits(len) + 1 + len;

  unsigned char *buf = fl_malloc(total);
  if (!buf)
    return FL_ENOMEM;
  unsigned char *p = sign_put_fields(buf, env, vlen);
  p = sign_put_head(p, "body", len);
  if (len)
    memcpy(p, body, len);
  p += len;

  *out = buf;
  *outlen = (size_t)(p - buf);
  return 0;
}

int fl_sign_envelope(fl_envelope *env, const char *body, size_t len,
                     const unsigned char sk[FL_SIGN_SK_BYTES]) {
  if (!env || !sk)
    return FL_EINVAL;
  env->sig[0] = '\0';
  unsigned char *msg = NULL;
  size_t mlen = 0;
  int rc = fl_sign_canonical(env, body, len, &msg, &mlen);
  if (rc)
    return rc;
  unsigned char sig[FL_SIGN_SIG_BYTES];
  crypto_sign_detached(sig, NULL, msg, mlen, sk);
  rc = fl_b64_encode(sig, sizeof sig, env->sig, sizeof env->sig);
  fl_free(msg);
  return rc;
}

int fl_verify_envelope(const fl_envelope *env, const char *body, size_t len,
                       const unsigned char pk[FL_SIGN_PK_BYTES]) {
  if (!env || !pk)
    return FL_EINVAL;
  unsigned char sig[FL_SIGN_SIG_BYTES];
  size_t siglen = 0;
  if (strnlen(env->sig, sizeof env->sig) == sizeof env->sig ||
      fl_b64_decode(env->sig, sig, sizeof sig, &siglen) != 0 || siglen != sizeof sig)
    return FL_EBADSIG;
  unsigned char *msg = NULL;
  size_t mlen = 0;
  int rc = fl_sign_canonical(env, body, len, &msg, &mlen);
  if (rc)
    return rc;
  rc = crypto_sign_verify_detached(sig, msg, mlen, pk) == 0 ? 0 : FL_EBADSIG;
  fl_free(msg);
  return rc;
}
