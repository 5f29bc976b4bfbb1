/* test_tools.c — unit tests for mcp/tools.c and the session's dispatch.
 *
 * First the contract between the code and the schema: every tool
 * schema/tools.json declares (the same embedded copy fleetd serves) has
 * exactly one handler in the tools table, and every handler is declared
 * there, so a tool added on one side only fails here. Then tools/call and
 * the method table through a real session on a real gateway (a temporary
 * state dir, no broker): an unknown tool, bad arguments, a call that is
 * answered at once, a call that is parked and then cancelled, a request
 * before initialize, the MCP counters in fleet/status, fleet/trace by trace
 * id or msgId, and the hints worded for an agent or for fleetctl. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* After the four above: cmocka.h uses them without including them. */
#include <cmocka.h>

#include <sodium.h>
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
#include "mcp/tools.h"
#include "tests/support/test_gw.h"
#include "tests/support/test_util.h"

extern const char fl_schema_tools[];

/* ---- the table against the schema -------------------------------------------- */

static void test_every_declared_tool_has_a_handler(void **state) {
  (void)state;
  json_t *tools = json_loads(fl_schema_tools, 0, NULL);
  assert_true(json_is_array(tools));
  assert_true(json_array_size(tools) > 0);
  size_t n, i;
  const fl_tool *table = fl_tools_table(&n);
  json_t *t;
  json_array_foreach(tools, i, t) {
    const char *name = json_string_value(json_object_get(t, "name"));
    assert_non_null(name);
    int found = 0;
    for (size_t k = 0; k < n; k++)
      found += strcmp(table[k].name, name) == 0;
    if (found != 1)
      fail_msg("schema/tools.json declares %s but the tools table has %d handlers for it", name,
               found);
  }
  json_decref(tools);
}

static void test_every_handler_is_declared(void **state) {
  (void)state;
  json_t *tools = json_loads(fl_schema_tools, 0, NULL);
  assert_true(json_is_array(tools));
  size_t n;
  const fl_tool *table = fl_tools_table(&n);
  assert_true(n > 0);
  for (size_t k = 0; k < n; k++) {
    assert_non_null(table[k].name);
    assert_non_null(table[k].handler);
    int found = 0;
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t) {
      const char *name = json_string_value(json_object_get(t, "name"));
      found += name && strcmp(name, table[k].name) == 0;
    }
    if (found != 1)
      fail_msg("the tools table has a handler for %s but schema/tools.json declares it %d "
               "times",
               table[k].name, found);
  }
  assert_int_equal(n, json_array_size(tools));
  json_decref(tools);
}

/* ---- a session on a real gateway ----------------------------------------------- */

typedef struct env {
  fl_test_gw g;
  fl_mcp_counters *counters;
} env;

typedef struct out {
  json_t *lines; /* every line written, parsed */
} out;

static void capture(void *conn, char *line, size_t len) {
  out *o = conn;
  json_t *v = json_loadb(line, len, 0, NULL);
  assert_non_null(v);
  json_array_append_new(o->lines, v);
  fl_free(line);
}

static const fl_session_io capture_io = {.write = capture};

static int group_setup(void **state) {
  assert_int_equal(fl_test_init(), 0);
  env *e = calloc(1, sizeof *e);
  assert_non_null(e);
  assert_int_equal(fl_test_gw_open(&e->g, "tools"), 0);
  assert_int_equal(fl_mcp_init(), 0);
  e->counters = fl_mcp_counters_new();
  assert_non_null(e->counters);
  *state = e;
  return 0;
}

static int group_teardown(void **state) {
  env *e = *state;
  assert_int_equal(fl_test_gw_close(&e->g), 0);
  fl_mcp_cleanup();
  fl_mcp_counters_free(&e->counters);
  free(e);
  return 0;
}

/* Sends one line and returns the last line written after it (borrowed from
 * o->lines), or NULL when nothing was written. */
static json_t *send_line(env *e, fl_session *s, out *o, const char *line) {
  size_t before = json_array_size(o->lines);
  fl_session_line(s, line, strlen(line));
  uv_run(&e->g.loop, UV_RUN_NOWAIT);
  size_t after = json_array_size(o->lines);
  return after > before ? json_array_get(o->lines, after - 1) : NULL;
}

/* The initialize line of a client called client (its clientInfo.name;
 * NULL: none) acting as name (NULL: anonymous). */
static void init_line(char *line, size_t n, const char *name, const char *client) {
  char info[128] = "", meta[256] = "";
  if (client)
    snprintf(info, sizeof info, "\"clientInfo\":{\"name\":\"%s\",\"version\":\"1\"}%s", client,
             name ? "," : "");
  if (name)
    snprintf(meta, sizeof meta, "\"_meta\":{\"fleet/identity\":{\"name\":\"%s\"}}", name);
  if (!client && !name)
    snprintf(line, n, "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\"}");
  else
    snprintf(line, n, "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{%s%s}}",
             info, meta);
}

static fl_session *session_of(env *e, out *o, const char *name, const char *client) {
  o->lines = json_array();
  fl_session *s = fl_session_new(e->g.gw, e->counters, &capture_io, o);
  assert_non_null(s);
  char line[512];
  init_line(line, sizeof line, name, client);
  json_t *r = send_line(e, s, o, line);
  assert_non_null(r);
  assert_non_null(json_object_get(r, "result"));
  return s;
}

static fl_session *session_as(env *e, out *o, const char *name) {
  return session_of(e, o, name, NULL);
}

static void session_end(fl_session **s, out *o) {
  fl_session_free(s);
  json_decref(o->lines);
  o->lines = NULL;
}

static const char *tool_text(json_t *response) {
  json_t *content = json_object_get(json_object_get(response, "result"), "content");
  return json_string_value(json_object_get(json_array_get(content, 0), "text"));
}

static unsigned long long count_of(env *e, enum fl_mcp_counter c) {
  return fl_mcp_counters_get(e->counters, c);
}

static void test_tools_list_is_the_schema(void **state) {
  env *e = *state;
  out o;
  fl_session *s = session_as(e, &o, NULL);
  json_t *r = send_line(e, s, &o, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}");
  json_t *schema = json_loads(fl_schema_tools, 0, NULL);
  assert_true(json_equal(json_object_get(json_object_get(r, "result"), "tools"), schema));
  json_decref(schema);
  session_end(&s, &o);
}

static void test_unknown_tool_and_bad_arguments(void **state) {
  env *e = *state;
  out o;
  fl_session *s = session_as(e, &o, "tt-args");
  unsigned long long calls = count_of(e, FL_MCP_C_CALLS);
  unsigned long long unknown = count_of(e, FL_MCP_C_CALLS_UNKNOWN_TOOL);
  unsigned long long bad = count_of(e, FL_MCP_C_CALLS_BAD_ARGUMENTS);

  json_t *r = send_line(e, s, &o,
                        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":"
                        "{\"name\":\"fleet_nope\"}}");
  json_t *err = json_object_get(r, "error");
  assert_int_equal(json_integer_value(json_object_get(err, "code")), FL_RPC_INVALID_PARAMS);
  assert_non_null(strstr(json_string_value(json_object_get(err, "message")), "fleet_nope"));
  assert_int_equal(count_of(e, FL_MCP_C_CALLS_UNKNOWN_TOOL), unknown + 1);

  r = send_line(e, s, &o,
                "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":"
                "\"fleet_send\",\"arguments\":{\"to\":\"x\",\"content\":\"y\",\"wait_s\":99}}}");
  assert_true(json_is_true(json_object_get(json_object_get(r, "result"), "isError")));
  assert_non_null(strstr(tool_text(r), "wait_s"));
  assert_int_equal(count_of(e, FL_MCP_C_CALLS_BAD_ARGUMENTS), bad + 1);
  assert_int_equal(count_of(e, FL_MCP_C_CALLS), calls + 2);

  /* params that are not an object are refused before the call counts. */
  r = send_line(e, s, &o,
                "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":[1]}");
  assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "error"), "code")),
                   FL_RPC_INVALID_PARAMS);
  assert_int_equal(count_of(e, FL_MCP_C_CALLS), calls + 2);
  session_end(&s, &o);
}

static void test_answered_and_parked_calls(void **state) {
  env *e = *state;
  out o;
  fl_session *s = session_as(e, &o, "tt-park");
  json_t *r = send_line(e, s, &o,
                        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":"
                        "{\"name\":\"fleet_list\"}}");
  json_t *sc = json_object_get(json_object_get(r, "result"), "structuredContent");
  assert_true(json_is_array(json_object_get(sc, "entities")));
  assert_int_equal(fl_tool_call_parked(s), 0);

  /* A long poll with nothing held parks: no answer yet. */
  size_t before = json_array_size(o.lines);
  send_line(e, s, &o,
            "{\"jsonrpc\":\"2.0\",\"id\":\"p\",\"method\":\"tools/call\",\"params\":{\"name\":"
            "\"fleet_poll\",\"arguments\":{\"wait_s\":30}}}");
  assert_int_equal(json_array_size(o.lines), before);
  assert_int_equal(fl_tool_call_parked(s), 1);
  /* Cancelling another id changes nothing; cancelling it drops it unanswered. */
  send_line(e, s, &o,
            "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":"
            "{\"requestId\":\"q\"}}");
  assert_int_equal(fl_tool_call_parked(s), 1);
  send_line(e, s, &o,
            "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":"
            "{\"requestId\":\"p\"}}");
  assert_int_equal(fl_tool_call_parked(s), 0);
  assert_int_equal(json_array_size(o.lines), before);

  /* A parked poll is answered when a message arrives. */
  send_line(e, s, &o,
            "{\"jsonrpc\":\"2.0\",\"id\":\"p2\",\"method\":\"tools/call\",\"params\":{\"name\":"
            "\"fleet_poll\",\"arguments\":{\"wait_s\":30}}}");
  assert_int_equal(fl_tool_call_parked(s), 1);
  out o2;
  fl_session *s2 = session_as(e, &o2, "tt-sender");
  r = send_line(e, s2, &o2,
                "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":"
                "\"fleet_send\",\"arguments\":{\"to\":\"tt-park\",\"content\":\"hello\"}}}");
  assert_null(json_object_get(json_object_get(r, "result"), "isError"));
  uv_run(&e->g.loop, UV_RUN_NOWAIT);
  assert_int_equal(fl_tool_call_parked(s), 0);
  r = json_array_get(o.lines, json_array_size(o.lines) - 1);
  assert_string_equal(json_string_value(json_object_get(r, "id")), "p2");
  assert_non_null(strstr(tool_text(r), "hello"));

  /* Ending a session with a parked call cancels it: nothing is written. */
  send_line(e, s, &o,
            "{\"jsonrpc\":\"2.0\",\"id\":\"p3\",\"method\":\"tools/call\",\"params\":{\"name\":"
            "\"fleet_poll\",\"arguments\":{\"wait_s\":30}}}");
  assert_int_equal(fl_tool_call_parked(s), 1);
  session_end(&s, &o);
  uv_run(&e->g.loop, UV_RUN_NOWAIT);
  session_end(&s2, &o2);
}

static void test_dispatch_and_counters_in_status(void **state) {
  env *e = *state;
  out o;
  o.lines = json_array();
  fl_session *s = fl_session_new(e->g.gw, e->counters, &capture_io, &o);
  assert_non_null(s);
  unsigned long long invalid = count_of(e, FL_MCP_C_REQUESTS_INVALID);
  unsigned long long unknown = count_of(e, FL_MCP_C_REQUESTS_UNKNOWN_METHOD);
  unsigned long long unparsable = count_of(e, FL_MCP_C_REQUESTS_UNPARSABLE);

  json_t *r = send_line(e, s, &o, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"fleet/status\"}");
  assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "error"), "code")),
                   FL_RPC_INVALID_REQUEST);
  assert_int_equal(count_of(e, FL_MCP_C_REQUESTS_INVALID), invalid + 1);
  r = send_line(e, s, &o, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}");
  assert_true(json_is_object(json_object_get(r, "result")));
  r = send_line(e, s, &o, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"no/such\"}");
  assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "error"), "code")),
                   FL_RPC_METHOD_NOT_FOUND);
  assert_int_equal(count_of(e, FL_MCP_C_REQUESTS_UNKNOWN_METHOD), unknown + 1);
  r = send_line(e, s, &o, "{not json");
  assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "error"), "code")),
                   FL_RPC_PARSE_ERROR);
  assert_int_equal(count_of(e, FL_MCP_C_REQUESTS_UNPARSABLE), unparsable + 1);

  r = send_line(e, s, &o, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"initialize\"}");
  assert_non_null(json_object_get(r, "result"));
  r = send_line(e, s, &o, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"fleet/status\"}");
  json_t *counters = json_object_get(json_object_get(r, "result"), "counters");
  assert_true(json_is_object(counters));
  for (int i = 0; i < FL_MCP_C_COUNT; i++) {
    json_t *v = json_object_get(counters, fl_mcp_counters_name((enum fl_mcp_counter)i));
    assert_true(json_is_integer(v));
    assert_int_equal(json_integer_value(v), count_of(e, (enum fl_mcp_counter)i));
  }
  /* The gateway's own counters are still there. */
  assert_true(json_is_integer(json_object_get(counters, "messages_accepted")));
  session_end(&s, &o);
}

static void test_refused_identity_names_the_fix(void **state) {
  env *e = *state;
  out o, o2;
  fl_session *s = session_as(e, &o, "tt-taken");
  unsigned long long refused = count_of(e, FL_MCP_C_SESSIONS_REFUSED);
  o2.lines = json_array();
  fl_session *s2 = fl_session_new(e->g.gw, e->counters, &capture_io, &o2);
  json_t *r = send_line(e, s2, &o2,
                        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
                        "\"_meta\":{\"fleet/identity\":{\"name\":\"tt-taken\"}}}}");
  const char *msg = json_string_value(json_object_get(json_object_get(r, "error"), "message"));
  assert_non_null(msg);
  assert_non_null(strstr(msg, "tt-taken"));
  /* The fix is named once, whether the gateway or the MCP layer says it. */
  const char *first = strstr(msg, "FLEET_NAME");
  assert_non_null(first);
  assert_null(strstr(first + 1, "FLEET_NAME"));
  assert_int_equal(count_of(e, FL_MCP_C_SESSIONS_REFUSED), refused + 1);
  session_end(&s2, &o2);
  session_end(&s, &o);
}

/* fleet/trace takes a trace id, or an id a remembered line of the flow
 * mentions (a msgId): then it answers that flow's lines and its trace id. */
static void test_trace_by_trace_id_or_msg_id(void **state) {
  env *e = *state;
  out o;
  fl_session *s = session_as(e, &o, NULL);
  static const char trace[] = "7a0c1e52-0d4b-4c39-9a51-3f0e8d7b2c61";
  static const char msg[] = "1b9e4f27-6c3d-4a85-b0e2-5d7f9a1c3e48";
  /* Logged at ERROR so the test's level keeps them. */
  fl_error(trace, "SEND %s from 'a' held for 'b'", msg);
  fl_error(trace, "the flow goes on");
  fl_error("00000000-0000-4000-8000-0000000000ff", "another flow");

  char got[64];
  assert_int_equal(fl_log_trace_of(msg, got, sizeof got), 0);
  assert_string_equal(got, trace);
  assert_int_equal(fl_log_trace_of("no-such-id-anywhere", got, sizeof got), FL_ENOTFOUND);
  assert_int_equal(fl_log_trace_of(msg, got, 8), FL_ETOOBIG);

  for (int by_msg = 0; by_msg < 2; by_msg++) {
    char line[256];
    snprintf(line, sizeof line,
             "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"fleet/trace\",\"params\":"
             "{\"traceId\":\"%s\"}}",
             by_msg ? msg : trace);
    json_t *r = send_line(e, s, &o, line);
    json_t *res = json_object_get(r, "result");
    assert_string_equal(json_string_value(json_object_get(res, "traceId")), trace);
    json_t *lines = json_object_get(res, "lines");
    assert_int_equal(json_array_size(lines), 2);
    assert_non_null(strstr(json_string_value(json_array_get(lines, 0)), msg));
    assert_non_null(strstr(json_string_value(json_array_get(lines, 1)), "the flow goes on"));
  }
  json_t *r = send_line(e, s, &o,
                        "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"fleet/trace\",\"params\":"
                        "{\"traceId\":\"no-such-id-anywhere\"}}");
  json_t *res = json_object_get(r, "result");
  assert_int_equal(json_array_size(json_object_get(res, "lines")), 0);
  assert_string_equal(json_string_value(json_object_get(res, "traceId")), "no-such-id-anywhere");
  session_end(&s, &o);
}

/* The fixes the MCP layer adds are worded for the session's reader: tool
 * names and FLEET_NAME for an agent, commands and --as for fleetctl (which
 * says so in clientInfo.name). */
static void test_hints_follow_the_interface(void **state) {
  env *e = *state;
  static const char *const clients[] = {"some-agent", "fleetctl"};
  for (int cli = 0; cli < 2; cli++) {
    const char *mine = cli ? "fleetctl roster" : "fleet_list";
    const char *other = cli ? "fleet_list" : "fleetctl roster";
    out o;
    char name[32];
    snprintf(name, sizeof name, "tt-hint-%d", cli);
    fl_session *s = session_of(e, &o, name, clients[cli]);
    json_t *r = send_line(e, s, &o,
                          "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{"
                          "\"name\":\"fleet_send\",\"arguments\":{\"to\":\"tt-nobody\","
                          "\"content\":\"x\"}}}");
    const char *text = tool_text(r);
    assert_non_null(text);
    if (!strstr(text, "tt-nobody") || !strstr(text, mine) || strstr(text, other))
      fail_msg("%s: unknown recipient reads: %s", clients[cli], text);
    assert_non_null(strstr(text, mine));
    /* fleet_poll's from: the same hint, and nothing about a recipient. */
    r = send_line(e, s, &o,
                  "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{"
                  "\"name\":\"fleet_poll\",\"arguments\":{\"from\":\"tt-nobody\"}}}");
    text = tool_text(r);
    if (!strstr(text, "tt-nobody") || !strstr(text, mine) || strstr(text, "'to'") ||
        strstr(text, "recipient"))
      fail_msg("%s: unknown sender reads: %s", clients[cli], text);

    /* A name held by a live session: pick another, in this reader's words. */
    out o2;
    o2.lines = json_array();
    fl_session *s2 = fl_session_new(e->g.gw, e->counters, &capture_io, &o2);
    char line[512];
    init_line(line, sizeof line, name, clients[cli]);
    r = send_line(e, s2, &o2, line);
    const char *msg = json_string_value(json_object_get(json_object_get(r, "error"), "message"));
    assert_non_null(msg);
    const char *fix = cli ? "use another --as NAME" : "set another FLEET_NAME";
    if (!strstr(msg, fix) || strstr(msg, cli ? "FLEET_NAME" : "--as"))
      fail_msg("%s: a taken name reads: %s", clients[cli], msg);
    session_end(&s2, &o2);
    session_end(&s, &o);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_declared_tool_has_a_handler),
      cmocka_unit_test(test_every_handler_is_declared),
      cmocka_unit_test(test_tools_list_is_the_schema),
      cmocka_unit_test(test_unknown_tool_and_bad_arguments),
      cmocka_unit_test(test_answered_and_parked_calls),
      cmocka_unit_test(test_dispatch_and_counters_in_status),
      cmocka_unit_test(test_refused_identity_names_the_fix),
      cmocka_unit_test(test_trace_by_trace_id_or_msg_id),
      cmocka_unit_test(test_hints_follow_the_interface),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
