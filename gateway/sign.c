/* sign.c — canonical envelope bytes, Ed25519 sign and verify, base64 (see
 * sign.h for the canonical form).
 *
 * The canonical string is built in two passes over one field table: the
 * first adds up its exact size, the second writes it, so there is one
 * allocation and no growing buffer. The table's order is the wire contract:
 * changing it breaks every signature, which schema/signing-vectors.json and
 * the tests catch. */
#include "gateway/sign.h"

#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/limits.h"

#define SIGN_FIELD(k, m)                                                                           \
  { k, offsetof(fl_envelope, m), sizeof(((fl_envelope *)0)->m) }

/* The signed header subset, in canonical order. sig is not in it. */
static const struct {
  const char *name;
  size_t off, size;
} sign_fields[] = {
    SIGN_FIELD("v", v),
    SIGN_FIELD("kind", kind),
    SIGN_FIELD("msgId", msg_id),
    SIGN_FIELD("traceId", trace_id),
    SIGN_FIELD("from", from),
    SIGN_FIELD("to", to),
    SIGN_FIELD("inReplyTo", in_reply_to),
    SIGN_FIELD("turnId", turn_id),
    SIGN_FIELD("spawnId", spawn_id),
    SIGN_FIELD("fromName", from_name),
    SIGN_FIELD("host", host),
    SIGN_FIELD("ts", ts),
    SIGN_FIELD("expiresAt", expires_at),
};
#define N_SIGN_FIELDS (sizeof(sign_fields) / sizeof(sign_fields[0]))

/* Decimal digits of n (n <= FL_MAX_CONTENT, so at most 7). */
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

int fl_sign_canonical(const fl_envelope *env, const char *body, size_t len, unsigned char **out,
                      size_t *outlen) {
  if (!env || !out || !outlen || (!body && len))
    return FL_EINVAL;
  if (len > FL_MAX_CONTENT)
    return FL_ETOOBIG;
  size_t vlen[N_SIGN_FIELDS];
  size_t total = strlen(FL_SIGN_CANON_PREFIX);
  for (size_t i = 0; i < N_SIGN_FIELDS; i++) {
    const char *val = (const char *)env + sign_fields[i].off;
    vlen[i] = strnlen(val, sign_fields[i].size);
    if (vlen[i] == sign_fields[i].size)
      return FL_EINVAL; /* no NUL inside the slot */
    total += strlen(sign_fields[i].name) + 1 + sign_digits(vlen[i]) + 1 + vlen[i] + 1;
  }
  total += strlen("body:") + sign_digits(len) + 1 + len;

  unsigned char *buf = fl_malloc(total);
  if (!buf)
    return FL_ENOMEM;
  unsigned char *p = buf;
  memcpy(p, FL_SIGN_CANON_PREFIX, strlen(FL_SIGN_CANON_PREFIX));
  p += strlen(FL_SIGN_CANON_PREFIX);
  for (size_t i = 0; i < N_SIGN_FIELDS; i++) {
    p = sign_put_head(p, sign_fields[i].name, vlen[i]);
    memcpy(p, (const char *)env + sign_fields[i].off, vlen[i]);
    p += vlen[i];
    *p++ = '\n';
  }
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

int fl_envelope_major(const fl_envelope *env) {
  if (!env || strnlen(env->v, sizeof env->v) == sizeof env->v)
    return -1;
  const char *s = env->v;
  int major = 0, digits = 0;
  /* Four digits per part bound the value far below INT_MAX. */
  for (; *s >= '0' && *s <= '9'; s++) {
    if (++digits > 4)
      return -1;
    major = major * 10 + (*s - '0');
  }
  if (digits == 0 || *s != '.')
    return -1;
  digits = 0;
  for (s++; *s >= '0' && *s <= '9'; s++)
    if (++digits > 4)
      return -1;
  if (digits == 0 || *s != '\0')
    return -1;
  return major;
}
