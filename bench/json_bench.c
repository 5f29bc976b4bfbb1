/* json_bench.c — fleet's JSON reader (common/json_read.h) against jansson's
 * own reader, side by side in one run, on the lines fleet reads most.
 *
 *   json_bench [-s SIZE] [-m MESSAGES] [-n ROUNDS]
 *
 * Two lines, each read ROUNDS times by json_loadb and by fl_json_loadb in
 * turn (the two interleaved in blocks, so both see the same machine):
 *   send: a fleet_send request with SIZE bytes of text (what fleetd reads
 *         from a client for every message);
 *   poll: a fleet_poll result with MESSAGES messages of SIZE bytes, its JSON
 *         both as escaped text and as structuredContent (what a client
 *         reads from fleetd).
 * Both readers must give the same tree (json_equal), or the run fails.
 * Results are "RESULT json_<line>.<reader>_us VALUE" (µs per read) and
 * "RESULT json_<line>.ratio VALUE" (fl_json_loadb over json_loadb). */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "common/alloc.h"
#include "common/json_read.h"

#define BLOCK 200

static char *text_of(size_t size) {
  char *t = malloc(size + 1);
  if (!t)
    fb_die("out of memory");
  for (size_t i = 0; i < size; i++)
    t[i] = (char)('a' + i % 26);
  t[size] = '\0';
  return t;
}

static char *send_line(const char *text) {
  json_t *req = json_pack("{s:s, s:i, s:s, s:{s:s, s:{s:s, s:s}}}", "jsonrpc", "2.0", "id", 42,
                          "method", "tools/call", "params", "name", "fleet_send", "arguments", "to",
                          "bench-rx", "content", text);
  char *line = req ? json_dumps(req, JSON_COMPACT) : NULL;
  json_decref(req);
  if (!line)
    fb_die("out of memory");
  return line;
}

static char *poll_line(const char *text, size_t msgs) {
  static const char id[] = "0193a0c4-5b6e-7c1d-8e2f-3a4b5c6d7e8f";
  json_t *arr = json_array();
  for (size_t i = 0; arr && i < msgs; i++)
    json_array_append_new(arr, json_pack("{s:s, s:s, s:s, s:{s:s, s:s, s:s}, s:s, s:s}", "msgId",
                                         id, "traceId", id, "kind", "send", "from", "name",
                                         "bench-tx", "gid", id, "host", "hostA", "content", text,
                                         "sentAt", "2026-12-04T21:00:00.000Z"));
  json_t *sc = json_pack("{s:o}", "messages", arr);
  char *inner = sc ? json_dumps(sc, JSON_COMPACT) : NULL;
  json_t *resp =
      inner ? json_pack("{s:s, s:i, s:{s:[{s:s, s:s}], s:O}}", "jsonrpc", "2.0", "id", 5, "result",
                        "content", "type", "text", "text", inner, "structuredContent", sc)
            : NULL;
  char *line = resp ? json_dumps(resp, JSON_COMPACT) : NULL;
  free(inner);
  json_decref(sc);
  json_decref(resp);
  if (!line)
    fb_die("out of memory");
  return line;
}

static double read_block(const char *line, size_t len, int ours) {
  uint64_t t0 = fb_now_ns();
  for (int i = 0; i < BLOCK; i++) {
    json_t *v = ours ? fl_json_loadb(line, len, JSON_DECODE_ANY, NULL)
                     : json_loadb(line, len, JSON_DECODE_ANY, NULL);
    if (!v)
      fb_die("a reader refused the line");
    json_decref(v);
  }
  return (double)(fb_now_ns() - t0) / 1e3;
}

static void measure(const char *name, const char *line, size_t rounds) {
  size_t len = strlen(line);
  json_t *a = json_loadb(line, len, JSON_DECODE_ANY, NULL);
  json_t *b = fl_json_read_fast(line, len, JSON_DECODE_ANY);
  if (!a || !b || !json_equal(a, b))
    fb_die("%s: the two readers do not give the same tree", name);
  json_decref(a);
  json_decref(b);
  double us[2] = {0, 0};
  size_t blocks = rounds / BLOCK ? rounds / BLOCK : 1;
  for (size_t k = 0; k < blocks; k++)
    for (int ours = 0; ours < 2; ours++)
      us[ours] += read_block(line, len, ours);
  double n = (double)(blocks * BLOCK);
  printf("RESULT json_%s.bytes %zu\n", name, len);
  printf("RESULT json_%s.jansson_us %.2f\n", name, us[0] / n);
  printf("RESULT json_%s.fleet_us %.2f\n", name, us[1] / n);
  printf("RESULT json_%s.ratio %.3f\n", name, us[1] / us[0]);
}

int main(int argc, char **argv) {
  size_t size = 1024, msgs = 12, rounds = 20000;
  int c;
  while ((c = getopt(argc, argv, "s:m:n:")) != -1) {
    if (c == 's')
      size = strtoul(optarg, NULL, 10);
    else if (c == 'm')
      msgs = strtoul(optarg, NULL, 10);
    else if (c == 'n')
      rounds = strtoul(optarg, NULL, 10);
    else
      fb_die("usage: json_bench [-s SIZE] [-m MESSAGES] [-n ROUNDS]");
  }
  fb_prog = "json_bench";
  fl_alloc_init();
  char *text = text_of(size), *send = send_line(text), *poll = poll_line(text, msgs);
  measure("send", send, rounds);
  measure("poll", poll, rounds / 10 ? rounds / 10 : 1);
  free(text);
  free(send);
  free(poll);
  return 0;
}
