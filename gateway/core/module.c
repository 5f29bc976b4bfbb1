/* module.c — the core's walks over the feature rows (see module.h). */
#include "gateway/core/module.h"

#include "gateway/core/gw_internal.h"

int fl_modules_start(fl_gw *gw, char *err, size_t errlen) {
  for (size_t i = 0; i < gw->nmodules; i++) {
    const fl_module *m = gw->modules[i];
    int rc = m->start ? m->start(gw, err, errlen) : 0;
    if (rc)
      return rc;
  }
  return 0;
}

void fl_modules_stop(fl_gw *gw) {
  for (size_t i = 0; i < gw->nmodules; i++) {
    const fl_module *m = gw->modules[i];
    if (m->stop)
      m->stop(gw);
  }
}

void fl_modules_free(fl_gw *gw) {
  for (size_t i = 0; i < gw->nmodules; i++) {
    const fl_module *m = gw->modules[i];
    if (m->free)
      m->free(gw);
  }
}

void fl_modules_describe(fl_gw *gw, json_t *status) {
  for (size_t i = 0; i < gw->nmodules; i++) {
    const fl_module *m = gw->modules[i];
    json_t *o = m->describe && status ? m->describe(gw) : NULL;
    if (o)
      json_object_set_new(status, m->name, o);
  }
}

void fl_modules_http_stats(fl_gw *gw, struct fl_http_stats *add) {
  for (size_t i = 0; i < gw->nmodules; i++) {
    const fl_module *m = gw->modules[i];
    if (m->http_stats)
      m->http_stats(gw, add);
  }
}

json_t *fl_modules_peer_json(fl_gw *gw, const char *host) {
  for (size_t i = 0; i < gw->nmodules; i++) {
    const fl_module *m = gw->modules[i];
    json_t *o = m->peer_json ? m->peer_json(gw, host) : NULL;
    if (o)
      return o;
  }
  return NULL;
}

void fl_modules_msg_routed(fl_gw *gw, const struct fl_msg *msg) {
  for (size_t i = 0; i < gw->nmodules; i++) {
    const fl_module *m = gw->modules[i];
    if (m->msg_routed)
      m->msg_routed(gw, msg);
  }
}

void fl_modules_entity_attached(fl_gw *gw, fl_entity *e) {
  for (size_t i = 0; i < gw->nmodules; i++) {
    const fl_module *m = gw->modules[i];
    if (m->entity_attached)
      m->entity_attached(gw, e);
  }
}

int fl_modules_list_id(fl_gw *gw, const fl_entity *e, char id[FL_MAX_COORD_ID + 1]) {
  for (size_t i = 0; i < gw->nmodules; i++) {
    const fl_module *m = gw->modules[i];
    if (m->list_id && m->list_id(gw, e, id))
      return 1;
  }
  return 0;
}

void fl_modules_list_write(fl_gw *gw, fl_jw *w) {
  for (size_t i = 0; i < gw->nmodules; i++) {
    const fl_module *m = gw->modules[i];
    if (m->list_write)
      m->list_write(gw, w);
  }
}

void fl_modules_entity_write(fl_gw *gw, const fl_entity *e, fl_jw *w) {
  for (size_t i = 0; i < gw->nmodules; i++) {
    const fl_module *m = gw->modules[i];
    if (m->entity_write)
      m->entity_write(gw, e, w);
  }
}

void fl_modules_screen_seen(fl_gw *gw, const fl_entity *e, int idle) {
  for (size_t i = 0; i < gw->nmodules; i++) {
    const fl_module *m = gw->modules[i];
    if (m->screen_seen)
      m->screen_seen(gw, e, idle);
  }
}

int fl_modules_offer(fl_gw *gw, fl_entity *e, const char *line, size_t len) {
  for (size_t i = 0; i < gw->nmodules; i++) {
    const fl_module *m = gw->modules[i];
    int door = m->offer ? m->offer(gw, e, line, len) : FL_DOOR_NONE;
    if (door != FL_DOOR_NONE)
      return door;
  }
  return FL_DOOR_NONE;
}
