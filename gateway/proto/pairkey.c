/* pairkey.c — pair keys of two hosts, the XChaCha20-Poly1305 seal made with
 * them, and the per-peer cache of keys (see pairkey.h for the derivation and
 * the layout). */
#include "gateway/proto/pairkey.h"

#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/limits.h"
#include "common/random.h"
#include "gateway/proto/peers.h"

_Static_assert(FL_AEAD_NONCE_BYTES == crypto_aead_xchacha20poly1305_ietf_NPUBBYTES, "nonce size");
_Static_assert(FL_AEAD_TAG_BYTES == crypto_aead_xchacha20poly1305_ietf_ABYTES, "tag size");
_Static_assert(FL_PAIRKEY_BYTES == crypto_aead_xchacha20poly1305_ietf_KEYBYTES, "key size");
/* Both sealed forms are the same size on the wire, so one body cap holds. */
_Static_assert(FL_AEAD_NONCE_BYTES + FL_AEAD_TAG_BYTES == FL_SEAL_OVERHEAD, "overhead");

/* Hashes "NAME:LEN:VALUE\n" of a host id into st. */
static void pairkey_put_host(crypto_generichash_state *st, const char *name, const char *host) {
  char head[32];
  int n = snprintf(head, sizeof head, "%s:%zu:", name, strlen(host));
  crypto_generichash_update(st, (const unsigned char *)head, (size_t)n);
  crypto_generichash_update(st, (const unsigned char *)host, strlen(host));
  crypto_generichash_update(st, (const unsigned char *)"\n", 1);
}

int fl_pairkey_derive(const unsigned char own_sk[FL_SIGN_SK_BYTES],
                      const unsigned char peer_pk[FL_SIGN_PK_BYTES], const char *from_host,
                      const char *to_host, int sending, unsigned char k[FL_PAIRKEY_BYTES]) {
  if (!k)
    return FL_EINVAL;
  memset(k, 0, FL_PAIRKEY_BYTES);
  if (!own_sk || !peer_pk || !from_host || !to_host || !from_host[0] || !to_host[0] ||
      strlen(from_host) >= FL_HOST_ID_SIZE || strlen(to_host) >= FL_HOST_ID_SIZE)
    return FL_EINVAL;
  unsigned char own_x_sk[32], own_x_pk[32], peer_x_pk[32], q[32];
  int rc = fl_seal_x25519_pk(peer_pk, peer_x_pk);
  if (rc == 0)
    rc = fl_seal_x25519_sk(own_sk, own_x_sk);
  /* crypto_scalarmult refuses a result of all zeros (a small-order point). */
  if (rc == 0 && (crypto_scalarmult_base(own_x_pk, own_x_sk) != 0 ||
                  crypto_scalarmult(q, own_x_sk, peer_x_pk) != 0))
    rc = FL_EINVAL;
  if (rc == 0) {
    crypto_generichash_state st;
    crypto_generichash_init(&st, NULL, 0, FL_PAIRKEY_BYTES);
    crypto_generichash_update(&st, (const unsigned char *)FL_PAIRKEY_LABEL,
                              strlen(FL_PAIRKEY_LABEL));
    pairkey_put_host(&st, "from", from_host);
    pairkey_put_host(&st, "to", to_host);
    crypto_generichash_update(&st, q, sizeof q);
    crypto_generichash_update(&st, sending ? own_x_pk : peer_x_pk, 32);
    crypto_generichash_update(&st, sending ? peer_x_pk : own_x_pk, 32);
    crypto_generichash_final(&st, k, FL_PAIRKEY_BYTES);
    sodium_memzero(&st, sizeof st);
  }
  sodium_memzero(own_x_sk, sizeof own_x_sk);
  sodium_memzero(q, sizeof q);
  return rc;
}

int fl_aead_seal(const unsigned char k[FL_PAIRKEY_BYTES], const unsigned char *ad, size_t adlen,
                 const char *body, size_t len, const unsigned char *nonce, unsigned char **out,
                 size_t *outlen) {
  if (!out || !outlen || !k || (!body && len) || (!ad && adlen))
    return FL_EINVAL;
  *out = NULL;
  *outlen = 0;
  if (len > FL_MAX_CONTENT)
    return FL_ETOOBIG;
  unsigned char *buf = fl_malloc(len + FL_SEAL_OVERHEAD);
  if (!buf)
    return FL_ENOMEM;
  if (nonce)
    memcpy(buf, nonce, FL_AEAD_NONCE_BYTES);
  else
    fl_random_bytes(buf, FL_AEAD_NONCE_BYTES);
  unsigned long long clen = 0;
  crypto_aead_xchacha20poly1305_ietf_encrypt(
      buf + FL_AEAD_NONCE_BYTES, &clen, (const unsigned char *)body, len, ad, adlen, NULL, buf, k);
  *out = buf;
  *outlen = FL_AEAD_NONCE_BYTES + (size_t)clen;
  return 0;
}

int fl_aead_open(const unsigned char k[FL_PAIRKEY_BYTES], const unsigned char *ad, size_t adlen,
                 const unsigned char *sealed, size_t len, char **out, size_t *outlen) {
  if (!out || !outlen || !k || (!sealed && len) || (!ad && adlen))
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
  unsigned long long got = 0;
  if (crypto_aead_xchacha20poly1305_ietf_decrypt(
          (unsigned char *)buf, &got, NULL, sealed + FL_AEAD_NONCE_BYTES, len - FL_AEAD_NONCE_BYTES,
          ad, adlen, sealed, k) != 0) {
    fl_free(buf);
    return FL_EBADSIG;
  }
  buf[plen] = '\0';
  *out = buf;
  *outlen = plen;
  return 0;
}

/* ---- the cache ---- */

/* One peer's keys and the pinned key they were made from. */
typedef struct pairkey_entry {
  char host[FL_HOST_ID_SIZE];
  unsigned char pk[FL_SIGN_PK_BYTES];
  fl_pairkey keys;
} pairkey_entry;

struct fl_pairkeys {
  const fl_identity *id;
  pairkey_entry *v;
  size_t n, cap;
};

int fl_pairkeys_new(const fl_identity *id, fl_pairkeys **out) {
  if (!out)
    return FL_EINVAL;
  *out = NULL;
  if (!id)
    return FL_EINVAL;
  fl_pairkeys *c = fl_calloc(1, sizeof *c);
  if (!c)
    return FL_ENOMEM;
  c->id = id;
  *out = c;
  return 0;
}

void fl_pairkeys_free(fl_pairkeys **c) {
  if (!c || !*c)
    return;
  if ((*c)->v)
    sodium_memzero((*c)->v, (*c)->cap * sizeof *(*c)->v);
  fl_free((*c)->v);
  fl_free(*c);
  *c = NULL;
}

static pairkey_entry *pairkeys_find(const fl_pairkeys *c, const char *host) {
  for (size_t i = 0; i < c->n; i++)
    if (strcmp(c->v[i].host, host) == 0)
      return &c->v[i];
  return NULL;
}

/* All three keys of own host and host (pinned key pk) into *keys. */
static int pairkeys_make(const fl_identity *id, const char *host,
                         const unsigned char pk[FL_SIGN_PK_BYTES], fl_pairkey *keys) {
  int rc = fl_pairkey_derive(id->sk, pk, id->host_id, host, 1, keys->send);
  if (rc == 0)
    rc = fl_pairkey_derive(id->sk, pk, host, id->host_id, 0, keys->recv);
  if (rc == 0)
    rc = fl_seal_shared(pk, id->sk, keys->box);
  if (rc)
    sodium_memzero(keys, sizeof *keys);
  return rc;
}

int fl_pairkeys_get(fl_pairkeys *c, const char *host, const unsigned char pk[FL_SIGN_PK_BYTES],
                    const fl_pairkey **out) {
  if (!out)
    return FL_EINVAL;
  *out = NULL;
  if (!c || !host || !pk || !host[0] || strlen(host) >= FL_HOST_ID_SIZE)
    return FL_EINVAL;
  pairkey_entry *e = pairkeys_find(c, host);
  if (e && sodium_memcmp(e->pk, pk, FL_SIGN_PK_BYTES) == 0) {
    *out = &e->keys;
    return 0;
  }
  if (e) /* made from another key: that pin is gone */
    fl_pairkeys_drop(c, host);
  if (c->n == c->cap) {
    /* Every pin and our own host: past that, something is wrong. */
    if (c->cap >= FL_PEERS_MAX + 1)
      return FL_EFULL;
    size_t cap = c->cap ? 2 * c->cap : 8;
    if (cap > FL_PEERS_MAX + 1)
      cap = FL_PEERS_MAX + 1;
    /* Not fl_realloc: the old block holds keys and must be wiped. */
    pairkey_entry *v = fl_calloc(cap, sizeof *v);
    if (!v)
      return FL_ENOMEM;
    if (c->v) {
      memcpy(v, c->v, c->n * sizeof *v);
      sodium_memzero(c->v, c->cap * sizeof *c->v);
      fl_free(c->v);
    }
    c->v = v;
    c->cap = cap;
  }
  e = &c->v[c->n];
  int rc = pairkeys_make(c->id, host, pk, &e->keys);
  if (rc)
    return rc;
  fl_copy(e->host, sizeof e->host, host);
  memcpy(e->pk, pk, FL_SIGN_PK_BYTES);
  c->n++;
  *out = &e->keys;
  return 0;
}

void fl_pairkeys_drop(fl_pairkeys *c, const char *host) {
  if (!c || !host)
    return;
  pairkey_entry *e = pairkeys_find(c, host);
  if (!e)
    return;
  pairkey_entry *last = &c->v[c->n - 1];
  if (e != last)
    memcpy(e, last, sizeof *e);
  sodium_memzero(last, sizeof *last);
  c->n--;
}

size_t fl_pairkeys_count(const fl_pairkeys *c) { return c ? c->n : 0; }
