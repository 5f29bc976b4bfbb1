/* test_result_write.c — gateway/core/result_write.c writes the bytes the
 * jansson trees it replaced dumped: a message as a poll shows it, a poll's
 * result and a send's "replied" result, and the tool result lines made from
 * them, for bodies with quotes, backslashes, control characters and
 * non-ASCII text, and for every optional field. The reference trees are
 * built here as router.c built them (json_pack, then the JSON writer's dump,
 * mcp/tool_result.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka needs the four headers above first. */
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/json_writer.h"
#include "common/time.h"
#include "gateway/core/gw_internal.h"
#include "gateway/core/result_write.h"
#include "gateway/core/wait.h"
#include "gateway/proto/envelope.h"
#include "mcp/tool_result.h"

static const char *const bodies[] = {
    "plain text",
    "\"quoted\" and \\backslashed\\ and a / slash",
    "controls: \x01\x02\b\f\n\r\t\x1f and \x7f",
    "non-ASCII: caf\xc3\xa9, \xe2\x82\xac, \xf0\x9f\x98\x80, \xe6\x97\xa5\xe6\x9c\xac",
    "",
    "{\"requestId\":\"r-1\",\"tool\":\"Bash\",\"input\":\"ls \\\"x\\\"\",\"expiresAt\":\"soon\"}",
};

/* The tree router.c built for m before it was written (the reference). */
static json_t *old_msg_json(const fl_msg *m) {
  char ts[32];
  fl_rfc3339(m->ts_ms, ts);
  json_t *o = json_pack("{s:s, s:s, s:{s:s, s:s}, s:s, s:s%, s:s, s:s}", "msgId", m->msg_id, "kind",
                        m->kind, "from", "gid", m->from_gid, "name", m->from_name, "to", m->to_gid,
                        "content", m->content ? m->content : "", m->content_len, "ts", ts,
                        "traceId", m->trace_id);
  assert_non_null(o);
  if (m->in_reply_to[0])
    json_object_set_new(o, "inReplyTo", json_string(m->in_reply_to));
  if (m->turn_id[0]) {
    json_object_set_new(o, "turnId", json_string(m->turn_id));
    if (m->expires_ms) {
      char exp[32];
      fl_rfc3339(m->expires_ms, exp);
      json_object_set_new(o, "expiresAt", json_string(exp));
    }
  }
  if (fl_envelope_is_kind(m->kind, FL_KIND_COORD))
    json_object_set_new(o, "coordId", json_string(m->from_name));
  if (fl_envelope_is_kind(m->kind, FL_KIND_BLOCKED)) {
    json_t *b = json_loadb(m->content, m->content_len, 0, NULL);
    const char *id = json_string_value(json_object_get(b, "requestId"));
    const char *tool = json_string_value(json_object_get(b, "tool"));
    if (id && tool) {
      json_t *r = json_pack("{s:s, s:s}", "requestId", id, "tool", tool);
      const char *keys[] = {"input", "expiresAt"};
      for (size_t i = 0; i < 2; i++)
        if (json_is_string(json_object_get(b, keys[i])))
          json_object_set(r, keys[i], json_object_get(b, keys[i]));
      json_object_set_new(o, "request", r);
    }
    json_decref(b);
  }
  return o;
}

/* v dumped as the tool results dump a tree (mcp/tool_result.c). */
static char *dump(const json_t *v) {
  fl_jw w;
  fl_jw_init(&w, FL_MAX_RESULT_JSON);
  fl_jw_json(&w, v);
  char *s = NULL;
  size_t n = 0;
  assert_int_equal(fl_jw_take(&w, &s, &n), 0);
  fl_jw_free(&w);
  return s;
}

static void mk(fl_msg *m, const char *body, const char *kind, int variant) {
  memset(m, 0, sizeof *m);
  snprintf(m->msg_id, sizeof m->msg_id, "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b");
  snprintf(m->to_gid, sizeof m->to_gid, "to-gid");
  snprintf(m->from_gid, sizeof m->from_gid, "from-gid");
  snprintf(m->from_name, sizeof m->from_name, "s\xc3\xa9nder \"x\"");
  snprintf(m->trace_id, sizeof m->trace_id, "trace-1");
  snprintf(m->kind, sizeof m->kind, "%s", kind);
  m->ts_ms = 1764806400123LL;
  m->content = (char *)body;
  m->content_len = strlen(body);
  if (variant & 1)
    snprintf(m->in_reply_to, sizeof m->in_reply_to, "in-reply-to-id");
  if (variant & 2) {
    snprintf(m->turn_id, sizeof m->turn_id, "turn-1");
    m->expires_ms = variant & 4 ? 1764806500000LL : 0;
  }
}

static const char *const kinds[] = {"SEND", "REPLY", "COORD", "BLOCKED"};

/* Every body, kind and optional field: the written message is the tree's
 * dump, byte for byte, and parses back to an equal tree. */
static void test_msg_bytes(void **state) {
  (void)state;
  for (size_t b = 0; b < sizeof bodies / sizeof *bodies; b++)
    for (size_t k = 0; k < 4; k++)
      for (int v = 0; v < 8; v++) {
        fl_msg m;
        mk(&m, bodies[b], kinds[k], v);
        json_t *old = old_msg_json(&m);
        char *want = dump(old);
        fl_jw w;
        fl_jw_init(&w, FL_MAX_RESULT_JSON);
        fl_msg_write(&w, &m);
        char *got = NULL;
        size_t n = 0;
        assert_int_equal(fl_jw_take(&w, &got, &n), 0);
        fl_jw_free(&w);
        assert_string_equal(got, want);
        json_t *tree = fl_router_msg_json(&m);
        assert_true(json_equal(tree, old));
        json_decref(tree);
        json_decref(old);
        fl_free(want);
        fl_free(got);
      }
}

/* A poll's result of several messages, and of none; and its tool result
 * line, written and from the tree. */
static void test_poll_bytes(void **state) {
  (void)state;
  enum { N = sizeof bodies / sizeof *bodies };
  fl_msg msgs[N];
  json_t *arr = json_array();
  for (size_t i = 0; i < N; i++) {
    mk(&msgs[i], bodies[i], kinds[i % 4], (int)i);
    json_array_append_new(arr, old_msg_json(&msgs[i]));
  }
  for (size_t n = 0; n <= N; n += N) {
    json_t *old = json_pack("{s:o, s:I}", "messages", n ? json_incref(arr) : json_array(),
                            "remaining", (json_int_t)(n ? 3 : 0));
    fl_json_out out = {0};
    assert_int_equal(fl_poll_write(&out, msgs, n, n ? 3 : 0), 0);
    char *want = dump(old);
    assert_string_equal(out.json, want);
    fl_free(want);
    json_t *id = json_integer(42);
    char *line_old = fl_tool_result_line(id, old);
    char *line_new = fl_tool_result_line_take(id, &out, NULL);
    assert_non_null(line_new);
    assert_string_equal(line_new, line_old);
    json_decref(id);
    fl_big_free(line_old);
    fl_big_free(line_new);
  }
  json_decref(arr);
}

/* A send's "replied" result, with and without its note. */
static void test_replied_bytes(void **state) {
  (void)state;
  fl_entity to;
  memset(&to, 0, sizeof to);
  snprintf(to.gid, sizeof to.gid, "peer-gid");
  snprintf(to.name, sizeof to.name, "p\xc3\xa9\\er");
  fl_wait w;
  memset(&w, 0, sizeof w);
  snprintf(w.msg_id, sizeof w.msg_id, "sent-msg-id");
  snprintf(w.trace_id, sizeof w.trace_id, "trace-9");
  for (int note = 0; note < 2; note++) {
    snprintf(w.typed_note, sizeof w.typed_note, "%s", note ? "typed with \"\\n\" as \x01" : "");
    for (size_t b = 0; b < sizeof bodies / sizeof *bodies; b++) {
      fl_msg m;
      mk(&m, bodies[b], "REPLY", 1);
      json_t *old = json_pack("{s:s, s:s, s:{s:s, s:s}, s:s, s:o}", "msgId", w.msg_id, "traceId",
                              w.trace_id, "to", "gid", to.gid, "name", to.name, "status", "replied",
                              "reply", old_msg_json(&m));
      fl_wait_add_note(&w, old);
      fl_json_out out = {0};
      assert_int_equal(fl_replied_write(&out, &w, &to, &m), 0);
      char *want = dump(old);
      assert_string_equal(out.json, want);
      fl_free(want);
      char *line_old = fl_tool_result_line(NULL, old);
      char *line_new = fl_tool_result_line_take(NULL, &out, NULL);
      assert_string_equal(line_new, line_old);
      fl_big_free(line_old);
      fl_big_free(line_new);
    }
  }
}

/* Text that is not UTF-8 is refused, as jansson refused it: the caller
 * then falls back to the tree, which fails the same way. */
static void test_not_utf8(void **state) {
  (void)state;
  fl_msg m;
  mk(&m, "bad \xc3 byte", "SEND", 0);
  fl_json_out out = {0};
  assert_true(fl_poll_write(&out, &m, 1, 0) != 0);
  assert_null(out.json);
  assert_null(fl_router_msg_json(&m));
}

int main(void) {
  fl_alloc_init();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_msg_bytes),
      cmocka_unit_test(test_poll_bytes),
      cmocka_unit_test(test_replied_bytes),
      cmocka_unit_test(test_not_utf8),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
