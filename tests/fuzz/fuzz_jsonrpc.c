/* fuzz_jsonrpc.c — fuzz target for what fleetd reads from a client socket.
 *
 * The input is a byte stream as a client would send it: it goes through the
 * line framer (with a small cap, so overflow is reached), each line through
 * the JSON-RPC parser, each request's params through the tool-argument
 * checker against every embedded tool schema, and a reply is built for each.
 * Built as a libFuzzer target with -DFLEET_FUZZ=ON (clang), and always as a
 * replay test that runs the seed corpus plus deterministic mutations. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/alloc.h"
#include "mcp/jsonrpc.h"
#include "mcp/mcp.h"
#include "mcp/schema_check.h"

extern const char fl_schema_tools[];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static json_t *tools;
  if (!tools) {
    fl_alloc_init();
    tools = json_loads(fl_schema_tools, 0, NULL);
  }
  fl_linebuf lb;
  fl_linebuf_init(&lb, 4096);
  /* Feed in two uneven pieces: framing must not depend on read sizes. */
  size_t cut = size ? data[0] % (size + 1) : 0;
  int rc = fl_linebuf_feed(&lb, (const char *)data, cut);
  if (rc == 0)
    rc = fl_linebuf_feed(&lb, (const char *)data + cut, size - cut);
  char *line;
  size_t len;
  while (fl_linebuf_next(&lb, &line, &len) == 1) {
    fl_rpc rpc;
    json_t *err_id = NULL;
    const char *err_msg = NULL;
    char *out;
    if (fl_rpc_parse(line, len, &rpc, &err_id, &err_msg) == 0) {
      size_t i;
      json_t *t;
      char err[256];
      json_array_foreach(tools, i, t) {
        fl_schema_check(rpc.params ? rpc.params : json_null(),
                        json_object_get(t, "inputSchema"), "", err, sizeof err);
      }
      out = fl_rpc_result(rpc.id, json_object());
      fl_rpc_free(&rpc);
    } else {
      out = fl_rpc_error(err_id, FL_RPC_INVALID_REQUEST, err_msg ? err_msg : "x", NULL);
      json_decref(err_id);
    }
    fl_free(out);
    fl_free(line);
  }
  fl_linebuf_free(&lb);
  (void)rc;
  return 0;
}
