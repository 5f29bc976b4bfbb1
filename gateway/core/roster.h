/* roster.h — the entities a gateway knows, and how a name finds one.
 *
 * An entity is a gid with a name, a role and groups. Local entities are this
 * host's: persisted in the hold store, so a name that comes back after a
 * restart resumes its gid and its held messages, and never freed while the
 * gateway lives (a name that leaves may come back), so their embedded
 * handles stay valid until fl_roster_close. Remote entities are other
 * hosts', written by presence (presence.c) from signed beats; the core reads
 * them like local ones and routes to them through remote.h. When the roster
 * is full, the remote entities that left or have been offline longest are
 * forgotten to make room (fl_roster_reclaim); nothing keeps a pointer to a
 * remote entity past the loop callback that looked it up.
 *
 * Internal to gateway/. Loop thread only; nothing blocks but the local
 * SQLite commit of fl_entity_persist. */
#ifndef FL_ROSTER_H
#define FL_ROSTER_H

#include <jansson.h>
#include <stddef.h>
#include <uv.h>

#include "common/limits.h"
#include "gateway/gw.h"
#include "gateway/store/store.h"

typedef struct fl_entity fl_entity;

/* The fields a listing, a lookup or a beat reads come first, together: a
 * roster of thousands is walked whole for every fleet_list, and what the
 * walk reads of each entity should be a few cache lines, not one at each end
 * of its 4 KB (most of it paths and the nudge's timers). */
struct fl_entity {
  fl_entity *next;
  fl_gw *gw;
  /* Made as the seq-th entity of the roster since start (1 = the first):
   * the list is newest first, so a higher seq is earlier in it
   * (fl_roster_sorted). */
  size_t seq;
  char gid[FL_ID_LEN];
  char name[FL_MAX_NAME + 1]; /* set with fl_entity_set_name (the kept order) */
  char role[FL_MAX_ROLE + 1];
  fl_client *client; /* the live session, or NULL when offline */
  long long last_seen_ms;
  /* Stopped (fleet_stop): a local entity that has left the roster for good;
   * hidden like a dropped one, and gone from the store. Set with
   * fl_entity_set_removed, dropped with fl_entity_set_dropped: what a
   * listing shows changes, and the kept order must know. */
  int removed;
  /* Remote entities (from another gateway's presence) live only here. */
  int remote;
  /* Its host was unpinned (fl_roster_drop_host), or was not pinned when the
   * store's memory of it was loaded: hidden from list, resolve and status
   * until a verified beat brings it back (presence.c). */
  int dropped;
  /* A remote entity's messages are typed into its terminal (its beat said
   * "delivery": "inject"), so a brief to it waits for INJECTED. */
  int delivery_inject;
  /* Its inbox queue on the broker was declared by someone else, with
   * other arguments (fabric.c): it is not consumed and may drop what the
   * broker confirms, so sends to it fail. A local entity's is what the link
   * reports; a remote one's what its host's last beat said ("inbox":
   * "degraded"). */
  int inbox_degraded;
  struct {
    int online;           /* as its last beat said */
    long long expires_ms; /* the beat's TTL runs out then (fl_mono_ms) */
    long long ts_ms;      /* ts of the newest beat taken: older ones are replays */
  } presence;             /* presence.c's */
  char host[64];
  size_t ngroups;
  char groups[FL_MAX_GROUPS][FL_MAX_GROUP_NAME + 1];
  /* A lead's coordId as its session gave it ("" = <name>@<fleet>; coord.c). */
  char coord_id[FL_MAX_COORD_ID + 1];
  /* Where a nudge is typed, as the live session gave it: the terminal
   * backend (inject.h; NULL = none) and its pane and server socket. */
  const struct fl_inject_type *inject;
  char pane[FL_MAX_PANE + 1];
  char tmux_socket[FL_MAX_PATH + 1];
  struct {
    uv_timer_t timer;   /* open from fl_entity_new to fl_roster_close */
    uv_timer_t recheck; /* the next look at a pane that was not idle; as timer */
    unsigned step;      /* reminders sent since the last drain */
    int armed;
    int pending;           /* a nudge line waits for the pane to be idle */
    int checking;          /* a status look at the pane is in flight */
    int deferred;          /* the pending line was put off (counted and logged once) */
    int typing;            /* the line is being typed (the forward path waits for it) */
    long long typed_at_ms; /* when the last line started being typed */
  } nudge;                 /* nudge.c's */
  /* A spawned agent (spawn.c): who spawned it (a gid, "" = not spawned; read
   * back from the store's spawn record when it attaches after a restart)
   * and the terminal its launch opened, which fleet_stop closes. */
  struct {
    char by[FL_ID_LEN];
    char profile[FL_MAX_NAME + 1];
    const struct fl_inject_type *backend;
    char pane[FL_MAX_PANE + 1];
    char socket[FL_MAX_PATH + 1];
  } spawn;
  unsigned closed; /* a forgotten entity's handles closed so far (of 2) */
  /* A remote entity's object as fleet_list last wrote it (list.c's; owned),
   * and the two inputs it had beyond the fields above that change with
   * every beat or state: written again when they differ. Its name, role,
   * host and groups change only as presence takes a beat (presence.c),
   * which forgets it (fl_entity_listed_forget) when they do. */
  struct {
    char *json, *text; /* the object, and the same escaped (fl_json_out) */
    size_t len, text_len;
    const char *status; /* one of fl_remote_status's static strings */
    long long seen;     /* last_seen_ms */
  } listed;
};

/* Adds a new entity (not persisted) to gw's roster and opens its handles.
 * The roster owns it until fl_roster_free; NULL when out of memory. */
fl_entity *fl_entity_new(fl_gw *gw, const char *gid, const char *name);
/* Finds an entity by gid (any case), local or remote; NULL if none. */
fl_entity *fl_entity_by_gid(fl_gw *gw, const char *gid);
/* Finds this host's entity called name; NULL if none. */
fl_entity *fl_entity_local_by_name(fl_gw *gw, const char *name);
/* The entities a listing shows (neither dropped nor removed), sorted by
 * name; entities of one name keep their roster order. *out is a new array
 * of *n borrowed pointers for the caller to fl_free (NULL when there are
 * none). Returns 0 or FL_ENOMEM. The order is kept on the gateway and
 * reused as it is: the roster changes far less often than it is listed. A
 * new entity, one renamed, hidden or shown again (the setters below) or
 * forgotten empties it, and the next call makes it again. */
int fl_roster_sorted(fl_gw *gw, fl_entity ***out, size_t *n);
/* 1 while e is in the roster: neither stopped (removed) nor of a host that
 * is not pinned (dropped). Such an entity stays in gw->entities (its
 * handles live on), so every walk of gw->entities that lists entities or
 * picks a message's recipients asks this first. */
int fl_entity_in_roster(const fl_entity *e);
/* Hides e from listings for good (fleet_stop), or hides it or shows it
 * again as its host is unpinned and pinned (the flags above). */
void fl_entity_set_removed(fl_entity *e);
void fl_entity_set_dropped(fl_entity *e, int dropped);
/* Names e (a remote entity renamed by its beat); the kept order is made
 * again when the name changed. */
void fl_entity_set_name(fl_entity *e, const char *name);
/* Frees e's kept listed object (above): its name, role, host or groups
 * changed. */
void fl_entity_listed_forget(fl_entity *e);
/* Asks the memory a listing reads of e to be brought into cache: a walk of
 * thousands of entities (each a 4 KB block of its own, seldom in cache)
 * asks for the one FL_ENTITY_AHEAD entries ahead of where it is, so the
 * waits overlap. */
void fl_entity_prefetch(const fl_entity *e);
#define FL_ENTITY_AHEAD 8
/* Replaces e's groups with the comma list csv (empty or overlong items
 * dropped, at most FL_MAX_GROUPS). */
void fl_entity_set_groups(fl_entity *e, const char *csv);
int fl_entity_in_group(const fl_entity *e, const char *group);
/* The host e lives on: its own for a remote entity, else this gateway's. */
const char *fl_entity_host(const fl_entity *e);
/* e as the store keeps it. */
void fl_entity_rec_of(const fl_entity *e, fl_entity_rec *r);
/* Writes local e to the store. 0 or the store's code (counted). */
int fl_entity_persist(fl_gw *gw, const fl_entity *e);
/* {"gid", "name"} of e, as results name a peer: a new reference. */
json_t *fl_entity_ref_json(const fl_entity *e);

/* Loads the local entities the store holds into gw's roster. 0 or the
 * store's code, with err saying what failed. */
int fl_roster_load(fl_gw *gw, char *err, size_t errlen);
/* Resolves `to` — a gid, a name, or name@host — across the roster (dropped
 * entities are not in it). 0 with *out set; FL_ENOTFOUND; FL_EAMBIGUOUS
 * when the name is on more than one host (err then lists the candidates as
 * name@host so the caller can pick one); FL_EUNPINNED when, with other
 * hosts reachable, `to` names a host that is neither this one nor pinned,
 * or nothing matched and the only candidates are on unpinned hosts (err
 * says how to pin it). */
int fl_roster_resolve(fl_gw *gw, const char *to, fl_entity **out, char *err, size_t errlen);
/* Drops host's remote entities from the roster (its pin was removed): they
 * read as gone (and offline) until a verified beat takes them back, and
 * another host may claim their gids. Returns how many were dropped. */
size_t fl_roster_drop_host(fl_gw *gw, const char *host);
/* 1 when host is this gateway's own or has a pinned key, else 0. */
int fl_roster_host_trusted(fl_gw *gw, const char *host);
/* Makes room in a full roster: forgets up to want remote entities without a
 * session that left (dropped) or whose presence ran out, those dropped and
 * then those seen longest ago first. Each leaves the roster, its index and
 * the store's memory at once and is freed when its handles have closed;
 * counted as roster_forgotten. Returns how many were forgotten. Call it only
 * where no pointer to a remote entity is held. */
size_t fl_roster_reclaim(fl_gw *gw, size_t want);
/* Closes every entity's handles (shutdown); run the loop before free. */
void fl_roster_close(fl_gw *gw);
/* Frees every entity. */
void fl_roster_free(fl_gw *gw);

#endif
