/* limits.h — every cap fleet enforces, in one place.
 *
 * Each buffer that grows with outside input has a cap named here. Going over
 * a cap is a clear error (and, for a peer, a closed connection); it is never
 * unbounded growth. Change a number here and every module follows. */
#ifndef FL_LIMITS_H
#define FL_LIMITS_H

/* One JSON-RPC line from a client. 4 MiB leaves room for a maximal message
 * content plus JSON escaping, and still bounds a hostile client. */
#define FL_MAX_LINE (4u * 1024u * 1024u)

/* Message content in bytes (UTF-8). 1 MiB is far above any brief an agent
 * writes, and small enough to hold thousands in SQLite. */
#define FL_MAX_CONTENT (1024u * 1024u)

/* Bytes queued for one client socket that it has not read yet. A client that
 * stops reading is disconnected rather than growing our memory. */
#define FL_MAX_OUTQ (16u * 1024u * 1024u)

/* Messages held for one entity. Past this, sends to it fail with FL_EFULL. */
#define FL_MAX_HELD_PER_ENTITY 10000

/* Concurrent client connections on the socket. */
#define FL_MAX_CLIENTS 1024

/* Bounded waits: MCP clients time out long calls (commonly at 60 s), so a
 * waiting tool call never outlives 55 s; the default leaves margin too. */
#define FL_MAX_WAIT_S 55
#define FL_DEFAULT_WAIT_S 30

/* Messages returned by one fleet_poll. */
#define FL_MAX_POLL 100
#define FL_DEFAULT_POLL 20

/* Entity names: short, printable, no spaces (they are typed into panes). */
#define FL_MAX_NAME 64
#define FL_MAX_ROLE 32
#define FL_MAX_GROUPS 16
#define FL_MAX_GROUP_NAME 64

/* A textual UUID plus NUL. */
#define FL_ID_LEN 37

/* A tmux pane id / socket path given by a client. */
#define FL_MAX_PANE 64
#define FL_MAX_PATH 1024

/* Waiting tool calls (send with wait_s, poll with wait_s) per client. */
#define FL_MAX_WAITERS_PER_CLIENT 64

/* msgIds remembered for dedup after their message was drained. */
#define FL_MAX_SEEN 100000

#endif
