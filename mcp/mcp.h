/* mcp.h — the MCP protocol for one session, independent of its transport.
 *
 * The transport (mcp/server.c, or a test) hands each received line to
 * fl_session_line and gives the session a callback that writes a line back.
 * The session speaks MCP (initialize, ping, tools/list, tools/call,
 * logging/setLevel, notifications/cancelled) plus fleet's fleet/... methods,
 * and calls the gateway through gateway/gw.h only. Loop thread only; nothing
 * here blocks. */
#ifndef FL_MCP_H
#define FL_MCP_H

#include <stddef.h>

#include "gateway/gw.h"
#include "mcp/counters.h"

typedef struct fl_session fl_session;

typedef struct fl_session_io {
  /* Queues line (new, NUL-terminated, ends in '\n'; ownership moves) for
   * the peer. */
  void (*write)(void *conn, char *line, size_t len);
} fl_session_io;

/* Loads the embedded tool schemas once; 0 or FL_EPROTO if they do not parse.
 * Call before the first session; fl_mcp_cleanup after the last. */
int fl_mcp_init(void);
void fl_mcp_cleanup(void);

/* A new session on gw (borrowed; must outlive the session). counters
 * (borrowed, may be NULL) is where it counts what it sees; io (borrowed,
 * static) and conn are how it writes. NULL when out of memory. */
fl_session *fl_session_new(fl_gw *gw, fl_mcp_counters *counters, const fl_session_io *io,
                           void *conn);
/* Handles one complete line from the peer (borrowed, len bytes, no '\n').
 * A request is answered through io->write before this returns, unless it is
 * a tool call the gateway parked: that is answered from a later loop
 * callback. */
void fl_session_line(fl_session *s, const char *line, size_t len);
/* The peer sent a line over the cap: answer with an error (the transport
 * closes the connection after it is written). */
void fl_session_oversize(fl_session *s);
/* Ends the session: detaches it from the gateway (waiting calls are
 * cancelled, no response is written). NULL-safe; sets *s to NULL. */
void fl_session_free(fl_session **s);

#endif
