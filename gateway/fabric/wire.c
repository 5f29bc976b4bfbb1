/* wire.c — the one publish path (sign, and seal to the recipient host) and
 * the opening of a received body (see wire.h). */
#include "gateway/fabric/wire.h"

#include <sodium.h>
#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "gateway/core/gw_internal.h"
#include "gateway/proto/seal.h"
#include "gateway/proto/sign.h"

/* The Ed25519 key of host: our own, or the one pinned for it. */
static int wire_host_key(fl_gw *gw, const char *host, unsigned char pk[FL_SIGN_PK_BYTES]) {
  if (strcmp(host, gw->cfg.host_id) == 0) {
    memcpy(pk, gw->id.pk, FL_SIGN_PK_BYTES);
    return 0;
  }
  return fl_peers_lookup(gw->peers, host, pk) == 0 ? 0 : FL_EUNPINNED;
}

/* One peer's box key, and the pinned key it was made from. */
typedef struct fl_wire_key {
  char host[FL_HOST_ID_SIZE];
  unsigned char pk[FL_SIGN_PK_BYTES];
  unsigned char k[FL_SEAL_KEY_BYTES];
} fl_wire_key;

struct fl_wire_keys {
  fl_wire_key *v;
  size_t n, cap;
};

void fl_wire_keys_free(fl_gw *gw) {
  if (!gw || !gw->wire_keys)
    return;
  struct fl_wire_keys *c = gw->wire_keys;
  if (c->v)
    sodium_memzero(c->v, c->cap * sizeof *c->v);
  fl_free(c->v);
  fl_free(c);
  gw->wire_keys = NULL;
}

/* The box key between this gateway and host (its pinned key, or ours for
 * our own host): from the cache when it was made from the same pinned key,
 * else made now (crypto_box_beforenm, one X25519 per peer rather than per
 * message) and kept. 0, FL_EUNPINNED or FL_EINVAL. */
static int wire_box_key(fl_gw *gw, const char *host, unsigned char k[FL_SEAL_KEY_BYTES]) {
  unsigned char pk[FL_SIGN_PK_BYTES];
  if (wire_host_key(gw, host, pk) != 0)
    return FL_EUNPINNED;
  struct fl_wire_keys *c = gw->wire_keys;
  if (!c)
    c = gw->wire_keys = fl_calloc(1, sizeof *c);
  fl_wire_key *e = NULL;
  for (size_t i = 0; c && i < c->n && !e; i++)
    if (strcmp(c->v[i].host, host) == 0)
      e = &c->v[i];
  if (e && sodium_memcmp(e->pk, pk, sizeof pk) == 0) {
    memcpy(k, e->k, FL_SEAL_KEY_BYTES);
    return 0;
  }
  int rc = fl_seal_shared(pk, gw->id.sk, k);
  if (rc || !c)
    return rc; /* no cache (out of memory): the key is still good */
  if (!e && c->n == c->cap && c->cap < FL_PEERS_MAX + 1) {
    size_t cap = c->cap ? 2 * c->cap : 8;
    fl_wire_key *v = fl_realloc(c->v, cap * sizeof *v);
    if (v) {
      c->v = v;
      c->cap = cap;
    }
  }
  if (!e && c->n < c->cap)
    e = &c->v[c->n++];
  if (e) {
    fl_copy(e->host, sizeof e->host, host);
    memcpy(e->pk, pk, sizeof pk);
    memcpy(e->k, k, FL_SEAL_KEY_BYTES);
  }
  return 0;
}

int fl_wire_publish(fl_gw *gw, fl_broker *b, const char *exchange, const char *key, unsigned flags,
                    fl_envelope *env, const char *body, size_t len, const char *to_host, void *req,
                    char *err, size_t errlen) {
  unsigned char *sealed = NULL;
  size_t slen = 0;
  env->sealed_to[0] = '\0';
  if (to_host && !gw->cfg.broker_no_seal) {
    unsigned char k[FL_SEAL_KEY_BYTES];
    int rc = wire_box_key(gw, to_host, k);
    if (rc == FL_EUNPINNED) {
      fl_errf(err, errlen,
              "host '%s' is not pinned here, so there is no key to seal the message to "
              "(fleetctl peer add %s KEY)",
              to_host, to_host);
      return rc;
    }
    if (rc == 0)
      rc = fl_seal_with(k, body, len, NULL, &sealed, &slen);
    sodium_memzero(k, sizeof k);
    if (rc) {
      fl_errf(err, errlen, "cannot seal the message to host '%s': %s", to_host, fl_strerror(rc));
      return rc;
    }
    fl_copy(env->sealed_to, sizeof env->sealed_to, to_host);
    body = (const char *)sealed;
    len = slen;
  }
  int rc = fl_sign_envelope(env, body, len, gw->id.sk);
  if (rc == 0)
    rc = fl_broker_publish(b, exchange, key, flags, env, body, len, req);
  if (rc)
    fl_errf(err, errlen, "%s", fl_strerror(rc));
  fl_free(sealed);
  return rc;
}

int fl_wire_accepts_unsealed(const fl_gw *gw) {
  return gw->cfg.broker_accept_unsealed || gw->cfg.broker_no_seal;
}

int fl_wire_open(fl_gw *gw, const fl_broker_delivery *d, const char **body, size_t *len,
                 char **owned, char *why, size_t whylen) {
  const fl_envelope *env = d->env;
  *owned = NULL;
  *body = d->body;
  *len = d->len;
  if (!env->sealed_to[0]) {
    if (strcmp(env->host, gw->cfg.host_id) == 0 || fl_wire_accepts_unsealed(gw))
      return 0;
    fl_errf(why, whylen,
            "its body crossed the broker in clear and broker.acceptUnsealed is false here");
    return FL_C_VERIFY_UNSEALED;
  }
  if (strcmp(env->sealed_to, gw->cfg.host_id) != 0) {
    fl_errf(why, whylen, "its body is sealed to host '%s', not to this one", env->sealed_to);
    return FL_C_VERIFY_SEALED_ELSEWHERE;
  }
  unsigned char k[FL_SEAL_KEY_BYTES];
  int rc = wire_box_key(gw, env->host, k);
  if (rc == FL_EUNPINNED) {
    /* The signature check found this key a moment ago. */
    fl_errf(why, whylen, "its host is not pinned here");
    return FL_C_VERIFY_UNPINNED;
  }
  char *plain = NULL;
  size_t plen = 0;
  if (rc == 0)
    rc = fl_unseal_with(k, (const unsigned char *)d->body, d->len, &plain, &plen);
  sodium_memzero(k, sizeof k);
  if (rc == FL_ENOMEM) {
    fl_errf(why, whylen, "out of memory opening its sealed body");
    return FL_C_COUNT;
  }
  if (rc) {
    fl_errf(why, whylen, "its sealed body does not open with this host's key and the sender's");
    return FL_C_VERIFY_SEAL_BROKEN;
  }
  *owned = plain;
  *body = plain;
  *len = plen;
  return 0;
}
