/* json_read.h — JSON text read as jansson reads it, in one pass over the
 * bytes.
 *
 * jansson's reader takes every byte through a callback and appends it to
 * its string buffer one at a time, so a line that carries kilobytes of
 * message text costs microseconds per kilobyte. fleetd reads every request
 * that way, and every client reads every result. The reader here walks the
 * bytes directly, takes a string's plain runs whole, and builds the same
 * jansson tree.
 *
 * It is sound, not complete: the fast path gives up on whatever it would
 * have to judge as jansson does with more work (an exponent, a number over
 * 18 characters, a \u0000, nesting past FL_JSON_READ_MAX_DEPTH, anything
 * that is not JSON), and fl_json_loadb then hands the text to json_loadb,
 * which reads it or says what is wrong.
 * Either way the caller gets jansson's answer.
 *
 * The scanning parts are shared with readers that need no tree
 * (clients/fleet_mcp_head.c): a string, a number and whitespace, each
 * checked as jansson checks it (RFC 8259; UTF-8 through common/utf8.h;
 * \u0000 and unpaired surrogates refused). Pure but for allocation. */
#ifndef FL_JSON_READ_H
#define FL_JSON_READ_H

#include <jansson.h>
#include <stddef.h>

/* Deeper nesting is left to jansson (whose own limit is far higher). */
#define FL_JSON_READ_MAX_DEPTH 64

/* Longest number the fast path reads, sign and point included: any integer
 * of 18 characters fits a json_int_t, any real of 18 characters a double. */
#define FL_JSON_READ_MAX_NUM 18

/* json_loadb(buf, len, flags, err), the same tree or the same failure.
 * flags other than 0 and JSON_DECODE_ANY go to jansson directly. */
json_t *fl_json_loadb(const char *buf, size_t len, size_t flags, json_error_t *err);

/* The fast path alone: the tree json_loadb(buf, len, flags) would give, or
 * NULL when it cannot be sure (then nothing is known of the text). */
json_t *fl_json_read_fast(const char *buf, size_t len, size_t flags);

/* ---- scanning without a tree ---- */

typedef struct fl_jscan {
  const unsigned char *p, *end;
} fl_jscan;

/* Steps over JSON whitespace (space, tab, newline, carriage return). */
void fl_jscan_ws(fl_jscan *s);

/* A string at s->p (its opening quote): steps past its closing quote and
 * returns 1 when jansson would read it; *plain is 1 when it holds no
 * escape, so its bytes between the quotes are its value. 0 otherwise
 * (s->p is then somewhere inside). */
int fl_jscan_string(fl_jscan *s, int *plain);

/* A number at s->p: steps past it and returns 1 when it is at most
 * FL_JSON_READ_MAX_NUM characters with no exponent; *integer is 1 when it
 * has no fraction. 0 otherwise. */
int fl_jscan_number(fl_jscan *s, int *integer);

/* After a member of an object (close '}') or an array (close ']'): 1 at
 * the closing byte (stepped past), 0 at a comma (stepped past, with the
 * whitespace after it: another member follows), -1 at anything else. */
int fl_jscan_next(fl_jscan *s, unsigned char close);

#endif
