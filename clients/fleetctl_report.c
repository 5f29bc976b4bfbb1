/* fleetctl_report.c — fleetctl's failures on stderr and, with --json, on
 * stdout (see fleetctl_report.h).
 *
 * Text first, then the JSON: a script that reads only stdout still learns
 * what went wrong and the exit status it will see, and a person reading the
 * terminal sees the same sentence as before. */
#include "clients/fleetctl_report.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>

#include "common/alloc.h"

/* A failure message: one sentence, long enough for the longest fleetd error
 * (512) with the start hint's paths (fleetctl_rpc.c). */
#define FL_CTL_MSG_MAX 8192

static int fl_ctl_json;      /* --json was given */
static int fl_ctl_json_done; /* the first failure is already on stdout */
static int fl_ctl_quiet;     /* write nothing (fleet-hook) */
static int fl_ctl_code;      /* the newest failure's JSON-RPC code */

void fl_ctl_report_json(int on) { fl_ctl_json = on; }

void fl_ctl_report_quiet(int on) { fl_ctl_quiet = on; }

int fl_ctl_last_code(void) { return fl_ctl_code; }

/* The failure as one JSON object on stdout. Out of memory: the text on
 * stderr has already said it all, so nothing more is tried. */
static void fl_ctl_report_stdout(int status, int code, const char *usage, const char *msg) {
  json_t *err = json_pack("{s:s}", "message", msg);
  if (!err) /* not UTF-8: the bytes are on stderr as they are */
    err = json_pack("{s:s}", "message", "(the message is not UTF-8; see stderr)");
  if (err && code)
    json_object_set_new(err, "code", json_integer(code));
  if (err && usage) {
    char line[512];
    snprintf(line, sizeof line, "fleetctl %s", usage);
    json_object_set_new(err, "usage", json_string(line));
  }
  if (err)
    json_object_set_new(err, "exitCode", json_integer(status));
  json_t *doc = err ? json_pack("{s:o}", "error", err) : NULL;
  char *text = doc ? json_dumps(doc, JSON_INDENT(2)) : NULL;
  if (text) {
    puts(text);
    fflush(stdout);
  }
  fl_free(text);
  json_decref(doc);
}

int fl_ctl_report(int status, int code, const char *usage, const char *msg) {
  fl_ctl_code = code;
  if (fl_ctl_quiet)
    return status;
  fprintf(stderr, "fleetctl: %s\n", msg);
  if (usage)
    fprintf(stderr, "usage: fleetctl %s\n", usage);
  else if (status == FL_EXIT_USAGE)
    fputs("run 'fleetctl help' for the commands\n", stderr);
  if (fl_ctl_json && !fl_ctl_json_done) {
    fl_ctl_json_done = 1;
    fl_ctl_report_stdout(status, code, usage, msg);
  }
  return status;
}

int fl_ctl_fail(const char *fmt, ...) {
  char msg[FL_CTL_MSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return fl_ctl_report(FL_EXIT_FAIL, 0, NULL, msg);
}

int fl_ctl_usage_fail(const char *usage, const char *fmt, ...) {
  char msg[FL_CTL_MSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return fl_ctl_report(FL_EXIT_USAGE, 0, usage, msg);
}
