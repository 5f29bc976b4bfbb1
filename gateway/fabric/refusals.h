/* refusals.h — repeated refusals of one host, logged once a window.
 *
 * A host that is not pinned here (or signs with a key that is not its pin)
 * keeps beating: every entity it has, every presence interval. Each beat is
 * refused and counted, but a log line for each would bury the log (a
 * hundred lines in three minutes from a host with two agents). This table
 * remembers, per host, when its refusal was last logged and how many
 * followed, so the caller logs one line per host per window carrying the
 * count; a new reason for the same host is logged at once.
 *
 * It also keeps the names an unpinned host's refused beats announced. They
 * are unverified (the beat was refused unread), so they only tell an error
 * message which host to pin; nothing routes by them.
 *
 * Bounded: FL_MAX_REFUSING_HOSTS hosts (the one refused longest ago makes
 * room), FL_REFUSAL_NAMES names each (the oldest replaced). Pure: no I/O and
 * no clock (callers pass the time). One thread owns a table. */
#ifndef FL_REFUSALS_H
#define FL_REFUSALS_H

#include <stddef.h>

#include "common/limits.h"

typedef struct fl_refusal_host {
  char host[FL_MAX_NAME + 1];
  int reason;            /* what the caller keys on (an fl_counter) */
  long long logged_ms;   /* when the last line for it was due */
  long long last_ms;     /* its newest refusal */
  unsigned long pending; /* refusals since that line, not yet logged */
  char names[FL_REFUSAL_NAMES][FL_MAX_NAME + 1];
  size_t nnames, next_name;
} fl_refusal_host;

/* A table; zero-filled is empty. Embed it or allocate it; ~70 KiB. */
typedef struct fl_refusals {
  fl_refusal_host at[FL_MAX_REFUSING_HOSTS];
  size_t n;
} fl_refusals;

/* Notes one refusal of host for reason at now_ms. Returns 1 when a line is
 * due now: the first refusal of host (or the first for a new reason), or
 * the first once window_ms have passed since its last line; then *count is
 * how many refusals the line covers (this one and those folded into it) and
 * *span_ms the time since the last line (0 for a first line). Returns 0
 * when this refusal is folded into a later line. */
int fl_refusals_note(fl_refusals *r, const char *host, int reason, long long now_ms,
                     long long window_ms, unsigned long *count, long long *span_ms);

/* Remembers that host's refused presence announced name (a valid name;
 * host must have been noted). */
void fl_refusals_claim(fl_refusals *r, const char *host, const char *name);

/* The host, refused at most max_age_ms before now_ms, whose refused beats
 * announced name: 1 with it copied into host (n bytes), else 0. */
int fl_refusals_claimed(const fl_refusals *r, const char *name, long long now_ms,
                        long long max_age_ms, char *host, size_t n);

/* Forgets host (its presence is taken now): a later refusal is a first. */
void fl_refusals_forget(fl_refusals *r, const char *host);

#endif
