/* test_tool_result.c — unit tests for mcp/tool_result.c.
 *
 * The line built with the structured result serialized once must be the
 * same bytes as the line jansson writes for the whole result as one tree
 * (text = the object's dump, plus the object), for results holding every
 * character class the escaping treats apart: quotes, backslashes, every
 * control character, '/', DEL, multi-byte UTF-8, nested objects and arrays,
 * string and integer ids, and a result of megabytes. The line built in the
 * buffer of JSON already written is the same. The text must parse back to
 * structuredContent, and an allocation failure gives NULL without a leak. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* After the four above: cmocka.h uses them without including them. */
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "mcp/jsonrpc.h"
#include "mcp/tool_result.h"

static int setup(void **state) {
  (void)state;
  fl_alloc_init();
  return 0;
}

/* The line as one jansson tree: what fleetd wrote before. */
static char *tree_line(json_t *id, json_t *structured) {
  char *text = json_dumps(structured, JSON_COMPACT);
  assert_non_null(text);
  json_t *r = json_pack("{s:[{s:s, s:s}], s:O}", "content", "type", "text", "text", text,
                        "structuredContent", structured);
  fl_free(text);
  assert_non_null(r);
  return fl_rpc_result(id, r);
}

static void check_same(json_t *id, json_t *structured) {
  char *want = tree_line(id, structured);
  assert_non_null(want);
  char *got = fl_tool_result_line(id, json_incref(structured));
  assert_non_null(got);
  assert_string_equal(got, want);
  /* The same from JSON already written, built in that JSON's buffer. */
  char *sj = json_dumps(structured, JSON_COMPACT);
  assert_non_null(sj);
  size_t n = 0;
  fl_json_out out = {.json = sj, .len = strlen(sj)};
  char *taken = fl_tool_result_line_take(id, &out, &n);
  assert_non_null(taken);
  assert_null(out.json); /* stolen */
  assert_string_equal(taken, want);
  assert_int_equal(n, strlen(want));
  fl_free(taken);
  /* And with its text escaped already, as fleet_list's writer makes it:
   * the text goes in as it is. */
  sj = json_dumps(structured, JSON_COMPACT);
  assert_non_null(sj);
  out = (fl_json_out){.json = sj, .len = strlen(sj)};
  out.text = fl_malloc(fl_json_escaped_len(sj, out.len) + 1);
  assert_non_null(out.text);
  out.text_len = (size_t)(fl_json_escape(out.text, sj, out.len) - out.text);
  taken = fl_tool_result_line_take(id, &out, &n);
  assert_non_null(taken);
  assert_string_equal(taken, want);
  assert_int_equal(n, strlen(want));
  fl_free(taken);

  json_error_t e;
  json_t *line = json_loads(got, JSON_DISABLE_EOF_CHECK, &e);
  assert_non_null(line);
  json_t *res = json_object_get(line, "result");
  const char *text = json_string_value(
      json_object_get(json_array_get(json_object_get(res, "content"), 0), "text"));
  assert_non_null(text);
  json_t *back = json_loads(text, 0, &e);
  assert_non_null(back);
  assert_true(json_equal(back, json_object_get(res, "structuredContent")));
  assert_true(json_equal(back, structured));
  json_decref(back);
  json_decref(line);
  fl_free(got);
  fl_free(want);
}

static void test_every_control_character(void **state) {
  (void)state;
  char s[64];
  size_t n = 0;
  for (int c = 1; c < 0x20; c++)
    s[n++] = (char)c;
  s[n] = '\0';
  json_t *o =
      json_pack("{s:s, s:s, s:s, s:s}", "ctl", s, "quote", "say \"hi\" \\ back\\slash", "misc",
                "a/b \x7f end", "utf8", "h\xc3\xa9llo \xe2\x80\xa8 \xf0\x9f\x9a\x80");
  assert_non_null(o);
  json_t *id = json_integer(42);
  check_same(id, o);
  json_decref(id);
  json_decref(o);
}

static void test_nested_and_ids(void **state) {
  (void)state;
  json_t *o =
      json_loads("{\"status\":\"replied\",\"reply\":{\"content\":\"line1\\nline2\\t\\\"q\\\"\","
                 "\"n\":[1,2.5,true,null,{\"k\":\"\\u0001\"}]},\"messages\":[]}",
                 0, NULL);
  assert_non_null(o);
  json_t *sid = json_string("req-\"7\"");
  check_same(sid, o);
  json_t *iid = json_integer(0);
  check_same(iid, o);
  check_same(NULL, o); /* an id we could not read is written as null */
  json_t *empty = json_object();
  check_same(iid, empty);
  json_decref(empty);
  json_decref(iid);
  json_decref(sid);
  json_decref(o);
}

/* A result of megabytes with a quote every few bytes, as fleet_list's
 * roster is: the JSON moves over itself to make room for its text. */
static void test_big_result(void **state) {
  (void)state;
  json_t *arr = json_array();
  for (int i = 0; i < 20000; i++)
    json_array_append_new(arr, json_pack("{s:s, s:i, s:b}", "name", i % 7 ? "w\"x" : "ab\\c\n", "n",
                                         i, "self", i % 2));
  json_t *o = json_pack("{s:s, s:o}", "host", "hostA", "entities", arr);
  assert_non_null(o);
  json_t *id = json_integer(7);
  check_same(id, o);
  json_decref(id);
  json_decref(o);
}

static void test_oom_and_null(void **state) {
  (void)state;
  assert_null(fl_tool_result_line(NULL, NULL));
  json_t *id = json_integer(1);
  for (long k = 0; k < 4; k++) {
    json_t *o = json_pack("{s:s}", "a", "b");
    fl_alloc_fail_after(k);
    char *line = fl_tool_result_line(id, o); /* stolen even when it fails */
    fl_alloc_fail_after(-1);
    if (k == 0)
      assert_null(line); /* the first allocation is the dump itself */
    fl_free(line);
  }
  for (long k = 0; k < 3; k++) {
    fl_json_out out = {.json = fl_strdup("{\"a\":\"b\"}")};
    assert_non_null(out.json);
    out.len = strlen(out.json);
    fl_alloc_fail_after(k);
    char *line = fl_tool_result_line_take(id, &out, NULL); /* stolen either way */
    fl_alloc_fail_after(-1);
    if (k < 2)
      assert_null(line); /* the id's dump, then the line's room */
    fl_free(line);
  }
  fl_json_out none = {0};
  assert_null(fl_tool_result_line_take(id, &none, NULL));
  json_decref(id);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_control_character),
      cmocka_unit_test(test_nested_and_ids),
      cmocka_unit_test(test_big_result),
      cmocka_unit_test(test_oom_and_null),
  };
  return cmocka_run_group_tests_name("tool_result", tests, setup, NULL);
}
