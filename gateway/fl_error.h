/* fl_error.h — fleet's error codes.
 *
 * Functions return 0 on success, a negative errno, or one of the codes below
 * (a reserved range well below any errno). fl_strerror() gives the message
 * for either kind; a unit test checks that every code has one. Edges (the
 * JSON-RPC layer, AMQP) translate these; nothing else does. */
#ifndef FL_ERROR_H
#define FL_ERROR_H

#include <stddef.h>

enum {
  FL_EBASE = -10000,
  FL_ENOTFOUND = FL_EBASE, /* no entity by that gid or name */
  FL_EAMBIGUOUS,           /* a name that matches more than one entity */
  FL_EDUP,                 /* a msgId already stored or drained */
  FL_EFULL,                /* a cap was reached (held messages, waiters) */
  FL_ETOOBIG,              /* input over its size cap */
  FL_EINVAL,               /* an argument of the wrong shape */
  FL_ENAMETAKEN,           /* a name held by a live session */
  FL_EOFFLINE,             /* the recipient cannot take messages now */
  FL_ESTORE,               /* the hold store failed */
  FL_ECONFIG,              /* the configuration is wrong */
  FL_ECANCELLED,           /* a waiting call was cancelled */
  FL_ETIMEDOUT,            /* a bounded wait ran out */
  FL_ENOMEM,               /* allocation failed */
  FL_EPROTO,               /* a peer broke the protocol */
  FL_EBROKER,              /* the broker is unreachable */
  FL_EBADSIG,              /* a signature that does not verify under the key */
  FL_EPINNED,              /* a host is already pinned to a different key */
  FL_ELAST                 /* not a code: one past the last */
};

/* A static, human-readable message for err (a fleet code or -errno). Never
 * NULL. */
const char *fl_strerror(int err);

/* snprintf into an error buffer that may be NULL or empty (then nothing is
 * written): the one way modules fill the err/errlen pair they are given. */
void fl_errf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
