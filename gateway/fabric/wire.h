/* wire.h — what this gateway puts on the broker and what it makes of a
 * body it takes off it: the one publish path, and the opening of a
 * delivery's body.
 *
 * Publishing (fl_wire_publish) signs every envelope (sign.h) and seals the
 * body to the one host it is for (seal.h) unless broker.seal is false: a
 * message, a broadcast copy or a control message names its recipient host
 * and goes out sealed; presence names none and stays readable, signed. The
 * signature covers the bytes as they travel, ciphertext included, so
 * `sealedTo` and the sealed body cannot be swapped or stripped unseen.
 *
 * Receiving (fl_wire_open) runs after the signature check: a sealed body
 * must be sealed to this host and open under the sending host's pinned key;
 * a body in clear from another host is taken only while
 * broker.acceptUnsealed holds (default: false, or true when this gateway
 * itself runs with broker.seal false).
 *
 * Loop thread; nothing blocks. */
#ifndef FL_WIRE_H
#define FL_WIRE_H

#include <stddef.h>

#include "gateway/broker/broker.h"
#include "gateway/gw.h"

/* Fills env->sealed_to, seals body (len bytes) to to_host when to_host is
 * not NULL and sealing is on, signs env over the bytes that travel, and
 * queues the publish (fl_broker_publish, whose arguments, FL_BROKER_* flags
 * and outcome these share). env is changed (sealed_to, sig). Returns 0, FL_EUNPINNED (to_host
 * has no pinned key to seal to), or an error of fl_seal, fl_sign_envelope
 * or fl_broker_publish; err (may be NULL) says why. */
int fl_wire_publish(fl_gw *gw, fl_broker *b, const char *exchange, const char *key, unsigned flags,
                    fl_envelope *env, const char *body, size_t len, const char *to_host, void *req,
                    char *err, size_t errlen);

/* Frees gw's cache of box keys (one per peer host, made by the first
 * message to or from it, and made again when the host's pin changes).
 * NULL-safe; the cross-host backend calls it when it is freed. */
void fl_wire_keys_free(fl_gw *gw);

/* 1 when this gateway takes bodies in clear from other hosts. */
int fl_wire_accepts_unsealed(const fl_gw *gw);

/* The body of d for the receive checks, after its signature verified.
 * Returns 0 with *body and *len set: d's own bytes when it travelled in
 * clear (and that is accepted), or its opened clear bytes in a new
 * NUL-terminated buffer that is also put in *owned for the caller to
 * fl_free (*owned is NULL otherwise). Or returns the fl_counter of the
 * failed check — FL_C_VERIFY_UNSEALED (in clear, not accepted),
 * FL_C_VERIFY_SEALED_ELSEWHERE (sealed to another host),
 * FL_C_VERIFY_SEAL_BROKEN (does not open) — or FL_C_COUNT when it could
 * not be tried (out of memory: the caller gives the delivery back), with
 * why (whylen bytes) saying what failed. */
int fl_wire_open(fl_gw *gw, const fl_broker_delivery *d, const char **body, size_t *len,
                 char **owned, char *why, size_t whylen);

#endif
