/* test_forward.c — unit tests for the forward path's pure parts: the brief
 * record's state machine (gateway/store/store_forward.c) and the exec backend
 * (gateway/inject/inject_exec.c).
 *
 * The record: a brief is queued once (a second put of its key is refused,
 * whatever state it is in, also after a close and reopen, so a redelivered
 * or replayed copy is never typed twice); briefs of one entity come out
 * oldest first; a finished brief drops its content and stops being queued;
 * a brief left "typing" (fleetd died mid-typing) becomes failed on
 * fail_typing and is never handed out again; unreported outcomes are
 * listed until marked; pruning by age removes only finished briefs.
 *
 * The exec backend: the command gets the message byte for byte on stdin
 * and exit 0 is delivered; a non-zero exit is a failure with a reason; a
 * command that cannot start is an error at once; the backend needs argv. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/time.h"
#include "gateway/core/forward.h"
#include "gateway/core/gw_internal.h"
#include "gateway/core/roster.h"
#include "gateway/inject/inject.h"
#include "gateway/store/store_forward.h"
#include "tests/support/test_gw.h"
#include "tests/support/test_store.h"
#include "tests/support/test_util.h"

typedef struct fixture {
  char dir[64];
  char path[128];
  fl_store *s;
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  if (!f ||
      fl_test_store_open("forward", f->dir, sizeof f->dir, f->path, sizeof f->path, &f->s) != 0) {
    free(f);
    return -1;
  }
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  fl_store_close(&f->s);
  fl_test_rmtree(f->dir);
  free(f);
  return 0;
}

static fl_fwd brief(const char *id, const char *to, const char *text, int64_t at) {
  fl_fwd b;
  memset(&b, 0, sizeof b);
  snprintf(b.msg_id, sizeof b.msg_id, "%s", id);
  snprintf(b.to_gid, sizeof b.to_gid, "%s", to);
  snprintf(b.from_gid, sizeof b.from_gid, "sender");
  snprintf(b.sender_host, sizeof b.sender_host, "hostA");
  b.at_ms = at;
  b.deadline_ms = at + 1000;
  b.content = (char *)text;
  b.content_len = strlen(text);
  return b;
}

static void test_queue_order_and_dedup(void **state) {
  fixture *f = *state;
  fl_fwd a = brief("m1", "w", "first", 100), b = brief("m2", "w", "second", 101),
         c = brief("m3", "other", "elsewhere", 102);
  assert_int_equal(fl_store_fwd_put(f->s, &a), 0);
  assert_int_equal(fl_store_fwd_put(f->s, &b), 0);
  assert_int_equal(fl_store_fwd_put(f->s, &c), 0);
  assert_int_equal(fl_store_fwd_put(f->s, &a), FL_EDUP);

  fl_fwd got;
  assert_int_equal(fl_store_fwd_next(f->s, "w", &got), 0);
  assert_string_equal(got.msg_id, "m1");
  assert_string_equal(got.content, "first");
  assert_int_equal(got.state, FL_FWD_QUEUED);
  assert_string_equal(got.sender_host, "hostA");
  fl_fwd_clear(&got);

  assert_int_equal(fl_store_fwd_set(f->s, "m1", "w", FL_FWD_TYPING, NULL), 0);
  assert_int_equal(fl_store_fwd_next(f->s, "w", &got), 0);
  assert_string_equal(got.msg_id, "m2"); /* m1 is in hand, not queued */
  fl_fwd_clear(&got);
  assert_int_equal(fl_store_fwd_set(f->s, "m1", "w", FL_FWD_INJECTED, NULL), 0);
  assert_int_equal(fl_store_fwd_get(f->s, "m1", "w", &got), 0);
  assert_int_equal(got.state, FL_FWD_INJECTED);
  assert_int_equal(got.content_len, 0); /* finished: content dropped */
  fl_fwd_clear(&got);
  /* Finished, it still refuses a second copy. */
  assert_int_equal(fl_store_fwd_put(f->s, &a), FL_EDUP);
  assert_int_equal(fl_store_fwd_set(f->s, "nope", "w", FL_FWD_FAILED, "x"), FL_ENOTFOUND);
}

static void test_restart_fails_typing_and_keeps_dedup(void **state) {
  fixture *f = *state;
  fl_fwd a = brief("m1", "w", "typed half", 100), b = brief("m2", "w", "not started", 101);
  assert_int_equal(fl_store_fwd_put(f->s, &a), 0);
  assert_int_equal(fl_store_fwd_put(f->s, &b), 0);
  assert_int_equal(fl_store_fwd_set(f->s, "m1", "w", FL_FWD_TYPING, NULL), 0);

  /* kill -9 stands in for a close; the reopened store is the next fleetd. */
  fl_store_close(&f->s);
  assert_int_equal(fl_store_open(f->path, &f->s), 0);
  size_t n = 0;
  assert_int_equal(fl_store_fwd_fail_typing(f->s, "gateway restarted while typing", &n), 0);
  assert_int_equal(n, 1);
  fl_fwd got;
  assert_int_equal(fl_store_fwd_get(f->s, "m1", "w", &got), 0);
  assert_int_equal(got.state, FL_FWD_FAILED);
  assert_string_equal(got.reason, "gateway restarted while typing");
  fl_fwd_clear(&got);
  /* The one never started is still queued; the typed one never comes back. */
  assert_int_equal(fl_store_fwd_next(f->s, "w", &got), 0);
  assert_string_equal(got.msg_id, "m2");
  fl_fwd_clear(&got);
  assert_int_equal(fl_store_fwd_put(f->s, &a), FL_EDUP);
}

static int nreported;
static void count_unreported(void *ctx, const fl_fwd *f) {
  (void)ctx;
  (void)f;
  nreported++;
}

static void test_unreported_and_prune(void **state) {
  fixture *f = *state;
  fl_fwd a = brief("m1", "w", "a", 100), b = brief("m2", "w", "b", 5000);
  assert_int_equal(fl_store_fwd_put(f->s, &a), 0);
  assert_int_equal(fl_store_fwd_put(f->s, &b), 0);
  assert_int_equal(fl_store_fwd_set(f->s, "m1", "w", FL_FWD_FAILED, "no"), 0);
  nreported = 0;
  assert_int_equal(fl_store_fwd_each_unreported(f->s, 10, count_unreported, NULL), 0);
  assert_int_equal(nreported, 1); /* m2 is still queued: nothing to report */
  assert_int_equal(fl_store_fwd_reported(f->s, "m1", "w"), 0);
  nreported = 0;
  assert_int_equal(fl_store_fwd_each_unreported(f->s, 10, count_unreported, NULL), 0);
  assert_int_equal(nreported, 0);

  size_t n = 0;
  assert_int_equal(fl_store_fwd_prune(f->s, 10000, &n), 0);
  assert_int_equal(n, 1); /* only the finished one, however old the queued one is */
  fl_fwd got;
  assert_int_equal(fl_store_fwd_get(f->s, "m1", "w", &got), FL_ENOTFOUND);
  assert_int_equal(fl_store_fwd_get(f->s, "m2", "w", &got), 0);
  fl_fwd_clear(&got);
}

/* ---- exec backend ---- */

typedef struct exec_result {
  int done;
  int status;
  char why[160];
} exec_result;

static void exec_done(void *ctx, int status, enum fl_inject_state seen, const char *why) {
  exec_result *r = ctx;
  (void)seen;
  r->done++;
  r->status = status;
  snprintf(r->why, sizeof r->why, "%s", why ? why : "");
}

static void run_loop(uv_loop_t *loop) { uv_run(loop, UV_RUN_DEFAULT); }

static void test_exec_gets_stdin(void **state) {
  fixture *f = *state;
  const fl_inject_type *b = fl_inject_lookup("exec");
  assert_non_null(b);
  assert_null(b->status);
  char out[160], script[256];
  snprintf(out, sizeof out, "%s/got.txt", f->dir);
  snprintf(script, sizeof script, "cat > '%s'", out);
  const char *argv[] = {"/bin/sh", "-c", script, NULL};
  fl_inject_target t = {.label = "x", .argv = argv};
  const char text[] = "line one \"q\" $(no)\nline\ttwo\\\n";
  uv_loop_t loop;
  uv_loop_init(&loop);
  exec_result r = {0};
  assert_int_equal(b->deliver(&loop, &t, text, sizeof text - 1, exec_done, &r), 0);
  run_loop(&loop);
  assert_int_equal(r.done, 1);
  assert_int_equal(r.status, 0);
  FILE *fp = fopen(out, "rb");
  assert_non_null(fp);
  char got[256];
  size_t n = fread(got, 1, sizeof got, fp);
  fclose(fp);
  assert_int_equal(n, sizeof text - 1);
  assert_memory_equal(got, text, n);

  const char *fail_argv[] = {"/bin/sh", "-c", "cat >/dev/null; exit 3", NULL};
  t.argv = fail_argv;
  memset(&r, 0, sizeof r);
  assert_int_equal(b->deliver(&loop, &t, "x", 1, exec_done, &r), 0);
  run_loop(&loop);
  assert_int_equal(r.done, 1);
  assert_true(r.status < 0);
  assert_non_null(strstr(r.why, "status 3"));

  const char *missing[] = {"/nonexistent/agent-runner", NULL};
  t.argv = missing;
  memset(&r, 0, sizeof r);
  assert_true(b->deliver(&loop, &t, "x", 1, exec_done, &r) < 0);
  run_loop(&loop);
  assert_int_equal(r.done, 0); /* failed to start: done never runs */

  t.argv = NULL;
  assert_int_equal(b->deliver(&loop, &t, "x", 1, exec_done, &r), FL_EINVAL);
  assert_int_equal(uv_loop_close(&loop), 0);
}

static void test_backend_table(void **state) {
  (void)state;
  assert_non_null(fl_inject_lookup("tmux"));
  assert_non_null(fl_inject_lookup("tmux")->deliver);
  const fl_inject_type *none = fl_inject_lookup("none");
  assert_non_null(none);
  assert_null(none->deliver); /* held for a pull */
  assert_null(fl_inject_lookup("herdr"));
  assert_null(fl_inject_lookup(NULL));
}

/* ---- the forward path in a real gateway (single host, exec backend) ---- */

typedef struct gfix {
  fl_test_gw g;
  char out[128];
  fl_client *clients[8];
  size_t nclients;
} gfix;

static void gdetach_all(gfix *f) {
  while (f->nclients)
    fl_gw_detach(f->g.gw, &f->clients[--f->nclients]);
}

/* Profiles: "runner" appends each brief and a newline to <dir>/out.txt,
 * "broken" reads it and exits 2. */
static int gsetup(void **state) {
  gfix *f = fl_test_fixture_new(sizeof *f, "forward-gw");
  if (!f)
    return -1;
  fl_test_gw_stop(&f->g);
  snprintf(f->out, sizeof f->out, "%s/out.txt", f->g.dir);
  const char *names[] = {"broken", "runner"};
  for (int i = 0; i < 2; i++) {
    fl_profile *p = &f->g.cfg.profiles[f->g.cfg.nprofiles++];
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", names[i]);
    snprintf(p->backend, sizeof p->backend, "exec");
    snprintf(p->role, sizeof p->role, "worker");
    p->ready_timeout_s = 5;
    if (i == 0)
      snprintf(p->launch, sizeof p->launch,
               "{\"command\":[\"/bin/sh\",\"-c\",\"cat >/dev/null; exit 2\"],\"env\":{}}");
    else
      snprintf(p->launch, sizeof p->launch,
               "{\"command\":[\"/bin/sh\",\"-c\",\"cat >> \\\"$OUT\\\"; echo >> "
               "\\\"$OUT\\\"\"],\"env\":{\"OUT\":\"%s\"}}",
               f->out);
  }
  f->g.cfg.inject.timeout_s = 10;
  if (fl_test_gw_start(&f->g) != 0) {
    fl_test_fixture_free(f);
    return -1;
  }
  *state = f;
  return 0;
}

static int gteardown(void **state) {
  gdetach_all(*state);
  return fl_test_fixture_free(*state);
}

static fl_client *gattach(gfix *f, const char *name, const char *role) {
  fl_ident id = {.name = name, .role = role};
  fl_client *c = NULL;
  char err[512] = "";
  assert_int_equal(fl_gw_attach(f->g.gw, &id, NULL, NULL, &c, err, sizeof err), 0);
  f->clients[f->nclients++] = c;
  return c;
}

/* A worker that a profile's exec backend delivers to, as a spawn leaves it. */
static fl_entity *exec_worker(gfix *f, const char *name, const char *profile) {
  gattach(f, name, "worker");
  fl_entity *e = fl_entity_local_by_name(f->g.gw, name);
  assert_non_null(e);
  e->spawn.backend = fl_inject_lookup("exec");
  snprintf(e->spawn.profile, sizeof e->spawn.profile, "%s", profile);
  return e;
}

typedef struct sent {
  int done;
  json_t *result;
  char err[256];
} sent;

static void sent_cb(void *ctx, json_t *result, const char *err) {
  sent *s = ctx;
  s->done++;
  s->result = result;
  snprintf(s->err, sizeof s->err, "%s", err ? err : "");
}

/* fl_gw_send from c to `to`, run until it answers; returns its status. */
static const char *send_and_wait(gfix *f, fl_client *c, const char *to, const char *text, sent *s) {
  json_t *result = NULL;
  fl_wait *wait = NULL;
  char err[256] = "";
  memset(s, 0, sizeof *s);
  assert_int_equal(fl_gw_send(f->g.gw, c, to, text, 0, sent_cb, s, &result, &wait, err, sizeof err),
                   0);
  assert_null(result); /* a brief always waits for its outcome */
  assert_non_null(wait);
  for (int i = 0; i < 2000 && !s->done; i++)
    uv_run(&f->g.loop, UV_RUN_ONCE);
  assert_int_equal(s->done, 1);
  assert_non_null(s->result);
  return json_string_value(json_object_get(s->result, "status"));
}

static void test_gw_exec_brief_injected_once(void **state) {
  gfix *f = *state;
  fl_entity *w = exec_worker(f, "w", "runner");
  fl_client *lead = gattach(f, "lead", "lead");
  assert_int_equal(fl_forward_injects(f->g.gw, w), 1);
  assert_string_equal(fl_forward_delivery(f->g.gw, w), "inject");
  assert_string_equal(fl_forward_delivery(f->g.gw, fl_entity_local_by_name(f->g.gw, "lead")),
                      "pull");
  sent s;
  assert_string_equal(send_and_wait(f, lead, "w", "do \"this\" $(now)\tplease", &s), "injected");
  json_decref(s.result);
  assert_string_equal(send_and_wait(f, lead, "w", "and then that", &s), "injected");
  json_decref(s.result);
  FILE *fp = fopen(f->out, "r");
  assert_non_null(fp);
  char got[2048] = "";
  size_t n = fread(got, 1, sizeof got - 1, fp);
  fclose(fp);
  got[n] = '\0';
  /* Each opens with fleet's provenance line (provenance.h), then the text. */
  const char *prov = "(fleet) from lead@hostA (role lead), verified: local, msgId ";
  assert_int_equal(strncmp(got, prov, strlen(prov)), 0);
  const char *first = strstr(got, "\ndo \"this\" $(now)\tplease\n");
  assert_non_null(first);
  const char *second = first + strlen("\ndo \"this\" $(now)\tplease\n");
  assert_int_equal(strncmp(second, prov, strlen(prov)), 0);
  const char *tail = strchr(second, '\n');
  assert_non_null(tail);
  assert_string_equal(tail, "\nand then that\n");
  assert_int_equal(f->g.gw->counters[FL_C_BRIEFS_INJECTED], 2);
  /* Nothing was held for a poll. */
  size_t held = 1;
  assert_int_equal(fl_store_count(f->g.gw->store, w->gid, 0, &held), 0);
  assert_int_equal(held, 0);
}

static void test_gw_failed_delivery_reports_reason(void **state) {
  gfix *f = *state;
  exec_worker(f, "w2", "broken");
  fl_client *lead = gattach(f, "lead", "lead");
  sent s;
  assert_string_equal(send_and_wait(f, lead, "w2", "will not go", &s), "failed");
  const char *why = json_string_value(json_object_get(s.result, "reason"));
  assert_non_null(why);
  assert_non_null(strstr(why, "status 2"));
  json_decref(s.result);
  assert_int_equal(f->g.gw->counters[FL_C_INJECT_FAILURES], 1);
}

static void test_gw_restart_mid_typing_fails_and_never_retypes(void **state) {
  gfix *f = *state;
  fl_entity *w = exec_worker(f, "w3", "runner");
  fl_client *lead = gattach(f, "lead", "lead");
  /* Two briefs as a previous run left them: one marked typing, one not
   * started, both within their deadline. */
  fl_fwd a, b;
  memset(&a, 0, sizeof a);
  snprintf(a.msg_id, sizeof a.msg_id, "11111111-1111-4111-8111-111111111111");
  snprintf(a.to_gid, sizeof a.to_gid, "%s", w->gid);
  snprintf(a.from_gid, sizeof a.from_gid, "%s", fl_client_gid(lead));
  a.at_ms = fl_now_ms();
  a.deadline_ms = a.at_ms + 60000;
  a.content = "half typed";
  a.content_len = strlen(a.content);
  b = a;
  snprintf(b.msg_id, sizeof b.msg_id, "22222222-2222-4222-8222-222222222222");
  b.content = "not started";
  b.content_len = strlen(b.content);
  fl_gw *gw = f->g.gw;
  char wgid[FL_ID_LEN];
  snprintf(wgid, sizeof wgid, "%s", w->gid); /* w goes with the gateway */
  fl_store_fwd_put(gw->store, &a);
  fl_store_fwd_set(gw->store, a.msg_id, w->gid, FL_FWD_TYPING, NULL);
  gdetach_all(f);
  fl_test_gw_stop(&f->g);
  /* The restarted gateway: the spawned worker is back with its backend. */
  assert_int_equal(fl_test_gw_start(&f->g), 0);
  gw = f->g.gw;
  assert_int_equal(gw->counters[FL_C_INJECT_FAILURES], 1);
  fl_fwd got;
  assert_int_equal(fl_store_fwd_get(gw->store, a.msg_id, wgid, &got), 0);
  assert_int_equal(got.state, FL_FWD_FAILED);
  assert_string_equal(got.reason, "gateway restarted while typing");
  fl_fwd_clear(&got);
  /* A redelivered copy is refused: it is never typed twice. */
  w = exec_worker(f, "w3", "runner");
  char err[256];
  fl_msg m;
  memset(&m, 0, sizeof m);
  snprintf(m.msg_id, sizeof m.msg_id, "%s", a.msg_id);
  snprintf(m.from_gid, sizeof m.from_gid, "%s", a.from_gid);
  m.content = "half typed";
  m.content_len = strlen(m.content);
  assert_int_equal(fl_forward_take(gw, w, &m, "hostB", err, sizeof err), FL_EDUP);
  assert_int_equal(gw->counters[FL_C_BRIEFS_DUPLICATE], 1);
  /* One never started is still typed, within its bound. */
  assert_int_equal(fl_store_fwd_put(gw->store, &b), 0);
  assert_int_equal(fl_forward_take(gw, w, &m, "hostB", err, sizeof err), FL_EDUP);
  m = (fl_msg){0};
  snprintf(m.msg_id, sizeof m.msg_id, "33333333-3333-4333-8333-333333333333");
  m.content = "third";
  m.content_len = 5;
  m.expires_ms = fl_now_ms() + 60000;
  assert_int_equal(fl_forward_take(gw, w, &m, "", err, sizeof err), 0);
  for (int i = 0; i < 2000 && gw->counters[FL_C_BRIEFS_INJECTED] < 2; i++)
    uv_run(&f->g.loop, UV_RUN_ONCE);
  assert_int_equal(gw->counters[FL_C_BRIEFS_INJECTED], 2);
  FILE *fp = fopen(f->out, "r");
  assert_non_null(fp);
  char text[2048] = "";
  size_t n = fread(text, 1, sizeof text - 1, fp);
  fclose(fp);
  text[n] = '\0';
  /* Each opens with fleet's provenance line (provenance.h): read past them. */
  char body[2048] = "";
  size_t lines = 0;
  for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
    if (strncmp(line, "(fleet) from ", 13) == 0) {
      lines++;
      continue;
    }
    strcat(body, line);
    strcat(body, "\n");
  }
  assert_int_equal(lines, 2);
  assert_string_equal(body, "not started\nthird\n"); /* in order; "half typed" never */
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
#define G(fn) cmocka_unit_test_setup_teardown(fn, gsetup, gteardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_queue_order_and_dedup),
      T(test_restart_fails_typing_and_keeps_dedup),
      T(test_unreported_and_prune),
      T(test_exec_gets_stdin),
      T(test_backend_table),
      G(test_gw_exec_brief_injected_once),
      G(test_gw_failed_delivery_reports_reason),
      G(test_gw_restart_mid_typing_fails_and_never_retypes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
