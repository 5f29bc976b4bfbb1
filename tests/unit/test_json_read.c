/* test_json_read.c — unit tests for common/json_read.c.
 *
 * fleetd parses every request, and the benchmark's clients every result,
 * with fl_json_loadb, so its tree must be jansson's to the byte. Every line
 * below is read both ways: where the fast path gives a tree, json_loadb
 * gives one that is equal, with the same types and the same member order
 * (both written back compact, byte for byte); fl_json_loadb always answers
 * as json_loadb does. So are some thousands of lines made by corrupting
 * valid ones byte by byte. What fleet reads every day (requests with long
 * text, escapes, UTF-8, surrogate pairs; results with JSON as text) must
 * take the fast path, or it gains nothing; what it leaves to jansson
 * (exponents, numbers over 18 characters, \u0000, deep nesting, anything
 * that is not JSON) must not. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* After the four above: cmocka.h uses them without including them. */
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/json_read.h"
#include "tests/support/test_util.h"

static int setup(void **state) {
  (void)state;
  fl_alloc_init();
  return 0;
}

static char *dump(const json_t *v) {
  char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
  assert_non_null(s);
  return s;
}

/* The fast path agrees with jansson on line[0..len) under flags; returns 1
 * when it gave a tree. fl_json_loadb agrees too, tree or failure. */
static int agrees(const char *line, size_t len, size_t flags) {
  json_t *fast = fl_json_read_fast(line, len, flags);
  json_error_t jerr, ferr;
  json_t *slow = json_loadb(line, len, flags, &jerr);
  json_t *both = fl_json_loadb(line, len, flags, &ferr);
  if (!slow) {
    if (fast)
      fail_msg("the fast path read what jansson refuses: %.*s", (int)len, line);
    assert_null(both);
    assert_string_equal(ferr.text, jerr.text);
    assert_int_equal(ferr.position, jerr.position);
    return 0;
  }
  assert_non_null(both);
  /* The error is left as jansson leaves it after a success. */
  assert_string_equal(ferr.text, jerr.text);
  assert_string_equal(ferr.source, jerr.source);
  assert_int_equal(ferr.line, jerr.line);
  assert_int_equal(ferr.column, jerr.column);
  assert_int_equal(ferr.position, jerr.position);
  char *want = dump(slow), *got = dump(both);
  assert_string_equal(got, want);
  assert_true(json_equal(both, slow));
  fl_free(got);
  if (fast) {
    got = dump(fast);
    if (strcmp(got, want) != 0)
      fail_msg("the fast path read\n  %s\nas\n  %s\nwhere jansson reads\n  %s", line, got, want);
    assert_true(json_equal(fast, slow));
    fl_free(got);
  }
  fl_free(want);
  json_decref(slow);
  json_decref(both);
  int yes = fast != NULL;
  json_decref(fast);
  return yes;
}

static int agrees_s(const char *line, size_t flags) { return agrees(line, strlen(line), flags); }

/* Escapes in keys; a key given twice keeps its first place and its last value. */
static const char dup_keys[] =
    "{\"a\\nb\":1,\"\\u00e9t\\u00e9\":\"x\",\"z\":1,\"a\":2,\"z\":3,\"\":\"\"}";

/* Read every day: each must take the fast path. */
static const char *const everyday[] = {
    "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"fleet_send\","
    "\"arguments\":{\"to\":\"worker-1\",\"content\":\"hello\"}}}",
    "{\"jsonrpc\":\"2.0\",\"id\":\"req-12\",\"method\":\"tools/list\",\"params\":{}}",
    "{\"jsonrpc\":\"2.0\",\"id\":-3,\"method\":\"tools/call\",\"params\":{\"name\":\"fleet_poll\","
    "\"arguments\":{\"wait_s\":10,\"max\":100}}}",
    /* Reals of up to 18 characters, as strtod reads them. */
    "{\"wait_s\":2.5,\"r\":[0.5,-0.25,1.0,-0.0,0.1,123456789.12345678,-1234567.123456789,"
    "3.141592653589793,0.000000000000001]}",
    "  { \"method\" : \"tools/call\" , \"id\" : 123456789012345678 , \"params\" : { \"a\" : [ 1 , "
    "-0 , 0 , -99999999999999999 , true , false , null , [ ] , { } , [ [ ] ] ] } }  \r\n",
    /* Escapes and UTF-8 in text. */
    "{\"content\":\"line one\\nline \\\"two\\\"\\t\\\\ \\/ \\b\\f\\r \\u00e9 \\u20AC \\u0041 "
    "\\ud83d\\ude00 caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \\u007f\"}",
    dup_keys,
    /* A tool's result: its JSON as escaped text and as structuredContent. */
    "{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{\"content\":[{\"type\":\"text\",\"text\":"
    "\"{\\\"messages\\\":[{\\\"msgId\\\":\\\"m-1\\\",\\\"content\\\":\\\"hi\\\\n\\\"}]}\"}],"
    "\"structuredContent\":{\"messages\":[{\"msgId\":\"m-1\",\"content\":\"hi\\n\"}]}}}",
    "[]",
    "{}",
    "[\"\",{\"k\":[]},[{}]]",
};

/* Read every day under JSON_DECODE_ANY, which fleetd reads requests with. */
static const char *const scalars[] = {"\"text\"", " 12 ", "-0", "true", "false", "null", "\"\""};

static void test_everyday(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof everyday / sizeof everyday[0]; i++) {
    if (!agrees_s(everyday[i], 0))
      fail_msg("not read by the fast path: %s", everyday[i]);
    if (!agrees_s(everyday[i], JSON_DECODE_ANY))
      fail_msg("not read by the fast path with JSON_DECODE_ANY: %s", everyday[i]);
  }
  for (size_t i = 0; i < sizeof scalars / sizeof scalars[0]; i++) {
    if (!agrees_s(scalars[i], JSON_DECODE_ANY))
      fail_msg("not read by the fast path: %s", scalars[i]);
    /* Without JSON_DECODE_ANY jansson refuses a bare value. */
    assert_int_equal(agrees_s(scalars[i], 0), 0);
  }
  /* The member given twice: its first place, its last value. */
  json_t *v = fl_json_read_fast(dup_keys, strlen(dup_keys), 0);
  assert_non_null(v);
  char *s = dump(v);
  assert_string_equal(s, "{\"a\\nb\":1,\"\xc3\xa9t\xc3\xa9\":\"x\",\"z\":3,\"a\":2,\"\":\"\"}");
  fl_free(s);
  json_decref(v);
}

/* Text as big as a message gets, and every cut of it. */
static void test_long_text(void **state) {
  (void)state;
  size_t n = 256 * 1024;
  char *content = fl_malloc(n + 1);
  assert_non_null(content);
  for (size_t i = 0; i < n; i++)
    content[i] = i % 61 == 60 ? '\\' : i % 61 == 0 && i ? 'n' : (char)('a' + i % 26);
  content[n - 1] = 'x'; /* no escape left open at the end */
  content[n] = '\0';
  size_t len;
  char *line = fl_test_send_line(content, &len);
  assert_non_null(line);
  assert_int_equal(agrees(line, len, JSON_DECODE_ANY), 1);
  for (size_t cut = 0; cut < len; cut += 997)
    assert_int_equal(agrees(line, cut, JSON_DECODE_ANY), 0);
  fl_free(line);
  fl_free(content);
}

/* Left to jansson, whether it reads them or not. */
static const char *const leave[] = {
    "",
    "   ",
    "[1234567890.12345678]",
    "[-123456789.12345678]",
    "[1e3]",
    "[1E-3]",
    "[1234567890123456789]",
    "[-123456789012345678]",
    "[01]",
    "[1.]",
    "[.5]",
    "[+1]",
    "[-]",
    "[tru]",
    "[nul]",
    "[truex]",
    "[\"\\u0000\"]",
    "{\"a\\u0000\":1}",
    "[\"\\ud800\"]",
    "[\"\\udc00\"]",
    "[\"\\ud800\\u0041\"]",
    "[\"\\x\"]",
    "[\"\\u12\"]",
    "[\"\\u12G4\"]",
    "[\"tab\there\"]",
    "[\"\xc3\"]",
    "[\"\xc0\xaf\"]",
    "[\"\xed\xa0\x80\"]",
    "[\"\xf4\x90\x80\x80\"]",
    "[1 2]",
    "[1,]",
    "[,1]",
    "{\"a\"}",
    "{\"a\":}",
    "{\"a\":1,}",
    "{a:1}",
    "{\"a\" 1}",
    "[1]]",
    "[1] x",
    "{}{}",
    "\xef\xbb\xbf{}",
    "[\"unterminated",
};

static void test_left_to_jansson(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof leave / sizeof leave[0]; i++) {
    for (int any = 0; any < 2; any++) {
      size_t flags = any ? JSON_DECODE_ANY : 0;
      json_t *v = fl_json_read_fast(leave[i], strlen(leave[i]), flags);
      if (v)
        fail_msg("the fast path read what it must leave to jansson: %s", leave[i]);
      assert_int_equal(agrees_s(leave[i], flags), 0);
    }
  }
  /* A NUL byte inside a string, and outside. */
  static const char nul[] = "[\"a\0b\"]", nul2[] = "[1,\0 2]";
  assert_int_equal(agrees(nul, sizeof nul - 1, 0), 0);
  assert_int_equal(agrees(nul2, sizeof nul2 - 1, 0), 0);
  /* Flags the fast path does not know go to jansson. */
  assert_null(fl_json_read_fast("[1]", 3, JSON_REJECT_DUPLICATES));
  json_error_t err;
  json_t *dup = fl_json_loadb("{\"a\":1,\"a\":2}", 13, JSON_REJECT_DUPLICATES, &err);
  assert_null(dup);
  assert_non_null(strstr(err.text, "duplicate"));
  /* Nesting: up to the bound it is read, past it left to jansson. */
  char deep[8 * FL_JSON_READ_MAX_DEPTH];
  for (int depth = FL_JSON_READ_MAX_DEPTH - 2; depth <= FL_JSON_READ_MAX_DEPTH + 2; depth++) {
    int n = 0;
    for (int i = 0; i < depth; i++) {
      deep[n++] = i % 2 ? '[' : '{';
      if (i % 2 == 0 && i < depth - 1)
        n += sprintf(deep + n, "\"k\":");
    }
    for (int i = depth - 1; i >= 0; i--)
      deep[n++] = i % 2 ? ']' : '}';
    assert_int_equal(agrees(deep, (size_t)n, 0), depth <= FL_JSON_READ_MAX_DEPTH);
    /* Arrays alone. */
    memset(deep, '[', (size_t)depth);
    memset(deep + depth, ']', (size_t)depth);
    assert_int_equal(agrees(deep, 2 * (size_t)depth, 0), depth <= FL_JSON_READ_MAX_DEPTH);
  }
}

static int agrees_m(const char *line, size_t len, void *flags) {
  return agrees(line, len, *(size_t *)flags);
}

/* Every line made by changing, dropping or doubling one byte of one read
 * every day, with and without JSON_DECODE_ANY: whatever the fast path
 * reads, jansson reads the same way. */
static void test_corrupted_lines(void **state) {
  (void)state;
  static const unsigned char subst[] = {'"',  '\\', '{',  '}',  '[',  ']', ':', ',',  '0',
                                        '9',  '-',  'e',  '.',  'u',  'n', ' ', 0x00, 0x1f,
                                        0x7f, 0xc3, 0xa9, 0xed, 0xff, 'D', '8'};
  size_t yes = 0, tried = 0;
  for (size_t k = 0; k < sizeof everyday / sizeof everyday[0]; k++) {
    for (int any = 0; any < 2; any++) {
      size_t n = strlen(everyday[k]), t, flags = any ? JSON_DECODE_ANY : 0;
      assert_true(n + 1 < 1024);
      yes += fl_test_mutations(everyday[k], n, subst, sizeof subst, agrees_m, &flags, &t);
      tried += t;
    }
  }
  /* Some corruptions stay valid JSON (a digit for a digit, a letter in a
   * string): the fast path reads those too. */
  assert_true(yes > 0);
  assert_true(yes < tried);
}

/* Out of memory anywhere: no tree, no leak, and fl_json_loadb still gives
 * jansson's answer when memory comes back. */
static void test_out_of_memory(void **state) {
  (void)state;
  const char *line = dup_keys;
  for (long k = 0; k < 40; k++) {
    fl_alloc_fail_after(k);
    json_t *v = fl_json_read_fast(line, strlen(line), 0);
    fl_alloc_fail_after(-1);
    if (v) {
      assert_int_equal(agrees_s(line, 0), 1);
      json_decref(v);
    }
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_everyday, setup),
      cmocka_unit_test_setup(test_long_text, setup),
      cmocka_unit_test_setup(test_left_to_jansson, setup),
      cmocka_unit_test_setup(test_corrupted_lines, setup),
      cmocka_unit_test_setup(test_out_of_memory, setup),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
