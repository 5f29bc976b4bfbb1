/* time.h — the one place fleet reads clocks and writes or reads timestamps.
 *
 * Wall-clock time is for what crosses the wire or the disk (envelope ts and
 * expiresAt, held messages, pins): milliseconds since the epoch, written as
 * RFC 3339 UTC with milliseconds ("2026-01-02T03:04:05.678Z"). Monotonic time
 * is for measuring intervals (timeouts, latencies) and never leaves the
 * process. All functions are thread-safe and never block. */
#ifndef FL_TIME_H
#define FL_TIME_H

#include <stddef.h>

/* Length of a buffer that holds any fl_rfc3339 output, NUL included. */
#define FL_TS_LEN 32

/* Milliseconds since the epoch (wall clock). */
long long fl_now_ms(void);
/* Milliseconds of the monotonic clock: for intervals only. */
long long fl_mono_ms(void);
/* Nanoseconds of the monotonic clock: for intervals only. */
long long fl_mono_ns(void);

/* Writes ms as RFC 3339 UTC with milliseconds into out[FL_TS_LEN]. */
void fl_rfc3339(long long ms, char *out);
/* The current wall-clock time as fl_rfc3339 writes it, into out (size n). */
void fl_rfc3339_now(char *out, size_t n);
/* Parses "YYYY-MM-DDTHH:MM:SS[.fff]Z" (the form fl_rfc3339 writes, with an
 * optional fraction of 1-9 digits) into ms. Returns 0, or FL_EINVAL for
 * anything else (a zone offset, trailing bytes, an out-of-range field). */
int fl_rfc3339_parse(const char *s, long long *ms);

#endif
