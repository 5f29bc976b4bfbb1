/* claims.h — work claims carried as messages in the "#claims" room, so
 * every gateway that syncs it computes the same owner (claim_rules.h).
 *
 * A claim, release or handoff is published to #claims (msgType
 * ClaimIssued, ClaimReleased, ClaimHandoff) signed by this host; who sent it
 * is the envelope's from, fromName and host, never the payload. The verbs
 * (fl_gw_claim, _release, _handoff, _claims in gw.h) read the room, replay
 * it and answer owned, held_by_other or tentative: tentative while the
 * winning claim is younger than the settle window (claims.settleMs; one
 * sync interval by default), in which a peer's earlier claim may still
 * arrive. Claims need rooms; without them the verbs answer
 * {degraded: true}. Loop thread only. */
#ifndef FL_CLAIMS_H
#define FL_CLAIMS_H

#include <stddef.h>

#include "gateway/gw.h"
#include "gateway/rooms/room_envelope.h"

#define FL_CLAIMS_ROOM "#claims"

/* Registers #claims when rooms or a broker are on. 0 or a negative code
 * with err. */
int fl_claims_start(fl_gw *gw, char *err, size_t errlen);

/* A claim another gateway published on fleet.claims (host: the envelope's,
 * body: the room item, len bytes): checked like a pulled room message and
 * added to #claims, deduped by msgId. Never fails: a bad one is counted. */
void fl_claims_receive(fl_gw *gw, const char *host, const char *body, size_t len);

/* The claim check of a message m for room_id before it joins the log
 * (fl_claim_admit): 0 to admit (anything that is not a claim of #claims),
 * -1 with *why (claim_future, claim_late) to refuse, or a negative code
 * when the room cannot be read. */
int fl_claims_admit(fl_gw *gw, const char *room_id, const fl_room_msg *m, fl_room_drop *why);
/* Frees the events fl_claims_admit keeps. */
void fl_claims_log_free(fl_gw *gw);

#endif
