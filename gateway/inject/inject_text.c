/* inject_text.c — text typed into a pane is data, never keys (see
 * inject_text.h for the rules). */
#include "gateway/inject/inject_text.h"

#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/limits.h"
#include "common/utf8.h"

/* The stand-ins, as UTF-8: U+2400 + byte for C0 (three bytes, E2 90 80+),
 * U+2421 for DEL, U+FFFD for C1 and for bytes that are not UTF-8. */
#define FL_STANDIN_MAX 3
static const char fl_standin_del[] = "\xe2\x90\xa1";
static const char fl_standin_bad[] = "\xef\xbf\xbd";

static int fl_is_command_char(const char *chars, char c) {
  return c && (unsigned char)c < 0x80 && strchr(chars, c) != NULL;
}

int fl_inject_text_chars_valid(const char *chars) {
  if (!chars || strlen(chars) > FL_MAX_COMMAND_CHARS)
    return 0;
  for (const char *c = chars; *c; c++)
    if (*c <= ' ' || *c > '~' || strchr(FL_INJECT_TEXT_PREFIX, *c))
      return 0;
  return 1;
}

int fl_inject_text_make(const char *text, size_t len, const char *command_chars,
                        fl_inject_text *out) {
  memset(out, 0, sizeof *out);
  if (!text)
    len = 0;
  const char *chars = command_chars ? command_chars : FL_INJECT_COMMAND_CHARS_DEFAULT;
  size_t lead = 0;
  while (lead < len && (text[lead] == ' ' || text[lead] == '\t' || text[lead] == '\n'))
    lead++;
  size_t prefix = 0;
  if (lead < len && fl_is_command_char(chars, text[lead])) {
    out->command = text[lead];
    prefix = strlen(FL_INJECT_TEXT_PREFIX);
  }
  /* Every input byte becomes at most FL_STANDIN_MAX bytes. */
  if (len > FL_MAX_CONTENT)
    return FL_ETOOBIG;
  out->buf = fl_malloc(prefix + len * FL_STANDIN_MAX + 1);
  if (!out->buf)
    return FL_ENOMEM;
  char *o = out->buf;
  const unsigned char *s = (const unsigned char *)text;
  memcpy(o, FL_INJECT_TEXT_PREFIX, prefix);
  o += prefix;
  out->chars = prefix; /* the prefix is ASCII */
  size_t i = 0;
  while (i < len) {
    unsigned cp;
    size_t k = fl_utf8_next(s + i, len - i, &cp);
    const char *standin = NULL;
    char c0[FL_STANDIN_MAX];
    if (k == 0) {
      standin = fl_standin_bad; /* not UTF-8: cp is the byte */
      k = 1;
    } else if (cp == '\r' && i + 1 < len && s[i + 1] == '\n') {
      i++; /* a CRLF line end: the newline alone */
      continue;
    } else if ((cp < 0x20 && cp != '\n' && cp != '\t')) {
      c0[0] = '\xe2';
      c0[1] = '\x90';
      c0[2] = (char)(0x80 + cp);
      standin = c0;
    } else if (cp == 0x7f) {
      standin = fl_standin_del;
    } else if (cp >= 0x80 && cp <= 0x9f) {
      standin = fl_standin_bad;
    }
    if (standin) {
      if (out->replaced++ == 0) {
        out->first_at = i;
        out->first = cp;
      }
      memcpy(o, standin, FL_STANDIN_MAX);
      o += FL_STANDIN_MAX;
    } else {
      if (cp == '\n' || cp == '\t' || fl_is_command_char(chars, (char)cp))
        out->multi = 1;
      memcpy(o, s + i, k);
      o += k;
    }
    out->chars++;
    i += k;
  }
  *o = '\0';
  out->len = (size_t)(o - out->buf);
  return 0;
}

void fl_inject_text_free(fl_inject_text *t) {
  if (!t)
    return;
  fl_free(t->buf);
  t->buf = NULL;
  t->len = 0;
}

/* A name for a replaced value, for the note. */
static const char *fl_control_name(unsigned v) {
  switch (v) {
  case 0x03:
    return " (Ctrl-C)";
  case 0x04:
    return " (Ctrl-D)";
  case 0x0d:
    return " (carriage return)";
  case 0x1b:
    return " (ESC)";
  case 0x7f:
    return " (DEL)";
  default:
    return "";
  }
}

void fl_inject_text_note(const fl_inject_text *t, char *buf, size_t n) {
  if (!buf || n == 0)
    return;
  buf[0] = '\0';
  if (!t)
    return;
  size_t at = 0;
  if (t->replaced) {
    unsigned shown = t->first < 0x20 ? 0x2400 + t->first : t->first == 0x7f ? 0x2421 : 0xfffd;
    int w = snprintf(buf, n,
                     "%zu control or invalid byte%s typed as visible stand-ins (the first, "
                     "0x%02X%s at byte %zu, as U+%04X)",
                     t->replaced, t->replaced == 1 ? "" : "s", t->first, fl_control_name(t->first),
                     t->first_at, shown);
    at = w < 0 ? 0 : (size_t)w < n ? (size_t)w : n - 1;
  }
  if (t->command && at < n - 1)
    snprintf(buf + at, n - at, "%sthe leading '%c' (a command to the agent) typed after \"%s\"",
             at ? "; " : "", t->command, FL_INJECT_TEXT_PREFIX);
}

int fl_inject_text_compose(const char *head, const char *text, size_t len,
                           const char *command_chars, fl_inject_text *out) {
  int rc = fl_inject_text_make(text, len, command_chars, out);
  if (rc || !head || !head[0])
    return rc;
  size_t hl = strlen(head);
  char *both = fl_malloc(hl + 1 + out->len + 1);
  if (!both)
    return FL_ENOMEM;
  memcpy(both, head, hl);
  both[hl] = '\n';
  memcpy(both + hl + 1, out->buf, out->len + 1);
  fl_free(out->buf);
  out->buf = both;
  out->len += hl + 1;
  out->chars += hl + 1; /* the head is ASCII */
  out->multi = 1;
  return 0;
}
