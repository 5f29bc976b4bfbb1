/* test_nudge_gate.c — the config keys of the nudge gate: nudge.prompt (a
 * POSIX ERE for the cursor line of an idle agent with an empty input) and
 * nudge.quietMs, their defaults, their validation, and which lines the
 * default prompt takes for an empty input. */
#include <regex.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/error.h"
#include "gateway/config/config.h"

static int parse(fl_config *cfg, const char *json, char *err, size_t errlen) {
  fl_config_defaults(cfg);
  return fl_config_parse(cfg, json, strlen(json), "mem.json", err, errlen);
}

static void test_defaults(void **state) {
  (void)state;
  fl_config cfg;
  fl_config_defaults(&cfg);
  assert_int_equal(cfg.gw.nudge.quiet_ms, 500);
  assert_true(cfg.gw.nudge.prompt[0] != '\0');
  regex_t re;
  assert_int_equal(regcomp(&re, cfg.gw.nudge.prompt, REG_EXTENDED | REG_NOSUB), 0);
  regfree(&re);
}

/* The default prompt takes Claude Code's empty input line, with or without
 * its box, and nothing with text after the prompt, nor a shell prompt. */
static void test_default_prompt_lines(void **state) {
  (void)state;
  fl_config cfg;
  fl_config_defaults(&cfg);
  regex_t re;
  assert_int_equal(regcomp(&re, cfg.gw.nudge.prompt, REG_EXTENDED | REG_NOSUB), 0);
  static const char *const empty[] = {
      ">",
      "> ",
      "  >   ",
      "\xe2\x94\x82 >                                        \xe2\x94\x82",
      "\xe2\x94\x82 > ",
      "| > |",
      ">\xc2\xa0",
      "\xe2\x9d\xaf ",
  };
  static const char *const not_empty[] = {
      "",
      "$ ",
      "user@box:~$ ",
      "> hello",
      "\xe2\x94\x82 > fix the tests                          \xe2\x94\x82",
      ">> ",
      "\xe2\x9c\xbb Thinking\xe2\x80\xa6 (esc to interrupt)",
  };
  for (size_t i = 0; i < sizeof empty / sizeof empty[0]; i++)
    assert_int_equal(regexec(&re, empty[i], 0, NULL, 0), 0);
  for (size_t i = 0; i < sizeof not_empty / sizeof not_empty[0]; i++)
    assert_int_not_equal(regexec(&re, not_empty[i], 0, NULL, 0), 0);
  regfree(&re);
}

static void test_keys_set(void **state) {
  (void)state;
  fl_config cfg;
  char err[512] = "";
  assert_int_equal(
      parse(&cfg, "{\"nudge\": {\"prompt\": \"^\\\\$ $\", \"quietMs\": 0}}", err, sizeof err), 0);
  assert_string_equal(cfg.gw.nudge.prompt, "^\\$ $");
  assert_int_equal(cfg.gw.nudge.quiet_ms, 0);
  /* "" turns the prompt test off. */
  assert_int_equal(
      parse(&cfg, "{\"nudge\": {\"prompt\": \"\", \"quietMs\": 10000}}", err, sizeof err), 0);
  assert_string_equal(cfg.gw.nudge.prompt, "");
  assert_int_equal(cfg.gw.nudge.quiet_ms, 10000);
}

static void test_bad_values(void **state) {
  (void)state;
  static const struct {
    const char *json, *want;
  } cases[] = {
      {"{\"nudge\": {\"prompt\": \"(\"}}",
       "mem.json: key \"nudge.prompt\" is not a valid POSIX extended regular expression ("},
      {"{\"nudge\": {\"prompt\": \"[a-\"}}",
       "mem.json: key \"nudge.prompt\" is not a valid POSIX extended regular expression ("},
      {"{\"nudge\": {\"prompt\": 3}}", "mem.json: key \"nudge.prompt\" must be a string, not a "
                                       "number"},
      {"{\"nudge\": {\"quietMs\": 10001}}",
       "mem.json: key \"nudge.quietMs\" must be a whole number from 0 to 10000"},
      {"{\"nudge\": {\"quietMs\": \"500\"}}",
       "mem.json: key \"nudge.quietMs\" must be a whole number from 0 to 10000"},
      {"{\"nudge\": {\"quietMs\": -1}}",
       "mem.json: key \"nudge.quietMs\" must be a whole number from 0 to 10000"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    fl_config cfg;
    char err[512] = "";
    assert_int_equal(parse(&cfg, cases[i].json, err, sizeof err), FL_ECONFIG);
    if (!strstr(err, cases[i].want))
      fail_msg("%s: got \"%s\", want \"%s\"", cases[i].json, err, cases[i].want);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_defaults),
      cmocka_unit_test(test_default_prompt_lines),
      cmocka_unit_test(test_keys_set),
      cmocka_unit_test(test_bad_values),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
