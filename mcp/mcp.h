/* mcp.h — the MCP protocol for one session, independent of its transport.
 *
 * The transport (mcp/server.c, or a test) hands each received line to
 * fl_session_line and gives the session a callback that writes a line back.
 * The session speaks MCP (initialize, ping, tools/list, tools/call,
 * logging/setLevel, notifications/cancelled) plus fleet's fleet/... methods,
 * and calls the gateway through gateway/gw.h only. Loop thread only; nothing
 * here blocks, except fl_session_parse, which any thread may run (a
 * transport parses a big line off the loop thread, then dispatches it). */
#ifndef FL_MCP_H
#define FL_MCP_H

#include <stddef.h>

#include "gateway/gw.h"
#include "mcp/counters.h"
#include "mcp/jsonrpc.h"

typedef struct fl_session fl_session;

typedef struct fl_session_io {
  /* Queues line (new, NUL-terminated, ends in '\n'; ownership moves) for
   * the peer. */
  void (*write)(void *conn, char *line, size_t len);
  /* The same, then done(arg, status) once the line is written (0) or can
   * no longer be (a negative code: the connection closed, the write
   * failed), possibly before this returns. NULL: write, then done(arg, 0). */
  void (*write_then)(void *conn, char *line, size_t len, void (*done)(void *arg, int status),
                     void *arg);
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

/* fl_session_line in two steps: the parse, which touches no session and
 * may run on any thread, then the dispatch on the loop thread, which
 * consumes what the parse filled in. fl_session_parsed_free drops a parse
 * that is not dispatched (its session went away meanwhile). */
typedef struct fl_session_parsed {
  int rc;              /* 0, or the JSON-RPC error code of a line refused */
  fl_rpc rpc;          /* when rc is 0 (owned) */
  json_t *err_id;      /* when rc is not 0: the id to answer, or NULL (owned) */
  const char *err_msg; /* when rc is not 0: static text */
} fl_session_parsed;
void fl_session_parse(const char *line, size_t len, fl_session_parsed *out);
void fl_session_dispatch(fl_session *s, fl_session_parsed *p);
void fl_session_parsed_free(fl_session_parsed *p);
/* The peer sent a line over the cap: answer with an error (the transport
 * closes the connection after it is written). */
void fl_session_oversize(fl_session *s);
/* Ends the session: detaches it from the gateway (waiting calls are
 * cancelled, no response is written). NULL-safe; sets *s to NULL. */
void fl_session_free(fl_session **s);

#endif
