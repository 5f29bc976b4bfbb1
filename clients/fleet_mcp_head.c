/* fleet_mcp_head.c — a client line's method and id without a JSON tree (see
 * fleet_mcp_head.h).
 *
 * A recursive descent over the bytes, bounded by FL_MCP_HEAD_MAX_DEPTH, that
 * follows RFC 8259 as jansson reads it (its whitespace, its UTF-8 rules
 * through common/utf8.h, its refusal of \u0000 and of unpaired surrogates)
 * and refuses, rather than decides, whatever it would need to decode to be
 * sure of: exponents and long numbers (jansson refuses numbers that do not
 * fit), and escapes in the top level's keys, method and id. */
#include "clients/fleet_mcp_head.h"

#include <string.h>

#include "common/utf8.h"

/* Longest number accepted, sign and point included: any integer of 18
 * characters fits a long long, any real of 18 characters a double. */
#define FL_MCP_HEAD_MAX_NUM 18

typedef struct scan {
  const unsigned char *p, *end;
} scan;

static void skip_ws(scan *s) {
  while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
    s->p++;
}

static int hex4(const unsigned char *p, const unsigned char *end, unsigned *v) {
  if (end - p < 4)
    return 0;
  *v = 0;
  for (int i = 0; i < 4; i++) {
    unsigned c = p[i], d;
    if (c >= '0' && c <= '9')
      d = c - '0';
    else if (c >= 'a' && c <= 'f')
      d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F')
      d = c - 'A' + 10;
    else
      return 0;
    *v = *v << 4 | d;
  }
  return 1;
}

/* A \u escape at s->p (the backslash): one code point, or a surrogate pair. */
static int scan_u(scan *s) {
  unsigned v, w;
  if (!hex4(s->p + 2, s->end, &v))
    return 0;
  s->p += 6;
  if (v == 0 || (v >= 0xDC00 && v <= 0xDFFF))
    return 0;
  if (v < 0xD800 || v > 0xDBFF)
    return 1;
  if (s->end - s->p < 6 || s->p[0] != '\\' || s->p[1] != 'u' || !hex4(s->p + 2, s->end, &w) ||
      w < 0xDC00 || w > 0xDFFF)
    return 0;
  s->p += 6;
  return 1;
}

/* A string at s->p (its opening quote); *plain is 1 when it has no escape. */
static int scan_string(scan *s, int *plain) {
  *plain = 1;
  s->p++;
  while (s->p < s->end) {
    unsigned char c = *s->p;
    if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
      s->p++;
      continue;
    }
    if (c == '"') {
      s->p++;
      return 1;
    }
    if (c < 0x20)
      return 0;
    if (c == '\\') {
      *plain = 0;
      if (s->end - s->p < 2)
        return 0;
      switch (s->p[1]) {
      case '"':
      case '\\':
      case '/':
      case 'b':
      case 'f':
      case 'n':
      case 'r':
      case 't':
        s->p += 2;
        continue;
      case 'u':
        if (!scan_u(s))
          return 0;
        continue;
      default:
        return 0;
      }
    }
    unsigned cp;
    size_t n = fl_utf8_next(s->p, (size_t)(s->end - s->p), &cp);
    if (n == 0)
      return 0;
    s->p += n;
  }
  return 0;
}

static int is_digit(const scan *s) { return s->p < s->end && *s->p >= '0' && *s->p <= '9'; }

/* A number at s->p; *integer is 1 when it has no fraction. */
static int scan_number(scan *s, int *integer) {
  const unsigned char *start = s->p;
  *integer = 1;
  if (*s->p == '-')
    s->p++;
  if (!is_digit(s))
    return 0;
  if (*s->p == '0')
    s->p++;
  else
    while (is_digit(s))
      s->p++;
  if (s->p < s->end && *s->p == '.') {
    s->p++;
    *integer = 0;
    if (!is_digit(s))
      return 0;
    while (is_digit(s))
      s->p++;
  }
  if (s->p < s->end && (*s->p == 'e' || *s->p == 'E'))
    return 0; /* left to jansson, which refuses what overflows */
  return s->p - start <= FL_MCP_HEAD_MAX_NUM;
}

static int scan_literal(scan *s, const char *word, size_t n) {
  if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n) != 0)
    return 0;
  s->p += n;
  return 1;
}

static int scan_value(scan *s, int depth);

/* A container's opening byte at s->p, at depth: 1 when it is empty (and
 * closed), 0 when members follow, -1 when it is not to be read. */
static int scan_open(scan *s, int depth, unsigned char close) {
  if (depth > FL_MCP_HEAD_MAX_DEPTH)
    return -1;
  s->p++;
  skip_ws(s);
  if (s->p < s->end && *s->p == close) {
    s->p++;
    return 1;
  }
  return 0;
}

/* After a member: 1 at the container's closing byte (passed), 0 at a comma
 * (passed, another member follows), -1 for anything else. */
static int scan_next(scan *s, unsigned char close) {
  skip_ws(s);
  if (s->p >= s->end)
    return -1;
  if (*s->p == close) {
    s->p++;
    return 1;
  }
  if (*s->p != ',')
    return -1;
  s->p++;
  skip_ws(s);
  return 0;
}

/* An object at s->p (its '{'). At the top level (h not NULL) its method
 * and id go to h. */
static int scan_object(scan *s, int depth, fl_mcp_head *h) {
  int rc = scan_open(s, depth, '}');
  if (rc)
    return rc > 0;
  for (;;) {
    if (s->p >= s->end || *s->p != '"')
      return 0;
    const unsigned char *key = s->p + 1;
    int plain;
    if (!scan_string(s, &plain))
      return 0;
    size_t keylen = (size_t)(s->p - 1 - key);
    skip_ws(s);
    if (s->p >= s->end || *s->p != ':')
      return 0;
    s->p++;
    skip_ws(s);
    const unsigned char *v = s->p;
    if (h && !plain)
      return 0; /* an escaped key could spell "method" or "id" */
    if (h && keylen == 6 && memcmp(key, "method", 6) == 0) {
      if (s->p >= s->end || *s->p != '"' || !scan_string(s, &plain) || !plain)
        return 0;
      h->method = (const char *)v + 1;
      h->method_len = (size_t)(s->p - v) - 2;
    } else if (h && keylen == 2 && memcmp(key, "id", 2) == 0) {
      int ok = 0;
      if (s->p < s->end && *s->p == '"') {
        ok = scan_string(s, &plain) && plain;
      } else if (s->p < s->end && (*s->p == '-' || (*s->p >= '0' && *s->p <= '9'))) {
        int integer;
        /* "-0" reads as 0, which jansson writes back without the sign. */
        ok = scan_number(s, &integer) && integer && !(s->p - v == 2 && v[0] == '-' && v[1] == '0');
      }
      if (!ok)
        return 0;
      h->id = (const char *)v;
      h->id_len = (size_t)(s->p - v);
    } else if (!scan_value(s, depth)) {
      return 0;
    }
    if ((rc = scan_next(s, '}')) != 0)
      return rc > 0;
  }
}

static int scan_array(scan *s, int depth) {
  int rc = scan_open(s, depth, ']');
  if (rc)
    return rc > 0;
  for (;;) {
    if (!scan_value(s, depth))
      return 0;
    if ((rc = scan_next(s, ']')) != 0)
      return rc > 0;
  }
}

/* Any value at s->p, inside a container at depth. */
static int scan_value(scan *s, int depth) {
  if (s->p >= s->end)
    return 0;
  int flag;
  switch (*s->p) {
  case '"':
    return scan_string(s, &flag);
  case '{':
    return scan_object(s, depth + 1, NULL);
  case '[':
    return scan_array(s, depth + 1);
  case 't':
    return scan_literal(s, "true", 4);
  case 'f':
    return scan_literal(s, "false", 5);
  case 'n':
    return scan_literal(s, "null", 4);
  default:
    return scan_number(s, &flag);
  }
}

int fl_mcp_head_scan(const char *line, size_t len, fl_mcp_head *h) {
  if (!line || !h)
    return 0;
  memset(h, 0, sizeof *h);
  scan s = {(const unsigned char *)line, (const unsigned char *)line + len};
  skip_ws(&s);
  if (s.p >= s.end || *s.p != '{' || !scan_object(&s, 1, h)) {
    memset(h, 0, sizeof *h);
    return 0;
  }
  skip_ws(&s);
  if (s.p != s.end) {
    memset(h, 0, sizeof *h);
    return 0;
  }
  return 1;
}
