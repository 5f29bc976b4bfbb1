/* names.c — the name rule (see names.h). */
#include "common/names.h"

#include <string.h>

#include "common/error.h"
#include "common/limits.h"

const char fl_name_rule[] = "1-63 letters, digits, '-' or '_'";

int fl_name_valid(const char *s, size_t max) {
  if (!s)
    return 0;
  if (max > FL_MAX_NAME)
    max = FL_MAX_NAME;
  size_t n = strlen(s);
  if (n == 0 || n > max)
    return 0;
  for (size_t i = 0; i < n; i++) {
    char ch = s[i];
    if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
          ch == '-' || ch == '_'))
      return 0;
  }
  return 1;
}

int fl_name_check_host(const char *s, const char *what, char *err, size_t errlen) {
  if (fl_name_valid(s, FL_MAX_NAME))
    return 0;
  fl_errf(err, errlen,
          "%s '%.80s' is not a valid host id: use %s (it becomes part of broker "
          "routing keys)",
          what, s ? s : "", fl_name_rule);
  return FL_EINVAL;
}

int fl_coord_id_valid(const char *s) {
  if (!s || strlen(s) > FL_MAX_COORD_ID)
    return 0;
  const char *at = strchr(s, '@');
  if (!at || at == s)
    return 0;
  char name[FL_MAX_COORD_ID + 1];
  memcpy(name, s, (size_t)(at - s));
  name[at - s] = '\0';
  return fl_name_valid(name, FL_MAX_NAME) && fl_name_valid(at + 1, FL_MAX_NAME);
}
