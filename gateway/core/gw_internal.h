/* gw_internal.h — the gateway object and its sessions, for gateway/ only.
 *
 * The core — gw.c (life cycle, status, admin), session.c, roster.c,
 * router.c, wait.c, nudge.c — shares these structures. The cross-host side
 * (fabric.c, presence.c, inbound.c) may read them and call the core's
 * internal API (roster.h, router.h, wait.h, fl_gw_count); the core reaches
 * the cross-host side only through remote.h, and the feature modules only
 * through their rows (module.h) and their waiters' operations (wait.h),
 * never by name. The pointers below to a module's state are opaque here.
 * Nothing outside gateway/ includes this. */
#ifndef FL_GW_INTERNAL_H
#define FL_GW_INTERNAL_H

#include "common/alloc.h"
#include "common/ids.h"
#include "common/limits.h"
#include "common/names.h"
#include "common/time.h"
#include "gateway/config/gw_config.h"
#include "gateway/core/gid_index.h"
#include "gateway/core/histo.h"
#include "gateway/core/roster.h"
#include "gateway/core/router.h"
#include "gateway/core/wait.h"
#include "gateway/gw.h"
#include "gateway/proto/identity.h"
#include "gateway/proto/peers.h"
#include "gateway/store/store.h"

/* What the gateway counts, shown by fleetctl status under these names: one
 * list, so a counter cannot be added without its name. (Requests, tool calls
 * and sessions are counted by the MCP layer, which owns them.) */
#define FL_COUNTERS(X)                                                                             \
  X(MSGS_ACCEPTED, "messages_accepted")                                                            \
  X(MSGS_DRAINED, "messages_drained")                                                              \
  X(MSGS_HANDED, "messages_handed")                                                                \
  X(MSGS_DUPLICATE, "messages_duplicate")                                                          \
  X(MSGS_REFUSED_FULL, "messages_refused_full")                                                    \
  X(MSGS_EXPIRED, "messages_expired")                                                              \
  X(NUDGES, "nudges")                                                                              \
  X(NUDGE_FAILURES, "nudge_failures")                                                              \
  X(NUDGES_DEFERRED, "nudges_deferred")                                                            \
  X(STORE_ERRORS, "store_errors")                                                                  \
  X(STORE_DISK_FULL, "store_disk_full")           /* store writes that found the disk full */      \
  X(STORE_BATCH_FAILURES, "store_batch_failures") /* bursts of deliveries not committed */         \
  X(DELIVERIES_REQUEUED, "deliveries_requeued")   /* given back to the broker, not durable */      \
  X(INBOX_CANCELLED, "inbox_cancelled")           /* the broker cancelled an inbox consumer */     \
  X(INBOX_FOREIGN, "inbox_foreign")               /* an inbox queue declared by someone else */    \
  X(REMOTE_REFUSED_DEGRADED, "remote_refused_degraded") /* sends to an inbox not consumed */       \
  X(REMOTE_PUBLISHED, "remote_published")                                                          \
  X(REMOTE_PUBLISH_FAILED, "remote_publish_failed")                                                \
  X(REMOTE_RECEIVED, "remote_received")                                                            \
  X(REMOTE_DEAD_LETTERED, "remote_dead_lettered")                                                  \
  X(PRESENCE_RECEIVED, "presence_received")                                                        \
  X(PRESENCE_REFUSED, "presence_refused")                                                          \
  X(PRESENCE_GID_REFUSED, "presence_gid_refused")                                                  \
  X(ROSTER_FORGOTTEN, "roster_forgotten") /* remote entities dropped to make room */               \
  X(BROKER_DISCONNECTS, "broker_disconnects")                                                      \
  X(VERIFY_BAD_SIGNATURE, "verify_bad_signature")                                                  \
  X(VERIFY_UNPINNED, "verify_unpinned")                                                            \
  X(VERIFY_MISATTRIBUTED, "verify_misattributed")                                                  \
  X(VERIFY_WRONG_RECIPIENT, "verify_wrong_recipient")                                              \
  X(VERIFY_EXPIRED, "verify_expired")                                                              \
  X(VERIFY_TOO_OLD, "verify_too_old") /* older than the seen-set remembers */                      \
  X(VERIFY_DUPLICATE, "verify_duplicate")                                                          \
  X(REDELIVERIES_ACKED, "redeliveries_acked")                                                      \
  X(VERIFY_NEWER_MAJOR, "verify_newer_major")                                                      \
  X(VERIFY_MALFORMED, "verify_malformed")                                                          \
  X(VERIFY_UNSEALED, "verify_unsealed")                                                            \
  X(VERIFY_SEAL_BROKEN, "verify_seal_broken")                                                      \
  X(VERIFY_SEALED_ELSEWHERE, "verify_sealed_elsewhere")                                            \
  X(SPAWNS, "spawns")                                                                              \
  X(SPAWN_FAILURES, "spawn_failures")                                                              \
  X(STOPS, "stops")                                                                                \
  X(STOPS_REFUSED, "stops_refused")                                                                \
  X(SPAWNS_REFUSED, "spawns_refused")                                                              \
  X(ROOM_PUBLISHED, "room_published")                                                              \
  X(ROOM_MERGED, "room_merged")                                                                    \
  X(ROOM_DROPPED, "room_dropped")                                                                  \
  X(ROOM_CAPPED, "room_capped")                                                                    \
  X(ROOM_SERVED, "room_served")                                                                    \
  X(ROOM_PULLS_FAILED, "room_pulls_failed")                                                        \
  X(ROOM_PULLS_REFUSED, "room_pulls_refused")                                                      \
  X(CONTROL_RECEIVED, "control_received")                                                          \
  X(CONTROL_REFUSED, "control_refused")                                                            \
  X(SPAWNS_FOR_HOSTS, "spawns_for_hosts")                                                          \
  X(SPAWN_DUPLICATES, "spawn_duplicates")                                                          \
  X(STOPS_FOR_HOSTS, "stops_for_hosts")                                                            \
  X(BRIEFS_INJECTED, "briefs_injected")                                                            \
  X(INJECT_FAILURES, "inject_failures")                                                            \
  X(INJECT_DRAFTS_DEFERRED, "inject_drafts_deferred")                                              \
  X(INJECT_BUSY_DEFERRED, "inject_busy_deferred")                                                  \
  X(BRIEFS_DUPLICATE, "briefs_duplicate")                                                          \
  X(ASKS, "asks")                                                                                  \
  X(ASKS_NO_WAITER, "asks_no_waiter")                                                              \
  X(ASKS_ANSWERED, "asks_answered")                                                                \
  X(ASKS_TOO_LATE, "asks_too_late")                                                                \
  X(FANOUTS, "fanouts")

#define FL_COUNTER_ENUM(name, text) FL_C_##name,
enum fl_counter { FL_COUNTERS(FL_COUNTER_ENUM) FL_C_COUNT };
#undef FL_COUNTER_ENUM

void fl_gw_count(fl_gw *gw, enum fl_counter c);
/* fleetctl status's whole JSON, from the source set with
 * fl_gw_set_status_source (else fl_gw_status): a new reference. */
json_t *fl_gw_status_full(fl_gw *gw);

struct fl_remote_ops;
struct fl_module;

struct fl_client {
  fl_gw *gw;
  fl_entity *entity; /* NULL for an anonymous session */
  const fl_client_ops *ops;
  void *ctx;
  fl_wait *waits; /* oldest first */
  size_t nwaits;
  int operator_session; /* fl_ident's: this host's operator (fleetctl) */
};

struct fl_gw {
  uv_loop_t *loop;
  fl_gw_config cfg;
  /* The feature modules (module.h), as the composition root listed them. */
  const struct fl_module *const *modules;
  size_t nmodules;
  /* Where the full status comes from (fl_gw_set_status_source), or NULL. */
  fl_gw_status_fn status_fn;
  void *status_ctx;
  fl_store *store;
  fl_entity *entities; /* the roster (roster.c) */
  size_t nentities;
  size_t entities_made; /* ever, so each entity's seq is its own (roster.c) */
  /* The last order fl_roster_sorted made (roster.c): n entities, cap
   * allocated; emptied (n = 0: to be made again) when an entity is made,
   * renamed, hidden, shown again or forgotten. */
  struct {
    fl_entity **v;
    size_t n, cap;
  } sorted;
  fl_gid_index by_gid; /* the roster by gid (roster.c) */
  size_t nclients;
  uv_timer_t sweep;
  long long started_ms;
  unsigned long long counters[FL_C_COUNT];
  fl_histo histos[FL_H_COUNT]; /* the latency histograms (histo.h) */
  fl_trace_ring traces;        /* router.c's */
  int shutting_down;
  /* This gateway's key pair and the peers' pinned public keys. */
  fl_identity id;
  fl_peers *peers;
  /* The cross-host backend (remote.h), NULL in single-host mode. */
  const struct fl_remote_ops *remote;
  void *remote_ctx;
  /* Keys per peer host (pairkey.h; wire.c makes them on first use),
   * dropped when a pin is removed, wiped with the cross-host backend
   * (fl_wire_keys_free). */
  struct fl_pairkeys *pairkeys;
  /* Spawns waiting for their agent to register (spawn.c). */
  struct fl_spawn *spawns;
  /* Results of calls completed while a store batch is open, given out once
   * it committed (wait.c's fl_wait_defer_begin/end). */
  int defer_done;
  struct fl_wait_done *done_head, **done_tail;
  /* Room federation (room.h), NULL when rooms are off. */
  struct fl_rooms *rooms;
  /* The forward path's queues and timers (forward.c). */
  struct fl_forward *forward;
  /* Asks put to this host's entities, by turn (ask.c). */
  struct fl_turns *turns;
  /* The link to the coordinator vhost (coord.c), NULL without one. */
  struct fl_coord *coord;
  /* The HTTP endpoint (dashboard.h), NULL when http is off. */
  struct fl_dash *dash;
  /* What fleetctl dlq needs on the loop (dlq.h), NULL until first used. */
  struct fl_dlq *dlq;
  /* What agents' hooks reported (hook.h), NULL until the first report. */
  struct fl_hooks *hooks;
  /* Permission requests waiting for a lead (approve.h), NULL until the
   * first. */
  struct fl_approvals *approvals;
  /* Briefs handed to agents' hooks (hook_deliver.h), NULL until first used. */
  struct fl_hook_doors *hook_doors;
};

#endif
