/* room_merge.c — the checks a pulled room message passes before it joins
 * the log (see room.h). Each failure drops that message alone, counted per
 * reason for the peer that served it; the response as a whole is refused
 * only when it is not a room response or its server presents a key other
 * than the one pinned for it. */
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/json_read.h"
#include "common/log.h"
#include "gateway/rooms/claims.h"
#include "gateway/rooms/room_internal.h"

/* Which host's key signed m, when it is not its origin's: a pinned host (or
 * this one) whose key verifies, into host; 1 if one does, else 0. */
static int fl_signed_by_other(fl_gw *gw, const fl_room_msg *m, char *host, size_t n) {
  if (strcmp(m->env.host, gw->cfg.host_id) != 0 &&
      fl_verify_envelope(&m->env, m->body, m->body_len, gw->id.pk) == 0) {
    fl_copy(host, n, gw->cfg.host_id);
    return 1;
  }
  for (size_t i = 0; i < fl_peers_count(gw->peers); i++) {
    const fl_peer *p = fl_peers_at(gw->peers, i);
    if (strcmp(p->host, m->env.host) != 0 &&
        fl_verify_envelope(&m->env, m->body, m->body_len, p->pk) == 0) {
      fl_copy(host, n, p->host);
      return 1;
    }
  }
  return 0;
}

/* Checks one item; 0 when it may be appended, else -1 and *why, or a
 * negative code when the store could not be read (counted; the item is
 * neither taken nor dropped). */
static int fl_check_item(fl_gw *gw, const char *room_id, json_t *item, fl_room_msg *m,
                         fl_room_drop *why) {
  size_t size = json_dumpb(item, NULL, 0, JSON_COMPACT);
  if (size == 0 || size > FL_ROOM_MAX_ENVELOPE + 1024) {
    *why = size ? FL_ROOM_DROP_OVERSIZE : FL_ROOM_DROP_MALFORMED;
    return -1;
  }
  if (fl_room_msg_parse(item, m, why) != 0)
    return -1;
  if (m->hops >= FL_ROOM_MAX_HOPS) {
    *why = FL_ROOM_DROP_HOP_LIMIT;
    goto drop;
  }
  if (strcmp(m->room_id, room_id) != 0) {
    *why = FL_ROOM_DROP_MALFORMED;
    goto drop;
  }
  unsigned char pk[FL_SIGN_PK_BYTES];
  int mine = strcmp(m->env.host, gw->cfg.host_id) == 0;
  int pinned = mine || fl_peers_lookup(gw->peers, m->env.host, pk) == 0;
  if (mine)
    memcpy(pk, gw->id.pk, sizeof pk);
  if (pinned && fl_verify_envelope(&m->env, m->body, m->body_len, pk) == 0) {
    int rc = fl_claims_admit(gw, room_id, m, why);
    if (rc != 0) {
      if (rc != -1)
        fl_gw_count(gw, FL_C_STORE_ERRORS);
      fl_room_msg_clear(m);
    }
    return rc;
  }
  char other[FL_HOST_ID_SIZE];
  if (fl_signed_by_other(gw, m, other, sizeof other))
    *why = FL_ROOM_DROP_MISATTRIBUTED;
  else
    *why = pinned ? FL_ROOM_DROP_WRONG_KEY : FL_ROOM_DROP_UNPINNED;
drop:
  fl_room_msg_clear(m);
  return -1;
}

int fl_rooms_merge_item(fl_gw *gw, const char *room_id, json_t *item, fl_room_drop *why) {
  fl_room_msg m;
  int rc = fl_check_item(gw, room_id, item, &m, why);
  if (rc != 0)
    return rc;
  rc = fl_rooms_append(gw->rooms, &m, m.hops + 1);
  fl_room_msg_clear(&m);
  if (rc == 0)
    return 0;
  *why = FL_ROOM_DROP_DUPLICATE;
  return rc == FL_EDUP ? -1 : rc;
}

static int fl_refuse(fl_gw *gw, fl_room_peer *st, char *err, size_t errlen, const char *msg) {
  fl_errf(err, errlen, "%s", msg);
  if (st) {
    st->refused++;
    fl_copy(st->last_error, sizeof st->last_error, msg);
  }
  fl_gw_count(gw, FL_C_ROOM_PULLS_REFUSED);
  return FL_EPROTO;
}

int fl_rooms_merge(fl_gw *gw, const char *peer, const char *room_id, const char *body, size_t len,
                   fl_merge_result *res, char *err, size_t errlen) {
  memset(res, 0, sizeof *res);
  fl_rooms *r = gw->rooms;
  if (!r || !peer || !room_id || !fl_rooms_find(r, room_id)) {
    fl_errf(err, errlen, "rooms are off, or the room is not registered");
    return FL_EINVAL;
  }
  fl_room_peer *st = fl_rooms_peer(r, peer);
  char msg[512];
  unsigned char pk[FL_SIGN_PK_BYTES];
  if (fl_peers_lookup(gw->peers, peer, pk) != 0) {
    snprintf(msg, sizeof msg, "host '%s' is not pinned; pull only from pinned peers", peer);
    return fl_refuse(gw, st, err, errlen, msg);
  }
  json_t *root = fl_json_loadb(body, len, JSON_REJECT_DUPLICATES, NULL);
  json_t *messages = json_object_get(root, "messages");
  const char *host = json_string_value(json_object_get(root, "host"));
  const char *key = json_string_value(json_object_get(root, "publicKey"));
  const char *rid = json_string_value(json_object_get(root, "roomId"));
  json_t *cursor = json_object_get(root, "cursor");
  if (!json_is_object(root) || !json_is_array(messages) || !host || !key || !rid ||
      !json_is_integer(cursor) || json_integer_value(cursor) < 0) {
    json_decref(root);
    snprintf(msg, sizeof msg, "peer '%s' sent a response that is not a room page", peer);
    return fl_refuse(gw, st, err, errlen, msg);
  }
  unsigned char got[FL_SIGN_PK_BYTES];
  size_t glen = 0;
  if (strcmp(host, peer) != 0 || fl_b64_decode(key, got, sizeof got, &glen) != 0 ||
      glen != sizeof got || memcmp(got, pk, sizeof pk) != 0) {
    snprintf(msg, sizeof msg,
             "peer at the URL pinned for '%s' presents host '%.63s' with key %.60s, which is not "
             "the key pinned for '%s'; refused (fleetctl peer list shows the pin)",
             peer, host, key, peer);
    fl_warn(NULL, "rooms: %s", msg);
    json_decref(root);
    return fl_refuse(gw, st, err, errlen, msg);
  }
  if (strcmp(rid, room_id) != 0) {
    json_decref(root);
    snprintf(msg, sizeof msg, "peer '%s' answered with another room than asked", peer);
    return fl_refuse(gw, st, err, errlen, msg);
  }
  res->cursor = json_integer_value(cursor);
  res->more = json_is_true(json_object_get(root, "more"));
  size_t i;
  json_t *item;
  json_array_foreach(messages, i, item) {
    if (i >= FL_ROOM_MAX_PAGE) {
      res->dropped[FL_ROOM_DROP_OVERSIZE] += json_array_size(messages) - i;
      break;
    }
    fl_room_msg m;
    fl_room_drop why;
    int rc = fl_check_item(gw, room_id, item, &m, &why);
    if (rc != 0 && rc != -1) {
      res->cursor = -1; /* the store failed (counted): the cursor stays */
      res->more = 0;
      break;
    }
    if (rc == 0) {
      rc = fl_rooms_append(r, &m, m.hops + 1);
      fl_room_msg_clear(&m);
      if (rc == 0) {
        res->merged++;
        continue;
      }
      if (rc != FL_EDUP) {
        res->cursor = -1; /* the store failed (counted): the cursor stays */
        res->more = 0;
        break;
      }
      why = FL_ROOM_DROP_DUPLICATE;
    }
    res->dropped[why]++;
    if (why != FL_ROOM_DROP_DUPLICATE)
      fl_warn(NULL, "rooms: dropped a message from peer '%s' in room %.12s…: %s", peer, room_id,
              fl_room_drop_name(why));
  }
  json_decref(root);
  if (st) {
    st->merged += res->merged;
    for (int k = 0; k < FL_ROOM_DROP_COUNT; k++)
      st->dropped[k] += res->dropped[k];
  }
  gw->counters[FL_C_ROOM_MERGED] += res->merged;
  for (int k = 0; k < FL_ROOM_DROP_COUNT; k++)
    gw->counters[FL_C_ROOM_DROPPED] += res->dropped[k];
  return 0;
}
