/* wire.c — the one publish path (sign, and seal to the recipient host) and
 * the opening of a received body (see wire.h). */
#include "gateway/wire.h"

#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "gateway/gw_internal.h"
#include "gateway/seal.h"
#include "gateway/sign.h"

/* The Ed25519 key of host: our own, or the one pinned for it. */
static int wire_host_key(fl_gw *gw, const char *host, unsigned char pk[FL_SIGN_PK_BYTES]) {
  if (strcmp(host, gw->cfg.host_id) == 0) {
    memcpy(pk, gw->id.pk, FL_SIGN_PK_BYTES);
    return 0;
  }
  return fl_peers_lookup(gw->peers, host, pk) == 0 ? 0 : FL_EUNPINNED;
}

int fl_wire_publish(fl_gw *gw, fl_broker *b, const char *exchange, const char *key, int mandatory,
                    fl_envelope *env, const char *body, size_t len, const char *to_host, void *req,
                    char *err, size_t errlen) {
  unsigned char *sealed = NULL;
  size_t slen = 0;
  env->sealed_to[0] = '\0';
  if (to_host && !gw->cfg.broker_no_seal) {
    unsigned char pk[FL_SIGN_PK_BYTES];
    if (wire_host_key(gw, to_host, pk) != 0) {
      fl_errf(err, errlen,
              "host '%s' is not pinned here, so there is no key to seal the message to "
              "(fleetctl peer add %s KEY)",
              to_host, to_host);
      return FL_EUNPINNED;
    }
    int rc = fl_seal(body, len, NULL, pk, gw->id.sk, &sealed, &slen);
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
    rc = fl_broker_publish(b, exchange, key, mandatory, env, body, len, req);
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
  unsigned char pk[FL_SIGN_PK_BYTES];
  if (wire_host_key(gw, env->host, pk) != 0) {
    /* The signature check found this key a moment ago. */
    fl_errf(why, whylen, "its host is not pinned here");
    return FL_C_VERIFY_UNPINNED;
  }
  char *plain = NULL;
  size_t plen = 0;
  int rc = fl_unseal((const unsigned char *)d->body, d->len, pk, gw->id.sk, &plain, &plen);
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
