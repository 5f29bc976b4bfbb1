/* session.c — sessions attaching to the gateway and leaving it.
 *
 * A frontend attaches one client per session. A named session speaks for
 * an entity of this host: attaching checks the identity it gives, finds the
 * entity by name (a name that comes back resumes its gid and its held
 * messages) or creates it, records it in the store and marks it online; a
 * name a live session holds cannot be taken. Detaching cancels the
 * session's waiting calls and marks the entity offline; the entity itself
 * stays in the roster. An anonymous session (no name) can list and ask for
 * status, but not send or receive. */
#include <string.h>
#include <strings.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/log.h"
#include "gateway/core/gw_internal.h"
#include "gateway/core/module.h"
#include "gateway/core/nudge.h"
#include "gateway/core/remote.h"
#include "gateway/inject/inject.h"
#include "gateway/store/store_gids.h"

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
  c->operator_session = id && id->operator_session;
  if (!id || !id->name) {
    gw->nclients++;
    *out = c;
    return 0;
  }

  int rc = FL_EINVAL;
  const char *role = (id->role && *id->role) ? id->role : NULL;
  if (!fl_name_valid(id->name, FL_MAX_NAME) || fl_is_uuid(id->name)) {
    fl_errf(err, errlen, "the name '%.80s' is not valid: use %s, and not a UUID", id->name,
            fl_name_rule);
    goto fail;
  }
  if (role && !fl_name_valid(role, FL_MAX_ROLE)) {
    fl_errf(err, errlen,
            "the role '%.40s' is not valid: use 1-%d letters, digits, '-' or '_', e.g. lead "
            "or worker",
            role, FL_MAX_ROLE);
    goto fail;
  }
  if (id->coord_id && *id->coord_id && !fl_coord_id_valid(id->coord_id)) {
    fl_errf(err, errlen,
            "the coordId '%.80s' is not valid: use name@fleet, each part %s, at most %d "
            "characters in all",
            id->coord_id, fl_name_rule, FL_MAX_COORD_ID);
    goto fail;
  }
  for (size_t i = 0; i < id->ngroups; i++) {
    if (!fl_name_valid(id->groups[i], FL_MAX_GROUP_NAME)) {
      fl_errf(err, errlen, "the group '%.80s' is not a valid name: use %s", id->groups[i],
              fl_name_rule);
      goto fail;
    }
  }
  if (id->gid && *id->gid && !fl_is_uuid(id->gid)) {
    fl_errf(err, errlen, "the gid '%.40s' is not a UUID", id->gid);
    goto fail;
  }
  if (id->pane && strlen(id->pane) > FL_MAX_PANE) {
    fl_errf(err, errlen, "the pane id is too long (at most %d characters)", FL_MAX_PANE);
    goto fail;
  }

  fl_entity *e = fl_entity_local_by_name(gw, id->name);
  if (e && e->client) {
    rc = FL_ENAMETAKEN;
    fl_errf(err, errlen,
            "the name '%s' is in use by a live session on this host; pick another name or end "
            "that session first",
            id->name);
    goto fail;
  }
  if (e && id->gid && *id->gid && strcasecmp(e->gid, id->gid) != 0) {
    fl_errf(err, errlen, "the name '%s' belongs to gid %s, not %s", id->name, e->gid, id->gid);
    goto fail;
  }
  if (!e && id->gid && *id->gid && fl_entity_by_gid(gw, id->gid)) {
    fl_errf(err, errlen, "the gid %s already belongs to another name", id->gid);
    goto fail;
  }
  char owner[FL_MAX_NAME + 1];
  if (!e && id->gid && *id->gid &&
      fl_store_gid_owner(gw->store, id->gid, owner, sizeof owner) == 0 && owner[0]) {
    /* A gid stays with the host that first announced it (store_gids.h). */
    fl_errf(err, errlen,
            "the gid %s belongs to host '%s'; `fleetctl gid release %s` on this host lets it "
            "move here",
            id->gid, owner, id->gid);
    goto fail;
  }
  if (!e && gw->nentities >= FL_MAX_ENTITIES &&
      fl_roster_reclaim(gw, FL_ROSTER_RECLAIM_BATCH) == 0) {
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
  fl_copy(e->coord_id, sizeof e->coord_id, id->coord_id);
  if (id->groups_given) {
    e->ngroups = 0;
    for (size_t i = 0; i < id->ngroups && i < FL_MAX_GROUPS; i++)
      fl_copy(e->groups[e->ngroups++], FL_MAX_GROUP_NAME + 1, id->groups[i]);
  }
  fl_copy(e->pane, sizeof e->pane, id->pane);
  fl_copy(e->tmux_socket, sizeof e->tmux_socket, id->tmux_socket);
  /* A pane means tmux: the one terminal backend a session can name today. */
  e->inject = e->pane[0] ? fl_inject_lookup("tmux") : NULL;
  /* Written only when the store does not hold it so already: an agent that
   * comes back unchanged reconnects even on a full disk. */
  fl_entity_rec now, stored;
  fl_entity_rec_of(e, &now);
  int same = fl_store_entity_by_name(gw->store, e->name, &stored) == 0 &&
             strcmp(stored.gid, now.gid) == 0 && strcmp(stored.role, now.role) == 0 &&
             strcmp(stored.groups, now.groups) == 0;
  if (!same && (rc = fl_entity_persist(gw, e))) {
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
  fl_modules_entity_attached(gw, e); /* e.g. the readiness gate of a spawn waiting for it */
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
    fl_wait_release(c->waits); /* their callbacks never run */
  if (c->entity) {
    fl_entity *e = c->entity;
    e->client = NULL;
    e->last_seen_ms = fl_now_ms();
    e->pane[0] = '\0';
    e->tmux_socket[0] = '\0';
    e->inject = NULL;
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
