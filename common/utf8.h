/* utf8.h — reading UTF-8 as jansson accepts it: no overlong forms, no
 * surrogates, nothing past U+10FFFF. One decoder for everything that checks
 * or walks text from outside (message bodies, JSON written by hand, text
 * typed into a pane). Pure. */
#ifndef FL_UTF8_H
#define FL_UTF8_H

#include <stddef.h>

/* The code point that starts s[0..n) into *cp, and how many bytes it
 * takes (1 to 4); 0 when those bytes are not valid UTF-8 (or n is 0), and
 * then *cp is the first byte. */
size_t fl_utf8_next(const unsigned char *s, size_t n, unsigned *cp);

/* 1 if s[0..n) is valid UTF-8 (NUL bytes allowed: callers that refuse
 * them check apart), else 0. */
int fl_utf8_valid(const char *s, size_t n);

/* The length of the longest prefix of s[0..n) that is at most max bytes
 * of whole, valid characters: where text is cut to a bound, it is cut on a
 * character boundary (and before the first byte that is not UTF-8). */
size_t fl_utf8_prefix(const char *s, size_t n, size_t max);

#endif
