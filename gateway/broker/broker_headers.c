/* broker_headers.c — the envelope as AMQP headers and publish properties
 * (see broker_headers.h).
 *
 * On the wire the envelope is either one longstr header per non-empty field,
 * named by its key in the envelope's field table, or all of them packed
 * into the one header `env` (envelope.h, docs/wire-format.md); the
 * functions here are the only code that maps between the table and an AMQP
 * headers table. Reading is the first parser a message from another
 * host meets, so it is fuzzed (tests/fuzz/fuzz_envelope.c): whatever the
 * table holds, it either fills a well-formed fl_envelope or says why not.
 * Pure functions, any thread. */
#include "gateway/broker/broker_headers.h"

#include <string.h>
#include <time.h>

#include "common/error.h"
#include "common/limits.h"

int fl_broker_env_to_headers(const fl_envelope *env, amqp_table_entry_t *entries) {
  int n = 0;
  for (size_t i = 0; i < FL_ENVELOPE_NFIELDS; i++) {
    const fl_envelope_field *f = &fl_envelope_fields[i];
    const char *val = fl_envelope_get(env, f);
    if (val[0])
      entries[n++] = fl_broker_entry_str(f->key, val);
  }
  return n;
}

static int is_string(const amqp_table_entry_t *ent) {
  return ent->value.kind == AMQP_FIELD_KIND_UTF8 || ent->value.kind == AMQP_FIELD_KIND_BYTES;
}

/* One header per field: env is zeroed, then each header named like a field
 * sets it. */
static int env_from_fields(const amqp_table_t *t, fl_envelope *env, char *err, size_t errlen) {
  memset(env, 0, sizeof(*env));
  for (int e = 0; t && e < t->num_entries; e++) {
    const amqp_table_entry_t *ent = &t->entries[e];
    if (!is_string(ent))
      continue;
    const fl_envelope_field *f = fl_envelope_field_find(ent->key.bytes, ent->key.len);
    if (!f)
      continue;
    amqp_bytes_t v = ent->value.value.bytes;
    int rc = fl_envelope_set_read(env, f, v.bytes, v.len, err, errlen);
    if (rc)
      return rc;
  }
  return 0;
}

/* The packed `env` header of t, or NULL. */
static const amqp_bytes_t *packed_header(const amqp_table_t *t) {
  const size_t hl = strlen(FL_BROKER_ENV_HEADER);
  for (int e = 0; t && e < t->num_entries; e++) {
    const amqp_table_entry_t *ent = &t->entries[e];
    if (is_string(ent) && ent->key.len == hl &&
        memcmp(ent->key.bytes, FL_BROKER_ENV_HEADER, hl) == 0)
      return &ent->value.value.bytes;
  }
  return NULL;
}

int fl_broker_env_from_headers(const amqp_table_t *t, uint64_t body_size, fl_envelope *env,
                               char *err, size_t errlen) {
  const amqp_bytes_t *packed = packed_header(t);
  int rc = packed ? fl_envelope_unpack(packed->bytes, packed->len, env, err, errlen)
                  : env_from_fields(t, env, err, errlen);
  if (rc)
    return rc;
  if (body_size > FL_MAX_WIRE_BODY) {
    fl_errf(err, errlen, "the body is larger than FL_MAX_WIRE_BODY");
    return FL_ETOOBIG;
  }
  return 0;
}

void fl_broker_env_properties(const fl_envelope *env, int packed, fl_broker_env_hdr *h,
                              amqp_basic_properties_t *p) {
  memset(p, 0, sizeof(*p));
  p->_flags = AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG |
              AMQP_BASIC_TIMESTAMP_FLAG | AMQP_BASIC_HEADERS_FLAG;
  /* A sealed body is ciphertext, not text. */
  p->content_type = amqp_cstring_bytes(env->sealed_to[0] ? "application/octet-stream"
                                                         : "text/plain; charset=utf-8");
  p->delivery_mode = AMQP_DELIVERY_PERSISTENT;
  p->timestamp = (uint64_t)time(NULL);
  if (env->msg_id[0]) {
    p->_flags |= AMQP_BASIC_MESSAGE_ID_FLAG;
    p->message_id = amqp_cstring_bytes(env->msg_id);
  }
  p->headers.entries = h->entries;
  if (packed) {
    amqp_table_entry_t *e = &h->entries[0];
    e->key = amqp_cstring_bytes(FL_BROKER_ENV_HEADER);
    e->value.kind = AMQP_FIELD_KIND_UTF8;
    e->value.value.bytes.bytes = h->packed;
    e->value.value.bytes.len = fl_envelope_pack(env, h->packed);
    p->headers.num_entries = 1;
  } else
    p->headers.num_entries = fl_broker_env_to_headers(env, h->entries);
}
