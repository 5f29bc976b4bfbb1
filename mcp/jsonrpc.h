/* jsonrpc.h — newline-delimited JSON-RPC 2.0: framing, parsing, replies.
 *
 * Pure code, no I/O: the transport feeds bytes into an fl_linebuf and gets
 * whole lines back; fl_rpc_parse() classifies a line; the builders make
 * the reply lines. Caps come from common/limits.h. */
#ifndef FL_JSONRPC_H
#define FL_JSONRPC_H

#include <jansson.h>
#include <stddef.h>

/* JSON-RPC and MCP error codes. */
#define FL_RPC_PARSE_ERROR -32700
#define FL_RPC_INVALID_REQUEST -32600
#define FL_RPC_METHOD_NOT_FOUND -32601
#define FL_RPC_INVALID_PARAMS -32602
#define FL_RPC_INTERNAL_ERROR -32603

/* A line splitter with a cap on one line's length. */
typedef struct fl_linebuf {
  char *buf;
  size_t len, cap;
  size_t head; /* bytes at the front already handed out, dropped at the next feed */
  size_t scan; /* bytes before this offset (and past head) hold no '\n' */
  size_t max_line;
  int overflow; /* set once a line went over max_line; the peer is done */
} fl_linebuf;

void fl_linebuf_init(fl_linebuf *lb, size_t max_line);
void fl_linebuf_free(fl_linebuf *lb);
/* Appends n bytes. Returns 0, or FL_ETOOBIG once the current unfinished line
 * exceeds max_line (then lb->overflow is set and later calls keep failing),
 * or FL_ENOMEM. */
int fl_linebuf_feed(fl_linebuf *lb, const char *data, size_t n);
/* Pops the next whole line (without '\n', and without a trailing '\r').
 * Returns 1 and sets *line (NUL-terminated, new, caller frees with fl_free)
 * and *len; 0 when no whole line is buffered; FL_ENOMEM. Empty lines are
 * skipped. */
int fl_linebuf_next(fl_linebuf *lb, char **line, size_t *len);

/* A parsed message. */
enum fl_rpc_kind { FL_RPC_REQUEST, FL_RPC_NOTIFICATION, FL_RPC_RESPONSE };
typedef struct fl_rpc {
  enum fl_rpc_kind kind;
  json_t *msg;        /* the whole object (owned) */
  json_t *id;         /* borrowed from msg; NULL for notifications */
  const char *method; /* borrowed from msg; NULL for responses */
  json_t *params;     /* borrowed from msg; NULL if absent */
} fl_rpc;

/* Parses one line. Returns 0 and fills *out (free with fl_rpc_free), or a
 * JSON-RPC error code (FL_RPC_PARSE_ERROR for bad JSON, FL_RPC_INVALID_REQUEST
 * for a non-object, a batch array, jsonrpc != "2.0", a method that is not a
 * string, an id that is not a string/integer, params that are not an
 * object/array). On error *err_id is the request id if one could be read
 * (a new reference, or NULL) and *err_msg a static explanation. */
int fl_rpc_parse(const char *line, size_t len, fl_rpc *out, json_t **err_id, const char **err_msg);
void fl_rpc_free(fl_rpc *r);

/* Reply builders. Each returns a new NUL-terminated line ending in '\n'
 * (caller frees with fl_free), or NULL on allocation failure. id is borrowed;
 * NULL id is written as null. result is stolen. data may be NULL (stolen). */
char *fl_rpc_result(json_t *id, json_t *result);
char *fl_rpc_error(json_t *id, int code, const char *message, json_t *data);
/* A notification line; params stolen (may be NULL). */
char *fl_rpc_notification(const char *method, json_t *params);
/* Serialises any JSON value compactly as one line ending in '\n' (stolen). */
char *fl_rpc_line(json_t *v);

#endif
