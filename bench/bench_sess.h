/* bench_sess.h — fleet_bench's MCP sessions: a connection to fleetd's socket
 * (or a fleet-mcp process on stdio pipes) that registers as one worker name,
 * and synchronous or pipelined tools/call requests on it. The measurements in
 * fleet_bench.c drive fleetd through these; every failure ends the run. */
#ifndef FL_BENCH_SESS_H
#define FL_BENCH_SESS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct sess {
  int fd;      /* read from (the socket, or fleet-mcp's stdout) */
  int wfd;     /* written to (the socket again, or fleet-mcp's stdin) */
  pid_t child; /* fleet-mcp's pid when the session goes through it, else 0 */
  char name[64];
  char *buf;
  size_t len, off, cap;
  size_t scanned;  /* bytes after off already searched for the end of the line */
  size_t last_len; /* bytes of the last line read */
  long next_id;
};

/* When set (-m), every session goes through this fleet-mcp, as an MCP client's does. */
extern const char *g_fleet_mcp;

/* Connects to sock (or starts fleet-mcp on it) and registers as the worker name. */
void sess_open(struct sess *s, const char *sock, const char *name);
void sess_close(struct sess *s);

/* Next response (a message with an id); notifications are skipped. New reference. */
json_t *sess_recv(struct sess *s);
/* Writes a tools/call request (args: a JSON object text) through scratch and
 * returns its id. */
long sess_call_start(struct sess *s, const char *tool, const char *args, char *scratch, size_t cap);
/* One synchronous tools/call; the response (new reference). With read_ns, the
 * clock when its line was read whole, before it is parsed. */
json_t *sess_call_at(struct sess *s, const char *tool, const char *args, uint64_t *read_ns);
json_t *sess_call(struct sess *s, const char *tool, const char *args);

/* The structuredContent of a tools/call response (borrowed); dies on an error. */
json_t *tool_result(struct sess *s, json_t *resp, const char *what);
/* The error text of an isError tools/call result (borrowed from resp), or NULL. */
const char *tool_error(json_t *resp);

/* Waits until s's gateway lists name as online. */
void wait_online(struct sess *s, const char *name);

/* size bytes of plain ASCII starting with seq (malloc'd, NUL-terminated). */
char *make_content(size_t size, size_t seq);

#endif
