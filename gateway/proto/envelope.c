/* envelope.c — the envelope's field table, its kinds and its checks (see
 * envelope.h).
 *
 * fl_envelope_fields below is the only list of the envelope's fields in C:
 * the AMQP headers, the canonical signing bytes and the tests all walk it.
 * Its order is the wire contract for the signed fields (sign.h);
 * test_envelope.c holds it against schema/envelope.json and
 * test_trust.c against schema/signing-vectors.json. */
#include "gateway/proto/envelope.h"

#include <stdio.h>
#include <string.h>

#include "common/error.h"

#define FIELD(k, m, sig, req)                                                                      \
  { k, offsetof(fl_envelope, m), sizeof(((fl_envelope *)0)->m), sig, req }

/* test_envelope.c checks that the rows cover every byte of fl_envelope,
 * in member order, and match schema/envelope.json. */
const fl_envelope_field fl_envelope_fields[FL_ENVELOPE_NFIELDS] = {
    /* key, member, signed, required */
    FIELD("v", v, 1, 1),
    FIELD("kind", kind, 1, 1),
    FIELD("msgId", msg_id, 1, 1),
    FIELD("traceId", trace_id, 1, 0),
    FIELD("from", from, 1, 0), /* absent on a gateway's own PRESENCE beat */
    FIELD("to", to, 1, 0),
    FIELD("inReplyTo", in_reply_to, 1, 0),
    FIELD("turnId", turn_id, 1, 0),
    FIELD("spawnId", spawn_id, 1, 0),
    FIELD("fromName", from_name, 1, 0),
    FIELD("host", host, 1, 1),
    FIELD("ts", ts, 1, 1),
    FIELD("expiresAt", expires_at, 1, 0),
    FIELD("sealedTo", sealed_to, FL_SIGNED_IF_PRESENT, 0), /* sealed bodies (seal.h) */
    FIELD("sig", sig, 0, 0), /* absent in the pair-sealed form (pairkey.h) */
};

#define FL_KIND_NAME_(name) #name,
static const char *const kind_names[FL_KIND_COUNT] = {FL_ENVELOPE_KINDS(FL_KIND_NAME_)};
#undef FL_KIND_NAME_

const char *fl_envelope_kind_name(fl_envelope_kind kind) {
  if ((int)kind < 0 || kind >= FL_KIND_COUNT)
    return NULL;
  return kind_names[kind];
}

int fl_envelope_is_pair_sealed(const fl_envelope *env) {
  return env && env->sealed_to[0] && !env->sig[0];
}

int fl_envelope_kind_parse(const char *s, fl_envelope_kind *out) {
  if (!s || !out)
    return FL_EINVAL;
  for (int k = 0; k < FL_KIND_COUNT; k++) {
    if (strcmp(s, kind_names[k]) == 0) {
      *out = (fl_envelope_kind)k;
      return 0;
    }
  }
  return FL_EINVAL;
}

int fl_envelope_is_kind(const char *s, fl_envelope_kind kind) {
  const char *name = fl_envelope_kind_name(kind);
  return s && name && strcmp(s, name) == 0;
}

const fl_envelope_field *fl_envelope_field_find(const char *key, size_t len) {
  if (!key)
    return NULL;
  for (size_t i = 0; i < FL_ENVELOPE_NFIELDS; i++) {
    const fl_envelope_field *f = &fl_envelope_fields[i];
    if (strlen(f->key) == len && memcmp(f->key, key, len) == 0)
      return f;
  }
  return NULL;
}

const char *fl_envelope_get(const fl_envelope *env, const fl_envelope_field *f) {
  return (const char *)env + f->off;
}

int fl_envelope_set(fl_envelope *env, const fl_envelope_field *f, const char *val, size_t len) {
  if (!env || !f || (!val && len))
    return FL_EINVAL;
  if (len >= f->size)
    return FL_ETOOBIG;
  if (len && memchr(val, '\0', len))
    return FL_EPROTO;
  char *slot = (char *)env + f->off;
  if (len)
    memcpy(slot, val, len);
  memset(slot + len, 0, f->size - len);
  return 0;
}

/* Reads env->v as "MAJOR.MINOR", each one to four decimal digits (which
 * bounds the value far below INT_MAX). Returns 0, *major and *minor, or
 * FL_EPROTO. */
static int parse_version(const fl_envelope *env, int *major, int *minor) {
  if (!env || strnlen(env->v, sizeof env->v) == sizeof env->v)
    return FL_EPROTO;
  const char *s = env->v;
  int m = 0, digits = 0;
  for (; *s >= '0' && *s <= '9'; s++) {
    if (++digits > 4)
      return FL_EPROTO;
    m = m * 10 + (*s - '0');
  }
  if (digits == 0 || *s != '.')
    return FL_EPROTO;
  digits = 0;
  int n = 0;
  for (s++; *s >= '0' && *s <= '9'; s++) {
    if (++digits > 4)
      return FL_EPROTO;
    n = n * 10 + (*s - '0');
  }
  if (digits == 0 || *s != '\0')
    return FL_EPROTO;
  *major = m;
  *minor = n;
  return 0;
}

/* -1 is these two functions' documented "no version", not an error code. */
int fl_envelope_major(const fl_envelope *env) {
  int major = 0, minor = 0;
  return parse_version(env, &major, &minor) == 0 ? major : -1;
}

int fl_envelope_minor(const fl_envelope *env) {
  int major = 0, minor = 0;
  return parse_version(env, &major, &minor) == 0 ? minor : -1;
}

int fl_envelope_check_version(const fl_envelope *env) {
  int major = 0, minor = 0;
  int rc = parse_version(env, &major, &minor);
  if (rc)
    return rc;
  return major > FL_ENVELOPE_MAJOR ? FL_EVERSION : 0;
}

int fl_envelope_check(const fl_envelope *env, char *err, size_t errlen) {
  if (!env) {
    fl_errf(err, errlen, "no envelope");
    return FL_EINVAL;
  }
  for (size_t i = 0; i < FL_ENVELOPE_NFIELDS; i++) {
    const fl_envelope_field *f = &fl_envelope_fields[i];
    if (strnlen(fl_envelope_get(env, f), f->size) == f->size) {
      fl_errf(err, errlen, "envelope field %s is not terminated within its %zu bytes", f->key,
              f->size - 1);
      return FL_EPROTO;
    }
  }
  int rc = fl_envelope_check_version(env);
  if (rc == FL_EVERSION) {
    fl_errf(err, errlen, "envelope version %s has a newer major than this fleetd reads (%d)",
            env->v, FL_ENVELOPE_MAJOR);
    return rc;
  }
  if (rc) {
    fl_errf(err, errlen, "envelope version \"%s\" is not MAJOR.MINOR", env->v);
    return rc;
  }
  fl_envelope_kind kind;
  if (fl_envelope_kind_parse(env->kind, &kind) != 0) {
    fl_errf(err, errlen, "envelope kind \"%s\" is not one of the kinds", env->kind);
    return FL_EPROTO;
  }
  for (size_t i = 0; i < FL_ENVELOPE_NFIELDS; i++) {
    const fl_envelope_field *f = &fl_envelope_fields[i];
    if (f->required && !fl_envelope_get(env, f)[0]) {
      fl_errf(err, errlen, "envelope field %s is required and absent", f->key);
      return FL_EPROTO;
    }
  }
  return 0;
}

int fl_envelope_set_read(fl_envelope *env, const fl_envelope_field *f, const char *val, size_t len,
                         char *err, size_t errlen) {
  int rc = fl_envelope_set(env, f, val, len);
  if (rc == FL_ETOOBIG) {
    fl_errf(err, errlen, "an envelope field (%s) is longer than the field allows", f->key);
    return rc;
  }
  if (rc) {
    fl_errf(err, errlen, "an envelope field (%s) contains a NUL byte", f->key);
    return FL_EPROTO;
  }
  return 0;
}

size_t fl_envelope_pack(const fl_envelope *env, char *out) {
  char *p = out;
  for (size_t i = 0; i < FL_ENVELOPE_NFIELDS; i++) {
    const fl_envelope_field *f = &fl_envelope_fields[i];
    const char *val = fl_envelope_get(env, f);
    size_t n = strnlen(val, f->size - 1);
    if (!n)
      continue;
    size_t kl = strlen(f->key);
    memcpy(p, f->key, kl);
    p += kl;
    *p++ = ':';
    char num[8];
    size_t d = 0;
    for (size_t m = n; m; m /= 10)
      num[d++] = (char)('0' + m % 10);
    while (d)
      *p++ = num[--d];
    *p++ = ':';
    memcpy(p, val, n);
    p += n;
    *p++ = '\n';
  }
  return (size_t)(p - out);
}

int fl_envelope_unpack(const char *s, size_t len, fl_envelope *env, char *err, size_t errlen) {
  memset(env, 0, sizeof(*env));
  unsigned seen = 0;
  const char *p = s, *end = s + len;
  while (p < end) {
    const char *colon = memchr(p, ':', (size_t)(end - p));
    if (!colon || colon == p) {
      fl_errf(err, errlen, "the packed envelope has a field without a name");
      return FL_EPROTO;
    }
    const char *key = p;
    size_t klen = (size_t)(colon - p);
    const fl_envelope_field *f = fl_envelope_field_find(key, klen);
    /* Only a field's own name goes into a message: the key is the sender's. */
    const char *name = f ? f->key : "(not a field)";
    p = colon + 1;
    size_t n = 0, digits = 0;
    while (p < end && *p >= '0' && *p <= '9' && digits < 8) {
      n = n * 10 + (size_t)(*p - '0');
      p++;
      digits++;
    }
    if (!digits || p >= end || *p != ':' || (digits > 1 && key[klen + 1] == '0')) {
      fl_errf(err, errlen, "the packed envelope's field %s has no valid length", name);
      return FL_EPROTO;
    }
    p++;
    if (n >= (size_t)(end - p) || p[n] != '\n') {
      fl_errf(err, errlen, "the packed envelope's field %s runs past its end", name);
      return FL_EPROTO;
    }
    if (f) {
      unsigned bit = 1u << (f - fl_envelope_fields);
      if (seen & bit) {
        fl_errf(err, errlen, "the packed envelope has the field %s twice", f->key);
        return FL_EPROTO;
      }
      seen |= bit;
      int rc = fl_envelope_set_read(env, f, p, n, err, errlen);
      if (rc)
        return rc;
    }
    p += n + 1;
  }
  return 0;
}
