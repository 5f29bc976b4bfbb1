/* http_serve.h — fleetd's HTTP server: libmicrohttpd on its own thread,
 * answering from the loop through a small route table.
 *
 * The server thread never touches loop state. Each request is put on a
 * bounded queue into the loop (xqueue.h) and its connection suspended; the
 * loop runs the route's handler, which fills a response, and resumes the
 * connection. A full queue is a 503 at once, so a flood of requests costs
 * the loop nothing. Only GET is served; anything else is 405, a GET with a
 * body 400. Only a Host naming the listen address or a loopback name is
 * served (421 otherwise); headers have a deadline and every kind of
 * connection a budget (http_serve.c). Routes match
 * by path prefix, first match wins; no match is 404. Rooms register one
 * route; another part (a dashboard, /metrics) can add its own to the same
 * table. */
#ifndef FL_HTTP_SERVE_H
#define FL_HTTP_SERVE_H

#include <stddef.h>
#include <uv.h>

typedef struct fl_http_server fl_http_server;

/* One request, borrowed for the handler's call. */
typedef struct fl_http_req {
  const char *path;          /* without the query */
  const char *query;         /* the raw query after '?', or "" */
  const char *authorization; /* the Authorization header, or "" */
} fl_http_req;

/* What the handler answers: status and a body it allocated with fl_malloc
 * (the server frees it); content_type static. */
typedef struct fl_http_resp {
  unsigned status;
  const char *content_type;
  char *body;
  size_t len;
  /* 1: the connection stays open as a stream (Server-Sent Events): body is
   * its first bytes, and fl_http_server_push adds more. */
  int stream;
} fl_http_resp;

typedef void (*fl_http_handler)(void *ctx, const fl_http_req *req, fl_http_resp *resp);

typedef struct fl_http_route {
  const char *prefix; /* "/v1/rooms/" */
  fl_http_handler handler;
  void *ctx;
} fl_http_route;

#define FL_HTTP_MAX_ROUTES 8

/* Starts serving listen ("HOST:PORT", "[V6]:PORT"; port 0 = any free one)
 * on loop. Routes are added after with fl_http_server_route (on the loop,
 * before or while serving). Returns 0 and *out, or FL_EINVAL / FL_ECONFIG
 * with err saying what to fix (FL_ECONFIG too when libmicrohttpd, loaded by
 * the first start, is missing: http_libs.h). */
int fl_http_server_start(uv_loop_t *loop, const char *listen, fl_http_server **out, char *err,
                         size_t errlen);
/* The same, with key naming the configuration key listen came from in
 * what err says ("http.listen"). */
int fl_http_server_start_for(uv_loop_t *loop, const char *key, const char *listen,
                             fl_http_server **out, char *err, size_t errlen);
/* Adds a route. 0 or FL_EFULL. */
int fl_http_server_route(fl_http_server *s, const fl_http_route *r);
/* The address actually bound, "HOST:PORT". */
const char *fl_http_server_addr(const fl_http_server *s);
/* Counts: requests answered, refused because the queue was full. */
unsigned long long fl_http_server_served(const fl_http_server *s);
/* What the server refused: a Host naming another server (421), connections
 * dropped for not sending their headers in time or for being the oldest of
 * too many waiting, requests answered 503 because a budget was full. */
typedef struct fl_http_stats {
  unsigned long long misdirected, dropped_slow, refused_busy;
} fl_http_stats;
/* Adds s's counts into *add (NULL-safe). */
void fl_http_server_stats(fl_http_server *s, fl_http_stats *add);
/* Appends len bytes to every open stream (copied; a stream that already
 * holds FL_HTTP_STREAM_CAP unsent bytes is closed instead). Loop thread.
 * Returns how many streams are open. */
#define FL_HTTP_STREAM_CAP (256 * 1024)
size_t fl_http_server_push(fl_http_server *s, const char *data, size_t len);
/* Streams open now. */
size_t fl_http_server_streams(fl_http_server *s);
/* Stops the thread (answering what waits with 503) and closes the queue;
 * run the loop once more, then fl_http_server_free. */
void fl_http_server_stop(fl_http_server *s);
void fl_http_server_free(fl_http_server **s);

#endif
