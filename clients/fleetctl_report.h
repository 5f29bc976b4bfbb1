/* fleetctl_report.h — how fleetctl says that a command failed: its exit
 * statuses and the one error path every failure goes through.
 *
 * A failure is always one "fleetctl: <what is wrong>" line on stderr, and for
 * a usage error one more line: the synopsis of the command concerned, or
 * where to find the commands. With --json (fl_ctl_report_json), the same
 * failure is also a JSON object on stdout, so a script reading stdout sees
 * it: {"error": {"message", "code"?, "usage"?, "exitCode"}}. Only the first
 * failure of a run is written as JSON, so stdout holds one value. Not
 * thread-safe; fleetctl is one thread. */
#ifndef FL_FLEETCTL_REPORT_H
#define FL_FLEETCTL_REPORT_H

/* fleetctl's exit statuses: 0 ok, 1 failure (fleetd said no, a tool
 * returned isError, fleetd not running or not answering), 2 usage. */
enum { FL_EXIT_OK = 0, FL_EXIT_FAIL = 1, FL_EXIT_USAGE = 2 };

/* From now on, also write failures as JSON on stdout (--json). */
void fl_ctl_report_json(int on);

/* From now on, write nothing for a failure (fleet-hook: a hook that fails
 * must leave no trace in the agent); fl_ctl_last_code still says what
 * happened. */
void fl_ctl_report_quiet(int on);

/* The JSON-RPC error code of the newest failure: fleetd answered with an
 * error (non-zero), or 0 when fleetd could not be reached, did not answer in
 * time, or the failure was fleetctl's own. */
int fl_ctl_last_code(void);

/* Reports a failure and returns status (the exit status to use). code is
 * fleetd's JSON-RPC error code, 0 for none. usage (may be NULL) is the
 * command's synopsis without "fleetctl ", for a usage error's second line;
 * a usage error without one points at `fleetctl help`. msg is the text
 * without the "fleetctl: " prefix (copied). */
int fl_ctl_report(int status, int code, const char *usage, const char *msg);

/* fl_ctl_report(FL_EXIT_FAIL, 0, NULL, <formatted>): returns FL_EXIT_FAIL. */
int fl_ctl_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* fl_ctl_report(FL_EXIT_USAGE, 0, usage, <formatted>): returns
 * FL_EXIT_USAGE. */
int fl_ctl_usage_fail(const char *usage, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
