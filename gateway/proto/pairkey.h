/* pairkey.h — the key of an ordered pair of hosts, the AEAD that seals a
 * point-to-point message with it, and a cache of those keys per pinned peer.
 *
 * A message sealed to one recipient host needs no signature: only that
 * host and its sender can make a seal that opens under their pair key, so
 * the seal is the authentication (docs/wire-format.md, "The pair-sealed
 * form"). The key of the pair (sender A, recipient B) is
 *
 *   BLAKE2b-256 over  "fleet-pairkey/1\n"
 *                     "from:" LEN ":" A "\n"  "to:" LEN ":" B "\n"
 *                     q || X25519 public key of A || X25519 public key of B
 *
 * where q = X25519(own secret, peer public), both keys the hosts' Ed25519
 * node keys converted as for sealed bodies (seal.h). Binding both host ids
 * and the direction means the key A uses towards B is not the one B uses
 * towards A, nor one A uses towards any other host, and a message cannot be
 * reflected back to its sender or re-labelled with another host id.
 *
 * The AEAD is XChaCha20-Poly1305 (libsodium's _ietf_ variant) with a fresh
 * random 24-byte nonce per message; the associated data is the envelope's
 * canonical header bytes (sign.h's fl_sign_canonical_head), so no envelope
 * field can change, and the message cannot move to another inbox, unseen:
 *
 *   sealed body = NONCE (24) || ciphertext || TAG (16)   (FL_SEAL_OVERHEAD more)
 *
 * schema/signing-vectors.json ("pairSealed") holds vectors that
 * tests/unit/test_pairkey.c and tests/integration/vectors.test.mjs check.
 *
 * fl_pairkey_* and fl_aead_* are pure and safe on any thread. An fl_pairkeys
 * cache belongs to one thread. libsodium must have been initialised. */
#ifndef FL_PAIRKEY_H
#define FL_PAIRKEY_H

#include <stddef.h>

#include "gateway/proto/identity.h"
#include "gateway/proto/seal.h"

#define FL_PAIRKEY_BYTES 32
#define FL_AEAD_NONCE_BYTES 24 /* crypto_aead_xchacha20poly1305_ietf_NPUBBYTES */
#define FL_AEAD_TAG_BYTES 16   /* crypto_aead_xchacha20poly1305_ietf_ABYTES */
/* The KDF's first line; the "/1" changes only if the derivation does. */
#define FL_PAIRKEY_LABEL "fleet-pairkey/1\n"

/* The key for messages from from_host to to_host. own_sk is this gateway's
 * Ed25519 secret key (libsodium's 64 bytes), peer_pk the other host's
 * pinned Ed25519 public key; sending says which end this gateway is: 1 when
 * it is from_host (own = sender), 0 when it is to_host (own = recipient).
 * Both ends compute the same key. Returns 0, or FL_EINVAL (a NULL argument,
 * a host id that is empty or too long, peer_pk no valid or a small-order
 * point). k is left zeroed on failure; wipe it with sodium_memzero. */
int fl_pairkey_derive(const unsigned char own_sk[FL_SIGN_SK_BYTES],
                      const unsigned char peer_pk[FL_SIGN_PK_BYTES], const char *from_host,
                      const char *to_host, int sending, unsigned char k[FL_PAIRKEY_BYTES]);

/* Seals len bytes of body under k with ad (adlen bytes) as associated data.
 * nonce is FL_AEAD_NONCE_BYTES, or NULL for a random one (every real
 * message; a fixed nonce is for the vectors). *out is a new buffer of
 * *outlen = len + FL_SEAL_OVERHEAD bytes, freed with fl_free. Returns 0,
 * FL_EINVAL, FL_ETOOBIG (len > FL_MAX_CONTENT) or FL_ENOMEM. */
int fl_aead_seal(const unsigned char k[FL_PAIRKEY_BYTES], const unsigned char *ad, size_t adlen,
                 const char *body, size_t len, const unsigned char *nonce, unsigned char **out,
                 size_t *outlen);

/* Opens what fl_aead_seal made under k with the same ad. *out is a new
 * NUL-terminated buffer of *outlen clear bytes, freed with fl_free. Returns
 * 0; FL_EBADSIG when it does not open (too short, a byte changed, another
 * key or other associated data); FL_EINVAL, FL_ETOOBIG or FL_ENOMEM. */
int fl_aead_open(const unsigned char k[FL_PAIRKEY_BYTES], const unsigned char *ad, size_t adlen,
                 const unsigned char *sealed, size_t len, char **out, size_t *outlen);

/* ---- the cache ---- */

/* The keys this gateway holds for one peer host: the pair keys of both
 * directions, and the box key of sealed bodies in the signed form
 * (fl_seal_shared). Borrowed from the cache: valid until its next get,
 * drop or free. */
typedef struct fl_pairkey {
  unsigned char send[FL_PAIRKEY_BYTES]; /* own host -> peer */
  unsigned char recv[FL_PAIRKEY_BYTES]; /* peer -> own host */
  unsigned char box[FL_SEAL_KEY_BYTES]; /* crypto_box_beforenm of the pair */
} fl_pairkey;

typedef struct fl_pairkeys fl_pairkeys;

/* A new, empty cache for the identity id (borrowed: it must outlive the
 * cache). 0 or FL_ENOMEM / FL_EINVAL. Free with fl_pairkeys_free. */
int fl_pairkeys_new(const fl_identity *id, fl_pairkeys **out);

/* Wipes every key and frees *c, setting it NULL. NULL-safe. */
void fl_pairkeys_free(fl_pairkeys **c);

/* The keys for host, whose pinned Ed25519 key is pk: from the cache when
 * they were made from that same key, else made now (one X25519 per peer
 * rather than per message) and kept, replacing any made from another key.
 * At most FL_PEERS_MAX + 1 hosts are kept (every pin, and our own host).
 * Returns 0 with *out set, or FL_EINVAL (a bad host id or key), FL_EFULL
 * (the cache is full) or FL_ENOMEM. */
int fl_pairkeys_get(fl_pairkeys *c, const char *host, const unsigned char pk[FL_SIGN_PK_BYTES],
                    const fl_pairkey **out);

/* Wipes and forgets host's keys (its pin was removed or is changing).
 * NULL-safe; nothing happens for a host not cached. */
void fl_pairkeys_drop(fl_pairkeys *c, const char *host);

/* How many hosts have keys cached (for the tests). */
size_t fl_pairkeys_count(const fl_pairkeys *c);

#endif
