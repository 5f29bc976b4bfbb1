/* room_envelope.c — room ids and room messages (see room_envelope.h). */
#include "gateway/rooms/room_envelope.h"

#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/ids.h"
#include "common/json_read.h"
#include "common/time.h"

#define FL_ROOM_DROP_NAME_(name, text) [FL_ROOM_DROP_##name] = text,
static const char *const fl_room_drop_names[FL_ROOM_DROP_COUNT] = {
    FL_ROOM_DROPS(FL_ROOM_DROP_NAME_)};
#undef FL_ROOM_DROP_NAME_

const char *fl_room_drop_name(fl_room_drop d) {
  return (unsigned)d < FL_ROOM_DROP_COUNT ? fl_room_drop_names[d] : NULL;
}

int fl_room_id(const char *label, char out[FL_ROOM_ID_SIZE]) {
  static const char prefix[] = "fleet-room:";
  size_t n = label ? strlen(label) : 0;
  if (n == 0 || n > FL_ROOM_MAX_LABEL)
    return FL_EINVAL;
  unsigned char h[32];
  crypto_generichash_state st;
  crypto_generichash_init(&st, NULL, 0, sizeof h);
  crypto_generichash_update(&st, (const unsigned char *)prefix, sizeof prefix - 1);
  crypto_generichash_update(&st, (const unsigned char *)label, n);
  crypto_generichash_final(&st, h, sizeof h);
  sodium_bin2hex(out, FL_ROOM_ID_SIZE, h, sizeof h);
  return 0;
}

int fl_room_id_valid(const char *s) {
  if (!s || strlen(s) != FL_ROOM_ID_SIZE - 1)
    return 0;
  for (; *s; s++)
    if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
      return 0;
  return 1;
}

int fl_room_ts_stable(const char *s) {
  long long ms;
  char back[FL_TS_LEN];
  if (!s || fl_rfc3339_parse(s, &ms) != 0)
    return 0;
  fl_rfc3339(ms, back);
  return strcmp(back, s) == 0;
}

/* The item object of env and body (without hops): a new reference. */
static json_t *fl_item_json(const fl_envelope *env, const char *body, size_t body_len) {
  json_t *o = json_object();
  for (size_t i = 0; o && i < FL_ENVELOPE_NFIELDS; i++) {
    const char *v = fl_envelope_get(env, &fl_envelope_fields[i]);
    if (v[0])
      json_object_set_new(o, fl_envelope_fields[i].key, json_string(v));
  }
  if (o)
    json_object_set_new(o, "body", json_stringn(body, body_len));
  return o;
}

static char *fl_dump(const json_t *o) { return json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER); }

char *fl_room_msg_item(const fl_room_msg *m) {
  json_t *o = fl_item_json(&m->env, m->body, m->body_len);
  char *s = o ? fl_dump(o) : NULL;
  json_decref(o);
  return s;
}

int fl_room_msg_build(const char *host, const char *from, const char *from_name,
                      const char *room_id, const char *msg_type, const json_t *payload,
                      const unsigned char sk[FL_SIGN_SK_BYTES], char **item, char *msg_id) {
  *item = NULL;
  if (!host || !from || !room_id || !msg_type || !*msg_type ||
      strlen(msg_type) > FL_ROOM_MAX_MSG_TYPE || !json_is_object(payload))
    return FL_EINVAL;
  fl_envelope env;
  memset(&env, 0, sizeof env);
  snprintf(env.v, sizeof env.v, "%s", FL_ENVELOPE_VERSION);
  snprintf(env.kind, sizeof env.kind, "%s", fl_envelope_kind_name(FL_KIND_ROOM));
  fl_uuid(env.msg_id);
  fl_uuid(env.trace_id);
  snprintf(env.from, sizeof env.from, "%s", from);
  snprintf(env.from_name, sizeof env.from_name, "%s", from_name ? from_name : "");
  snprintf(env.host, sizeof env.host, "%s", host);
  fl_rfc3339(fl_now_ms(), env.ts);
  json_t *b = json_pack("{s:s, s:s, s:O}", "room", room_id, "msgType", msg_type, "payload",
                        (json_t *)payload);
  char *body = b ? fl_dump(b) : NULL;
  json_decref(b);
  if (!body)
    return FL_ENOMEM;
  int rc = 0;
  size_t blen = strlen(body);
  if (blen > FL_ROOM_MAX_ENVELOPE) {
    rc = FL_ETOOBIG;
  } else if ((rc = fl_sign_envelope(&env, body, blen, sk)) == 0) {
    json_t *o = fl_item_json(&env, body, blen);
    *item = o ? fl_dump(o) : NULL;
    json_decref(o);
    if (!*item)
      rc = FL_ENOMEM;
    else if (strlen(*item) > FL_ROOM_MAX_ENVELOPE) {
      fl_free(*item);
      *item = NULL;
      rc = FL_ETOOBIG;
    } else {
      snprintf(msg_id, FL_ID_LEN, "%s", env.msg_id);
    }
  }
  fl_free(body);
  return rc;
}

void fl_room_msg_clear(fl_room_msg *m) {
  if (!m)
    return;
  json_decref(m->payload);
  memset(m, 0, sizeof *m);
}

static int fl_fail(fl_room_msg *m, fl_room_drop *why, fl_room_drop d) {
  fl_room_msg_clear(m);
  *why = d;
  return -1;
}

json_t *fl_room_item_load(const char *item, fl_room_msg *out) {
  json_t *o = item ? fl_json_loadb(item, strlen(item), 0, NULL) : NULL;
  fl_room_drop why;
  if (o)
    json_object_set_new(o, "hops", json_integer(0));
  if (!o || fl_room_msg_parse(o, out, &why) != 0) {
    json_decref(o);
    return NULL;
  }
  return o;
}

int fl_room_msg_parse(json_t *item, fl_room_msg *out, fl_room_drop *why) {
  memset(out, 0, sizeof *out);
  if (!json_is_object(item))
    return fl_fail(out, why, FL_ROOM_DROP_MALFORMED);
  const char *key;
  json_t *v;
  json_object_foreach(item, key, v) {
    const fl_envelope_field *f = fl_envelope_field_find(key, strlen(key));
    if (!f)
      continue; /* body, hops, or a field of a newer minor */
    if (!json_is_string(v) ||
        fl_envelope_set(&out->env, f, json_string_value(v), json_string_length(v)) != 0)
      return fl_fail(out, why, FL_ROOM_DROP_MALFORMED);
  }
  json_t *hops = json_object_get(item, "hops");
  json_t *body = json_object_get(item, "body");
  if (!out->env.sig[0] && fl_envelope_is_kind(out->env.kind, FL_KIND_ROOM))
    return fl_fail(out, why, FL_ROOM_DROP_UNSIGNED);
  if (!json_is_integer(hops) || json_integer_value(hops) < 0 || !json_is_string(body) ||
      fl_envelope_check(&out->env, NULL, 0) != 0 ||
      !fl_envelope_is_kind(out->env.kind, FL_KIND_ROOM) || !fl_is_uuid(out->env.msg_id) ||
      (out->env.from[0] && !fl_is_uuid(out->env.from)))
    return fl_fail(out, why, FL_ROOM_DROP_MALFORMED);
  json_int_t h = json_integer_value(hops);
  out->hops = h > FL_ROOM_MAX_HOPS ? FL_ROOM_MAX_HOPS + 1 : (int)h;
  if (!fl_room_ts_stable(out->env.ts))
    return fl_fail(out, why, FL_ROOM_DROP_BAD_TS);
  out->body = json_string_value(body);
  out->body_len = json_string_length(body);
  if (out->body_len > FL_ROOM_MAX_ENVELOPE)
    return fl_fail(out, why, FL_ROOM_DROP_OVERSIZE);
  json_t *b = fl_json_loadb(out->body, out->body_len, JSON_REJECT_DUPLICATES, NULL);
  const char *room = json_string_value(json_object_get(b, "room"));
  const char *type = json_string_value(json_object_get(b, "msgType"));
  json_t *payload = json_object_get(b, "payload");
  if (!room || !fl_room_id_valid(room) || !type || !*type || strlen(type) > FL_ROOM_MAX_MSG_TYPE ||
      !json_is_object(payload)) {
    json_decref(b);
    return fl_fail(out, why, FL_ROOM_DROP_MALFORMED);
  }
  snprintf(out->room_id, sizeof out->room_id, "%s", room);
  snprintf(out->msg_type, sizeof out->msg_type, "%s", type);
  out->payload = json_incref(payload);
  json_decref(b);
  return 0;
}
