/* json_writer.h — JSON written straight into a growing buffer (fl_jw_*),
 * and the one escaping of a JSON string's contents.
 *
 * For a result too big to build as a jansson tree and dump (fleet_list of
 * thousands of entities, gateway/core/list.c): the caller appends the values in
 * order and the writer only puts the commas and colons between them. The
 * bytes are what json_dumps(v, JSON_COMPACT) writes for a tree with the same
 * values and keys in the same order: no spaces, integers in decimal, true,
 * false and null, and strings escaped as jansson escapes them without
 * JSON_ENSURE_ASCII or JSON_ESCAPE_SLASH: '"' and '\\' get a backslash, the
 * control characters below 0x20 their short form (\b \f \n \r \t) or \u00XX
 * (upper-case hex), every other byte (UTF-8 included) goes through as it is.
 *
 * The writer does not track nesting: the caller opens and closes what it
 * opens, and puts a key before each member of an object. Errors are sticky:
 * the first failure (FL_ENOMEM; FL_ETOOBIG past the writer's cap;
 * FL_EINVAL for a string that is not UTF-8, which jansson would refuse too)
 * turns every later call into a no-op and is what fl_jw_take returns, so a
 * caller checks once at the end. A writer belongs to one thread. */
#ifndef FL_JSON_WRITER_H
#define FL_JSON_WRITER_H

#include <jansson.h>
#include <stddef.h>
#include <string.h>

typedef struct fl_jw {
  char *buf; /* fl_malloc'd; NULL until the first write */
  size_t len, cap;
  size_t max; /* len never goes past this (the writer's cap) */
  int comma;  /* a value ended here: the next key or value needs a ',' */
  int err;    /* the first failure, sticky; 0 while all is well */
} fl_jw;

/* An empty writer whose output may grow to max bytes. Allocates nothing. */
void fl_jw_init(fl_jw *w, size_t max);
/* Frees the buffer (NULL-safe, and safe after fl_jw_take); w can be
 * initialized again. */
void fl_jw_free(fl_jw *w);

/* The writer's own, for the inline calls below: 1 if n more bytes (and
 * the final NUL) fit, growing the buffer when they do not; else 0 with
 * w->err set. The common case is inline: cap never passes max + 1, so what
 * fits the buffer fits the cap, and cap is 0 until the first write. */
int fl_jw_grow(fl_jw *w, size_t n);
static inline int fl_jw_has_room(fl_jw *w, size_t n) {
  return (n < w->cap - w->len && !w->err) || fl_jw_grow(w, n);
}

/* The bytes s[0..n) as they are: after a ',' when sep is set and a value
 * ended before them, and then a value has ended when after is set. For the
 * structure and the literal keys below, inline: with n known when
 * compiling, the copy is a few moves (a listing of thousands of entities
 * puts a few dozen of these for each). */
static inline void fl_jw_token(fl_jw *w, const char *s, size_t n, int sep, int after) {
  if (!fl_jw_has_room(w, n + 1))
    return;
  char *o = w->buf + w->len;
  *o = ','; /* kept only when it is needed: the copy goes after it or over it */
  o += sep && w->comma;
  memcpy(o, s, n);
  w->len = (size_t)(o + n - w->buf);
  w->comma = after;
}

static inline void fl_jw_obj_open(fl_jw *w) { fl_jw_token(w, "{", 1, 1, 0); }
static inline void fl_jw_obj_close(fl_jw *w) { fl_jw_token(w, "}", 1, 0, 1); }
static inline void fl_jw_arr_open(fl_jw *w) { fl_jw_token(w, "[", 1, 1, 0); }
static inline void fl_jw_arr_close(fl_jw *w) { fl_jw_token(w, "]", 1, 0, 1); }
/* The key of the next object member (UTF-8, n bytes). */
void fl_jw_keyn(fl_jw *w, const char *key, size_t n);
/* A key written in the code, as a string literal of plain ASCII (no '"',
 * '\\' or control character): its quotes and colon are put with it, as one
 * token made when compiling, with nothing to check or escape. */
#define fl_jw_key(w, lit) fl_jw_token((w), "\"" lit "\":", sizeof(lit) + 2, 1, 0)
/* A string value (UTF-8, n bytes; fl_jw_str: NUL-terminated); NULL is
 * written as null, as json_pack's "s?" does. */
void fl_jw_strn(fl_jw *w, const char *s, size_t n);
static inline void fl_jw_str(fl_jw *w, const char *s) { fl_jw_strn(w, s, s ? strlen(s) : 0); }
void fl_jw_int(fl_jw *w, long long v);
static inline void fl_jw_bool(fl_jw *w, int v) {
  if (v)
    fl_jw_token(w, "true", 4, 1, 1);
  else
    fl_jw_token(w, "false", 5, 1, 1);
}
static inline void fl_jw_null(fl_jw *w) { fl_jw_token(w, "null", 4, 1, 1); }
/* Where the next value starts: the ',' before it is put now, so the bytes
 * from here to the end of the value are the value alone (to keep and put
 * again with fl_jw_raw). */
size_t fl_jw_begin(fl_jw *w);
/* A value this writer wrote before (n bytes, from fl_jw_begin's offset to
 * its end), put again as it is. */
void fl_jw_raw(fl_jw *w, const char *json, size_t n);
/* Any jansson value (borrowed), dumped compact in place: for the small
 * parts of a result that other modules build as trees. */
void fl_jw_json(fl_jw *w, const json_t *v);

/* JSON a writer made (json, len bytes, NUL-terminated), and, when it was
 * made as it was written, the same JSON escaped as a JSON string's
 * contents (text, text_len; NULL otherwise): the text copy of a tool
 * result (mcp/tool_result.h). Both from fl_malloc or fl_big_malloc;
 * fl_json_out_free frees both (NULL-safe) and empties it. */
typedef struct fl_json_out {
  char *json;
  size_t len;
  char *text;
  size_t text_len;
} fl_json_out;
void fl_json_out_free(fl_json_out *o);

/* For a writer of bytes that are not one JSON value (the escaped text
 * above): s[0..n) as they are, and s[0..n) escaped as fl_json_escape does;
 * no commas. */
void fl_jw_bytes(fl_jw *w, const char *s, size_t n);
void fl_jw_escaped(fl_jw *w, const char *s, size_t n);

/* 0 and the output (NUL-terminated, fl_malloc'd: the caller frees it with
 * fl_free, or with fl_big_free to keep a big one spare for the next) in
 * *out and its length in *len; the writer is then empty. Or the writer's
 * first failure (see above), and *out is NULL; the writer still needs
 * fl_jw_free. Nothing written at all is FL_EINVAL. */
int fl_jw_take(fl_jw *w, char **out, size_t *len);

/* The output parsed back as a tree, for readers that want one, and the
 * writer emptied (it still needs fl_jw_free); NULL on any failure. */
json_t *fl_jw_take_json(fl_jw *w);
/* A new array of the values write(ctx, w) writes, as a tree, for the
 * readers of a part that is written for speed; NULL on any failure. */
json_t *fl_jw_array_of(void (*write)(void *ctx, fl_jw *w), void *ctx);

/* The escaping above, for code that embeds JSON text in a JSON string (the
 * text copy of a tool result, mcp/tool_result.h): the bytes the string
 * contents s[0..n) take escaped, without the quotes, and the escaping
 * itself, written at out (which has room for fl_json_escaped_len bytes);
 * returns the end of what it wrote. Bytes at or above 0x80 pass through
 * unchecked: s is expected to be UTF-8 already. */
size_t fl_json_escaped_len(const char *s, size_t n);
char *fl_json_escape(char *out, const char *s, size_t n);

#endif
