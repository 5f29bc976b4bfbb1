/* test_json_writer.c — unit tests for common/json_writer.c.
 *
 * What the writer appends must be the very bytes json_dumps(JSON_COMPACT)
 * writes for a tree of the same values in the same order: objects, arrays,
 * nesting, every integer edge, true/false/null, a NULL string as null, an
 * embedded jansson value, and strings holding every character class the
 * escaping treats apart (quotes, backslashes, every control character, '/',
 * DEL, multi-byte UTF-8). The escaping helpers agree with jansson byte for
 * byte. Failures are sticky and reported once: a string that is not UTF-8,
 * output past the cap, an allocation that fails (no leak either way). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* After the four above: cmocka.h uses them without including them. */
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/json_writer.h"

/* Generous: no test output comes near it. */
#define BIG (1u << 20)

static int setup(void **state) {
  (void)state;
  fl_alloc_init();
  return 0;
}

/* The writer's output, checked to be what jansson dumps for want. */
static void check_dump(fl_jw *w, json_t *want) {
  assert_non_null(want);
  char *got = NULL;
  size_t len = 0;
  assert_int_equal(fl_jw_take(w, &got, &len), 0);
  char *exp = json_dumps(want, JSON_COMPACT | JSON_ENCODE_ANY);
  assert_non_null(exp);
  assert_string_equal(got, exp);
  assert_int_equal(len, strlen(exp));
  fl_free(exp);
  fl_free(got);
  fl_jw_free(w);
}

static const char ctl_etc[] = "\x01\x02\x03\x04\x05\x06\x07\b\t\n\x0b\f\r\x0e\x0f"
                              "\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f"
                              " say \"hi\" \\ back\\slash a/b \x7f end";
static const char utf8[] = "h\xc3\xa9llo \xe2\x80\xa8 \xf0\x9f\x9a\x80";

static void test_values_and_nesting(void **state) {
  (void)state;
  fl_jw w;
  fl_jw_init(&w, BIG);
  fl_jw_obj_open(&w);
  fl_jw_key(&w, "s");
  fl_jw_str(&w, "plain");
  fl_jw_key(&w, "none");
  fl_jw_str(&w, NULL);
  fl_jw_key(&w, "ints");
  fl_jw_arr_open(&w);
  fl_jw_int(&w, 0);
  fl_jw_int(&w, 7);
  fl_jw_int(&w, -42);
  fl_jw_int(&w, LLONG_MAX);
  fl_jw_int(&w, LLONG_MIN);
  fl_jw_arr_close(&w);
  fl_jw_key(&w, "t");
  fl_jw_bool(&w, 1);
  fl_jw_key(&w, "f");
  fl_jw_bool(&w, 0);
  fl_jw_key(&w, "n");
  fl_jw_null(&w);
  fl_jw_key(&w, "empty");
  fl_jw_obj_open(&w);
  fl_jw_obj_close(&w);
  fl_jw_key(&w, "list");
  fl_jw_arr_open(&w);
  fl_jw_arr_open(&w);
  fl_jw_arr_close(&w);
  fl_jw_obj_open(&w);
  fl_jw_key(&w, "k");
  fl_jw_arr_open(&w);
  fl_jw_str(&w, "a");
  fl_jw_obj_open(&w);
  fl_jw_obj_close(&w);
  fl_jw_arr_close(&w);
  fl_jw_obj_close(&w);
  fl_jw_str(&w, "tail");
  fl_jw_arr_close(&w);
  fl_jw_keyn(&w, ctl_etc, strlen(ctl_etc));
  fl_jw_str(&w, ctl_etc);
  fl_jw_key(&w, "utf8");
  fl_jw_str(&w, utf8);
  fl_jw_obj_close(&w);
  json_t *want = json_pack(
      "{s:s, s:s?, s:[I, I, I, I, I], s:b, s:b, s:n, s:{}, s:[[], {s:[s, {}]}, s], s:s, s:s}", "s",
      "plain", "none", NULL, "ints", (json_int_t)0, (json_int_t)7, (json_int_t)-42,
      (json_int_t)LLONG_MAX, (json_int_t)LLONG_MIN, "t", 1, "f", 0, "n", "empty", "list", "k", "a",
      "tail", ctl_etc, ctl_etc, "utf8", utf8);
  check_dump(&w, want);
  json_decref(want);
}

static void test_bare_values_and_embedded_trees(void **state) {
  (void)state;
  fl_jw w;
  fl_jw_init(&w, BIG);
  fl_jw_str(&w, "alone");
  json_t *want = json_string("alone");
  check_dump(&w, want);
  json_decref(want);

  json_t *tree = json_loads("{\"p\":[{\"name\":\"w\\\"1\",\"groups\":[\"a\",\"b\"]}],\"x\":1.5,"
                            "\"u\":\"\\u0001\\u00e9\"}",
                            0, NULL);
  assert_non_null(tree);
  fl_jw_init(&w, BIG);
  fl_jw_arr_open(&w);
  fl_jw_int(&w, 1);
  fl_jw_json(&w, tree);
  fl_jw_json(&w, json_object_get(tree, "x"));
  fl_jw_obj_open(&w);
  fl_jw_key(&w, "in");
  fl_jw_json(&w, tree);
  fl_jw_key(&w, "after");
  fl_jw_bool(&w, 1);
  fl_jw_obj_close(&w);
  fl_jw_arr_close(&w);
  want = json_pack("[I, O, O, {s:O, s:b}]", (json_int_t)1, tree, json_object_get(tree, "x"), "in",
                   tree, "after", 1);
  check_dump(&w, want);
  json_decref(want);
  json_decref(tree);
}

/* s[0..n) escaped as jansson dumps it as a string, without the quotes,
 * into exactly the room it needs (a store past it is an ASan error), and
 * its length counted right; the string as a jansson value, for the caller
 * to compare more with (and json_decref). */
static json_t *check_escape(const char *s, size_t n) {
  json_t *js = json_string(s);
  assert_non_null(js);
  char *dumped = json_dumps(js, JSON_ENCODE_ANY);
  assert_non_null(dumped);
  size_t dn = strlen(dumped);
  char *out = malloc(dn - 2);
  assert_non_null(out);
  assert_int_equal(fl_json_escaped_len(s, n), dn - 2);
  assert_int_equal((size_t)(fl_json_escape(out, s, n) - out), dn - 2);
  assert_memory_equal(out, dumped + 1, dn - 2);
  free(out);
  fl_free(dumped);
  return js;
}

static void test_escaping_matches_jansson(void **state) {
  (void)state;
  /* Every byte below 0x80 (jansson refuses the others alone: not UTF-8),
   * then multi-byte characters. */
  char s[256];
  size_t n = 0;
  for (int c = 1; c < 0x80; c++)
    s[n++] = (char)c;
  memcpy(s + n, utf8, sizeof utf8); /* with its NUL */
  n += sizeof utf8 - 1;
  /* The dump is the escaped contents between two quotes. */
  json_decref(check_escape(s, n));
  char out[1];
  assert_int_equal(fl_json_escaped_len("", 0), 0);
  assert_ptr_equal(fl_json_escape(out, "", 0), out);
}

/* The escaping goes eight bytes at a time: a character to escape at every
 * place in and around a word, and in the tail, escapes as jansson's does. */
static void test_escaping_at_every_offset(void **state) {
  (void)state;
  static const char *const specials[] = {"\"", "\\", "\n", "\x01", "\x1f", "\x7f", "\xc3\xa9", "/"};
  for (size_t len = 1; len <= 26; len++) {
    for (size_t pos = 0; pos < len; pos++) {
      for (size_t k = 0; k < sizeof specials / sizeof specials[0]; k++) {
        char s[64];
        memset(s, 'a', len);
        size_t sl = strlen(specials[k]);
        memcpy(s + pos, specials[k], sl);
        size_t n = pos + sl > len ? pos + sl : len;
        s[n] = '\0';
        json_t *js = check_escape(s, n);
        fl_jw w;
        fl_jw_init(&w, BIG);
        fl_jw_str(&w, s);
        check_dump(&w, js);
        json_decref(js);
      }
    }
  }
}

/* Long strings of a pseudo-random mix, dense in quotes and backslashes as
 * JSON text is, with now and then a control character or UTF-8. */
static void test_escaping_long_mixes(void **state) {
  (void)state;
  static const char *const bits[] = {"\"",     "\\", "ab",   "c",        "defgh",
                                     "\"x\":", "\n", "\x02", "\xc3\xa9", "0123456789"};
  uint32_t x = 12345;
  for (int round = 0; round < 200; round++) {
    char s[2048];
    size_t n = 0, want = (size_t)round * 9 + 1;
    while (n < want) {
      x = x * 1103515245u + 12345u;
      const char *b = bits[(x >> 16) % (sizeof bits / sizeof bits[0])];
      size_t bl = strlen(b);
      memcpy(s + n, b, bl);
      n += bl;
    }
    s[n] = '\0';
    json_decref(check_escape(s, n));
  }
}

static void test_not_utf8_is_refused(void **state) {
  (void)state;
  static const char *const bad[] = {
      "\x80",             /* a continuation byte first */
      "a\xc3",            /* cut short */
      "\xc0\xaf",         /* overlong '/' */
      "\xe0\x80\xaf",     /* overlong, three bytes */
      "\xed\xa0\x80",     /* a surrogate */
      "\xf4\x90\x80\x80", /* past U+10FFFF */
      "\xc3\x28",         /* not a continuation */
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_null(json_string(bad[i])); /* jansson refuses each too */
    fl_jw w;
    fl_jw_init(&w, BIG);
    fl_jw_obj_open(&w);
    fl_jw_key(&w, "k");
    fl_jw_str(&w, bad[i]);
    fl_jw_key(&w, "later");
    fl_jw_int(&w, 1);
    fl_jw_obj_close(&w);
    char *out = (char *)1;
    size_t len = 1;
    assert_int_equal(fl_jw_take(&w, &out, &len), FL_EINVAL);
    assert_null(out);
    assert_int_equal(len, 0);
    fl_jw_free(&w);
  }
}

static void test_cap(void **state) {
  (void)state;
  fl_jw w;
  fl_jw_init(&w, 10);
  fl_jw_str(&w, "12345678"); /* 10 bytes with its quotes: just fits */
  char *out;
  size_t len;
  assert_int_equal(fl_jw_take(&w, &out, &len), 0);
  assert_string_equal(out, "\"12345678\"");
  fl_free(out);
  fl_jw_free(&w);

  fl_jw_init(&w, 10);
  fl_jw_arr_open(&w);
  fl_jw_str(&w, "12345678");
  fl_jw_arr_close(&w);
  assert_int_equal(fl_jw_take(&w, &out, &len), FL_ETOOBIG);
  assert_null(out);
  fl_jw_free(&w);

  /* Growing past the first buffer, up to a cap that is not a power of 2. */
  fl_jw_init(&w, 50000);
  fl_jw_arr_open(&w);
  for (int i = 0; i < 30000; i++)
    fl_jw_int(&w, 9);
  assert_int_equal(fl_jw_take(&w, &out, &len), FL_ETOOBIG);
  fl_jw_free(&w);
  fl_jw_init(&w, 50000);
  fl_jw_arr_open(&w);
  for (int i = 0; i < 20000; i++)
    fl_jw_int(&w, 9);
  fl_jw_arr_close(&w);
  assert_int_equal(fl_jw_take(&w, &out, &len), 0);
  assert_int_equal(len, 40001);
  fl_free(out);
  fl_jw_free(&w);
}

static void test_empty_and_oom(void **state) {
  (void)state;
  fl_jw w;
  fl_jw_init(&w, BIG);
  char *out;
  size_t len;
  assert_int_equal(fl_jw_take(&w, &out, &len), FL_EINVAL);
  fl_jw_free(&w);
  fl_jw_free(NULL);

  for (long k = 0; k < 2; k++) {
    fl_jw_init(&w, BIG);
    fl_alloc_fail_after(k);
    fl_jw_arr_open(&w);
    for (int i = 0; i < 5000; i++) /* past the first buffer: a second allocation */
      fl_jw_str(&w, "x");
    fl_jw_arr_close(&w);
    fl_alloc_fail_after(-1);
    assert_int_equal(fl_jw_take(&w, &out, &len), FL_ENOMEM);
    assert_null(out);
    fl_jw_free(&w);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_values_and_nesting),
      cmocka_unit_test(test_bare_values_and_embedded_trees),
      cmocka_unit_test(test_escaping_matches_jansson),
      cmocka_unit_test(test_escaping_at_every_offset),
      cmocka_unit_test(test_escaping_long_mixes),
      cmocka_unit_test(test_not_utf8_is_refused),
      cmocka_unit_test(test_cap),
      cmocka_unit_test(test_empty_and_oom),
  };
  return cmocka_run_group_tests_name("json_writer", tests, setup, NULL);
}
