/* json_read.c — JSON text into a jansson tree in one pass (see json_read.h).
 *
 * A recursive descent over the bytes, bounded by FL_JSON_READ_MAX_DEPTH.
 * Each value is checked as jansson checks it and built with the calls
 * jansson's own reader makes (json_object_setn_new_nocheck, so a key given
 * twice keeps its first place and its last value), so the tree is the one
 * json_loadb would build. Whatever needs a judgement this file does not
 * make is a "not sure", and fl_json_loadb asks jansson. */
#include "common/json_read.h"

#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/utf8.h"

/* ---- scanning ---- */

void fl_jscan_ws(fl_jscan *s) {
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

/* A \u escape at p (its backslash), a code point or a surrogate pair: the
 * code point into *cp and the escape's length (6 or 12), or 0 when jansson
 * would refuse it or it is \u0000. */
static size_t read_u(const unsigned char *p, const unsigned char *end, unsigned *cp) {
  unsigned v, w;
  if (!hex4(p + 2, end, &v) || v == 0 || (v >= 0xDC00 && v <= 0xDFFF))
    return 0;
  if (v < 0xD800 || v > 0xDBFF) {
    *cp = v;
    return 6;
  }
  p += 6;
  if (end - p < 6 || p[0] != '\\' || p[1] != 'u' || !hex4(p + 2, end, &w) || w < 0xDC00 ||
      w > 0xDFFF)
    return 0;
  *cp = 0x10000 + ((v - 0xD800) << 10) + (w - 0xDC00);
  return 12;
}

int fl_jscan_string(fl_jscan *s, int *plain) {
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
      case 'u': {
        unsigned cp;
        size_t n = read_u(s->p, s->end, &cp);
        if (n == 0)
          return 0;
        s->p += n;
        continue;
      }
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

static int is_digit(const fl_jscan *s) { return s->p < s->end && *s->p >= '0' && *s->p <= '9'; }

int fl_jscan_number(fl_jscan *s, int *integer) {
  const unsigned char *start = s->p;
  *integer = 1;
  if (s->p < s->end && *s->p == '-')
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
  return s->p - start <= FL_JSON_READ_MAX_NUM;
}

int fl_jscan_next(fl_jscan *s, unsigned char close) {
  fl_jscan_ws(s);
  if (s->p >= s->end)
    return -1;
  if (*s->p == close) {
    s->p++;
    return 1;
  }
  if (*s->p != ',')
    return -1;
  s->p++;
  fl_jscan_ws(s);
  return 0;
}

/* ---- building ---- */

/* Writes code point cp (valid, not a surrogate) as UTF-8 at out. */
static size_t put_utf8(unsigned cp, unsigned char *out) {
  if (cp < 0x80) {
    out[0] = (unsigned char)cp;
    return 1;
  }
  if (cp < 0x800) {
    out[0] = (unsigned char)(0xC0 | cp >> 6);
    out[1] = (unsigned char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = (unsigned char)(0xE0 | cp >> 12);
    out[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
    out[2] = (unsigned char)(0x80 | (cp & 0x3F));
    return 3;
  }
  out[0] = (unsigned char)(0xF0 | cp >> 18);
  out[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
  out[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
  out[3] = (unsigned char)(0x80 | (cp & 0x3F));
  return 4;
}

/* Decodes the escapes of a string already checked by fl_jscan_string,
 * raw[0..n) between its quotes, into out (at least n bytes: no escape
 * decodes longer than it is written). Returns the decoded length. */
static size_t unescape(const unsigned char *raw, size_t n, unsigned char *out) {
  const unsigned char *p = raw, *end = raw + n;
  size_t o = 0;
  while (p < end) {
    const unsigned char *bs = memchr(p, '\\', (size_t)(end - p));
    size_t run = (size_t)((bs ? bs : end) - p);
    memcpy(out + o, p, run);
    o += run;
    if (!bs)
      break;
    p = bs;
    unsigned char c = p[1];
    switch (c) {
    case 'b':
      out[o++] = '\b';
      break;
    case 'f':
      out[o++] = '\f';
      break;
    case 'n':
      out[o++] = '\n';
      break;
    case 'r':
      out[o++] = '\r';
      break;
    case 't':
      out[o++] = '\t';
      break;
    case 'u': {
      unsigned cp = 0;
      size_t len = read_u(p, end, &cp);
      if (len == 0) /* not after fl_jscan_string; never loop on it */
        return o;
      o += put_utf8(cp, out + o);
      p += len;
      continue;
    }
    default: /* '"', '\\', '/' */
      out[o++] = c;
      break;
    }
    p += 2;
  }
  return o;
}

typedef struct reader {
  fl_jscan s;
  unsigned char *buf; /* decoded strings with escapes */
  size_t cap;
} reader;

/* The string at r->s.p: its bytes into *out and *len (in r->buf when it
 * had escapes). 0 when not sure. */
static int read_string(reader *r, const char **out, size_t *len) {
  const unsigned char *start = r->s.p + 1;
  int plain;
  if (!fl_jscan_string(&r->s, &plain))
    return 0;
  size_t n = (size_t)(r->s.p - 1 - start);
  if (plain) {
    *out = (const char *)start;
    *len = n;
    return 1;
  }
  if (n > r->cap) {
    unsigned char *b = fl_realloc(r->buf, n);
    if (!b)
      return 0;
    r->buf = b;
    r->cap = n;
  }
  *len = unescape(start, n, r->buf);
  *out = (const char *)r->buf;
  return 1;
}

static json_t *read_value(reader *r, int depth);

static json_t *read_object(reader *r, int depth) {
  json_t *obj = json_object();
  if (!obj)
    return NULL;
  r->s.p++;
  fl_jscan_ws(&r->s);
  if (r->s.p < r->s.end && *r->s.p == '}') {
    r->s.p++;
    return obj;
  }
  for (;;) {
    const char *key;
    size_t keylen;
    if (r->s.p >= r->s.end || *r->s.p != '"' || !read_string(r, &key, &keylen))
      goto fail;
    /* The key may sit in r->buf, which the value's strings reuse. */
    char stack[64], *k = keylen < sizeof stack ? stack : fl_malloc(keylen + 1);
    if (!k)
      goto fail;
    memcpy(k, key, keylen);
    fl_jscan_ws(&r->s);
    json_t *v = NULL;
    if (r->s.p < r->s.end && *r->s.p == ':') {
      r->s.p++;
      fl_jscan_ws(&r->s);
      v = read_value(r, depth);
    }
    int rc = v ? json_object_setn_new_nocheck(obj, k, keylen, v) : -1;
    if (k != stack)
      fl_free(k);
    if (rc)
      goto fail;
    int end = fl_jscan_next(&r->s, '}');
    if (end > 0)
      return obj;
    if (end < 0)
      goto fail;
  }
fail:
  json_decref(obj);
  return NULL;
}

static json_t *read_array(reader *r, int depth) {
  json_t *arr = json_array();
  if (!arr)
    return NULL;
  r->s.p++;
  fl_jscan_ws(&r->s);
  if (r->s.p < r->s.end && *r->s.p == ']') {
    r->s.p++;
    return arr;
  }
  for (;;) {
    json_t *v = read_value(r, depth);
    if (!v || json_array_append_new(arr, v))
      break;
    int end = fl_jscan_next(&r->s, ']');
    if (end > 0)
      return arr;
    if (end < 0)
      break;
  }
  json_decref(arr);
  return NULL;
}

static json_t *read_literal(reader *r, const char *word, size_t n, json_t *v) {
  if ((size_t)(r->s.end - r->s.p) < n || memcmp(r->s.p, word, n) != 0)
    return NULL;
  r->s.p += n;
  return v;
}

/* A number: an integer by its digits, a real by strtod as jansson reads it
 * (in the C locale; under a locale whose decimal point is not '.', strtod
 * stops short and the text goes to jansson, which converts it first). */
static json_t *read_number(reader *r) {
  const unsigned char *p = r->s.p;
  int integer;
  if (!fl_jscan_number(&r->s, &integer))
    return NULL;
  if (!integer) {
    char tok[FL_JSON_READ_MAX_NUM + 1], *end;
    size_t n = (size_t)(r->s.p - p);
    memcpy(tok, p, n);
    tok[n] = '\0';
    double d = strtod(tok, &end);
    return end == tok + n ? json_real(d) : NULL;
  }
  int neg = *p == '-';
  json_int_t v = 0;
  for (p += neg; p < r->s.p; p++)
    v = v * 10 + (*p - '0');
  return json_integer(neg ? -v : v);
}

/* A value at r->s.p, inside a container at depth (the top level is 0). */
static json_t *read_value(reader *r, int depth) {
  if (r->s.p >= r->s.end)
    return NULL;
  switch (*r->s.p) {
  case '"': {
    const char *v;
    size_t n;
    return read_string(r, &v, &n) ? json_stringn_nocheck(v, n) : NULL;
  }
  case '{':
    return depth < FL_JSON_READ_MAX_DEPTH ? read_object(r, depth + 1) : NULL;
  case '[':
    return depth < FL_JSON_READ_MAX_DEPTH ? read_array(r, depth + 1) : NULL;
  case 't':
    return read_literal(r, "true", 4, json_true());
  case 'f':
    return read_literal(r, "false", 5, json_false());
  case 'n':
    return read_literal(r, "null", 4, json_null());
  default:
    return read_number(r);
  }
}

json_t *fl_json_read_fast(const char *buf, size_t len, size_t flags) {
  if (!buf || (flags & ~(size_t)JSON_DECODE_ANY))
    return NULL;
  reader r = {.s = {(const unsigned char *)buf, (const unsigned char *)buf + len}};
  fl_jscan_ws(&r.s);
  if (r.s.p >= r.s.end)
    return NULL;
  if (!(flags & JSON_DECODE_ANY) && *r.s.p != '{' && *r.s.p != '[')
    return NULL;
  json_t *v = read_value(&r, 0);
  fl_free(r.buf);
  if (v) {
    fl_jscan_ws(&r.s);
    if (r.s.p != r.s.end) {
      json_decref(v);
      v = NULL;
    }
  }
  return v;
}

json_t *fl_json_loadb(const char *buf, size_t len, size_t flags, json_error_t *err) {
  json_t *v = fl_json_read_fast(buf, len, flags);
  if (v) {
    if (err) { /* as json_loadb leaves it after a success */
      memset(err, 0, sizeof *err);
      err->line = err->column = -1;
      err->position = (int)len; /* jansson keeps it after a success too: all of it read */
      memcpy(err->source, "<buffer>", sizeof "<buffer>");
    }
    return v;
  }
  return json_loadb(buf, len, flags, err);
}
