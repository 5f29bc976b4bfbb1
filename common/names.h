/* names.h — the one rule for the names fleet puts on the wire.
 *
 * Host ids, agent names, roles and groups all end up inside AMQP routing
 * keys (roster.<host>.<gid>, broadcast.<host>.<group>), in tables and typed
 * into terminal panes, so they share one rule: 1 to FL_MAX_NAME (63)
 * characters, each a letter, a digit, '-' or '_'. No '.', which separates
 * the words of a routing key, no '@', which separates name@host, no spaces.
 * An agent name must also not look like a UUID, which would read as a gid. */
#ifndef FL_NAMES_H
#define FL_NAMES_H

#include <stddef.h>

/* The rule in words, for error messages: "1-63 letters, digits, '-' or '_'". */
extern const char fl_name_rule[];

/* 1 if s follows the rule and is at most max characters (max is capped at
 * FL_MAX_NAME), else 0. NULL is not a name. */
int fl_name_valid(const char *s, size_t max);
/* Checks a host id; on failure fills err with what was wrong, naming `what`
 * (e.g. "--host-id", "FLEET_HOST_ID", "fleetd.json: hostId"), and returns
 * FL_EINVAL. */
int fl_name_check_host(const char *s, const char *what, char *err, size_t errlen);
/* 1 if s is a coordId: name@fleet, each part a name, FL_MAX_COORD_ID
 * characters at most in all; else 0. */
int fl_coord_id_valid(const char *s);

#endif
