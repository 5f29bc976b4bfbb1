/* topology.c — the builders and parsers of broker names (see topology.h).
 *
 * Every part that goes into a name must be a name under common/names.h: no
 * '.', so a part can never add or split a routing-key word, and no '#' or
 * '*', which topic bindings would read as wildcards. */
#include "gateway/proto/topology.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/error.h"
#include "common/limits.h"
#include "common/names.h"

/* snprintf into out, reporting truncation as FL_ETOOBIG (out is then ""). */
static int topo_fmt(char *out, size_t n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int topo_fmt(char *out, size_t n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int w = vsnprintf(out, n, fmt, ap);
  va_end(ap);
  if (w < 0 || (size_t)w >= n) {
    out[0] = '\0';
    return FL_ETOOBIG;
  }
  return 0;
}

/* The checks every builder starts with. */
static int topo_args(char *out, size_t n) { return out && n ? 0 : FL_EINVAL; }

int fl_topology_inbox_queue(char *out, size_t n, const char *gid) {
  if (topo_args(out, n))
    return FL_EINVAL;
  out[0] = '\0';
  if (!fl_name_valid(gid, FL_MAX_NAME))
    return FL_EINVAL;
  return topo_fmt(out, n, "agent.%s.inbox.v2", gid);
}

int fl_topology_control_queue(char *out, size_t n, const char *host) {
  if (topo_args(out, n))
    return FL_EINVAL;
  out[0] = '\0';
  if (!fl_name_valid(host, FL_MAX_NAME))
    return FL_EINVAL;
  return topo_fmt(out, n, "control.%s", host);
}

int fl_topology_roster_queue(char *out, size_t n, const char *host) {
  if (topo_args(out, n))
    return FL_EINVAL;
  out[0] = '\0';
  if (!fl_name_valid(host, FL_MAX_NAME))
    return FL_EINVAL;
  return topo_fmt(out, n, FL_KEY_ROSTER_PREFIX "%s", host);
}

int fl_topology_claims_queue(char *out, size_t n, const char *host) {
  if (topo_args(out, n))
    return FL_EINVAL;
  out[0] = '\0';
  if (!fl_name_valid(host, FL_MAX_NAME))
    return FL_EINVAL;
  return topo_fmt(out, n, "claims.%s", host);
}

int fl_topology_roster_key(char *out, size_t n, const char *host, const char *gid) {
  if (topo_args(out, n))
    return FL_EINVAL;
  out[0] = '\0';
  if (!fl_name_valid(host, FL_MAX_NAME) || !fl_name_valid(gid, FL_MAX_NAME))
    return FL_EINVAL;
  return topo_fmt(out, n, FL_KEY_ROSTER_PREFIX "%s.%s", host, gid);
}

int fl_topology_broadcast_key(char *out, size_t n, const char *group) {
  if (topo_args(out, n))
    return FL_EINVAL;
  out[0] = '\0';
  if (!group)
    return topo_fmt(out, n, "%s", FL_KEY_BROADCAST_ALL);
  if (!fl_name_valid(group, FL_MAX_GROUP_NAME))
    return FL_EINVAL;
  return topo_fmt(out, n, FL_KEY_BROADCAST_PREFIX "%s", group);
}

int fl_topology_host_broadcast_key(char *out, size_t n, const char *host, const char *group) {
  if (topo_args(out, n))
    return FL_EINVAL;
  out[0] = '\0';
  if (!fl_name_valid(host, FL_MAX_NAME))
    return FL_EINVAL;
  if (!group)
    return topo_fmt(out, n, FL_KEY_BROADCAST_PREFIX "%s.all", host);
  if (!fl_name_valid(group, FL_MAX_GROUP_NAME))
    return FL_EINVAL;
  return topo_fmt(out, n, FL_KEY_BROADCAST_PREFIX "%s.%s", host, group);
}

const char *fl_topology_host_broadcast_key_group(const char *key, const char *host) {
  static const char prefix[] = FL_KEY_BROADCAST_PREFIX;
  if (!key || !host || !host[0])
    return NULL;
  size_t pl = sizeof prefix - 1, hl = strlen(host);
  if (strncmp(key, prefix, pl) != 0 || strncmp(key + pl, host, hl) != 0 || key[pl + hl] != '.' ||
      !key[pl + hl + 1])
    return NULL;
  return key + pl + hl + 1;
}

const char *fl_topology_roster_key_gid(const char *key, const char *host) {
  static const char prefix[] = FL_KEY_ROSTER_PREFIX;
  if (!key || !host || !host[0])
    return NULL;
  size_t pl = sizeof prefix - 1, hl = strlen(host);
  if (strncmp(key, prefix, pl) != 0 || strncmp(key + pl, host, hl) != 0 || key[pl + hl] != '.')
    return NULL;
  return key + pl + hl + 1;
}

const char *fl_topology_broadcast_key_group(const char *key) {
  static const char prefix[] = FL_KEY_BROADCAST_PREFIX;
  if (!key || strncmp(key, prefix, sizeof prefix - 1) != 0)
    return NULL;
  return key + sizeof prefix - 1;
}
