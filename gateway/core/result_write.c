/* result_write.c — messages and the results that carry them, written with
 * the JSON writer (see result_write.h). */
#include "gateway/core/result_write.h"

#include <string.h>

#include "common/alloc.h"
#include "common/json_read.h"
#include "common/limits.h"
#include "common/time.h"
#include "gateway/core/gw_internal.h"
#include "gateway/core/wait.h"
#include "gateway/proto/envelope.h"

/* A BLOCKED message's request ({requestId, tool, input?, expiresAt?} of
 * its body) as a new tree, or NULL when the body has none. */
static json_t *fl_msg_blocked_request(const fl_msg *m) {
  json_t *b = m->content ? fl_json_loadb(m->content, m->content_len, 0, NULL) : NULL;
  const char *id = json_string_value(json_object_get(b, "requestId"));
  const char *tool = json_string_value(json_object_get(b, "tool"));
  json_t *r = NULL;
  if (id && tool) {
    r = json_pack("{s:s, s:s}", "requestId", id, "tool", tool);
    const char *keys[] = {"input", "expiresAt"};
    for (size_t i = 0; r && i < 2; i++)
      if (json_is_string(json_object_get(b, keys[i])))
        json_object_set(r, keys[i], json_object_get(b, keys[i]));
  }
  json_decref(b);
  return r;
}

void fl_msg_write(fl_jw *w, const fl_msg *m) {
  char ts[32];
  fl_rfc3339(m->ts_ms, ts);
  fl_jw_obj_open(w);
  fl_jw_key(w, "msgId");
  fl_jw_str(w, m->msg_id);
  fl_jw_key(w, "kind");
  fl_jw_str(w, m->kind);
  fl_jw_key(w, "from");
  fl_jw_obj_open(w);
  fl_jw_key(w, "gid");
  fl_jw_str(w, m->from_gid);
  fl_jw_key(w, "name");
  fl_jw_str(w, m->from_name);
  fl_jw_obj_close(w);
  fl_jw_key(w, "to");
  fl_jw_str(w, m->to_gid);
  fl_jw_key(w, "content");
  fl_jw_strn(w, m->content ? m->content : "", m->content ? m->content_len : 0);
  fl_jw_key(w, "ts");
  fl_jw_str(w, ts);
  fl_jw_key(w, "traceId");
  fl_jw_str(w, m->trace_id);
  if (m->in_reply_to[0]) {
    fl_jw_key(w, "inReplyTo");
    fl_jw_str(w, m->in_reply_to);
  }
  if (m->turn_id[0]) { /* an ask's turn (ask.h) */
    fl_jw_key(w, "turnId");
    fl_jw_str(w, m->turn_id);
    if (m->expires_ms) {
      char exp[32];
      fl_rfc3339(m->expires_ms, exp);
      fl_jw_key(w, "expiresAt");
      fl_jw_str(w, exp);
    }
  }
  if (fl_envelope_is_kind(m->kind, FL_KIND_COORD)) { /* a lead's coordId travels as its name */
    fl_jw_key(w, "coordId");
    fl_jw_str(w, m->from_name);
  }
  if (fl_envelope_is_kind(m->kind, FL_KIND_BLOCKED)) { /* its request, as approve.c wrote it */
    json_t *r = fl_msg_blocked_request(m);
    if (r) {
      fl_jw_key(w, "request");
      fl_jw_json(w, r);
      json_decref(r);
    }
  }
  fl_jw_obj_close(w);
}

json_t *fl_router_msg_json(const fl_msg *m) {
  fl_jw w;
  fl_jw_init(&w, FL_MAX_RESULT_JSON);
  fl_msg_write(&w, m);
  json_t *t = fl_jw_take_json(&w);
  fl_jw_free(&w);
  return t;
}

/* Takes what w wrote into out; on failure out stays empty. */
static int fl_write_take(fl_jw *w, fl_json_out *out) {
  int rc = fl_jw_take(w, &out->json, &out->len);
  fl_jw_free(w);
  return rc;
}

int fl_poll_write(fl_json_out *out, const fl_msg *msgs, size_t n, size_t remaining) {
  fl_json_out_free(out);
  fl_jw w;
  fl_jw_init(&w, FL_MAX_RESULT_JSON);
  fl_jw_obj_open(&w);
  fl_jw_key(&w, "messages");
  fl_jw_arr_open(&w);
  for (size_t i = 0; i < n; i++)
    fl_msg_write(&w, &msgs[i]);
  fl_jw_arr_close(&w);
  fl_jw_key(&w, "remaining");
  fl_jw_int(&w, (long long)remaining);
  fl_jw_obj_close(&w);
  return fl_write_take(&w, out);
}

int fl_replied_write(fl_json_out *out, const fl_wait *wt, const fl_entity *to,
                     const fl_msg *reply) {
  fl_json_out_free(out);
  fl_jw w;
  fl_jw_init(&w, FL_MAX_RESULT_JSON);
  fl_jw_obj_open(&w);
  fl_jw_key(&w, "msgId");
  fl_jw_str(&w, wt->msg_id);
  fl_jw_key(&w, "traceId");
  fl_jw_str(&w, wt->trace_id);
  fl_jw_key(&w, "to");
  fl_jw_obj_open(&w);
  fl_jw_key(&w, "gid");
  fl_jw_str(&w, to->gid);
  fl_jw_key(&w, "name");
  fl_jw_str(&w, to->name);
  fl_jw_obj_close(&w);
  fl_jw_key(&w, "status");
  fl_jw_str(&w, "replied");
  fl_jw_key(&w, "reply");
  fl_msg_write(&w, reply);
  if (wt->typed_note[0]) {
    fl_jw_key(&w, "note");
    fl_jw_str(&w, wt->typed_note);
  }
  fl_jw_obj_close(&w);
  return fl_write_take(&w, out);
}
