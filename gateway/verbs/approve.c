/* approve.c — permission requests a lead answers (approve.h).
 *
 * Each request waiting for a decision is a row of a short list, found by
 * its requestId, holding the hook's parked call (hook_park.h) and who the
 * worker's spawner was when it asked. A row ends once: answered
 * (fl_approve_decide), or its call ended without an answer (the time ran
 * out, fleet-hook went away, shutdown: hook_park's gone). The requestIds of
 * ended rows are remembered, newest FL_APPROVALS_REMEMBERED, with their
 * outcome, so a decision that comes late or twice is told which. */
#include "gateway/verbs/approve.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/ids.h"
#include "common/limits.h"
#include "common/log.h"
#include "gateway/core/gw_internal.h"
#include "gateway/core/remote.h"
#include "gateway/core/roster.h"
#include "gateway/core/router.h"
#include "gateway/verbs/approve_rules.h"
#include "gateway/verbs/hook.h"
#include "gateway/verbs/hook_park.h"
#include "gateway/verbs/spawn.h"

typedef struct fl_approval {
  struct fl_approval *next;
  fl_gw *gw;
  char id[FL_ID_LEN];  /* the requestId */
  char gid[FL_ID_LEN]; /* the worker */
  char name[FL_MAX_NAME + 1];
  char tool[FL_MAX_NAME + 1];
  char by[FL_ID_LEN]; /* its spawner, on by_host ("" = this host) */
  char by_host[64];
  char input[FL_HOOK_SUMMARY_MAX + 4]; /* the bounded summary of the tool's input */
  long long expires_ms;                /* wall clock */
  fl_wait *wait;                       /* the hook's parked call */
  int quiet;                           /* withdrawn before anyone heard of it: not counted */
} fl_approval;

/* A requestId that ended: "allow", "deny" or "ended" (unanswered). */
typedef struct fl_approval_done {
  char id[FL_ID_LEN];
  char gid[FL_ID_LEN];
  char outcome[8];
} fl_approval_done;

struct fl_approvals {
  fl_approval *pending;
  size_t npending;
  fl_approval_done done[FL_APPROVALS_REMEMBERED];
  size_t done_next;
  unsigned long long requests, allowed, denied, timed_out, refused, replayed, unknown;
};

static struct fl_approvals *fl_approvals_of(fl_gw *gw) {
  if (!gw->approvals)
    gw->approvals = fl_calloc(1, sizeof *gw->approvals);
  return gw->approvals;
}

static void fl_approval_remember(struct fl_approvals *ap, const fl_approval *a,
                                 const char *outcome) {
  fl_approval_done *d = &ap->done[ap->done_next++ % FL_APPROVALS_REMEMBERED];
  fl_copy(d->id, sizeof d->id, a->id);
  fl_copy(d->gid, sizeof d->gid, a->gid);
  fl_copy(d->outcome, sizeof d->outcome, outcome);
}

static const fl_approval_done *fl_approval_ended(struct fl_approvals *ap, const char *id) {
  for (size_t i = 0; i < FL_APPROVALS_REMEMBERED; i++)
    if (ap->done[i].id[0] && strcasecmp(ap->done[i].id, id) == 0)
      return &ap->done[i];
  return NULL;
}

static void fl_approval_unlink(struct fl_approvals *ap, fl_approval *a) {
  for (fl_approval **pp = &ap->pending; *pp; pp = &(*pp)->next) {
    if (*pp == a) {
      *pp = a->next;
      ap->npending--;
      return;
    }
  }
}

/* hook_park's gone: the call ended with no decision. */
static void fl_approval_gone(void *owner, fl_wait *w) {
  fl_approval *a = owner;
  struct fl_approvals *ap = a->gw->approvals;
  a->wait = NULL;
  fl_approval_unlink(ap, a);
  if (!a->quiet) {
    fl_approval_remember(ap, a, "ended");
    ap->timed_out++;
    fl_info(w->trace_id,
            "permission request %s of '%s' (%s) ended with no decision; its own dialog stays",
            a->id, a->name, a->tool);
  }
  fl_free(a);
}

/* Who is told of e's requests: its spawner, on the host it spawned from,
 * when the roster has it; 0 with a->by and a->by_host set, else -1. */
static int fl_approval_spawner(fl_gw *gw, const fl_entity *e, fl_approval *a, fl_entity **dst) {
  fl_spawn_rec r;
  if (fl_store_spawn_get(gw->store, e->gid, &r) == 0 && r.by[0]) {
    fl_copy(a->by, sizeof a->by, r.by);
    fl_copy(a->by_host, sizeof a->by_host, r.by_host);
  } else if (e->spawn.by[0]) {
    fl_copy(a->by, sizeof a->by, e->spawn.by);
  } else {
    return -1;
  }
  fl_entity *s = fl_entity_by_gid(gw, a->by);
  if (!s || s->removed || s->dropped || !fl_entity_in_roster(s))
    return -1;
  if (a->by_host[0] ? !s->remote || strcmp(s->host, a->by_host) != 0 : s->remote)
    return -1;
  *dst = s;
  return 0;
}

/* The BLOCKED message's body: a new string, or NULL. */
static char *fl_approval_body(fl_gw *gw, const fl_approval *a) {
  char exp[FL_TS_LEN], answer[512];
  fl_rfc3339(a->expires_ms, exp);
  snprintf(answer, sizeof answer,
           "fleet_approve {to: \"%s\", requestId: \"%s\", decision: \"allow\" or \"deny\", "
           "reason?} before expiresAt; without a decision the worker's own dialog stays open",
           a->gid, a->id);
  json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s}", "requestId", a->id, "tool", a->tool, "input",
                        a->input, "expiresAt", exp, "answer", answer);
  char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
  json_decref(o);
  (void)gw;
  return text;
}

/* Hands the BLOCKED m to its spawner dst: held here, or through the link. */
static int fl_approval_send(fl_gw *gw, fl_entity *dst, fl_msg *m, char *err, size_t errlen) {
  if (dst->remote)
    return fl_remote_post(gw, dst, m, NULL, NULL, err, errlen);
  int rc = fl_router_accept(gw, dst, m, err, errlen);
  if (rc == 0)
    fl_router_wake(gw, dst, m);
  return rc;
}

int fl_approve_request(fl_gw *gw, fl_client *c, fl_entity *e, const char *tool, const char *input,
                       fl_gw_cb cb, void *ctx, json_t **result, fl_wait **wait, char *err,
                       size_t errlen) {
  *result = NULL;
  *wait = NULL;
  struct fl_approvals *ap = fl_approvals_of(gw);
  if (!ap)
    return fl_errf(err, errlen, "out of memory"), FL_ENOMEM;
  unsigned wait_ms = gw->cfg.hooks_approve_timeout_ms;
  fl_entity *dst = NULL;
  fl_approval *a = fl_calloc(1, sizeof *a);
  if (!a)
    return fl_errf(err, errlen, "out of memory"), FL_ENOMEM;
  a->gw = gw;
  fl_copy(a->gid, sizeof a->gid, e->gid);
  fl_copy(a->name, sizeof a->name, e->name);
  fl_copy(a->tool, sizeof a->tool, tool && *tool ? tool : "a tool");
  if (wait_ms == 0 || fl_approval_spawner(gw, e, a, &dst) != 0 ||
      ap->npending >= FL_MAX_APPROVALS) {
    if (ap->npending >= FL_MAX_APPROVALS)
      fl_warn(NULL,
              "'%s' is blocked on %s, but %d permission requests already wait: its own "
              "dialog stays",
              e->name, a->tool, FL_MAX_APPROVALS);
    fl_free(a);
    *result = fl_hook_park_none();
    return *result ? 0 : FL_ENOMEM;
  }
  fl_uuid(a->id);
  int rc =
      fl_hook_park(gw, c, wait_ms / 1000.0, fl_approval_gone, a, cb, ctx, &a->wait, err, errlen);
  if (rc) {
    fl_free(a);
    return rc;
  }
  a->next = ap->pending;
  ap->pending = a;
  ap->npending++;
  a->expires_ms = fl_now_ms() + wait_ms;
  /* Cut whatever the caller of fleet/hook sent: fleet-hook cuts it so, and
   * fleetd holds to the same bound. */
  fl_approve_summary(input, a->input, sizeof a->input);
  char *body = fl_approval_body(gw, a);
  fl_msg m;
  fl_router_msg_init(&m, FL_KIND_BLOCKED, e, dst, body ? body : "");
  fl_uuid(m.trace_id);
  m.expires_ms = a->expires_ms;
  fl_copy(a->wait->trace_id, sizeof a->wait->trace_id, m.trace_id);
  char why[FL_MAX_ERRMSG] = "";
  rc = body ? fl_approval_send(gw, dst, &m, why, sizeof why) : FL_ENOMEM;
  fl_free(body);
  if (rc) {
    fl_warn(m.trace_id,
            "'%s' is blocked on %s; its spawner '%s' could not be told (%s): its own "
            "dialog stays",
            e->name, a->tool, dst->name, why[0] ? why : fl_strerror(rc));
    a->quiet = 1;
    fl_wait *w = a->wait;
    fl_gw_cancel(gw, &w); /* gone frees a */
    *result = fl_hook_park_none();
    return *result ? 0 : FL_ENOMEM;
  }
  ap->requests++;
  fl_info(m.trace_id, "'%s' is blocked on %s: request %s sent to '%s'%s%s as BLOCKED %s", e->name,
          a->tool, a->id, dst->name, dst->remote ? "@" : "", dst->remote ? dst->host : "",
          m.msg_id);
  *wait = a->wait;
  return 0;
}

/* 1 when who may decide a's request: its spawner (on the host it spawned
 * from), this host's operator, or whom authority.approve names. */
static int fl_approve_may(fl_gw *gw, const fl_entity *who, int operator_session,
                          const fl_approval *a) {
  if (strcasecmp(a->by, who->gid) == 0 &&
      (who->remote ? strcmp(who->host, a->by_host) == 0 : !a->by_host[0]))
    return 1;
  if (operator_session && !who->remote)
    return 1;
  return fl_authority_grants(gw, &gw->cfg.auth_approve, who->name, fl_entity_host(who),
                             who->remote ? NULL : who->role);
}

int fl_approve_decide(fl_gw *gw, const fl_entity *who, int operator_session, fl_entity *e,
                      const char *request_id, const char *decision, const char *reason,
                      json_t **result, char *err, size_t errlen) {
  *result = NULL;
  struct fl_approvals *ap = fl_approvals_of(gw);
  if (!ap)
    return fl_errf(err, errlen, "out of memory"), FL_ENOMEM;
  int rc = fl_approve_check_decision(decision, err, errlen);
  if (rc)
    return rc;
  if ((rc = fl_approve_check_reason(reason, err, errlen)))
    return rc;
  fl_approval *a = ap->pending;
  while (a && !(request_id && strcasecmp(a->id, request_id) == 0 && strcmp(a->gid, e->gid) == 0))
    a = a->next;
  if (!a) {
    const fl_approval_done *d = request_id ? fl_approval_ended(ap, request_id) : NULL;
    if (d && strcmp(d->gid, e->gid) == 0 && strcmp(d->outcome, "ended") != 0) {
      ap->replayed++;
      fl_warn(NULL,
              "a decision from '%s'%s%s on request %s of '%s', answered already (%s): "
              "refused",
              who->name, who->remote ? "@" : "", who->remote ? who->host : "", d->id, e->name,
              d->outcome);
      fl_errf(err, errlen,
              "request %s of '%s' was already answered (%s); a request is answered once", d->id,
              e->name, d->outcome);
      return FL_EDUP;
    }
    if (d && strcmp(d->gid, e->gid) == 0) {
      ap->unknown++;
      fl_errf(err, errlen,
              "request %s of '%s' has expired: it waited hooks.approveTimeoutMs (%u ms) on host "
              "'%s' with no decision, and the agent's own dialog took over in its terminal",
              d->id, e->name, gw->cfg.hooks_approve_timeout_ms, gw->cfg.host_id);
      return FL_ETIMEDOUT;
    }
    ap->unknown++;
    fl_errf(err, errlen,
            "unknown requestId '%.40s': '%s' on host '%s' has no such permission request (the "
            "requestId is in the BLOCKED message fleet_poll gave you)",
            request_id ? request_id : "", e->name, gw->cfg.host_id);
    return FL_ENOTFOUND;
  }
  if (!fl_approve_may(gw, who, operator_session, a)) {
    ap->refused++;
    fl_warn(NULL, "'%s'%s%s (role %s) may not answer request %s of '%s': refused", who->name,
            who->remote ? "@" : "", who->remote ? who->host : "", who->role, a->id, e->name);
    fl_errf(err, errlen,
            "only the agent that spawned '%s', this host's operator (fleetctl), or whom host "
            "'%s' names in its authority.approve config may answer its permission requests; a "
            "role grants nothing",
            e->name, gw->cfg.host_id);
    return FL_EINVAL;
  }
  int allow = strcmp(decision, "allow") == 0;
  json_t *answer = json_pack("{s:s}", "action", decision);
  *result = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "gid", e->gid, "name", e->name, "host",
                      gw->cfg.host_id, "requestId", a->id, "decision", decision, "status",
                      allow ? "allowed" : "denied");
  if (!answer || !*result) {
    json_decref(answer);
    json_decref(*result);
    *result = NULL;
    return fl_errf(err, errlen, "out of memory"), FL_ENOMEM;
  }
  if (reason && *reason)
    json_object_set_new(answer, "reason", json_string(reason));
  if (allow)
    ap->allowed++;
  else
    ap->denied++;
  fl_wait *w = a->wait;
  a->wait = NULL;
  fl_approval_unlink(ap, a);
  fl_approval_remember(ap, a, decision);
  fl_info(w ? w->trace_id : NULL, "request %s of '%s' (%s): %s by '%s'%s%s", a->id, e->name,
          a->tool, allow ? "allowed" : "denied", who->name, who->remote ? "@" : "",
          who->remote ? who->host : "");
  fl_free(a);
  fl_hooks_unblocked(gw, e->gid);
  if (w)
    fl_hook_park_answer(w, answer);
  else
    json_decref(answer);
  return 0;
}

int fl_gw_approve(fl_gw *gw, fl_client *c, const char *to, const char *request_id,
                  const char *decision, const char *reason, fl_gw_cb cb, void *ctx, json_t **result,
                  fl_wait **wait, char *err, size_t errlen) {
  *result = NULL;
  *wait = NULL;
  if (!c || !c->entity) {
    fl_errf(err, errlen, "only a named session can answer a permission request (set FLEET_NAME)");
    return FL_EINVAL;
  }
  int rc = fl_approve_check_decision(decision, err, errlen);
  if (rc)
    return rc;
  if ((rc = fl_approve_check_request_id(request_id, err, errlen)))
    return rc;
  fl_entity *e;
  if ((rc = fl_roster_resolve(gw, to ? to : "", &e, err, errlen)))
    return rc;
  if (e == c->entity) {
    fl_errf(err, errlen, "you cannot answer your own permission request; your spawner does");
    return FL_EINVAL;
  }
  if (e->remote)
    return fl_remote_approve(gw, c, e, request_id, decision, reason, cb, ctx, wait, err, errlen);
  return fl_approve_decide(gw, c->entity, c->operator_session, e, request_id, decision, reason,
                           result, err, errlen);
}

json_t *fl_gw_approvals(fl_gw *gw) {
  struct fl_approvals *ap = gw->approvals;
  json_t *list = json_array();
  /* The list is newest first: each goes in front, so the oldest leads. */
  for (const fl_approval *a = ap ? ap->pending : NULL; list && a; a = a->next) {
    char exp[FL_TS_LEN];
    fl_rfc3339(a->expires_ms, exp);
    const fl_entity *s = fl_entity_by_gid(gw, a->by);
    json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:{s:s, s:s, s:s}}", "requestId", a->id,
                          "gid", a->gid, "name", a->name, "tool", a->tool, "input", a->input,
                          "expiresAt", exp, "spawner", "gid", a->by, "name", s ? s->name : "",
                          "host", a->by_host[0] ? a->by_host : gw->cfg.host_id);
    if (!o || json_array_insert_new(list, 0, o) != 0) {
      json_decref(list);
      return NULL;
    }
  }
  return list ? json_pack("{s:s, s:o}", "host", gw->cfg.host_id, "requests", list) : NULL;
}

json_t *fl_approve_describe(fl_gw *gw) {
  struct fl_approvals *ap = gw->approvals;
  if (!ap)
    return NULL;
  return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "pending", (json_int_t)ap->npending,
                   "requests", (json_int_t)ap->requests, "allowed", (json_int_t)ap->allowed,
                   "denied", (json_int_t)ap->denied, "timedOut", (json_int_t)ap->timed_out,
                   "refused", (json_int_t)ap->refused, "replayed", (json_int_t)ap->replayed,
                   "unknown", (json_int_t)ap->unknown);
}

void fl_approve_free(fl_gw *gw) {
  struct fl_approvals *ap = gw->approvals;
  if (!ap)
    return;
  /* The waiting calls ended at shutdown (gone freed their rows); anything
   * left has no call. */
  while (ap->pending) {
    fl_approval *a = ap->pending;
    ap->pending = a->next;
    fl_free(a);
  }
  fl_free(ap);
  gw->approvals = NULL;
}
