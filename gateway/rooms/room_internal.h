/* room_internal.h — what the room files share (room.c: the rooms, their
 * verbs and the serving route; room_merge.c: the merge checks;
 * room_sync.c: pulling). Nothing else includes this. */
#ifndef FL_ROOM_INTERNAL_H
#define FL_ROOM_INTERNAL_H

#include "gateway/core/gw_internal.h"
#include "gateway/http/http_pull.h"
#include "gateway/http/http_serve.h"
#include "gateway/rooms/room.h"

/* One registered room. */
typedef struct fl_room {
  char id[FL_ROOM_ID_SIZE];
  char label[FL_ROOM_MAX_LABEL + 1];
} fl_room;

/* What this host knows of one peer's syncs. */
typedef struct fl_room_peer {
  struct fl_room_peer *next;
  char host[FL_HOST_ID_SIZE];
  long long last_sync_ms; /* wall clock of the last finished pull, 0 = never */
  int last_ok;
  char last_error[256];
  unsigned long long merged, refused;
  unsigned long long dropped[FL_ROOM_DROP_COUNT];
} fl_room_peer;

typedef struct fl_room_watch fl_room_watch;
typedef struct fl_room_batch fl_room_batch;
typedef struct fl_room_pull fl_room_pull;

struct fl_rooms {
  fl_gw *gw;
  fl_room rooms[FL_ROOM_MAX_ROOMS];
  size_t nrooms;
  fl_room_peer *peers;
  fl_http_server *server; /* NULL when nothing is served */
  fl_http_pull *puller;
  uv_timer_t sync_timer;
  fl_room_watch *watches;
  fl_room_pull *pulls; /* in flight */
  int stopping;
  int claims_only;                  /* no "rooms" config: only #claims, fed by the broker */
  struct fl_claims_log *claims_log; /* claims.c: the events its checks read */
  unsigned long long syncs;
};

/* 1 when the room tools answer degraded. */
#define FL_ROOMS_OFF(gw) (!(gw)->rooms || (gw)->rooms->claims_only)

/* Publishes a new message from c into room (id or label): 0 with msg_id
 * (FL_ID_LEN) and, when item is not NULL, *item the stored text (fl_free). */
int fl_rooms_publish(fl_gw *gw, fl_client *c, const char *room, const char *msg_type,
                     json_t *payload, char *msg_id, char **item, char *err, size_t errlen);
/* Checks one item from peer (a host, for the counters) for room_id and
 * appends it: 0 merged, else -1 with *why. */
int fl_rooms_merge_item(fl_gw *gw, const char *room_id, json_t *item, fl_room_drop *why);

/* The room of id or label, or NULL. */
fl_room *fl_rooms_find(fl_rooms *r, const char *room);
/* The stats of host, made on first use; NULL on out-of-memory. */
fl_room_peer *fl_rooms_peer(fl_rooms *r, const char *host);
/* A message was appended to room_id: answer the watches waiting on it. */
void fl_rooms_appended(fl_rooms *r, const char *room_id);
/* Appends a checked message (hops already the stored value). 0, FL_EDUP
 * or FL_ESTORE. */
int fl_rooms_append(fl_rooms *r, const fl_room_msg *m, int hops);

/* room_sync.c: pulls room (NULL = every room) from every peer with a URL;
 * batch (may be NULL) collects each pull's result. Returns how many pulls
 * started. */
size_t fl_rooms_sync_start(fl_rooms *r, const fl_room *room, fl_room_batch *batch);
/* The sync tool's batch: made, told of each result, and ended. */
int fl_rooms_sync_verb(fl_rooms *r, fl_client *c, const fl_room *room, fl_gw_cb cb, void *ctx,
                       json_t **result, fl_wait **wait, char *err, size_t errlen);
void fl_rooms_sync_timer(fl_rooms *r);
void fl_rooms_sync_stop(fl_rooms *r);

#endif
