/* hook.c — a worker's activity from its agent's hooks (hook.h).
 *
 * One row per local entity whose hooks have reported, found by gid: its
 * state, the reason when blocked, and since when. The rules, for Claude
 * Code's events (clients/fleet-hook.c sends them as the agent names them):
 *
 *   SessionStart, Stop                       idle
 *   UserPromptSubmit                         busy
 *   PermissionRequest                        blocked, "permission: TOOL"
 *   Notification permission_prompt           blocked, "permission: MESSAGE"
 *                                            (a PermissionRequest's reason is kept)
 *   Notification elicitation_dialog          blocked, "elicitation: MESSAGE"
 *   Notification idle_prompt                 idle
 *   anything else                            no change
 *
 * A waiter's reconnect (it asks again after a fleetd restart) changes
 * nothing: the Stop or SessionStart it was started for may be long past,
 * with a turn running since, so a new fleetd that took it for news would
 * see a busy worker as idle and hand it a brief mid-turn. It is parked,
 * and counted; the worker's state stays unknown (the screen decides) until
 * its hooks report something new.
 *
 * `since` moves only when the state does. The table is bounded
 * (FL_MAX_CLIENTS rows: one per session fleetd can have); past it the row
 * reported least recently makes room. What is handed over through the
 * hooks is hook_deliver.c's: a waiter (wake) is parked there, and
 * UserPromptSubmit may be answered with a queued brief (context); every
 * other report is answered "none". */
#include "gateway/verbs/hook.h"

#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/limits.h"
#include "common/log.h"
#include "common/time.h"
#include "gateway/core/gw_internal.h"
#include "gateway/core/roster.h"
#include "gateway/verbs/approve.h"
#include "gateway/verbs/hook_deliver.h"
#include "gateway/verbs/hook_park.h"
#include "gateway/verbs/spawn.h"

/* A reason is one line for a roster: the tool, or the dialog's message,
 * cut to this many bytes. */
#define FL_HOOK_REASON_MAX 160
/* The screen and the hooks disagree only about a state the hooks have held
 * this long: the screen redraws a moment after each event (the spinner
 * starts after UserPromptSubmit, the prompt comes back around Stop). */
#define FL_HOOK_SETTLE_MS 2000

typedef struct fl_hook_row {
  char gid[FL_ID_LEN];
  const char *state; /* "busy", "idle" or "blocked" (static) */
  char reason[FL_HOOK_REASON_MAX + 1];
  long long since_ms; /* wall clock: when the state last changed */
  long long last_ms;  /* wall clock: the newest report */
  int disagreed;      /* this state's disagreement with the screen is counted */
  /* When the screen was first seen idle while the hooks said otherwise;
   * 0 when it was not. A Stop soon after clears it (the prompt is drawn a
   * moment before Stop runs); any other report, or its age, makes it a
   * disagreement. */
  long long screen_idle_ms;
} fl_hook_row;

struct fl_hooks {
  fl_hook_row *rows;
  size_t n, cap;
  unsigned long long reports, refused, disagreements, reconnects;
};

static struct fl_hooks *fl_hooks_of(fl_gw *gw) {
  if (!gw->hooks)
    gw->hooks = fl_calloc(1, sizeof *gw->hooks);
  return gw->hooks;
}

static fl_hook_row *fl_hook_find(struct fl_hooks *h, const char *gid) {
  for (size_t i = 0; i < h->n; i++)
    if (strcmp(h->rows[i].gid, gid) == 0)
      return &h->rows[i];
  return NULL;
}

/* The row for gid, made when there is none (the least recently reported
 * row makes room at the cap); NULL when out of memory. */
static fl_hook_row *fl_hook_row_for(struct fl_hooks *h, const char *gid) {
  fl_hook_row *r = fl_hook_find(h, gid);
  if (r)
    return r;
  if (h->n == FL_MAX_CLIENTS) {
    size_t old = 0;
    for (size_t i = 1; i < h->n; i++)
      if (h->rows[i].last_ms < h->rows[old].last_ms)
        old = i;
    h->rows[old] = h->rows[--h->n];
  }
  if (h->n == h->cap) {
    size_t cap = h->cap ? h->cap * 2 : 16;
    fl_hook_row *v = fl_realloc(h->rows, cap * sizeof *v);
    if (!v)
      return NULL;
    h->rows = v;
    h->cap = cap;
  }
  r = &h->rows[h->n++];
  memset(r, 0, sizeof *r);
  snprintf(r->gid, sizeof r->gid, "%s", gid);
  return r;
}

/* Copies "what: text" into the row's reason, cut on a character boundary. */
static void fl_hook_reason(fl_hook_row *r, const char *what, const char *text) {
  int w = snprintf(r->reason, sizeof r->reason, "%s: %s", what, text ? text : "");
  if (w >= (int)sizeof r->reason) {
    size_t n = sizeof r->reason - 1;
    while (n > 0 && ((unsigned char)r->reason[n] & 0xC0) == 0x80)
      n--;
    r->reason[n] = '\0';
  }
}

/* Counts and logs a disagreement of r's state with the screen, once per
 * hook state. */
static void fl_hook_disagree(fl_gw *gw, fl_hook_row *r) {
  r->screen_idle_ms = 0;
  if (r->disagreed)
    return;
  r->disagreed = 1;
  gw->hooks->disagreements++;
  fl_entity *e = fl_entity_by_gid(gw, r->gid);
  fl_info(NULL, "'%s': its hooks say %s, its screen says idle; going by the screen",
          e ? e->name : r->gid, r->state);
}

/* A screen seen idle long enough ago, with no Stop since, disagreed. */
static void fl_hook_settle(fl_gw *gw, fl_hook_row *r, long long now) {
  if (r->screen_idle_ms && now - r->screen_idle_ms >= FL_HOOK_SETTLE_MS)
    fl_hook_disagree(gw, r);
}

static void fl_hook_set(fl_hook_row *r, const char *state, long long now) {
  if (!r->state || strcmp(r->state, state) != 0) {
    r->since_ms = now;
    r->disagreed = 0;
  }
  r->state = state;
  if (strcmp(state, "blocked") != 0)
    r->reason[0] = '\0';
}

int fl_gw_hook(fl_gw *gw, fl_client *c, const char *gid, const char *event, int wake, int reconnect,
               json_t *hook, fl_gw_cb cb, void *ctx, json_t **result, fl_wait **wait, char *err,
               size_t errlen) {
  struct fl_hooks *h = fl_hooks_of(gw);
  *result = NULL;
  *wait = NULL;
  fl_entity *e = gid ? fl_entity_by_gid(gw, gid) : NULL;
  if (!h)
    return fl_errf(err, errlen, "out of memory"), FL_ENOMEM;
  /* An agent reports from its start, before it registers: its spawn knows
   * the gid it will register with. */
  int local = e ? !e->remote && fl_entity_in_roster(e) : gid && fl_spawn_pending(gw, gid);
  if (!local) {
    h->refused++;
    fl_errf(err, errlen, "fleet/hook: no agent of this host has gid %s", gid ? gid : "(none)");
    return FL_ENOTFOUND;
  }
  if (reconnect) {
    h->reconnects++;
    fl_debug(NULL, "%s: its waiter is back after losing fleetd; its state stays unknown",
             e ? e->name : gid);
    if (wake)
      return fl_hook_doors_park(gw, c, gid, cb, ctx, wait, err, errlen);
    *result = fl_hook_park_none();
    return *result ? 0 : FL_ENOMEM;
  }
  const char *type = json_string_value(json_object_get(hook, "notificationType"));
  const char *msg = json_string_value(json_object_get(hook, "message"));
  const char *tool = json_string_value(json_object_get(hook, "tool"));
  const char *state = NULL;
  if (strcmp(event, "SessionStart") == 0 || strcmp(event, "Stop") == 0)
    state = "idle";
  else if (strcmp(event, "UserPromptSubmit") == 0)
    state = "busy";
  else if (strcmp(event, "PermissionRequest") == 0)
    state = "blocked";
  else if (strcmp(event, "Notification") == 0 && type) {
    if (strcmp(type, "permission_prompt") == 0 || strcmp(type, "elicitation_dialog") == 0)
      state = "blocked";
    else if (strcmp(type, "idle_prompt") == 0)
      state = "idle";
  }
  h->reports++;
  if (state) {
    long long now = fl_now_ms();
    fl_hook_row *r = fl_hook_row_for(h, gid);
    if (!r)
      return fl_errf(err, errlen, "out of memory"), FL_ENOMEM;
    int was_blocked = r->state && strcmp(r->state, "blocked") == 0 && r->reason[0];
    if (r->screen_idle_ms && strcmp(state, "idle") != 0)
      fl_hook_disagree(gw, r); /* the screen was idle, and no Stop came */
    r->screen_idle_ms = 0;
    fl_hook_set(r, state, now);
    r->last_ms = now;
    if (strcmp(event, "PermissionRequest") == 0)
      fl_hook_reason(r, "permission", tool ? tool : "a tool");
    else if (type && strcmp(type, "elicitation_dialog") == 0)
      fl_hook_reason(r, "elicitation", msg);
    else if (type && strcmp(type, "permission_prompt") == 0 && !was_blocked)
      fl_hook_reason(r, "permission", msg);
    fl_debug(NULL, "%s is %s (%s)%s%s", e ? e->name : gid, state, event, r->reason[0] ? ": " : "",
             r->reason);
  }
  fl_hook_doors_report(gw, gid);
  /* A permission request waits for its spawner's decision (approve.h). */
  if (strcmp(event, "PermissionRequest") == 0 && e && fl_entity_in_roster(e))
    return fl_approve_request(gw, c, e, tool, json_string_value(json_object_get(hook, "input")), cb,
                              ctx, result, wait, err, errlen);
  if (wake)
    return fl_hook_doors_park(gw, c, gid, cb, ctx, wait, err, errlen);
  if (strcmp(event, "UserPromptSubmit") == 0)
    return fl_hook_doors_context(gw, e, result);
  *result = json_pack("{s:s}", "action", "none");
  return *result ? 0 : FL_ENOMEM;
}

const char *fl_hooks_state(fl_gw *gw, const char *gid) {
  fl_hook_row *r = gw->hooks ? fl_hook_find(gw->hooks, gid) : NULL;
  if (!r || !r->state)
    return NULL;
  fl_hook_settle(gw, r, fl_now_ms());
  return r->disagreed ? NULL : r->state;
}

void fl_hooks_entity_write(fl_gw *gw, const fl_entity *e, fl_jw *w) {
  fl_hook_row *r = gw->hooks && !e->remote ? fl_hook_find(gw->hooks, e->gid) : NULL;
  if (!r || !r->state)
    return;
  char ts[FL_TS_LEN];
  fl_rfc3339(r->since_ms, ts);
  fl_jw_key(w, "activity");
  fl_jw_obj_open(w);
  fl_jw_key(w, "state");
  fl_jw_str(w, r->state);
  if (r->reason[0]) {
    fl_jw_key(w, "reason");
    fl_jw_str(w, r->reason);
  }
  fl_jw_key(w, "since");
  fl_jw_str(w, ts);
  fl_jw_key(w, "source");
  fl_jw_str(w, "hooks");
  fl_jw_obj_close(w);
}

/* The screen is the fallback: the forward path goes by it. Where it shows
 * the idle prompt while the hooks say busy or blocked and no Stop follows
 * (hooks gone silent: a turn interrupted without Stop, hooks removed, an
 * agent update that changed them), the disagreement is logged and counted,
 * once per hook state. The other way round (hooks idle, screen not) is not
 * counted: the screen is not idle for many ordinary reasons (still
 * drawing, not yet still for quietMs, the agent starting up after its
 * SessionStart), and fleet waits then anyway. */
void fl_hooks_screen_seen(fl_gw *gw, const fl_entity *e, int idle) {
  fl_hook_row *r = gw->hooks && !e->remote ? fl_hook_find(gw->hooks, e->gid) : NULL;
  if (!r || !r->state || r->disagreed)
    return;
  long long now = fl_now_ms();
  int hook_idle = strcmp(r->state, "idle") == 0;
  if (idle && !hook_idle) {
    if (!r->screen_idle_ms)
      r->screen_idle_ms = now;
    fl_hook_settle(gw, r, now);
  }
}

void fl_hooks_unblocked(fl_gw *gw, const char *gid) {
  fl_hook_row *r = gw->hooks ? fl_hook_find(gw->hooks, gid) : NULL;
  if (r && r->state && strcmp(r->state, "blocked") == 0) {
    fl_hook_set(r, "busy", fl_now_ms());
    r->screen_idle_ms = 0;
  }
}

json_t *fl_hooks_describe(fl_gw *gw) {
  struct fl_hooks *h = gw->hooks;
  if (!h)
    return NULL;
  long long now = fl_now_ms();
  for (size_t i = 0; i < h->n; i++)
    fl_hook_settle(gw, &h->rows[i], now);
  return json_pack("{s:I, s:I, s:I, s:I, s:I}", "reports", (json_int_t)h->reports, "refused",
                   (json_int_t)h->refused, "disagreements", (json_int_t)h->disagreements,
                   "reconnects", (json_int_t)h->reconnects, "workers", (json_int_t)h->n);
}

void fl_hooks_free(fl_gw *gw) {
  if (!gw->hooks)
    return;
  fl_free(gw->hooks->rows);
  fl_free(gw->hooks);
  gw->hooks = NULL;
}
