/* broker_headers.h — the envelope on an AMQP message: its headers and the
 * basic properties every fleet publish carries.
 *
 * Pure functions, any thread; nothing here knows the broker link itself,
 * so whatever publishes an envelope (the link, the benchmark's simulated
 * hosts) builds the same message. */
#ifndef FL_BROKER_HEADERS_H
#define FL_BROKER_HEADERS_H

#include <amqp.h>
#include <stdint.h>

#include "gateway/proto/envelope.h"

/* Table entries that borrow k and v (for headers and queue arguments). */
static inline amqp_table_entry_t fl_broker_entry_str(const char *k, const char *v) {
  amqp_table_entry_t e;
  e.key = amqp_cstring_bytes(k);
  e.value.kind = AMQP_FIELD_KIND_UTF8;
  e.value.value.bytes = amqp_cstring_bytes(v);
  return e;
}

static inline amqp_table_entry_t fl_broker_entry_long(const char *k, long v) {
  amqp_table_entry_t e;
  e.key = amqp_cstring_bytes(k);
  e.value.kind = AMQP_FIELD_KIND_I64;
  e.value.value.i64 = v;
  return e;
}

/* The header that holds the whole envelope packed (fl_envelope_pack). */
#define FL_BROKER_ENV_HEADER "env"

/* Room for an envelope's headers in either form; the properties of a
 * publish borrow it. */
typedef struct fl_broker_env_hdr {
  amqp_table_entry_t entries[FL_ENVELOPE_NFIELDS];
  char packed[FL_ENVELOPE_PACKED_MAX];
} fl_broker_env_hdr;

/* The envelope as AMQP headers. to_headers fills entries (room for
 * FL_ENVELOPE_NFIELDS) with one longstr per non-empty field, in table
 * order, borrowing env's strings, and returns how many.
 *
 * from_headers reads env from a delivery's headers table t (NULL = none)
 * and checks the announced body size. A longstr header `env` is read as
 * the packed envelope (fl_envelope_unpack) and any other header is then
 * ignored; without one, env is zeroed and each header named like a field
 * sets that field. Headers of no field and values that are not strings are
 * ignored (rolling upgrades within a major version). Returns 0, FL_ETOOBIG
 * (a value longer than its field, or body_size over FL_MAX_WIRE_BODY) or
 * FL_EPROTO (a value holding a NUL byte, a packed envelope that is not
 * one), with err saying which; either makes the delivery malformed. */
int fl_broker_env_to_headers(const fl_envelope *env, amqp_table_entry_t *entries);
int fl_broker_env_from_headers(const amqp_table_t *t, uint64_t body_size, fl_envelope *env,
                               char *err, size_t errlen);

/* The basic properties of a publish of env: content type (text, or octets
 * for a sealed body), persistent, the time now in seconds, message_id =
 * msgId when present, and the envelope's headers written into h: packed
 * into the one `env` header when packed is 1 (for a host that reads it,
 * envelope 1.1 or later), else one header per field (to_headers). p
 * borrows h, as it borrows env. */
void fl_broker_env_properties(const fl_envelope *env, int packed, fl_broker_env_hdr *h,
                              amqp_basic_properties_t *p);

#endif
