/* ids.h — fleet's global ids: UUIDs in their textual form.
 *
 * Every msgId, traceId, gid and spawnId is one: random (v4), but msgIds
 * time-ordered (v7). Thread-safe (common/random.h's
 * per-thread pool); sodium_init must have run. */
#ifndef FL_IDS_H
#define FL_IDS_H

#include "common/limits.h"

/* A fresh random UUID into out[FL_ID_LEN]. */
void fl_uuid(char *out);
/* A fresh time-ordered UUID (version 7, RFC 9562) into out[FL_ID_LEN]: the
 * Unix time in ms, then 74 random bits. For msgIds: the stores that dedup
 * by msgId index it, and ids that rise with time land on the same few
 * index pages instead of a random page each, which made every message of
 * a burst read and write pages of its own (bench/README.md). The random
 * part keeps an id unguessable, as a v4 one is. */
void fl_uuid_msg(char *out);
/* 1 if s is a textual UUID (8-4-4-4-12 hex digits, either case), else 0. */
int fl_is_uuid(const char *s);

#endif
