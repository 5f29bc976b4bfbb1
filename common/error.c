/* error.c — messages for fleet's error codes (see error.h). */
#include "common/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define FL_ERROR_MSG(name, msg) [FL_##name - FL_EBASE] = msg,
static const char *const fl_messages[] = {FL_ERRORS(FL_ERROR_MSG)};
#undef FL_ERROR_MSG
/* One message per code, indexed by code: the table and the enum come from
 * the same list, and this keeps them the same size. */
_Static_assert(sizeof fl_messages / sizeof fl_messages[0] == (size_t)(FL_ELAST - FL_EBASE),
               "every fleet error code needs exactly one message in FL_ERRORS");

const char *fl_strerror(int err) {
  if (err == 0)
    return "success";
  if (err >= FL_EBASE && err < FL_ELAST) {
    return fl_messages[err - FL_EBASE];
  }
  /* errno values stay below 4096 (the kernel's MAX_ERRNO); anything else
   * between the two ranges is no code at all. */
  if (err < 0 && err > -4096)
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
