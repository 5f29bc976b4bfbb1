/* fuzz_envelope.c — fuzz target for what fleetd reads from another host's
 * message before any key is involved: a delivery's AMQP headers table and
 * announced body size turned into an fl_envelope
 * (fl_broker_env_from_headers), then the envelope's own checks
 * (fl_envelope_check) and its canonical signing bytes (fl_sign_canonical).
 * Built as a libFuzzer target with -DFLEET_FUZZ=ON (clang), and always as a
 * replay test over tests/fuzz/corpus/envelope/ plus deterministic mutations.
 *
 * The input encodes a headers table in a tiny length-prefixed form (all
 * integers little-endian):
 *
 *   input = entry* [ 0xFF size:u32 body ]
 *   entry = type:u8 klen:u8 key[klen] vlen:u16 value[vlen]
 *
 * type picks the AMQP value kind: 'S' longstr, 'x' bytes, 'I' a 64-bit
 * integer (vlen is its value, no value bytes follow), anything else a
 * boolean (likewise). At most MAX_ENTRIES entries are read; a truncated
 * entry ends the table. After 0xFF, size is the body size the header frame
 * announces (it may exceed FL_MAX_CONTENT) and the remaining bytes are the
 * body itself.
 *
 * Invariants asserted, not just "no crash":
 *   - a parse fails only with FL_ETOOBIG or FL_EPROTO and a message, or
 *     succeeds with every field NUL-terminated inside its slot and, unless
 *     a string header `env` holds the packed envelope, equal to the last
 *     string header of that name;
 *   - re-encoding a parsed envelope gives at most one longstr header per
 *     field, and parsing those headers gives the same envelope, byte for
 *     byte; so does packing it into the one `env` header;
 *   - fl_envelope_check passes only with a known kind, the version rule met
 *     and every required field present, and otherwise fails with FL_EPROTO
 *     or FL_EVERSION and a message;
 *   - the canonical bytes of a parsed envelope can always be built and
 *     start with the canonical prefix. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/limits.h"
#include "gateway/broker/broker_headers.h"
#include "gateway/broker/broker_internal.h"
#include "gateway/proto/envelope.h"
#include "gateway/proto/sign.h"

#define MAX_ENTRIES 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                                \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "fuzz_envelope: invariant failed: %s (line %d)\n", #cond, __LINE__);         \
      abort();                                                                                     \
    }                                                                                              \
  } while (0)

struct input {
  amqp_table_entry_t entries[MAX_ENTRIES];
  amqp_table_t table;
  uint64_t body_size;
  const char *body;
  size_t body_len;
};

/* Decodes data as documented above. Values point into data. */
static void decode(const uint8_t *data, size_t size, struct input *in) {
  size_t at = 0;
  memset(in, 0, sizeof(*in));
  in->table.entries = in->entries;
  while (at < size && in->table.num_entries < MAX_ENTRIES) {
    uint8_t type = data[at];
    if (type == 0xFF) {
      if (size - at >= 5) {
        in->body_size = (uint64_t)data[at + 1] | (uint64_t)data[at + 2] << 8 |
                        (uint64_t)data[at + 3] << 16 | (uint64_t)data[at + 4] << 24;
        in->body = (const char *)data + at + 5;
        in->body_len = size - at - 5;
      }
      return;
    }
    if (size - at < 2)
      return;
    size_t klen = data[at + 1];
    if (size - at - 2 < klen + 2)
      return;
    const uint8_t *key = data + at + 2;
    size_t vlen = (size_t)data[at + 2 + klen] | (size_t)data[at + 3 + klen] << 8;
    at += 4 + klen;
    amqp_table_entry_t *e = &in->entries[in->table.num_entries];
    e->key.bytes = (void *)key;
    e->key.len = klen;
    if (type == 'S' || type == 'x') {
      if (size - at < vlen)
        return;
      e->value.kind = type == 'S' ? AMQP_FIELD_KIND_UTF8 : AMQP_FIELD_KIND_BYTES;
      e->value.value.bytes.bytes = (void *)(data + at);
      e->value.value.bytes.len = vlen;
      at += vlen;
    } else if (type == 'I') {
      e->value.kind = AMQP_FIELD_KIND_I64;
      e->value.value.i64 = (int64_t)vlen;
    } else {
      e->value.kind = AMQP_FIELD_KIND_BOOLEAN;
      e->value.value.boolean = (amqp_boolean_t)(vlen & 1);
    }
    in->table.num_entries++;
  }
}

static int is_string(const amqp_table_entry_t *e) {
  return e->value.kind == AMQP_FIELD_KIND_UTF8 || e->value.kind == AMQP_FIELD_KIND_BYTES;
}

/* Does the table hold a string header `env` (the packed envelope)? */
static int has_packed(const struct input *in) {
  for (int e = 0; e < in->table.num_entries; e++) {
    const amqp_table_entry_t *ent = &in->entries[e];
    if (is_string(ent) && ent->key.len == strlen(FL_BROKER_ENV_HEADER) &&
        memcmp(ent->key.bytes, FL_BROKER_ENV_HEADER, ent->key.len) == 0)
      return 1;
  }
  return 0;
}

/* A successful parse: each field is NUL-terminated in its slot, zero after
 * it, and (read from one header per field) the last string header of its
 * name, or empty when there is none. */
static void check_fields(const struct input *in, const fl_envelope *env) {
  int packed = has_packed(in);
  for (size_t i = 0; i < FL_ENVELOPE_NFIELDS; i++) {
    const fl_envelope_field *f = &fl_envelope_fields[i];
    const char *val = fl_envelope_get(env, f);
    size_t len = strnlen(val, f->size);
    CHECK(len < f->size);
    /* The rest of the slot is zero, so envelopes compare with memcmp. */
    for (size_t k = len; k < f->size; k++)
      CHECK(val[k] == '\0');
    if (packed)
      continue;
    const amqp_table_entry_t *last = NULL;
    for (int e = 0; e < in->table.num_entries; e++) {
      const amqp_table_entry_t *ent = &in->entries[e];
      if (is_string(ent) && ent->key.len == strlen(f->key) &&
          memcmp(ent->key.bytes, f->key, ent->key.len) == 0)
        last = ent;
    }
    if (!last) {
      CHECK(len == 0);
      continue;
    }
    CHECK(last->value.value.bytes.len == len);
    CHECK(len == 0 || memcmp(last->value.value.bytes.bytes, val, len) == 0);
  }
}

/* Re-encoding gives the same envelope back. */
static void check_round_trip(const fl_envelope *env) {
  amqp_table_entry_t hdr[FL_ENVELOPE_NFIELDS];
  int n = fl_broker_env_to_headers(env, hdr);
  CHECK(n >= 0 && n <= FL_ENVELOPE_NFIELDS);
  for (int i = 0; i < n; i++) {
    CHECK(hdr[i].value.kind == AMQP_FIELD_KIND_UTF8);
    CHECK(hdr[i].value.value.bytes.len > 0);
    CHECK(fl_envelope_field_find(hdr[i].key.bytes, hdr[i].key.len) != NULL);
    for (int j = 0; j < i; j++)
      CHECK(hdr[i].key.bytes != hdr[j].key.bytes);
  }
  amqp_table_t t = {n, hdr};
  fl_envelope again;
  char err[FL_BROKER_WHY_LEN] = "";
  CHECK(fl_broker_env_from_headers(&t, 0, &again, err, sizeof err) == 0);
  CHECK(memcmp(env, &again, sizeof again) == 0);
  /* Packed into the one header: within its bound, and the same back. */
  fl_broker_env_hdr h;
  amqp_basic_properties_t p;
  fl_broker_env_properties(env, 1, &h, &p);
  CHECK(p.headers.num_entries == 1);
  CHECK(p.headers.entries[0].value.value.bytes.len <= FL_ENVELOPE_PACKED_MAX);
  CHECK(fl_broker_env_from_headers(&p.headers, 0, &again, err, sizeof err) == 0);
  CHECK(memcmp(env, &again, sizeof again) == 0);
}

/* fl_envelope_check's verdict agrees with the rules it applies. */
static void check_shape(const fl_envelope *env) {
  char err[FL_BROKER_WHY_LEN] = "";
  int rc = fl_envelope_check(env, err, sizeof err);
  fl_envelope_kind kind;
  int kind_ok = fl_envelope_kind_parse(env->kind, &kind) == 0;
  int version = fl_envelope_check_version(env);
  int required = 1;
  for (size_t i = 0; i < FL_ENVELOPE_NFIELDS; i++)
    if (fl_envelope_fields[i].required && !fl_envelope_get(env, &fl_envelope_fields[i])[0])
      required = 0;
  if (rc == 0) {
    CHECK(kind_ok && version == 0 && required);
    CHECK(kind < FL_KIND_COUNT);
    CHECK(strcmp(fl_envelope_kind_name(kind), env->kind) == 0);
  } else {
    CHECK(rc == FL_EPROTO || rc == FL_EVERSION);
    CHECK(rc != FL_EVERSION || version == FL_EVERSION);
    CHECK(!kind_ok || version != 0 || !required);
    CHECK(err[0] != '\0' && strnlen(err, sizeof err) < sizeof err);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static int init;
  if (!init) {
    fl_alloc_init();
    init = 1;
  }
  struct input in;
  decode(data, size, &in);
  fl_envelope env;
  char err[FL_BROKER_WHY_LEN] = "";
  int rc = fl_broker_env_from_headers(&in.table, in.body_size, &env, err, sizeof err);
  if (in.table.num_entries == 0) {
    /* No headers table at all reads like an empty one. */
    fl_envelope none;
    char err2[FL_BROKER_WHY_LEN] = "";
    CHECK(fl_broker_env_from_headers(NULL, in.body_size, &none, err2, sizeof err2) == rc);
    CHECK(rc != 0 || memcmp(&none, &env, sizeof env) == 0);
  }
  if (rc != 0) {
    CHECK(rc == FL_ETOOBIG || rc == FL_EPROTO);
    CHECK(err[0] != '\0' && strnlen(err, sizeof err) < sizeof err);
    return 0;
  }
  CHECK(in.body_size <= FL_MAX_WIRE_BODY);
  check_fields(&in, &env);
  check_round_trip(&env);
  check_shape(&env);

  unsigned char *canon = NULL;
  size_t clen = 0;
  CHECK(fl_sign_canonical(&env, in.body_len ? in.body : NULL, in.body_len, &canon, &clen) == 0);
  CHECK(clen > strlen(FL_SIGN_CANON_PREFIX) + in.body_len);
  CHECK(memcmp(canon, FL_SIGN_CANON_PREFIX, strlen(FL_SIGN_CANON_PREFIX)) == 0);
  CHECK(in.body_len == 0 || memcmp(canon + clen - in.body_len, in.body, in.body_len) == 0);
  fl_free(canon);
  return 0;
}
