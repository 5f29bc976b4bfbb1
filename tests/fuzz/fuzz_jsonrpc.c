/* fuzz_jsonrpc.c — fuzz target for what fleetd reads from a client socket.
 *
 * The input is a byte stream as a client would send it. It goes through the
 * line framer (with a small cap, so overflow is reached) and each line into
 * a real MCP session (fl_session_line) on a real gateway: one fl_gw, made
 * once on a private uv loop with a temporary state dir and no broker, and
 * torn down at exit. Unless the input brings its own initialize, the session
 * is initialized first as a named agent, so tool calls reach the gateway.
 * After every line the loop runs once (UV_RUN_NOWAIT) and the invariants are
 * checked:
 *   - every line written is one JSON-RPC 2.0 object ending in one '\n': a
 *     response (an id, and exactly one of result / error{code, message}) or
 *     a notification (a method, no id);
 *   - a line that is not JSON gets a parse error (-32700), any other line
 *     fl_rpc_parse refuses gets exactly one error with its code;
 *   - every request gets exactly one response, now or later; one not yet
 *     answered must be parked on the session (fl_tool_call_parked);
 *   - nothing is written after the session is freed (freeing cancels what
 *     is parked), and nothing leaks (the ASan build checks).
 * Each tool's input schema is also run directly on every request's params.
 * Built as a libFuzzer target with -DFLEET_FUZZ=ON (clang), and always as a
 * replay test that runs the seed corpus plus deterministic mutations. */
#include <sodium.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/log.h"
#include "gateway/gw.h"
#include "mcp/counters.h"
#include "mcp/jsonrpc.h"
#include "mcp/mcp.h"
#include "mcp/schema_check.h"
#include "mcp/tools.h"
#include "tests/support/test_gw.h"
#include "tests/support/test_util.h"

extern const char fl_schema_tools[];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The framer's cap here: small, so mutations reach the oversize path. */
#define FZ_MAX_LINE 4096
/* Requests owed a response at once in one input; more is a harness limit,
 * not a finding (inputs are at most 64 KiB, so this is rarely reached). */
#define FZ_MAX_OWED 512

/* The initialize sent first when the input has none of its own. */
static const char fz_init_line[] =
    "{\"jsonrpc\":\"2.0\",\"id\":\"fz-init\",\"method\":\"initialize\",\"params\":{"
    "\"protocolVersion\":\"2025-11-25\",\"_meta\":{\"fleet/identity\":{\"name\":\"fuzz\","
    "\"role\":\"worker\",\"groups\":[\"fz\"]}}}}";

#define FZ_CHECK(cond, what, line)                                                                 \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "fuzz_jsonrpc: invariant broken: %s\n  line: %.300s\n", what,                \
              (line) ? (line) : "(none)");                                                         \
      abort();                                                                                     \
    }                                                                                              \
  } while (0)

/* ---- the one gateway ----------------------------------------------------------- */

static struct {
  int ready;
  fl_test_gw g;
  fl_mcp_counters *counters;
  json_t *tools;
} fz;

static void fz_teardown(void) {
  fl_test_gw_close(&fz.g);
  fl_mcp_cleanup();
  fl_mcp_counters_free(&fz.counters);
  json_decref(fz.tools);
}

static void fz_setup_once(void) {
  if (fz.ready)
    return;
  /* fl_test_init quiets the log: refused sessions and bad calls by the
   * thousand are noise. */
  if (fl_test_init() != 0 || fl_test_gw_open(&fz.g, "fuzz-jsonrpc") != 0 || fl_mcp_init() != 0) {
    fprintf(stderr, "fuzz_jsonrpc: setup failed\n");
    abort();
  }
  fz.counters = fl_mcp_counters_new();
  fz.tools = json_loads(fl_schema_tools, 0, NULL);
  FZ_CHECK(fz.counters && json_is_array(fz.tools), "setup", NULL);
  atexit(fz_teardown);
  fz.ready = 1;
}

/* ---- one session's output ----------------------------------------------------- */

typedef struct fz_conn {
  char **lines;
  size_t n, cap;
  int freed; /* the session is gone: any write now is a bug */
} fz_conn;

static void fz_write(void *conn, char *line, size_t len) {
  fz_conn *c = conn;
  FZ_CHECK(!c->freed, "a write after the session was freed", line);
  FZ_CHECK(len > 0 && strlen(line) == len && line[len - 1] == '\n' &&
               memchr(line, '\n', len) == line + len - 1,
           "a written line is one line ending in one '\\n'", line);
  if (c->n == c->cap) {
    size_t cap = c->cap ? c->cap * 2 : 16;
    char **nl = realloc(c->lines, cap * sizeof *nl);
    FZ_CHECK(nl != NULL, "harness out of memory", NULL);
    c->lines = nl;
    c->cap = cap;
  }
  c->lines[c->n++] = line;
}

static const fl_session_io fz_io = {.write = fz_write};

static void fz_conn_free(fz_conn *c) {
  for (size_t i = 0; i < c->n; i++)
    fl_free(c->lines[i]);
  free(c->lines);
}

/* ---- what the session owes ---------------------------------------------------- */

typedef struct fz_owed {
  json_t *ids[FZ_MAX_OWED]; /* request ids not answered yet (a multiset) */
  size_t n;
} fz_owed;

static int fz_owed_take(fz_owed *o, json_t *id) {
  for (size_t i = 0; i < o->n; i++) {
    if (json_equal(o->ids[i], id)) {
      json_decref(o->ids[i]);
      o->ids[i] = o->ids[--o->n];
      return 1;
    }
  }
  return 0;
}

static void fz_owed_clear(fz_owed *o) {
  while (o->n)
    json_decref(o->ids[--o->n]);
}

/* Parses one written line and checks it is JSON-RPC 2.0. Returns it (new
 * reference). */
static json_t *fz_check_written(const char *line) {
  json_t *v = json_loads(line, 0, NULL);
  FZ_CHECK(json_is_object(v), "a written line is a JSON object", line);
  json_t *ver = json_object_get(v, "jsonrpc");
  FZ_CHECK(json_is_string(ver) && strcmp(json_string_value(ver), "2.0") == 0,
           "a written line says jsonrpc 2.0", line);
  if (json_object_get(v, "method")) {
    FZ_CHECK(json_is_string(json_object_get(v, "method")) && !json_object_get(v, "id"),
             "a notification has a string method and no id", line);
    return v;
  }
  json_t *id = json_object_get(v, "id");
  FZ_CHECK(json_is_string(id) || json_is_integer(id) || json_is_null(id),
           "a response has a string, integer or null id", line);
  json_t *result = json_object_get(v, "result"), *error = json_object_get(v, "error");
  FZ_CHECK(!result != !error, "a response has exactly one of result and error", line);
  if (error)
    FZ_CHECK(json_is_object(error) && json_is_integer(json_object_get(error, "code")) &&
                 json_is_string(json_object_get(error, "message")),
             "an error has an integer code and a string message", line);
  return v;
}

/* Checks the lines written since `from`: each answers an owed request, or
 * is the one error expected for this line (want_code != 0, with want_id or
 * a null id). */
static void fz_check_since(fz_conn *c, size_t from, fz_owed *o, int want_code, json_t *want_id,
                           const char *input) {
  int got_error = 0;
  for (size_t i = from; i < c->n; i++) {
    json_t *v = fz_check_written(c->lines[i]);
    if (json_object_get(v, "method")) {
      json_decref(v);
      continue;
    }
    json_t *id = json_object_get(v, "id");
    json_t *code = json_object_get(json_object_get(v, "error"), "code");
    if (want_code && !got_error && json_integer_value(code) == want_code &&
        (want_id ? json_equal(id, want_id) : json_is_null(id))) {
      got_error = 1;
    } else {
      FZ_CHECK(fz_owed_take(o, id), "a response answers a request that is owed one", c->lines[i]);
    }
    json_decref(v);
  }
  FZ_CHECK(!want_code || got_error, "a refused line gets exactly one error", input);
}

/* Feeds one line to the session and checks what comes back. */
static void fz_line(fl_session *s, fz_conn *c, fz_owed *o, const char *line, size_t len) {
  fl_rpc rpc;
  json_t *err_id = NULL;
  const char *err_msg = NULL;
  json_t *cancelled = NULL; /* the requestId of a notifications/cancelled */
  int prc = fl_rpc_parse(line, len, &rpc, &err_id, &err_msg);
  json_t *plain = json_loadb(line, len, JSON_DECODE_ANY, NULL);
  /* ... unless it is JSON but for a NUL in a string: a request then gets
   * its id back (Invalid Request), so its caller is not left waiting. */
  json_t *nul = plain ? NULL : json_loadb(line, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
  FZ_CHECK(plain || prc == FL_RPC_PARSE_ERROR || (nul && prc == FL_RPC_INVALID_REQUEST && err_id),
           "a line that is not JSON is a parse error", line);
  json_decref(nul);
  json_decref(plain);
  if (prc == 0) {
    if (rpc.kind == FL_RPC_REQUEST) {
      if (o->n == FZ_MAX_OWED) { /* past the harness's bookkeeping: skip the line */
        fl_rpc_free(&rpc);
        return;
      }
      o->ids[o->n++] = json_incref(rpc.id);
    } else if (rpc.kind == FL_RPC_NOTIFICATION &&
               strcmp(rpc.method, "notifications/cancelled") == 0) {
      cancelled = json_incref(json_object_get(rpc.params, "requestId"));
    }
    size_t i;
    json_t *t;
    char err[256];
    json_array_foreach(fz.tools, i, t) {
      fl_schema_check(rpc.params ? rpc.params : json_null(), json_object_get(t, "inputSchema"), "",
                      err, sizeof err);
    }
    fl_rpc_free(&rpc);
  }
  size_t from = c->n;
  fl_session_line(s, line, len);
  uv_run(&fz.g.loop, UV_RUN_NOWAIT);
  fz_check_since(c, from, o, prc, err_id, line);
  json_decref(err_id);
  /* A cancelled call is owed nothing any more: it is dropped unanswered. */
  if (cancelled && o->n != fl_tool_call_parked(s))
    FZ_CHECK(fz_owed_take(o, cancelled), "only the call named by requestId is dropped", line);
  json_decref(cancelled);
  FZ_CHECK(o->n == fl_tool_call_parked(s), "every request not answered yet is parked", line);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fz_setup_once();
  fz_conn c = {0};
  static fz_owed owed;
  fl_session *s = fl_session_new(fz.g.gw, fz.counters, &fz_io, &c);
  FZ_CHECK(s != NULL, "a session", NULL);
  if (!memmem(data, size, "\"initialize\"", 12))
    fz_line(s, &c, &owed, fz_init_line, strlen(fz_init_line));

  fl_linebuf lb;
  fl_linebuf_init(&lb, FZ_MAX_LINE);
  /* Feed in two uneven pieces: framing must not depend on read sizes. */
  size_t cut = size ? data[0] % (size + 1) : 0;
  int rc = fl_linebuf_feed(&lb, (const char *)data, cut);
  if (rc == 0)
    rc = fl_linebuf_feed(&lb, (const char *)data + cut, size - cut);
  char *line;
  size_t len;
  /* As the transport does: lines complete before an overflow are served. */
  while (fl_linebuf_next(&lb, &line, &len) == 1) {
    fz_line(s, &c, &owed, line, len);
    fl_free(line);
  }
  if (rc == FL_ETOOBIG) {
    size_t from = c.n;
    fl_session_oversize(s);
    fz_check_since(&c, from, &owed, FL_RPC_INVALID_REQUEST, NULL, "(oversize)");
  }
  fl_linebuf_free(&lb);

  fl_session_free(&s);
  c.freed = 1;
  uv_run(&fz.g.loop, UV_RUN_NOWAIT);
  fz_owed_clear(&owed);
  fz_conn_free(&c);
  return 0;
}
