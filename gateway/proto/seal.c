/* seal.c — sealed bodies: Ed25519 node keys converted to X25519 and
 * crypto_box_easy between two gateways (see seal.h for the format). */
#include "gateway/proto/seal.h"

#include <sodium.h>
#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/limits.h"
#include "common/random.h"

/* The format is libsodium's crypto_box; seal.h restates its sizes. */
_Static_assert(FL_SEAL_NONCE_BYTES == crypto_box_NONCEBYTES, "nonce size");
_Static_assert(FL_SEAL_MAC_BYTES == crypto_box_MACBYTES, "MAC size");
_Static_assert(FL_MAX_WIRE_BODY == FL_MAX_CONTENT + FL_SEAL_OVERHEAD, "wire body cap");
_Static_assert(FL_SEAL_KEY_BYTES == crypto_box_PUBLICKEYBYTES, "key size");
_Static_assert(FL_SEAL_KEY_BYTES == crypto_box_BEFORENMBYTES, "box key size");

int fl_seal_x25519_pk(const unsigned char ed_pk[FL_SIGN_PK_BYTES],
                      unsigned char x_pk[FL_SEAL_KEY_BYTES]) {
  if (!ed_pk || !x_pk)
    return FL_EINVAL;
  return crypto_sign_ed25519_pk_to_curve25519(x_pk, ed_pk) == 0 ? 0 : FL_EINVAL;
}

int fl_seal_x25519_sk(const unsigned char ed_sk[FL_SIGN_SK_BYTES],
                      unsigned char x_sk[FL_SEAL_KEY_BYTES]) {
  if (!ed_sk || !x_sk)
    return FL_EINVAL;
  return crypto_sign_ed25519_sk_to_curve25519(x_sk, ed_sk) == 0 ? 0 : FL_EINVAL;
}

int fl_seal_shared(const unsigned char peer_pk[FL_SIGN_PK_BYTES],
                   const unsigned char own_sk[FL_SIGN_SK_BYTES],
                   unsigned char k[FL_SEAL_KEY_BYTES]) {
  if (!k)
    return FL_EINVAL;
  unsigned char x_pk[32], x_sk[32];
  int rc = fl_seal_x25519_pk(peer_pk, x_pk);
  if (rc == 0)
    rc = fl_seal_x25519_sk(own_sk, x_sk);
  /* beforenm refuses a weak (small-order) public key. */
  if (rc == 0 && crypto_box_beforenm(k, x_pk, x_sk) != 0)
    rc = FL_EINVAL;
  sodium_memzero(x_sk, sizeof x_sk);
  return rc;
}

int fl_seal_with(const unsigned char k[FL_SEAL_KEY_BYTES], const char *body, size_t len,
                 const unsigned char *nonce, unsigned char **out, size_t *outlen) {
  if (!out || !outlen || !k || (!body && len))
    return FL_EINVAL;
  *out = NULL;
  *outlen = 0;
  if (len > FL_MAX_CONTENT)
    return FL_ETOOBIG;
  unsigned char *buf = fl_malloc(len + FL_SEAL_OVERHEAD);
  if (!buf)
    return FL_ENOMEM;
  if (nonce)
    memcpy(buf, nonce, FL_SEAL_NONCE_BYTES);
  else
    fl_random_bytes(buf, FL_SEAL_NONCE_BYTES);
  /* An empty body still gets its MAC; libsodium wants a pointer all the same. */
  static const unsigned char none[1];
  crypto_box_easy_afternm(buf + FL_SEAL_NONCE_BYTES, len ? (const unsigned char *)body : none, len,
                          buf, k);
  *out = buf;
  *outlen = len + FL_SEAL_OVERHEAD;
  return 0;
}

int fl_unseal_with(const unsigned char k[FL_SEAL_KEY_BYTES], const unsigned char *sealed,
                   size_t len, char **out, size_t *outlen) {
  if (!out || !outlen || !k || (!sealed && len))
    return FL_EINVAL;
  *out = NULL;
  *outlen = 0;
  if (len < FL_SEAL_OVERHEAD)
    return FL_EBADSIG;
  size_t plen = len - FL_SEAL_OVERHEAD;
  if (plen > FL_MAX_CONTENT)
    return FL_ETOOBIG;
  char *buf = fl_malloc(plen + 1);
  if (!buf)
    return FL_ENOMEM;
  if (crypto_box_open_easy_afternm((unsigned char *)buf, sealed + FL_SEAL_NONCE_BYTES,
                                   len - FL_SEAL_NONCE_BYTES, sealed, k) != 0) {
    fl_free(buf);
    return FL_EBADSIG;
  }
  buf[plen] = '\0';
  *out = buf;
  *outlen = plen;
  return 0;
}

int fl_seal(const char *body, size_t len, const unsigned char *nonce,
            const unsigned char to_pk[FL_SIGN_PK_BYTES],
            const unsigned char from_sk[FL_SIGN_SK_BYTES], unsigned char **out, size_t *outlen) {
  if (!out || !outlen || !to_pk || !from_sk || (!body && len))
    return FL_EINVAL;
  *out = NULL;
  *outlen = 0;
  if (len > FL_MAX_CONTENT)
    return FL_ETOOBIG;
  unsigned char k[FL_SEAL_KEY_BYTES];
  int rc = fl_seal_shared(to_pk, from_sk, k);
  if (rc == 0)
    rc = fl_seal_with(k, body, len, nonce, out, outlen);
  sodium_memzero(k, sizeof k);
  return rc;
}

int fl_unseal(const unsigned char *sealed, size_t len,
              const unsigned char from_pk[FL_SIGN_PK_BYTES],
              const unsigned char to_sk[FL_SIGN_SK_BYTES], char **out, size_t *outlen) {
  if (!out || !outlen || !from_pk || !to_sk || (!sealed && len))
    return FL_EINVAL;
  *out = NULL;
  *outlen = 0;
  if (len < FL_SEAL_OVERHEAD)
    return FL_EBADSIG;
  if (len - FL_SEAL_OVERHEAD > FL_MAX_CONTENT)
    return FL_ETOOBIG;
  unsigned char k[FL_SEAL_KEY_BYTES];
  int rc = fl_seal_shared(from_pk, to_sk, k);
  if (rc == 0)
    rc = fl_unseal_with(k, sealed, len, out, outlen);
  sodium_memzero(k, sizeof k);
  return rc;
}
