/* beat.h — presence beat bodies: built and parsed.
 *
 * Two kinds of beat travel on fleet.roster. An entity beat (key
 * roster.<host>.<gid>) is one entity's {name, role, groups, status,
 * delivery, inbox}; a gateway sends one when an entity joins, changes or
 * leaves ("inbox": "degraded" only while its broker inbox is a queue its
 * gateway did not declare).
 * A host beat (key roster.<host>._gateway) is the gateway's own entry,
 * {host, version, entities, profiles, agents}, sent every interval: its
 * `agents` array lists up to FL_MAX_BEAT_AGENTS local entities, each an
 * entity body with its gid, so one signature refreshes a whole host. A
 * host beat without `agents` comes from a gateway that refreshes every
 * entity with an entity beat of its own instead.
 *
 * Everything here is pure: no loop, no store, safe on any thread. The
 * presence simulator (bench/) builds its beats with these same functions. */
#ifndef FL_BEAT_H
#define FL_BEAT_H

#include <jansson.h>
#include <stddef.h>

#include "common/ids.h"
#include "common/limits.h"

/* The body of one entity's beat, as taken: every string valid by the name
 * rule, at most FL_MAX_GROUPS groups (invalid ones are dropped). */
typedef struct fl_beat {
  char name[FL_MAX_NAME + 1];
  char role[FL_MAX_ROLE + 1]; /* "agent" when absent or not a valid name */
  char groups[FL_MAX_GROUPS][FL_MAX_GROUP_NAME + 1];
  size_t ngroups;
  int online;         /* status was "online" */
  int gone;           /* status was "gone": it left for good (fleet_stop) */
  int inject;         /* "delivery": "inject": its messages are typed into a terminal */
  int inbox_degraded; /* "inbox": "degraded": its broker inbox is someone else's queue */
} fl_beat;

/* One entry of a host beat's `agents`: an entity beat and its gid. */
typedef struct fl_listed_beat {
  char gid[FL_ID_LEN];
  fl_beat b;
} fl_listed_beat;

/* A spawn profile as another host announces it: what it is, never what it
 * runs (command, cwd and env stay on that host). */
typedef struct fl_profile_ad {
  char name[FL_MAX_NAME + 1];
  char backend[8]; /* "tmux" or "exec" */
  char role[FL_MAX_ROLE + 1];
  char groups[FL_MAX_GROUPS][FL_MAX_GROUP_NAME + 1];
  size_t ngroups;
} fl_profile_ad;

/* The body of a host's _gateway beat, as taken. */
typedef struct fl_gateway_beat {
  fl_profile_ad profiles[FL_MAX_PROFILES];
  size_t nprofiles;
  int lists_agents;       /* the body has an `agents` array */
  fl_listed_beat *agents; /* owned: the valid entries, at most FL_MAX_BEAT_AGENTS */
  size_t nagents;
  size_t agents_dropped; /* entries that were malformed or past the cap */
} fl_gateway_beat;

/* An entity beat's body: {name, role, groups, status, delivery}; delivery
 * NULL leaves it out (reads "pull"). A new object, NULL on out-of-memory. */
json_t *fl_beat_json(const char *name, const char *role,
                     const char (*groups)[FL_MAX_GROUP_NAME + 1], size_t ngroups,
                     const char *status, const char *delivery);

/* A host beat's body: {host, version, entities, profiles, agents}; profiles
 * and agents (arrays) are stolen, agents NULL leaves the key out. A new
 * object, NULL on out-of-memory (both arrays are released then too). */
json_t *fl_beat_gateway_json(const char *host, const char *version, size_t entities,
                             json_t *profiles, json_t *agents);

/* Adds entity body (stolen) under gid to a host beat's agents array: 0, or
 * FL_ENOMEM (body released). */
int fl_beat_list(json_t *agents, const char *gid, json_t *body);

/* Parses an entity beat's JSON body (len bytes, body may be NULL when len
 * is 0): an object with a valid "name" and a string "status"; "role" and
 * "groups" optional. 0 with *out filled, or FL_EINVAL (out zeroed). */
int fl_beat_parse(const char *body, size_t len, fl_beat *out);

/* Parses a _gateway beat's JSON body (len bytes; body may be NULL when len
 * is 0) from host: an object whose "host" is host, with an optional
 * "profiles" array of {name, backend, role, groups} and an optional
 * "agents" array of entity bodies with a "gid". A profile with an invalid
 * name or backend, a repeated name or past FL_MAX_PROFILES is dropped; an
 * invalid role reads "worker", invalid groups are dropped. An agent whose
 * gid is not a UUID or whose body does not parse, or past
 * FL_MAX_BEAT_AGENTS, is dropped and counted. 0 with *out filled (free it
 * with fl_beat_gateway_clear), FL_EINVAL (out zeroed) or FL_ENOMEM. */
int fl_beat_parse_gateway(const char *body, size_t len, const char *host, fl_gateway_beat *out);

/* Frees what fl_beat_parse_gateway allocated in b. NULL-safe. */
void fl_beat_gateway_clear(fl_gateway_beat *b);

/* Is a beat stamped ts / expires_at (RFC 3339) fresh at now_ms? newest_ms
 * is the ts of the newest beat already taken for its gid, or NULL for none.
 * 0 with *ts_ms set; FL_EINVAL when a stamp does not parse or the beat has
 * expired; FL_EDUP when it is older than the newest (a replay). */
int fl_beat_fresh(const char *ts, const char *expires_at, long long now_ms,
                  const long long *newest_ms, long long *ts_ms);

#endif
