/* test_fleet_mcp_calls.c — unit tests for clients/fleet_mcp_calls.c.
 *
 * fleet-mcp matches fleetd's answers to the calls it relayed by the bytes of
 * the id, read from the front of fleetd's line without parsing it: the id of
 * every line fleetd writes (a result built as a tree, a tool result built
 * from its parts, an error) must be found and must equal the bytes kept for
 * the call, for string ids with quotes, escapes and UTF-8, and for integers.
 * Notifications and foreign lines have no id. A cancelled call is forgotten;
 * the cap holds; the answers for a lost connection are a tool result with
 * isError for a tool call and a JSON-RPC error otherwise, each once, oldest
 * first, and nothing leaks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* After the four above: cmocka.h uses them without including them. */
#include <cmocka.h>

#include <string.h>

#include "clients/fleet_mcp_calls.h"
#include "common/alloc.h"
#include "common/error.h"
#include "common/json_writer.h"
#include "mcp/jsonrpc.h"
#include "mcp/tool_result.h"

static int setup(void **state) {
  (void)state;
  fl_alloc_init();
  return 0;
}

/* The ids to try, as JSON text. */
static const char *const ids[] = {
    "1",
    "0",
    "-7",
    "9007199254740993",
    "\"a\"",
    "\"\"",
    "\"with \\\"quotes\\\" and \\\\\"",
    "\"fleet-mcp/x\"",
    "\"\\u00e9t\\u00e9 \\u2713\"",
    "\"comma, brace}\"",
};

/* fleetd's answer lines for id, in each of the ways fleetd builds one. */
static void check_found(fl_calls *c, json_t *id, char *line) {
  assert_non_null(line);
  const char *tok;
  size_t toklen;
  assert_int_equal(fl_calls_line_id(line, strlen(line) - 1, &tok, &toklen), 1);
  enum fl_call_kind kind = FL_CALL_OTHER;
  assert_int_equal(fl_calls_add(c, id, FL_CALL_TOOL), 0);
  assert_int_equal(fl_calls_take(c, tok, toklen, &kind), 1);
  assert_int_equal(kind, FL_CALL_TOOL);
  assert_int_equal(fl_calls_count(c), 0);
  fl_free(line);
}

static void test_ids_match_every_line_fleetd_writes(void **state) {
  (void)state;
  fl_calls *c = fl_calls_new(8);
  assert_non_null(c);
  for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
    json_t *id = json_loads(ids[i], JSON_DECODE_ANY, NULL);
    assert_non_null(id);
    check_found(c, id, fl_rpc_result(id, json_pack("{s:s}", "k", "v,\"id\":2}")));
    check_found(c, id, fl_rpc_error(id, -32602, "bad", NULL));
    check_found(c, id, fl_tool_result_line(id, json_pack("{s:[]}", "messages")));
    json_decref(id);
  }
  fl_calls_free(&c);
  assert_null(c);
}

static void test_lines_without_an_id(void **state) {
  (void)state;
  const char *tok;
  size_t toklen;
  char *n = fl_rpc_notification("notifications/message", json_pack("{s:s}", "level", "notice"));
  assert_int_equal(fl_calls_line_id(n, strlen(n) - 1, &tok, &toklen), 0);
  fl_free(n);
  const char *foreign[] = {"",
                           "{",
                           "{\"id\":1,\"jsonrpc\":\"2.0\"}",
                           "{\"jsonrpc\":\"2.0\",\"id\":",
                           "{\"jsonrpc\":\"2.0\",\"id\":\"open",
                           "{\"jsonrpc\":\"2.0\",\"id\":12"};
  for (size_t i = 0; i < sizeof foreign / sizeof foreign[0]; i++)
    assert_int_equal(fl_calls_line_id(foreign[i], strlen(foreign[i]), &tok, &toklen), 0);
}

static void test_forget_cap_and_bad_ids(void **state) {
  (void)state;
  fl_calls *c = fl_calls_new(2);
  json_t *a = json_integer(1), *b = json_string("b"), *x = json_integer(3), *r = json_real(1.5);
  assert_int_equal(fl_calls_add(c, r, FL_CALL_OTHER), FL_EINVAL);
  assert_int_equal(fl_calls_add(c, NULL, FL_CALL_OTHER), FL_EINVAL);
  assert_int_equal(fl_calls_add(c, a, FL_CALL_OTHER), 0);
  assert_int_equal(fl_calls_add(c, b, FL_CALL_INIT), 0);
  assert_int_equal(fl_calls_add(c, x, FL_CALL_OTHER), FL_EFULL);
  fl_calls_forget(c, a);
  fl_calls_forget(c, x); /* not there: harmless */
  assert_int_equal(fl_calls_count(c), 1);
  enum fl_call_kind kind;
  assert_int_equal(fl_calls_take(c, "1", 1, &kind), 0);
  assert_int_equal(fl_calls_take(c, "\"b\"", 3, &kind), 1);
  assert_int_equal(kind, FL_CALL_INIT);
  json_decref(a);
  json_decref(b);
  json_decref(x);
  json_decref(r);
  fl_calls_free(&c);
  fl_calls_free(&c); /* NULL-safe */
}

/* A call kept by the bytes of its id (read from the client's line without
 * parsing it) is found by the same bytes at the front of fleetd's answer,
 * shares the cap with the others, and is answered when the link is lost. */
static void test_added_by_its_bytes(void **state) {
  (void)state;
  fl_calls *c = fl_calls_new(2);
  assert_int_equal(fl_calls_add_tok(c, "\"q-1\"", 0, FL_CALL_TOOL), FL_EINVAL);
  assert_int_equal(fl_calls_add_tok(c, "\"q-1\"", 5, FL_CALL_TOOL), 0);
  json_t *seven = json_integer(7);
  assert_int_equal(fl_calls_add(c, seven, FL_CALL_OTHER), 0);
  assert_int_equal(fl_calls_add_tok(c, "8", 1, FL_CALL_OTHER), FL_EFULL);
  json_t *q1 = json_string("q-1");
  char *line = fl_rpc_result(q1, json_object());
  json_decref(q1);
  assert_non_null(line);
  const char *tok;
  size_t toklen;
  assert_int_equal(fl_calls_line_id(line, strlen(line), &tok, &toklen), 1);
  enum fl_call_kind kind;
  assert_int_equal(fl_calls_take(c, tok, toklen, &kind), 1);
  assert_int_equal(kind, FL_CALL_TOOL);
  fl_free(line);
  /* The one left (kept from a tree) is answered on a lost link, by its id. */
  int left;
  char *lost = fl_calls_pop_lost(c, "gone", &left);
  assert_non_null(lost);
  assert_non_null(strstr(lost, "\"id\":7"));
  assert_int_equal(left, 0);
  fl_free(lost);
  json_decref(seven);
  fl_calls_free(&c);
}

static void test_lost_answers(void **state) {
  (void)state;
  fl_calls *c = fl_calls_new(8);
  json_t *t = json_string("t\"1"), *o = json_integer(42);
  assert_int_equal(fl_calls_add(c, t, FL_CALL_TOOL), 0);
  assert_int_equal(fl_calls_add(c, o, FL_CALL_OTHER), 0);
  int left = 0;
  char *l1 = fl_calls_pop_lost(c, "gone; retry", &left);
  assert_int_equal(left, 1);
  char *l2 = fl_calls_pop_lost(c, "gone; retry", &left);
  assert_int_equal(left, 0);
  assert_null(fl_calls_pop_lost(c, "gone", &left));
  assert_non_null(l1);
  assert_non_null(l2);
  assert_int_equal(l1[strlen(l1) - 1], '\n');

  json_t *m1 = json_loads(l1, 0, NULL), *m2 = json_loads(l2, 0, NULL);
  assert_true(json_equal(json_object_get(m1, "id"), t));
  json_t *res = json_object_get(m1, "result");
  assert_true(json_is_true(json_object_get(res, "isError")));
  assert_string_equal(json_string_value(json_object_get(
                          json_array_get(json_object_get(res, "content"), 0), "text")),
                      "gone; retry");
  assert_true(json_equal(json_object_get(m2, "id"), o));
  assert_int_equal(json_integer_value(json_object_get(json_object_get(m2, "error"), "code")),
                   -32000);
  assert_string_equal(json_string_value(json_object_get(json_object_get(m2, "error"), "message")),
                      "gone; retry");
  json_decref(m1);
  json_decref(m2);
  fl_free(l1);
  fl_free(l2);
  json_decref(t);
  json_decref(o);
  fl_calls_free(&c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_ids_match_every_line_fleetd_writes, setup),
      cmocka_unit_test_setup(test_lines_without_an_id, setup),
      cmocka_unit_test_setup(test_forget_cap_and_bad_ids, setup),
      cmocka_unit_test_setup(test_added_by_its_bytes, setup),
      cmocka_unit_test_setup(test_lost_answers, setup),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
