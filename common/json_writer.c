/* json_writer.c — JSON appended to a buffer with jansson's compact bytes
 * (see json_writer.h). */
#include "common/json_writer.h"

#include <string.h>

#include "common/alloc.h"
#include "common/error.h"

/* The first buffer: a small result fits; a big one doubles from here. */
#define FL_JW_FIRST_CAP 4096u

/* Extra bytes each byte takes in a JSON string: 1 for a short escape
 * ("\\\"", "\\n", ...), 5 for \u00XX, 0 for a byte that goes as it is. */
static const unsigned char fl_json_extra[256] = {
    5, 5, 5, 5, 5, 5, 5, 5, 1, 1, 1, 5, 1, 1, 5, 5, /* 0x00: \b \t \n, \f \r */
    5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, /* 0x10 */
    0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x20: '"' */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x30 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x40 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, /* 0x50: '\\' */
};

size_t fl_json_escaped_len(const char *s, size_t n) {
  size_t e = n;
  for (size_t i = 0; i < n; i++)
    e += fl_json_extra[(unsigned char)s[i]];
  return e;
}

char *fl_json_escape(char *o, const char *s, size_t n) {
  static const char hex[] = "0123456789ABCDEF";
  size_t run = 0; /* s[run..i) goes out as it is, in one copy */
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (!fl_json_extra[c])
      continue;
    memcpy(o, s + run, i - run);
    o += i - run;
    run = i + 1;
    *o++ = '\\';
    switch (c) {
    case '"':
    case '\\':
      *o++ = (char)c;
      break;
    case '\b':
      *o++ = 'b';
      break;
    case '\f':
      *o++ = 'f';
      break;
    case '\n':
      *o++ = 'n';
      break;
    case '\r':
      *o++ = 'r';
      break;
    case '\t':
      *o++ = 't';
      break;
    default:
      memcpy(o, "u00", 3);
      o[3] = hex[c >> 4];
      o[4] = hex[c & 0xf];
      o += 5;
      break;
    }
  }
  memcpy(o, s + run, n - run);
  return o + (n - run);
}

/* 1 if s[0..n) is UTF-8 as jansson accepts it: no overlong forms, no
 * surrogates, nothing past U+10FFFF. */
static int fl_utf8_ok(const unsigned char *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    unsigned c = s[i];
    if (c < 0x80) {
      i++;
      continue;
    }
    size_t k;
    unsigned cp;
    if (c >= 0xc2 && c <= 0xdf) {
      k = 1;
      cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
      k = 2;
      cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      k = 3;
      cp = c & 0x07;
    } else {
      return 0; /* a continuation byte first, an overlong 0xc0/0xc1, or past 0xf4 */
    }
    if (k > n - i - 1)
      return 0;
    for (size_t j = 1; j <= k; j++) {
      if ((s[i + j] & 0xc0) != 0x80)
        return 0;
      cp = (cp << 6) | (s[i + j] & 0x3f);
    }
    if ((k == 2 && cp < 0x800) || (k == 3 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff))
      return 0;
    i += k + 1;
  }
  return 1;
}

void fl_jw_init(fl_jw *w, size_t max) {
  memset(w, 0, sizeof *w);
  w->max = max;
}

void fl_jw_free(fl_jw *w) {
  if (!w)
    return;
  fl_free(w->buf);
  fl_jw_init(w, w->max);
}

/* Room for n more bytes (and the final NUL): 1, or 0 with w->err set. */
static int fl_jw_room(fl_jw *w, size_t n) {
  if (w->err)
    return 0;
  if (n > w->max - w->len) {
    w->err = FL_ETOOBIG;
    return 0;
  }
  if (w->len + n < w->cap)
    return 1;
  size_t cap = w->cap ? w->cap : FL_JW_FIRST_CAP;
  while (cap <= w->len + n && cap <= w->max)
    cap *= 2;
  if (cap > w->max + 1)
    cap = w->max + 1;
  char *b = fl_realloc(w->buf, cap);
  if (!b) {
    w->err = FL_ENOMEM;
    return 0;
  }
  w->buf = b;
  w->cap = cap;
  return 1;
}

static void fl_jw_put(fl_jw *w, const char *s, size_t n) {
  if (!fl_jw_room(w, n))
    return;
  memcpy(w->buf + w->len, s, n);
  w->len += n;
}

/* Before a key or a value: the ',' after the one before it. */
static void fl_jw_sep(fl_jw *w) {
  if (w->comma)
    fl_jw_put(w, ",", 1);
}

static void fl_jw_string(fl_jw *w, const char *s) {
  size_t n = strlen(s);
  if (w->err)
    return;
  if (!fl_utf8_ok((const unsigned char *)s, n)) {
    w->err = FL_EINVAL;
    return;
  }
  size_t e = fl_json_escaped_len(s, n);
  if (!fl_jw_room(w, e + 2))
    return;
  char *o = w->buf + w->len;
  *o++ = '"';
  o = fl_json_escape(o, s, n);
  *o++ = '"';
  w->len = (size_t)(o - w->buf);
}

void fl_jw_obj_open(fl_jw *w) {
  fl_jw_sep(w);
  fl_jw_put(w, "{", 1);
  w->comma = 0;
}

void fl_jw_obj_close(fl_jw *w) {
  fl_jw_put(w, "}", 1);
  w->comma = 1;
}

void fl_jw_arr_open(fl_jw *w) {
  fl_jw_sep(w);
  fl_jw_put(w, "[", 1);
  w->comma = 0;
}

void fl_jw_arr_close(fl_jw *w) {
  fl_jw_put(w, "]", 1);
  w->comma = 1;
}

void fl_jw_key(fl_jw *w, const char *key) {
  fl_jw_sep(w);
  fl_jw_string(w, key);
  fl_jw_put(w, ":", 1);
  w->comma = 0;
}

void fl_jw_str(fl_jw *w, const char *s) {
  if (!s) {
    fl_jw_null(w);
    return;
  }
  fl_jw_sep(w);
  fl_jw_string(w, s);
  w->comma = 1;
}

void fl_jw_int(fl_jw *w, long long v) {
  char digits[24]; /* 20 digits and a sign hold any long long */
  char *p = digits + sizeof digits;
  /* Through the unsigned value: LLONG_MIN has no positive long long. */
  unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
  do {
    *--p = (char)('0' + u % 10);
    u /= 10;
  } while (u);
  if (v < 0)
    *--p = '-';
  fl_jw_sep(w);
  fl_jw_put(w, p, (size_t)(digits + sizeof digits - p));
  w->comma = 1;
}

void fl_jw_bool(fl_jw *w, int v) {
  fl_jw_sep(w);
  if (v)
    fl_jw_put(w, "true", 4);
  else
    fl_jw_put(w, "false", 5);
  w->comma = 1;
}

void fl_jw_null(fl_jw *w) {
  fl_jw_sep(w);
  fl_jw_put(w, "null", 4);
  w->comma = 1;
}

static int fl_jw_dump_cb(const char *buffer, size_t size, void *data) {
  fl_jw *w = data;
  fl_jw_put(w, buffer, size);
  return w->err ? -1 : 0;
}

void fl_jw_json(fl_jw *w, const json_t *v) {
  if (!v) {
    if (!w->err)
      w->err = FL_EINVAL;
    return;
  }
  fl_jw_sep(w);
  if (json_dump_callback(v, fl_jw_dump_cb, w, JSON_COMPACT | JSON_ENCODE_ANY) != 0 && !w->err)
    w->err = FL_ENOMEM;
  w->comma = 1;
}

int fl_jw_take(fl_jw *w, char **out, size_t *len) {
  *out = NULL;
  *len = 0;
  if (w->err)
    return w->err;
  if (!w->buf)
    return FL_EINVAL;
  w->buf[w->len] = '\0';
  *out = w->buf;
  *len = w->len;
  w->buf = NULL;
  fl_jw_free(w);
  return 0;
}
