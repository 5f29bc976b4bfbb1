/* spawn.c — agents started on this host from a spawn profile (spawn.h).
 *
 * A spawn is one launch waiting for its agent: fl_gw_spawn mints the gid,
 * picks the name, opens the profile's terminal with the agent's identity in
 * its environment (FLEET_GID, FLEET_NAME, FLEET_ROLE, FLEET_SOCKET,
 * FLEET_GROUPS, then the profile's env), and keeps the spawn armed until
 * the profile's readyTimeoutS. The caller waits wait_s on a waiter of its
 * own: if the agent's session attaches first (fl_spawn_attached) the answer
 * is `ready`; if wait_s runs out first it is `pending` and the spawn stays
 * armed. When readyTimeoutS passes unregistered the terminal is closed and
 * the spawn fails: as the caller's error if it still waits, else as a loud
 * log line and the spawn_failures counter. A brief goes to the agent once it
 * registers, as a SEND from the spawner on fleet_send's own path
 * (fl_router_send), so the agent's reply answers it; its msgId and the
 * spawn's trace are in every result (briefMsgId, traceId).
 *
 * A spawn asked for by another host (fl_spawn_for_host) takes the
 * requester's spawnId as its gid and has no waiting caller here: its
 * outcomes (pending once the terminal is open, then ready or the failure)
 * go back through fl_remote_spawn_answer. Every spawn is recorded in the
 * store (launching, ready, failed, stopped) with its spawner, so a repeated
 * spawnId is recognised (fl_spawn_known) and the stop rule holds after a
 * restart.
 *
 * A spawn is freed once its deadline timer has closed and no terminal
 * operation of its is in flight (refs). fl_gw_stop is the reverse of a
 * spawn: it closes the agent's terminal, hides the entity (removed), deletes
 * its row from the store and its inbox on the broker (which also tells other
 * hosts it is gone); an agent of another host is stopped by its gateway. */
#include "gateway/verbs/spawn.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/json_read.h"
#include "common/limits.h"
#include "common/log.h"
#include "gateway/core/gw_internal.h"
#include "gateway/core/nudge.h"
#include "gateway/core/remote.h"
#include "gateway/core/router.h"
#include "gateway/inject/inject.h"

struct fl_spawn {
  fl_spawn *next; /* in gw->spawns while armed */
  fl_gw *gw;
  const fl_profile *profile; /* in gw->cfg, which lives as long as gw */
  const fl_inject_type *backend;
  char gid[FL_ID_LEN];
  char name[FL_MAX_NAME + 1];
  char by[FL_ID_LEN]; /* the spawner's gid */
  char by_name[FL_MAX_NAME + 1];
  fl_spawn_origin origin; /* a spawn asked for by another host: where answers go */
  char pane[FL_MAX_PANE + 1];
  char socket[FL_MAX_PATH + 1];
  char *brief; /* owned, or NULL */
  /* The brief's msgId, minted at launch so the spawner hears it at once, and
   * the spawn's trace (the SPAWN's, for another host's): the brief and the
   * worker's reply to it join it. */
  char brief_id[FL_ID_LEN];
  char trace_id[FL_ID_LEN];
  fl_wait *wait; /* the caller's waiting call, or NULL once answered */
  uv_timer_t deadline;
  int refs;                 /* the deadline timer, and each terminal operation in flight */
  int opened;               /* pane holds the terminal */
  int covers;               /* the caller's wait runs to the deadline */
  int finished;             /* out of gw->spawns: no more outcomes */
  char fail[FL_MAX_ERRMSG]; /* the failure to report once the terminal is closed */
};

static void fl_spawn_put(fl_spawn *s) {
  if (--s->refs > 0)
    return;
  fl_free(s->brief);
  fl_free(s);
}

static void fl_spawn_timer_closed(uv_handle_t *h) { fl_spawn_put(h->data); }

/* Out of the armed list; the deadline goes. */
static void fl_spawn_finish(fl_spawn *s) {
  if (s->finished)
    return;
  s->finished = 1;
  for (fl_spawn **pp = &s->gw->spawns; *pp; pp = &(*pp)->next) {
    if (*pp == s) {
      *pp = s->next;
      break;
    }
  }
  /* A waiting caller (a failure still closing the terminal) is answered by
   * fl_spawn_report; s lives until then. */
  uv_close((uv_handle_t *)&s->deadline, fl_spawn_timer_closed);
}

static json_t *fl_spawn_result(const fl_spawn *s, const char *status) {
  json_t *r = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "gid", s->gid, "name", s->name, "host",
                        s->gw->cfg.host_id, "profile", s->profile->name, "status", status,
                        "traceId", s->trace_id);
  if (r && s->brief)
    json_object_set_new(r, "briefMsgId", json_string(s->brief_id));
  return r;
}

/* Writes s's record (state, and why for a failure) to the store. */
static void fl_spawn_record(fl_spawn *s, const char *state, const char *why) {
  fl_spawn_rec r;
  memset(&r, 0, sizeof r);
  fl_copy(r.gid, sizeof r.gid, s->gid);
  fl_copy(r.by, sizeof r.by, s->by);
  fl_copy(r.by_host, sizeof r.by_host, s->origin.host);
  fl_copy(r.profile, sizeof r.profile, s->profile->name);
  fl_copy(r.name, sizeof r.name, s->name);
  fl_copy(r.state, sizeof r.state, state);
  fl_copy(r.why, sizeof r.why, why);
  if (s->opened) {
    fl_copy(r.pane, sizeof r.pane, s->pane);
    fl_copy(r.socket, sizeof r.socket, s->socket);
  }
  r.ts_ms = fl_now_ms();
  if (fl_store_spawn_put(s->gw->store, &r) != 0)
    fl_gw_count(s->gw, FL_C_STORE_ERRORS);
}

/* The failure is final (the terminal, if any, is closed): tell the caller,
 * or the log when the caller already heard `pending`. */
static void fl_spawn_report(fl_spawn *s) {
  fl_gw_count(s->gw, FL_C_SPAWN_FAILURES);
  fl_spawn_record(s, "failed", s->fail);
  if (s->origin.host[0]) {
    fl_remote_spawn_answer(s->gw, &s->origin, NULL, s->fail);
  } else if (s->wait) {
    fl_wait *w = s->wait;
    s->wait = NULL;
    w->ext = NULL;
    fl_wait_complete(w, NULL, s->fail);
  } else {
    fl_error(NULL,
             "SPAWN FAILED after it was reported pending: '%s' (gid %s, profile %s): %s "
             "(spawn_failures %llu)",
             s->name, s->gid, s->profile->name, s->fail, s->gw->counters[FL_C_SPAWN_FAILURES]);
  }
}

static void fl_spawn_closed(void *ctx, int status) {
  fl_spawn *s = ctx;
  (void)status; /* a pane already gone is closed too */
  fl_spawn_report(s);
  fl_spawn_put(s);
}

/* Fails s with msg: closes its terminal first, so that the caller who hears
 * of it finds the terminal gone. */
static void fl_spawn_fail(fl_spawn *s, const char *msg) {
  if (s->finished)
    return;
  fl_copy(s->fail, sizeof s->fail, msg);
  fl_warn(s->trace_id, "spawn of '%s' (gid %s, profile %s) failed: %s", s->name, s->gid,
          s->profile->name, msg);
  int closing = 0;
  if (s->opened && s->backend->close) {
    fl_inject_target t = {.pane = s->pane, .socket = s->socket, .label = s->name};
    s->refs++;
    if (s->backend->close(s->gw->loop, &t, fl_spawn_closed, s) == 0)
      closing = 1;
    else
      s->refs--;
  }
  fl_spawn_finish(s); /* holds the refs: s lives until the close is done */
  if (!closing)
    fl_spawn_report(s);
}

static void fl_spawn_not_ready(fl_spawn *s) {
  char msg[FL_MAX_ERRMSG];
  fl_errf(msg, sizeof msg,
          "not ready within %u s: the agent's MCP client never registered (check the profile's "
          "command, and that it runs fleet-mcp with the FLEET_* environment it is given)",
          s->profile->ready_timeout_s);
  fl_spawn_fail(s, msg);
}

static void fl_spawn_deadline_cb(uv_timer_t *t) { fl_spawn_not_ready(t->data); }

/* The caller's wait_s is up (or the gateway is shutting down). */
static void fl_spawn_wait_timeout(fl_wait *w) {
  fl_spawn *s = w->ext;
  if (s && s->covers && !s->gw->shutting_down) {
    fl_spawn_not_ready(s);
    return;
  }
  if (s)
    s->wait = NULL;
  w->ext = NULL;
  fl_wait_complete(w, s ? fl_spawn_result(s, "pending") : NULL, s ? NULL : "spawn ended");
}

static void fl_spawn_wait_forget(fl_wait *w) {
  fl_spawn *s = w->ext;
  if (s)
    s->wait = NULL;
  w->ext = NULL;
}

static const fl_wait_ops fl_spawn_wait_ops = {.timeout = fl_spawn_wait_timeout,
                                              .forget = fl_spawn_wait_forget};

static void fl_spawn_opened(void *ctx, int status, const char *pane, const char *said) {
  fl_spawn *s = ctx;
  if (status == 0) {
    fl_copy(s->pane, sizeof s->pane, pane);
    s->opened = 1;
  }
  if (s->finished) {
    /* Shut down (or failed) while the terminal was opening: leave it be. */
  } else if (status != 0) {
    char msg[FL_MAX_ERRMSG];
    fl_errf(msg, sizeof msg, "launch failed: %s (check the profile's command and backend)",
            said && said[0] ? said : fl_strerror(status));
    fl_spawn_fail(s, msg);
  } else {
    fl_info(s->trace_id, "spawned '%s' (gid %s, profile %s) in pane %s; waiting for it to register",
            s->name, s->gid, s->profile->name, s->pane);
    if (s->origin.host[0]) {
      json_t *r = fl_spawn_result(s, "pending");
      fl_remote_spawn_answer(s->gw, &s->origin, r, NULL);
      json_decref(r);
    }
  }
  fl_spawn_put(s);
}

static const fl_profile *fl_profile_find(const fl_gw *gw, const char *name) {
  for (size_t i = 0; name && i < gw->cfg.nprofiles; i++)
    if (strcmp(gw->cfg.profiles[i].name, name) == 0)
      return &gw->cfg.profiles[i];
  return NULL;
}

static int fl_name_taken(fl_gw *gw, const char *name) {
  if (fl_entity_local_by_name(gw, name))
    return 1;
  for (fl_spawn *s = gw->spawns; s; s = s->next)
    if (strcmp(s->name, name) == 0)
      return 1;
  return 0;
}

/* Picks s->name: the one given, else <profile>-<n>, the first free n. */
static int fl_spawn_name(fl_spawn *s, const char *given, char *err, size_t errlen) {
  fl_gw *gw = s->gw;
  if (given && *given) {
    if (!fl_name_valid(given, FL_MAX_NAME) || fl_is_uuid(given)) {
      fl_errf(err, errlen, "the name '%.80s' is not valid: use %s, and not a UUID", given,
              fl_name_rule);
      return FL_EINVAL;
    }
    if (fl_name_taken(gw, given)) {
      fl_errf(err, errlen, "the name '%s' is taken on this host; pick another or leave name out",
              given);
      return FL_ENAMETAKEN;
    }
    fl_copy(s->name, sizeof s->name, given);
    return 0;
  }
  for (unsigned n = 1; n <= FL_MAX_ENTITIES + 1; n++) {
    char cand[FL_MAX_NAME + 16];
    snprintf(cand, sizeof cand, "%s-%u", s->profile->name, n);
    if (!fl_name_valid(cand, FL_MAX_NAME))
      break;
    if (!fl_name_taken(gw, cand)) {
      fl_copy(s->name, sizeof s->name, cand);
      return 0;
    }
  }
  fl_errf(err, errlen, "no free name for profile '%s': give one in name", s->profile->name);
  return FL_EINVAL;
}

/* "NAME=VALUE" in a new string (NULL on out-of-memory). */
static char *fl_env_pair(const char *name, const char *value) {
  size_t n = strlen(name) + strlen(value) + 2;
  char *p = fl_malloc(n);
  if (p)
    snprintf(p, n, "%s=%s", name, value);
  return p;
}

/* Opens s's terminal: the profile's argv with the agent's environment. */
static int fl_spawn_open(fl_spawn *s, char *err, size_t errlen) {
  const fl_profile *p = s->profile;
  json_error_t je;
  json_t *launch = fl_json_loadb(p->launch, strlen(p->launch), 0, &je);
  json_t *cmd = json_object_get(launch, "command"), *env = json_object_get(launch, "env");
  const char *argv[FL_MAX_PROFILE_ARGS + 1] = {0};
  char *envs[FL_MAX_PROFILE_ENV + 8] = {0};
  size_t ne = 0;
  int rc = FL_ENOMEM;
  size_t i;
  json_t *v;
  const char *k;
  char groups[FL_MAX_GROUPS * (FL_MAX_GROUP_NAME + 1) + 1] = "";
  if (!json_is_array(cmd) || json_array_size(cmd) == 0 ||
      json_array_size(cmd) > FL_MAX_PROFILE_ARGS) {
    rc = FL_EINVAL;
    fl_errf(err, errlen, "profile '%s' has no usable command", p->name);
    goto out;
  }
  json_array_foreach(cmd, i, v) argv[i] = json_string_value(v);
  for (i = 0; i < p->ngroups; i++) {
    if (i)
      strcat(groups, ",");
    strcat(groups, p->groups[i]);
  }
  if (!(envs[ne++] = fl_env_pair("FLEET_GID", s->gid)) ||
      !(envs[ne++] = fl_env_pair("FLEET_NAME", s->name)) ||
      !(envs[ne++] = fl_env_pair("FLEET_ROLE", p->role[0] ? p->role : "worker")) ||
      !(envs[ne++] = fl_env_pair("FLEET_SOCKET", s->gw->cfg.socket)))
    goto oom;
  if (groups[0] && !(envs[ne++] = fl_env_pair("FLEET_GROUPS", groups)))
    goto oom;
  json_object_foreach(env, k, v) {
    if (ne >= FL_MAX_PROFILE_ENV + 6)
      break;
    if (json_is_string(v) && !(envs[ne++] = fl_env_pair(k, json_string_value(v))))
      goto oom;
  }
  fl_inject_launch l = {
      .socket = s->socket, .cwd = p->cwd, .env = (const char *const *)envs, .argv = argv};
  s->refs++;
  if ((rc = s->backend->open(s->gw->loop, &l, fl_spawn_opened, s))) {
    s->refs--;
    fl_errf(err, errlen, "launch failed: %s (is %s installed and its server running?)",
            fl_strerror(rc), s->backend->name);
  }
  goto out;
oom:
  rc = FL_ENOMEM;
  fl_errf(err, errlen, "out of memory");
out:
  for (i = 0; i < ne; i++)
    fl_free(envs[i]);
  json_decref(launch);
  return rc;
}

/* What a launch needs, whoever asked for it. */
typedef struct fl_spawn_ask {
  const char *profile, *name, *brief;
  const char *gid;               /* the spawnId to use as the gid, or NULL to mint one */
  const char *by, *by_name;      /* the spawner's gid and name */
  const char *socket;            /* the tmux server ("" = the default) */
  const fl_spawn_origin *origin; /* NULL for a local caller */
} fl_spawn_ask;

/* The profiles of this host as "a, b, c" into out. */
static void fl_profile_names(const fl_gw *gw, char *out, size_t n) {
  size_t off = 0;
  out[0] = '\0';
  for (size_t i = 0; i < gw->cfg.nprofiles; i++) {
    int w = snprintf(out + off, n - off, "%s%s", i ? ", " : "", gw->cfg.profiles[i].name);
    if (w < 0 || (size_t)w >= n - off)
      break;
    off += (size_t)w;
  }
}

/* Checks a, opens its terminal and arms its deadline: 0 with *out armed in
 * gw->spawns, or a negative code with err (nothing is left open). */
static int fl_spawn_launch(fl_gw *gw, const fl_spawn_ask *a, fl_spawn **out, char *err,
                           size_t errlen) {
  *out = NULL;
  const fl_profile *p = fl_profile_find(gw, a->profile);
  if (!p) {
    char names[512];
    fl_profile_names(gw, names, sizeof names);
    fl_errf(err, errlen, "unknown profile '%.80s' on host '%s': %s%s", a->profile ? a->profile : "",
            gw->cfg.host_id,
            gw->cfg.nprofiles ? "it has "
                              : "it has no spawn profiles (add one "
                                "under profiles in fleetd.json)",
            names);
    return FL_ENOTFOUND;
  }
  const fl_inject_type *backend = fl_inject_lookup(p->backend);
  if (!backend || !backend->open) {
    fl_errf(err, errlen, "profile '%s': spawning with backend '%s' is not built yet; use tmux",
            p->name, p->backend);
    return FL_EINVAL;
  }
  if (a->brief && strlen(a->brief) > FL_MAX_CONTENT) {
    fl_errf(err, errlen, "brief is %zu bytes; the limit is %u: send a path instead",
            strlen(a->brief), FL_MAX_CONTENT);
    return FL_ETOOBIG;
  }
  size_t pending = 0;
  for (const fl_spawn *q = gw->spawns; q; q = q->next)
    pending++;
  if (pending >= FL_MAX_SPAWNS_PENDING) {
    fl_errf(err, errlen,
            "%zu spawns are already waiting for their agents to register (at most %d); wait "
            "for one to register or time out",
            pending, FL_MAX_SPAWNS_PENDING);
    return FL_EFULL;
  }
  fl_spawn *s = fl_calloc(1, sizeof *s);
  if (!s || (a->brief && !(s->brief = fl_strdup(a->brief)))) {
    fl_free(s);
    fl_errf(err, errlen, "out of memory");
    return FL_ENOMEM;
  }
  s->gw = gw;
  s->profile = p;
  s->backend = backend;
  s->refs = 1; /* the deadline timer */
  if (a->gid)
    fl_copy(s->gid, sizeof s->gid, a->gid);
  else
    fl_uuid(s->gid);
  fl_copy(s->by, sizeof s->by, a->by);
  fl_copy(s->by_name, sizeof s->by_name, a->by_name);
  if (a->origin)
    s->origin = *a->origin;
  if (s->brief)
    fl_uuid(s->brief_id);
  if (s->origin.trace_id[0])
    fl_copy(s->trace_id, sizeof s->trace_id, s->origin.trace_id);
  else
    fl_uuid(s->trace_id);
  fl_copy(s->socket, sizeof s->socket, a->socket);
  int rc;
  if ((rc = fl_spawn_name(s, a->name, err, errlen)) || (rc = fl_spawn_open(s, err, errlen))) {
    fl_gw_count(gw, FL_C_SPAWN_FAILURES);
    fl_spawn_put(s);
    return rc;
  }
  fl_spawn_record(s, "launching", "");
  unsigned ready_s = p->ready_timeout_s ? p->ready_timeout_s : FL_MAX_WAIT_S;
  uv_timer_init(gw->loop, &s->deadline);
  s->deadline.data = s;
  uv_timer_start(&s->deadline, fl_spawn_deadline_cb, (uint64_t)ready_s * 1000u, 0);
  s->next = gw->spawns;
  gw->spawns = s;
  *out = s;
  return 0;
}

int fl_gw_spawn(fl_gw *gw, fl_client *c, const char *profile, const char *host, const char *name,
                const char *brief, double wait_s, fl_gw_cb cb, void *ctx, json_t **result,
                fl_wait **wait, char *err, size_t errlen) {
  *result = NULL;
  *wait = NULL;
  if (!c || !c->entity) {
    fl_errf(err, errlen, "only a named session can spawn (set FLEET_NAME)");
    return FL_EINVAL;
  }
  if (host && *host && strcmp(host, gw->cfg.host_id) != 0)
    return fl_remote_spawn(gw, c, host, profile, name, brief, wait_s, cb, ctx, wait, err, errlen);
  if (!fl_spawn_may_spawn(gw, c->entity->name, gw->cfg.host_id, c->entity->role,
                          c->operator_session)) {
    fl_gw_count(gw, FL_C_SPAWNS_REFUSED);
    fl_errf(err, errlen,
            "host '%s' lets only its operator (fleetctl) and whom its authority.spawn config "
            "names spawn; '%s' is not named there",
            gw->cfg.host_id, c->entity->name);
    return FL_EINVAL;
  }
  const fl_profile *p = fl_profile_find(gw, profile);
  unsigned ready_s = p && p->ready_timeout_s ? p->ready_timeout_s : FL_MAX_WAIT_S;
  if (wait_s < 0 || wait_s != wait_s)
    wait_s = ready_s;
  if (wait_s > FL_MAX_WAIT_S)
    wait_s = FL_MAX_WAIT_S;
  int rc;
  if (p && wait_s > 0 && (rc = fl_wait_room(c, err, errlen)))
    return rc;
  fl_spawn_ask a = {.profile = profile,
                    .name = name,
                    .brief = brief,
                    .by = c->entity->gid,
                    .by_name = c->entity->name,
                    /* The spawner's own tmux server if it has one, else the default. */
                    .socket = c->entity->tmux_socket};
  fl_spawn *s;
  if ((rc = fl_spawn_launch(gw, &a, &s, err, errlen)))
    return rc;
  if (wait_s > 0) {
    s->covers = wait_s >= ready_s;
    if ((rc = fl_wait_new(gw, c, FL_WAIT_SPAWN, &fl_spawn_wait_ops, wait_s, cb, ctx, &s->wait, err,
                          errlen)) == 0) {
      s->wait->ext = s;
      *wait = s->wait;
      return 0;
    }
  }
  *result = fl_spawn_result(s, "pending");
  return 0;
}

int fl_spawn_for_host(fl_gw *gw, const fl_spawn_origin *o, const char *spawn_id,
                      const char *profile, const char *name, const char *brief, char *err,
                      size_t errlen) {
  if (!fl_is_uuid(spawn_id)) {
    fl_errf(err, errlen, "the spawnId '%.40s' is not a UUID", spawn_id ? spawn_id : "");
    return FL_EINVAL;
  }
  if (!fl_spawn_may_spawn(gw, o->by_name, o->host, NULL, 0)) {
    fl_errf(err, errlen,
            "host '%s' lets only its operator and whom its authority.spawn config names spawn; "
            "'%s@%s' is not named there",
            gw->cfg.host_id, o->by_name, o->host);
    return FL_EINVAL;
  }
  if (fl_entity_by_gid(gw, spawn_id)) {
    /* The gid of an entity already known (of another host: fl_spawn_known
     * answered for ours): two entities cannot share it. */
    fl_errf(err, errlen, "the spawnId %s is the gid of an existing entity; use a fresh one",
            spawn_id);
    return FL_EINVAL;
  }
  fl_spawn_ask a = {.profile = profile,
                    .name = name,
                    .brief = brief,
                    .gid = spawn_id,
                    .by = o->by,
                    .by_name = o->by_name,
                    .socket = "",
                    .origin = o};
  fl_spawn *s;
  return fl_spawn_launch(gw, &a, &s, err, errlen);
}

int fl_spawn_pending(fl_gw *gw, const char *gid) {
  for (fl_spawn *sp = gw->spawns; sp; sp = sp->next)
    if (!sp->finished && strcmp(sp->gid, gid) == 0)
      return 1;
  return 0;
}

int fl_spawn_known(fl_gw *gw, const char *gid, json_t **result, char *err, size_t errlen) {
  *result = NULL;
  for (fl_spawn *s = gw->spawns; s; s = s->next) {
    if (strcasecmp(s->gid, gid) == 0) {
      *result = fl_spawn_result(s, "pending");
      return 1;
    }
  }
  fl_entity *e = fl_entity_by_gid(gw, gid);
  fl_spawn_rec r;
  int recorded = fl_store_spawn_get(gw->store, gid, &r) == 0;
  if (e && !e->remote && !e->removed) {
    /* In this host's roster, so it registered (entities are kept from
     * their first attach on). */
    *result = json_pack("{s:s, s:s, s:s, s:s, s:s}", "gid", e->gid, "name", e->name, "host",
                        gw->cfg.host_id, "profile",
                        e->spawn.profile[0] ? e->spawn.profile
                        : recorded          ? r.profile
                                            : "",
                        "status", "ready");
    return 1;
  }
  if (!recorded)
    return 0;
  if (strcmp(r.state, "failed") == 0)
    fl_errf(err, errlen, "spawn %s ('%s', profile %s) failed before: %s", r.gid, r.name, r.profile,
            r.why);
  else if (strcmp(r.state, "stopped") == 0 || strcmp(r.state, "ready") == 0)
    fl_errf(err, errlen, "spawn %s ('%s', profile %s) already ran and was stopped", r.gid, r.name,
            r.profile);
  else
    *result = json_pack("{s:s, s:s, s:s, s:s, s:s}", "gid", r.gid, "name", r.name, "host",
                        gw->cfg.host_id, "profile", r.profile, "status", "pending");
  return 1;
}

/* Sends the brief to e as a SEND from its spawner (the msgId and trace the
 * spawner was told), on fleet_send's own path (fl_router_send): typed into
 * a worker's terminal or held for its poll, and in the trace ring, so the
 * worker's fleet_reply answers it. Nobody waits on it here: a spawner on
 * another host hears INJECTED or FAILED through its host. */
static void fl_spawn_brief(fl_spawn *s, fl_entity *e) {
  fl_gw *gw = s->gw;
  fl_entity *from = fl_entity_by_gid(gw, s->by);
  fl_msg m;
  fl_router_msg_init(&m, FL_KIND_SEND, e, e, s->brief);
  fl_copy(m.msg_id, sizeof m.msg_id, s->brief_id);
  fl_copy(m.trace_id, sizeof m.trace_id, s->trace_id);
  /* The spawner, also when this host has not heard of it (yet): its gid
   * and name as its SPAWN gave them. */
  fl_copy(m.from_gid, sizeof m.from_gid, s->by);
  fl_copy(m.from_name, sizeof m.from_name, from ? from->name : s->by_name);
  m.auth = s->origin.host[0] ? s->origin.auth : FL_AUTH_NONE; /* how its SPAWN was proven */
  char err[FL_MAX_ERRMSG];
  if (fl_router_send(gw, NULL, e, &m, 0, s->origin.host, NULL, NULL, NULL, NULL, err, sizeof err) !=
      0)
    fl_warn(m.trace_id, "the brief %s for '%s' was not taken: %s", m.msg_id, e->name, err);
}

void fl_spawn_attached(fl_gw *gw, fl_entity *e) {
  fl_spawn *s = gw->spawns;
  while (s && strcasecmp(s->gid, e->gid) != 0)
    s = s->next;
  if (!s) {
    /* Spawned before a restart: who spawned it is in the store. */
    fl_spawn_rec r;
    if (!e->spawn.by[0] && fl_store_spawn_get(gw->store, e->gid, &r) == 0) {
      fl_copy(e->spawn.by, sizeof e->spawn.by, r.by);
      fl_copy(e->spawn.profile, sizeof e->spawn.profile, r.profile);
    }
    return;
  }
  fl_copy(e->spawn.by, sizeof e->spawn.by, s->by);
  fl_copy(e->spawn.profile, sizeof e->spawn.profile, s->profile->name);
  e->spawn.backend = s->backend;
  /* Only a terminal fleetd opened is ever closed by a stop. */
  fl_copy(e->spawn.pane, sizeof e->spawn.pane, s->opened ? s->pane : "");
  fl_copy(e->spawn.socket, sizeof e->spawn.socket, s->socket);
  fl_gw_count(gw, FL_C_SPAWNS);
  fl_spawn_record(s, "ready", "");
  fl_info(s->trace_id, "spawned '%s' (gid %s, profile %s) is ready", e->name, e->gid,
          s->profile->name);
  if (s->brief)
    fl_spawn_brief(s, e);
  if (s->origin.host[0]) {
    json_t *r = fl_spawn_result(s, "ready");
    fl_remote_spawn_answer(gw, &s->origin, r, NULL);
    json_decref(r);
  }
  if (s->wait) {
    fl_wait *w = s->wait;
    s->wait = NULL;
    w->ext = NULL;
    fl_wait_complete(w, fl_spawn_result(s, "ready"), NULL);
  }
  fl_spawn_finish(s);
}

void fl_spawn_shutdown(fl_gw *gw) {
  while (gw->spawns)
    fl_spawn_finish(gw->spawns);
}

/* ---- stop ---------------------------------------------------------------------- */

int fl_authority_grants(const fl_gw *gw, const fl_authority *a, const char *name, const char *host,
                        const char *role) {
  for (size_t i = 0; a && i < a->n; i++) {
    const char *v = a->v[i];
    const char *at = strchr(v, '@');
    if (strncmp(v, "role:", 5) == 0) {
      if (role && strcmp(host, gw->cfg.host_id) == 0 && strcmp(role, v + 5) == 0)
        return 1;
    } else if (at) {
      if (strcmp(at + 1, host) == 0 && strlen(name) == (size_t)(at - v) &&
          strncmp(v, name, (size_t)(at - v)) == 0)
        return 1;
    } else if (strcmp(v, host) == 0) {
      return 1;
    }
  }
  return 0;
}

int fl_spawn_may_stop(fl_gw *gw, const fl_entity *who, int operator_session, const fl_entity *e) {
  fl_spawn_rec r;
  int have = fl_store_spawn_get(gw->store, e->gid, &r) == 0;
  const char *by = e->spawn.by[0] ? e->spawn.by : have ? r.by : "";
  const char *by_host = have ? r.by_host : ""; /* "" = this host */
  /* The spawner, on the host it asked from: a STOP another host signs in
   * the spawner's name does not pass for it. */
  if (by[0] && strcasecmp(by, who->gid) == 0 &&
      (who->remote ? strcmp(who->host, by_host) == 0 : !by_host[0]))
    return 1;
  if (operator_session && !who->remote)
    return 1;
  /* A remote session's role is its host's say-so: only its host or its
   * name@host can be named for it. */
  return fl_authority_grants(gw, &gw->cfg.auth_stop, who->name, fl_entity_host(who),
                             who->remote ? NULL : who->role);
}

int fl_spawn_may_spawn(fl_gw *gw, const char *name, const char *host, const char *role,
                       int operator_session) {
  if (!gw->cfg.auth_spawn.set)
    return 1;
  if (operator_session && strcmp(host, gw->cfg.host_id) == 0)
    return 1;
  return fl_authority_grants(gw, &gw->cfg.auth_spawn, name, host, role);
}

/* The terminal fleetd opened for e (at its spawn, or as the store recorded
 * it before a restart) into t; 0 when fleetd opened none, which is never
 * closed: a pane an agent registered may be a person's own. */
static const fl_inject_type *fl_spawn_opened_pane(fl_gw *gw, const fl_entity *e,
                                                  fl_inject_target *t, fl_spawn_rec *r) {
  if (e->spawn.pane[0]) {
    t->pane = e->spawn.pane;
    t->socket = e->spawn.socket;
    return e->spawn.backend;
  }
  if (fl_store_spawn_get(gw->store, e->gid, r) != 0 || !r->pane[0])
    return NULL;
  t->pane = r->pane;
  t->socket = r->socket;
  const fl_profile *p = fl_profile_find(gw, r->profile);
  return fl_inject_lookup(p && p->backend[0] ? p->backend : "tmux");
}

int fl_spawn_stop(fl_gw *gw, const fl_entity *who, int operator_session, fl_entity *e,
                  json_t **result, char *err, size_t errlen) {
  *result = NULL;
  if (e == who) {
    fl_errf(err, errlen, "you cannot stop yourself; ask your lead or just exit");
    return FL_EINVAL;
  }
  if (!fl_spawn_may_stop(gw, who, operator_session, e)) {
    fl_gw_count(gw, FL_C_STOPS_REFUSED);
    fl_warn(NULL, "'%s'%s%s (role %s) may not stop '%s' (gid %s): refused", who->name,
            who->remote ? "@" : "", who->remote ? who->host : "", who->role, e->name, e->gid);
    fl_errf(err, errlen,
            "only the agent that spawned '%s', this host's operator (fleetctl), or whom host "
            "'%s' names in its authority.stop config may stop it; a role grants nothing",
            e->name, gw->cfg.host_id);
    return FL_EINVAL; /* not permitted: err says who may */
  }
  fl_inject_target t = {.pane = "", .socket = "", .label = e->name};
  fl_spawn_rec pr;
  const fl_inject_type *backend = fl_spawn_opened_pane(gw, e, &t, &pr);
  int rc, closed = 0;
  if (backend && backend->close && t.pane[0]) {
    if ((rc = backend->close(gw->loop, &t, NULL, NULL)) != 0)
      fl_warn(NULL, "could not close the terminal of '%s': %s", e->name, fl_strerror(rc));
    else
      closed = 1;
  }
  fl_nudge_stop(e);
  fl_entity_set_removed(e);
  if (fl_store_entity_delete(gw->store, e->gid) != 0)
    fl_gw_count(gw, FL_C_STORE_ERRORS);
  fl_spawn_rec r;
  if (fl_store_spawn_get(gw->store, e->gid, &r) == 0) {
    fl_copy(r.state, sizeof r.state, "stopped");
    r.ts_ms = fl_now_ms();
    if (fl_store_spawn_put(gw->store, &r) != 0)
      fl_gw_count(gw, FL_C_STORE_ERRORS);
  }
  fl_remote_remove_inbox(gw, e->gid);
  fl_gw_count(gw, FL_C_STOPS);
  fl_info(NULL, "'%s' (gid %s) was stopped by '%s'%s%s and left the roster%s", e->name, e->gid,
          who->name, who->remote ? "@" : "", who->remote ? who->host : "",
          closed ? "; its terminal is closed"
                 : "; fleetd opened no terminal for it, so none is closed");
  *result = json_pack("{s:s, s:s, s:s, s:s, s:b}", "gid", e->gid, "name", e->name, "host",
                      gw->cfg.host_id, "status", "stopped", "terminalClosed", closed);
  return *result ? 0 : FL_ENOMEM;
}

int fl_gw_stop(fl_gw *gw, fl_client *c, const char *to, fl_gw_cb cb, void *ctx, json_t **result,
               fl_wait **wait, char *err, size_t errlen) {
  *result = NULL;
  *wait = NULL;
  if (!c || !c->entity) {
    fl_errf(err, errlen, "only a named session can stop an agent (set FLEET_NAME)");
    return FL_EINVAL;
  }
  fl_entity *e;
  int rc = fl_roster_resolve(gw, to ? to : "", &e, err, errlen);
  if (rc)
    return rc;
  if (e->remote)
    return fl_remote_stop_agent(gw, c, e, cb, ctx, wait, err, errlen);
  return fl_spawn_stop(gw, c->entity, c->operator_session, e, result, err, errlen);
}
