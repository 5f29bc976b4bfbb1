/* test_jsonrpc.c — unit tests for mcp/jsonrpc.c.
 *
 * Covers the three jobs of the module: splitting a byte stream into lines
 * under a cap (partial reads, CRLF, empty lines, the exact cap and one past
 * it), classifying a line as request, notification or response with the
 * right JSON-RPC error for each malformed shape, and building reply lines
 * that are one compact JSON object and exactly one '\n'. Allocation failure
 * is injected through fl_alloc_fail_after() so the OOM paths run under ASan
 * too. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* After the four above: cmocka.h uses them without including them. */
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/limits.h"
#include "mcp/jsonrpc.h"

static int setup(void **state) {
  (void)state;
  fl_alloc_init();
  return 0;
}

/* Pops one line and checks it equals want. */
static void expect_line(fl_linebuf *lb, const char *want) {
  char *line = NULL;
  size_t len = 0;
  assert_int_equal(fl_linebuf_next(lb, &line, &len), 1);
  assert_non_null(line);
  assert_int_equal(len, strlen(want));
  assert_string_equal(line, want);
  fl_free(line);
}

static void expect_no_line(fl_linebuf *lb) {
  char *line = (char *)"sentinel";
  size_t len = 99;
  assert_int_equal(fl_linebuf_next(lb, &line, &len), 0);
  assert_null(line);
  assert_int_equal(len, 0);
}

static int feed_str(fl_linebuf *lb, const char *s) { return fl_linebuf_feed(lb, s, strlen(s)); }

/* ---- fl_linebuf ---- */

static void test_linebuf_partial_feeds(void **state) {
  (void)state;
  fl_linebuf lb;
  fl_linebuf_init(&lb, 1024);
  expect_no_line(&lb);
  assert_int_equal(feed_str(&lb, "{\"jsonrpc\""), 0);
  expect_no_line(&lb);
  assert_int_equal(feed_str(&lb, ":\"2.0\"}"), 0);
  expect_no_line(&lb);
  assert_int_equal(feed_str(&lb, "\n{\"a\":"), 0);
  expect_line(&lb, "{\"jsonrpc\":\"2.0\"}");
  expect_no_line(&lb);
  /* One byte at a time. */
  const char *rest = "1}\n";
  for (size_t i = 0; rest[i]; i++)
    assert_int_equal(fl_linebuf_feed(&lb, rest + i, 1), 0);
  expect_line(&lb, "{\"a\":1}");
  expect_no_line(&lb);
  assert_int_equal(lb.len, 0);
  fl_linebuf_free(&lb);
  assert_null(lb.buf);
}

/* A long unfinished line is searched for its newline once: after a miss the
 * next search starts where the last one stopped, also across the move that
 * drops handed-out lines at the next feed. */
static void test_linebuf_scans_once(void **state) {
  (void)state;
  fl_linebuf lb;
  fl_linebuf_init(&lb, 1024);
  assert_int_equal(feed_str(&lb, "{\"a\":1}\n{\"b\""), 0);
  expect_line(&lb, "{\"a\":1}");
  expect_no_line(&lb);
  assert_int_equal(lb.scan, lb.len);
  assert_int_equal(feed_str(&lb, ":2"), 0);
  assert_int_equal(lb.scan, 4); /* the dropped line moved the mark down with the bytes */
  expect_no_line(&lb);
  assert_int_equal(lb.scan, lb.len);
  assert_int_equal(feed_str(&lb, "}\n{\"c\":3}\n"), 0);
  expect_line(&lb, "{\"b\":2}");
  expect_line(&lb, "{\"c\":3}");
  expect_no_line(&lb);
  assert_int_equal(lb.scan, 0);
  fl_linebuf_free(&lb);
}

static void test_linebuf_crlf(void **state) {
  (void)state;
  fl_linebuf lb;
  fl_linebuf_init(&lb, 1024);
  assert_int_equal(feed_str(&lb, "one\r\ntwo\r"), 0);
  expect_line(&lb, "one");
  expect_no_line(&lb);
  assert_int_equal(feed_str(&lb, "\nthree\n"), 0);
  expect_line(&lb, "two");
  expect_line(&lb, "three");
  /* Only a trailing CR is stripped; one inside the line stays. */
  assert_int_equal(feed_str(&lb, "a\rb\n"), 0);
  expect_line(&lb, "a\rb");
  fl_linebuf_free(&lb);
}

static void test_linebuf_empty_lines_skipped(void **state) {
  (void)state;
  fl_linebuf lb;
  fl_linebuf_init(&lb, 1024);
  assert_int_equal(feed_str(&lb, "\n\r\n\n"), 0);
  expect_no_line(&lb);
  assert_int_equal(lb.len, 0); /* the skipped lines were consumed */
  assert_int_equal(feed_str(&lb, "\nx\n\n\r\ny\n\n"), 0);
  expect_line(&lb, "x");
  expect_line(&lb, "y");
  expect_no_line(&lb);
  fl_linebuf_free(&lb);
}

static void test_linebuf_many_lines_one_feed(void **state) {
  (void)state;
  enum { N = 5000 };
  size_t cap = (size_t)N * 16;
  char *big = malloc(cap);
  assert_non_null(big);
  size_t off = 0;
  for (int i = 0; i < N; i++)
    off += (size_t)snprintf(big + off, cap - off, "line-%d\n", i);
  fl_linebuf lb;
  fl_linebuf_init(&lb, 64);
  assert_int_equal(fl_linebuf_feed(&lb, big, off), 0);
  char want[32];
  for (int i = 0; i < N; i++) {
    snprintf(want, sizeof want, "line-%d", i);
    expect_line(&lb, want);
  }
  expect_no_line(&lb);
  fl_linebuf_free(&lb);
  free(big);
}

static void test_linebuf_oversize_single_feed(void **state) {
  (void)state;
  fl_linebuf lb;
  fl_linebuf_init(&lb, 8);
  assert_int_equal(feed_str(&lb, "ok\n"), 0);
  /* A complete line over the cap fails even though it ends in '\n'. */
  assert_int_equal(feed_str(&lb, "fine\n123456789\nafter\n"), FL_ETOOBIG);
  assert_true(lb.overflow);
  /* Nothing of the failed feed was stored; the earlier line still pops. */
  expect_line(&lb, "ok");
  expect_no_line(&lb);
  /* And the buffer stays failed, even for harmless input. */
  assert_int_equal(feed_str(&lb, "a\n"), FL_ETOOBIG);
  assert_int_equal(fl_linebuf_feed(&lb, "", 0), FL_ETOOBIG);
  expect_no_line(&lb);
  fl_linebuf_free(&lb);
}

static void test_linebuf_oversize_across_feeds(void **state) {
  (void)state;
  fl_linebuf lb;
  fl_linebuf_init(&lb, 8);
  assert_int_equal(feed_str(&lb, "1234"), 0);
  assert_int_equal(feed_str(&lb, "5678"), 0); /* exactly at the cap, unfinished */
  assert_false(lb.overflow);
  assert_int_equal(feed_str(&lb, "9"), FL_ETOOBIG);
  assert_true(lb.overflow);
  assert_int_equal(feed_str(&lb, "\n"), FL_ETOOBIG);
  expect_no_line(&lb);
  fl_linebuf_free(&lb);

  /* The unfinished line is measured from the last '\n', not from the start
   * of the buffer: complete lines still buffered do not count. */
  fl_linebuf_init(&lb, 8);
  assert_int_equal(feed_str(&lb, "aaaaaaaa\nbbbbbbbb\ncccc"), 0);
  assert_int_equal(feed_str(&lb, "cccc"), 0);
  assert_int_equal(feed_str(&lb, "\n"), 0);
  assert_int_equal(feed_str(&lb, "dddddddd"), 0);
  assert_int_equal(feed_str(&lb, "d"), FL_ETOOBIG);
  fl_linebuf_free(&lb);
}

static void test_linebuf_exact_cap(void **state) {
  (void)state;
  fl_linebuf lb;
  fl_linebuf_init(&lb, 8);
  assert_int_equal(feed_str(&lb, "12345678\n"), 0);
  expect_line(&lb, "12345678");
  /* The CR of a CRLF does not count against the cap, even split off. */
  assert_int_equal(feed_str(&lb, "abcdefgh\r\n"), 0);
  expect_line(&lb, "abcdefgh");
  assert_int_equal(feed_str(&lb, "ABCDEFGH\r"), 0);
  assert_int_equal(feed_str(&lb, "\n"), 0);
  expect_line(&lb, "ABCDEFGH");
  /* But a CR followed by more bytes is part of the line. */
  assert_int_equal(feed_str(&lb, "ABCDEFGH\r"), 0);
  assert_int_equal(feed_str(&lb, "x"), FL_ETOOBIG);
  fl_linebuf_free(&lb);
}

static void test_linebuf_big_line_gives_memory_back(void **state) {
  (void)state;
  size_t n = 1024 * 1024;
  char *big = malloc(n + 1);
  assert_non_null(big);
  memset(big, 'x', n);
  big[n] = '\n';
  fl_linebuf lb;
  fl_linebuf_init(&lb, n);
  /* In 4 KiB pieces, as a socket would deliver it. */
  for (size_t off = 0; off <= n; off += 4096) {
    size_t k = n + 1 - off < 4096 ? n + 1 - off : 4096;
    assert_int_equal(fl_linebuf_feed(&lb, big + off, k), 0);
  }
  char *line = NULL;
  size_t len = 0;
  assert_int_equal(fl_linebuf_next(&lb, &line, &len), 1);
  assert_int_equal(len, n);
  assert_memory_equal(line, big, n);
  fl_free(line);
  assert_true(lb.cap <= 64 * 1024);
  fl_linebuf_free(&lb);
  free(big);
}

/* A client between requests holds no buffer: once every whole line is
 * popped the block is freed; a line still unfinished keeps it. */
static void test_linebuf_idle_holds_nothing(void **state) {
  (void)state;
  fl_linebuf lb;
  fl_linebuf_init(&lb, 1024);
  char *line = NULL;
  size_t len = 0;
  const char *first = "{\"a\":1}\n{\"b\"";
  assert_int_equal(fl_linebuf_feed(&lb, first, strlen(first)), 0);
  assert_int_equal(fl_linebuf_next(&lb, &line, &len), 1);
  assert_string_equal(line, "{\"a\":1}");
  fl_free(line);
  assert_int_equal(fl_linebuf_next(&lb, &line, &len), 0);
  assert_non_null(lb.buf); /* {"b" is still on its way */
  assert_int_equal(fl_linebuf_feed(&lb, ":2}\n", 4), 0);
  assert_int_equal(fl_linebuf_next(&lb, &line, &len), 1);
  assert_string_equal(line, "{\"b\":2}");
  fl_free(line);
  assert_null(lb.buf);
  assert_int_equal(lb.cap, 0);
  assert_int_equal(fl_linebuf_feed(&lb, "{}\n", 3), 0); /* and it works again */
  assert_int_equal(fl_linebuf_next(&lb, &line, &len), 1);
  assert_string_equal(line, "{}");
  fl_free(line);
  assert_null(lb.buf);
  fl_linebuf_free(&lb);
}

static void test_linebuf_bad_args_and_oom(void **state) {
  (void)state;
  fl_linebuf lb;
  fl_linebuf_init(&lb, 64);
  assert_int_equal(fl_linebuf_feed(&lb, NULL, 3), FL_EINVAL);
  assert_int_equal(fl_linebuf_feed(&lb, NULL, 0), 0);
  assert_int_equal(fl_linebuf_feed(NULL, "a", 1), FL_EINVAL);
  assert_int_equal(fl_linebuf_next(&lb, NULL, NULL), FL_EINVAL);

  fl_alloc_fail_after(0);
  assert_int_equal(feed_str(&lb, "abc\n"), FL_ENOMEM);
  assert_false(lb.overflow);
  assert_int_equal(feed_str(&lb, "abc\n"), 0);

  char *line = NULL;
  size_t len = 0;
  fl_alloc_fail_after(0);
  assert_int_equal(fl_linebuf_next(&lb, &line, &len), FL_ENOMEM);
  assert_null(line);
  expect_line(&lb, "abc"); /* still there after the failed pop */
  fl_alloc_fail_after(-1);
  fl_linebuf_free(&lb);
  fl_linebuf_free(&lb); /* twice is harmless */
  fl_linebuf_free(NULL);
}

/* ---- fl_rpc_parse ---- */

static int parse(const char *s, fl_rpc *r, json_t **err_id, const char **err_msg) {
  return fl_rpc_parse(s, strlen(s), r, err_id, err_msg);
}

static void test_parse_request(void **state) {
  (void)state;
  fl_rpc r;
  json_t *eid = NULL;
  const char *emsg = NULL;
  assert_int_equal(parse("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\","
                         "\"params\":{\"name\":\"fleet_list\"}}",
                         &r, &eid, &emsg),
                   0);
  assert_null(eid);
  assert_null(emsg);
  assert_int_equal(r.kind, FL_RPC_REQUEST);
  assert_string_equal(r.method, "tools/call");
  assert_true(json_is_integer(r.id));
  assert_int_equal(json_integer_value(r.id), 7);
  assert_true(json_is_object(r.params));
  assert_string_equal(json_string_value(json_object_get(r.params, "name")), "fleet_list");
  fl_rpc_free(&r);
  assert_null(r.msg);
  fl_rpc_free(&r); /* twice is harmless */
  fl_rpc_free(NULL);

  /* A string id, array params, and no params at all. */
  assert_int_equal(parse("{\"jsonrpc\":\"2.0\",\"id\":\"req-1\",\"method\":\"m\",\"params\":[1,2]}",
                         &r, &eid, &emsg),
                   0);
  assert_int_equal(r.kind, FL_RPC_REQUEST);
  assert_string_equal(json_string_value(r.id), "req-1");
  assert_true(json_is_array(r.params));
  fl_rpc_free(&r);
  assert_int_equal(parse("{\"method\":\"ping\",\"id\":0,\"jsonrpc\":\"2.0\"}", &r, &eid, &emsg), 0);
  assert_int_equal(r.kind, FL_RPC_REQUEST);
  assert_int_equal(json_integer_value(r.id), 0);
  assert_null(r.params);
  fl_rpc_free(&r);
}

/* A NUL in a string is refused, but with the request's id, so the caller
 * gets its answer instead of waiting for one. */
static void test_parse_nul_keeps_id(void **state) {
  (void)state;
  fl_rpc r;
  json_t *eid = NULL;
  const char *emsg = NULL;
  assert_int_equal(parse("{\"jsonrpc\":\"2.0\",\"id\":42,\"method\":\"tools/call\","
                         "\"params\":{\"name\":\"fleet_send\",\"arguments\":{\"to\":\"a\","
                         "\"content\":\"x\\u0000y\"}}}",
                         &r, &eid, &emsg),
                   FL_RPC_INVALID_REQUEST);
  assert_non_null(eid);
  assert_int_equal(json_integer_value(eid), 42);
  assert_non_null(strstr(emsg, "u0000"));
  json_decref(eid);
  eid = NULL;
  /* A string id comes back too; a notification has none to give. */
  assert_int_equal(
      parse("{\"jsonrpc\":\"2.0\",\"id\":\"r-\\u0000\",\"method\":\"m\"}", &r, &eid, &emsg),
      FL_RPC_INVALID_REQUEST);
  assert_non_null(eid);
  assert_int_equal(json_string_length(eid), 3);
  json_decref(eid);
  eid = NULL;
  assert_int_equal(
      parse("{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":[\"\\u0000\"]}", &r, &eid, &emsg),
      FL_RPC_PARSE_ERROR);
  assert_null(eid);
  /* Not JSON at all stays a parse error with no id. */
  assert_int_equal(parse("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\\u0000\"", &r, &eid, &emsg),
                   FL_RPC_PARSE_ERROR);
  assert_null(eid);
}

static void test_parse_notification(void **state) {
  (void)state;
  fl_rpc r;
  json_t *eid = NULL;
  const char *emsg = NULL;
  assert_int_equal(
      parse("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", &r, &eid, &emsg), 0);
  assert_int_equal(r.kind, FL_RPC_NOTIFICATION);
  assert_null(r.id);
  assert_string_equal(r.method, "notifications/initialized");
  assert_null(r.params);
  fl_rpc_free(&r);
}

static void test_parse_response(void **state) {
  (void)state;
  fl_rpc r;
  json_t *eid = NULL;
  const char *emsg = NULL;
  assert_int_equal(parse("{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}", &r, &eid, &emsg), 0);
  assert_int_equal(r.kind, FL_RPC_RESPONSE);
  assert_null(r.method);
  assert_int_equal(json_integer_value(r.id), 3);
  fl_rpc_free(&r);
  assert_int_equal(parse("{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"error\":{\"code\":-32601,"
                         "\"message\":\"Method not found\"}}",
                         &r, &eid, &emsg),
                   0);
  assert_int_equal(r.kind, FL_RPC_RESPONSE);
  assert_string_equal(json_string_value(r.id), "x");
  fl_rpc_free(&r);
}

/* Parses s, expects code, an id equal to want_id (a JSON text, or NULL for
 * none) and a non-empty explanation. */
static void expect_error(const char *s, int code, const char *want_id) {
  fl_rpc r;
  json_t *eid = (json_t *)0x1; /* must be overwritten */
  const char *emsg = NULL;
  assert_int_equal(parse(s, &r, &eid, &emsg), code);
  assert_null(r.msg);
  assert_non_null(emsg);
  assert_true(strlen(emsg) > 0);
  if (!want_id) {
    assert_null(eid);
    return;
  }
  assert_non_null(eid);
  json_t *want = json_loads(want_id, JSON_DECODE_ANY, NULL);
  assert_non_null(want);
  assert_true(json_equal(eid, want));
  json_decref(want);
  json_decref(eid);
}

static void test_parse_errors(void **state) {
  (void)state;
  /* Not JSON at all, or JSON with something after it. */
  expect_error("{\"jsonrpc\":", FL_RPC_PARSE_ERROR, NULL);
  expect_error("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"} x", FL_RPC_PARSE_ERROR, NULL);
  expect_error("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"}{}", FL_RPC_PARSE_ERROR, NULL);
  expect_error("", FL_RPC_PARSE_ERROR, NULL);
  expect_error("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}", FL_RPC_PARSE_ERROR, NULL);

  /* Batches and non-objects. */
  expect_error("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"}]", FL_RPC_INVALID_REQUEST, NULL);
  expect_error("[]", FL_RPC_INVALID_REQUEST, NULL);
  expect_error("42", FL_RPC_INVALID_REQUEST, NULL);
  expect_error("\"hello\"", FL_RPC_INVALID_REQUEST, NULL);
  expect_error("null", FL_RPC_INVALID_REQUEST, NULL);

  /* The version, with the id echoed when it is readable. */
  expect_error("{\"id\":7,\"method\":\"m\"}", FL_RPC_INVALID_REQUEST, "7");
  expect_error("{\"jsonrpc\":\"1.0\",\"id\":\"abc\",\"method\":\"m\"}", FL_RPC_INVALID_REQUEST,
               "\"abc\"");
  expect_error("{\"jsonrpc\":2.0,\"id\":1,\"method\":\"m\"}", FL_RPC_INVALID_REQUEST, "1");
  expect_error("{\"jsonrpc\":\"1.0\",\"id\":null,\"method\":\"m\"}", FL_RPC_INVALID_REQUEST, NULL);

  /* Ids that are not a string or an integer. */
  expect_error("{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"m\"}", FL_RPC_INVALID_REQUEST, NULL);
  expect_error("{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"m\"}", FL_RPC_INVALID_REQUEST, NULL);
  expect_error("{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"m\"}", FL_RPC_INVALID_REQUEST, NULL);
  expect_error("{\"jsonrpc\":\"2.0\",\"id\":true,\"method\":\"m\"}", FL_RPC_INVALID_REQUEST, NULL);
  expect_error("{\"jsonrpc\":\"2.0\",\"id\":[1],\"result\":{}}", FL_RPC_INVALID_REQUEST, NULL);

  /* Method and params of the wrong type. */
  expect_error("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":5}", FL_RPC_INVALID_REQUEST, "2");
  expect_error("{\"jsonrpc\":\"2.0\",\"method\":null}", FL_RPC_INVALID_REQUEST, NULL);
  expect_error("{\"jsonrpc\":\"2.0\",\"id\":\"p\",\"method\":\"m\",\"params\":\"x\"}",
               FL_RPC_INVALID_REQUEST, "\"p\"");
  expect_error("{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":3}", FL_RPC_INVALID_REQUEST, NULL);

  /* Shapes that are neither a call nor a response. */
  expect_error("{\"jsonrpc\":\"2.0\",\"id\":4}", FL_RPC_INVALID_REQUEST, "4");
  expect_error("{\"jsonrpc\":\"2.0\",\"result\":{}}", FL_RPC_INVALID_REQUEST, NULL);
  expect_error(
      "{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{},\"error\":{\"code\":1,\"message\":\"m\"}}",
      FL_RPC_INVALID_REQUEST, "5");
  expect_error("{\"jsonrpc\":\"2.0\",\"id\":6,\"error\":\"bad\"}", FL_RPC_INVALID_REQUEST, "6");
}

static void test_parse_error_messages(void **state) {
  (void)state;
  fl_rpc r;
  json_t *eid = NULL;
  const char *emsg = NULL;
  assert_int_equal(parse("{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"m\"}", &r, &eid, &emsg),
                   FL_RPC_INVALID_REQUEST);
  assert_string_equal(emsg, "jsonrpc must be \"2.0\"");
  json_decref(eid);
  assert_int_equal(parse("[1]", &r, &eid, &emsg), FL_RPC_INVALID_REQUEST);
  assert_non_null(strstr(emsg, "batch"));
  assert_int_equal(parse("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":[]}", &r, &eid, &emsg),
                   FL_RPC_INVALID_REQUEST);
  assert_non_null(strstr(emsg, "method"));
  json_decref(eid);
  assert_int_equal(parse("{\"jsonrpc\":\"2.0\",\"id\":false,\"method\":\"m\"}", &r, &eid, &emsg),
                   FL_RPC_INVALID_REQUEST);
  assert_non_null(strstr(emsg, "id"));
  /* err_id and err_msg are optional. */
  assert_int_equal(parse("{", &r, NULL, NULL), FL_RPC_PARSE_ERROR);
  assert_int_equal(parse("{\"id\":1,\"method\":\"m\"}", &r, NULL, NULL), FL_RPC_INVALID_REQUEST);
  /* A bad call is refused, not a crash. */
  assert_int_equal(fl_rpc_parse(NULL, 0, &r, &eid, &emsg), FL_RPC_PARSE_ERROR);
  assert_null(eid);
  assert_int_equal(fl_rpc_parse("{}", 2, NULL, &eid, &emsg), FL_RPC_INTERNAL_ERROR);
}

static void test_parse_unicode_and_duplicates(void **state) {
  (void)state;
  fl_rpc r;
  json_t *eid = NULL;
  const char *emsg = NULL;
  /* Raw UTF-8 and escapes (including a surrogate pair) both decode. */
  assert_int_equal(parse("{\"jsonrpc\":\"2.0\",\"id\":\"\xc3\xa9\",\"method\":\"m\",\"params\":"
                         "{\"content\":\"h\xc3\xa9llo \xe2\x9c\x93 \\u00e9 \\ud83d\\ude00 "
                         "\xf0\x9f\x98\x80\"}}",
                         &r, &eid, &emsg),
                   0);
  assert_string_equal(json_string_value(r.id), "\xc3\xa9");
  assert_string_equal(json_string_value(json_object_get(r.params, "content")),
                      "h\xc3\xa9llo \xe2\x9c\x93 \xc3\xa9 \xf0\x9f\x98\x80 \xf0\x9f\x98\x80");
  fl_rpc_free(&r);

  /* Duplicate keys are accepted; the last one wins. */
  assert_int_equal(
      parse("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\",\"method\":\"b\"}", &r, &eid, &emsg),
      0);
  assert_string_equal(r.method, "b");
  fl_rpc_free(&r);

  /* An escaped newline inside a string is content, not a line break. */
  assert_int_equal(
      parse("{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":{\"c\":\"a\\nb\"}}", &r, &eid, &emsg),
      0);
  assert_string_equal(json_string_value(json_object_get(r.params, "c")), "a\nb");
  fl_rpc_free(&r);
}

static void test_parse_oom(void **state) {
  (void)state;
  const char *s =
      "{\"jsonrpc\":\"2.0\",\"id\":\"abc\",\"method\":\"tools/call\","
      "\"params\":{\"name\":\"fleet_send\",\"arguments\":{\"to\":\"w\",\"content\":\"hi\"}}}";
  int ok = 0;
  for (long i = 0; i < 1000 && !ok; i++) {
    fl_rpc r;
    json_t *eid = NULL;
    const char *emsg = NULL;
    fl_alloc_fail_after(i);
    int rc = parse(s, &r, &eid, &emsg);
    fl_alloc_fail_after(-1);
    if (rc == 0) {
      ok = 1;
      assert_int_equal(r.kind, FL_RPC_REQUEST);
      fl_rpc_free(&r);
    } else {
      assert_true(rc == FL_RPC_PARSE_ERROR);
      assert_null(eid);
    }
  }
  assert_true(ok);
}

/* ---- builders ---- */

/* Checks that line is one compact JSON object, "jsonrpc":"2.0" first, with
 * exactly one '\n' at the end; returns it parsed. */
static json_t *check_line(char *line) {
  assert_non_null(line);
  size_t n = strlen(line);
  assert_true(n >= 2);
  assert_int_equal(line[n - 1], '\n');
  assert_ptr_equal(strchr(line, '\n'), line + n - 1);
  assert_null(strchr(line, '\r'));
  assert_int_equal(strncmp(line, "{\"jsonrpc\":\"2.0\",", 17), 0);
  json_error_t jerr;
  json_t *v = json_loads(line, 0, &jerr);
  assert_non_null(v);
  fl_free(line);
  return v;
}

static void test_build_result(void **state) {
  (void)state;
  json_t *id = json_integer(5);
  json_t *v = check_line(fl_rpc_result(id, json_pack("{s:s}", "text", "line1\nline2\r\n")));
  assert_int_equal(json_integer_value(json_object_get(v, "id")), 5);
  assert_string_equal(json_string_value(json_object_get(json_object_get(v, "result"), "text")),
                      "line1\nline2\r\n");
  json_decref(v);
  /* The id was borrowed: still ours. */
  assert_int_equal(id->refcount, 1);
  json_decref(id);

  id = json_string("req-\xe2\x9c\x93");
  v = check_line(fl_rpc_result(id, json_object()));
  assert_true(json_equal(json_object_get(v, "id"), id));
  json_decref(v);
  json_decref(id);

  v = check_line(fl_rpc_result(NULL, json_true()));
  assert_true(json_is_null(json_object_get(v, "id")));
  json_decref(v);

  /* A NULL result (a failed json_pack upstream) is a failed build. */
  assert_null(fl_rpc_result(NULL, NULL));
}

static void test_build_error(void **state) {
  (void)state;
  json_t *id = json_string("q");
  json_t *v = check_line(
      fl_rpc_error(id, FL_RPC_INVALID_PARAMS, "to is required", json_pack("{s:s}", "field", "to")));
  json_t *err = json_object_get(v, "error");
  assert_int_equal(json_integer_value(json_object_get(err, "code")), FL_RPC_INVALID_PARAMS);
  assert_string_equal(json_string_value(json_object_get(err, "message")), "to is required");
  assert_string_equal(json_string_value(json_object_get(json_object_get(err, "data"), "field")),
                      "to");
  assert_string_equal(json_string_value(json_object_get(v, "id")), "q");
  json_decref(v);
  json_decref(id);

  /* No id, no message, no data. */
  v = check_line(fl_rpc_error(NULL, FL_RPC_PARSE_ERROR, NULL, NULL));
  err = json_object_get(v, "error");
  assert_true(json_is_null(json_object_get(v, "id")));
  assert_string_equal(json_string_value(json_object_get(err, "message")), "Parse error");
  assert_null(json_object_get(err, "data"));
  json_decref(v);

  /* A message that is not UTF-8 falls back to the standard text rather than
   * writing invalid JSON. */
  v = check_line(fl_rpc_error(NULL, FL_RPC_METHOD_NOT_FOUND, "bad \xff", NULL));
  assert_string_equal(json_string_value(json_object_get(json_object_get(v, "error"), "message")),
                      "Method not found");
  json_decref(v);
}

static void test_build_notification_and_line(void **state) {
  (void)state;
  json_t *v = check_line(fl_rpc_notification(
      "notifications/message", json_pack("{s:s,s:s}", "level", "info", "data", "a\nb")));
  assert_string_equal(json_string_value(json_object_get(v, "method")), "notifications/message");
  assert_null(json_object_get(v, "id"));
  assert_string_equal(json_string_value(json_object_get(json_object_get(v, "params"), "data")),
                      "a\nb");
  json_decref(v);

  v = check_line(fl_rpc_notification("notifications/tools/list_changed", NULL));
  assert_null(json_object_get(v, "params"));
  json_decref(v);
  assert_null(fl_rpc_notification(NULL, json_object()));

  char *line = fl_rpc_line(json_string("x\ny"));
  assert_non_null(line);
  assert_string_equal(line, "\"x\\ny\"\n");
  fl_free(line);
  assert_null(fl_rpc_line(NULL));
}

/* A built reply parses back as the response it is. */
static void test_build_round_trip(void **state) {
  (void)state;
  json_t *id = json_integer(42);
  char *line = fl_rpc_result(id, json_pack("{s:[]}", "tools"));
  assert_non_null(line);
  fl_rpc r;
  json_t *eid = NULL;
  const char *emsg = NULL;
  assert_int_equal(fl_rpc_parse(line, strlen(line) - 1, &r, &eid, &emsg), 0);
  assert_int_equal(r.kind, FL_RPC_RESPONSE);
  assert_true(json_equal(r.id, id));
  fl_rpc_free(&r);
  fl_free(line);

  line = fl_rpc_error(id, FL_RPC_INTERNAL_ERROR, "boom", NULL);
  assert_non_null(line);
  assert_int_equal(fl_rpc_parse(line, strlen(line) - 1, &r, &eid, &emsg), 0);
  assert_int_equal(r.kind, FL_RPC_RESPONSE);
  fl_rpc_free(&r);
  fl_free(line);
  json_decref(id);

  /* Through the line buffer as well: the builders' lines split cleanly. */
  fl_linebuf lb;
  fl_linebuf_init(&lb, 1024);
  char *a = fl_rpc_notification("a", json_pack("{s:s}", "t", "x\ny"));
  char *b = fl_rpc_notification("b", NULL);
  assert_int_equal(fl_linebuf_feed(&lb, a, strlen(a)), 0);
  assert_int_equal(fl_linebuf_feed(&lb, b, strlen(b)), 0);
  char *got = NULL;
  size_t len = 0;
  assert_int_equal(fl_linebuf_next(&lb, &got, &len), 1);
  assert_int_equal(fl_rpc_parse(got, len, &r, &eid, &emsg), 0);
  assert_string_equal(r.method, "a");
  fl_rpc_free(&r);
  fl_free(got);
  assert_int_equal(fl_linebuf_next(&lb, &got, &len), 1);
  assert_int_equal(fl_rpc_parse(got, len, &r, &eid, &emsg), 0);
  assert_string_equal(r.method, "b");
  fl_rpc_free(&r);
  fl_free(got);
  expect_no_line(&lb);
  fl_linebuf_free(&lb);
  fl_free(a);
  fl_free(b);
}

/* Every allocation in every builder may fail: the result is NULL, the
 * stolen arguments are released (ASan's leak check proves it), and the
 * borrowed id is untouched. */
static void test_build_oom(void **state) {
  (void)state;
  json_t *id = json_string("oom");
  for (int which = 0; which < 4; which++) {
    int ok = 0;
    for (long i = 0; i < 1000 && !ok; i++) {
      json_t *arg = json_pack("{s:s,s:i}", "k", "v", "n", 1);
      assert_non_null(arg);
      fl_alloc_fail_after(i);
      char *line = NULL;
      switch (which) {
      case 0:
        line = fl_rpc_result(id, arg);
        break;
      case 1:
        line = fl_rpc_error(id, FL_RPC_INVALID_PARAMS, "nope", arg);
        break;
      case 2:
        line = fl_rpc_notification("n", arg);
        break;
      default:
        line = fl_rpc_line(arg);
        break;
      }
      fl_alloc_fail_after(-1);
      if (line && which == 3) {
        ok = 1;
        assert_string_equal(line, "{\"k\":\"v\",\"n\":1}\n");
        fl_free(line);
      } else if (line) {
        ok = 1;
        json_decref(check_line(line));
      }
      assert_int_equal(id->refcount, 1);
    }
    assert_true(ok);
  }
  json_decref(id);
}

/* Nesting past FL_MAX_JSON_DEPTH is refused before parsing; brackets inside
 * strings do not count, and the limit itself is fine. */
static void test_parse_depth_limit(void **state) {
  (void)state;
  char buf[512];
  fl_rpc r;
  json_t *eid;
  const char *emsg;
  /* params {"a": [[...]]}: 2 levels (message, params) + n arrays. */
  for (int n = 60; n <= 64; n++) {
    int k = snprintf(buf, sizeof buf,
                     "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{\"a\":");
    for (int i = 0; i < n; i++)
      buf[k++] = '[';
    for (int i = 0; i < n; i++)
      buf[k++] = ']';
    k += snprintf(buf + k, sizeof buf - (size_t)k, "}}");
    int rc = fl_rpc_parse(buf, (size_t)k, &r, &eid, &emsg);
    if (n + 2 <= FL_MAX_JSON_DEPTH) {
      assert_int_equal(rc, 0);
      fl_rpc_free(&r);
    } else {
      assert_int_equal(rc, FL_RPC_PARSE_ERROR);
      assert_non_null(strstr(emsg, "too deep"));
      json_decref(eid);
    }
  }
  const char *in_string = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"[[[[[[[[[[[[[[[[[[[[[[[[[[[["
                          "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\\\"{{\"}";
  assert_int_equal(fl_rpc_parse(in_string, strlen(in_string), &r, &eid, &emsg), 0);
  fl_rpc_free(&r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_linebuf_partial_feeds),
      cmocka_unit_test(test_linebuf_scans_once),
      cmocka_unit_test(test_linebuf_crlf),
      cmocka_unit_test(test_parse_depth_limit),
      cmocka_unit_test(test_linebuf_empty_lines_skipped),
      cmocka_unit_test(test_linebuf_many_lines_one_feed),
      cmocka_unit_test(test_linebuf_oversize_single_feed),
      cmocka_unit_test(test_linebuf_oversize_across_feeds),
      cmocka_unit_test(test_linebuf_exact_cap),
      cmocka_unit_test(test_linebuf_big_line_gives_memory_back),
      cmocka_unit_test(test_linebuf_idle_holds_nothing),
      cmocka_unit_test(test_linebuf_bad_args_and_oom),
      cmocka_unit_test(test_parse_request),
      cmocka_unit_test(test_parse_notification),
      cmocka_unit_test(test_parse_nul_keeps_id),
      cmocka_unit_test(test_parse_response),
      cmocka_unit_test(test_parse_errors),
      cmocka_unit_test(test_parse_error_messages),
      cmocka_unit_test(test_parse_unicode_and_duplicates),
      cmocka_unit_test(test_parse_oom),
      cmocka_unit_test(test_build_result),
      cmocka_unit_test(test_build_error),
      cmocka_unit_test(test_build_notification_and_line),
      cmocka_unit_test(test_build_round_trip),
      cmocka_unit_test(test_build_oom),
  };
  return cmocka_run_group_tests_name("jsonrpc", tests, setup, NULL);
}
