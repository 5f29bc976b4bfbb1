/* store.h — the durable hold store (SQLite, WAL) in the state dir.
 *
 * Holds two things that must survive a kill -9 of fleetd:
 *   - entities: gid <-> name, role, groups, so a name that comes back after a
 *     restart resumes the same gid and its held messages;
 *   - held messages: everything accepted for a local entity and not yet
 *     drained, plus a bounded seen-set of msgIds so a message is stored, and
 *     so drained, at most once (dedup by msgId).
 *
 * Every call is synchronous and runs on the loop thread; SQLite in WAL mode
 * with synchronous=NORMAL commits in well under a millisecond on local disk.
 * A put has committed when it returns 0: only then may fleet acknowledge. */
#ifndef FL_STORE_H
#define FL_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "common/limits.h"

typedef struct fl_store fl_store;

/* How the host a message came from was proven (fl_msg.auth, fl_fwd.auth):
 * its Ed25519 signature checked against that host's pinned key (the signed
 * form), or its body opened under the pair key that only that host and
 * this one hold (the pair-sealed form, wire-format.md). NONE: a message of
 * this host, or a brief recorded by a fleetd that did not keep it. */
enum fl_msg_auth { FL_AUTH_NONE = 0, FL_AUTH_SIGNED = 1, FL_AUTH_PAIR_SEALED = 2 };

/* One held message. Strings are NUL-terminated; optional ones are "". */
typedef struct fl_msg {
  int64_t seq; /* store order, set by fl_store_put */
  char msg_id[FL_ID_LEN];
  char trace_id[FL_ID_LEN];
  char kind[16]; /* SEND, REPLY, BROADCAST, ... */
  char from_gid[FL_ID_LEN];
  char from_name[FL_MAX_NAME + 1];
  char to_gid[FL_ID_LEN];
  char in_reply_to[FL_ID_LEN]; /* msgId this answers, or "" */
  char turn_id[FL_ID_LEN];     /* an ask's turn (ASK, ANSWER, ...; never stored), or "" */
  int64_t ts_ms;               /* accepted at, ms since epoch */
  int64_t expires_ms;          /* 0 = never */
  int auth;      /* enum fl_msg_auth: how its host was proven (kept for briefs only) */
  char *content; /* owned; NUL-terminated UTF-8 */
  size_t content_len;
  int handed; /* set by fl_store_admit: recorded as seen only, for a waiting call */
} fl_msg;

typedef struct fl_entity_rec {
  char gid[FL_ID_LEN];
  char name[FL_MAX_NAME + 1];
  char role[FL_MAX_ROLE + 1];
  char groups[FL_MAX_GROUPS * (FL_MAX_GROUP_NAME + 1) + 1]; /* comma list */
  char host[64]; /* remote entities only: the host its presence came from */
} fl_entity_rec;

/* Opens (creating if needed) the database at path. On success *out is a new
 * store the caller frees with fl_store_close. The file is created, or
 * narrowed, to mode 0600 (it holds message bodies). Returns 0, -errno when
 * the file cannot be opened, FL_ENOMEM or FL_ESTORE. */
int fl_store_open(const char *path, fl_store **out);
/* How hard a commit reaches the disk: 0 = synchronous=NORMAL (the default:
 * survives a crash of fleetd; a power loss can undo the last commits), 1 =
 * FULL (each commit is fsynced: survives a power loss too, and costs a sync
 * per commit). 0 or FL_ESTORE. */
int fl_store_set_sync(fl_store *s, int full);
/* 0 while the database's path still names the file opened (same device
 * and inode); FL_ESTORE, logged loudly once, when it was deleted or
 * replaced: from then on every commit is refused, since nothing written
 * to the unlinked file would survive a restart. The sweeper runs it; each
 * commit checks, with one fstat, that the file opened still has a name. */
int fl_store_check_file(fl_store *s);
/* Closes and sets *s to NULL. NULL-safe. */
void fl_store_close(fl_store **s);

/* Stores m (content copied; m is still the caller's) and sets m->seq.
 * The dedup key is (msg_id, to_gid): one broadcast msgId is held once per
 * recipient. Returns 0, FL_EDUP if that key was stored or drained before
 * (nothing changes), FL_EFULL if m->to_gid already holds FL_MAX_HELD_PER_ENTITY
 * messages (expired ones not yet swept count too: the cap bounds storage),
 * FL_EINVAL if msg_id or to_gid is "" or a field is not NUL-terminated,
 * FL_ETOOBIG if content_len > FL_MAX_CONTENT, FL_ESTORE on a database error. */
int fl_store_put(fl_store *s, fl_msg *m);

/* How fl_store_admit takes a message in. */
enum fl_admit {
  FL_ADMIT_HOLD, /* as fl_store_put */
  /* A waiting call of the recipient will take it: when the recipient holds
   * nothing, only its msgId is recorded (the seen-set dedups it from then
   * on) and m->handed is set; otherwise it is held as by fl_store_put. In a
   * batch, for a recipient known to hold nothing (store_empty.c), that is
   * one statement. */
  FL_ADMIT_HAND,
  /* Holds a message admitted before as handed whose call went away: no
   * dedup check, no cap, no new seen entry. */
  FL_ADMIT_SEEN_ALREADY,
};
/* fl_store_put with a choice of how (above); one transaction either way. A
 * handed message is in the caller's hands alone: it must reach its call,
 * or be admitted again with FL_ADMIT_SEEN_ALREADY. */
int fl_store_admit(fl_store *s, fl_msg *m, enum fl_admit how);

/* Removes and returns up to max held messages for to_gid, oldest first,
 * optionally only those from from_gid (NULL or "" = any), skipping expired
 * ones (expires_ms != 0 && expires_ms <= now_ms; those are left for
 * fl_store_expire). One transaction: a message is returned by exactly one
 * take. *out is a new array of *n messages the caller frees with
 * fl_msgs_free (NULL when *n is 0). Drained msgIds stay in the seen-set. */
int fl_store_take(fl_store *s, const char *to_gid, const char *from_gid, size_t max, int64_t now_ms,
                  fl_msg **out, size_t *n);
/* As fl_store_take for every sender, but the messages stay held: a copy
 * of the oldest max unexpired ones for to_gid (free with fl_msgs_free). */
int fl_store_peek(fl_store *s, const char *to_gid, size_t max, int64_t now_ms, fl_msg **out,
                  size_t *n);

/* Removes and returns the one held message (to_gid, msg_id) into *out
 * (caller frees out->content with fl_free). FL_ENOTFOUND if not held. Expiry
 * is not checked: the caller names the message it just stored. On failure
 * out->content is NULL. */
int fl_store_take_id(fl_store *s, const char *to_gid, const char *msg_id, fl_msg *out);

/* Number of held, unexpired messages for to_gid. */
int fl_store_count(fl_store *s, const char *to_gid, int64_t now_ms, size_t *n);

/* Sets *held to 1 when (to_gid, msg_id) is held now (not just seen). */
int fl_store_is_held(fl_store *s, const char *to_gid, const char *msg_id, int *held);

/* Total held messages (all entities), for status. */
int fl_store_total(fl_store *s, size_t *n);

/* Deletes held messages whose expires_ms has passed; *dropped (may be NULL)
 * says how many. Then fl_store_trim_seen. */
int fl_store_expire(fl_store *s, int64_t now_ms, size_t *dropped);

/* The seen-set (limits.h, FL_MAX_SEEN). Each key is kept until
 * fl_store_seen_until of its message: expires_ms (0 = none), and at most
 * FL_ENVELOPE_MAX_LIFE_MS after ts_ms. */
long long fl_store_seen_until(long long ts_ms, long long expires_ms);
/* Drops the keys whose time has passed, then, over the count bound, the
 * ones that expire first, moving the horizon up to the last expiry dropped
 * (stored: it survives a restart). Keys still held are kept. Runs on its
 * own after a tenth of the bound in new keys, and with each sweep. */
int fl_store_trim_seen(fl_store *s, long long now_ms);
/* An envelope whose fl_store_seen_until is at or before this may have been
 * seen and forgotten: refuse it. 0 until the bound was first reached. */
long long fl_store_seen_horizon(const fl_store *s);
/* The count bound (store.maxSeen), clamped to FL_MIN_SEEN..FL_MAX_MAX_SEEN. */
void fl_store_set_max_seen(fl_store *s, size_t n);

/* Inserts or updates an entity by gid. FL_ENAMETAKEN if another gid already
 * has e->name (nothing changes). */
int fl_store_entity_put(fl_store *s, const fl_entity_rec *e);
/* Deletes the entity gid (its row only; a gid not stored is not an error). */
int fl_store_entity_delete(fl_store *s, const char *gid);
/* Finds an entity by name. Returns 0 and fills *e, or FL_ENOTFOUND. */
int fl_store_entity_by_name(fl_store *s, const char *name, fl_entity_rec *e);
/* Calls cb for every stored entity (for loading the roster at start), in
 * insertion order. e is borrowed for the call; cb must not call into the
 * store. */
int fl_store_entity_each(fl_store *s, void (*cb)(void *ctx, const fl_entity_rec *e), void *ctx);

/* Other hosts' entities, as verified presence described them (remote
 * entities are never in the local table): upsert by gid, list, and forget
 * every one of a host (its pin was removed). */
int fl_store_remote_put(fl_store *s, const fl_entity_rec *e);
int fl_store_remote_each(fl_store *s, void (*cb)(void *ctx, const fl_entity_rec *e), void *ctx);
int fl_store_remote_drop_host(fl_store *s, const char *host);
/* Forgets one remote entity (its host said it is gone). 0 or FL_ESTORE. */
int fl_store_remote_delete(fl_store *s, const char *gid);

/* One spawn this host ran (store_spawn.c), keyed by its spawnId, which is
 * the agent's gid. state: "launching", "ready", "failed" or "stopped". */
typedef struct fl_spawn_rec {
  char gid[FL_ID_LEN];
  char by[FL_ID_LEN]; /* the spawner's gid */
  char by_host[64];   /* the spawner's host ("" = this one) */
  char profile[FL_MAX_NAME + 1];
  char name[FL_MAX_NAME + 1];
  char state[16];
  char why[FL_MAX_ERRMSG]; /* a failure's reason, else "" */
  int64_t ts_ms;           /* last change */
  /* The terminal fleetd opened for it ("" = none: it is never closed). */
  char pane[FL_MAX_PANE + 1];
  char socket[FL_MAX_PATH + 1];
} fl_spawn_rec;

/* Records r (inserted, or for a known gid its state, why and ts updated);
 * records older than FL_SPAWN_RECORD_KEEP_MS are dropped on the way. 0,
 * FL_EINVAL or FL_ESTORE. */
int fl_store_spawn_put(fl_store *s, const fl_spawn_rec *r);
/* The record of gid (any case): 0 with *out filled, FL_ENOTFOUND, FL_EINVAL
 * or FL_ESTORE. */
int fl_store_spawn_get(fl_store *s, const char *gid, fl_spawn_rec *out);

/* A batch makes every call until fl_store_batch_end one transaction (each
 * call a savepoint inside it), so a burst of puts costs one commit. Nothing
 * in a batch is durable before fl_store_batch_end returned 0: a caller
 * acknowledges only after that. On failure of the end, the whole batch is
 * rolled back. The keys of messages handed in the batch are made durable
 * last, even so: the caller answers the calls that have them right after
 * fl_store_batch_end, before anything else. */
int fl_store_batch_begin(fl_store *s);
int fl_store_batch_end(fl_store *s);

/* Frees an array from fl_store_take (and each content). NULL-safe. */
void fl_msgs_free(fl_msg *msgs, size_t n);

/* ---- rooms (store_rooms.c) ----
 *
 * Each registered room, its log of merged envelopes (seq rising across all
 * rooms, so a seq is a cursor), the msgIds it ever took (so a message
 * dropped by the cap is not merged again) and each peer's cursor. */

/* Creates the room tables if absent. 0 or FL_ESTORE. */
int fl_store_rooms_open(fl_store *s);
/* Registers room_id under label (again: nothing changes). */
int fl_store_room_put(fl_store *s, const char *room_id, const char *label);
/* cb for every registered room, in label order. */
int fl_store_room_each(fl_store *s,
                       void (*cb)(void *ctx, const char *room_id, const char *label,
                                  long long count, long long dropped),
                       void *ctx);
/* Appends item (the envelope as served, without hops) under msg_id with
 * hops, then drops the oldest beyond max. Returns 0 with *seq and *dropped
 * set, FL_EDUP when the room took msg_id before, or FL_ESTORE. */
int fl_store_room_append(fl_store *s, const char *room_id, const char *msg_id, const char *item,
                         int hops, size_t max, long long *seq, size_t *dropped);
/* cb for each message of room_id with seq > after, oldest first, at most
 * limit. */
int fl_store_room_after(fl_store *s, const char *room_id, long long after, size_t limit,
                        void (*cb)(void *ctx, long long seq, const char *item, int hops),
                        void *ctx);
/* A peer's cursor in a room (0 when none), and setting it. */
int fl_store_room_cursor(fl_store *s, const char *room_id, const char *peer, long long *cursor);
int fl_store_room_cursor_put(fl_store *s, const char *room_id, const char *peer, long long cursor);
/* cb for each peer's cursor in room_id. */
int fl_store_room_cursor_each(fl_store *s, const char *room_id,
                              void (*cb)(void *ctx, const char *peer, long long cursor), void *ctx);

#endif
