/* fleetctl_internal.h — what fleetctl's files share: the running command
 * and the printers of its results (fleetctl_print.c). */
#ifndef FL_FLEETCTL_INTERNAL_H
#define FL_FLEETCTL_INTERNAL_H

#include <jansson.h>

#include "clients/fleetctl_args.h"
#include "clients/fleetctl_rpc.h"

/* One running command: its options, its own arguments (after the command's
 * words) and its connection to fleetd. */
typedef struct ctl {
  const fl_ctl_opts *o;
  const struct ctl_cmd *cmd; /* its row of fl_ctl_cmds */
  const char *const *args;
  int nargs;
  fl_ctl_conn conn;
} ctl;

int print_json(json_t *v);
void print_kv(json_t *obj, int indent);
const char *str_of(json_t *obj, const char *k1, const char *k2);
const char *str_or(json_t *obj, const char *k, const char *dflt);
void party(json_t *v, const char **name, const char **gid);
int print_kv_result(ctl *c, json_t *res);
int print_peers(ctl *c, json_t *res);
int print_rooms(ctl *c, json_t *res);
int print_trace(ctl *c, json_t *res);
int print_roster(ctl *c, json_t *sc);
int print_sent(ctl *c, json_t *sc);
int print_messages(ctl *c, json_t *sc);
int print_approvals(ctl *c, json_t *res);

#endif
