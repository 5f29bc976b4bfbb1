/* room_tools.h — the room tools' handlers (fleet_room_register,
 * fleet_room_publish, fleet_room_watch, fleet_room_sync, fleet_peers), as
 * rows for tools.c's table. Each runs one fl_gw_room_* verb; with rooms off
 * the verb answers {degraded: true}. */
#ifndef FL_MCP_ROOM_TOOLS_H
#define FL_MCP_ROOM_TOOLS_H

#include "mcp/tools.h"

int fl_tool_room_register(fl_session *s, fl_tool_call *call, json_t *args, json_t **result,
                          fl_wait **wait, char *err, size_t errlen);
int fl_tool_room_publish(fl_session *s, fl_tool_call *call, json_t *args, json_t **result,
                         fl_wait **wait, char *err, size_t errlen);
int fl_tool_room_watch(fl_session *s, fl_tool_call *call, json_t *args, json_t **result,
                       fl_wait **wait, char *err, size_t errlen);
int fl_tool_room_sync(fl_session *s, fl_tool_call *call, json_t *args, json_t **result,
                      fl_wait **wait, char *err, size_t errlen);
int fl_tool_peers(fl_session *s, fl_tool_call *call, json_t *args, json_t **result, fl_wait **wait,
                  char *err, size_t errlen);

/* The rows, for the table in tools.c. */
#define FL_ROOM_TOOLS                                                                              \
  {"fleet_room_register", fl_tool_room_register}, {"fleet_room_publish", fl_tool_room_publish},    \
      {"fleet_room_watch", fl_tool_room_watch}, {"fleet_room_sync", fl_tool_room_sync},            \
      {"fleet_peers", fl_tool_peers},

#endif
