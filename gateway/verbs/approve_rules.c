/* approve_rules.c — the pure rules of permission requests (approve_rules.h). */
#include "gateway/verbs/approve_rules.h"

#include <stdio.h>
#include <string.h>

#include "common/error.h"
#include "common/limits.h"
#include "common/utf8.h"

/* The mark a cut summary ends with (3 bytes). */
#define FL_APPROVE_CUT_MARK "…"

int fl_approve_check_decision(const char *decision, char *err, size_t errlen) {
  if (decision && (strcmp(decision, "allow") == 0 || strcmp(decision, "deny") == 0))
    return 0;
  fl_errf(err, errlen, "decision must be \"allow\" or \"deny\", not \"%.40s\"",
          decision ? decision : "");
  return FL_EINVAL;
}

int fl_approve_check_request_id(const char *request_id, char *err, size_t errlen) {
  if (request_id && *request_id && strlen(request_id) < FL_ID_LEN)
    return 0;
  fl_errf(err, errlen, "requestId must be the id a BLOCKED message gave (a UUID)");
  return FL_EINVAL;
}

int fl_approve_check_reason(const char *reason, char *err, size_t errlen) {
  if (!reason || strlen(reason) <= FL_MAX_APPROVE_REASON)
    return 0;
  fl_errf(err, errlen, "reason is %zu bytes; the limit is %d", strlen(reason),
          FL_MAX_APPROVE_REASON);
  return FL_ETOOBIG;
}

size_t fl_approve_summary(const char *input, char *out, size_t outlen) {
  size_t mark = sizeof FL_APPROVE_CUT_MARK - 1;
  size_t len = input ? strlen(input) : 0;
  if (outlen < FL_HOOK_SUMMARY_MAX + mark + 1) {
    if (outlen)
      out[0] = '\0';
    return 0;
  }
  if (len <= FL_HOOK_SUMMARY_MAX + mark) {
    memcpy(out, input ? input : "", len);
    out[len] = '\0';
    return len;
  }
  size_t keep = fl_utf8_prefix(input, len, FL_HOOK_SUMMARY_MAX);
  memcpy(out, input, keep);
  memcpy(out + keep, FL_APPROVE_CUT_MARK, mark + 1);
  return keep + mark;
}
