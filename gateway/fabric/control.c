/* control.c — spawn and stop across hosts (control.h).
 *
 * Requests: fl_control_spawn / fl_control_stop publish a SPAWN / STOP to
 * the target host's control queue and keep the caller's call waiting in a
 * request keyed by the SPAWN's msgId; the target's answers (SPAWNED /
 * STOPPED, inReplyTo = that msgId) complete it. A spawn's wait that runs
 * out after the target said the launch is alive returns that `pending`
 * answer; one that runs out with no word from the target is an error
 * saying so.
 *
 * Serving: a SPAWN passes the receive checks, then is answered from what
 * this host knows of its spawnId (fl_spawn_known) or launched
 * (fl_spawn_for_host), whose outcomes come back through
 * fl_control_answer_spawn. A STOP is checked against who asked (its sender
 * must live on the signing host; spawn.c decides whether it may) and runs
 * fl_spawn_stop. An APPROVE (a decision on a worker's permission request)
 * is checked the same way and handed to approve.c, which decides whether
 * its sender may and refuses a requestId answered before (a replay);
 * APPROVED carries the outcome back. */
#include "gateway/fabric/control.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/json_read.h"
#include "common/limits.h"
#include "common/log.h"
#include "gateway/core/gw_internal.h"
#include "gateway/fabric/inbound.h"
#include "gateway/proto/sign.h"
#include "gateway/proto/topology.h"
#include "gateway/store/store_gids.h"
#include "gateway/verbs/approve.h"

/* A control request outlives its waiting call by at most this much on the
 * wire: a SPAWN that sat in a down host's queue longer is dead-lettered
 * there instead of starting an agent nobody waits for. */
#define FL_CONTROL_TTL_MS 60000
/* A remote stop, and a decision on a permission request, waits
 * FL_REMOTE_STOP_WAIT_S (limits.h) for the target's answer. */

/* What a request is (fl_ctl_req's stop): each answer kind ends its own. */
#define FL_REQ_STOP 1
#define FL_REQ_APPROVE 2

typedef struct fl_ctl_req {
  struct fl_ctl_req *next;
  fl_control *c;
  fl_wait *wait;
  int stop;           /* FL_REQ_STOP, FL_REQ_APPROVE, else (0) a SPAWN */
  int pending_is_end; /* a SPAWN with wait_s 0: the `pending` answer ends the call */
  char msg_id[FL_ID_LEN];
  char spawn_id[FL_ID_LEN];
  char host[64];
  json_t *pending; /* the target's `pending` answer, when it came */
} fl_ctl_req;

struct fl_control {
  fl_gw *gw;
  const fl_control_ops *ops;
  void *ctx;
  fl_presence *presence;
  fl_ctl_req *reqs;
};

int fl_control_new(fl_gw *gw, const fl_control_ops *ops, void *ctx, fl_presence *presence,
                   fl_control **out) {
  *out = fl_calloc(1, sizeof **out);
  if (!*out)
    return FL_ENOMEM;
  (*out)->gw = gw;
  (*out)->ops = ops;
  (*out)->ctx = ctx;
  (*out)->presence = presence;
  return 0;
}

static void fl_req_free(fl_ctl_req *r) {
  fl_control *c = r->c;
  for (fl_ctl_req **pp = &c->reqs; *pp; pp = &(*pp)->next) {
    if (*pp == r) {
      *pp = r->next;
      break;
    }
  }
  json_decref(r->pending);
  fl_free(r);
}

void fl_control_free(fl_control **c) {
  if (!c || !*c)
    return;
  while ((*c)->reqs) {
    fl_ctl_req *r = (*c)->reqs;
    if (r->wait)
      r->wait->ext = NULL;
    fl_req_free(r);
  }
  fl_free(*c);
  *c = NULL;
}

/* ---- pure parts ------------------------------------------------------------ */

int fl_control_parse_spawn(const char *body, size_t len, json_t **o, const char **profile,
                           const char **name, const char **brief, char *err, size_t errlen) {
  *o = fl_json_loadb(body ? body : "", body ? len : 0, 0, NULL);
  *profile = *name = *brief = NULL;
  if (!json_is_object(*o)) {
    fl_errf(err, errlen, "the SPAWN body is not a JSON object");
    goto bad;
  }
  json_t *p = json_object_get(*o, "profile"), *n = json_object_get(*o, "name"),
         *b = json_object_get(*o, "brief");
  if (!json_is_string(p) || !json_string_length(p)) {
    fl_errf(err, errlen, "the SPAWN body names no profile");
    goto bad;
  }
  if ((n && !json_is_null(n) && !json_is_string(n)) ||
      (b && !json_is_null(b) && !json_is_string(b))) {
    fl_errf(err, errlen, "the SPAWN body's name and brief must be strings");
    goto bad;
  }
  *profile = json_string_value(p);
  *name = json_string_value(n);
  *brief = json_string_value(b);
  return 0;
bad:
  json_decref(*o);
  *o = NULL;
  return FL_EPROTO;
}

int fl_control_parse_answer(const char *body, size_t len, json_t **result, char *err,
                            size_t errlen) {
  *result = NULL;
  json_t *o = fl_json_loadb(body ? body : "", body ? len : 0, 0, NULL);
  const char *e = json_string_value(json_object_get(o, "error"));
  if (e) {
    fl_errf(err, errlen, "%s", e);
    json_decref(o);
    return 0;
  }
  if (!json_is_object(o) || !json_is_string(json_object_get(o, "gid")) ||
      !json_is_string(json_object_get(o, "status"))) {
    json_decref(o);
    fl_errf(err, errlen, "the answer is neither a result nor an error");
    return FL_EPROTO;
  }
  *result = o;
  return 0;
}

/* ---- publishing ------------------------------------------------------------- */

/* An envelope of kind from this host, stamped now, expiring in ttl_ms. */
static void fl_ctl_env(fl_control *c, fl_envelope *env, fl_envelope_kind kind, long long ttl_ms) {
  memset(env, 0, sizeof *env);
  fl_copy(env->v, sizeof env->v, FL_ENVELOPE_VERSION);
  fl_copy(env->kind, sizeof env->kind, fl_envelope_kind_name(kind));
  fl_uuid(env->msg_id);
  fl_copy(env->host, sizeof env->host, c->gw->cfg.host_id);
  long long now = fl_now_ms();
  fl_rfc3339(now, env->ts);
  fl_rfc3339(now + ttl_ms, env->expires_at);
}

/* Publishes body (stolen) in env to host. */
static int fl_ctl_emit(fl_control *c, const char *host, fl_envelope *env, json_t *body,
                       const char *req_id) {
  char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
  json_decref(body);
  if (!text)
    return FL_ENOMEM;
  int rc = c->ops->emit(c->ctx, host, env, text, strlen(text), req_id);
  fl_free(text);
  return rc;
}

/* Answers a request of host (SPAWNED or STOPPED) with result or err. */
static void fl_ctl_answer(fl_control *c, fl_envelope_kind kind, const char *host, const char *to,
                          const char *in_reply_to, const char *trace_id, const char *spawn_id,
                          const json_t *result, const char *err) {
  fl_envelope env;
  fl_ctl_env(c, &env, kind, FL_CONTROL_TTL_MS);
  fl_copy(env.to, sizeof env.to, to);
  fl_copy(env.in_reply_to, sizeof env.in_reply_to, in_reply_to);
  fl_copy(env.trace_id, sizeof env.trace_id, trace_id);
  fl_copy(env.spawn_id, sizeof env.spawn_id, spawn_id);
  /* The answer speaks for the agent concerned. */
  fl_copy(env.from, sizeof env.from, spawn_id);
  fl_copy(env.from_name, sizeof env.from_name, FL_GID_GATEWAY);
  json_t *body = result ? json_deep_copy(result) : json_pack("{s:s}", "error", err ? err : "?");
  int rc = fl_ctl_emit(c, host, &env, body, "");
  if (rc)
    fl_warn(trace_id, "%s for host '%s' not sent: %s", env.kind, host, fl_strerror(rc));
  else
    fl_info(trace_id, "%s %s to host '%s': %s", env.kind, spawn_id, host,
            result ? json_string_value(json_object_get(result, "status")) : err);
}

void fl_control_answer_spawn(fl_control *c, const fl_spawn_origin *o, const json_t *result,
                             const char *err) {
  fl_ctl_answer(c, FL_KIND_SPAWNED, o->host, o->by, o->msg_id, o->trace_id, o->spawn_id, result,
                err);
}

/* ---- requests ------------------------------------------------------------------ */

static void fl_req_timeout(fl_wait *w) {
  fl_ctl_req *r = w->ext;
  w->ext = NULL;
  if (!r) {
    fl_wait_complete(w, NULL, "the request ended");
    return;
  }
  r->wait = NULL;
  json_t *pending = r->pending;
  r->pending = NULL;
  char msg[FL_MAX_ERRMSG];
  fl_errf(msg, sizeof msg,
          "host '%s' did not answer in time (is its fleetd running and connected? fleetctl "
          "status there); %s",
          r->host,
          r->stop == FL_REQ_APPROVE ? "the decision may or may not have reached the worker"
          : r->stop                 ? "the agent may or may not be stopped"
                    : "the request stays in its control queue for a minute and may still start "
                      "the agent");
  fl_req_free(r);
  fl_wait_complete(w, pending, pending ? NULL : msg);
}

static void fl_req_forget(fl_wait *w) {
  fl_ctl_req *r = w->ext;
  w->ext = NULL;
  if (r) {
    r->wait = NULL;
    fl_req_free(r);
  }
}

static const fl_wait_ops fl_req_wait_ops = {.timeout = fl_req_timeout, .forget = fl_req_forget};

static fl_ctl_req *fl_req_find(fl_control *c, const char *msg_id) {
  for (fl_ctl_req *r = c->reqs; r; r = r->next)
    if (strcmp(r->msg_id, msg_id) == 0)
      return r;
  return NULL;
}

/* Ends r's call with result (stolen) or err. */
static void fl_req_done(fl_ctl_req *r, json_t *result, const char *err) {
  fl_wait *w = r->wait;
  r->wait = NULL;
  if (w)
    w->ext = NULL;
  fl_req_free(r);
  if (w)
    fl_wait_complete(w, result, result ? NULL : err);
  else
    json_decref(result);
}

void fl_control_published(fl_control *c, const char *req_id, int status, const char *why) {
  if (status == 0 || !req_id[0])
    return;
  fl_ctl_req *r = fl_req_find(c, req_id);
  if (!r)
    return;
  char msg[FL_MAX_ERRMSG];
  fl_errf(msg, sizeof msg, "could not reach host '%s': %s", r->host,
          why && strstr(why, "unroutable")
              ? "it has no control queue on this broker (has its fleetd ever connected here?)"
              : (why && *why ? why : fl_strerror(status)));
  fl_req_done(r, NULL, msg);
}

/* The pinned hosts, as "a, b" into out (for an unknown host's error). */
static void fl_known_hosts(fl_control *c, char *out, size_t n) {
  json_t *hosts = fl_presence_hosts(c->presence), *h;
  size_t i, off = 0;
  out[0] = '\0';
  json_array_foreach(hosts, i, h) {
    int w = snprintf(out + off, n - off, "%s%s", off ? ", " : "",
                     json_string_value(json_object_get(h, "host")));
    if (w < 0 || (size_t)w >= n - off)
      break;
    off += (size_t)w;
  }
  json_decref(hosts);
}

/* Starts a request of client cl: its waiter, then the publish. */
static int fl_req_start(fl_control *c, fl_client *cl, int stop, int pending_is_end,
                        const char *host, fl_envelope *env, json_t *body, double wait_s,
                        fl_gw_cb cb, void *ctx, fl_wait **wait, char *err, size_t errlen) {
  fl_gw *gw = c->gw;
  fl_ctl_req *r = fl_calloc(1, sizeof *r);
  if (!r) {
    json_decref(body);
    fl_errf(err, errlen, "out of memory");
    return FL_ENOMEM;
  }
  int rc =
      fl_wait_new(gw, cl, FL_WAIT_SPAWN, &fl_req_wait_ops, wait_s, cb, ctx, &r->wait, err, errlen);
  if (rc) {
    json_decref(body);
    fl_free(r);
    return rc;
  }
  r->c = c;
  r->stop = stop;
  r->pending_is_end = pending_is_end;
  fl_copy(r->msg_id, sizeof r->msg_id, env->msg_id);
  fl_copy(r->spawn_id, sizeof r->spawn_id, env->spawn_id);
  fl_copy(r->host, sizeof r->host, host);
  r->wait->ext = r;
  fl_copy(r->wait->msg_id, sizeof r->wait->msg_id, env->msg_id);
  fl_copy(r->wait->trace_id, sizeof r->wait->trace_id, env->trace_id);
  r->next = c->reqs;
  c->reqs = r;
  if ((rc = fl_ctl_emit(c, host, env, body, r->msg_id))) {
    fl_wait *w = r->wait;
    fl_errf(err, errlen, "%s",
            rc == FL_EBROKER ? "the broker is unreachable: other hosts cannot be reached until "
                               "it is back"
                             : fl_strerror(rc));
    fl_gw_cancel(gw, &w); /* forgets r */
    return rc;
  }
  fl_info(env->trace_id, "%s %s sent to host '%s'", env->kind, env->spawn_id, host);
  *wait = r->wait;
  return 0;
}

int fl_control_spawn(fl_control *c, fl_client *cl, const char *host, const char *profile,
                     const char *name, const char *brief, double wait_s, fl_gw_cb cb, void *ctx,
                     fl_wait **wait, char *err, size_t errlen) {
  fl_gw *gw = c->gw;
  *wait = NULL;
  unsigned char pk[FL_SIGN_PK_BYTES];
  if (!fl_name_valid(host, FL_MAX_NAME) || fl_peers_lookup(gw->peers, host, pk) != 0) {
    char hosts[512];
    fl_known_hosts(c, hosts, sizeof hosts);
    fl_errf(err, errlen, "unknown host '%.80s': %s%s (fleet_list shows each host and its profiles)",
            host, hosts[0] ? "the hosts heard from are " : "no other host has been heard from",
            hosts);
    return FL_ENOTFOUND;
  }
  if (!profile || !*profile) {
    fl_errf(err, errlen, "give a profile (fleet_list shows each host's profiles)");
    return FL_EINVAL;
  }
  if (brief && strlen(brief) > FL_MAX_CONTENT - 4096) {
    fl_errf(err, errlen, "brief is %zu bytes; the limit for another host is %u: send a path",
            strlen(brief), FL_MAX_CONTENT - 4096);
    return FL_ETOOBIG;
  }
  if (wait_s < 0 || wait_s != wait_s || wait_s > FL_MAX_WAIT_S)
    wait_s = FL_MAX_WAIT_S;
  int rc = fl_wait_room(cl, err, errlen);
  if (rc)
    return rc;
  fl_envelope env;
  fl_ctl_env(c, &env, FL_KIND_SPAWN, (long long)(wait_s * 1000) + FL_CONTROL_TTL_MS);
  fl_uuid(env.trace_id);
  fl_uuid(env.spawn_id); /* the new agent's gid: a retry with it starts nothing new */
  fl_copy(env.from, sizeof env.from, cl->entity->gid);
  fl_copy(env.from_name, sizeof env.from_name, cl->entity->name);
  json_t *body = json_pack("{s:s}", "profile", profile);
  if (body && name && *name)
    json_object_set_new(body, "name", json_string(name));
  if (body && brief && *brief)
    json_object_set_new(body, "brief", json_string(brief));
  /* wait_s 0 ends the call with the first answer (pending, once the window
   * is open), which takes a moment to come. */
  return fl_req_start(c, cl, 0, wait_s <= 0, host, &env, body, wait_s > 0 ? wait_s : 5.0, cb, ctx,
                      wait, err, errlen);
}

/* The head of a request about one agent (STOP, APPROVE): a fresh trace,
 * the agent's gid, and who asks as this host vouches for it. */
static void fl_ctl_env_about(fl_control *c, fl_envelope *env, fl_envelope_kind kind,
                             const fl_client *cl, const fl_entity *e) {
  fl_ctl_env(c, env, kind, FL_CONTROL_TTL_MS);
  fl_uuid(env->trace_id);
  fl_copy(env->spawn_id, sizeof env->spawn_id, e->gid);
  fl_copy(env->from, sizeof env->from, cl->entity->gid);
  fl_copy(env->from_name, sizeof env->from_name, cl->entity->name);
}

int fl_control_stop(fl_control *c, fl_client *cl, fl_entity *e, fl_gw_cb cb, void *ctx,
                    fl_wait **wait, char *err, size_t errlen) {
  *wait = NULL;
  int rc = fl_wait_room(cl, err, errlen);
  if (rc)
    return rc;
  fl_envelope env;
  fl_ctl_env_about(c, &env, FL_KIND_STOP, cl, e);
  /* Who asks, as this host vouches for it: the target may not have its
   * presence yet (it may have just attached). */
  return fl_req_start(c, cl, FL_REQ_STOP, 0, e->host, &env,
                      json_pack("{s:s, s:s}", "name", e->name, "role", cl->entity->role),
                      FL_REMOTE_STOP_WAIT_S, cb, ctx, wait, err, errlen);
}

int fl_control_approve(fl_control *c, fl_client *cl, fl_entity *e, const char *request_id,
                       const char *decision, const char *reason, fl_gw_cb cb, void *ctx,
                       fl_wait **wait, char *err, size_t errlen) {
  *wait = NULL;
  int rc = fl_wait_room(cl, err, errlen);
  if (rc)
    return rc;
  fl_envelope env;
  fl_ctl_env_about(c, &env, FL_KIND_APPROVE, cl, e);
  json_t *body = json_pack("{s:s, s:s, s:s}", "requestId", request_id, "decision", decision, "role",
                           cl->entity->role);
  if (body && reason && *reason)
    json_object_set_new(body, "reason", json_string(reason));
  return fl_req_start(c, cl, FL_REQ_APPROVE, 0, e->host, &env, body, FL_REMOTE_STOP_WAIT_S, cb, ctx,
                      wait, err, errlen);
}

/* ---- serving ------------------------------------------------------------------- */

/* Refuses d: counted, logged; the caller dead-letters it. */
static int fl_ctl_refuse(fl_control *c, const fl_broker_delivery *d, int counter, const char *why) {
  fl_gw_count(c->gw, FL_C_CONTROL_REFUSED);
  if (counter != FL_C_COUNT)
    fl_gw_count(c->gw, counter);
  fl_warn(d->env->trace_id, "control message %s (%s) from host '%s' refused: %s",
          d->env->msg_id[0] ? d->env->msg_id : "(no msgId)", d->env->kind, d->env->host, why);
  return 1;
}

static void fl_serve_spawn(fl_control *c, const fl_broker_delivery *d) {
  fl_gw *gw = c->gw;
  const fl_envelope *env = d->env;
  fl_spawn_origin o;
  memset(&o, 0, sizeof o);
  fl_copy(o.host, sizeof o.host, env->host);
  fl_copy(o.msg_id, sizeof o.msg_id, env->msg_id);
  fl_copy(o.trace_id, sizeof o.trace_id, env->trace_id);
  fl_copy(o.by, sizeof o.by, env->from);
  fl_copy(o.by_name, sizeof o.by_name, env->from_name);
  fl_copy(o.spawn_id, sizeof o.spawn_id, env->spawn_id);
  /* It passed the receive checks: a seal that opened, or a signature checked. */
  o.auth = fl_envelope_is_pair_sealed(env) ? FL_AUTH_PAIR_SEALED : FL_AUTH_SIGNED;
  char err[FL_MAX_ERRMSG] = "";
  json_t *known = NULL;
  if (fl_spawn_known(gw, env->spawn_id, &known, err, sizeof err)) {
    fl_gw_count(gw, FL_C_SPAWN_DUPLICATES);
    fl_info(env->trace_id, "SPAWN %s from host '%s' repeats a spawnId: nothing new is started",
            env->spawn_id, env->host);
    fl_control_answer_spawn(c, &o, known, err);
    json_decref(known);
    return;
  }
  json_t *body;
  const char *profile, *name, *brief;
  if (fl_control_parse_spawn(d->body, d->len, &body, &profile, &name, &brief, err, sizeof err)) {
    fl_gw_count(gw, FL_C_CONTROL_REFUSED);
    fl_warn(env->trace_id, "SPAWN from host '%s' refused: %s", env->host, err);
    fl_control_answer_spawn(c, &o, NULL, err);
    return;
  }
  if (fl_spawn_for_host(gw, &o, env->spawn_id, profile, name, brief, err, sizeof err) != 0) {
    fl_gw_count(gw, FL_C_CONTROL_REFUSED);
    fl_warn(env->trace_id, "SPAWN of '%s' from host '%s' refused: %s", profile, env->host, err);
    fl_control_answer_spawn(c, &o, NULL, err);
  } else {
    fl_gw_count(gw, FL_C_SPAWNS_FOR_HOSTS);
    fl_info(env->trace_id, "SPAWN of '%s' for '%s' on host '%s' launched as gid %s", profile,
            env->from_name, env->host, env->spawn_id);
  }
  json_decref(body);
}

/* The asker of request d as its host vouches for it (the signature is that
 * host's): its presence here, or, before that arrived, a stand-in (in
 * *stand_in) with the role the request claims. */
static fl_entity *fl_ctl_asker(fl_gw *gw, const fl_broker_delivery *d, fl_entity *stand_in) {
  const fl_envelope *env = d->env;
  fl_entity *who = fl_entity_by_gid(gw, env->from);
  if (who && !who->dropped)
    return who;
  json_t *o = fl_json_loadb(d->body ? d->body : "", d->body ? d->len : 0, 0, NULL);
  const char *role = json_string_value(json_object_get(o, "role"));
  memset(stand_in, 0, sizeof *stand_in);
  fl_copy(stand_in->gid, sizeof stand_in->gid, env->from);
  fl_copy(stand_in->name, sizeof stand_in->name, env->from_name);
  fl_copy(stand_in->role, sizeof stand_in->role,
          role && fl_name_valid(role, FL_MAX_ROLE) ? role : "agent");
  fl_copy(stand_in->host, sizeof stand_in->host, env->host);
  stand_in->remote = 1;
  json_decref(o);
  return stand_in;
}

/* What a STOP or APPROVE is about: its asker (fl_ctl_asker, into *who) and
 * its target, the agent of this host whose gid is the request's spawnId;
 * NULL, with err saying so (and hint after it), when there is none. */
static fl_entity *fl_ctl_target(fl_gw *gw, const fl_broker_delivery *d, fl_entity *stand_in,
                                fl_entity **who, const char *hint, char *err, size_t errlen) {
  *who = fl_ctl_asker(gw, d, stand_in);
  fl_entity *e = fl_entity_by_gid(gw, d->env->spawn_id);
  if (e && !e->remote && !e->removed)
    return e;
  fl_errf(err, errlen, "host '%s' has no agent with gid %s%s", gw->cfg.host_id, d->env->spawn_id,
          hint);
  return NULL;
}

static void fl_serve_stop(fl_control *c, const fl_broker_delivery *d) {
  fl_gw *gw = c->gw;
  const fl_envelope *env = d->env;
  char err[FL_MAX_ERRMSG] = "";
  json_t *result = NULL;
  fl_entity stand_in, *who;
  fl_entity *e = fl_ctl_target(gw, d, &stand_in, &who, " (stopped already?)", err, sizeof err);
  if (e && fl_spawn_stop(gw, who, 0, e, &result, err, sizeof err) == 0)
    fl_gw_count(gw, FL_C_STOPS_FOR_HOSTS);
  if (!result)
    fl_gw_count(gw, FL_C_CONTROL_REFUSED);
  fl_ctl_answer(c, FL_KIND_STOPPED, env->host, env->from, env->msg_id, env->trace_id, env->spawn_id,
                result, err);
  json_decref(result);
}

/* A decision on a permission request of a worker of this host, checked
 * here against this host's authority.approve (approve.h); answered with
 * APPROVED. */
static void fl_serve_approve(fl_control *c, const fl_broker_delivery *d) {
  fl_gw *gw = c->gw;
  const fl_envelope *env = d->env;
  char err[FL_MAX_ERRMSG] = "";
  json_t *result = NULL;
  fl_entity stand_in, *who;
  fl_entity *e = fl_ctl_target(gw, d, &stand_in, &who, "", err, sizeof err);
  json_t *o = fl_json_loadb(d->body ? d->body : "", d->body ? d->len : 0, 0, NULL);
  const char *id = json_string_value(json_object_get(o, "requestId"));
  const char *decision = json_string_value(json_object_get(o, "decision"));
  json_t *reason = json_object_get(o, "reason");
  if (!id || !decision || (reason && !json_is_string(reason)))
    fl_errf(err, sizeof err, "the APPROVE body needs requestId and decision (strings)");
  else if (e)
    fl_approve_decide(gw, who, 0, e, id, decision, json_string_value(reason), &result, err,
                      sizeof err);
  json_decref(o);
  if (!result) {
    fl_gw_count(gw, FL_C_CONTROL_REFUSED);
    fl_warn(env->trace_id, "APPROVE from '%s'@%s refused: %s", env->from_name, env->host, err);
  }
  fl_ctl_answer(c, FL_KIND_APPROVED, env->host, env->from, env->msg_id, env->trace_id,
                env->spawn_id, result, err);
  json_decref(result);
}

static void fl_take_answer(fl_control *c, const fl_broker_delivery *d, int stopped) {
  const fl_envelope *env = d->env;
  char err[FL_MAX_ERRMSG] = "";
  json_t *result = NULL;
  if (fl_control_parse_answer(d->body, d->len, &result, err, sizeof err) != 0) {
    fl_gw_count(c->gw, FL_C_CONTROL_REFUSED);
    fl_warn(env->trace_id, "%s from host '%s' is malformed: %s", env->kind, env->host, err);
    return;
  }
  if (stopped == FL_REQ_STOP && result)
    fl_presence_forget(c->presence, env->host, env->spawn_id, 0);
  fl_ctl_req *r = fl_req_find(c, env->in_reply_to);
  if (!r || strcmp(r->host, env->host) != 0 || r->stop != stopped) {
    fl_info(env->trace_id, "%s %s from host '%s' (%s): nobody waits for it any more", env->kind,
            env->spawn_id, env->host,
            result ? json_string_value(json_object_get(result, "status")) : err);
    json_decref(result);
    return;
  }
  const char *status = result ? json_string_value(json_object_get(result, "status")) : "";
  if (!stopped && result && strcmp(status, "pending") == 0 && !r->pending_is_end) {
    /* Launched; the wait goes on for ready. */
    json_decref(r->pending);
    r->pending = result;
    return;
  }
  fl_req_done(r, result, err);
}

static int fl_control_check(fl_control *c, const fl_broker_delivery *d);

int fl_control_receive(fl_control *c, const fl_broker_delivery *d) {
  fl_gw *gw = c->gw;
  fl_gw_count(gw, FL_C_CONTROL_RECEIVED);
  char why[256];
  /* Sealed to this host like any body that crosses the broker: from here
   * on the checks read the opened body (pd). */
  fl_broker_delivery pd;
  char *opened;
  int bad = fl_inbound_open(gw, d, 1, &pd, &opened, why, sizeof why);
  if (bad)
    return fl_ctl_refuse(c, d, bad == FL_C_COUNT ? FL_C_VERIFY_MALFORMED : bad, why);
  int rc = fl_control_check(c, &pd);
  fl_free(opened);
  return rc;
}

/* The checks after the body was opened, then the request served. */
static int fl_control_check(fl_control *c, const fl_broker_delivery *d) {
  fl_gw *gw = c->gw;
  const fl_envelope *env = d->env;
  fl_envelope_kind kind;
  if (fl_envelope_kind_parse(env->kind, &kind) != 0 ||
      (kind != FL_KIND_SPAWN && kind != FL_KIND_STOP && kind != FL_KIND_SPAWNED &&
       kind != FL_KIND_STOPPED && kind != FL_KIND_APPROVE && kind != FL_KIND_APPROVED))
    return fl_ctl_refuse(c, d, FL_C_VERIFY_MALFORMED, "not a control kind");
  if (!fl_is_uuid(env->msg_id) || !fl_is_uuid(env->spawn_id) || !fl_is_uuid(env->from) ||
      ((kind == FL_KIND_SPAWNED || kind == FL_KIND_STOPPED || kind == FL_KIND_APPROVED) &&
       !fl_is_uuid(env->in_reply_to)))
    return fl_ctl_refuse(c, d, FL_C_VERIFY_MALFORMED,
                         "msgId, spawnId, from or inReplyTo is "
                         "not a UUID");
  long long exp = 0;
  if (fl_rfc3339_parse(env->expires_at, &exp) != 0 || exp <= fl_now_ms())
    return fl_ctl_refuse(c, d, FL_C_VERIFY_EXPIRED, "expired (or no expiresAt)");
  fl_entity *from = fl_entity_by_gid(gw, env->from);
  int answer = kind == FL_KIND_SPAWNED || kind == FL_KIND_STOPPED || kind == FL_KIND_APPROVED;
  if (from && (!from->remote || strcmp(from->host, env->host) != 0) && !answer)
    return fl_ctl_refuse(c, d, FL_C_VERIFY_MISATTRIBUTED,
                         "its sender lives on another host than the one that signed it");
  char owner[FL_MAX_NAME + 1];
  if (!from && !answer && fl_store_gid_owner(gw->store, env->from, owner, sizeof owner) == 0 &&
      strcmp(owner, env->host) != 0)
    return fl_ctl_refuse(c, d, FL_C_VERIFY_MISATTRIBUTED,
                         "its sender's gid belongs to another host than the one that signed it");
  switch (kind) {
  case FL_KIND_SPAWN:
    fl_serve_spawn(c, d);
    break;
  case FL_KIND_STOP:
    fl_serve_stop(c, d);
    break;
  case FL_KIND_APPROVE:
    fl_serve_approve(c, d);
    break;
  default:
    fl_take_answer(c, d,
                   kind == FL_KIND_STOPPED    ? FL_REQ_STOP
                   : kind == FL_KIND_APPROVED ? FL_REQ_APPROVE
                                              : 0);
    break;
  }
  return 0;
}
