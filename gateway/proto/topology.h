/* topology.h — every name fleet gives things on the broker: exchanges,
 * queues and routing keys, and the builders that put them together.
 *
 * docs/wire-format.md ("Where messages go") is the contract:
 *
 *   exchange       type    routing key                          queues bound
 *   fleet.msg      topic   <gid>, broadcast.<host>.all,         agent.<gid>.inbox.v2
 *                          broadcast.<host>.<g> (sealed, one
 *                          copy per host); broadcast.all,
 *                          broadcast.<g> (in clear, seal off)
 *   fleet.roster   topic   roster.<host>.<gid>,                 roster.<host> (key roster.#)
 *                          roster.<host>._gateway
 *   fleet.control  direct  <host>                               control.<host>
 *   fleet.dlx      fanout  -                                    fleet.dlq
 *
 * Anything that names a queue or builds a key uses this header, so renaming
 * one is a change in one place (and a wire-format change: every gateway
 * must agree). Builders write a NUL-terminated name into the caller's
 * buffer and return 0, FL_EINVAL (a NULL argument or a part that is not a
 * name under common/names.h, which would add or split routing-key words) or
 * FL_ETOOBIG (it does not fit; out is then ""). Pure functions, any thread. */
#ifndef FL_TOPOLOGY_H
#define FL_TOPOLOGY_H

#include <stddef.h>

/* Messages to entities: direct by gid, broadcasts by group. */
#define FL_EX_MSG "fleet.msg"
#define FL_EX_MSG_TYPE "topic"
/* Presence beats. */
#define FL_EX_ROSTER "fleet.roster"
#define FL_EX_ROSTER_TYPE "topic"
/* Spawn / stop for one host, keyed by its host id. */
#define FL_EX_CONTROL "fleet.control"
#define FL_EX_CONTROL_TYPE "direct"
/* Where inboxes dead-letter to; it feeds the capped fleet.dlq. */
/* Work claims: every gateway's claims.<host> queue gets every claim. */
#define FL_EX_CLAIMS "fleet.claims"
#define FL_EX_CLAIMS_TYPE "fanout"
#define FL_KEY_CLAIMS ""

#define FL_EX_DLX "fleet.dlx"
#define FL_EX_DLX_TYPE "fanout"
#define FL_Q_DLQ "fleet.dlq"
/* A fanout exchange ignores keys; fleet.dlq is bound with the empty one. */
#define FL_KEY_DLQ ""

/* The first word of every broadcast key and every roster key. */
#define FL_KEY_BROADCAST_PREFIX "broadcast."
#define FL_KEY_ROSTER_PREFIX "roster."
/* Every inbox is bound to fleet.msg with this key as well as its gid. */
#define FL_KEY_BROADCAST_ALL FL_KEY_BROADCAST_PREFIX "all"
/* roster.<host> is bound to fleet.roster with this key: every beat. */
#define FL_KEY_ROSTER_ALL FL_KEY_ROSTER_PREFIX "#"
/* The "gid" of a gateway's own presence beat, roster.<host>._gateway. */
#define FL_GID_GATEWAY "_gateway"

/* agent.<gid>.inbox.v2: one entity's durable inbox, bound to fleet.msg. */
int fl_topology_inbox_queue(char *out, size_t n, const char *gid);

/* control.<host>: a host's control queue, bound to fleet.control with the
 * key <host> itself. */
int fl_topology_control_queue(char *out, size_t n, const char *host);

/* roster.<host>: the queue a host reads every presence beat from. */
int fl_topology_roster_queue(char *out, size_t n, const char *host);
/* claims.<host>: this gateway's copy of every claim (fleet.claims). */
int fl_topology_claims_queue(char *out, size_t n, const char *host);

/* roster.<host>.<gid>: the key of an entity's presence beat on fleet.roster
 * (gid FL_GID_GATEWAY for the gateway's own beat). */
int fl_topology_roster_key(char *out, size_t n, const char *host, const char *gid);

/* broadcast.<group>: the key of a broadcast on fleet.msg; group NULL gives
 * FL_KEY_BROADCAST_ALL. */
int fl_topology_broadcast_key(char *out, size_t n, const char *group);

/* broadcast.<host>.<group>: the key of the copy of a broadcast for one
 * host's members (sealed to that host); group NULL gives
 * broadcast.<host>.all. Each inbox is bound to its own host's keys only. */
int fl_topology_host_broadcast_key(char *out, size_t n, const char *host, const char *group);

/* The <group> part ("all" for everyone) of a host broadcast key
 * broadcast.<host>.<group> (a pointer into key), or NULL when key is not
 * one for host. */
const char *fl_topology_host_broadcast_key_group(const char *key, const char *host);

/* The <gid> part of a roster key roster.<host>.<gid> (a pointer into key),
 * or NULL when key is not a roster key of host. host is taken as it is (it
 * comes from a message and is checked elsewhere). */
const char *fl_topology_roster_key_gid(const char *key, const char *host);

/* The <group> part of a broadcast key broadcast.<group> (a pointer into
 * key; "all" for FL_KEY_BROADCAST_ALL), or NULL when key is not one. */
const char *fl_topology_broadcast_key_group(const char *key);

#endif
