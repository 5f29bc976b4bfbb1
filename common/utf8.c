/* utf8.c — see utf8.h. */
#include "common/utf8.h"

size_t fl_utf8_next(const unsigned char *s, size_t n, unsigned *cp) {
  if (n == 0) {
    *cp = 0;
    return 0;
  }
  unsigned c = s[0];
  *cp = c;
  if (c < 0x80)
    return 1;
  size_t k;
  unsigned v;
  if (c >= 0xc2 && c <= 0xdf) {
    k = 1;
    v = c & 0x1f;
  } else if (c >= 0xe0 && c <= 0xef) {
    k = 2;
    v = c & 0x0f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    k = 3;
    v = c & 0x07;
  } else {
    return 0; /* a continuation byte first, an overlong 0xc0/0xc1, or past 0xf4 */
  }
  if (k > n - 1)
    return 0;
  for (size_t j = 1; j <= k; j++) {
    if ((s[j] & 0xc0) != 0x80)
      return 0;
    v = (v << 6) | (s[j] & 0x3f);
  }
  if ((k == 2 && v < 0x800) || (k == 3 && (v < 0x10000 || v > 0x10ffff)) ||
      (v >= 0xd800 && v <= 0xdfff))
    return 0;
  *cp = v;
  return k + 1;
}

int fl_utf8_valid(const char *s, size_t n) {
  const unsigned char *u = (const unsigned char *)s;
  size_t i = 0;
  while (i < n) {
    unsigned cp;
    size_t k = fl_utf8_next(u + i, n - i, &cp);
    if (k == 0)
      return 0;
    i += k;
  }
  return 1;
}

size_t fl_utf8_prefix(const char *s, size_t n, size_t max) {
  const unsigned char *u = (const unsigned char *)s;
  size_t keep = 0;
  while (keep < n) {
    unsigned cp;
    size_t step = fl_utf8_next(u + keep, n - keep, &cp);
    if (step == 0 || keep + step > max)
      break;
    keep += step;
  }
  return keep;
}
