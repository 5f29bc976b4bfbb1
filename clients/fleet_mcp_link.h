/* fleet_mcp_link.h — fleet-mcp's link to fleetd, and getting it back.
 *
 * The relay keeps one connection to fleetd. When it closes (fleetd stopped,
 * restarted or crashed), fleet-mcp stays up for its client: every call
 * fleetd had not answered gets a retryable error at once, and fleet-mcp
 * connects again with backoff. Once the client's initialize was accepted,
 * a new connection first sends that same initialize again (fleet-mcp's own
 * request id; the identity now also carries the gid fleetd gave and
 * "resume": true), so the session comes back as the same entity, with its
 * pane and its held messages; then notifications/initialized and the
 * client's logging level, and only then the client's lines. Lines the client
 * sends meanwhile wait for the link, but only while it has been down for
 * less than FL_MCP_HOLD_MS; after that a request gets a retryable error at
 * once (ping is answered by fleet-mcp itself).
 *
 * fleet-mcp.c owns the loop (poll, reading stdin and the socket into whole
 * lines) and hands each whole line here; this file decides what becomes of
 * it, keeps the link's state in fl_relay, and writes to the client what
 * fleet-mcp answers itself. Blocking I/O on one thread, like all of
 * fleet-mcp. */
#ifndef FL_FLEET_MCP_LINK_H
#define FL_FLEET_MCP_LINK_H

#include <jansson.h>
#include <stddef.h>
#include <sys/uio.h>

#include "clients/fleet_mcp_calls.h"
#include "common/limits.h"
#include "mcp/jsonrpc.h"

/* poll(2)'s "no timeout": wait until a descriptor is ready. */
#define FL_MCP_POLL_FOREVER (-1)

/* How long a new connection may take to answer the repeated initialize:
 * generous for a loaded host, short enough that a socket taken over by
 * something that never answers is left again. */
#define FL_MCP_HANDSHAKE_MS 10000
/* How long a request made while the link is down waits for it (a fleetd
 * restart is over in about a second) before it gets a retryable error; and
 * how many lines and bytes may wait (a client does not send much while its
 * calls are failing; the bytes allow one line of the largest size). */
#define FL_MCP_HOLD_MS 5000
#define FL_MCP_HOLD_LINES 256
#define FL_MCP_HOLD_BYTES (2u * FL_MAX_LINE)
/* Calls tracked for an answer: fleetd keeps at most
 * FL_MAX_WAITERS_PER_CLIENT calls of a session waiting and answers the rest
 * at once, so this covers a client with many calls on their way too; past
 * it, calls go through untracked (they would hang if the link were lost
 * under them). */
#define FL_MCP_MAX_CALLS (64 * FL_MAX_WAITERS_PER_CLIENT)
/* Room for why fleetd cannot be reached: a path and a refusal from fleetd. */
#define FL_MCP_WHY_MAX (FL_MAX_PATH + 768)

enum { FL_LINK_UP, FL_LINK_HANDSHAKE, FL_LINK_DOWN };

/* What handling input came to: go on, stdin is closed, or stop for good. */
enum { FL_PUMP_OK, FL_PUMP_EOF, FL_PUMP_FAIL };

/* A line from the client that waits for the link. */
typedef struct held_line {
  struct held_line *next;
  size_t len;
  char line[]; /* len bytes and a NUL */
} held_line;

/* Both directions of the relay, and the state of its link to fleetd. */
typedef struct fl_relay {
  const char *path; /* fleetd's socket */
  int sock;         /* -1 while the link is down */
  int link;         /* FL_LINK_* */
  json_t *ident;    /* the identity for initialize (owned) */
  fl_linebuf in;    /* stdin -> socket */
  fl_linebuf out;   /* socket -> stdout */
  fl_calls *calls;  /* requests fleetd has not answered yet */
  int untracked_warned;
  /* The session, to register it again: the params of the client's
   * initialize in flight, and of the one fleetd accepted (both owned). */
  json_t *init_sent;
  json_t *init_params;
  int client_initialized; /* the client sent notifications/initialized */
  char level[16];         /* the client's logging/setLevel level, or "" */
  /* The client closed stdin and fleetd was told (its socket half-closed):
   * fleetd closing its side now is the end of the session, not a loss. */
  int ending;
  /* Reconnecting. */
  long long lost_at;         /* when the link went down (fl_mono_ms) */
  long long next_try;        /* when to connect again */
  long long handshake_until; /* when a repeated initialize has waited enough */
  long long last_log;        /* when the reason was last logged */
  int retry_ms;              /* the next wait before connecting again */
  unsigned long attempts;    /* attempts since the link went down */
  unsigned long resumes;     /* times the session came back */
  unsigned rng;              /* jitter */
  char why[FL_MCP_WHY_MAX];  /* why fleetd cannot be reached now */
  char logged[FL_MCP_WHY_MAX];
  held_line *held, **held_tail;
  size_t nheld, held_bytes;
} fl_relay;

/* Writes every byte of iov, retrying on EINTR and short writes, and waiting
 * for POLLOUT if fd happens to be non-blocking (a parent may hand us such a
 * pipe). Returns 0 or -errno. Modifies iov. */
int fl_link_write_all(int fd, struct iovec *iov, int iovcnt);

/* Connects to the Unix socket at path. nonblock: fail with -EAGAIN rather
 * than wait when its listen queue is full (a reconnect must never stall the
 * relay); the fd returned blocks either way. Returns the fd, or -errno. */
int fl_link_connect_unix(const char *path, int nonblock);

/* One whole line from the client (borrowed, len bytes, no '\n'), up or
 * down: sent to fleetd (initialize with the identity), held for the link,
 * or answered here. FL_PUMP_OK, or FL_PUMP_FAIL when out of memory. */
int fl_link_client_line(fl_relay *r, const char *line, size_t len);
/* One whole line from fleetd: an answer to fleet-mcp's own request is kept
 * here; every other line goes to the client, and an answer settles its
 * call. FL_PUMP_OK, or FL_PUMP_FAIL when the client cannot be written to. */
int fl_link_fleetd_line(fl_relay *r, const char *line, size_t len);

/* Ends the link (sock, the half line read from it, the calls in flight).
 * why says what happened (NULL: r->why already does); refused: fleetd said
 * no to the session, so it is asked again less often. Once r->ending, the
 * link just closes: nothing is logged and nothing connects again. */
void fl_link_down(fl_relay *r, const char *why, int refused);
/* Connects again; once the client's session was accepted, asks fleetd to
 * take it back before anything else goes through. FL_PUMP_OK (up, in the
 * handshake, or down again until r->next_try), or FL_PUMP_FAIL. */
int fl_link_try_connect(fl_relay *r);
/* The link has been down too long for the lines waiting on it: each request
 * gets its retryable error, notifications are dropped. */
void fl_link_fail_held(fl_relay *r);

#endif
