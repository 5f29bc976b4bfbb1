/* claim_tools.c — the claim tools (see claim_tools.h). */
#include "mcp/claim_tools.h"

#include "mcp/call.h"

static const char *fl_str(json_t *args, const char *key) {
  return json_string_value(json_object_get(args, key));
}

int fl_tool_claim(fl_session *s, fl_tool_call *call, json_t *args, json_t **result, fl_wait **wait,
                  char *err, size_t errlen) {
  json_t *w = json_object_get(args, "wait_s");
  return fl_gw_claim(fl_session_gw(s), fl_session_client(s), fl_str(args, "resource"),
                     json_number_value(json_object_get(args, "ttl_s")),
                     w ? json_number_value(w) : 0, fl_tool_call_done, call, result, wait, err,
                     errlen);
}

int fl_tool_release(fl_session *s, fl_tool_call *call, json_t *args, json_t **result,
                    fl_wait **wait, char *err, size_t errlen) {
  (void)call;
  (void)wait;
  return fl_gw_release(fl_session_gw(s), fl_session_client(s), fl_str(args, "resource"), result,
                       err, errlen);
}

int fl_tool_handoff(fl_session *s, fl_tool_call *call, json_t *args, json_t **result,
                    fl_wait **wait, char *err, size_t errlen) {
  (void)call;
  (void)wait;
  return fl_gw_handoff(fl_session_gw(s), fl_session_client(s), fl_str(args, "resource"),
                       fl_str(args, "to"), result, err, errlen);
}

int fl_tool_claims(fl_session *s, fl_tool_call *call, json_t *args, json_t **result, fl_wait **wait,
                   char *err, size_t errlen) {
  (void)call;
  (void)wait;
  return fl_gw_claims(fl_session_gw(s), fl_session_client(s), fl_str(args, "resource"), result, err,
                      errlen);
}
