/* wire.h — what this gateway puts on the broker and what it makes of a
 * body it takes off it: the one publish path, and the opening of a
 * delivery's body.
 *
 * Publishing (fl_wire_publish) seals the body to the one host it is for
 * unless broker.seal is false: a message, a broadcast copy or a control
 * message names its recipient host and goes out sealed; presence names none
 * and stays readable, signed. Towards a host that reads envelope 1.2
 * (FL_WIRE_PAIR_SEAL) a sealed message goes in the pair-sealed form: no
 * signature, the body sealed with the pair key of the two hosts and every
 * envelope field as associated data (pairkey.h). Otherwise it is signed,
 * and a sealed body is a crypto_box (seal.h) the signature covers, so
 * `sealedTo` and the sealed body cannot be swapped or stripped unseen.
 *
 * Receiving (fl_wire_open) runs after the origin check: a sealed body must
 * be sealed to this host and open under the sending host's pinned key (for
 * the pair-sealed form, that opening is the origin check); a body in clear
 * from another host is taken only while broker.acceptUnsealed holds
 * (default: false, or true when this gateway itself runs with broker.seal
 * false).
 *
 * Keys per peer host (pairkey.h's cache, in gw->pairkeys) are made on first
 * use, made again when a host's pinned key changes, and wiped when the pin
 * is removed (fl_gw_peer_remove) and when the backend is freed.
 *
 * Loop thread; nothing blocks. */
#ifndef FL_WIRE_H
#define FL_WIRE_H

#include <stddef.h>

#include "gateway/broker/broker.h"
#include "gateway/gw.h"

/* A flag of fl_wire_publish beside the FL_BROKER_* ones (and taken out
 * before the broker sees them): to_host reads envelope 1.2, so a sealed
 * body goes in the pair-sealed form. Ignored when nothing is sealed. */
#define FL_WIRE_PAIR_SEAL (1u << 16)

/* Fills env->sealed_to, seals body (len bytes) to to_host when to_host is
 * not NULL and sealing is on — with the pair key and no signature under
 * FL_WIRE_PAIR_SEAL, else as a box that env's signature covers — and
 * queues the publish (fl_broker_publish, whose arguments, FL_BROKER_* flags
 * and outcome these share). env is changed (sealed_to, sig). Returns 0,
 * FL_EUNPINNED (to_host has no pinned key to seal to), or an error of the
 * sealing, of fl_sign_envelope or of fl_broker_publish; err (may be NULL)
 * says why. */
int fl_wire_publish(fl_gw *gw, fl_broker *b, const char *exchange, const char *key, unsigned flags,
                    fl_envelope *env, const char *body, size_t len, const char *to_host, void *req,
                    char *err, size_t errlen);

/* Wipes and frees gw's cache of keys per peer host. NULL-safe; the
 * cross-host backend calls it when it is freed. */
void fl_wire_keys_free(fl_gw *gw);

/* 1 when this gateway takes bodies in clear from other hosts. */
int fl_wire_accepts_unsealed(const fl_gw *gw);

/* The body of d for the receive checks, after its signature verified or,
 * in the pair-sealed form, as its origin check.
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
