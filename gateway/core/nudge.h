/* nudge.h — reminding an idle session that messages wait for it.
 *
 * A message held for an entity with a live session arms that entity's
 * nudge: after cfg.nudge.first_ms, if messages are still held and the
 * session is not inside a waiting call, the session gets a notification and
 * the nudge line is typed into its terminal (inject.h); reminders follow
 * with a doubling gap up to cfg.nudge.max_ms until the entity drains.
 *
 * Internal to gateway/. Loop thread only; nothing blocks (typing runs as a
 * child process). */
#ifndef FL_NUDGE_H
#define FL_NUDGE_H

#include <uv.h>

typedef struct fl_entity fl_entity;

/* Opens e's nudge timer (once, from fl_entity_new). */
void fl_nudge_init(fl_entity *e);
/* Arms e's nudge unless nudges are off, e has no session, it is armed
 * already, or the gateway is shutting down. */
void fl_nudge_arm(fl_entity *e);
/* Disarms e's nudge and resets its backoff (e drained, or went offline). */
void fl_nudge_stop(fl_entity *e);
/* Closes e's two nudge handles (shutdown, or an entity the roster forgets);
 * done (NULL for none) runs once for each when it has closed. */
void fl_nudge_close(fl_entity *e, uv_close_cb done);

#endif
