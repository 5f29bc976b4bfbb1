/* gw_internal.h — the gateway core's private structures, shared by gw.c
 * (roster, local delivery, waiting calls, nudges) and fabric.c (the
 * cross-host side: broker link, presence, remote routing). Nothing outside
 * gateway/ includes this. */
#ifndef FL_GW_INTERNAL_H
#define FL_GW_INTERNAL_H

#include "common/ids.h"
#include "common/names.h"
#include "common/time.h"
#include "gateway/gw.h"
#include "gateway/identity.h"
#include "gateway/peers.h"
#include "common/limits.h"
#include "gateway/store.h"

/* Recent msgId -> traceId pairs kept so a reply carries its flow's trace. */
#define FL_TRACE_RING 1024

typedef struct fl_entity fl_entity;
typedef struct fl_pub fl_pub;

enum fl_wait_kind {
  FL_WAIT_SEND,   /* a send waiting for its reply */
  FL_WAIT_POLL,   /* a long poll */
  FL_WAIT_CONFIRM /* a message handed on, waiting for the next hop to take it */
};

/* What a waiter does when its time is up, and what its owner must drop when
 * it goes away. Set by whoever creates the waiter. */
typedef struct fl_wait_ops {
  /* The timer ran out, or the gateway is shutting down: must finish w with
   * fl_wait_complete. */
  void (*timeout)(fl_wait *w);
  /* w is being released (completed, cancelled, or its session ended): drop
   * every pointer to it. NULL = nothing to drop. */
  void (*forget)(fl_wait *w);
} fl_wait_ops;

struct fl_wait {
  fl_gw *gw;
  fl_client *client;
  fl_wait *next; /* in the client's list, oldest first */
  enum fl_wait_kind kind;
  const fl_wait_ops *ops;
  void *ext;       /* the owner's state for ops (a CONFIRM: its publish), or NULL */
  int wants_reply; /* a CONFIRM of a send that then waits for its reply */
  uv_timer_t timer;
  fl_gw_cb cb;
  void *ctx;
  /* SEND, CONFIRM: the message sent, and to whom; POLL: the from filter and max. */
  char msg_id[FL_ID_LEN];
  char trace_id[FL_ID_LEN];
  char peer_gid[FL_ID_LEN];
  size_t max;
};

struct fl_entity {
  fl_entity *next;
  fl_gw *gw;
  char gid[FL_ID_LEN];
  char name[FL_MAX_NAME + 1];
  char role[FL_MAX_ROLE + 1];
  char groups[FL_MAX_GROUPS][FL_MAX_GROUP_NAME + 1];
  size_t ngroups;
  fl_client *client; /* the live session, or NULL when offline */
  long long last_seen_ms;
  char pane[FL_MAX_PANE + 1];
  char tmux_socket[FL_MAX_PATH + 1];
  uv_timer_t nudge_timer;
  unsigned nudge_step;
  int nudge_armed;
  /* Remote entities (from another gateway's presence) live only here. */
  int remote;
  char host[64];
  struct {
    int online;           /* as its last beat said */
    long long expires_ms; /* the beat's TTL runs out then */
    long long ts_ms;      /* ts of the newest beat taken: older ones are replays */
  } presence;             /* written by presence.c only */
};

struct fl_client {
  fl_gw *gw;
  fl_entity *entity; /* NULL for an anonymous session */
  const fl_client_ops *ops;
  void *ctx;
  fl_wait *waits;
  size_t nwaits;
};

struct fl_gw {
  uv_loop_t *loop;
  fl_gw_config cfg;
  fl_store *store;
  fl_entity *entities;
  size_t nentities;
  size_t nclients;
  uv_timer_t sweep;
  long long started_ms;
  unsigned long long counters[FL_C_COUNT];
  struct {
    char msg_id[FL_ID_LEN];
    char trace_id[FL_ID_LEN];
    char from_gid[FL_ID_LEN];
    char to_gid[FL_ID_LEN];
    int is_send;
  } traces[FL_TRACE_RING];
  size_t trace_next;
  int shutting_down;
  /* This gateway's key pair and the peers' pinned public keys. */
  fl_identity id;
  fl_peers *peers;
  /* The cross-host backend (remote.h), NULL in single-host mode. */
  const struct fl_remote_ops *remote;
  void *remote_ctx;
};

/* gw.c, for fabric.c. */
void fl_copy(char *dst, size_t n, const char *src);
fl_entity *fl_entity_by_gid(fl_gw *gw, const char *gid);
fl_entity *fl_entity_new(fl_gw *gw, const char *gid, const char *name);
void fl_entity_set_groups(fl_entity *e, const char *csv);
void fl_entity_rec_of(const fl_entity *e, fl_entity_rec *r);
json_t *fl_peer_json(const fl_entity *e);
json_t *fl_msg_json(const fl_msg *m);
int fl_wait_new(fl_gw *gw, fl_client *c, enum fl_wait_kind kind, const fl_wait_ops *ops,
                double wait_s, fl_gw_cb cb, void *ctx, fl_wait **out, char *err, size_t errlen);
void fl_wait_complete(fl_wait *w, json_t *result, const char *err);
/* Turns a confirmed CONFIRM waiter into a SEND waiter for the reply. */
void fl_wait_expect_reply(fl_wait *w, double wait_s);
int fl_accept(fl_gw *gw, fl_entity *to, fl_msg *m, char *err, size_t errlen);
int fl_wake(fl_gw *gw, fl_entity *to, const fl_msg *m);
void fl_nudge_arm(fl_entity *e);

#endif
