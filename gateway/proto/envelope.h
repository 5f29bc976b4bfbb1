/* envelope.h — the envelope fleetd gateways put on every message between
 * hosts: its struct, its kinds, its version rule, and its one field table.
 *
 * docs/wire-format.md is the contract and schema/envelope.json its
 * machine-readable form; tests/unit/test_envelope.c checks that this header
 * and envelope.c say what the schema says. Every place that walks the
 * envelope's fields — the AMQP header mapping (broker_headers.c), the canonical
 * signing form (sign.c), the tests — iterates fl_envelope_fields, so a field
 * is added, renamed or resized in exactly one table.
 *
 * The envelope knows nothing of AMQP or signatures: it is plain data plus
 * pure functions, safe on any thread. */
#ifndef FL_ENVELOPE_H
#define FL_ENVELOPE_H

#include <stddef.h>

/* The envelope version this gateway writes, and the major it accepts (a
 * newer major is refused, see fl_envelope_check_version). 1.1 reads the
 * packed form (below) as well as one header per field; 1.2 reads the
 * pair-sealed form (pairkey.h) as well as the signed one. A gateway sends
 * either only to a host whose host beat said that minor or later. */
#define FL_ENVELOPE_VERSION "1.2"
#define FL_ENVELOPE_MAJOR 1
#define FL_ENVELOPE_PACKED_MINOR 1
#define FL_ENVELOPE_PAIRSEAL_MINOR 2

/* One message's envelope. Each field is a NUL-terminated string in a slot
 * one byte larger than the field's maximum length; "" means absent. Wire
 * keys, sizes and flags are in fl_envelope_fields (envelope.c). */
typedef struct fl_envelope {
  char v[8];       /* "MAJOR.MINOR", "1.0" */
  char kind[16];   /* one of FL_ENVELOPE_KINDS */
  char msg_id[37]; /* the dedup key; also the AMQP message_id */
  char trace_id[37];
  char from[37];
  char to[37];
  char in_reply_to[37];
  char turn_id[37];
  char spawn_id[37];
  char from_name[65];
  char host[64]; /* the publishing gateway's host id */
  char ts[32];   /* RFC 3339 UTC with milliseconds */
  char expires_at[32];
  char sealed_to[64]; /* the host the body is sealed to (seal.h); "" = in clear */
  char sig[128];      /* base64 Ed25519 signature (sign.h); "" = pair-sealed or unsigned */
} fl_envelope;

/* ---- kinds ---- */

/* The kinds, in schema/envelope.json's order. X(NAME): NAME is both the
 * wire string and, as FL_KIND_NAME, the enum value. */
#define FL_ENVELOPE_KINDS(X)                                                                       \
  X(SEND)                                                                                          \
  X(REPLY)                                                                                         \
  X(ASK)                                                                                           \
  X(ANSWER)                                                                                        \
  X(TOO_LATE)                                                                                      \
  X(NO_WAITER)                                                                                     \
  X(ABANDONED)                                                                                     \
  X(FAILED)                                                                                        \
  X(INJECTED)                                                                                      \
  X(BROADCAST)                                                                                     \
  X(PRESENCE)                                                                                      \
  X(SPAWN)                                                                                         \
  X(STOP)                                                                                          \
  X(CLAIM)                                                                                         \
  X(SPAWNED)                                                                                       \
  X(STOPPED)                                                                                       \
  X(COORD)                                                                                         \
  X(ROOM)                                                                                          \
  X(BLOCKED)                                                                                       \
  X(APPROVE)                                                                                       \
  X(APPROVED)

#define FL_KIND_ENUM_(name) FL_KIND_##name,
typedef enum fl_envelope_kind {
  FL_ENVELOPE_KINDS(FL_KIND_ENUM_) FL_KIND_COUNT /* not a kind: how many there are */
} fl_envelope_kind;
#undef FL_KIND_ENUM_

/* The wire name of kind ("SEND"), or NULL for a value that is no kind. */
const char *fl_envelope_kind_name(fl_envelope_kind kind);

/* Sets *out to the kind named s (exact, case-sensitive). Returns 0, or
 * FL_EINVAL when s is NULL or names no kind (*out is left alone). */
int fl_envelope_kind_parse(const char *s, fl_envelope_kind *out);

/* 1 when s is the name of kind (e.g. env->kind is "PRESENCE" for
 * FL_KIND_PRESENCE), else 0. NULL-safe. */
int fl_envelope_is_kind(const char *s, fl_envelope_kind kind);

/* ---- the field table ---- */

/* One envelope field. key is its name on the wire: the AMQP header name and
 * the name in the canonical signing form. The value lives at offset off in
 * fl_envelope, in a slot of size bytes (so at most size - 1 bytes long). */
typedef struct fl_envelope_field {
  const char *key;
  size_t off, size;
  int is_signed; /* covered by sig, in table order (sign.h): FL_SIGNED_ALWAYS
                    or FL_SIGNED_IF_PRESENT; 0 = not covered */
  int required;  /* schema presence "always": every envelope carries it */
} fl_envelope_field;

/* is_signed: written into the canonical form always (absent = length 0),
 * or only when present, so that envelopes without the field keep the exact
 * canonical bytes they had before it existed. */
#define FL_SIGNED_ALWAYS 1
#define FL_SIGNED_IF_PRESENT 2

#define FL_ENVELOPE_NFIELDS 15

/* Every field, in wire order: the signed ones in canonical order, then sig.
 * Changing the order of the signed ones breaks every signature. */
extern const fl_envelope_field fl_envelope_fields[FL_ENVELOPE_NFIELDS];

/* The field whose key is the len bytes at key (not NUL-terminated), or NULL. */
const fl_envelope_field *fl_envelope_field_find(const char *key, size_t len);

/* The value of field f in env (borrowed from env, NUL-terminated when env is
 * well formed; see fl_envelope_check). */
const char *fl_envelope_get(const fl_envelope *env, const fl_envelope_field *f);

/* Sets field f of env to the len bytes at val (need not be NUL-terminated).
 * Returns 0, FL_ETOOBIG when len does not fit the slot, FL_EPROTO when val
 * holds a NUL byte, or FL_EINVAL (a NULL argument); on failure the field is
 * left as it was. */
int fl_envelope_set(fl_envelope *env, const fl_envelope_field *f, const char *val, size_t len);

/* fl_envelope_set for a value read off the wire: the same, with err
 * (may be NULL) naming the field when it is refused. 0, FL_ETOOBIG or
 * FL_EPROTO (a NUL byte). */
int fl_envelope_set_read(fl_envelope *env, const fl_envelope_field *f, const char *val, size_t len,
                         char *err, size_t errlen);

/* ---- the packed form ---- */

/* The envelope in one string, for the single `env` AMQP header
 * (docs/wire-format.md): each present field as "key:len:value\n", in table
 * order, len in ASCII decimal without leading zeros. One header instead of
 * up to fifteen is less for the broker to store and copy with every
 * message it holds. FL_ENVELOPE_PACKED_MAX bounds it (test_envelope checks
 * a full envelope against it). */
#define FL_ENVELOPE_PACKED_MAX 1024

/* Writes env's present fields into out (room for FL_ENVELOPE_PACKED_MAX)
 * and returns the length written. env must be well formed (every field
 * NUL-terminated in its slot). */
size_t fl_envelope_pack(const fl_envelope *env, char *out);

/* Reads a packed envelope of len bytes into env (zeroed first). Keys of no
 * field are skipped. Returns 0, FL_ETOOBIG (a value longer than its field)
 * or FL_EPROTO (not the packed form, a field twice, a NUL byte), with err
 * saying which. */
int fl_envelope_unpack(const char *s, size_t len, fl_envelope *env, char *err, size_t errlen);

/* 1 when env is in the pair-sealed form: its body sealed to one recipient
 * host (`sealedTo`) with their pair key, and no `sig` (pairkey.h). 0 for
 * the signed form, whose seal, if any, is a crypto_box (seal.h). */
int fl_envelope_is_pair_sealed(const fl_envelope *env);

/* ---- checks ---- */

/* The major version of env->v, which must be "MAJOR.MINOR" (each one to four
 * decimal digits). Returns MAJOR, or -1 when v is absent or malformed. A
 * receiver deciding whether to take a message wants
 * fl_envelope_check_version, which applies the rule to it. */
int fl_envelope_major(const fl_envelope *env);

/* The minor version of env->v, or -1 like fl_envelope_major. */
int fl_envelope_minor(const fl_envelope *env);

/* The version rule: v must be "MAJOR.MINOR" with MAJOR at most
 * FL_ENVELOPE_MAJOR (a newer minor is fine: unknown fields are ignored).
 * Returns 0, FL_EPROTO (absent or not MAJOR.MINOR) or FL_EVERSION (a newer
 * major, which a receiver refuses to fleet.dlq). */
int fl_envelope_check_version(const fl_envelope *env);

/* The checks an envelope passes on its own, before any key is looked up:
 * every field NUL-terminated within its slot, the version rule, a known
 * kind, and every required field present. Returns 0, or FL_EINVAL (env
 * NULL), FL_EPROTO or FL_EVERSION with err (may be NULL) saying what is
 * wrong. Formats (UUIDs, timestamps) and the signature are the receiver's
 * later checks. */
int fl_envelope_check(const fl_envelope *env, char *err, size_t errlen);

#endif
