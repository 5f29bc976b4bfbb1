/* seal.c — sealed bodies: Ed25519 node keys converted to X25519 and
 * crypto_box_easy between two gateways (see seal.h for the format). */
#include "gateway/seal.h"

#include <sodium.h>
#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/limits.h"

/* The format is libsodium's crypto_box; seal.h restates its sizes. */
_Static_assert(FL_SEAL_NONCE_BYTES == crypto_box_NONCEBYTES, "nonce size");
_Static_assert(FL_SEAL_MAC_BYTES == crypto_box_MACBYTES, "MAC size");
_Static_assert(FL_MAX_WIRE_BODY == FL_MAX_CONTENT + FL_SEAL_OVERHEAD, "wire body cap");
_Static_assert(FL_SEAL_KEY_BYTES == crypto_box_PUBLICKEYBYTES, "key size");

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

/* The X25519 pair for one box: the peer's public key and our secret key. */
static int seal_keys(const unsigned char peer_pk[FL_SIGN_PK_BYTES],
                     const unsigned char own_sk[FL_SIGN_SK_BYTES], unsigned char x_pk[32],
                     unsigned char x_sk[32]) {
  if (fl_seal_x25519_pk(peer_pk, x_pk) != 0)
    return FL_EINVAL;
  return fl_seal_x25519_sk(own_sk, x_sk);
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
  unsigned char x_pk[32], x_sk[32];
  int rc = seal_keys(to_pk, from_sk, x_pk, x_sk);
  if (rc)
    goto done;
  unsigned char *buf = fl_malloc(len + FL_SEAL_OVERHEAD);
  if (!buf) {
    rc = FL_ENOMEM;
    goto done;
  }
  if (nonce)
    memcpy(buf, nonce, FL_SEAL_NONCE_BYTES);
  else
    randombytes_buf(buf, FL_SEAL_NONCE_BYTES);
  /* An empty body still gets its MAC; libsodium takes a NULL-free pointer. */
  static const unsigned char none[1];
  if (crypto_box_easy(buf + FL_SEAL_NONCE_BYTES, len ? (const unsigned char *)body : none, len, buf,
                      x_pk, x_sk) != 0) {
    fl_free(buf);
    rc = FL_EINVAL; /* a weak (small-order) public key */
    goto done;
  }
  *out = buf;
  *outlen = len + FL_SEAL_OVERHEAD;
done:
  sodium_memzero(x_sk, sizeof x_sk);
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
  size_t plen = len - FL_SEAL_OVERHEAD;
  if (plen > FL_MAX_CONTENT)
    return FL_ETOOBIG;
  unsigned char x_pk[32], x_sk[32];
  int rc = seal_keys(from_pk, to_sk, x_pk, x_sk);
  if (rc)
    goto done;
  char *buf = fl_malloc(plen + 1);
  if (!buf) {
    rc = FL_ENOMEM;
    goto done;
  }
  if (crypto_box_open_easy((unsigned char *)buf, sealed + FL_SEAL_NONCE_BYTES,
                           len - FL_SEAL_NONCE_BYTES, sealed, x_pk, x_sk) != 0) {
    fl_free(buf);
    rc = FL_EBADSIG;
    goto done;
  }
  buf[plen] = '\0';
  *out = buf;
  *outlen = plen;
done:
  sodium_memzero(x_sk, sizeof x_sk);
  return rc;
}
