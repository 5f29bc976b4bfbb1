/* test_fleet_mcp_head.c — unit tests for clients/fleet_mcp_head.c.
 *
 * fleet-mcp trusts the scanner's yes: the line goes to fleetd untouched and
 * the call is tracked by the id the scanner found. So a yes must mean what
 * jansson would read: the line parses, its method is the one reported and
 * its id, written back compact, is the same bytes. Every line below is
 * checked that way against jansson itself, and so are some thousands of
 * lines made by corrupting valid ones byte by byte. The requests an MCP
 * client sends every day (tool calls with long text, UTF-8, escapes in the
 * arguments) must get a yes, or fleet-mcp would gain nothing; the shapes
 * the scanner leaves to jansson (escaped keys, ids or methods, exponents,
 * long numbers, \u0000, deep nesting, a batch) must get a no. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* After the four above: cmocka.h uses them without including them. */
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "clients/fleet_mcp_head.h"
#include "common/alloc.h"
#include "tests/support/test_util.h"

static int setup(void **state) {
  (void)state;
  fl_alloc_init();
  return 0;
}

/* The scanner's answer agrees with jansson's reading of the line: a yes
 * means it parses, with the same method and id. Returns the answer. */
static int agrees(const char *line, size_t len) {
  fl_mcp_head h;
  int yes = fl_mcp_head_scan(line, len, &h);
  json_t *root = json_loadb(line, len, 0, NULL);
  if (!yes) {
    assert_null(h.method);
    assert_null(h.id);
    json_decref(root);
    return 0;
  }
  if (!root)
    fail_msg("the scanner accepted a line jansson refuses: %.*s", (int)len, line);
  assert_true(json_is_object(root));
  const char *method = json_string_value(json_object_get(root, "method"));
  if (h.method) {
    assert_non_null(method);
    assert_int_equal(strlen(method), h.method_len);
    assert_memory_equal(method, h.method, h.method_len);
  } else {
    assert_null(json_object_get(root, "method"));
  }
  json_t *id = json_object_get(root, "id");
  if (h.id) {
    char *tok = json_dumps(id, JSON_COMPACT | JSON_ENCODE_ANY);
    assert_non_null(tok);
    assert_int_equal(strlen(tok), h.id_len);
    assert_memory_equal(tok, h.id, h.id_len);
    fl_free(tok);
  } else {
    assert_null(id);
  }
  json_decref(root);
  return 1;
}

static int agrees_s(const char *line) { return agrees(line, strlen(line)); }

/* What MCP clients send: each must be read without jansson. */
static const char *const everyday[] = {
    "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"fleet_send\","
    "\"arguments\":{\"to\":\"worker-1\",\"content\":\"hello\"}}}",
    "{\"jsonrpc\":\"2.0\",\"id\":\"req-12\",\"method\":\"tools/list\",\"params\":{}}",
    "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"ping\"}",
    "{\"jsonrpc\":\"2.0\",\"id\":-3,\"method\":\"tools/call\",\"params\":{\"name\":\"fleet_poll\","
    "\"arguments\":{\"wait_s\":2.5,\"max\":100}}}",
    "  { \"method\" : \"tools/call\" , \"id\" : 123456789012345678 , \"params\" : { \"a\" : [ 1 , "
    "-0.25 , true , false , null , [ ] , { } ] } }  \r",
    /* Escapes and UTF-8 in the arguments, where they belong. */
    "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":{\"name\":\"fleet_send\","
    "\"arguments\":{\"to\":\"a\",\"content\":\"line one\\nline \\\"two\\\"\\t\\\\ \\/ \\u00e9 "
    "\\ud83d\\ude00 caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"}}}",
    /* The same member twice: the last counts, as in jansson. */
    "{\"id\":1,\"method\":\"ping\",\"id\":2,\"method\":\"tools/list\"}",
    /* A request's id and method in any order, a key that only starts the same. */
    "{\"params\":{\"id\":\"inner\",\"method\":\"inner\"},\"idx\":1,\"method\":\"tools/"
    "call\",\"id\":"
    "\"x\"}",
};

static void test_everyday_requests(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof everyday / sizeof everyday[0]; i++) {
    if (!agrees_s(everyday[i]))
      fail_msg("not read by the scanner: %s", everyday[i]);
  }
  fl_mcp_head h;
  assert_int_equal(fl_mcp_head_scan(everyday[6], strlen(everyday[6]), &h), 1);
  assert_int_equal(h.id_len, 1);
  assert_memory_equal(h.id, "2", 1);
  assert_int_equal(h.method_len, strlen("tools/list"));
}

/* A tool call as big as the ones the benchmarks send, and bigger. */
static void test_long_content(void **state) {
  (void)state;
  size_t n = 256 * 1024;
  char *content = fl_malloc(n + 1);
  assert_non_null(content);
  for (size_t i = 0; i < n; i++)
    content[i] = (char)('a' + i % 26);
  content[n] = '\0';
  size_t len;
  char *line = fl_test_send_line(content, &len);
  assert_non_null(line);
  assert_int_equal(agrees(line, len), 1);
  /* Cut anywhere, it is no longer JSON. */
  for (size_t cut = 0; cut < len; cut += 997)
    assert_int_equal(agrees(line, cut), 0);
  fl_free(line);
  fl_free(content);
}

/* Left to jansson: the scanner says no, whether jansson accepts or not. */
static const char *const leave[] = {
    "",
    "   ",
    "[{\"id\":1,\"method\":\"ping\"}]",
    "\"a string\"",
    "{\"id\":1,\"method\":\"ping\"",
    "{\"id\":1,\"method\":\"ping\"} x",
    "{\"id\":1,\"method\":\"ping\"}{}",
    "{\"id\":1,,\"method\":\"ping\"}",
    "{\"id\":1,\"method\":\"ping\",}",
    "{\"id\" 1}",
    "{id:1}",
    "{\"id\":01,\"method\":\"ping\"}",
    "{\"id\":1.5,\"method\":\"ping\"}",
    "{\"id\":-0,\"method\":\"ping\"}",
    "{\"id\":1234567890123456789,\"method\":\"ping\"}",
    "{\"id\":null,\"method\":\"ping\"}",
    "{\"id\":true,\"method\":\"ping\"}",
    "{\"id\":\"a\\\"b\",\"method\":\"ping\"}",
    "{\"id\":1,\"method\":\"p\\u0069ng\"}",
    "{\"id\":1,\"method\":7}",
    "{\"i\\u0064\":1,\"method\":\"ping\"}",
    "{\"id\":1,\"method\":\"ping\",\"p\":1e3}",
    "{\"id\":1,\"method\":\"ping\",\"p\":1E3}",
    "{\"id\":1,\"method\":\"ping\",\"p\":1.}",
    "{\"id\":1,\"method\":\"ping\",\"p\":.5}",
    "{\"id\":1,\"method\":\"ping\",\"p\":+1}",
    "{\"id\":1,\"method\":\"ping\",\"p\":1234567890123456789}",
    "{\"id\":1,\"method\":\"ping\",\"p\":tru}",
    "{\"id\":1,\"method\":\"ping\",\"p\":nul}",
    "{\"id\":1,\"method\":\"ping\",\"p\":\"\\u0000\"}",
    "{\"id\":1,\"method\":\"ping\",\"p\":\"\\ud800\"}",
    "{\"id\":1,\"method\":\"ping\",\"p\":\"\\udc00\"}",
    "{\"id\":1,\"method\":\"ping\",\"p\":\"\\ud800\\u0041\"}",
    "{\"id\":1,\"method\":\"ping\",\"p\":\"\\x\"}",
    "{\"id\":1,\"method\":\"ping\",\"p\":\"\\u12\"}",
    "{\"id\":1,\"method\":\"ping\",\"p\":\"tab\there\"}",
    "{\"id\":1,\"method\":\"ping\",\"p\":\"\xc3\"}",
    "{\"id\":1,\"method\":\"ping\",\"p\":\"\xc0\xaf\"}",
    "{\"id\":1,\"method\":\"ping\",\"p\":\"\xed\xa0\x80\"}",
    "{\"id\":1,\"method\":\"ping\",\"p\":\"\xf4\x90\x80\x80\"}",
    "{\"id\":1,\"method\":\"ping\",\"p\":[1 2]}",
    "{\"id\":1,\"method\":\"ping\",\"p\":{\"a\"}}",
    "\xef\xbb\xbf{\"id\":1,\"method\":\"ping\"}",
};

static void test_left_to_jansson(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof leave / sizeof leave[0]; i++) {
    fl_mcp_head h;
    if (fl_mcp_head_scan(leave[i], strlen(leave[i]), &h))
      fail_msg("the scanner read what it must leave to jansson: %s", leave[i]);
    assert_int_equal(agrees_s(leave[i]), 0);
  }
  /* A NUL byte inside the line. */
  static const char nul[] = "{\"id\":1,\"method\":\"ping\",\"p\":\"a\0b\"}";
  assert_int_equal(agrees(nul, sizeof nul - 1), 0);
  /* Nesting: up to the bound it is read, past it left to jansson. */
  char deep[2 * FL_MCP_HEAD_MAX_DEPTH + 64];
  for (int depth = FL_MCP_HEAD_MAX_DEPTH - 2; depth <= FL_MCP_HEAD_MAX_DEPTH + 2; depth++) {
    int n = snprintf(deep, sizeof deep, "{\"id\":1,\"method\":\"m\",\"p\":");
    for (int i = 1; i < depth; i++)
      deep[n++] = '[';
    for (int i = 1; i < depth; i++)
      deep[n++] = ']';
    deep[n++] = '}';
    assert_int_equal(agrees(deep, (size_t)n), depth <= FL_MCP_HEAD_MAX_DEPTH);
  }
}

static int agrees_m(const char *line, size_t len, void *ctx) {
  (void)ctx;
  return agrees(line, len);
}

/* Every line made by changing, dropping or doubling one byte of a valid
 * one: whatever the scanner accepts, jansson reads the same way. */
static void test_corrupted_lines(void **state) {
  (void)state;
  static const unsigned char subst[] = {'"', '\\', '{', '}', '[',  ']',  ':',  ',',  '0', '-',
                                        'e', '.',  'u', ' ', 0x00, 0x1f, 0x7f, 0xc3, 0xff};
  size_t yes = 0, tried = 0;
  for (size_t k = 0; k < sizeof everyday / sizeof everyday[0]; k++) {
    size_t n = strlen(everyday[k]), t;
    assert_true(n + 1 < 1024);
    yes += fl_test_mutations(everyday[k], n, subst, sizeof subst, agrees_m, NULL, &t);
    tried += t;
  }
  /* Some corruptions stay valid JSON (a digit for a digit, a letter in a
   * string): the scanner reads those too. */
  assert_true(yes > 0);
  assert_true(yes < tried);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_everyday_requests, setup),
      cmocka_unit_test_setup(test_long_content, setup),
      cmocka_unit_test_setup(test_left_to_jansson, setup),
      cmocka_unit_test_setup(test_corrupted_lines, setup),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
