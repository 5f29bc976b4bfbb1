/* fleet_mcp_head.c — a client line's method and id without a JSON tree (see
 * fleet_mcp_head.h).
 *
 * A recursive descent over the bytes, bounded by FL_MCP_HEAD_MAX_DEPTH, with
 * common/json_read.h's scanning of strings and numbers (RFC 8259 as jansson
 * reads it), that refuses, rather than decides, whatever it would need to
 * decode to be sure of: exponents and long numbers (jansson refuses numbers
 * that do not fit), and escapes in the top level's keys, method and id. */
#include "clients/fleet_mcp_head.h"

#include <string.h>

#include "common/json_read.h"

static int scan_literal(fl_jscan *s, const char *word, size_t n) {
  if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n) != 0)
    return 0;
  s->p += n;
  return 1;
}

static int scan_value(fl_jscan *s, int depth);

/* A container's opening byte at s->p, at depth: 1 when it is empty (and
 * closed), 0 when members follow, -1 when it is not to be read. */
static int scan_open(fl_jscan *s, int depth, unsigned char close) {
  if (depth > FL_MCP_HEAD_MAX_DEPTH)
    return -1;
  s->p++;
  fl_jscan_ws(s);
  if (s->p < s->end && *s->p == close) {
    s->p++;
    return 1;
  }
  return 0;
}

/* An object at s->p (its '{'). At the top level (h not NULL) its method
 * and id go to h. */
static int scan_object(fl_jscan *s, int depth, fl_mcp_head *h) {
  int rc = scan_open(s, depth, '}');
  if (rc)
    return rc > 0;
  for (;;) {
    if (s->p >= s->end || *s->p != '"')
      return 0;
    const unsigned char *key = s->p + 1;
    int plain;
    if (!fl_jscan_string(s, &plain))
      return 0;
    size_t keylen = (size_t)(s->p - 1 - key);
    fl_jscan_ws(s);
    if (s->p >= s->end || *s->p != ':')
      return 0;
    s->p++;
    fl_jscan_ws(s);
    const unsigned char *v = s->p;
    if (h && !plain)
      return 0; /* an escaped key could spell "method" or "id" */
    if (h && keylen == 6 && memcmp(key, "method", 6) == 0) {
      if (s->p >= s->end || *s->p != '"' || !fl_jscan_string(s, &plain) || !plain)
        return 0;
      h->method = (const char *)v + 1;
      h->method_len = (size_t)(s->p - v) - 2;
    } else if (h && keylen == 2 && memcmp(key, "id", 2) == 0) {
      int ok = 0;
      if (s->p < s->end && *s->p == '"') {
        ok = fl_jscan_string(s, &plain) && plain;
      } else if (s->p < s->end && (*s->p == '-' || (*s->p >= '0' && *s->p <= '9'))) {
        int integer;
        /* "-0" reads as 0, which jansson writes back without the sign. */
        ok = fl_jscan_number(s, &integer) && integer &&
             !(s->p - v == 2 && v[0] == '-' && v[1] == '0');
      }
      if (!ok)
        return 0;
      h->id = (const char *)v;
      h->id_len = (size_t)(s->p - v);
    } else if (!scan_value(s, depth)) {
      return 0;
    }
    if ((rc = fl_jscan_next(s, '}')) != 0)
      return rc > 0;
  }
}

static int scan_array(fl_jscan *s, int depth) {
  int rc = scan_open(s, depth, ']');
  if (rc)
    return rc > 0;
  for (;;) {
    if (!scan_value(s, depth))
      return 0;
    if ((rc = fl_jscan_next(s, ']')) != 0)
      return rc > 0;
  }
}

/* Any value at s->p, inside a container at depth. */
static int scan_value(fl_jscan *s, int depth) {
  if (s->p >= s->end)
    return 0;
  int flag;
  switch (*s->p) {
  case '"':
    return fl_jscan_string(s, &flag);
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
    return fl_jscan_number(s, &flag);
  }
}

int fl_mcp_head_scan(const char *line, size_t len, fl_mcp_head *h) {
  if (!line || !h)
    return 0;
  memset(h, 0, sizeof *h);
  fl_jscan s = {(const unsigned char *)line, (const unsigned char *)line + len};
  fl_jscan_ws(&s);
  if (s.p >= s.end || *s.p != '{' || !scan_object(&s, 1, h)) {
    memset(h, 0, sizeof *h);
    return 0;
  }
  fl_jscan_ws(&s);
  if (s.p != s.end) {
    memset(h, 0, sizeof *h);
    return 0;
  }
  return 1;
}
