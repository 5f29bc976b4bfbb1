/* room_tools.c — the room tools (see room_tools.h). */
#include "mcp/room_tools.h"

#include "mcp/call.h"

static const char *fl_str(json_t *args, const char *key) {
  return json_string_value(json_object_get(args, key));
}

int fl_tool_room_register(fl_session *s, fl_tool_call *call, json_t *args, json_t **result,
                          fl_wait **wait, char *err, size_t errlen) {
  (void)call;
  (void)wait;
  return fl_gw_room_register(fl_session_gw(s), fl_session_client(s), fl_str(args, "label"), result,
                             err, errlen);
}

int fl_tool_room_publish(fl_session *s, fl_tool_call *call, json_t *args, json_t **result,
                         fl_wait **wait, char *err, size_t errlen) {
  (void)call;
  (void)wait;
  return fl_gw_room_publish(fl_session_gw(s), fl_session_client(s), fl_str(args, "room"),
                            fl_str(args, "msgType"), json_object_get(args, "payload"), result, err,
                            errlen);
}

int fl_tool_room_watch(fl_session *s, fl_tool_call *call, json_t *args, json_t **result,
                       fl_wait **wait, char *err, size_t errlen) {
  json_t *after = json_object_get(args, "after"), *w = json_object_get(args, "wait_s"),
         *max = json_object_get(args, "max");
  return fl_gw_room_watch(fl_session_gw(s), fl_session_client(s), fl_str(args, "room"),
                          after ? (long long)json_integer_value(after) : 0,
                          w ? json_number_value(w) : 0, max ? (size_t)json_integer_value(max) : 0,
                          fl_tool_call_done, call, result, wait, err, errlen);
}

int fl_tool_room_sync(fl_session *s, fl_tool_call *call, json_t *args, json_t **result,
                      fl_wait **wait, char *err, size_t errlen) {
  return fl_gw_room_sync(fl_session_gw(s), fl_session_client(s), fl_str(args, "room"),
                         fl_tool_call_done, call, result, wait, err, errlen);
}

int fl_tool_peers(fl_session *s, fl_tool_call *call, json_t *args, json_t **result, fl_wait **wait,
                  char *err, size_t errlen) {
  (void)call;
  (void)args;
  (void)wait;
  (void)err;
  (void)errlen;
  *result = fl_gw_room_peers(fl_session_gw(s));
  return 0;
}
