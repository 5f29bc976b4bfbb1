/* test_inject_text.c — text typed into a pane is data: no byte of it can
 * act as a key, and a leading command character is neutralized visibly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka needs the four headers above first. */
#include <cmocka.h>

#include <string.h>

#include "common/error.h"
#include "common/utf8.h"
#include "gateway/inject/inject_text.h"

/* No byte of s can act as a key: no C0 but newline and tab, no DEL, no
 * C1, valid UTF-8 throughout. */
static void assert_typeable(const fl_inject_text *t) {
  const unsigned char *s = (const unsigned char *)t->buf;
  assert_true(fl_utf8_valid(t->buf, t->len));
  assert_int_equal(strlen(t->buf), t->len);
  size_t i = 0;
  while (i < t->len) {
    unsigned cp;
    size_t k = fl_utf8_next(s + i, t->len - i, &cp);
    assert_true(k > 0);
    assert_false(cp < 0x20 && cp != '\n' && cp != '\t');
    assert_false(cp >= 0x7f && cp <= 0x9f);
    i += k;
  }
}

static void test_plain_text_is_unchanged(void **state) {
  (void)state;
  fl_inject_text t;
  const char *in = "Fix the failing test in store_test.c — über ✓";
  assert_int_equal(fl_inject_text_make(in, strlen(in), NULL, &t), 0);
  assert_string_equal(t.buf, in);
  assert_int_equal(t.replaced, 0);
  assert_int_equal(t.command, 0);
  assert_false(t.multi);
  char note[256];
  fl_inject_text_note(&t, note, sizeof note);
  assert_string_equal(note, "");
  fl_inject_text_free(&t);
}

static void test_every_control_byte_becomes_a_stand_in(void **state) {
  (void)state;
  for (unsigned b = 0; b < 0x20; b++) {
    if (b == '\n' || b == '\t')
      continue;
    char in[8] = {'a', (char)b, 'z'};
    fl_inject_text t;
    assert_int_equal(fl_inject_text_make(in, 3, NULL, &t), 0);
    assert_typeable(&t);
    char want[8] = {'a', '\xe2', '\x90', (char)(0x80 + b), 'z', 0};
    assert_string_equal(t.buf, want);
    assert_int_equal(t.replaced, 1);
    assert_int_equal(t.first_at, 1);
    assert_int_equal(t.first, b);
    fl_inject_text_free(&t);
  }
}

static void test_paste_end_and_escapes_cannot_survive(void **state) {
  (void)state;
  const char in[] = "line one\n\x1b[201~\nrm -rf ~\r\x03\x04\x7f tail \xc2\x9b"
                    "2J \x9b bad";
  fl_inject_text t;
  assert_int_equal(fl_inject_text_make(in, sizeof in - 1, NULL, &t), 0);
  assert_typeable(&t);
  assert_null(strstr(t.buf, "\x1b"));
  assert_non_null(strstr(t.buf, "\xe2\x90\x9b[201~"));                    /* ␛[201~ */
  assert_non_null(strstr(t.buf, "\xe2\x90\x8d"));                         /* ␍ */
  assert_non_null(strstr(t.buf, "\xe2\x90\x83\xe2\x90\x84\xe2\x90\xa1")); /* ␃␄␡ */
  assert_int_equal(t.replaced, 7); /* ESC, CR, ^C, ^D, DEL, U+009B, 0x9b */
  assert_int_equal(t.first, 0x1b);
  assert_int_equal(t.first_at, 9);
  assert_true(t.multi);
  char note[256];
  fl_inject_text_note(&t, note, sizeof note);
  assert_non_null(strstr(note, "7 control or invalid bytes"));
  assert_non_null(strstr(note, "0x1B (ESC) at byte 9, as U+241B"));
  fl_inject_text_free(&t);
}

static void test_crlf_is_a_newline(void **state) {
  (void)state;
  fl_inject_text t;
  assert_int_equal(fl_inject_text_make("a\r\nb\r\n", 6, NULL, &t), 0);
  assert_string_equal(t.buf, "a\nb\n");
  assert_int_equal(t.replaced, 0);
  assert_true(t.multi);
  fl_inject_text_free(&t);
}

static void test_nul_bytes_are_typed_visibly(void **state) {
  (void)state;
  fl_inject_text t;
  assert_int_equal(fl_inject_text_make("a\0b", 3, NULL, &t), 0);
  assert_string_equal(t.buf, "a\xe2\x90\x80"
                             "b");
  assert_int_equal(t.len, 5);
  fl_inject_text_free(&t);
}

static void test_a_leading_command_char_is_prefixed(void **state) {
  (void)state;
  const char *cases[] = {"! touch /tmp/x", "/exit", "#remember this", "  \n/clear"};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    fl_inject_text t;
    assert_int_equal(fl_inject_text_make(cases[i], strlen(cases[i]), NULL, &t), 0);
    assert_int_equal(strncmp(t.buf, FL_INJECT_TEXT_PREFIX, strlen(FL_INJECT_TEXT_PREFIX)), 0);
    assert_string_equal(t.buf + strlen(FL_INJECT_TEXT_PREFIX), cases[i]);
    assert_true(t.command != 0);
    char note[256];
    fl_inject_text_note(&t, note, sizeof note);
    assert_non_null(strstr(note, "the leading '"));
    fl_inject_text_free(&t);
  }
  /* Not at the start, or not one of this agent's: as it is. */
  fl_inject_text t;
  assert_int_equal(fl_inject_text_make("see /etc and !x", 15, NULL, &t), 0);
  assert_string_equal(t.buf, "see /etc and !x");
  assert_true(t.multi); /* a command character anywhere: typed as a paste */
  fl_inject_text_free(&t);
  assert_int_equal(fl_inject_text_make("see etc and x", 13, NULL, &t), 0);
  assert_false(t.multi);
  fl_inject_text_free(&t);
  assert_int_equal(fl_inject_text_make("!x", 2, "/", &t), 0);
  assert_string_equal(t.buf, "!x");
  fl_inject_text_free(&t);
  assert_int_equal(fl_inject_text_make("/x", 2, "", &t), 0);
  assert_string_equal(t.buf, "/x");
  fl_inject_text_free(&t);
}

static void test_command_chars_are_checked(void **state) {
  (void)state;
  assert_true(fl_inject_text_chars_valid("!/#"));
  assert_true(fl_inject_text_chars_valid(""));
  assert_false(fl_inject_text_chars_valid("! "));
  assert_false(fl_inject_text_chars_valid("\x1b"));
  assert_false(fl_inject_text_chars_valid("("));         /* the prefix's own */
  assert_false(fl_inject_text_chars_valid("/\xc2\xa7")); /* not ASCII */
  assert_false(fl_inject_text_chars_valid("abcdefghijklmnopq"));
  assert_false(fl_inject_text_chars_valid(NULL));
}

static void test_note_fits_a_small_buffer(void **state) {
  (void)state;
  fl_inject_text t;
  assert_int_equal(fl_inject_text_make("/\x03", 2, NULL, &t), 0);
  char note[24];
  memset(note, 'x', sizeof note);
  fl_inject_text_note(&t, note, sizeof note);
  assert_int_equal(strlen(note), sizeof note - 1);
  fl_inject_text_free(&t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_plain_text_is_unchanged),
      cmocka_unit_test(test_every_control_byte_becomes_a_stand_in),
      cmocka_unit_test(test_paste_end_and_escapes_cannot_survive),
      cmocka_unit_test(test_crlf_is_a_newline),
      cmocka_unit_test(test_nul_bytes_are_typed_visibly),
      cmocka_unit_test(test_a_leading_command_char_is_prefixed),
      cmocka_unit_test(test_command_chars_are_checked),
      cmocka_unit_test(test_note_fits_a_small_buffer),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
