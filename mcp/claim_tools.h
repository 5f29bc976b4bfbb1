/* claim_tools.h — the claim tools' handlers (fleet_claim, fleet_release,
 * fleet_handoff, fleet_claims), as rows for tools.c's table. Each runs one
 * fl_gw_* claim verb (gateway/rooms/claims.h). */
#ifndef FL_MCP_CLAIM_TOOLS_H
#define FL_MCP_CLAIM_TOOLS_H

#include "mcp/tools.h"

int fl_tool_claim(fl_session *s, fl_tool_call *call, json_t *args, json_t **result, fl_wait **wait,
                  char *err, size_t errlen);
int fl_tool_release(fl_session *s, fl_tool_call *call, json_t *args, json_t **result,
                    fl_wait **wait, char *err, size_t errlen);
int fl_tool_handoff(fl_session *s, fl_tool_call *call, json_t *args, json_t **result,
                    fl_wait **wait, char *err, size_t errlen);
int fl_tool_claims(fl_session *s, fl_tool_call *call, json_t *args, json_t **result, fl_wait **wait,
                   char *err, size_t errlen);

#define FL_CLAIM_TOOLS                                                                             \
  {"fleet_claim", fl_tool_claim}, {"fleet_release", fl_tool_release},                              \
      {"fleet_handoff", fl_tool_handoff}, {"fleet_claims", fl_tool_claims},

#endif
