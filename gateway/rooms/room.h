/* room.h — rooms: append-only logs of signed envelopes that hosts serve
 * over HTTP and pull from each other (the broker-less transport).
 *
 * With config "rooms" set, fl_rooms_start (from fl_gw_new) loads the
 * registered rooms from the store, serves them on rooms.listen
 * (http_serve.h) and pulls every registered room from every pinned peer
 * with a URL each rooms.syncIntervalS (http_pull.h). What a pull brings is
 * merged only after the checks of room_merge.c. The verbs (fl_gw_room_* in
 * gw.h) are in room.c; without rooms they answer {degraded: true}.
 *
 * Loop thread only. */
#ifndef FL_ROOM_H
#define FL_ROOM_H

#include <stddef.h>

#include "gateway/gw.h"
#include "gateway/rooms/room_envelope.h"

typedef struct fl_rooms fl_rooms;

/* Starts rooms on gw when its config turns them on (else does nothing).
 * 0, or a negative code with err saying what to fix. */
int fl_rooms_start(fl_gw *gw, char *err, size_t errlen);
/* Ends waiting calls and pulls, stops serving; run the loop, then free. */
void fl_rooms_stop(fl_gw *gw);
void fl_rooms_free(fl_gw *gw);

/* The outcome of merging one pull response. */
typedef struct fl_merge_result {
  size_t merged;
  size_t dropped[FL_ROOM_DROP_COUNT];
  long long cursor; /* the server's cursor; -1: the store failed, keep the old */
  int more;         /* the server has more after cursor */
} fl_merge_result;

/* Merges one pull response (body, len bytes) of room_id from peer (a pinned
 * host). Every message that fails a check is dropped and counted under its
 * reason for peer; the rest are appended. Returns 0; FL_EPROTO when the
 * response as a whole is refused (not JSON, not a room response, another
 * room, or a key other than the one pinned for peer: err says which and it
 * is logged); FL_EINVAL when rooms are off or the room is not registered. */
int fl_rooms_merge(fl_gw *gw, const char *peer, const char *room_id, const char *body, size_t len,
                   fl_merge_result *res, char *err, size_t errlen);

/* host's sync health ({url, lastSync, ok, error, merged, refused,
 * dropped}), a new object; NULL when rooms are off. */
json_t *fl_rooms_peer_json(fl_gw *gw, const char *host);
/* Adds what the rooms' server refused (http_serve.h) into *add. */
struct fl_http_stats;
void fl_rooms_http_stats(fl_gw *gw, struct fl_http_stats *add);

/* Registers label (the verb's work without a session): 0 with room_id. */
int fl_rooms_register(fl_gw *gw, const char *label, char room_id[FL_ROOM_ID_SIZE], char *err,
                      size_t errlen);

#endif
