/* gw_internal.h — the gateway core's private structures, shared by gw.c
 * (roster, local delivery, waiting calls, nudges) and fabric.c (the
 * cross-host side: broker link, presence, remote routing). Nothing outside
 * gateway/ includes this. */
#ifndef FL_GW_INTERNAL_H
#define FL_GW_INTERNAL_H

#include "common/ids.h"
#include "common/names.h"
#include "common/time.h"
#include "gateway/broker.h"
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
  int remote_online;      /* as its last presence beat said */
  long long expires_ms;   /* the beat's TTL runs out then */
  long long beat_ts_ms;   /* ts of the newest beat taken: older ones are replays */
};

struct fl_client {
  fl_gw *gw;
  fl_entity *entity; /* NULL for an anonymous session */
  const fl_client_ops *ops;
  void *ctx;
  fl_wait *waits;
  size_t nwaits;
};

/* A broker delivery not yet acked: acked when its message is drained. */
typedef struct fl_unacked {
  struct fl_unacked *next;
  char msg_id[FL_ID_LEN];
  char to_gid[FL_ID_LEN];
  uint64_t tag;
} fl_unacked;

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
  /* Cross-host (fabric.c); broker is NULL in single-host mode. */
  fl_broker *broker;
  int broker_up;
  char broker_why[256];
  uv_timer_t presence;
  fl_unacked *unacked;
  size_t nunacked;
  int in_batch;          /* inside a burst of broker events (one store commit) */
  uint64_t *acks_later;  /* acks held until the burst's commit */
  size_t nacks_later, acks_later_cap;
  struct fl_parked *parked; /* deliveries waiting for their sender's presence */
  size_t nparked;
  uv_timer_t park_timer;
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

/* fabric.c: the cross-host side. Every function is a no-op (or reports
 * "no broker") when gw->broker is NULL. */
int fl_fabric_start(fl_gw *gw);
void fl_fabric_stop(fl_gw *gw);
void fl_fabric_free(fl_gw *gw);
/* Publishes m (already filled) to dst's inbox. On success *wait is a
 * CONFIRM waiter: on the confirm it completes with on_confirm (stolen), or,
 * when then_wait_s > 0, turns into a SEND waiter for the reply. */
int fl_fabric_publish(fl_gw *gw, fl_client *c, fl_entity *dst, const fl_msg *m,
                      double then_wait_s, json_t *on_confirm, fl_gw_cb cb, void *ctx,
                      fl_wait **wait, char *err, size_t errlen);
/* Publishes a broadcast once for every other host; completes like above. */
int fl_fabric_broadcast(fl_gw *gw, fl_client *c, const fl_msg *m, const char *group,
                        json_t *on_confirm, fl_gw_cb cb, void *ctx, fl_wait **wait, char *err,
                        size_t errlen);
/* A local entity came online, changed or went offline. */
void fl_fabric_entity_changed(fl_gw *gw, fl_entity *e);
/* A held message was handed to its client: settle its broker delivery. */
void fl_fabric_drained(fl_gw *gw, const char *to_gid, const char *msg_id);
/* After the sweeper ran: settle deliveries whose message it dropped. */
void fl_fabric_sweep(fl_gw *gw);
/* "online" / "offline" / "unknown" for a remote entity. */
const char *fl_fabric_status(fl_gw *gw, const fl_entity *e);

#endif
