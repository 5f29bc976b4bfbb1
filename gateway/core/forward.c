/* forward.c — the forward path (forward.h).
 *
 * The receiving side keeps one slot per entity with briefs queued: at most
 * one brief of an entity is in hand at a time, so briefs go in one after
 * the other, in arrival order, each only once the agent is idle. A slot
 * looks at the agent's terminal through its backend (status), types
 * through it (deliver), and comes back every recheck gap while the agent is
 * busy or has a draft in its input line, until the brief is typed, fails,
 * or its deadline passes. The store is the truth: a slot holds no brief in
 * memory between steps, it reads the row again.
 *
 * Before a look, and again when the screen is idle, the brief is offered to
 * the agent's own door (module.h's offer: its hooks). Taken, it is marked
 * typing and handed over by the module (fl_forward_hand), which ends it
 * with fl_forward_handed; held, nothing is typed and the slot looks again
 * after its gap; where no door is open, it is typed as before. The store's
 * state decides who has it: whoever marks it typing first.
 *
 * The sending side (the waiting call that a receipt ends) is
 * forward_send.c. Receipts for a sender on this host go to it
 * (fl_forward_receipt); for a sender on another host they go out through
 * remote.h; one that cannot be handed on (broker down, fleetd just
 * restarted) stays marked unreported and is retried every
 * FL_FORWARD_RETRY_MS until the sender's wait is surely over.
 *
 * Test-only knobs, read once at start from the environment (documented in
 * docs/operations.md as test-only): FLEET_TEST_PRETYPE_DELAY_MS pauses
 * after a brief is recorded (and acknowledged) before it is looked at;
 * FLEET_TEST_TYPING_DELAY_MS pauses between typing a brief's text and
 * pressing Enter. */
#include "gateway/core/forward.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/json_read.h"
#include "common/log.h"
#include "gateway/core/forward_internal.h"
#include "gateway/core/gw_internal.h"
#include "gateway/core/module.h"
#include "gateway/core/provenance.h"
#include "gateway/core/remote.h"
#include "gateway/inject/inject.h"
#include "gateway/inject/inject_text.h"
#include "gateway/proto/envelope.h"
#include "gateway/store/store_forward.h"

/* Between a look that found the agent busy and the next; at least the
 * quiet time of the look itself. */
#define FL_FORWARD_RECHECK_MS 200
/* Unreported receipts are tried again this often. */
#define FL_FORWARD_RETRY_MS 1000
/* Finished briefs are kept this long as the record that stops a replay
 * from being typed twice: past any brief's deadline (inject.timeoutS is at
 * most a day), after which the receive checks refuse it as expired anyway. */
#define FL_FORWARD_KEEP_MS (2LL * 86400 * 1000)
/* Receipts reported per retry round: bounds one timer callback. */
#define FL_FORWARD_RETRY_BATCH 32

static const char fl_fwd_too_late[] =
    "not typed within inject.timeoutS: the agent did not come to an idle, empty prompt in time";

typedef struct fl_fwd_slot {
  struct fl_fwd_slot *next;
  struct fl_forward *fw;
  fl_entity *e;
  uv_timer_t timer;
  int busy;                     /* a look or a delivery is in flight */
  int typing;                   /* that delivery: typing into the terminal */
  char msg_id[FL_ID_LEN];       /* the brief in hand ("" none) */
  char paused_for[FL_ID_LEN];   /* the brief the pre-type pause was taken for */
  char deferred_for[FL_ID_LEN]; /* the brief a deferral was counted for */
  char held_for[FL_ID_LEN];     /* the brief a hold for another door was logged for */
} fl_fwd_slot;

struct fl_forward {
  fl_gw *gw;
  fl_fwd_slot *slots;
  uv_timer_t retry;
  int stopped;
  unsigned pretype_ms, typing_ms;
};

static unsigned fl_env_ms(const char *name) {
  const char *v = getenv(name);
  long n = v && *v ? strtol(v, NULL, 10) : 0;
  return n > 0 && n < 600000 ? (unsigned)n : 0;
}

/* ---- delivery mode --------------------------------------------------------------- */

/* The backend that types into local e, or NULL. */
static const fl_inject_type *fl_backend_of(const fl_entity *e) {
  if (e->spawn.backend)
    return e->spawn.backend;
  if (strcmp(e->role, "worker") == 0 && e->client && e->pane[0] && e->inject)
    return e->inject;
  return NULL;
}

int fl_forward_injects(fl_gw *gw, const fl_entity *e) {
  (void)gw;
  if (!e)
    return 0;
  if (e->remote)
    return e->delivery_inject;
  const fl_inject_type *b = fl_backend_of(e);
  return b && b->deliver;
}

const char *fl_forward_delivery(fl_gw *gw, const fl_entity *e) {
  return fl_forward_injects(gw, e) ? "inject" : "pull";
}

/* ---- the receiving side ---------------------------------------------------------- */

static fl_fwd_slot *fl_slot_of(struct fl_forward *fw, fl_entity *e);
static void fl_slot_kick(fl_fwd_slot *s, unsigned delay_ms);

/* Tells the sender of f how it ended; marks it reported once that is done
 * (or nobody can be told). */
static void fl_fwd_report(struct fl_forward *fw, const fl_fwd *f) {
  fl_gw *gw = fw->gw;
  int injected = f->state == FL_FWD_INJECTED;
  int done = 1;
  if (!f->sender_host[0]) {
    fl_forward_receipt(gw, fl_entity_by_gid(gw, f->from_gid), injected, f->msg_id, f->reason);
  } else if (fl_now_ms() > f->deadline_ms + FL_INJECT_MARGIN_MS) {
    fl_warn(f->trace_id, "the outcome of brief %s could not be sent to host '%s' in time: dropped",
            f->msg_id, f->sender_host);
  } else {
    fl_entity *worker = fl_entity_by_gid(gw, f->to_gid);
    fl_msg m;
    memset(&m, 0, sizeof m);
    fl_uuid(m.msg_id);
    fl_copy(m.kind, sizeof m.kind,
            fl_envelope_kind_name(injected ? FL_KIND_INJECTED : FL_KIND_FAILED));
    fl_copy(m.trace_id, sizeof m.trace_id, f->trace_id);
    fl_copy(m.from_gid, sizeof m.from_gid, f->to_gid);
    fl_copy(m.from_name, sizeof m.from_name, worker ? worker->name : "");
    fl_copy(m.to_gid, sizeof m.to_gid, f->from_gid);
    fl_copy(m.in_reply_to, sizeof m.in_reply_to, f->msg_id);
    m.ts_ms = fl_now_ms();
    m.expires_ms = f->deadline_ms + FL_INJECT_MARGIN_MS;
    m.content = (char *)f->reason; /* failed: why; injected: the typing note, or "" */
    m.content_len = strlen(m.content);
    int rc = fl_remote_receipt(gw, &m);
    if (rc) {
      done = 0;
      fl_debug(f->trace_id, "receipt for brief %s not sent yet: %s", f->msg_id, fl_strerror(rc));
    } else {
      fl_info(f->trace_id, "%s for brief %s sent to host '%s'", m.kind, f->msg_id, f->sender_host);
    }
  }
  if (done && fl_store_fwd_reported(gw->store, f->msg_id, f->to_gid) != 0)
    fl_gw_count(gw, FL_C_STORE_ERRORS);
}

/* Ends the brief msg_id of gid (named name): state and reason recorded,
 * counted, reported. via names the door it went through (NULL: typed). */
static void fl_fwd_finish(struct fl_forward *fw, const char *gid, const char *name,
                          const char *msg_id, int state, const char *why, const char *via) {
  fl_gw *gw = fw->gw;
  if (fl_store_fwd_set(gw->store, msg_id, gid, state, why) != 0) {
    fl_gw_count(gw, FL_C_STORE_ERRORS);
    return;
  }
  fl_fwd f;
  if (fl_store_fwd_get(gw->store, msg_id, gid, &f) != 0)
    return;
  if (state == FL_FWD_INJECTED) {
    fl_gw_count(gw, FL_C_BRIEFS_INJECTED);
    if (via)
      fl_info(f.trace_id, "brief %s from '%s' handed to '%s' (via: %s)", msg_id, f.from_name, name,
              via);
    else
      fl_info(f.trace_id, "brief %s from '%s' typed into '%s'", msg_id, f.from_name, name);
  } else {
    fl_gw_count(gw, FL_C_INJECT_FAILURES);
    fl_warn(f.trace_id, "brief %s from '%s' for '%s' failed%s%s: %s", msg_id, f.from_name, name,
            via ? " via " : "", via ? via : "", why);
  }
  fl_fwd_report(fw, &f);
  fl_fwd_clear(&f);
}

static void fl_slot_finish(fl_fwd_slot *s, const char *msg_id, int state, const char *why) {
  fl_fwd_finish(s->fw, s->e->gid, s->e->name, msg_id, state, why, NULL);
}

void fl_forward_target(fl_gw *gw, const fl_entity *e, fl_inject_target *t) {
  memset(t, 0, sizeof *t);
  t->label = e->name;
  if (e->client && e->pane[0]) {
    t->pane = e->pane;
    t->socket = e->tmux_socket;
  } else if (e->spawn.pane[0]) {
    t->pane = e->spawn.pane;
    t->socket = e->spawn.socket;
  }
  t->prompt = gw->cfg.nudge.prompt;
  t->quiet_ms = gw->cfg.nudge.quiet_ms;
  t->command_chars = NULL; /* the default */
  for (size_t i = 0; e->spawn.profile[0] && i < gw->cfg.nprofiles; i++) {
    const fl_profile *p = &gw->cfg.profiles[i];
    if (strcmp(p->name, e->spawn.profile) != 0)
      continue;
    if (p->prompt[0]) {
      t->prompt = p->prompt;
      t->quiet_ms = p->quiet_ms;
    }
    t->command_chars = p->command_chars;
    t->busy = p->busy[0] ? p->busy : NULL;
  }
}

/* The target of s's entity for brief f; strings borrowed from e, f and
 * the configuration. */
static void fl_slot_target(fl_fwd_slot *s, const fl_fwd *f, fl_inject_target *t) {
  fl_forward_target(s->fw->gw, s->e, t);
  if (!t->pane) { /* the session went away: the pane the brief remembers */
    t->pane = f->pane;
    t->socket = f->socket;
  }
  t->pause_ms = s->fw->typing_ms;
}

/* The backend for brief f: the entity's, else tmux when the brief
 * remembers a pane (the session went away, the pane may still be there). */
static const fl_inject_type *fl_slot_backend(fl_fwd_slot *s, const fl_fwd *f) {
  const fl_inject_type *b = fl_backend_of(s->e);
  if (!b && f->pane[0])
    b = fl_inject_lookup("tmux");
  return b;
}

/* The command, environment and cwd of a profile's launch (exec runs it per
 * brief): argv and env point into the parsed JSON, env adds the profile's
 * NAME=VALUE to this process's environment. Freed by fl_launch_free. */
typedef struct fl_launch {
  json_t *root;
  const char **argv;
  char **env;
  size_t nenv;
} fl_launch;

extern char **environ;

static void fl_launch_free(fl_launch *l) {
  for (size_t i = 0; l->env && l->env[i]; i++)
    if (i >= l->nenv)
      fl_free(l->env[i]);
  fl_free(l->env);
  fl_free(l->argv);
  json_decref(l->root);
  memset(l, 0, sizeof *l);
}

/* Fills t's argv, env and cwd from the profile of s's entity, if it has
 * one. 0, or FL_ENOMEM / FL_EINVAL (then l holds nothing). */
static int fl_launch_of(fl_fwd_slot *s, fl_inject_target *t, fl_launch *l) {
  fl_gw *gw = s->fw->gw;
  memset(l, 0, sizeof *l);
  const fl_profile *p = NULL;
  for (size_t i = 0; s->e->spawn.profile[0] && i < gw->cfg.nprofiles; i++)
    if (strcmp(gw->cfg.profiles[i].name, s->e->spawn.profile) == 0)
      p = &gw->cfg.profiles[i];
  if (!p)
    return 0;
  l->root = fl_json_loadb(p->launch, strlen(p->launch), 0, NULL);
  json_t *cmd = json_object_get(l->root, "command"), *env = json_object_get(l->root, "env");
  size_t n = json_array_size(cmd);
  if (!n) {
    fl_launch_free(l);
    return FL_EINVAL;
  }
  l->argv = fl_calloc(n + 1, sizeof *l->argv);
  if (!l->argv) {
    fl_launch_free(l);
    return FL_ENOMEM;
  }
  for (size_t i = 0; i < n; i++)
    l->argv[i] = json_string_value(json_array_get(cmd, i));
  if (json_object_size(env)) {
    size_t base = 0;
    while (environ && environ[base])
      base++;
    l->nenv = base;
    l->env = fl_calloc(base + json_object_size(env) + 1, sizeof *l->env);
    if (!l->env) {
      fl_launch_free(l);
      return FL_ENOMEM;
    }
    memcpy(l->env, environ, base * sizeof *l->env);
    const char *k;
    json_t *v;
    size_t i = base;
    json_object_foreach(env, k, v) {
      size_t len = strlen(k) + strlen(json_string_value(v)) + 2;
      if (!(l->env[i] = fl_malloc(len))) {
        fl_launch_free(l);
        return FL_ENOMEM;
      }
      snprintf(l->env[i++], len, "%s=%s", k, json_string_value(v));
    }
  }
  t->argv = l->argv;
  t->env = (const char *const *)l->env;
  t->cwd = p->cwd;
  return 0;
}

static void fl_slot_step(fl_fwd_slot *s);

static void fl_slot_timer(uv_timer_t *t) { fl_slot_step(t->data); }

static void fl_slot_kick(fl_fwd_slot *s, unsigned delay_ms) {
  if (s->fw->stopped || s->busy)
    return;
  uv_timer_start(&s->timer, fl_slot_timer, delay_ms, 0);
}

static unsigned fl_slot_gap(fl_fwd_slot *s) {
  unsigned q = s->fw->gw->cfg.nudge.quiet_ms;
  return q > FL_FORWARD_RECHECK_MS ? q : FL_FORWARD_RECHECK_MS;
}

/* The agent was not ready for the brief in hand: count it once, wait. */
static void fl_slot_defer(fl_fwd_slot *s, enum fl_inject_state st) {
  fl_gw *gw = s->fw->gw;
  if (strcmp(s->deferred_for, s->msg_id) != 0) {
    fl_copy(s->deferred_for, sizeof s->deferred_for, s->msg_id);
    fl_gw_count(gw,
                st == FL_INJECT_DRAFT ? FL_C_INJECT_DRAFTS_DEFERRED : FL_C_INJECT_BUSY_DEFERRED);
    fl_info(NULL, "brief %s for '%s' waits: %s", s->msg_id, s->e->name,
            st == FL_INJECT_DRAFT ? "its input line holds a draft" : "it is not idle");
  }
  s->msg_id[0] = '\0';
  fl_slot_kick(s, fl_slot_gap(s));
}

/* Not typed because of st: wait, or fail (a draft with onDraft fail, a
 * pane that is gone). */
static void fl_slot_not_ready(fl_fwd_slot *s, enum fl_inject_state st) {
  fl_gw *gw = s->fw->gw;
  char id[FL_ID_LEN];
  fl_copy(id, sizeof id, s->msg_id);
  if (st == FL_INJECT_GONE) {
    s->msg_id[0] = '\0';
    fl_slot_finish(s, id, FL_FWD_FAILED, "the agent's pane is gone; nothing was typed");
    fl_slot_kick(s, 0);
  } else if (st == FL_INJECT_DRAFT && gw->cfg.inject.on_draft_fail) {
    s->msg_id[0] = '\0';
    fl_gw_count(gw, FL_C_INJECT_DRAFTS_DEFERRED);
    fl_slot_finish(s, id, FL_FWD_FAILED,
                   "the agent's input line holds a draft, so nothing was typed (inject.onDraft "
                   "is fail); retry once it is cleared");
    fl_slot_kick(s, 0);
  } else {
    fl_slot_defer(s, st);
  }
}

static void fl_slot_delivered(void *ctx, int status, enum fl_inject_state seen, const char *why) {
  fl_fwd_slot *s = ctx;
  fl_gw *gw = s->fw->gw;
  s->busy = 0;
  s->typing = 0;
  char id[FL_ID_LEN];
  fl_copy(id, sizeof id, s->msg_id);
  if (status == FL_INJECT_NOT_TYPED) {
    /* It changed between the look and the typing: nothing went in. */
    if (fl_store_fwd_set(gw->store, id, s->e->gid, FL_FWD_QUEUED, NULL) != 0)
      fl_gw_count(gw, FL_C_STORE_ERRORS);
    fl_slot_not_ready(s, seen);
    return;
  }
  s->msg_id[0] = '\0';
  /* Typed: why is the backend's note of how it made the text safe ("" when
   * it changed nothing), kept as the brief's reason and told the sender. */
  fl_slot_finish(s, id, status == 0 ? FL_FWD_INJECTED : FL_FWD_FAILED,
                 status == 0 ? why : (why && *why ? why : fl_strerror(status)));
  fl_slot_kick(s, 0);
}

/* A local sender learns now how brief f will be typed (the note is fixed
 * by the text and the target), so a reply that overtakes the typing check
 * still carries it. A sender on another host hears it with the receipt. */
static void fl_fwd_note_early(fl_gw *gw, const fl_fwd *f, const fl_inject_target *t,
                              const fl_inject_type *b) {
  if (f->sender_host[0] || strcmp(b->name, "tmux") != 0)
    return;
  fl_wait *w = fl_fwd_waiter(fl_entity_by_gid(gw, f->from_gid), f->msg_id);
  if (!w)
    return;
  fl_inject_text safe; /* cleared by make, also when it fails */
  if (fl_inject_text_make(f->content, f->content_len, t->command_chars, &safe) == 0)
    fl_inject_text_note(&safe, w->typed_note, sizeof w->typed_note);
  fl_inject_text_free(&safe);
}

/* The agent is ready: mark the brief typing (durably), then type it. */
static void fl_slot_type(fl_fwd_slot *s) {
  fl_gw *gw = s->fw->gw;
  fl_fwd f;
  if (fl_store_fwd_get(gw->store, s->msg_id, s->e->gid, &f) != 0 || f.state != FL_FWD_QUEUED) {
    fl_fwd_clear(&f);
    s->msg_id[0] = '\0';
    fl_slot_kick(s, 0);
    return;
  }
  char id[FL_ID_LEN];
  fl_copy(id, sizeof id, s->msg_id);
  if (fl_now_ms() >= f.deadline_ms) {
    s->msg_id[0] = '\0';
    fl_slot_finish(s, id, FL_FWD_FAILED, fl_fwd_too_late);
    fl_fwd_clear(&f);
    fl_slot_kick(s, 0);
    return;
  }
  const fl_inject_type *b = fl_slot_backend(s, &f);
  fl_inject_target t;
  fl_slot_target(s, &f, &t);
  if (fl_store_fwd_set(gw->store, id, s->e->gid, FL_FWD_TYPING, NULL) != 0) {
    fl_gw_count(gw, FL_C_STORE_ERRORS);
    fl_fwd_clear(&f);
    s->msg_id[0] = '\0';
    fl_slot_kick(s, fl_slot_gap(s));
    return;
  }
  fl_fwd_note_early(gw, &f, &t, b);
  char head[FL_PROVENANCE_MAX];
  fl_provenance_line(gw, &f, head, sizeof head);
  t.head = head;
  fl_launch launch;
  int rc = fl_launch_of(s, &t, &launch);
  if (rc == 0) /* the backend copies what it keeps: launch goes right after */
    rc = b->deliver(gw->loop, &t, f.content, f.content_len, fl_slot_delivered, s);
  fl_launch_free(&launch);
  fl_fwd_clear(&f);
  if (rc) {
    s->msg_id[0] = '\0';
    fl_slot_finish(s, id, FL_FWD_FAILED, "the terminal backend could not start typing");
    fl_slot_kick(s, 0);
    return;
  }
  s->busy = 1;
  s->typing = 1;
}

/* Offers the brief in hand to another door (module.h). Unless that door
 * took it, it is still in hand afterwards. */
static int fl_slot_offer(fl_fwd_slot *s) {
  char id[FL_ID_LEN];
  fl_copy(id, sizeof id, s->msg_id);
  s->msg_id[0] = '\0'; /* the door takes it through fl_forward_hand */
  int door = fl_modules_offer(s->fw->gw, s->e, NULL, 0);
  if (door != FL_DOOR_TAKEN)
    fl_copy(s->msg_id, sizeof s->msg_id, id);
  return door;
}

static void fl_slot_seen(void *ctx, enum fl_inject_state st) {
  fl_fwd_slot *s = ctx;
  s->busy = 0;
  if (s->fw->stopped)
    return;
  /* What the screen says, for a module that knows better (the hooks). */
  if (st == FL_INJECT_READY || st == FL_INJECT_BUSY)
    fl_modules_screen_seen(s->fw->gw, s->e, st == FL_INJECT_READY);
  if (st == FL_INJECT_READY && s->e->nudge.typing) {
    /* The nudge line is going in right now: look again in a moment. */
    s->msg_id[0] = '\0';
    fl_slot_kick(s, FL_FORWARD_RECHECK_MS);
    return;
  }
  if (st != FL_INJECT_READY) {
    fl_slot_not_ready(s, st);
    return;
  }
  /* An idle screen: the agent's own door first, if it has one. */
  int door = fl_slot_offer(s);
  if (door == FL_DOOR_NONE) {
    fl_slot_type(s);
    return;
  }
  if (door == FL_DOOR_HOLD && strcmp(s->held_for, s->msg_id) != 0) {
    fl_copy(s->held_for, sizeof s->held_for, s->msg_id);
    fl_info(NULL, "brief %s for '%s' waits for its hooks: busy, blocked, or its waiter not back",
            s->msg_id, s->e->name);
  }
  s->msg_id[0] = '\0';
  fl_slot_kick(s, fl_slot_gap(s));
}

/* Takes the entity's oldest queued brief in hand and moves it on. */
static void fl_slot_step(fl_fwd_slot *s) {
  struct fl_forward *fw = s->fw;
  fl_gw *gw = fw->gw;
  if (fw->stopped || s->busy || gw->shutting_down)
    return;
  fl_fwd f;
  int rc = fl_store_fwd_next(gw->store, s->e->gid, &f);
  if (rc == FL_ENOTFOUND)
    return; /* nothing queued */
  if (rc) {
    fl_gw_count(gw, FL_C_STORE_ERRORS);
    fl_slot_kick(s, fl_slot_gap(s));
    return;
  }
  fl_copy(s->msg_id, sizeof s->msg_id, f.msg_id);
  long long now = fl_now_ms();
  if (now >= f.deadline_ms) {
    s->msg_id[0] = '\0';
    fl_slot_finish(s, f.msg_id, FL_FWD_FAILED, fl_fwd_too_late);
    fl_fwd_clear(&f);
    fl_slot_kick(s, 0);
    return;
  }
  if (fw->pretype_ms && strcmp(s->paused_for, f.msg_id) != 0) {
    fl_copy(s->paused_for, sizeof s->paused_for, f.msg_id);
    s->msg_id[0] = '\0';
    fl_fwd_clear(&f);
    fl_slot_kick(s, fw->pretype_ms);
    return;
  }
  const fl_inject_type *b = fl_slot_backend(s, &f);
  fl_inject_target t;
  fl_slot_target(s, &f, &t);
  if (!b || !b->deliver) {
    s->msg_id[0] = '\0';
    fl_slot_finish(s, f.msg_id, FL_FWD_FAILED,
                   "the recipient has no terminal to type into (its session ended)");
    fl_fwd_clear(&f);
    fl_slot_kick(s, 0);
    return;
  }
  fl_fwd_clear(&f);
  /* An agent whose own door is open now takes it there, whatever its
   * screen shows. */
  if (fl_slot_offer(s) == FL_DOOR_TAKEN) {
    fl_slot_kick(s, fl_slot_gap(s));
    return;
  }
  if (!b->status) {
    fl_slot_type(s);
    return;
  }
  rc = b->status(gw->loop, &t, fl_slot_seen, s);
  if (rc) {
    fl_slot_not_ready(s, FL_INJECT_UNKNOWN);
    return;
  }
  s->busy = 1;
}

static fl_fwd_slot *fl_slot_of(struct fl_forward *fw, fl_entity *e) {
  for (fl_fwd_slot *s = fw->slots; s; s = s->next)
    if (s->e == e)
      return s;
  if (fw->stopped)
    return NULL;
  fl_fwd_slot *s = fl_calloc(1, sizeof *s);
  if (!s)
    return NULL;
  s->fw = fw;
  s->e = e;
  uv_timer_init(fw->gw->loop, &s->timer);
  s->timer.data = s;
  s->next = fw->slots;
  fw->slots = s;
  return s;
}

int fl_forward_busy(const fl_entity *e) {
  struct fl_forward *fw = e && e->gw ? e->gw->forward : NULL;
  for (fl_fwd_slot *s = fw ? fw->slots : NULL; s; s = s->next)
    if (s->e == e)
      return s->busy || s->msg_id[0];
  return 0;
}

int fl_forward_take(fl_gw *gw, fl_entity *to, const fl_msg *m, const char *sender_host, char *err,
                    size_t errlen) {
  struct fl_forward *fw = gw->forward;
  fl_fwd f;
  memset(&f, 0, sizeof f);
  fl_copy(f.msg_id, sizeof f.msg_id, m->msg_id);
  fl_copy(f.to_gid, sizeof f.to_gid, to->gid);
  fl_copy(f.from_gid, sizeof f.from_gid, m->from_gid);
  fl_copy(f.from_name, sizeof f.from_name, m->from_name);
  fl_copy(f.trace_id, sizeof f.trace_id, m->trace_id);
  fl_copy(f.sender_host, sizeof f.sender_host, sender_host);
  f.auth = sender_host && sender_host[0] ? m->auth : FL_AUTH_NONE;
  fl_copy(f.pane, sizeof f.pane, to->pane[0] ? to->pane : to->spawn.pane);
  fl_copy(f.socket, sizeof f.socket, to->pane[0] ? to->tmux_socket : to->spawn.socket);
  f.at_ms = fl_now_ms();
  f.deadline_ms =
      m->expires_ms ? m->expires_ms : f.at_ms + (long long)gw->cfg.inject.timeout_s * 1000;
  f.content = m->content;
  f.content_len = m->content_len;
  int rc = fl_store_fwd_put(gw->store, &f);
  if (rc == FL_EDUP) {
    fl_gw_count(gw, FL_C_BRIEFS_DUPLICATE);
    fl_errf(err, errlen, "brief %s was already taken for '%s'; it is not typed again", m->msg_id,
            to->name);
    return rc;
  }
  if (rc) {
    fl_gw_count(gw, FL_C_STORE_ERRORS);
    fl_errf(err, errlen, "could not record the brief (%s); see fleetd's log", fl_strerror(rc));
    return rc;
  }
  fl_gw_count(gw, FL_C_MSGS_ACCEPTED);
  fl_info(m->trace_id, "brief %s from '%s' queued for typing into '%s'", m->msg_id, m->from_name,
          to->name);
  fl_fwd_slot *s = fw ? fl_slot_of(fw, to) : NULL;
  if (s)
    fl_slot_kick(s, 0); /* after the caller's commit and acknowledgement */
  return 0;
}

/* ---- another door ---------------------------------------------------------------- */

int fl_forward_text(fl_gw *gw, const fl_entity *e, const char *head, const char *text, size_t len,
                    fl_inject_text *out) {
  fl_inject_target t;
  fl_forward_target(gw, e, &t);
  return fl_inject_text_compose(head, text, len, t.command_chars, out);
}

void fl_handoff_clear(fl_handoff *h) {
  if (!h)
    return;
  fl_free(h->text);
  h->text = NULL;
}

int fl_forward_hand(fl_gw *gw, fl_entity *e, fl_handoff *out) {
  struct fl_forward *fw = gw->forward;
  memset(out, 0, sizeof *out);
  if (!fw || fw->stopped || gw->shutting_down)
    return FL_ENOTFOUND;
  fl_fwd_slot *s = fl_slot_of(fw, e);
  if (s && s->typing)
    return 1;
  fl_fwd f;
  int rc = fl_store_fwd_next(gw->store, e->gid, &f);
  if (rc) {
    if (rc != FL_ENOTFOUND)
      fl_gw_count(gw, FL_C_STORE_ERRORS);
    return rc;
  }
  if (fl_now_ms() >= f.deadline_ms) {
    fl_fwd_finish(fw, e->gid, e->name, f.msg_id, FL_FWD_FAILED, fl_fwd_too_late, NULL);
    fl_fwd_clear(&f);
    if (s)
      fl_slot_kick(s, 0);
    return FL_ENOTFOUND;
  }
  char head[FL_PROVENANCE_MAX]; /* as typing puts it first */
  fl_provenance_line(gw, &f, head, sizeof head);
  fl_inject_text safe; /* cleared by make, also when it fails */
  rc = fl_forward_text(gw, e, head, f.content, f.content_len, &safe);
  if (rc == 0 && (rc = fl_store_fwd_set(gw->store, f.msg_id, e->gid, FL_FWD_TYPING, NULL)) != 0)
    fl_gw_count(gw, FL_C_STORE_ERRORS);
  if (rc) {
    fl_inject_text_free(&safe);
    fl_fwd_clear(&f);
    return rc;
  }
  fl_copy(out->msg_id, sizeof out->msg_id, f.msg_id);
  fl_copy(out->trace_id, sizeof out->trace_id, f.trace_id);
  fl_inject_text_note(&safe, out->note, sizeof out->note);
  out->text = safe.buf; /* out owns it now */
  out->len = safe.len;
  fl_wait *w = f.sender_host[0] ? NULL : fl_fwd_waiter(fl_entity_by_gid(gw, f.from_gid), f.msg_id);
  if (w) /* as fl_fwd_note_early: the note before a reply can overtake it */
    fl_copy(w->typed_note, sizeof w->typed_note, out->note);
  fl_debug(f.trace_id, "brief %s for '%s' marked typing: handed over through another door",
           f.msg_id, e->name);
  fl_fwd_clear(&f);
  return 0;
}

void fl_forward_kick(fl_gw *gw, fl_entity *e) {
  fl_fwd_slot *s = gw->forward && !e->remote ? fl_slot_of(gw->forward, e) : NULL;
  if (s)
    fl_slot_kick(s, 0);
}

void fl_forward_handed(fl_gw *gw, const char *gid, const char *msg_id, int ok, const char *why,
                       const char *via) {
  struct fl_forward *fw = gw->forward;
  if (!fw)
    return;
  fl_fwd f;
  if (fl_store_fwd_get(gw->store, msg_id, gid, &f) != 0 || f.state != FL_FWD_TYPING) {
    fl_fwd_clear(&f);
    return; /* ended meanwhile (a restart fails it; a sender's deadline withdraws only queued) */
  }
  fl_fwd_clear(&f);
  fl_entity *e = fl_entity_by_gid(gw, gid);
  fl_fwd_finish(fw, gid, e ? e->name : gid, msg_id, ok ? FL_FWD_INJECTED : FL_FWD_FAILED,
                why ? why : "", via);
  fl_fwd_slot *s = e && !e->remote ? fl_slot_of(fw, e) : NULL;
  if (s)
    fl_slot_kick(s, 0); /* the next brief */
}

/* ---- life cycle ------------------------------------------------------------------ */

static void fl_fwd_retry_one(void *ctx, const fl_fwd *f) { fl_fwd_report(ctx, f); }

static void fl_fwd_retry(uv_timer_t *t) {
  struct fl_forward *fw = t->data;
  if (fw->stopped)
    return;
  if (fl_store_fwd_each_unreported(fw->gw->store, FL_FORWARD_RETRY_BATCH, fl_fwd_retry_one, fw) !=
      0)
    fl_gw_count(fw->gw, FL_C_STORE_ERRORS);
}

static void fl_fwd_queued(void *ctx, const char *gid) {
  struct fl_forward *fw = ctx;
  fl_entity *e = fl_entity_by_gid(fw->gw, gid);
  fl_fwd_slot *s = e && !e->remote ? fl_slot_of(fw, e) : NULL;
  if (s)
    fl_slot_kick(s, 0);
}

int fl_forward_start(fl_gw *gw) {
  struct fl_forward *fw = fl_calloc(1, sizeof *fw);
  if (!fw)
    return FL_ENOMEM;
  fw->gw = gw;
  fw->pretype_ms = fl_env_ms("FLEET_TEST_PRETYPE_DELAY_MS");
  fw->typing_ms = fl_env_ms("FLEET_TEST_TYPING_DELAY_MS");
  if (fw->pretype_ms || fw->typing_ms)
    fl_warn(NULL, "test-only delays are on: %u ms before typing a brief, %u ms before its Enter",
            fw->pretype_ms, fw->typing_ms);
  uv_timer_init(gw->loop, &fw->retry);
  uv_unref((uv_handle_t *)&fw->retry); /* a retry alone keeps no loop running */
  fw->retry.data = fw;
  gw->forward = fw;
  size_t n = 0;
  if (fl_store_fwd_fail_typing(gw->store, "gateway restarted while typing", &n) != 0)
    fl_gw_count(gw, FL_C_STORE_ERRORS);
  if (n) {
    gw->counters[FL_C_INJECT_FAILURES] += n;
    fl_warn(NULL,
            "%zu brief(s) were being typed when fleetd stopped: reported failed, not typed again",
            n);
  }
  size_t pruned = 0;
  fl_store_fwd_prune(gw->store, fl_now_ms() - FL_FORWARD_KEEP_MS, &pruned);
  if (fl_store_fwd_each_queued_gid(gw->store, fl_fwd_queued, fw) != 0)
    fl_gw_count(gw, FL_C_STORE_ERRORS);
  /* The first round right away: local senders are not back yet, but the
   * broker link may be soon. */
  uv_timer_start(&fw->retry, fl_fwd_retry, 0, FL_FORWARD_RETRY_MS);
  return 0;
}

void fl_forward_stop(fl_gw *gw) {
  struct fl_forward *fw = gw->forward;
  if (!fw || fw->stopped)
    return;
  fw->stopped = 1;
  uv_close((uv_handle_t *)&fw->retry, NULL);
  for (fl_fwd_slot *s = fw->slots; s; s = s->next)
    uv_close((uv_handle_t *)&s->timer, NULL); /* freed by fl_forward_free, after the loop ran */
}

void fl_forward_free(fl_gw *gw) {
  struct fl_forward *fw = gw ? gw->forward : NULL;
  if (!fw)
    return;
  while (fw->slots) {
    fl_fwd_slot *n = fw->slots->next;
    fl_free(fw->slots);
    fw->slots = n;
  }
  fl_free(fw);
  gw->forward = NULL;
}
