/* json_writer.c — JSON appended to a buffer with jansson's compact bytes
 * (see json_writer.h). */
#include "common/json_writer.h"

#include <stdint.h>
#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/limits.h"
#include "common/utf8.h"

/* The first buffer: a small result fits; a big one doubles from here. */
#define FL_JW_FIRST_CAP 4096u

/* The short form of control character c ('n' for '\\n'...), or 0. */
static char fl_short_form(unsigned char c) {
  switch (c) {
  case '\b':
    return 'b';
  case '\f':
    return 'f';
  case '\n':
    return 'n';
  case '\r':
    return 'r';
  case '\t':
    return 't';
  default:
    return 0;
  }
}

/* Control character c escaped at o: its short form, else \u00XX. */
static char *fl_escape_control(char *o, unsigned char c) {
  static const char hex[] = "0123456789ABCDEF";
  char f = fl_short_form(c);
  *o++ = '\\';
  if (f) {
    *o++ = f;
    return o;
  }
  memcpy(o, "u00", 3);
  o[3] = hex[c >> 4];
  o[4] = hex[c & 0xf];
  return o + 5;
}

/* How each byte goes into a JSON string: 0 as it is, 1 after a backslash
 * ('"' and '\\'), 2 as a control character (its short form or \u00XX). */
static const unsigned char fl_json_class[256] = {
    2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, /* 0x00 */
    2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, /* 0x10 */
    0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x20: '"' */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x30 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x40 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, /* 0x50: '\\' */
};

/* Eight bytes at a time (a roster's JSON is megabytes; most of its words
 * need nothing): for each byte of v, 0x80 where it is zero, else 0. Exact,
 * with no borrow from one byte into the next. */
#define FL_ONES 0x0101010101010101ull
#define FL_LOW7 0x7f7f7f7f7f7f7f7full
static uint64_t fl_zero_bytes(uint64_t v) { return ~(((v & FL_LOW7) + FL_LOW7) | v | FL_LOW7); }
/* 0x80 for each byte of v that is '"' or '\\', and each below 0x20. */
static uint64_t fl_quoted_bytes(uint64_t v) {
  return fl_zero_bytes(v ^ (FL_ONES * '"')) | fl_zero_bytes(v ^ (FL_ONES * '\\'));
}
static uint64_t fl_control_bytes(uint64_t v) { return fl_zero_bytes(v & (FL_ONES * 0xe0)); }

/* How many bytes of m (a mask of 0x80s, as above) are marked: no popcount
 * instruction is assumed. */
static size_t fl_marked(uint64_t m) { return (size_t)(((m >> 7) * FL_ONES) >> 56); }

/* Eight bytes as a word whose lowest byte is the first, and back: the
 * masks above give the first byte of a word the lowest bits. */
static uint64_t fl_word(const char *s) {
  uint64_t v;
  memcpy(&v, s, sizeof v);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap64(v);
#endif
  return v;
}

static void fl_store_word(char *o, uint64_t v) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap64(v);
#endif
  memcpy(o, &v, sizeof v);
}

size_t fl_json_escaped_len(const char *s, size_t n) {
  size_t e = n, i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t v = fl_word(s + i);
    if (fl_control_bytes(v))
      break; /* rare: counted a byte at a time from here */
    e += fl_marked(fl_quoted_bytes(v));
  }
  for (; i < n; i++) {
    unsigned k = fl_json_class[(unsigned char)s[i]];
    e += k == 2 ? (fl_short_form((unsigned char)s[i]) ? 1 : 5) : k;
  }
  return e;
}

/* s[0..n) escaped at o, one byte at a time. */
static char *fl_escape_bytes(char *o, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    unsigned k = fl_json_class[c];
    if (k == 2) {
      o = fl_escape_control(o, c);
      continue;
    }
    o[0] = k ? '\\' : (char)c;
    o[k] = (char)c;
    o += 1 + k;
  }
  return o;
}

char *fl_json_escape(char *o, const char *s, size_t n) {
  size_t i = 0;
  /* A word at a time while at least one more word follows: every byte
   * still to come writes at least one, so the output is sure to run at
   * least eight bytes past wherever this loop stores a whole word, and a
   * store may overshoot what is valid so far (the bytes after it are
   * written again). */
  for (; i + 16 <= n; i += 8) {
    uint64_t v = fl_word(s + i);
    uint64_t q = fl_quoted_bytes(v);
    if (fl_control_bytes(v)) {
      o = fl_escape_bytes(o, s + i, 8); /* rare in JSON text */
      continue;
    }
    /* Quotes come every few bytes in JSON text: the bytes up to each go
     * out in one store, then its backslash and itself. */
    unsigned from = 0;
    while (q) {
      unsigned at = (unsigned)__builtin_ctzll(q) >> 3;
      fl_store_word(o, v >> (8 * from));
      o += at - from;
      *o++ = '\\';
      *o++ = (char)(v >> (8 * at));
      from = at + 1;
      q &= q - 1;
    }
    if (from < 8) {
      fl_store_word(o, v >> (8 * from));
      o += 8 - from;
    }
  }
  return fl_escape_bytes(o, s + i, n - i);
}

void fl_jw_init(fl_jw *w, size_t max) {
  memset(w, 0, sizeof *w);
  w->max = max;
}

void fl_jw_free(fl_jw *w) {
  if (!w)
    return;
  fl_big_free(w->buf);
  fl_jw_init(w, w->max);
}

int fl_jw_grow(fl_jw *w, size_t n) {
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
  if (cap < FL_BIG_MIN) {
    char *b = fl_realloc(w->buf, cap);
    if (!b) {
      w->err = FL_ENOMEM;
      return 0;
    }
    w->buf = b;
    w->cap = cap;
    return 1;
  }
  /* A big result: into a spare block if one fits (alloc.h), whole, so it
   * grows no more when it is as big as the last one. */
  size_t got;
  char *b = fl_big_malloc(cap, &got);
  if (!b) {
    w->err = FL_ENOMEM;
    return 0;
  }
  if (w->len)
    memcpy(b, w->buf, w->len);
  fl_big_free(w->buf);
  w->buf = b;
  w->cap = got < w->max + 1 ? got : w->max + 1;
  return 1;
}

static inline void fl_jw_put(fl_jw *w, const char *s, size_t n) {
  if (!fl_jw_has_room(w, n))
    return;
  memcpy(w->buf + w->len, s, n);
  w->len += n;
}

/* Before a key or a value: the ',' after the one before it. */
static inline void fl_jw_sep(fl_jw *w) {
  if (w->comma)
    fl_jw_put(w, ",", 1);
}

/* 1 if s[0..n) goes into a JSON string as it is: ASCII with nothing to
 * escape (names, gids and timestamps all are). */
static uint64_t fl_not_plain(uint64_t v) {
  return fl_quoted_bytes(v) | fl_control_bytes(v) | (v & (FL_ONES * 0x80));
}

static int fl_plain(const char *s, size_t n) {
  if (n < 8) {
    unsigned bad = 0;
    for (size_t i = 0; i < n; i++)
      bad |= fl_json_class[(unsigned char)s[i]] | ((unsigned char)s[i] & 0x80);
    return bad == 0;
  }
  uint64_t bad = 0;
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    bad |= fl_not_plain(fl_word(s + i));
  if (i < n) /* the tail: the last eight bytes, some of them again */
    bad |= fl_not_plain(fl_word(s + n - 8));
  return bad == 0;
}

static void fl_jw_string(fl_jw *w, const char *s, size_t n) {
  if (w->err)
    return;
  int plain = fl_plain(s, n);
  if (!plain && !fl_utf8_valid(s, n)) {
    w->err = FL_EINVAL;
    return;
  }
  size_t e = plain ? n : fl_json_escaped_len(s, n);
  if (!fl_jw_has_room(w, e + 2))
    return;
  char *o = w->buf + w->len;
  *o++ = '"';
  if (plain) {
    memcpy(o, s, n);
    o += n;
  } else {
    o = fl_json_escape(o, s, n);
  }
  *o++ = '"';
  w->len = (size_t)(o - w->buf);
}

void fl_jw_keyn(fl_jw *w, const char *key, size_t n) {
  fl_jw_sep(w);
  fl_jw_string(w, key, n);
  fl_jw_put(w, ":", 1);
  w->comma = 0;
}

void fl_jw_strn(fl_jw *w, const char *s, size_t n) {
  if (!s) {
    fl_jw_null(w);
    return;
  }
  fl_jw_sep(w);
  fl_jw_string(w, s, n);
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

void fl_json_out_free(fl_json_out *o) {
  fl_big_free(o->json);
  fl_big_free(o->text);
  memset(o, 0, sizeof *o);
}

void fl_jw_bytes(fl_jw *w, const char *s, size_t n) { fl_jw_put(w, s, n); }

void fl_jw_escaped(fl_jw *w, const char *s, size_t n) {
  size_t e = fl_json_escaped_len(s, n);
  if (!fl_jw_has_room(w, e))
    return;
  fl_json_escape(w->buf + w->len, s, n);
  w->len += e;
}

size_t fl_jw_begin(fl_jw *w) {
  fl_jw_sep(w);
  w->comma = 0;
  return w->len;
}

void fl_jw_raw(fl_jw *w, const char *json, size_t n) {
  fl_jw_sep(w);
  fl_jw_put(w, json, n);
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

json_t *fl_jw_take_json(fl_jw *w) {
  char *s;
  size_t n;
  if (fl_jw_take(w, &s, &n) != 0)
    return NULL;
  json_t *v = json_loadb(s, n, 0, NULL);
  fl_big_free(s);
  return v;
}

json_t *fl_jw_array_of(void (*write)(void *ctx, fl_jw *w), void *ctx) {
  fl_jw w;
  fl_jw_init(&w, FL_MAX_RESULT_JSON);
  fl_jw_arr_open(&w);
  write(ctx, &w);
  fl_jw_arr_close(&w);
  json_t *v = fl_jw_take_json(&w);
  fl_jw_free(&w);
  return v;
}
