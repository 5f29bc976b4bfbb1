/* presence.h — who lives where: presence beats sent and taken.
 *
 * Every interval this gateway announces itself and its local entities in
 * one signed host beat on fleet.roster, and each entity alone whenever it
 * joins, changes or leaves (beat.h has the bodies). Beats from other
 * gateways build the remote part of the roster as soft state: a remote
 * entry reads offline once its TTL runs out, and unknown while the broker
 * link is down. A beat is taken only if it is
 * signed by its host's pinned key, fresh (not expired, not older than one
 * already taken: a replay cannot revive an entity), for a gid no other live
 * host holds, and within the roster cap. Refusals are counted each time and
 * logged once per host per minute (refusals.h).
 *
 * A delivery can overtake its sender's first beat (the beat travels another
 * queue): such a delivery is parked here, unacked, until the beat comes or
 * a presence interval and a second pass, then runs the receive checks
 * (inbound.c) again, or is dead-lettered.
 *
 * Threading: loop thread only; nothing blocks. */
#ifndef FL_PRESENCE_H
#define FL_PRESENCE_H

#include <stddef.h>

#include "common/json_writer.h"
#include "common/limits.h"
#include "gateway/broker/broker.h"
#include "gateway/fabric/beat.h"
#include "gateway/fabric/inbound.h"
#include "gateway/gw.h"

typedef struct fl_presence fl_presence;
typedef struct fl_entity fl_entity;

/* New presence for gw: beats every interval_ms, remote entries live ttl_ms;
 * released parked deliveries go to in (borrowed). No handle is open until
 * fl_presence_start. 0 or FL_ENOMEM. */
int fl_presence_new(fl_gw *gw, fl_inbound *in, unsigned interval_ms, unsigned ttl_ms,
                    fl_presence **out);
/* Adds the remote entities the store remembers (who lived where, as
 * verified presence last said), offline until their host beats again. */
void fl_presence_load(fl_presence *p);
/* Opens the timers and starts beating on b (borrowed until stop). */
void fl_presence_start(fl_presence *p, fl_broker *b);
/* The broker link went up (beat everything now) or down (remote entries
 * read unknown; parked deliveries are dropped: they come back with the
 * reconnect). */
void fl_presence_link(fl_presence *p, int up);
/* Announces one local entity now (no-op for a remote one or a down link). */
void fl_presence_entity(fl_presence *p, fl_entity *e);
/* Announces that local entity e left for good (status "gone"), so other
 * hosts drop it at once instead of after the TTL. No-op while down. */
void fl_presence_gone(fl_presence *p, const fl_entity *e);
/* Drops remote entity gid of host from the roster and the store's memory
 * now (its host said it is gone); beat_ts_ms is the stamp of what said so
 * (older beats of it are replays). No-op for a gid of another host. */
void fl_presence_forget(fl_presence *p, const char *host, const char *gid, long long beat_ts_ms);
/* A beat from fleet.roster (lent for the call); the caller acks it. */
void fl_presence_receive(fl_presence *p, const fl_broker_delivery *d);
/* Takes a beat that passed the checks: upserts the remote entity gid of
 * host (bringing it back if it was dropped), remembers it in the store when
 * it changed, and releases deliveries parked for it. 0; FL_EINVAL when gid lives on this host or on
 * another live host; FL_EFULL when the roster is full; FL_ENOMEM. Each refusal is counted and
 * logged. */
int fl_presence_take(fl_presence *p, const char *host, const char *gid, const fl_beat *b,
                     long long beat_ts_ms);
/* The envelope minor version of host's last host beat, which says the forms
 * it reads (1: the packed envelope, 2: the pair-sealed form; envelope.h);
 * -1 for a host never heard from, or one of another major, so a message to
 * it goes the way every gateway reads. NULL-safe. */
int fl_presence_host_minor(const fl_presence *p, const char *host);
/* Does some live, pinned host refresh its entities only with entity beats
 * (its host beat has no `agents`)? Then this gateway beats each of its
 * entities every interval too, so that host keeps seeing them. */
int fl_presence_peers_need_entity_beats(const fl_presence *p);
/* Every pinned host whose _gateway beat was taken, sorted by host: each a
 * {host, self: false, status, profiles: [{name, backend, role, groups}]},
 * status "online" while its last beat is within the TTL and the link is
 * up, else "unknown" (its last profiles are kept). Written to w, in the
 * array the caller opened; or as a new array (NULL on out-of-memory). */
void fl_presence_hosts_write(fl_presence *p, fl_jw *w);
json_t *fl_presence_hosts(fl_presence *p);
/* "online", "offline" or "unknown" for a remote entity. */
const char *fl_presence_status(const fl_presence *p, const fl_entity *e);
/* Did the refused presence of a host that is not pinned announce name in
 * the last few minutes? 1 with host (hostlen bytes) set, else 0. Unverified:
 * a hint for an error message, never a route. */
int fl_presence_unpinned_claim(fl_presence *p, const char *name, char *host, size_t hostlen);
/* Parks d (copied) until its sender's beat: 0, or FL_EFULL (FL_MAX_PARKED
 * are parked, or presence is not started), FL_ETOOBIG (routing key too long)
 * or FL_ENOMEM; then d is the caller's to settle. */
int fl_presence_park(fl_presence *p, const fl_broker_delivery *d);
/* Closes the timers (run the loop before fl_presence_free). NULL-safe. */
void fl_presence_stop(fl_presence *p);
/* Drops parked deliveries and frees p. NULL-safe; sets *p NULL. */
void fl_presence_free(fl_presence **p);

#endif
