/* fl_error.c — messages for fleet's error codes (see fl_error.h). */
#include "gateway/fl_error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const fl_messages[] = {
    [FL_ENOTFOUND - FL_EBASE] = "no such entity",
    [FL_EAMBIGUOUS - FL_EBASE] = "name matches more than one entity",
    [FL_EDUP - FL_EBASE] = "duplicate message id",
    [FL_EFULL - FL_EBASE] = "limit reached",
    [FL_ETOOBIG - FL_EBASE] = "input too large",
    [FL_EINVAL - FL_EBASE] = "invalid argument",
    [FL_ENAMETAKEN - FL_EBASE] = "name is held by a live session",
    [FL_EOFFLINE - FL_EBASE] = "recipient is offline",
    [FL_ESTORE - FL_EBASE] = "hold store failed",
    [FL_ECONFIG - FL_EBASE] = "configuration error",
    [FL_ECANCELLED - FL_EBASE] = "cancelled",
    [FL_ETIMEDOUT - FL_EBASE] = "timed out",
    [FL_ENOMEM - FL_EBASE] = "out of memory",
    [FL_EPROTO - FL_EBASE] = "protocol error",
    [FL_EBROKER - FL_EBASE] = "broker unreachable",
    [FL_EBADSIG - FL_EBASE] = "signature does not verify",
    [FL_EPINNED - FL_EBASE] = "host is pinned to a different key",
};

const char *fl_strerror(int err) {
  if (err == 0)
    return "success";
  if (err >= FL_EBASE && err < FL_ELAST) {
    const char *m = fl_messages[err - FL_EBASE];
    return m ? m : "unknown fleet error";
  }
  if (err < 0 && err > FL_EBASE)
    return strerror(-err);
  return "unknown error";
}

void fl_errf(char *err, size_t errlen, const char *fmt, ...) {
  if (!err || errlen == 0)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
}
