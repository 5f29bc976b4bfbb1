/* fleet-hook.c — the client an agent's hooks run (Claude Code's hooks, set
 * up by `fleetctl profile claude`).
 *
 * The agent runs it with the hook's JSON on stdin. It finds the worker it
 * runs for from the window's environment (FLEET_GID, and FLEET_SOCKET for
 * fleetd's socket: fleetd puts both in every window it spawns, and the agent
 * passes its environment on to its hooks), tells fleetd what happened with
 * one request on the socket, and answers the hook in the agent's own format:
 *
 *   fleet/hook {gid, agent, event, wake, reconnect?, hook}
 *     event  the hook's hook_event_name (UserPromptSubmit, Stop,
 *            PermissionRequest, Notification, SessionStart, ...)
 *     wake   true for the waiter an idle session keeps (--wake, an
 *            asyncRewake hook): fleetd answers it when it has something
 *            for the worker, however long that takes
 *     reconnect  true when the waiter asks again after losing fleetd: the
 *            event is old news (the session may have been busy for a
 *            while), so fleetd parks the waiter and leaves the worker's
 *            state alone
 *     hook   a bounded summary of the hook's input: sessionId,
 *            notificationType and message (Notification), tool and input
 *            (PermissionRequest; the tool's input as compact JSON, cut at
 *            FL_HOOK_SUMMARY_MAX bytes)
 *   → {action: "none" | "context" | "wake" | "allow" | "deny", text?, reason?}
 *
 * What each answer becomes, for Claude Code:
 *   context  UserPromptSubmit: {"hookSpecificOutput": {"hookEventName":
 *            "UserPromptSubmit", "additionalContext": text}} on stdout; the
 *            text goes to the model with the turn being submitted.
 *   wake     (--wake only) text on stderr and exit status 2: an asyncRewake
 *            hook that exits 2 wakes the idle session, and its stderr
 *            reaches the model as a system reminder.
 *   allow    PermissionRequest: {"hookSpecificOutput": {"hookEventName":
 *            "PermissionRequest", "decision": {"behavior": "allow"}}}: the
 *            dialog closes and the tool runs.
 *   deny     the same with {"behavior": "deny", "message": reason}: the tool
 *            is refused and the model gets reason as its error.
 *   none     nothing: exit 0 with no output.
 *
 * Fleet is never in the agent's way: with no FLEET_GID (not a fleet worker),
 * with fleetd not running, not answering within its bound, or answering
 * with an error (a fleetd that does not know fleet/hook), fleet-hook exits 0
 * and writes nothing, which every hook reads as "no opinion", so the agent
 * works as if fleet were absent. A permission request that no lead answers
 * in time (fleetd's bound) leaves the agent's own dialog to its user.
 *
 * The waiter (--wake) keeps its request open for as long as the session is
 * idle, up to FL_HOOK_WAKE_S. When fleetd goes away under it (a restart) it
 * connects again with backoff and asks again, marked reconnect (the Stop it
 * was started for may be long past: a new turn may be running), and while
 * the new fleetd refuses it (the worker not registered again yet) it keeps
 * trying for up to FL_HOOK_REJOIN_S; when fleetd answers with nothing (a
 * newer waiter took over), it exits 0. It never outlives its
 * agent: it exits when the agent is gone (the pipes it would answer on have
 * no reader any more, or its parent died), and fleetd drops its parked call
 * when the connection closes, so nothing is handed to a dead waiter. */
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "clients/fleetctl_report.h"
#include "clients/fleetctl_rpc.h"
#include "common/alloc.h"
#include "common/json_read.h"
#include "common/limits.h"
#include "common/time.h"
#include "common/utf8.h"

/* The agent whose hook format fleet-hook speaks; the only one so far. */
#define FL_HOOK_AGENT "claude"

/* Claude Code's exit status for a blocking hook: for an asyncRewake hook, it
 * wakes the session and stderr reaches the model. */
#define FL_HOOK_EXIT_WAKE 2

/* The waiter's pause between attempts to reach fleetd again: from 1 s,
 * doubling up to 30 s. */
#define FL_HOOK_RETRY_MIN_MS 1000
#define FL_HOOK_RETRY_MAX_MS 30000

static void usage(FILE *f) {
  fprintf(f, "usage: fleet-hook [--wake] [--socket PATH]\n"
             "\n"
             "The client a fleet worker's agent hooks run (Claude Code: see `fleetctl\n"
             "profile claude`). It reads the hook's JSON on stdin, tells fleetd what\n"
             "happened (the worker is FLEET_GID) and answers the hook: a message for the\n"
             "worker as additionalContext, a lead's decision on a permission request.\n"
             "\n"
             "options:\n"
             "  --wake          the waiter of an idle session (an asyncRewake hook): wait\n"
             "                  until fleetd has a message for the worker, print it on\n"
             "                  stderr and exit 2, which wakes the session\n"
             "  --socket PATH   fleetd's socket (default: $FLEET_SOCKET, else the usual path)\n"
             "  -h, --help      print this text\n"
             "\n"
             "Exits 0 with no output whenever fleet has nothing to say: not a fleet\n"
             "worker, fleetd not running or not answering, nothing for the worker.\n");
}

/* How often the waiter looks whether its agent is still there. */
#define FL_HOOK_ORPHAN_CHECK_MS 1000

/* 1 when the agent that runs the hook is gone: its parent changed (the
 * hook's shell or the agent died), or stdout or stderr is a pipe with no
 * reader left (the agent reads both). */
static int agent_gone(pid_t parent) {
  if (getppid() != parent)
    return 1;
  struct pollfd p[2] = {{.fd = STDOUT_FILENO, .events = 0}, {.fd = STDERR_FILENO, .events = 0}};
  if (poll(p, 2, 0) > 0)
    for (int i = 0; i < 2; i++)
      if (p[i].revents & (POLLERR | POLLHUP))
        return 1;
  return 0;
}

static void *orphan_watch(void *arg) {
  pid_t parent = (pid_t)(intptr_t)arg;
  for (;;) {
    if (agent_gone(parent))
      _exit(0); /* the socket closes with us: fleetd drops the waiter */
    usleep(FL_HOOK_ORPHAN_CHECK_MS * 1000);
  }
  return NULL;
}

/* The waiter lives only as long as its agent. */
static void watch_agent(void) {
  pid_t parent = getppid();
#ifdef __linux__
  prctl(PR_SET_PDEATHSIG, SIGTERM);
#endif
  if (agent_gone(parent))
    _exit(0);
  pthread_t t;
  if (pthread_create(&t, NULL, orphan_watch, (void *)(intptr_t)parent) == 0)
    pthread_detach(t);
}

/* All of stdin, NUL-terminated, at most FL_MAX_LINE bytes; NULL when it is
 * longer or cannot be read. */
static char *read_stdin(size_t *len) {
  size_t cap = 65536, n = 0;
  char *buf = fl_malloc(cap + 1);
  while (buf) {
    if (n == cap) {
      if (cap >= FL_MAX_LINE) {
        fl_free(buf);
        return NULL;
      }
      cap *= 2;
      char *nb = fl_realloc(buf, cap + 1);
      if (!nb) {
        fl_free(buf);
        return NULL;
      }
      buf = nb;
    }
    ssize_t got = read(STDIN_FILENO, buf + n, cap - n);
    if (got < 0) {
      fl_free(buf);
      return NULL;
    }
    if (got == 0)
      break;
    n += (size_t)got;
  }
  if (buf) {
    buf[n] = '\0';
    *len = n;
  }
  return buf;
}

/* v as compact JSON cut at FL_HOOK_SUMMARY_MAX bytes (on a character
 * boundary, with "…" when cut); a new string, or NULL. */
static json_t *bounded(json_t *v) {
  char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
  if (!text)
    return NULL;
  size_t len = strlen(text), keep = fl_utf8_prefix(text, len, FL_HOOK_SUMMARY_MAX);
  json_t *out = keep < len ? json_sprintf("%.*s…", (int)keep, text) : json_string(text);
  fl_free(text);
  return out;
}

/* Copies in[from] to out[to] when it is a string. */
static void copy_str(json_t *out, const char *to, json_t *in, const char *from) {
  json_t *v = json_object_get(in, from);
  if (json_is_string(v))
    json_object_set(out, to, v);
}

/* The summary of the hook's input that fleetd gets. */
static json_t *summary_new(json_t *in) {
  json_t *s = json_object();
  if (!s)
    return NULL;
  copy_str(s, "sessionId", in, "session_id");
  copy_str(s, "notificationType", in, "notification_type");
  copy_str(s, "message", in, "message");
  copy_str(s, "tool", in, "tool_name");
  json_t *input = json_object_get(in, "tool_input");
  if (input)
    json_object_set_new(s, "input", bounded(input));
  return s;
}

/* Prints a hook's JSON answer on stdout; steals doc. */
static void print_answer(json_t *doc) {
  char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
  json_decref(doc);
  if (text) {
    fputs(text, stdout);
    fputc('\n', stdout);
    fflush(stdout);
  }
  fl_free(text);
}

/* Answers the hook from fleetd's result; returns the exit status. */
static int answer(const char *event, int wake, json_t *res) {
  const char *action = json_string_value(json_object_get(res, "action"));
  const char *text = json_string_value(json_object_get(res, "text"));
  const char *reason = json_string_value(json_object_get(res, "reason"));
  if (!action)
    return 0;
  if (wake && strcmp(action, "wake") == 0 && text && *text) {
    fputs(text, stderr);
    fflush(stderr);
    return FL_HOOK_EXIT_WAKE;
  }
  if (!wake && strcmp(action, "context") == 0 && text && strcmp(event, "UserPromptSubmit") == 0) {
    print_answer(json_pack("{s:{s:s, s:s}}", "hookSpecificOutput", "hookEventName", event,
                           "additionalContext", text));
    return 0;
  }
  if (!wake && strcmp(event, "PermissionRequest") == 0) {
    if (strcmp(action, "allow") == 0)
      print_answer(json_pack("{s:{s:s, s:{s:s}}}", "hookSpecificOutput", "hookEventName", event,
                             "decision", "behavior", "allow"));
    else if (strcmp(action, "deny") == 0)
      print_answer(json_pack("{s:{s:s, s:{s:s, s:s}}}", "hookSpecificOutput", "hookEventName",
                             event, "decision", "behavior", "deny", "message",
                             reason && *reason ? reason : "denied through fleet"));
  }
  return 0;
}

/* One attempt: connect, initialize, fleet/hook. Returns 0 with *res set,
 * 1 when fleetd answered with an error (stop: it does not want this), -2
 * when it could not be reached, or -1 when it went away before answering
 * (the waiter tries again). */
static int ask(const char *socket_opt, long budget_s, json_t *params, json_t **res) {
  fl_ctl_conn c;
  fl_ctl_init(&c, socket_opt, budget_s);
  int st = fl_ctl_open(&c, NULL);
  if (st != FL_EXIT_OK) {
    fl_ctl_close(&c);
    return fl_ctl_last_code() != 0 ? 1 : -2;
  }
  st = fl_ctl_call(&c, "fleet/hook", json_incref(params), res);
  fl_ctl_close(&c);
  if (st == FL_EXIT_OK)
    return 0;
  return fl_ctl_last_code() != 0 ? 1 : -1;
}

int main(int argc, char **argv) {
  const char *socket_opt = NULL;
  int wake = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--wake") == 0) {
      wake = 1;
    } else if (strcmp(argv[i], "--socket") == 0 && i + 1 < argc) {
      socket_opt = argv[++i];
    } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      usage(stdout);
      return 0;
    } else {
      /* A hook that is set up wrong must not stop the agent: say so where
       * a user looking at the hook's output will see it, and exit 0. */
      fprintf(stderr, "fleet-hook: unknown argument '%s' (see fleet-hook --help)\n", argv[i]);
      return 0;
    }
  }
  fl_alloc_init();
  fl_ctl_report_quiet(1);
  if (wake)
    watch_agent();
  /* Read first, whatever follows: the agent writes the whole input and
   * must not find the pipe closed. */
  size_t len = 0;
  char *raw = read_stdin(&len);
  const char *gid = getenv("FLEET_GID");
  if (!gid || !*gid) {
    fl_free(raw);
    return 0;
  }
  json_t *in = raw ? fl_json_loadb(raw, len, 0, NULL) : NULL;
  fl_free(raw);
  const char *event = json_string_value(json_object_get(in, "hook_event_name"));
  json_t *params = event
                       ? json_pack("{s:s, s:s, s:s, s:b, s:o}", "gid", gid, "agent", FL_HOOK_AGENT,
                                   "event", event, "wake", wake, "hook", summary_new(in))
                       : NULL;
  if (!params) {
    json_decref(in);
    return 0;
  }

  long budget_s = wake ? FL_HOOK_WAKE_S
                  : strcmp(event, "PermissionRequest") == 0
                      ? FL_HOOK_APPROVE_WAIT_S + FL_HOOK_CALL_S
                      : FL_HOOK_CALL_S;
  long long until = fl_mono_ms() + budget_s * 1000LL;
  json_t *res = NULL;
  int rc = ask(socket_opt, budget_s, params, &res);
  /* The waiter outlives a fleetd restart (it was there, and went away);
   * any other hook reports once. Asking again, it says so: the event it
   * was started for is not news to the new fleetd. */
  long long pause = FL_HOOK_RETRY_MIN_MS, refused_until = 0;
  while (wake && rc == -1) {
    if (fl_mono_ms() + pause >= until)
      break;
    usleep((useconds_t)pause * 1000);
    pause = pause * 2 > FL_HOOK_RETRY_MAX_MS ? FL_HOOK_RETRY_MAX_MS : pause * 2;
    long left = (long)((until - fl_mono_ms()) / 1000);
    if (left <= 0 || json_object_set_new(params, "reconnect", json_true()) != 0)
      break;
    rc = ask(socket_opt, left, params, &res);
    if (rc == -2)
      rc = -1;     /* not back yet */
    if (rc == 1) { /* back, but it does not know the worker yet */
      if (!refused_until)
        refused_until = fl_mono_ms() + FL_HOOK_REJOIN_S * 1000LL;
      if (fl_mono_ms() < refused_until)
        rc = -1;
    }
  }
  int status = rc == 0 ? answer(event, wake, res) : 0;
  json_decref(res);
  json_decref(params);
  json_decref(in);
  return status;
}
