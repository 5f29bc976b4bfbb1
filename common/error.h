/* error.h — fleet's error codes.
 *
 * Functions return 0 on success, a negative errno, or one of the codes below
 * (a reserved range well below any errno). fl_strerror() gives the message
 * for either kind; a unit test checks that every code has one. Edges (the
 * JSON-RPC layer, AMQP) translate these; nothing else does. */
#ifndef FL_ERROR_H
#define FL_ERROR_H

#include <stddef.h>

/* The codes and their messages, in one list: a code cannot be added without
 * its message. Each message is what a user reads after "failed: ". */
#define FL_ERRORS(X)                                                                               \
  X(ENOTFOUND, "no such entity") /* no entity by that gid or name */                               \
  X(EAMBIGUOUS, "name matches more than one entity")                                               \
  X(EDUP, "duplicate message id") /* a msgId already stored */                                     \
  X(EFULL, "limit reached")       /* held messages, waiters, queues */                             \
  X(ETOOBIG, "input too large")   /* input over its size cap */                                    \
  X(EINVAL, "invalid argument")   /* an argument of the wrong shape */                             \
  X(ENAMETAKEN, "name is held by a live session")                                                  \
  X(EOFFLINE, "recipient is offline")                                                              \
  X(ESTORE, "hold store failed")                                                                   \
  X(ECONFIG, "configuration error")                                                                \
  X(ECANCELLED, "cancelled") /* a waiting call was cancelled */                                    \
  X(ETIMEDOUT, "timed out")  /* a bounded wait ran out */                                          \
  X(ENOMEM, "out of memory")                                                                       \
  X(EPROTO, "protocol error")                                /* a peer broke the protocol */       \
  X(EVERSION, "made by a newer, incompatible fleet version") /* envelope major */                  \
  X(EBROKER, "broker unreachable")                                                                 \
  X(EREFUSED, "refused by the broker") /* the broker closed a channel */                           \
  X(EBADSIG, "signature does not verify")                                                          \
  X(EUNPINNED, "host is not pinned") /* no key is pinned for the host named */                     \
  X(EDISKFULL, "the disk is full")   /* a write found no space left */                             \
  X(EPINNED, "host is pinned to a different key")

#define FL_ERROR_ENUM(name, msg) FL_##name,
enum {
  FL_EBASE = -10000, /* a reserved range well below any errno */
  FL_EFIRST_ = FL_EBASE - 1,
  FL_ERRORS(FL_ERROR_ENUM) FL_ELAST /* not a code: one past the last */
};
#undef FL_ERROR_ENUM

/* A static, human-readable message for err (a fleet code or -errno). Never
 * NULL. */
const char *fl_strerror(int err);

/* snprintf into an error buffer that may be NULL or empty (then nothing is
 * written): the one way modules fill the err/errlen pair they are given. */
void fl_errf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
