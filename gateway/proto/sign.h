/* sign.h — the envelope's canonical bytes and its Ed25519 signature.
 *
 * A gateway signs every envelope it publishes with its node identity
 * (identity.h); a receiving gateway verifies it under the key it pinned for
 * the envelope's `host` (peers.h). What is signed is a canonical byte string
 * built from the header fields and the exact body bytes — never
 * re-serialized JSON, so no JSON canonicalization sits in the security path:
 *
 *   "fleet-envelope/1\n"
 *   then, for each signed field of fl_envelope_fields (envelope.h), in
 *   table order:
 *     NAME ":" LEN ":" VALUE "\n"      (LEN = VALUE's byte count in decimal;
 *                                       an absent field is LEN 0)
 *     (a row marked FL_SIGNED_IF_PRESENT, sealedTo, is written only when
 *     present, so an unsealed envelope has the bytes it always had)
 *   then "body:" LEN ":" BODY          (the exact body bytes as they travel:
 *                                       ciphertext when sealed; no newline)
 *
 * `sig` itself is not covered. The length prefixes make the string
 * unambiguous whatever bytes a value or the body holds. docs/wire-format.md
 * and schema/envelope.json say the same; schema/signing-vectors.json holds
 * test vectors that tests/unit/test_trust.c and
 * tests/integration/vectors.test.mjs check against.
 *
 * Every function here is pure: no I/O, no global state, safe on any thread.
 * libsodium must have been initialised (sodium_init(), which fleetd does at
 * start). */
#ifndef FL_SIGN_H
#define FL_SIGN_H

#include <stddef.h>

#include "gateway/proto/envelope.h"

/* Ed25519 sizes (libsodium's crypto_sign_*BYTES, restated so callers need
 * not include sodium.h for an array size). */
#define FL_SIGN_PK_BYTES 32
#define FL_SIGN_SK_BYTES 64
#define FL_SIGN_SIG_BYTES 64
/* Standard padded base64 of a public key (44 chars) / signature (88 chars),
 * plus the NUL. */
#define FL_SIGN_PK_B64_SIZE 45
#define FL_SIGN_SIG_B64_SIZE 89

/* The first line of the canonical form; the "/1" is the canonical form's own
 * version, bumped only if the layout below it ever changes. */
#define FL_SIGN_CANON_PREFIX "fleet-envelope/1\n"

/* Standard base64 with padding (RFC 4648 §4). encode writes a NUL-terminated
 * string into out (size outsize, at least 4 * ceil(len / 3) + 1). Returns 0
 * or FL_ETOOBIG. decode accepts only a canonical encoding of the whole
 * string (padding required, no whitespace, unused bits zero), writes at most
 * outsize bytes to out and their count to *outlen. Returns 0, FL_EINVAL for
 * anything that is not such an encoding, or FL_ETOOBIG if it decodes to more
 * than outsize bytes. */
int fl_b64_encode(const unsigned char *bin, size_t len, char *out, size_t outsize);
int fl_b64_decode(const char *b64, unsigned char *out, size_t outsize, size_t *outlen);

/* Builds the canonical byte string of env and body (len bytes; body may be
 * NULL when len is 0). *out is a new buffer of *outlen bytes (not
 * NUL-terminated) that the caller frees with fl_free. Returns 0, FL_EINVAL
 * (an env field not NUL-terminated within its slot, or body NULL with
 * len > 0), FL_ETOOBIG (len > FL_MAX_WIRE_BODY) or FL_ENOMEM. */
int fl_sign_canonical(const fl_envelope *env, const char *body, size_t len, unsigned char **out,
                      size_t *outlen);

/* The canonical head of env: the canonical form up to, not including,
 * "body:" — the prefix line and every signed field's line. It is the
 * associated data of the pair-sealed form (pairkey.h), where the body is
 * inside the seal. Written into out (FL_SIGN_HEAD_MAX bytes), its length in
 * *outlen. Returns 0 or FL_EINVAL (a field not NUL-terminated in its slot). */
#define FL_SIGN_HEAD_MAX 1024 /* every field at its longest fits in about 700 bytes */
int fl_sign_canonical_head(const fl_envelope *env, unsigned char out[FL_SIGN_HEAD_MAX],
                           size_t *outlen);

/* Signs env and body with the 64-byte libsodium secret key sk and writes the
 * base64 of the detached signature into env->sig (any old value is
 * replaced; it is not covered). Returns 0 or an error of fl_sign_canonical;
 * on failure env->sig is "". */
int fl_sign_envelope(fl_envelope *env, const char *body, size_t len,
                     const unsigned char sk[FL_SIGN_SK_BYTES]);

/* Checks env->sig over env and body under the 32-byte public key pk.
 * Returns 0 when it verifies; FL_EBADSIG when it does not, including a
 * missing or malformed sig; FL_EINVAL, FL_ETOOBIG or FL_ENOMEM as for
 * fl_sign_canonical (the message could not be checked, which a receiver
 * must also treat as a failure). */
int fl_verify_envelope(const fl_envelope *env, const char *body, size_t len,
                       const unsigned char pk[FL_SIGN_PK_BYTES]);

#endif
