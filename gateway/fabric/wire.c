/* wire.c — the one publish path (seal to the recipient host: pair-sealed,
 * or boxed and signed; presence signed in clear) and the opening of a
 * received body (see wire.h). */
#include "gateway/fabric/wire.h"

#include <sodium.h>
#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "gateway/core/gw_internal.h"
#include "gateway/proto/pairkey.h"
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

void fl_wire_keys_free(fl_gw *gw) {
  if (gw)
    fl_pairkeys_free(&gw->pairkeys);
}

/* The keys between this gateway and host (its pinned key, or ours for our
 * own host), from the cache (pairkey.h), which makes them on first use and
 * again when the pin changed. *k is borrowed until the next call. 0,
 * FL_EUNPINNED, FL_EINVAL, FL_EFULL or FL_ENOMEM. */
static int wire_keys(fl_gw *gw, const char *host, const fl_pairkey **k) {
  unsigned char pk[FL_SIGN_PK_BYTES];
  if (wire_host_key(gw, host, pk) != 0)
    return FL_EUNPINNED;
  if (!gw->pairkeys) {
    int rc = fl_pairkeys_new(&gw->id, &gw->pairkeys);
    if (rc)
      return rc;
  }
  return fl_pairkeys_get(gw->pairkeys, host, pk, k);
}

int fl_wire_publish(fl_gw *gw, fl_broker *b, const char *exchange, const char *key, unsigned flags,
                    fl_envelope *env, const char *body, size_t len, const char *to_host, void *req,
                    char *err, size_t errlen) {
  int pair = (flags & FL_WIRE_PAIR_SEAL) != 0;
  flags &= ~FL_WIRE_PAIR_SEAL;
  unsigned char *sealed = NULL;
  size_t slen = 0;
  env->sealed_to[0] = '\0';
  env->sig[0] = '\0';
  int rc = 0;
  if (to_host && !gw->cfg.broker_no_seal) {
    const fl_pairkey *k = NULL;
    rc = wire_keys(gw, to_host, &k);
    if (rc == FL_EUNPINNED) {
      fl_errf(err, errlen,
              "host '%s' is not pinned here, so there is no key to seal the message to "
              "(fleetctl peer add %s KEY)",
              to_host, to_host);
      return rc;
    }
    fl_copy(env->sealed_to, sizeof env->sealed_to, to_host);
    if (rc == 0 && pair) {
      /* The seal is the authentication: every field is its associated data. */
      unsigned char head[FL_SIGN_HEAD_MAX];
      size_t hlen = 0;
      rc = fl_sign_canonical_head(env, head, &hlen);
      if (rc == 0)
        rc = fl_aead_seal(k->send, head, hlen, body, len, NULL, &sealed, &slen);
    } else if (rc == 0) {
      rc = fl_seal_with(k->box, body, len, NULL, &sealed, &slen);
    }
    if (rc) {
      env->sealed_to[0] = '\0';
      fl_errf(err, errlen, "cannot seal the message to host '%s': %s", to_host, fl_strerror(rc));
      return rc;
    }
    body = (const char *)sealed;
    len = slen;
  } else {
    pair = 0; /* nothing sealed: signed, like everything in clear */
  }
  if (!pair)
    rc = fl_sign_envelope(env, body, len, gw->id.sk);
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
  const fl_pairkey *k = NULL;
  int rc = wire_keys(gw, env->host, &k);
  if (rc == FL_EUNPINNED) {
    fl_errf(why, whylen, "its host is not pinned here (fleetctl peer add %s KEY)", env->host);
    return FL_C_VERIFY_UNPINNED;
  }
  char *plain = NULL;
  size_t plen = 0;
  if (rc == 0 && fl_envelope_is_pair_sealed(env)) {
    /* Opening under the pair key of (host, this host) with every field as
     * associated data is what proves the origin of this form. */
    unsigned char head[FL_SIGN_HEAD_MAX];
    size_t hlen = 0;
    rc = fl_sign_canonical_head(env, head, &hlen);
    if (rc == 0)
      rc = fl_aead_open(k->recv, head, hlen, (const unsigned char *)d->body, d->len, &plain, &plen);
    if (rc == FL_EINVAL)
      rc = FL_EBADSIG;
  } else if (rc == 0) {
    rc = fl_unseal_with(k->box, (const unsigned char *)d->body, d->len, &plain, &plen);
  }
  if (rc == FL_ENOMEM) {
    fl_errf(why, whylen, "out of memory opening its sealed body");
    return FL_C_COUNT;
  }
  if (rc) {
    fl_errf(why, whylen,
            fl_envelope_is_pair_sealed(env)
                ? "it does not open under the pair key of its host and this one: the seal, a "
                  "field of its envelope or its host is not what was sealed"
                : "its sealed body does not open with this host's key and the sender's");
    return FL_C_VERIFY_SEAL_BROKEN;
  }
  *owned = plain;
  *body = plain;
  *len = plen;
  return 0;
}
