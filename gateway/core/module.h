/* module.h — the table of feature modules the core runs without naming.
 *
 * The core (gw.c, router.c, session.c, list.c) knows no feature by name.
 * A feature that needs the gateway's life cycle, a status section or one of
 * the core's few events gives a row of this table; the composition root
 * (gateway/gateway.c) lists the rows and hands them to fl_gw_open. The core
 * walks the rows, in the manner of mosquitto's plug-in callbacks: every
 * member is optional (NULL = nothing to do).
 *
 * Order: rows start, stop and are freed in table order. fl_gw_open starts
 * them after the core's own parts (identity, pins, store, roster, sweeper,
 * forward path); a failed start stops and frees every row (each stop and
 * free is a no-op for a module never started). fl_gw_shutdown ends every
 * waiting call, stops the rows, then the core's own parts; fl_gw_free frees
 * the rows, then the core's parts.
 *
 * Threading: everything here runs on the loop thread; no member blocks. */
#ifndef FL_MODULE_H
#define FL_MODULE_H

#include <jansson.h>
#include <stddef.h>
#include <uv.h>

#include "common/json_writer.h"
#include "common/limits.h"
#include "gateway/config/gw_config.h"
#include "gateway/gw.h"

typedef struct fl_entity fl_entity;
struct fl_msg;
struct fl_http_stats;

/* What a module's offer answers (below). */
enum fl_door {
  FL_DOOR_NONE = 0, /* no other door into this agent: the terminal, as before */
  FL_DOOR_HOLD,     /* there is one, not open now: type nothing, look again later */
  FL_DOOR_TAKEN     /* handed over through it */
};

typedef struct fl_module {
  const char *name; /* its status section's key (describe), and for the log */
  /* Life cycle. start: 0, or a negative code with err saying what to fix.
   * stop: close handles (no callback after the loop ran once more); free:
   * after stop and a loop run. */
  int (*start)(fl_gw *gw, char *err, size_t errlen);
  void (*stop)(fl_gw *gw);
  void (*free)(fl_gw *gw);
  /* fleetctl status's section `name`: a new object, or NULL (left out). */
  json_t *(*describe)(fl_gw *gw);
  /* What the HTTP servers refused, added into *add (fleetctl status). */
  void (*http_stats)(fl_gw *gw, struct fl_http_stats *add);
  /* fleetctl peer list's "sync" of a pinned host: a new object, or NULL. */
  json_t *(*peer_json)(fl_gw *gw, const char *host);
  /* A message this gateway committed or handed on (router.c). */
  void (*msg_routed)(fl_gw *gw, const struct fl_msg *m);
  /* A session just attached for e (session.c). */
  void (*entity_attached)(fl_gw *gw, fl_entity *e);
  /* fleet_list (list.c): list_id gives 1 with e's coordId in id when the
   * module knows one, else 0; list_write adds the result's own members
   * (key and value) to w. */
  int (*list_id)(fl_gw *gw, const fl_entity *e, char id[FL_MAX_COORD_ID + 1]);
  void (*list_write)(fl_gw *gw, fl_jw *w);
  /* fleet_list's entry of entity e: adds e's own members (key and value). */
  void (*entity_write)(fl_gw *gw, const fl_entity *e, fl_jw *w);
  /* The forward path read e's screen (forward.c): idle (at an empty
   * prompt) or not. */
  void (*screen_seen)(fl_gw *gw, const fl_entity *e, int idle);
  /* Another door into local e's agent than typing into its terminal (its
   * hooks). The forward path offers e's oldest queued brief (line NULL):
   * the module takes it with fl_forward_hand and ends it with
   * fl_forward_handed (forward.h). The nudge offers its line (line, len:
   * the text as it would be typed). Answers an enum fl_door. */
  int (*offer)(fl_gw *gw, fl_entity *e, const char *line, size_t len);
} fl_module;

/* Creates the gateway on loop, as fl_gw_new (gateway/gateway.h) says,
 * with the n feature rows (the array and rows borrowed for gw's life). The
 * composition root calls it; nothing else does. */
int fl_gw_open(uv_loop_t *loop, const fl_gw_config *cfg, const fl_module *const *rows, size_t n,
               fl_gw **out, char *err, size_t errlen);

/* The core's walks over gw's rows, in table order. fl_modules_start stops
 * at the first failure, with its code and err. */
int fl_modules_start(fl_gw *gw, char *err, size_t errlen);
void fl_modules_stop(fl_gw *gw);
void fl_modules_free(fl_gw *gw);
/* Adds each row's describe to status under the row's name. */
void fl_modules_describe(fl_gw *gw, json_t *status);
void fl_modules_http_stats(fl_gw *gw, struct fl_http_stats *add);
/* The first row's answer for host, or NULL. */
json_t *fl_modules_peer_json(fl_gw *gw, const char *host);
void fl_modules_msg_routed(fl_gw *gw, const struct fl_msg *m);
void fl_modules_entity_attached(fl_gw *gw, fl_entity *e);
int fl_modules_list_id(fl_gw *gw, const fl_entity *e, char id[FL_MAX_COORD_ID + 1]);
void fl_modules_list_write(fl_gw *gw, fl_jw *w);
void fl_modules_entity_write(fl_gw *gw, const fl_entity *e, fl_jw *w);
void fl_modules_screen_seen(fl_gw *gw, const fl_entity *e, int idle);
/* The first row's offer that is not FL_DOOR_NONE, else FL_DOOR_NONE. */
int fl_modules_offer(fl_gw *gw, fl_entity *e, const char *line, size_t len);

#endif
