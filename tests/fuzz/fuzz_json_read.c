/* fuzz_json_read.c — fuzz target for fleet's JSON reader against jansson.
 *
 * The input is any bytes. They are read with and without JSON_DECODE_ANY
 * by the fast path (fl_json_read_fast), by fl_json_loadb and by jansson's
 * json_loadb. Invariants, checked on every input (a violation aborts):
 *   - a tree from the fast path means jansson reads the same tree: equal
 *     (json_equal) and written back compact to the same bytes, so the same
 *     types and the same member order;
 *   - fl_json_loadb answers as jansson: the same tree, or no tree, and its
 *     json_error_t as jansson leaves it (text, source, line, column,
 *     position), after a success too;
 *   - nothing leaks (the sanitizers' leak check at exit).
 * Built as a libFuzzer target with -DFLEET_FUZZ=ON (clang), and always as a
 * replay test that runs the seed corpus plus deterministic mutations. */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json_read.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fz_fail(const char *why, const uint8_t *data, size_t size) {
  fprintf(stderr, "fuzz_json_read: invariant broken: %s: %.*s\n", why,
          (int)(size > 300 ? 300 : size), (const char *)data);
  abort();
}

/* Both trees are there and the same to the byte. */
static void fz_same(const json_t *a, const json_t *b, const char *why, const uint8_t *data,
                    size_t size) {
  if (!a || !b || !json_equal(a, b))
    fz_fail(why, data, size);
  char *x = json_dumps(a, JSON_COMPACT | JSON_ENCODE_ANY);
  char *y = json_dumps(b, JSON_COMPACT | JSON_ENCODE_ANY);
  int same = x && y && strcmp(x, y) == 0;
  free(x);
  free(y);
  if (!same)
    fz_fail(why, data, size);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *text = (const char *)data;
  for (int any = 0; any < 2; any++) {
    size_t flags = any ? JSON_DECODE_ANY : 0;
    json_error_t jerr, ferr;
    json_t *slow = json_loadb(text, size, flags, &jerr);
    json_t *fast = fl_json_read_fast(text, size, flags);
    json_t *both = fl_json_loadb(text, size, flags, &ferr);
    if (fast)
      fz_same(fast, slow, "the fast path's tree is not jansson's", data, size);
    if (slow)
      fz_same(both, slow, "fl_json_loadb's tree is not jansson's", data, size);
    else if (both)
      fz_fail("fl_json_loadb reads what jansson refuses", data, size);
    if (strcmp(ferr.text, jerr.text) != 0 || strcmp(ferr.source, jerr.source) != 0 ||
        ferr.line != jerr.line || ferr.column != jerr.column || ferr.position != jerr.position)
      fz_fail("fl_json_loadb leaves its error otherwise than jansson", data, size);
    json_decref(slow);
    json_decref(fast);
    json_decref(both);
  }
  return 0;
}
