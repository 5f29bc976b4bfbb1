/* tool_result.c — one tool result line, its structured JSON dumped once (see
 * tool_result.h).
 *
 * The escaping follows what jansson writes for a string without
 * JSON_ENSURE_ASCII or JSON_ESCAPE_SLASH: '"' and '\\' get a backslash, the
 * control characters below 0x20 their short form or \u00XX, every other byte
 * (UTF-8 included) goes through as it is. jansson's dump is valid UTF-8, so
 * the escaped text is too. */
#include "mcp/tool_result.h"

#include <string.h>

#include "common/alloc.h"

/* Bytes the JSON string form of s[0..n) takes, without the quotes. */
static size_t fl_escaped_len(const char *s, size_t n) {
  size_t e = n;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t')
      e += 1;
    else if (c < 0x20)
      e += 5;
  }
  return e;
}

static char *fl_escape_into(char *o, const char *s, size_t n) {
  static const char hex[] = "0123456789ABCDEF";
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    char short_form = 0;
    switch (c) {
    case '"':
      short_form = '"';
      break;
    case '\\':
      short_form = '\\';
      break;
    case '\b':
      short_form = 'b';
      break;
    case '\f':
      short_form = 'f';
      break;
    case '\n':
      short_form = 'n';
      break;
    case '\r':
      short_form = 'r';
      break;
    case '\t':
      short_form = 't';
      break;
    default:
      break;
    }
    if (short_form) {
      *o++ = '\\';
      *o++ = short_form;
    } else if (c < 0x20) {
      memcpy(o, "\\u00", 4);
      o[4] = hex[c >> 4];
      o[5] = hex[c & 0xf];
      o += 6;
    } else {
      *o++ = (char)c;
    }
  }
  return o;
}

static char *fl_put(char *o, const char *s, size_t n) {
  memcpy(o, s, n);
  return o + n;
}

char *fl_tool_result_line(json_t *id, json_t *structured) {
  static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":";
  static const char mid[] = ",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"";
  static const char mid2[] = "\"}],\"structuredContent\":";
  static const char tail[] = "}}\n";
  char *line = NULL, *sj = NULL, *ij = NULL;
  if (!structured)
    goto done;
  sj = json_dumps(structured, JSON_COMPACT);
  ij = id ? json_dumps(id, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
  if (!sj || (id && !ij))
    goto done;
  const char *idt = ij ? ij : "null";
  size_t sn = strlen(sj), in = strlen(idt), en = fl_escaped_len(sj, sn);
  size_t total = sizeof head - 1 + in + sizeof mid - 1 + en + sizeof mid2 - 1 + sn + sizeof tail;
  line = fl_malloc(total);
  if (!line)
    goto done;
  char *o = line;
  o = fl_put(o, head, sizeof head - 1);
  o = fl_put(o, idt, in);
  o = fl_put(o, mid, sizeof mid - 1);
  o = fl_escape_into(o, sj, sn);
  o = fl_put(o, mid2, sizeof mid2 - 1);
  o = fl_put(o, sj, sn);
  fl_put(o, tail, sizeof tail); /* with its NUL */

done:
  fl_free(sj);
  fl_free(ij);
  json_decref(structured);
  return line;
}
