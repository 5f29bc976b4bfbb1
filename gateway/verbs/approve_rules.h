/* approve_rules.h — the pure rules of permission requests and their
 * decisions (approve.h): what a decision, a requestId and a reason must be,
 * and the bounded summary of a tool's input a BLOCKED message carries.
 * No state, no gateway: approve.c applies them, tests/unit/test_approve.c
 * checks them. */
#ifndef FL_APPROVE_RULES_H
#define FL_APPROVE_RULES_H

#include <stddef.h>

/* decision is "allow" or "deny" (exactly): 0, else FL_EINVAL with err. */
int fl_approve_check_decision(const char *decision, char *err, size_t errlen);

/* request_id is one a BLOCKED message could have given: not empty, shorter
 * than FL_ID_LEN. 0, else FL_EINVAL with err. (Whether such a request
 * exists is approve.c's.) */
int fl_approve_check_request_id(const char *request_id, char *err, size_t errlen);

/* reason (may be NULL) is at most FL_MAX_APPROVE_REASON bytes: 0, else
 * FL_ETOOBIG with err. */
int fl_approve_check_reason(const char *reason, char *err, size_t errlen);

/* The summary of a tool's input (may be NULL: "") into out: input as it
 * is when it is at most FL_HOOK_SUMMARY_MAX + 3 bytes (fleet-hook's cut
 * with its "…"), else cut at FL_HOOK_SUMMARY_MAX bytes on a character
 * boundary with "…" added; out then holds at most FL_HOOK_SUMMARY_MAX + 3
 * bytes. outlen must be at least FL_HOOK_SUMMARY_MAX + 4; returns the
 * summary's length. */
size_t fl_approve_summary(const char *input, char *out, size_t outlen);

#endif
