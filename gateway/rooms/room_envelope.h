/* room_envelope.h — one room message as it travels between hosts, and the
 * room's id.
 *
 * A room message is an fl_envelope of kind ROOM signed with the node
 * identity through sign.h (the same canonical form as every other
 * envelope), whose body is the compact JSON {"room", "msgType", "payload"}.
 * On the wire (a pull response, docs/wire-format.md) it is one JSON object:
 * the envelope's fields under their wire keys, "body" (the exact signed
 * bytes, as a JSON string) and "hops" (not signed: how many times it was
 * merged and served again).
 *
 * Everything here is pure and safe on any thread. */
#ifndef FL_ROOM_ENVELOPE_H
#define FL_ROOM_ENVELOPE_H

#include <jansson.h>
#include <stddef.h>

#include "common/limits.h"
#include "gateway/proto/envelope.h"
#include "gateway/proto/sign.h"

/* Why a merged message is dropped: X(NAME, "wire name"). One list, for the
 * counters per peer, fleet_peers and the docs. */
#define FL_ROOM_DROPS(X)                                                                           \
  X(UNSIGNED, "unsigned")                                                                          \
  X(UNPINNED, "unpinned")                                                                          \
  X(WRONG_KEY, "wrong_key")                                                                        \
  X(MISATTRIBUTED, "misattributed")                                                                \
  X(OVERSIZE, "oversize")                                                                          \
  X(HOP_LIMIT, "hop_limit")                                                                        \
  X(DUPLICATE, "duplicate")                                                                        \
  X(MALFORMED, "malformed")                                                                        \
  X(BAD_TS, "bad_ts")                                                                              \
  X(CLAIM_FUTURE, "claim_future")                                                                  \
  X(CLAIM_LATE, "claim_late")

#define FL_ROOM_DROP_ENUM_(name, text) FL_ROOM_DROP_##name,
typedef enum fl_room_drop { FL_ROOM_DROPS(FL_ROOM_DROP_ENUM_) FL_ROOM_DROP_COUNT } fl_room_drop;
#undef FL_ROOM_DROP_ENUM_

/* The wire name of a drop reason ("unsigned"), or NULL. */
const char *fl_room_drop_name(fl_room_drop d);

/* A parsed room message. env and body are what the signature covers. */
typedef struct fl_room_msg {
  fl_envelope env;
  char room_id[FL_ROOM_ID_SIZE];
  char msg_type[FL_ROOM_MAX_MSG_TYPE + 1];
  json_t *payload;  /* owned: an object */
  const char *body; /* borrowed from the parsed item */
  size_t body_len;
  int hops;
} fl_room_msg;

/* The roomId of label: the hex of crypto_generichash (32 bytes, no key)
 * over "fleet-room:" + label, into out. label must be 1..FL_ROOM_MAX_LABEL
 * bytes. Returns 0 or FL_EINVAL. */
int fl_room_id(const char *label, char out[FL_ROOM_ID_SIZE]);
/* 1 when s has the shape of a roomId (64 lower-case hex digits), else 0. */
int fl_room_id_valid(const char *s);

/* Builds and signs a new room message from this host: a fresh msgId and
 * traceId, ts now, from / from_name the publishing agent. payload is
 * borrowed (an object). *item is a new compact JSON text of the message
 * without hops (fl_free), msg_id (FL_ID_LEN) its msgId. Returns 0,
 * FL_EINVAL, FL_ETOOBIG (over FL_ROOM_MAX_ENVELOPE) or FL_ENOMEM. */
int fl_room_msg_build(const char *host, const char *from, const char *from_name,
                      const char *room_id, const char *msg_type, const json_t *payload,
                      const unsigned char sk[FL_SIGN_SK_BYTES], char **item, char *msg_id);

/* Reads one served item (borrowed; body stays borrowed from it) into *out,
 * checking its shape, not its key: every envelope field a string that fits,
 * kind ROOM, a UUID msgId, hops a whole number, ts a stable RFC 3339 string
 * (bad_ts), a body that parses to {room, msgType, payload: object}. Returns
 * 0, or a reason (> 0 is not used: returns -1 and sets *why). On success
 * free with fl_room_msg_clear. */
int fl_room_msg_parse(json_t *item, fl_room_msg *out, fl_room_drop *why);

/* An item as the room store keeps it (text, without hops) read back into
 * *out: the parsed object (*out borrows from it; fl_room_msg_clear, then
 * json_decref), or NULL when it does not load or parse. */
json_t *fl_room_item_load(const char *item, fl_room_msg *out);
void fl_room_msg_clear(fl_room_msg *m);

/* The compact JSON text of m without hops, as stored (fl_free). NULL on
 * out-of-memory. */
char *fl_room_msg_item(const fl_room_msg *m);

/* 1 when s is an RFC 3339 UTC time that reads back the same as fleet writes
 * it ("YYYY-MM-DDTHH:MM:SS.mmmZ"), else 0. */
int fl_room_ts_stable(const char *s);

#endif
