/* inject_text.h — text typed into an agent's terminal is data, never keys.
 *
 * Every byte a backend types into a pane (a brief, a nudge line) passes
 * through fl_inject_text_make first, which makes it safe to type:
 *
 *   - C0 control bytes other than newline and tab (0x00-0x1f), DEL (0x7f)
 *     and C1 controls (U+0080-U+009F) become visible stand-ins: the
 *     Control Pictures character of a C0 byte (0x03 -> U+2403 "␃", ESC ->
 *     U+241B "␛"), U+2421 "␡" for DEL, U+FFFD "�" for a C1 control. So no
 *     byte can act as a key (Ctrl-C, Ctrl-D, Enter from a carriage return)
 *     or start an escape sequence (ESC [ 201 ~ ends a bracketed paste).
 *     A CR right before a newline (a CRLF line end) is dropped instead.
 *   - A byte that is not part of valid UTF-8 becomes U+FFFD too (a lone
 *     0x9b is an 8-bit CSI to some terminals).
 *   - A text whose first character, after leading blanks, is one of the
 *     agent's command characters (profiles.<name>.commandChars, "!/#" by
 *     default: Claude Code's bash mode, slash commands) gets
 *     FL_INJECT_TEXT_PREFIX in front, so the agent reads it as a message.
 *
 * What was changed is counted, so the sender can be told exactly what the
 * agent got (fl_inject_text_note). Pure: no I/O, no globals. */
#ifndef FL_INJECT_TEXT_H
#define FL_INJECT_TEXT_H

#include <stddef.h>

/* What goes before a text that starts with a command character. Visible,
 * and starting with no character an agent treats as a command. */
#define FL_INJECT_TEXT_PREFIX "(fleet) "

/* The command characters of a profile that names none. */
#define FL_INJECT_COMMAND_CHARS_DEFAULT "!/#"

/* A text made safe to type. */
typedef struct fl_inject_text {
  char *buf;       /* new, NUL-terminated; free with fl_inject_text_free */
  size_t len;      /* bytes in buf, without the NUL */
  size_t chars;    /* characters (UTF-8 code points) in buf */
  size_t replaced; /* control bytes and invalid bytes shown as stand-ins */
  size_t first_at; /* the input's byte offset of the first of them */
  unsigned first;  /* its value: a byte, or a C1 code point */
  char command;    /* the leading command character prefixed, or 0 */
  /* Holds a newline, a tab, or one of the command characters anywhere:
   * type it as one paste. Typed as keys, a tab may complete, and some
   * agents switch mode on a command character wherever it is typed
   * (opencode's shell mode on any "!"); inside a bracketed paste both are
   * text. */
  int multi;
} fl_inject_text;

/* Makes text[0..len) safe to type into out (which the caller clears
 * with fl_inject_text_free, also on failure). command_chars (NULL = the
 * default) are the leading characters the agent treats as commands; only
 * ASCII ones count. 0 or FL_ENOMEM. */
int fl_inject_text_make(const char *text, size_t len, const char *command_chars,
                        fl_inject_text *out);

/* The whole text typing puts in: head (a line fleet wrote: printable
 * ASCII, no newline; NULL or "" = none) on a line of its own, then
 * text[0..len) made safe as by fl_inject_text_make (whose counts, and so
 * the note, are the text's alone). Every door into an agent hands over
 * exactly this. 0 or FL_ENOMEM; out as fl_inject_text_make. */
int fl_inject_text_compose(const char *head, const char *text, size_t len,
                           const char *command_chars, fl_inject_text *out);

void fl_inject_text_free(fl_inject_text *t);

/* What was changed, for the sender ("" when nothing was), into buf of n
 * bytes (cut to fit, never past n). */
void fl_inject_text_note(const fl_inject_text *t, char *buf, size_t n);

/* Whether command_chars is usable as profiles.<name>.commandChars: at most
 * FL_MAX_COMMAND_CHARS printable ASCII characters, no blank, none of the
 * prefix's own. */
int fl_inject_text_chars_valid(const char *command_chars);

#endif
