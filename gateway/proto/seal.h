/* seal.h — a message body sealed to the gateway that receives it.
 *
 * Signing (sign.h) stops forgery but not reading: the broker, and every
 * gateway's broker user, could still read a body in clear. A sealed body is
 * encrypted and authenticated from the sending gateway to the receiving
 * one with the same key pairs that sign: each side's Ed25519 node identity
 * is converted to X25519 (libsodium's crypto_sign_ed25519_pk_to_curve25519
 * for the peer's pinned public key, crypto_sign_ed25519_sk_to_curve25519 for
 * our own secret key), and the body goes into crypto_box_easy
 * (X25519 + XSalsa20-Poly1305). Its key is the two gateways' shared secret:
 * only the recipient (and the sender, who made it) can open it, and opening
 * proves which gateway sealed it. On the wire:
 *
 *   sealed body = NONCE (24 random bytes) || crypto_box_easy(body)  (body + 16 bytes)
 *
 * so a sealed body is FL_SEAL_OVERHEAD bytes longer than the clear one.
 * docs/wire-format.md ("Sealed bodies") is the contract;
 * schema/signing-vectors.json ("sealed") holds vectors that
 * tests/unit/test_seal.c and tests/integration/vectors.test.mjs check.
 *
 * Pure functions: no I/O, no global state (fl_seal draws its nonce from
 * libsodium's generator unless one is given), safe on any thread.
 * libsodium must have been initialised (sodium_init()). */
#ifndef FL_SEAL_H
#define FL_SEAL_H

#include <stddef.h>

#include "gateway/proto/sign.h"

#define FL_SEAL_NONCE_BYTES 24 /* crypto_box_NONCEBYTES */
#define FL_SEAL_MAC_BYTES 16   /* crypto_box_MACBYTES */
#define FL_SEAL_OVERHEAD (FL_SEAL_NONCE_BYTES + FL_SEAL_MAC_BYTES)
#define FL_SEAL_KEY_BYTES 32 /* an X25519 public or secret key */

/* The X25519 public key of an Ed25519 public key (a peer's pinned key), and
 * the X25519 secret key of an Ed25519 secret key (libsodium's 64-byte form).
 * Return 0, or FL_EINVAL (a NULL argument, or a public key that is no valid
 * Ed25519 point). */
int fl_seal_x25519_pk(const unsigned char ed_pk[FL_SIGN_PK_BYTES],
                      unsigned char x_pk[FL_SEAL_KEY_BYTES]);
int fl_seal_x25519_sk(const unsigned char ed_sk[FL_SIGN_SK_BYTES],
                      unsigned char x_sk[FL_SEAL_KEY_BYTES]);

/* The box key of a pair of gateways (crypto_box_beforenm over the converted
 * keys): what fl_seal and fl_unseal compute on each call, once, for a
 * sender or receiver that talks to the same host again and again. peer_pk
 * is the other gateway's Ed25519 public key, own_sk ours. Returns 0 or
 * FL_EINVAL (a NULL argument, or peer_pk no valid or a weak key). Clear k
 * with sodium_memzero when done. */
int fl_seal_shared(const unsigned char peer_pk[FL_SIGN_PK_BYTES],
                   const unsigned char own_sk[FL_SIGN_SK_BYTES],
                   unsigned char k[FL_SEAL_KEY_BYTES]);

/* fl_seal and fl_unseal with a box key from fl_seal_shared; the same
 * arguments, results and errors otherwise. */
int fl_seal_with(const unsigned char k[FL_SEAL_KEY_BYTES], const char *body, size_t len,
                 const unsigned char *nonce, unsigned char **out, size_t *outlen);
int fl_unseal_with(const unsigned char k[FL_SEAL_KEY_BYTES], const unsigned char *sealed,
                   size_t len, char **out, size_t *outlen);

/* Seals len bytes of body from the gateway whose Ed25519 secret key is
 * from_sk to the one whose Ed25519 public key is to_pk. nonce is
 * FL_SEAL_NONCE_BYTES of nonce, or NULL for fresh random ones (NULL is what
 * every real message uses; a fixed nonce is for the test vectors). *out is
 * a new buffer of *outlen = len + FL_SEAL_OVERHEAD bytes, freed with
 * fl_free. Returns 0, FL_EINVAL (a NULL argument, body NULL with len > 0,
 * or to_pk no valid key), FL_ETOOBIG (len > FL_MAX_CONTENT) or FL_ENOMEM. */
int fl_seal(const char *body, size_t len, const unsigned char *nonce,
            const unsigned char to_pk[FL_SIGN_PK_BYTES],
            const unsigned char from_sk[FL_SIGN_SK_BYTES], unsigned char **out, size_t *outlen);

/* Opens a sealed body (len bytes) that the gateway whose Ed25519 public key
 * is from_pk sealed to the one whose secret key is to_sk. *out is a new
 * NUL-terminated buffer holding the *outlen = len - FL_SEAL_OVERHEAD clear
 * bytes, freed with fl_free. Returns 0; FL_EBADSIG when it does not open
 * (too short, one byte changed, sealed to another key or by another
 * sender); FL_EINVAL (a NULL argument, or from_pk no valid key); FL_ETOOBIG
 * (more than FL_MAX_CONTENT clear bytes) or FL_ENOMEM. */
int fl_unseal(const unsigned char *sealed, size_t len,
              const unsigned char from_pk[FL_SIGN_PK_BYTES],
              const unsigned char to_sk[FL_SIGN_SK_BYTES], char **out, size_t *outlen);

#endif
