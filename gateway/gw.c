/* gw.c — the gateway core: roster, routing, waiting calls and nudges.
 *
 * Every message goes one way: it is committed to the hold store first, then
 * the recipient is woken. Waking hands the message to a waiting call of the
 * recipient if one matches (a send waiting for this reply, else a long poll),
 * taking it out of the store in the same step; otherwise it stays held and
 * the recipient's nudge is armed. So a message the gateway accepted is either
 * in the store or in a result on its way to the client, never only in memory.
 *
 * All state is owned by the loop thread. Entities are never freed while the
 * gateway lives (a name that leaves may come back and resume its gid), so
 * their embedded nudge timers stay valid until fl_gw_shutdown closes them. */
#include "gateway/gw.h"

#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/ids.h"
#include "common/names.h"
#include "common/time.h"
#include "common/error.h"
#include "gateway/gw_internal.h"
#include "gateway/remote.h"
#include "common/limits.h"
#include "common/log.h"
#include "gateway/store.h"

/* How often held messages past their expiry are swept. */
#define FL_SWEEP_MS 30000

static const char *const fl_counter_names[FL_C_COUNT] = {
    [FL_C_RPC_PARSE_ERRORS] = "rpc_parse_errors",
    [FL_C_RPC_INVALID] = "rpc_invalid_requests",
    [FL_C_RPC_UNKNOWN_METHOD] = "rpc_unknown_methods",
    [FL_C_RPC_OVERSIZE] = "rpc_oversize_lines",
    [FL_C_TOOL_UNKNOWN] = "tool_unknown",
    [FL_C_TOOL_BAD_ARGS] = "tool_bad_arguments",
    [FL_C_TOOL_CALLS] = "tool_calls",
    [FL_C_CLIENTS_REFUSED] = "clients_refused",
    [FL_C_CLIENTS_ACCEPTED] = "clients_accepted",
    [FL_C_CLIENTS_SLOW] = "clients_dropped_slow",
    [FL_C_MSGS_ACCEPTED] = "messages_accepted",
    [FL_C_MSGS_DRAINED] = "messages_drained",
    [FL_C_MSGS_DUPLICATE] = "messages_duplicate",
    [FL_C_MSGS_REFUSED_FULL] = "messages_refused_full",
    [FL_C_MSGS_EXPIRED] = "messages_expired",
    [FL_C_NUDGES] = "nudges",
    [FL_C_NUDGE_FAILURES] = "nudge_failures",
    [FL_C_STORE_ERRORS] = "store_errors",
    [FL_C_REMOTE_PUBLISHED] = "remote_published",
    [FL_C_REMOTE_PUBLISH_FAILED] = "remote_publish_failed",
    [FL_C_REMOTE_RECEIVED] = "remote_received",
    [FL_C_REMOTE_DEAD_LETTERED] = "remote_dead_lettered",
    [FL_C_PRESENCE_RECEIVED] = "presence_received",
    [FL_C_PRESENCE_REFUSED] = "presence_refused",
    [FL_C_BROKER_DISCONNECTS] = "broker_disconnects",
    [FL_C_VERIFY_BAD_SIGNATURE] = "verify_bad_signature",
    [FL_C_VERIFY_UNPINNED] = "verify_unpinned",
    [FL_C_VERIFY_MISATTRIBUTED] = "verify_misattributed",
    [FL_C_VERIFY_WRONG_RECIPIENT] = "verify_wrong_recipient",
    [FL_C_VERIFY_EXPIRED] = "verify_expired",
    [FL_C_VERIFY_DUPLICATE] = "verify_duplicate",
    [FL_C_VERIFY_NEWER_MAJOR] = "verify_newer_major",
    [FL_C_VERIFY_MALFORMED] = "verify_malformed",
};

/* ---- small helpers ---------------------------------------------------- */

void fl_copy(char *dst, size_t n, const char *src) { snprintf(dst, n, "%s", src ? src : ""); }

void fl_gw_count(fl_gw *gw, enum fl_counter c) {
  if (gw && c < FL_C_COUNT)
    gw->counters[c]++;
}

static void fl_trace_remember(fl_gw *gw, const fl_msg *m) {
  size_t i = gw->trace_next;
  fl_copy(gw->traces[i].msg_id, FL_ID_LEN, m->msg_id);
  fl_copy(gw->traces[i].trace_id, FL_ID_LEN, m->trace_id);
  fl_copy(gw->traces[i].from_gid, FL_ID_LEN, m->from_gid);
  fl_copy(gw->traces[i].to_gid, FL_ID_LEN, m->to_gid);
  gw->traces[i].is_send = strcmp(m->kind, "SEND") == 0;
  gw->trace_next = (i + 1) % FL_TRACE_RING;
}

static const char *fl_trace_lookup(fl_gw *gw, const char *msg_id) {
  for (size_t i = 0; i < FL_TRACE_RING; i++)
    if (gw->traces[i].msg_id[0] && strcmp(gw->traces[i].msg_id, msg_id) == 0)
      return gw->traces[i].trace_id;
  return NULL;
}

/* The newest SEND from from_gid to to_gid this gateway saw, or -1. */
static long fl_trace_last_send(fl_gw *gw, const char *from_gid, const char *to_gid) {
  for (size_t k = 1; k <= FL_TRACE_RING; k++) {
    size_t i = (gw->trace_next + FL_TRACE_RING - k) % FL_TRACE_RING;
    if (!gw->traces[i].msg_id[0])
      return -1;
    if (gw->traces[i].is_send && strcmp(gw->traces[i].from_gid, from_gid) == 0 &&
        strcmp(gw->traces[i].to_gid, to_gid) == 0)
      return (long)i;
  }
  return -1;
}

/* ---- roster ------------------------------------------------------------ */

fl_entity *fl_entity_by_gid(fl_gw *gw, const char *gid) {
  for (fl_entity *e = gw->entities; e; e = e->next)
    if (strcasecmp(e->gid, gid) == 0)
      return e;
  return NULL;
}

void fl_entity_set_groups(fl_entity *e, const char *csv) {
  e->ngroups = 0;
  const char *p = csv;
  while (p && *p && e->ngroups < FL_MAX_GROUPS) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    if (len > 0 && len <= FL_MAX_GROUP_NAME) {
      memcpy(e->groups[e->ngroups], p, len);
      e->groups[e->ngroups][len] = '\0';
      e->ngroups++;
    }
    p = comma ? comma + 1 : NULL;
  }
}

static int fl_entity_in_group(const fl_entity *e, const char *group) {
  for (size_t i = 0; i < e->ngroups; i++)
    if (strcmp(e->groups[i], group) == 0)
      return 1;
  return 0;
}

fl_entity *fl_entity_new(fl_gw *gw, const char *gid, const char *name) {
  fl_entity *e = fl_calloc(1, sizeof *e);
  if (!e)
    return NULL;
  e->gw = gw;
  fl_copy(e->gid, sizeof e->gid, gid);
  fl_copy(e->name, sizeof e->name, name);
  uv_timer_init(gw->loop, &e->nudge_timer);
  e->nudge_timer.data = e;
  e->next = gw->entities;
  gw->entities = e;
  gw->nentities++;
  return e;
}

static void fl_entity_load_cb(void *ctx, const fl_entity_rec *r) {
  fl_gw *gw = ctx;
  fl_entity *e = fl_entity_new(gw, r->gid, r->name);
  if (!e)
    return;
  fl_copy(e->role, sizeof e->role, r->role);
  fl_entity_set_groups(e, r->groups);
}

void fl_entity_rec_of(const fl_entity *e, fl_entity_rec *r) {
  memset(r, 0, sizeof *r);
  fl_copy(r->gid, sizeof r->gid, e->gid);
  fl_copy(r->name, sizeof r->name, e->name);
  fl_copy(r->role, sizeof r->role, e->role);
  if (e->remote)
    fl_copy(r->host, sizeof r->host, e->host);
  size_t off = 0;
  for (size_t i = 0; i < e->ngroups; i++) {
    int w = snprintf(r->groups + off, sizeof r->groups - off, "%s%s", i ? "," : "", e->groups[i]);
    if (w < 0 || (size_t)w >= sizeof r->groups - off)
      break;
    off += (size_t)w;
  }
}

static int fl_entity_persist(fl_gw *gw, const fl_entity *e) {
  fl_entity_rec r;
  fl_entity_rec_of(e, &r);
  int rc = fl_store_entity_put(gw->store, &r);
  if (rc)
    fl_gw_count(gw, FL_C_STORE_ERRORS);
  return rc;
}

static fl_entity *fl_local_by_name(fl_gw *gw, const char *name) {
  for (fl_entity *e = gw->entities; e; e = e->next)
    if (!e->remote && strcmp(e->name, name) == 0)
      return e;
  return NULL;
}

/* Resolves `to` (a gid, a name, or name@host) across the roster, or fills
 * err. A name on more than one host is ambiguous: the error lists the
 * candidates so the caller can pick one. */
static fl_entity *fl_resolve(fl_gw *gw, const char *to, char *err, size_t errlen) {
  if (fl_is_uuid(to)) {
    fl_entity *e = fl_entity_by_gid(gw, to);
    if (e)
      return e;
  }
  char name[FL_MAX_NAME + 1];
  const char *at = strchr(to, '@');
  const char *host = at ? at + 1 : NULL;
  size_t nlen = at ? (size_t)(at - to) : strlen(to);
  if (nlen > FL_MAX_NAME)
    nlen = FL_MAX_NAME;
  memcpy(name, to, nlen);
  name[nlen] = '\0';
  fl_entity *found = NULL;
  size_t matches = 0;
  for (fl_entity *e = gw->entities; e; e = e->next) {
    if (strcmp(e->name, name) != 0)
      continue;
    if (host && strcmp(host, e->remote ? e->host : gw->cfg.host_id) != 0)
      continue;
    found = e;
    matches++;
  }
  if (matches == 1)
    return found;
  if (matches == 0) {
    fl_errf(err, errlen,
             "no entity '%s' %s: `to` takes a gid, a name or name@host; call fleet_list to "
             "see who is there",
             to, fl_remote_on(gw) ? "in the roster" : "on this host");
    return NULL;
  }
  /* Candidates as name@host, as many as fit: the caller picks one. */
  char list[1024] = "";
  size_t off = 0;
  for (fl_entity *e = gw->entities; e; e = e->next) {
    if (strcmp(e->name, name) != 0)
      continue;
    int w = snprintf(list + off, sizeof list - off, " %s@%s", e->name,
                     e->remote ? e->host : gw->cfg.host_id);
    if (w < 0 || (size_t)w >= sizeof list - off)
      break;
    off += (size_t)w;
  }
  fl_errf(err, errlen, "the name '%s' is on more than one host; use one of:%s", name, list);
  return NULL;
}

/* ---- messages as JSON ---------------------------------------------------- */

json_t *fl_msg_json(const fl_msg *m) {
  char ts[32];
  fl_rfc3339(m->ts_ms, ts);
  json_t *o = json_pack("{s:s, s:s, s:{s:s, s:s}, s:s, s:s%, s:s, s:s}", "msgId", m->msg_id, "kind",
                        m->kind, "from", "gid", m->from_gid, "name", m->from_name, "to", m->to_gid,
                        "content", m->content ? m->content : "", m->content_len, "ts", ts,
                        "traceId", m->trace_id);
  if (o && m->in_reply_to[0])
    json_object_set_new(o, "inReplyTo", json_string(m->in_reply_to));
  return o;
}

json_t *fl_peer_json(const fl_entity *e) {
  return json_pack("{s:s, s:s}", "gid", e->gid, "name", e->name);
}

/* ---- nudges ------------------------------------------------------------ */

static void fl_nudge_stop(fl_entity *e) {
  if (e->nudge_armed) {
    uv_timer_stop(&e->nudge_timer);
    e->nudge_armed = 0;
  }
  e->nudge_step = 0;
}

static void fl_tmux_exit_cb(uv_process_t *p, int64_t status, int sig) {
  fl_entity *e = p->data;
  if (status != 0 || sig != 0) {
    fl_gw_count(e->gw, FL_C_NUDGE_FAILURES);
    fl_warn(NULL, "nudge: tmux send-keys to pane %s of '%s' failed (exit %lld, signal %d)", e->pane,
            e->name, (long long)status, sig);
  }
  uv_close((uv_handle_t *)p, (uv_close_cb)fl_free);
}

/* Types the nudge text into the entity's own pane, literally, then Enter. */
static void fl_nudge_tmux(fl_entity *e) {
  fl_gw *gw = e->gw;
  char *args[16];
  int n = 0;
  args[n++] = "tmux";
  if (e->tmux_socket[0]) {
    args[n++] = "-S";
    args[n++] = e->tmux_socket;
  }
  args[n++] = "send-keys";
  args[n++] = "-t";
  args[n++] = e->pane;
  args[n++] = "-l";
  args[n++] = gw->cfg.nudge.text;
  args[n++] = ";";
  args[n++] = "send-keys";
  args[n++] = "-t";
  args[n++] = e->pane;
  args[n++] = "Enter";
  args[n] = NULL;

  uv_process_t *p = fl_calloc(1, sizeof *p);
  if (!p) {
    fl_gw_count(gw, FL_C_NUDGE_FAILURES);
    return;
  }
  uv_stdio_container_t stdio[3] = {
      {.flags = UV_IGNORE}, {.flags = UV_IGNORE}, {.flags = UV_IGNORE}};
  uv_process_options_t opt = {
      .exit_cb = fl_tmux_exit_cb, .file = "tmux", .args = args, .stdio_count = 3, .stdio = stdio};
  p->data = e;
  int rc = uv_spawn(gw->loop, p, &opt);
  if (rc) {
    fl_gw_count(gw, FL_C_NUDGE_FAILURES);
    fl_warn(NULL, "nudge: cannot run tmux for '%s': %s", e->name, uv_strerror(rc));
    uv_close((uv_handle_t *)p, (uv_close_cb)fl_free);
  }
}

static void fl_nudge_fire(uv_timer_t *t) {
  fl_entity *e = t->data;
  fl_gw *gw = e->gw;
  e->nudge_armed = 0;
  size_t held = 0;
  if (!e->client || fl_store_count(gw->store, e->gid, fl_now_ms(), &held) != 0 || held == 0) {
    e->nudge_step = 0;
    return;
  }
  /* A session inside a tool call is busy: skip this step, keep reminding. */
  if (e->client->nwaits == 0) {
    fl_gw_count(gw, FL_C_NUDGES);
    fl_info(NULL, "nudge: '%s' has %zu held message(s)", e->name, held);
    if (e->client->ops && e->client->ops->notify) {
      json_t *data = json_pack("{s:s, s:I, s:s}", "event", "messages_waiting", "held",
                               (json_int_t)held, "hint", "call fleet_poll to read them");
      if (data)
        e->client->ops->notify(e->client->ctx, data);
    }
    if (e->pane[0])
      fl_nudge_tmux(e);
  }
  unsigned long long gap = gw->cfg.nudge.backoff_ms;
  for (unsigned i = 0; i < e->nudge_step && gap < gw->cfg.nudge.max_ms; i++)
    gap *= 2;
  if (gap > gw->cfg.nudge.max_ms)
    gap = gw->cfg.nudge.max_ms;
  e->nudge_step++;
  e->nudge_armed = 1;
  uv_timer_start(&e->nudge_timer, fl_nudge_fire, gap, 0);
}

void fl_nudge_arm(fl_entity *e) {
  fl_gw *gw = e->gw;
  if (!gw->cfg.nudge.enabled || !e->client || e->nudge_armed || gw->shutting_down)
    return;
  e->nudge_armed = 1;
  uv_timer_start(&e->nudge_timer, fl_nudge_fire, gw->cfg.nudge.first_ms, 0);
}

/* ---- waiting calls ------------------------------------------------------- */

static void fl_wait_unlink(fl_wait *w) {
  fl_client *c = w->client;
  for (fl_wait **pp = &c->waits; *pp; pp = &(*pp)->next) {
    if (*pp == w) {
      *pp = w->next;
      c->nwaits--;
      break;
    }
  }
}

static void fl_wait_close_cb(uv_handle_t *h) { fl_free(h->data); }

/* Detaches w from its client and frees it once its timer is closed. */
static void fl_wait_release(fl_wait *w) {
  fl_wait_unlink(w);
  if (w->ops && w->ops->forget)
    w->ops->forget(w);
  w->ext = NULL;
  uv_timer_stop(&w->timer);
  uv_close((uv_handle_t *)&w->timer, fl_wait_close_cb);
}

void fl_wait_complete(fl_wait *w, json_t *result, const char *err) {
  fl_gw_cb cb = w->cb;
  void *ctx = w->ctx;
  fl_entity *e = w->client->entity;
  fl_wait_release(w);
  if (!result && !err)
    err = "out of memory";
  cb(ctx, err ? NULL : result, err);
  if (err)
    json_decref(result);
  /* Whatever is still held after this call needs a nudge again. */
  size_t held = 0;
  if (e && e->client && fl_store_count(e->gw->store, e->gid, fl_now_ms(), &held) == 0 && held)
    fl_nudge_arm(e);
}

static json_t *fl_poll_result(fl_gw *gw, fl_entity *e, const char *from, size_t max) {
  fl_msg *msgs = NULL;
  size_t n = 0, remaining = 0;
  long long now = fl_now_ms();
  if (fl_store_take(gw->store, e->gid, from, max, now, &msgs, &n) != 0) {
    fl_gw_count(gw, FL_C_STORE_ERRORS);
    n = 0;
  }
  json_t *arr = json_array();
  for (size_t i = 0; i < n; i++) {
    json_array_append_new(arr, fl_msg_json(&msgs[i]));
    fl_remote_drained(gw, e->gid, msgs[i].msg_id);
    fl_debug(msgs[i].trace_id, "drained %s for '%s'", msgs[i].msg_id, e->name);
  }
  gw->counters[FL_C_MSGS_DRAINED] += n;
  fl_msgs_free(msgs, n);
  fl_store_count(gw->store, e->gid, now, &remaining);
  if (remaining == 0)
    fl_nudge_stop(e);
  return json_pack("{s:o, s:I}", "messages", arr, "remaining", (json_int_t)remaining);
}

static json_t *fl_send_pending(fl_gw *gw, fl_wait *w) {
  fl_entity *peer = fl_entity_by_gid(gw, w->peer_gid);
  return json_pack("{s:s, s:s, s:o, s:s}", "msgId", w->msg_id, "traceId", w->trace_id, "to",
                   peer ? fl_peer_json(peer)
                        : json_pack("{s:s,s:s}", "gid", w->peer_gid, "name", ""),
                   "status", "pending");
}

static void fl_wait_timeout_cb(uv_timer_t *t) {
  fl_wait *w = t->data;
  w->ops->timeout(w);
}

/* A send's time is up: it reads pending, and the reply waits for a poll. */
static void fl_send_timeout(fl_wait *w) {
  fl_info(w->trace_id, "send %s: no reply in time; the reply will be held for fleet_poll",
          w->msg_id);
  fl_wait_complete(w, fl_send_pending(w->gw, w), NULL);
}

/* A long poll's time is up: it returns what is held (likely nothing). */
static void fl_poll_timeout(fl_wait *w) {
  fl_wait_complete(w, fl_poll_result(w->gw, w->client->entity,
                                     w->peer_gid[0] ? w->peer_gid : NULL, w->max),
                   NULL);
}

static const fl_wait_ops fl_send_wait_ops = {.timeout = fl_send_timeout};
static const fl_wait_ops fl_poll_wait_ops = {.timeout = fl_poll_timeout};

void fl_wait_expect_reply(fl_wait *w, double wait_s) {
  w->kind = FL_WAIT_SEND;
  w->ops = &fl_send_wait_ops;
  w->ext = NULL;
  w->wants_reply = 0;
  uv_timer_start(&w->timer, fl_wait_timeout_cb, (uint64_t)(wait_s * 1000.0), 0);
}

int fl_wait_new(fl_gw *gw, fl_client *c, enum fl_wait_kind kind, const fl_wait_ops *ops,
                double wait_s, fl_gw_cb cb, void *ctx, fl_wait **out, char *err, size_t errlen) {
  if (c->nwaits >= FL_MAX_WAITERS_PER_CLIENT) {
    fl_errf(err, errlen,
             "too many waiting calls in this session (at most %d); wait for "
             "one to finish",
             FL_MAX_WAITERS_PER_CLIENT);
    return FL_EFULL;
  }
  fl_wait *w = fl_calloc(1, sizeof *w);
  if (!w) {
    fl_errf(err, errlen, "out of memory");
    return FL_ENOMEM;
  }
  w->gw = gw;
  w->client = c;
  w->kind = kind;
  w->ops = ops;
  w->cb = cb;
  w->ctx = ctx;
  uv_timer_init(gw->loop, &w->timer);
  w->timer.data = w;
  uv_timer_start(&w->timer, fl_wait_timeout_cb, (uint64_t)(wait_s * 1000.0), 0);
  /* Append: the oldest waiting call is served first. */
  fl_wait **pp = &c->waits;
  while (*pp)
    pp = &(*pp)->next;
  *pp = w;
  c->nwaits++;
  *out = w;
  return 0;
}

void fl_gw_cancel(fl_gw *gw, fl_wait **w) {
  if (!w || !*w)
    return;
  fl_wait_release(*w);
  *w = NULL;
}

/* Hands a just-stored message to a waiting call of its recipient if one
 * matches; else arms the recipient's nudge. Returns 1 if a call took it. */
int fl_wake(fl_gw *gw, fl_entity *to, const fl_msg *m) {
  fl_client *c = to->client;
  if (!c) {
    return 0;
  }
  for (fl_wait *w = c->waits; w; w = w->next) {
    /* A send still waiting for the broker's confirm can already get its
     * reply: the confirm and the reply race on separate channels. */
    int wants_reply = w->kind == FL_WAIT_SEND || (w->kind == FL_WAIT_CONFIRM && w->wants_reply);
    if (!wants_reply || strcmp(m->kind, "REPLY") != 0 || strcmp(w->peer_gid, m->from_gid) != 0 ||
        (m->in_reply_to[0] && strcmp(m->in_reply_to, w->msg_id) != 0))
      continue;
    fl_msg got;
    if (fl_store_take_id(gw->store, to->gid, m->msg_id, &got) != 0)
      break;
    gw->counters[FL_C_MSGS_DRAINED]++;
    fl_remote_drained(gw, to->gid, got.msg_id);
    json_t *reply = fl_msg_json(&got);
    fl_free(got.content);
    fl_entity *peer = fl_entity_by_gid(gw, w->peer_gid);
    json_t *res =
        json_pack("{s:s, s:s, s:o, s:s, s:o}", "msgId", w->msg_id, "traceId", w->trace_id, "to",
                  fl_peer_json(peer ? peer : to), "status", "replied", "reply", reply);
    fl_info(m->trace_id, "reply %s resolved the waiting send %s of '%s'", m->msg_id, w->msg_id,
            to->name);
    fl_wait_complete(w, res, NULL);
    return 1;
  }
  for (fl_wait *w = c->waits; w; w = w->next) {
    if (w->kind != FL_WAIT_POLL || (w->peer_gid[0] && strcmp(w->peer_gid, m->from_gid) != 0))
      continue;
    json_t *res = fl_poll_result(gw, to, w->peer_gid[0] ? w->peer_gid : NULL, w->max);
    fl_wait_complete(w, res, NULL);
    return 1;
  }
  fl_nudge_arm(to);
  return 0;
}

/* Commits m for its recipient. Fills err for the caller on failure. */
int fl_accept(fl_gw *gw, fl_entity *to, fl_msg *m, char *err, size_t errlen) {
  int rc = fl_store_put(gw->store, m);
  if (rc == FL_EDUP) {
    fl_gw_count(gw, FL_C_MSGS_DUPLICATE);
    fl_errf(err, errlen, "message %s was already delivered to '%s'", m->msg_id, to->name);
    return rc;
  }
  if (rc == FL_EFULL) {
    fl_gw_count(gw, FL_C_MSGS_REFUSED_FULL);
    fl_warn(m->trace_id, "'%s' holds %d messages; refused %s", to->name, FL_MAX_HELD_PER_ENTITY,
            m->msg_id);
    fl_errf(err, errlen,
             "'%s' already has %d messages waiting and takes no more until it polls; try "
             "again later",
             to->name, FL_MAX_HELD_PER_ENTITY);
    return rc;
  }
  if (rc) {
    fl_gw_count(gw, FL_C_STORE_ERRORS);
    fl_errf(err, errlen, "could not store the message (%s); see fleetd's log", fl_strerror(rc));
    return rc;
  }
  fl_gw_count(gw, FL_C_MSGS_ACCEPTED);
  fl_trace_remember(gw, m);
  fl_info(m->trace_id, "%s %s from '%s' held for '%s'", m->kind, m->msg_id, m->from_name, to->name);
  return 0;
}

static void fl_msg_init(fl_msg *m, const char *kind, const fl_entity *from, const fl_entity *to,
                        const char *content) {
  memset(m, 0, sizeof *m);
  fl_uuid(m->msg_id);
  fl_copy(m->kind, sizeof m->kind, kind);
  fl_copy(m->from_gid, sizeof m->from_gid, from->gid);
  fl_copy(m->from_name, sizeof m->from_name, from->name);
  fl_copy(m->to_gid, sizeof m->to_gid, to->gid);
  m->ts_ms = fl_now_ms();
  m->content = (char *)content;
  m->content_len = strlen(content);
}

static int fl_need_entity(fl_client *c, char *err, size_t errlen) {
  if (c && c->entity)
    return 0;
  fl_errf(err, errlen,
           "this session has no fleet identity: start it through fleet-mcp with FLEET_NAME "
           "set");
  return FL_EINVAL;
}

static int fl_check_content(const char *content, char *err, size_t errlen) {
  if (strlen(content) > FL_MAX_CONTENT) {
    fl_errf(err, errlen, "content is %zu bytes; the limit is %u: split it or send a path",
             strlen(content), FL_MAX_CONTENT);
    return FL_ETOOBIG;
  }
  return 0;
}

static double fl_clamp_wait(double wait_s) {
  if (!(wait_s > 0)) /* also catches NaN */
    return 0;
  return wait_s > FL_MAX_WAIT_S ? FL_MAX_WAIT_S : wait_s;
}

/* ---- verbs ----------------------------------------------------------------- */

int fl_gw_send(fl_gw *gw, fl_client *c, const char *to, const char *content, double wait_s,
               fl_gw_cb cb, void *ctx, json_t **result, fl_wait **wait, char *err, size_t errlen) {
  int rc;
  *result = NULL;
  *wait = NULL;
  if ((rc = fl_need_entity(c, err, errlen)) || (rc = fl_check_content(content, err, errlen)))
    return rc;
  fl_entity *dst = fl_resolve(gw, to, err, errlen);
  if (!dst)
    return FL_ENOTFOUND;
  wait_s = fl_clamp_wait(wait_s);
  /* Checked before the message is committed: a waiter must be possible. */
  if ((wait_s > 0 || dst->remote) && c->nwaits >= FL_MAX_WAITERS_PER_CLIENT) {
    fl_errf(err, errlen, "too many waiting calls in this session (at most %d)",
             FL_MAX_WAITERS_PER_CLIENT);
    return FL_EFULL;
  }
  fl_msg m;
  fl_msg_init(&m, "SEND", c->entity, dst, content);
  fl_uuid(m.trace_id);
  if (dst->remote) {
    /* Routing fork: another host's entity goes through the broker. */
    json_t *sent = json_pack("{s:s, s:s, s:o, s:s}", "msgId", m.msg_id, "traceId", m.trace_id, "to",
                             fl_peer_json(dst), "status", "sent");
    rc = fl_remote_publish(gw, c, dst, &m, wait_s, sent, cb, ctx, wait, err, errlen);
    if (rc == 0)
      fl_trace_remember(gw, &m);
    return rc;
  }
  if ((rc = fl_accept(gw, dst, &m, err, errlen)))
    return rc;
  if (wait_s > 0) {
    fl_wait *w;
    rc = fl_wait_new(gw, c, FL_WAIT_SEND, &fl_send_wait_ops, wait_s, cb, ctx, &w, err, errlen);
    if (rc == 0) {
      fl_copy(w->msg_id, sizeof w->msg_id, m.msg_id);
      fl_copy(w->trace_id, sizeof w->trace_id, m.trace_id);
      fl_copy(w->peer_gid, sizeof w->peer_gid, dst->gid);
      fl_wake(gw, dst, &m);
      *wait = w;
      return 0;
    }
    /* The message is committed: report it as sent rather than fail. */
  }
  fl_wake(gw, dst, &m);
  *result = json_pack("{s:s, s:s, s:o, s:s}", "msgId", m.msg_id, "traceId", m.trace_id, "to",
                      fl_peer_json(dst), "status", "sent");
  return 0;
}

int fl_gw_reply(fl_gw *gw, fl_client *c, const char *to, const char *content,
                const char *in_reply_to, fl_gw_cb cb, void *ctx, json_t **result, fl_wait **wait,
                char *err, size_t errlen) {
  int rc;
  *result = NULL;
  *wait = NULL;
  if ((rc = fl_need_entity(c, err, errlen)) || (rc = fl_check_content(content, err, errlen)))
    return rc;
  fl_entity *dst = fl_resolve(gw, to, err, errlen);
  if (!dst)
    return FL_ENOTFOUND;
  fl_msg m;
  fl_msg_init(&m, "REPLY", c->entity, dst, content);
  /* Without inReplyTo, answer the oldest send of dst still waiting on us. */
  const char *answered = (in_reply_to && *in_reply_to) ? in_reply_to : NULL;
  const char *trace = NULL;
  if (dst->client) {
    for (fl_wait *w = dst->client->waits; w; w = w->next) {
      if (w->kind == FL_WAIT_SEND && strcmp(w->peer_gid, c->entity->gid) == 0 &&
          (!answered || strcmp(answered, w->msg_id) == 0)) {
        answered = w->msg_id;
        trace = w->trace_id;
        break;
      }
    }
  }
  if (!answered) {
    /* Else the newest message dst sent us: the reply joins its flow. */
    long i = fl_trace_last_send(gw, dst->gid, c->entity->gid);
    if (i >= 0) {
      answered = gw->traces[i].msg_id;
      trace = gw->traces[i].trace_id;
    }
  }
  if (answered) {
    fl_copy(m.in_reply_to, sizeof m.in_reply_to, answered);
    if (!trace)
      trace = fl_trace_lookup(gw, answered);
  }
  if (trace)
    fl_copy(m.trace_id, sizeof m.trace_id, trace);
  else
    fl_uuid(m.trace_id);
  if (dst->remote) {
    json_t *sent = json_pack("{s:s, s:s, s:o, s:s}", "msgId", m.msg_id, "traceId", m.trace_id, "to",
                             fl_peer_json(dst), "status", "sent");
    return fl_remote_publish(gw, c, dst, &m, 0, sent, cb, ctx, wait, err, errlen);
  }
  if ((rc = fl_accept(gw, dst, &m, err, errlen)))
    return rc;
  int taken = fl_wake(gw, dst, &m);
  *result = json_pack("{s:s, s:s, s:o, s:s}", "msgId", m.msg_id, "traceId", m.trace_id, "to",
                      fl_peer_json(dst), "status", taken ? "delivered" : "held");
  return 0;
}

int fl_gw_poll(fl_gw *gw, fl_client *c, const char *from, double wait_s, size_t max, fl_gw_cb cb,
               void *ctx, json_t **result, fl_wait **wait, char *err, size_t errlen) {
  int rc;
  *result = NULL;
  *wait = NULL;
  if ((rc = fl_need_entity(c, err, errlen)))
    return rc;
  const char *from_gid = NULL;
  if (from && *from) {
    fl_entity *src = fl_resolve(gw, from, err, errlen);
    if (!src)
      return FL_ENOTFOUND;
    from_gid = src->gid;
  }
  if (max == 0)
    max = FL_DEFAULT_POLL;
  if (max > FL_MAX_POLL)
    max = FL_MAX_POLL;
  wait_s = fl_clamp_wait(wait_s);
  json_t *res = fl_poll_result(gw, c->entity, from_gid, max);
  if (!res) {
    fl_errf(err, errlen, "out of memory");
    return FL_ENOMEM;
  }
  if (wait_s > 0 && json_array_size(json_object_get(res, "messages")) == 0) {
    /* Nothing yet: park the call until a message for it arrives. */
    json_decref(res);
    fl_wait *w;
    if ((rc = fl_wait_new(gw, c, FL_WAIT_POLL, &fl_poll_wait_ops, wait_s, cb, ctx, &w, err,
                           errlen)))
      return rc;
    w->max = max;
    if (from_gid)
      fl_copy(w->peer_gid, sizeof w->peer_gid, from_gid);
    *wait = w;
    return 0;
  }
  *result = res;
  return 0;
}

int fl_gw_broadcast(fl_gw *gw, fl_client *c, const char *group, const char *content, fl_gw_cb cb,
                    void *ctx, json_t **result, fl_wait **wait, char *err, size_t errlen) {
  int rc;
  *result = NULL;
  *wait = NULL;
  if ((rc = fl_need_entity(c, err, errlen)) || (rc = fl_check_content(content, err, errlen)))
    return rc;
  if (group && !*group)
    group = NULL;
  char msg_id[FL_ID_LEN], trace_id[FL_ID_LEN];
  fl_uuid(msg_id);
  fl_uuid(trace_id);
  size_t recipients = 0, failed = 0;
  fl_msg m;
  for (fl_entity *e = gw->entities; e; e = e->next) {
    /* Remote members get their copy from the broker, bound to the key. */
    if (e == c->entity || e->remote || (group && !fl_entity_in_group(e, group)))
      continue;
    fl_msg_init(&m, "BROADCAST", c->entity, e, content);
    fl_copy(m.msg_id, sizeof m.msg_id, msg_id);
    fl_copy(m.trace_id, sizeof m.trace_id, trace_id);
    char why[256];
    if (fl_accept(gw, e, &m, why, sizeof why) != 0) {
      failed++;
      continue;
    }
    recipients++;
    fl_wake(gw, e, &m);
  }
  fl_info(trace_id, "broadcast %s from '%s' to %s: %zu local recipient(s), %zu refused", msg_id,
          c->entity->name, group ? group : "everyone", recipients, failed);
  json_t *res =
      json_pack("{s:s, s:s, s:s?, s:I, s:I}", "msgId", msg_id, "traceId", trace_id, "group", group,
                "recipients", (json_int_t)recipients, "refused", (json_int_t)failed);
  if (!fl_remote_on(gw)) {
    *result = res;
    return 0;
  }
  /* One publish reaches every other host's members; the broker copies it. */
  fl_msg_init(&m, "BROADCAST", c->entity, c->entity, content);
  fl_copy(m.msg_id, sizeof m.msg_id, msg_id);
  fl_copy(m.trace_id, sizeof m.trace_id, trace_id);
  m.to_gid[0] = '\0';
  json_object_set_new(res, "remote", json_string("published"));
  rc = fl_remote_broadcast(gw, c, &m, group, res, cb, ctx, wait, err, errlen);
  if (rc != 0 && recipients > 0) {
    /* The local copies are committed: say so, loudly, rather than fail. */
    res = json_pack("{s:s, s:s, s:s?, s:I, s:I, s:s}", "msgId", msg_id, "traceId", trace_id,
                    "group", group, "recipients", (json_int_t)recipients, "refused",
                    (json_int_t)failed, "remote", err);
    *result = res;
    return 0;
  }
  return rc;
}

int fl_gw_list(fl_gw *gw, fl_client *c, json_t **result) {
  json_t *arr = json_array();
  long long now = fl_now_ms();
  for (fl_entity *e = gw->entities; e; e = e->next) {
    size_t held = 0;
    fl_store_count(gw->store, e->gid, now, &held);
    json_t *groups = json_array();
    for (size_t i = 0; i < e->ngroups; i++)
      json_array_append_new(groups, json_string(e->groups[i]));
    const char *status = e->remote ? fl_remote_status(gw, e) : e->client ? "online" : "offline";
    json_t *o =
        json_pack("{s:s, s:s, s:s, s:s, s:o, s:s, s:b, s:I}", "gid", e->gid, "name", e->name,
                  "role", e->role, "host", e->remote ? e->host : gw->cfg.host_id, "groups", groups,
                  "status", status, "self", c && c->entity == e, "held", (json_int_t)held);
    long long seen = e->client ? now : e->last_seen_ms;
    if (o && seen) {
      char ts[32];
      fl_rfc3339(seen, ts);
      json_object_set_new(o, "lastSeen", json_string(ts));
    }
    json_array_append_new(arr, o);
  }
  /* Sorted by name so tables read the same every time. */
  size_t n = json_array_size(arr);
  for (size_t i = 1; i < n; i++) {
    for (size_t j = i; j > 0; j--) {
      json_t *a = json_array_get(arr, j - 1), *b = json_array_get(arr, j);
      if (strcmp(json_string_value(json_object_get(a, "name")),
                 json_string_value(json_object_get(b, "name"))) <= 0)
        break;
      json_incref(a);
      json_array_set(arr, j - 1, b);
      json_array_set_new(arr, j, a);
    }
  }
  *result = json_pack("{s:s, s:s?, s:o}", "host", gw->cfg.host_id, "self",
                      (c && c->entity) ? c->entity->gid : NULL, "entities", arr);
  return *result ? 0 : FL_ENOMEM;
}

json_t *fl_gw_status(fl_gw *gw) {
  size_t held = 0, online = 0;
  fl_store_total(gw->store, &held);
  for (fl_entity *e = gw->entities; e; e = e->next)
    online += e->client != NULL;
  json_t *broker = fl_remote_describe(gw);
  json_t *counters = json_object();
  for (int i = 0; i < FL_C_COUNT; i++)
    json_object_set_new(counters, fl_counter_names[i], json_integer((json_int_t)gw->counters[i]));
  return json_pack("{s:s, s:s, s:I, s:I, s:s, s:s, s:o?, s:s, s:I, s:I, s:I, s:I, s:o}", "hostId",
                   gw->cfg.host_id, "version", FLEET_VERSION, "pid", (json_int_t)getpid(),
                   "uptimeS", (json_int_t)((fl_now_ms() - gw->started_ms) / 1000), "socket",
                   gw->cfg.socket, "stateDir", gw->cfg.state_dir, "broker", broker, "mode",
                   gw->cfg.broker_uri[0] ? "broker" : "single-host", "clients",
                   (json_int_t)gw->nclients, "entities", (json_int_t)gw->nentities, "online",
                   (json_int_t)online, "held", (json_int_t)held, "counters", counters);
}

/* ---- sessions -------------------------------------------------------------- */

int fl_gw_attach(fl_gw *gw, const fl_ident *id, const fl_client_ops *ops, void *ctx,
                 fl_client **out, char *err, size_t errlen) {
  *out = NULL;
  if (gw->shutting_down) {
    fl_errf(err, errlen, "fleetd is shutting down");
    return FL_EOFFLINE;
  }
  fl_client *c = fl_calloc(1, sizeof *c);
  if (!c) {
    fl_errf(err, errlen, "out of memory");
    return FL_ENOMEM;
  }
  c->gw = gw;
  c->ops = ops;
  c->ctx = ctx;
  if (!id || !id->name) {
    gw->nclients++;
    *out = c;
    return 0;
  }

  int rc = FL_EINVAL;
  const char *role = (id->role && *id->role) ? id->role : NULL;
  if (!fl_name_valid(id->name, FL_MAX_NAME) || fl_is_uuid(id->name)) {
    fl_errf(err, errlen,
             "FLEET_NAME '%.80s' is not a valid name: use 1-%d letters, digits, '-', '_' or "
             "'.'",
             id->name, FL_MAX_NAME);
    goto fail;
  }
  if (role && !fl_name_valid(role, FL_MAX_ROLE)) {
    fl_errf(err, errlen,
             "FLEET_ROLE '%.40s' is not valid: use lead, architect, "
             "orchestrator or worker",
             role);
    goto fail;
  }
  for (size_t i = 0; i < id->ngroups; i++) {
    if (!fl_name_valid(id->groups[i], FL_MAX_GROUP_NAME)) {
      fl_errf(err, errlen, "group '%.80s' in FLEET_GROUPS is not a valid name", id->groups[i]);
      goto fail;
    }
  }
  if (id->gid && *id->gid && !fl_is_uuid(id->gid)) {
    fl_errf(err, errlen, "FLEET_GID '%.40s' is not a UUID", id->gid);
    goto fail;
  }
  if (id->pane && strlen(id->pane) > FL_MAX_PANE) {
    fl_errf(err, errlen, "pane id is too long");
    goto fail;
  }

  fl_entity *e = fl_local_by_name(gw, id->name);
  if (e && e->client) {
    rc = FL_ENAMETAKEN;
    fl_errf(err, errlen,
             "the name '%s' is in use by a live session on this host; pick another FLEET_NAME "
             "or end that session first",
             id->name);
    goto fail;
  }
  if (e && id->gid && *id->gid && strcasecmp(e->gid, id->gid) != 0) {
    fl_errf(err, errlen, "the name '%s' belongs to gid %s, not FLEET_GID %s", id->name, e->gid,
             id->gid);
    goto fail;
  }
  if (!e && id->gid && *id->gid && fl_entity_by_gid(gw, id->gid)) {
    fl_errf(err, errlen, "FLEET_GID %s already belongs to another name", id->gid);
    goto fail;
  }
  if (!e && gw->nentities >= FL_MAX_ENTITIES) {
    rc = FL_EFULL;
    fl_errf(err, errlen, "the roster is full (%d entities)", FL_MAX_ENTITIES);
    goto fail;
  }
  if (!e) {
    char gid[FL_ID_LEN];
    if (id->gid && *id->gid)
      fl_copy(gid, sizeof gid, id->gid);
    else
      fl_uuid(gid);
    e = fl_entity_new(gw, gid, id->name);
    if (!e) {
      rc = FL_ENOMEM;
      fl_errf(err, errlen, "out of memory");
      goto fail;
    }
  }
  if (role || !e->role[0])
    fl_copy(e->role, sizeof e->role, role ? role : "agent");
  if (id->groups_given) {
    e->ngroups = 0;
    for (size_t i = 0; i < id->ngroups && i < FL_MAX_GROUPS; i++)
      fl_copy(e->groups[e->ngroups++], FL_MAX_GROUP_NAME + 1, id->groups[i]);
  }
  fl_copy(e->pane, sizeof e->pane, id->pane);
  fl_copy(e->tmux_socket, sizeof e->tmux_socket, id->tmux_socket);
  if ((rc = fl_entity_persist(gw, e))) {
    fl_errf(err, errlen, "could not record the entity (%s)", fl_strerror(rc));
    goto fail;
  }
  e->client = c;
  c->entity = e;
  gw->nclients++;
  fl_info(NULL, "'%s' (%s, gid %s) is online", e->name, e->role, e->gid);
  fl_remote_entity_changed(gw, e);
  size_t held = 0;
  if (fl_store_count(gw->store, e->gid, fl_now_ms(), &held) == 0 && held)
    fl_nudge_arm(e);
  *out = c;
  return 0;

fail:
  fl_free(c);
  return rc;
}

void fl_gw_detach(fl_gw *gw, fl_client **cp) {
  if (!cp || !*cp)
    return;
  fl_client *c = *cp;
  while (c->waits)
    fl_wait_release(c->waits);
  if (c->entity) {
    fl_entity *e = c->entity;
    e->client = NULL;
    e->last_seen_ms = fl_now_ms();
    e->pane[0] = '\0';
    e->tmux_socket[0] = '\0';
    fl_nudge_stop(e);
    fl_info(NULL, "'%s' is offline", e->name);
    fl_remote_entity_changed(gw, e);
  }
  gw->nclients--;
  fl_free(c);
  *cp = NULL;
}

const char *fl_client_gid(const fl_client *c) { return (c && c->entity) ? c->entity->gid : NULL; }

const char *fl_client_name(const fl_client *c) { return (c && c->entity) ? c->entity->name : NULL; }

/* ---- life cycle ------------------------------------------------------------ */

static void fl_sweep_cb(uv_timer_t *t) {
  fl_gw *gw = t->data;
  size_t dropped = 0;
  if (fl_store_expire(gw->store, fl_now_ms(), &dropped) != 0)
    fl_gw_count(gw, FL_C_STORE_ERRORS);
  else if (dropped)
    fl_remote_sweep(gw);
  if (dropped) {
    gw->counters[FL_C_MSGS_EXPIRED] += dropped;
    fl_warn(NULL, "sweeper: dropped %zu held message(s) past their expiry", dropped);
  }
}

int fl_gw_new(uv_loop_t *loop, const fl_gw_config *cfg, fl_gw **out, char *err, size_t errlen) {
  char path[FL_MAX_PATH + 32];
  int rc;
  *out = NULL;
  fl_gw *gw = fl_calloc(1, sizeof *gw);
  if (!gw) {
    fl_errf(err, errlen, "out of memory");
    return FL_ENOMEM;
  }
  gw->loop = loop;
  gw->cfg = *cfg;
  gw->started_ms = fl_now_ms();
  if ((rc = fl_identity_load(cfg->state_dir, cfg->host_id, &gw->id, err, errlen)) ||
      (rc = fl_peers_load(cfg->state_dir, &gw->peers, err, errlen)))
    goto fail;
  snprintf(path, sizeof path, "%s/holds.db", cfg->state_dir);
  if ((rc = fl_store_open(path, &gw->store))) {
    fl_errf(err, errlen, "cannot open the hold store %s: %s", path, fl_strerror(rc));
    goto fail;
  }
  if ((rc = fl_store_entity_each(gw->store, fl_entity_load_cb, gw))) {
    fl_errf(err, errlen, "cannot read the roster from %s: %s", path, fl_strerror(rc));
    goto fail;
  }
  uv_timer_init(loop, &gw->sweep);
  gw->sweep.data = gw;
  uv_timer_start(&gw->sweep, fl_sweep_cb, FL_SWEEP_MS, FL_SWEEP_MS);
  uv_unref((uv_handle_t *)&gw->sweep);
  if ((rc = fl_remote_start(gw, err, errlen))) {
    uv_close((uv_handle_t *)&gw->sweep, NULL);
    goto fail;
  }
  *out = gw;
  return 0;

fail:
  fl_store_close(&gw->store);
  fl_peers_free(&gw->peers);
  fl_identity_clear(&gw->id);
  for (fl_entity *e = gw->entities; e; e = e->next)
    uv_close((uv_handle_t *)&e->nudge_timer, NULL);
  uv_run(loop, UV_RUN_NOWAIT);
  while (gw->entities) {
    fl_entity *n = gw->entities->next;
    fl_free(gw->entities);
    gw->entities = n;
  }
  fl_free(gw);
  return rc;
}

json_t *fl_gw_identity(fl_gw *gw) {
  return json_pack("{s:s, s:s}", "hostId", gw->cfg.host_id, "publicKey", gw->id.pk_b64);
}

json_t *fl_gw_peers(fl_gw *gw) {
  json_t *arr = json_array();
  for (size_t i = 0; i < fl_peers_count(gw->peers); i++) {
    const fl_peer *p = fl_peers_at(gw->peers, i);
    json_array_append_new(arr, json_pack("{s:s, s:s, s:s?, s:s}", "host", p->host, "publicKey",
                                         p->pk_b64, "url", p->url[0] ? p->url : NULL,
                                         "pinnedAt", p->pinned_at));
  }
  return json_pack("{s:o}", "peers", arr);
}

int fl_gw_peer_add(fl_gw *gw, const char *host, const char *pk, const char *url, char *err,
                   size_t errlen) {
  if (host && strcmp(host, gw->cfg.host_id) == 0) {
    fl_errf(err, errlen, "'%s' is this gateway's own host id; pin other hosts' keys", host);
    return FL_EINVAL;
  }
  int rc = fl_peers_add(gw->peers, host, pk, url, err, errlen);
  if (rc == FL_EPINNED)
    fl_warn(NULL, "refused to pin a different key for host '%s': %s", host, err);
  if (rc == 0 && (rc = fl_peers_save(gw->peers, err, errlen)) == 0)
    fl_info(NULL, "pinned host '%s' to key %s", host, pk);
  return rc;
}

int fl_gw_peer_remove(fl_gw *gw, const char *host, char *err, size_t errlen) {
  int rc = fl_peers_remove(gw->peers, host);
  if (rc == FL_ENOTFOUND) {
    fl_errf(err, errlen, "no pin for host '%s' (fleetctl peer list shows the pins)", host);
    return rc;
  }
  if (rc == 0 && (rc = fl_peers_save(gw->peers, err, errlen)) == 0)
    fl_info(NULL, "removed the pin of host '%s'", host);
  return rc;
}

void fl_gw_shutdown(fl_gw *gw) {
  if (!gw || gw->shutting_down)
    return;
  gw->shutting_down = 1;
  for (fl_entity *e = gw->entities; e; e = e->next) {
    if (e->client) {
      while (e->client->waits)
        e->client->waits->ops->timeout(e->client->waits);
    }
    uv_close((uv_handle_t *)&e->nudge_timer, NULL);
  }
  uv_close((uv_handle_t *)&gw->sweep, NULL);
  fl_remote_stop(gw);
}

void fl_gw_free(fl_gw **gwp) {
  if (!gwp || !*gwp)
    return;
  fl_gw *gw = *gwp;
  fl_remote_free(gw);
  fl_peers_free(&gw->peers);
  fl_identity_clear(&gw->id);
  while (gw->entities) {
    fl_entity *n = gw->entities->next;
    fl_free(gw->entities);
    gw->entities = n;
  }
  fl_store_close(&gw->store);
  fl_free(gw);
  *gwp = NULL;
}
