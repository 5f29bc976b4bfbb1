/* test_envelope.c — unit tests for gateway/proto/envelope.c, held against
 * schema/envelope.json (embedded at build time as fl_schema_envelope).
 *
 * The schema is the source of the wire contract; the C table must say the
 * same in both directions: every schema field is a table row with the same
 * maximum size, signed flag and "always" presence, and every row is a schema
 * field; the signed rows run in the schema's canonical fieldOrder; the rows
 * cover every byte of fl_envelope in member order; and the kinds enum is the
 * kind field's enum list, in order, and has an entry each in the schema's
 * kinds object. Also: kind name round trips, the version rule, fl_envelope_set's
 * size and NUL rules, and fl_envelope_check. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* After the four above: cmocka.h uses them without including them. */
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "common/error.h"
#include "gateway/proto/envelope.h"
#include "gateway/proto/sign.h"

extern const char fl_schema_envelope[];

static json_t *schema;

static json_t *schema_field(const char *key) {
  size_t i;
  json_t *f;
  json_array_foreach(json_object_get(schema, "fields"), i, f) {
    if (strcmp(json_string_value(json_object_get(f, "name")), key) == 0)
      return f;
  }
  return NULL;
}

static void test_table_covers_struct(void **state) {
  (void)state;
  size_t at = 0;
  for (size_t i = 0; i < FL_ENVELOPE_NFIELDS; i++) {
    const fl_envelope_field *f = &fl_envelope_fields[i];
    if (!f->key)
      fail_msg("row %zu of fl_envelope_fields is empty (FL_ENVELOPE_NFIELDS too large?)", i);
    if (f->off != at)
      fail_msg("field %s starts at %zu, want %zu: rows must follow the members", f->key, f->off,
               at);
    assert_true(f->size > 1);
    at += f->size;
    assert_ptr_equal(fl_envelope_field_find(f->key, strlen(f->key)), f);
  }
  assert_int_equal(at, sizeof(fl_envelope));
  assert_null(fl_envelope_field_find("msgI", 4));
  assert_null(fl_envelope_field_find("msgIdx", 6));
  assert_null(fl_envelope_field_find(NULL, 0));
  /* Keys are compared by length, not as C strings. */
  assert_non_null(fl_envelope_field_find("tsX", 2));
}

static void test_table_matches_schema(void **state) {
  (void)state;
  json_t *fields = json_object_get(schema, "fields");
  assert_int_equal(json_array_size(fields), FL_ENVELOPE_NFIELDS);
  /* schema -> table */
  size_t i;
  json_t *jf;
  json_array_foreach(fields, i, jf) {
    const char *name = json_string_value(json_object_get(jf, "name"));
    assert_non_null(name);
    const fl_envelope_field *f = fl_envelope_field_find(name, strlen(name));
    if (!f)
      fail_msg("schema field %s has no row in fl_envelope_fields", name);
    assert_ptr_equal(f, &fl_envelope_fields[i]); /* same order too */
    json_int_t max = json_integer_value(json_object_get(jf, "maxBytes"));
    if ((size_t)max != f->size - 1)
      fail_msg("field %s: schema maxBytes %lld, table slot holds %zu", name, (long long)max,
               f->size - 1);
    json_t *sig = json_object_get(jf, "signed");
    assert_true(json_is_boolean(sig));
    if (json_is_true(sig) != (f->is_signed != 0))
      fail_msg("field %s: schema signed %d, table %d", name, json_is_true(sig), f->is_signed);
    const char *presence = json_string_value(json_object_get(jf, "presence"));
    assert_non_null(presence);
    if ((strcmp(presence, "always") == 0) != f->required)
      fail_msg("field %s: schema presence \"%s\", table required %d", name, presence, f->required);
  }
  /* table -> schema */
  for (size_t k = 0; k < FL_ENVELOPE_NFIELDS; k++)
    if (!schema_field(fl_envelope_fields[k].key))
      fail_msg("table field %s is not in schema/envelope.json", fl_envelope_fields[k].key);

  /* The signed rows, in order, are the canonical fieldOrder. */
  json_t *order = json_object_get(json_object_get(schema, "canonical"), "fieldOrder");
  size_t n = 0;
  for (size_t k = 0; k < FL_ENVELOPE_NFIELDS; k++) {
    if (fl_envelope_fields[k].is_signed != FL_SIGNED_ALWAYS)
      continue;
    const char *want = json_string_value(json_array_get(order, n));
    if (!want || strcmp(want, fl_envelope_fields[k].key) != 0)
      fail_msg("signed field %zu is %s, canonical fieldOrder says %s", n, fl_envelope_fields[k].key,
               want ? want : "(nothing)");
    n++;
  }
  assert_int_equal(n, json_array_size(order));
  /* The rows signed only when present are canonical.whenPresent, in order. */
  json_t *present = json_object_get(json_object_get(schema, "canonical"), "whenPresent");
  n = 0;
  for (size_t k = 0; k < FL_ENVELOPE_NFIELDS; k++) {
    if (fl_envelope_fields[k].is_signed != FL_SIGNED_IF_PRESENT)
      continue;
    const char *want = json_string_value(json_array_get(present, n++));
    if (!want || strcmp(want, fl_envelope_fields[k].key) != 0)
      fail_msg("field %s is signed when present; canonical.whenPresent says %s",
               fl_envelope_fields[k].key, want ? want : "(nothing)");
  }
  assert_int_equal(n, json_array_size(present));
  assert_string_equal(
      json_string_value(json_object_get(json_object_get(schema, "canonical"), "prefix")),
      FL_SIGN_CANON_PREFIX);

  /* The schema's common required list is the table's required rows plus
   * `from`, which a gateway's own PRESENCE beat leaves out. */
  json_t *common =
      json_object_get(json_object_get(json_object_get(schema, "kinds"), "common"), "required");
  json_t *r;
  json_array_foreach(common, i, r) {
    const char *name = json_string_value(r);
    const fl_envelope_field *f = fl_envelope_field_find(name, strlen(name));
    assert_non_null(f);
    assert_true(f->required || strcmp(name, "from") == 0);
  }
  for (size_t k = 0; k < FL_ENVELOPE_NFIELDS; k++) {
    if (!fl_envelope_fields[k].required)
      continue;
    int listed = 0;
    json_array_foreach(common, i, r) {
      if (strcmp(json_string_value(r), fl_envelope_fields[k].key) == 0)
        listed = 1;
    }
    if (!listed)
      fail_msg("required field %s is not in the schema's kinds.common.required",
               fl_envelope_fields[k].key);
  }
  /* The version written is the schema's. */
  assert_string_equal(json_string_value(json_object_get(schema, "version")), FL_ENVELOPE_VERSION);
}

static void test_kinds_match_schema(void **state) {
  (void)state;
  json_t *list = json_object_get(schema_field("kind"), "enum");
  assert_int_equal(json_array_size(list), FL_KIND_COUNT);
  for (int k = 0; k < FL_KIND_COUNT; k++) {
    const char *want = json_string_value(json_array_get(list, (size_t)k));
    const char *got = fl_envelope_kind_name((fl_envelope_kind)k);
    if (!want || !got || strcmp(want, got) != 0)
      fail_msg("kind %d: enum says %s, schema says %s", k, got ? got : "NULL",
               want ? want : "NULL");
  }
  /* The kinds object lists the same kinds, plus "common". */
  json_t *kinds = json_object_get(schema, "kinds");
  assert_int_equal(json_object_size(kinds), FL_KIND_COUNT + 1);
  for (int k = 0; k < FL_KIND_COUNT; k++)
    if (!json_object_get(kinds, fl_envelope_kind_name((fl_envelope_kind)k)))
      fail_msg("kind %s has no entry in the schema's kinds", fl_envelope_kind_name(k));
  /* Every kind name fits the kind field. */
  const fl_envelope_field *kf = fl_envelope_field_find("kind", 4);
  for (int k = 0; k < FL_KIND_COUNT; k++)
    assert_true(strlen(fl_envelope_kind_name((fl_envelope_kind)k)) < kf->size);
}

static void test_kind_round_trip(void **state) {
  (void)state;
  for (int k = 0; k < FL_KIND_COUNT; k++) {
    fl_envelope_kind got = FL_KIND_COUNT;
    const char *name = fl_envelope_kind_name((fl_envelope_kind)k);
    assert_non_null(name);
    assert_int_equal(fl_envelope_kind_parse(name, &got), 0);
    assert_int_equal(got, k);
  }
  assert_string_equal(fl_envelope_kind_name(FL_KIND_SEND), "SEND");
  assert_string_equal(fl_envelope_kind_name(FL_KIND_CLAIM), "CLAIM");
  assert_null(fl_envelope_kind_name(FL_KIND_COUNT));
  assert_null(fl_envelope_kind_name((fl_envelope_kind)-1));
  fl_envelope_kind k = FL_KIND_STOP;
  assert_int_equal(fl_envelope_kind_parse("send", &k), FL_EINVAL);
  assert_int_equal(fl_envelope_kind_parse("", &k), FL_EINVAL);
  assert_int_equal(fl_envelope_kind_parse("SEND ", &k), FL_EINVAL);
  assert_int_equal(fl_envelope_kind_parse(NULL, &k), FL_EINVAL);
  assert_int_equal(fl_envelope_kind_parse("SEND", NULL), FL_EINVAL);
  assert_int_equal(k, FL_KIND_STOP);
  assert_true(fl_envelope_is_kind("PRESENCE", FL_KIND_PRESENCE));
  assert_false(fl_envelope_is_kind("PRESENCE", FL_KIND_SEND));
  assert_false(fl_envelope_is_kind("presence", FL_KIND_PRESENCE));
  assert_false(fl_envelope_is_kind(NULL, FL_KIND_PRESENCE));
  assert_false(fl_envelope_is_kind("PRESENCE", FL_KIND_COUNT));
}

static void test_version_rule(void **state) {
  (void)state;
  struct {
    const char *v;
    int rc;
  } cases[] = {
      {"1.0", 0},
      {"1.99", 0},
      {"0.1", 0},
      {"0001.0", 0},
      {"2.0", FL_EVERSION},
      {"10.0", FL_EVERSION},
      {"9999.9", FL_EVERSION},
      {"", FL_EPROTO},
      {"1", FL_EPROTO},
      {"1.", FL_EPROTO},
      {".0", FL_EPROTO},
      {"1.0.0", FL_EPROTO},
      {"v1.0", FL_EPROTO},
      {"1.0 ", FL_EPROTO},
      {"12345.0", FL_EPROTO},
      {"-1.0", FL_EPROTO},
  };
  fl_envelope env;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    memset(&env, 0, sizeof env);
    snprintf(env.v, sizeof env.v, "%s", cases[i].v);
    int rc = fl_envelope_check_version(&env);
    if (rc != cases[i].rc)
      fail_msg("\"%s\": got %d (%s), want %d", cases[i].v, rc, fl_strerror(rc), cases[i].rc);
  }
  memset(env.v, '1', sizeof env.v); /* no NUL */
  assert_int_equal(fl_envelope_check_version(&env), FL_EPROTO);
  assert_int_equal(fl_envelope_check_version(NULL), FL_EPROTO);
  /* The version this gateway writes passes its own rule. */
  memset(&env, 0, sizeof env);
  snprintf(env.v, sizeof env.v, "%s", FL_ENVELOPE_VERSION);
  assert_int_equal(fl_envelope_major(&env), FL_ENVELOPE_MAJOR);
  assert_int_equal(fl_envelope_check_version(&env), 0);
}

static void test_set(void **state) {
  (void)state;
  fl_envelope env;
  memset(&env, 0x55, sizeof env);
  const fl_envelope_field *f = fl_envelope_field_find("host", 4);
  assert_int_equal(fl_envelope_set(&env, f, "alphaXXX", 5), 0);
  assert_string_equal(env.host, "alpha");
  /* The rest of the slot is cleared, the neighbours are untouched. */
  for (size_t i = 5; i < sizeof env.host; i++)
    assert_int_equal(env.host[i], 0);
  assert_int_equal((unsigned char)env.from_name[sizeof env.from_name - 1], 0x55);
  assert_int_equal((unsigned char)env.ts[0], 0x55);
  /* Longest that fits, one too many, a NUL inside. */
  char big[200];
  memset(big, 'h', sizeof big);
  assert_int_equal(fl_envelope_set(&env, f, big, f->size - 1), 0);
  assert_int_equal(strlen(env.host), f->size - 1);
  assert_int_equal(fl_envelope_set(&env, f, "beta", 4), 0);
  assert_int_equal(fl_envelope_set(&env, f, big, f->size), FL_ETOOBIG);
  assert_int_equal(fl_envelope_set(&env, f, "a\0b", 3), FL_EPROTO);
  assert_string_equal(env.host, "beta"); /* unchanged by a failure */
  assert_int_equal(fl_envelope_set(&env, f, NULL, 0), 0);
  assert_string_equal(env.host, "");
  assert_int_equal(fl_envelope_set(&env, f, NULL, 1), FL_EINVAL);
  assert_int_equal(fl_envelope_set(NULL, f, "x", 1), FL_EINVAL);
  assert_int_equal(fl_envelope_set(&env, NULL, "x", 1), FL_EINVAL);
  assert_string_equal(fl_envelope_get(&env, fl_envelope_field_find("host", 4)), "");
}

static void good_env(fl_envelope *e) {
  memset(e, 0, sizeof *e);
  snprintf(e->v, sizeof e->v, "1.0");
  snprintf(e->kind, sizeof e->kind, "SEND");
  snprintf(e->msg_id, sizeof e->msg_id, "2b3c4d5e-6f7a-4b8c-9d0e-1f2a3b4c5d6e");
  snprintf(e->host, sizeof e->host, "alpha");
  snprintf(e->ts, sizeof e->ts, "2026-03-01T12:10:00.000Z");
  snprintf(e->sig, sizeof e->sig, "c2ln");
}

static void test_check(void **state) {
  (void)state;
  char err[256];
  fl_envelope e;
  good_env(&e);
  assert_int_equal(fl_envelope_check(&e, err, sizeof err), 0);
  assert_int_equal(fl_envelope_check(&e, NULL, 0), 0);
  /* Every required field, taken away, fails it, naming the field. */
  for (size_t i = 0; i < FL_ENVELOPE_NFIELDS; i++) {
    const fl_envelope_field *f = &fl_envelope_fields[i];
    good_env(&e);
    fl_envelope_set(&e, f, NULL, 0);
    int rc = fl_envelope_check(&e, err, sizeof err);
    if (!f->required) {
      assert_int_equal(rc, 0);
      continue;
    }
    assert_int_equal(rc, FL_EPROTO);
    if (!strstr(err, f->key))
      fail_msg("absent %s: message \"%s\" does not name it", f->key, err);
  }
  /* An unterminated slot, any field. */
  for (size_t i = 0; i < FL_ENVELOPE_NFIELDS; i++) {
    good_env(&e);
    memset((char *)&e + fl_envelope_fields[i].off, 'x', fl_envelope_fields[i].size);
    assert_int_equal(fl_envelope_check(&e, err, sizeof err), FL_EPROTO);
    assert_non_null(strstr(err, "not terminated"));
  }
  good_env(&e);
  snprintf(e.kind, sizeof e.kind, "SHOUT");
  assert_int_equal(fl_envelope_check(&e, err, sizeof err), FL_EPROTO);
  assert_non_null(strstr(err, "SHOUT"));
  good_env(&e);
  snprintf(e.v, sizeof e.v, "2.0");
  assert_int_equal(fl_envelope_check(&e, err, sizeof err), FL_EVERSION);
  assert_non_null(strstr(err, "2.0"));
  snprintf(e.v, sizeof e.v, "one");
  assert_int_equal(fl_envelope_check(&e, err, sizeof err), FL_EPROTO);
  assert_non_null(strstr(err, "MAJOR.MINOR"));
  assert_int_equal(fl_envelope_check(NULL, err, sizeof err), FL_EINVAL);
  /* Every kind passes. */
  for (int k = 0; k < FL_KIND_COUNT; k++) {
    good_env(&e);
    snprintf(e.kind, sizeof e.kind, "%s", fl_envelope_kind_name((fl_envelope_kind)k));
    assert_int_equal(fl_envelope_check(&e, err, sizeof err), 0);
  }
}

/* Every field at its longest (a NUL-free value filling its slot). */
static void full_env(fl_envelope *e) {
  memset(e, 0, sizeof *e);
  for (size_t i = 0; i < FL_ENVELOPE_NFIELDS; i++) {
    const fl_envelope_field *f = &fl_envelope_fields[i];
    memset((char *)e + f->off, 'a' + (int)i, f->size - 1);
  }
}

static void test_packed_round_trip(void **state) {
  (void)state;
  char buf[FL_ENVELOPE_PACKED_MAX], err[256];
  fl_envelope e, back;
  /* The longest envelope fits the bound, and comes back byte for byte. */
  full_env(&e);
  size_t n = fl_envelope_pack(&e, buf);
  assert_true(n <= FL_ENVELOPE_PACKED_MAX);
  assert_int_equal(fl_envelope_unpack(buf, n, &back, err, sizeof err), 0);
  assert_memory_equal(&back, &e, sizeof e);
  /* Absent fields are left out; the form is key:len:value and a newline. */
  good_env(&e);
  n = fl_envelope_pack(&e, buf);
  const char want[] = "v:3:1.0\nkind:4:SEND\nmsgId:36:2b3c4d5e-6f7a-4b8c-9d0e-1f2a3b4c5d6e\n"
                      "host:5:alpha\nts:24:2026-03-01T12:10:00.000Z\nsig:4:c2ln\n";
  assert_int_equal(n, strlen(want));
  assert_memory_equal(buf, want, n);
  memset(&back, 0x55, sizeof back);
  assert_int_equal(fl_envelope_unpack(buf, n, &back, err, sizeof err), 0);
  assert_memory_equal(&back, &e, sizeof e);
  /* Nothing packed is an empty envelope; a key of no field is skipped. */
  assert_int_equal(fl_envelope_unpack(buf, 0, &back, err, sizeof err), 0);
  assert_string_equal(back.msg_id, "");
  const char future[] = "v:3:1.9\nshade:4:blue\nkind:4:SEND\n";
  assert_int_equal(fl_envelope_unpack(future, strlen(future), &back, err, sizeof err), 0);
  assert_string_equal(back.v, "1.9");
  assert_string_equal(back.kind, "SEND");
}

static void test_packed_malformed(void **state) {
  (void)state;
  static const struct {
    const char *in;
    size_t len; /* 0: strlen */
    int rc;
    const char *says;
  } cases[] = {
      {"v:3:1.0", 0, FL_EPROTO, "runs past"},          /* no newline */
      {"v:3:1.0x", 0, FL_EPROTO, "runs past"},         /* something else where it should be */
      {"v:4:1.0\n", 0, FL_EPROTO, "runs past"},        /* longer than what is left */
      {"v:2:1.0\n", 0, FL_EPROTO, "runs past"},        /* shorter */
      {"v3:1.0\n", 0, FL_EPROTO, "no valid length"},   /* no second colon */
      {"v::1.0\n", 0, FL_EPROTO, "no valid length"},   /* no digits */
      {"v:03:1.0\n", 0, FL_EPROTO, "no valid length"}, /* a leading zero */
      {"v:123456789:x\n", 0, FL_EPROTO, "no valid length"},
      {":3:1.0\n", 0, FL_EPROTO, "without a name"},
      {"v 3 1.0\n", 0, FL_EPROTO, "without a name"},
      {"v:3:1.0\nv:3:1.1\n", 0, FL_EPROTO, "twice"},
      {"kind:16:ABCDEFGHIJKLMNOP\n", 0, FL_ETOOBIG, "kind"},
      {"kind:3:A\0B\n", 11, FL_EPROTO, "NUL"},
      /* A key that is no field is never repeated back (it could be anything). */
      {"x\ny:9:SEND\n", 0, FL_EPROTO, "(not a field) runs past"},
  };
  char err[256];
  fl_envelope e;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    size_t len = cases[i].len ? cases[i].len : strlen(cases[i].in);
    err[0] = '\0';
    int rc = fl_envelope_unpack(cases[i].in, len, &e, err, sizeof err);
    if (rc != cases[i].rc || !strstr(err, cases[i].says))
      fail_msg("case %zu: got %d \"%s\", want %d saying \"%s\"", i, rc, err, cases[i].rc,
               cases[i].says);
  }
}

static void test_version_minor(void **state) {
  (void)state;
  fl_envelope e;
  memset(&e, 0, sizeof e);
  snprintf(e.v, sizeof e.v, "1.12");
  assert_int_equal(fl_envelope_minor(&e), 12);
  snprintf(e.v, sizeof e.v, "%s", FL_ENVELOPE_VERSION);
  assert_true(fl_envelope_minor(&e) >= FL_ENVELOPE_PACKED_MINOR);
  snprintf(e.v, sizeof e.v, "1.");
  assert_int_equal(fl_envelope_minor(&e), -1);
  assert_int_equal(fl_envelope_minor(NULL), -1);
}

static int load_schema(void **state) {
  (void)state;
  json_error_t jerr;
  schema = json_loads(fl_schema_envelope, 0, &jerr);
  if (!schema) {
    fprintf(stderr, "schema/envelope.json: %d: %s\n", jerr.line, jerr.text);
    return -1;
  }
  return 0;
}

static int free_schema(void **state) {
  (void)state;
  json_decref(schema);
  schema = NULL;
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_table_covers_struct),
      cmocka_unit_test(test_table_matches_schema),
      cmocka_unit_test(test_kinds_match_schema),
      cmocka_unit_test(test_kind_round_trip),
      cmocka_unit_test(test_version_rule),
      cmocka_unit_test(test_set),
      cmocka_unit_test(test_check),
      cmocka_unit_test(test_packed_round_trip),
      cmocka_unit_test(test_packed_malformed),
      cmocka_unit_test(test_version_minor),
  };
  return cmocka_run_group_tests(tests, load_schema, free_schema);
}
