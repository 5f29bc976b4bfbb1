/* jsonrpc.c — newline-delimited JSON-RPC 2.0: the line splitter, the message
 * classifier and the reply builders (see jsonrpc.h).
 *
 * This is the first code that touches bytes from an MCP client, so it trusts
 * nothing: every line has a cap (FL_MAX_LINE, passed in by the transport),
 * every shape check names what was wrong, and nothing here does I/O or
 * blocks. Translation from fleet's codes to JSON-RPC codes happens above
 * this file; here the only codes are JSON-RPC's own.
 *
 * The line buffer keeps unconsumed bytes at the front of one growable block.
 * A feed scans only the bytes it adds (plus, rarely, a bounded look-back, see
 * fl_linebuf_tail), so a long line that arrives in many small reads costs
 * linear time, not quadratic. A pop moves the remaining bytes down once; that
 * is a copy of what one read left buffered, which the read size bounds. Once
 * every buffered line has been handed out the block is freed, so a client
 * between requests costs no buffer. */
#include "mcp/jsonrpc.h"

#include "common/alloc.h"
#include "common/error.h"
#include "common/json_read.h"
#include "common/limits.h"

#include <stdint.h>
#include <string.h>

/* The first allocation: most JSON-RPC lines an agent sends are well under
 * 4 KiB, so one block serves them without a regrow. */
#define FL_LINEBUF_MIN 4096u
/* After a large line is consumed the block shrinks back towards this size, so
 * one 4 MiB message does not pin 4 MiB per client for the life of the
 * connection (FL_MAX_CLIENTS of them would be 4 GiB). */
#define FL_LINEBUF_KEEP (64u * 1024u)

void fl_linebuf_init(fl_linebuf *lb, size_t max_line) {
  if (!lb)
    return;
  memset(lb, 0, sizeof *lb);
  lb->max_line = max_line;
}

void fl_linebuf_free(fl_linebuf *lb) {
  if (!lb)
    return;
  fl_free(lb->buf);
  lb->buf = NULL;
  lb->len = 0;
  lb->head = 0;
  lb->scan = 0;
  lb->cap = 0;
}

/* Whether a line of n bytes whose last byte is `last` is over the cap. A
 * trailing '\r' does not count: it is the CR of a CRLF pair and is stripped
 * on the way out, so an exact-cap line sent with CRLF still fits. */
static int fl_linebuf_over(const fl_linebuf *lb, size_t n, char last) {
  if (n > 0 && last == '\r')
    n--;
  return n > lb->max_line;
}

/* Length of the unfinished line at the end of the buffer. The look-back is
 * bounded: past max_line + 2 bytes (a full line, its CR, one more) the answer
 * is "over the cap" whatever the exact figure, so that is all we scan. A
 * transport that pops every whole line after each feed leaves only the
 * unfinished line buffered, and then this runs at most once, at the moment
 * the line overflows. */
static size_t fl_linebuf_tail(const fl_linebuf *lb) {
  size_t window = lb->max_line < SIZE_MAX - 2 ? lb->max_line + 2 : SIZE_MAX;
  if (window > lb->len)
    window = lb->len;
  const char *from = lb->buf + (lb->len - window);
  const char *nl = memrchr(from, '\n', window);
  return nl ? (size_t)(lb->buf + lb->len - (nl + 1)) : window;
}

/* Gives memory back when a big line has gone through (FL_LINEBUF_KEEP). */
static void fl_linebuf_shrink(fl_linebuf *lb) {
  if (lb->cap > FL_LINEBUF_KEEP && lb->len <= lb->cap / 4) {
    size_t cap = lb->len * 2 > FL_LINEBUF_KEEP ? lb->len * 2 : FL_LINEBUF_KEEP;
    char *nbuf = fl_realloc(lb->buf, cap);
    /* A failed shrink is harmless: the old block is still ours and valid. */
    if (nbuf) {
      lb->buf = nbuf;
      lb->cap = cap;
    }
  }
}

static int fl_linebuf_reserve(fl_linebuf *lb, size_t extra) {
  if (extra > SIZE_MAX - lb->len)
    return FL_ETOOBIG;
  size_t need = lb->len + extra;
  if (need <= lb->cap)
    return 0;
  size_t cap = lb->cap ? lb->cap : FL_LINEBUF_MIN;
  while (cap < need)
    cap = cap <= SIZE_MAX / 2 ? cap * 2 : need;
  char *nbuf = fl_realloc(lb->buf, cap);
  if (!nbuf)
    return FL_ENOMEM;
  lb->buf = nbuf;
  lb->cap = cap;
  return 0;
}

int fl_linebuf_feed(fl_linebuf *lb, const char *data, size_t n) {
  if (!lb || (!data && n))
    return FL_EINVAL;
  if (lb->overflow)
    return FL_ETOOBIG;
  if (n == 0)
    return 0;
  /* Lines handed out since the last feed leave in one move: popping a
   * burst of small lines one by one stays linear in the bytes. */
  if (lb->head) {
    lb->len -= lb->head;
    if (lb->len)
      memmove(lb->buf, lb->buf + lb->head, lb->len);
    lb->scan = lb->scan > lb->head ? lb->scan - lb->head : 0;
    lb->head = 0;
    fl_linebuf_shrink(lb);
  }

  /* Check every line the new bytes finish or start before storing any of
   * them, so an oversize line is refused without growing the buffer for it.
   * The first segment continues the buffered unfinished line; its length is
   * only needed when the total could be over the cap. */
  const char *p = data, *end = data + n;
  int first = 1;
  for (;;) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *seg_end = nl ? nl : end;
    size_t seg = (size_t)(seg_end - p);
    char last = seg ? seg_end[-1] : '\0';
    if (first) {
      if (lb->len > 0 && lb->len + seg > lb->max_line) {
        if (!seg)
          last = lb->buf[lb->len - 1];
        seg += fl_linebuf_tail(lb);
      }
      first = 0;
    }
    if (fl_linebuf_over(lb, seg, last)) {
      lb->overflow = 1;
      return FL_ETOOBIG;
    }
    if (!nl)
      break;
    p = nl + 1;
  }

  int rc = fl_linebuf_reserve(lb, n);
  if (rc < 0)
    return rc;
  memcpy(lb->buf + lb->len, data, n);
  lb->len += n;
  return 0;
}

int fl_linebuf_next(fl_linebuf *lb, char **line, size_t *len) {
  if (!lb || !line || !len)
    return FL_EINVAL;
  *line = NULL;
  *len = 0;

  size_t off = lb->head;
  int rc = 0;
  while (off < lb->len) {
    const char *start = lb->buf + off;
    /* An unfinished line is searched once: each read of a long line scans
     * only the bytes it added, not the whole line again. */
    size_t from = lb->scan > off ? lb->scan : off;
    const char *nl = memchr(lb->buf + from, '\n', lb->len - from);
    if (!nl) {
      lb->scan = lb->len;
      break;
    }
    size_t n = (size_t)(nl - start);
    if (n > 0 && start[n - 1] == '\r')
      n--;
    if (n == 0) {
      /* Empty lines (keep-alives, a stray CRLF) carry nothing: skip them
       * here so every caller does not have to. */
      off = (size_t)(nl + 1 - lb->buf);
      continue;
    }
    char *copy = fl_malloc(n + 1);
    if (!copy) {
      /* Leave the line buffered: the caller may retry once memory frees. */
      rc = FL_ENOMEM;
      goto done;
    }
    memcpy(copy, start, n);
    copy[n] = '\0';
    off = (size_t)(nl + 1 - lb->buf);
    *line = copy;
    *len = n;
    rc = 1;
    goto done;
  }

done:
  lb->head = off;
  if (lb->head == lb->len) {
    /* Nothing left buffered: give the block back. An idle client then holds
     * no buffer at all (a thousand of them would otherwise pin 4 MiB), and
     * the next read takes one block from the allocator, likely the one just
     * freed. */
    lb->head = lb->len = lb->scan = 0;
    fl_free(lb->buf);
    lb->buf = NULL;
    lb->cap = 0;
  }
  return rc;
}

/* Sets *err_msg and returns code; err_msg may be NULL (the caller does not
 * want the text). */
static int fl_rpc_fail(int code, const char *msg, const char **err_msg) {
  if (err_msg)
    *err_msg = msg;
  return code;
}

/* JSON-RPC allows a string, a number or null as id; MCP narrows that to a
 * string or an integer, and a fractional id cannot be echoed back exactly by
 * every client, so those two are all we accept. */
static int fl_rpc_id_ok(const json_t *id) { return json_is_string(id) || json_is_integer(id); }

/* Does the JSON text nest deeper than max? A linear scan that skips
 * strings; it does not validate (the parser does). */
_Static_assert(FL_MAX_JSON_DEPTH == 64, "fl_rpc_parse's message names the depth limit");
_Static_assert(FL_JSON_READ_MAX_DEPTH <= FL_MAX_JSON_DEPTH,
               "a line the one-pass reader reads is never too deep");
static int fl_json_too_deep(const char *s, size_t n, unsigned max) {
  unsigned depth = 0;
  int in_str = 0;
  for (size_t i = 0; i < n; i++) {
    char ch = s[i];
    if (in_str) {
      if (ch == '\\')
        i++;
      else if (ch == '"')
        in_str = 0;
    } else if (ch == '"') {
      in_str = 1;
    } else if (ch == '[' || ch == '{') {
      if (++depth > max)
        return 1;
    } else if ((ch == ']' || ch == '}') && depth) {
      depth--;
    }
  }
  return 0;
}

int fl_rpc_parse(const char *line, size_t len, fl_rpc *out, json_t **err_id, const char **err_msg) {
  if (err_id)
    *err_id = NULL;
  if (err_msg)
    *err_msg = NULL;
  if (!out)
    return fl_rpc_fail(FL_RPC_INTERNAL_ERROR, "internal error: no output for the parser", err_msg);
  memset(out, 0, sizeof *out);
  if (!line)
    return fl_rpc_fail(FL_RPC_PARSE_ERROR, "empty message", err_msg);

  /* Zeroed: jansson sets the error code only for errors it reports, and an
   * allocation that fails before it starts leaves the code byte as it was
   * (json_error_code would read stack garbage, once in a while "NUL"). */
  json_error_t jerr = {0};
  /* JSON_DECODE_ANY so that a bare scalar parses and is refused as "not an
   * object" (Invalid Request, as JSON-RPC says) rather than as bad JSON.
   * Duplicate keys are accepted (last wins), as most JSON parsers do. Without
   * JSON_DISABLE_EOF_CHECK, trailing bytes after the value are an error, and
   * without JSON_ALLOW_NUL a "\u0000" in a string is refused, because every
   * consumer downstream handles strings as C strings. fl_json_loadb's two
   * steps, apart: a line its one pass reads nests no deeper than the limit,
   * so only a line left to jansson, which recurses per level, is first
   * scanned for a hostile depth of thousands of brackets. */
  json_t *msg = fl_json_read_fast(line, len, JSON_DECODE_ANY);
  if (!msg && fl_json_too_deep(line, len, FL_MAX_JSON_DEPTH))
    return fl_rpc_fail(FL_RPC_PARSE_ERROR,
                       "message nests too deep (the limit is 64 levels of arrays and objects)",
                       err_msg);
  if (!msg)
    msg = json_loadb(line, len, JSON_DECODE_ANY, &jerr);
  if (!msg) {
    /* Valid JSON but for a NUL in a string: the caller is waiting for an
     * answer to its id, so it gets one (a second parse that allows NUL,
     * kept only for the id). */
    json_t *nul = json_error_code(&jerr) == json_error_null_character
                      ? fl_json_loadb(line, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr)
                      : NULL;
    json_t *nid = json_is_object(nul) ? json_object_get(nul, "id") : NULL;
    if (nid && fl_rpc_id_ok(nid) && json_is_string(json_object_get(nul, "method"))) {
      if (err_id)
        *err_id = json_incref(nid);
      json_decref(nul);
      return fl_rpc_fail(FL_RPC_INVALID_REQUEST,
                         "a string holds \\u0000 (NUL), which fleet does not accept; remove it",
                         err_msg);
    }
    json_decref(nul);
    return fl_rpc_fail(FL_RPC_PARSE_ERROR,
                       "message is not valid JSON (send one JSON-RPC object per line, UTF-8)",
                       err_msg);
  }

  int code = FL_RPC_INVALID_REQUEST;
  const char *why = NULL;
  json_t *id = NULL;

  if (json_is_array(msg)) {
    why = "batch (array) messages are not supported; send one JSON-RPC object per line";
    goto fail;
  }
  if (!json_is_object(msg)) {
    why = "a JSON-RPC message must be a JSON object";
    goto fail;
  }

  id = json_object_get(msg, "id");
  json_t *ver = json_object_get(msg, "jsonrpc");
  if (!json_is_string(ver) || strcmp(json_string_value(ver), "2.0") != 0) {
    why = "jsonrpc must be \"2.0\"";
    goto fail;
  }
  if (id && !fl_rpc_id_ok(id)) {
    why = "id must be a string or an integer";
    goto fail;
  }

  json_t *method = json_object_get(msg, "method");
  json_t *params = json_object_get(msg, "params");
  if (method) {
    if (!json_is_string(method)) {
      why = "method must be a string";
      goto fail;
    }
    if (params && !json_is_object(params) && !json_is_array(params)) {
      why = "params must be an object or an array";
      goto fail;
    }
    out->kind = id ? FL_RPC_REQUEST : FL_RPC_NOTIFICATION;
    out->method = json_string_value(method);
    out->params = params;
  } else {
    json_t *result = json_object_get(msg, "result");
    json_t *error = json_object_get(msg, "error");
    if (!result && !error) {
      why = "a message needs a method (request or notification) or a result or error (response)";
      goto fail;
    }
    if (result && error) {
      why = "a response carries either result or error, not both";
      goto fail;
    }
    if (!id) {
      why = "a response needs the id of the request it answers";
      goto fail;
    }
    if (error && (!json_is_object(error) || !json_is_integer(json_object_get(error, "code")) ||
                  !json_is_string(json_object_get(error, "message")))) {
      why = "error must be an object with an integer code and a string message";
      goto fail;
    }
    out->kind = FL_RPC_RESPONSE;
  }

  out->msg = msg;
  out->id = id;
  return 0;

fail:
  /* The id goes back only if it is one we could echo; a malformed id is
   * answered with a null id, as JSON-RPC prescribes. */
  if (err_id && id && fl_rpc_id_ok(id))
    *err_id = json_incref(id);
  json_decref(msg);
  return fl_rpc_fail(code, why, err_msg);
}

void fl_rpc_free(fl_rpc *r) {
  if (!r)
    return;
  json_decref(r->msg);
  memset(r, 0, sizeof *r);
}

/* Output sink for json_dump_callback: a buffer from fl_malloc, so the line
 * can be freed with fl_free whatever allocator jansson was given. */
/* What a json_dump_callback_t returns to stop the dump: jansson's contract
 * is 0 to go on and -1 to fail. */
#define FL_RPC_SINK_FAIL (-1)
struct fl_rpc_sink {
  char *buf;
  size_t len, cap;
};

static int fl_rpc_sink_put(const char *data, size_t n, void *arg) {
  struct fl_rpc_sink *s = arg;
  /* +2 keeps room for the '\n' and the NUL that end every line. */
  if (n > SIZE_MAX - 2 - s->len)
    return FL_RPC_SINK_FAIL;
  size_t need = s->len + n + 2;
  if (need > s->cap) {
    size_t cap = s->cap ? s->cap : 256;
    while (cap < need)
      cap = cap <= SIZE_MAX / 2 ? cap * 2 : need;
    char *nbuf = fl_realloc(s->buf, cap);
    if (!nbuf)
      return FL_RPC_SINK_FAIL;
    s->buf = nbuf;
    s->cap = cap;
  }
  memcpy(s->buf + s->len, data, n);
  s->len += n;
  return 0;
}

char *fl_rpc_line(json_t *v) {
  struct fl_rpc_sink s = {NULL, 0, 0};
  char *line = NULL;
  if (!v)
    goto cleanup;
  /* JSON_COMPACT: no pretty-printing newlines, and jansson escapes control
   * characters inside strings, so the only '\n' is the one we add. Objects
   * keep insertion order, which puts "jsonrpc" first. */
  if (json_dump_callback(v, fl_rpc_sink_put, &s, JSON_COMPACT | JSON_ENCODE_ANY) != 0)
    goto cleanup;
  if (!s.buf) /* jansson wrote nothing: not a value we can send */
    goto cleanup;
  s.buf[s.len] = '\n';
  s.buf[s.len + 1] = '\0';
  line = s.buf;
  s.buf = NULL;

cleanup:
  fl_free(s.buf);
  json_decref(v);
  return line;
}

/* A new {"jsonrpc":"2.0"} object, the start of every line we write. */
static json_t *fl_rpc_envelope(void) {
  json_t *o = json_object();
  if (o && json_object_set_new(o, "jsonrpc", json_string("2.0")) != 0) {
    json_decref(o);
    return NULL;
  }
  return o;
}

/* id is borrowed; NULL is written as null (a reply to an unreadable id). */
static int fl_rpc_set_id(json_t *o, json_t *id) {
  return json_object_set_new(o, "id", id ? json_incref(id) : json_null());
}

char *fl_rpc_result(json_t *id, json_t *result) {
  json_t *o = NULL, *r = NULL;
  if (!result)
    goto fail;
  o = fl_rpc_envelope();
  if (!o || fl_rpc_set_id(o, id) != 0)
    goto fail;
  /* json_object_set_new consumes its value even when it fails, so the
   * reference is handed over before the call. */
  r = result;
  result = NULL;
  if (json_object_set_new(o, "result", r) != 0)
    goto fail;
  return fl_rpc_line(o);

fail:
  json_decref(result);
  json_decref(o);
  return NULL;
}

/* The standard text for a code, for callers that pass no message (JSON-RPC
 * requires one) or one that is not valid UTF-8. */
static const char *fl_rpc_default_message(int code) {
  switch (code) {
  case FL_RPC_PARSE_ERROR:
    return "Parse error";
  case FL_RPC_INVALID_REQUEST:
    return "Invalid Request";
  case FL_RPC_METHOD_NOT_FOUND:
    return "Method not found";
  case FL_RPC_INVALID_PARAMS:
    return "Invalid params";
  case FL_RPC_INTERNAL_ERROR:
    return "Internal error";
  default:
    return "Server error";
  }
}

char *fl_rpc_error(json_t *id, int code, const char *message, json_t *data) {
  json_t *o = NULL, *err = NULL, *text = NULL, *d = NULL, *e = NULL;
  err = json_object();
  if (!err || json_object_set_new(err, "code", json_integer(code)) != 0)
    goto fail;
  text = message ? json_string(message) : NULL;
  if (!text)
    text = json_string(fl_rpc_default_message(code));
  /* A NULL text (no memory) makes set_new fail; nothing to free then. */
  if (json_object_set_new(err, "message", text) != 0)
    goto fail;
  if (data) {
    d = data;
    data = NULL;
    if (json_object_set_new(err, "data", d) != 0)
      goto fail;
  }
  o = fl_rpc_envelope();
  if (!o || fl_rpc_set_id(o, id) != 0)
    goto fail;
  e = err;
  err = NULL;
  if (json_object_set_new(o, "error", e) != 0)
    goto fail;
  return fl_rpc_line(o);

fail:
  json_decref(data);
  json_decref(err);
  json_decref(o);
  return NULL;
}

char *fl_rpc_notification(const char *method, json_t *params) {
  json_t *o = NULL, *p = NULL;
  if (!method)
    goto fail;
  o = fl_rpc_envelope();
  if (!o || json_object_set_new(o, "method", json_string(method)) != 0)
    goto fail;
  if (params) {
    p = params;
    params = NULL;
    if (json_object_set_new(o, "params", p) != 0)
      goto fail;
  }
  return fl_rpc_line(o);

fail:
  json_decref(params);
  json_decref(o);
  return NULL;
}
