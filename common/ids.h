/* ids.h — fleet's global ids: random (v4) UUIDs in their textual form.
 *
 * Every msgId, traceId, gid and spawnId is one. Thread-safe (libsodium's
 * randombytes); sodium_init must have run. */
#ifndef FL_IDS_H
#define FL_IDS_H

#include "common/limits.h"

/* A fresh random UUID into out[FL_ID_LEN]. */
void fl_uuid(char *out);
/* 1 if s is a textual UUID (8-4-4-4-12 hex digits, either case), else 0. */
int fl_is_uuid(const char *s);

#endif
