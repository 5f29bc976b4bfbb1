/* channel.h — Claude Code channel pushes for one session (opt in).
 *
 * With FLEET_CHANNEL=1, fleet-mcp marks its identity channel:true; when the
 * client also declared the experimental "claude/channel" capability in its
 * initialize, each message held for the session is pushed to it once as a
 * notifications/claude/channel notification, params {content, meta} (meta a
 * map of strings: msgId, from, fromGid, kind, traceId, ts, inReplyTo). The
 * push is a copy: the message stays held until a poll drains it.
 *
 * A channel remembers the last FL_CHANNEL_REMEMBERED msgIds it pushed and
 * pushes at most FL_CHANNEL_PUSHES_PER_S a second (limits.h). Loop thread
 * only; nothing blocks. */
#ifndef FL_MCP_CHANNEL_H
#define FL_MCP_CHANNEL_H

#include <jansson.h>

#include "gateway/gw.h"

typedef struct fl_channel fl_channel;

/* The capability key, in the client's and the server's
 * capabilities.experimental. */
#define FL_CHANNEL_CAPABILITY "claude/channel"

/* 1 when an initialize's params (borrowed) ask for channel pushes: the
 * fleet identity says channel:true and the client declared the capability. */
int fl_channel_wanted(json_t *init_params);

/* A new channel (owned by the caller, freed with fl_channel_free), or NULL
 * when out of memory. */
fl_channel *fl_channel_new(void);
/* NULL-safe; sets *ch to NULL. */
void fl_channel_free(fl_channel **ch);

/* The notification line for m ('\n'-terminated, the caller frees it with
 * fl_free), or NULL when m was pushed already, the second's pushes are used
 * up, or memory ran out. The msgId is remembered only when a line is
 * returned. */
char *fl_channel_line(fl_channel *ch, const fl_msg_view *m);

#endif
