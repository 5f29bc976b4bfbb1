/* test_wait.c — unit tests for gateway/core/wait.c: waiting calls on a real loop.
 *
 * Each test runs a real single-host gateway on its own libuv loop, with
 * short real timeouts (tens of milliseconds). Covered: a waiter times out
 * and calls back exactly once; a cancelled waiter, and the waiters of a
 * session that ends, never call back; the per-session cap; a long poll that
 * a message wakes before its time (handed to it, never held, when nothing
 * else is held); a blocking send that its reply resolves;
 * shutdown ending every waiting call at once; the caller's nudge armed
 * again after an answered call exactly when it still holds messages. */
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

#include "common/alloc.h"
#include "common/error.h"
#include "common/log.h"
#include "gateway/core/gw_internal.h"
#include "gateway/core/nudge.h"
#include "gateway/core/wait.h"
#include "tests/support/test_gw.h"
#include "tests/support/test_util.h"

typedef struct fixture {
  fl_test_gw g;
} fixture;

/* What a callback saw. */
typedef struct seen {
  int calls;
  json_t *result;
  char err[256];
} seen;

static void seen_cb(void *ctx, json_t *result, const char *err) {
  seen *s = ctx;
  s->calls++;
  json_decref(s->result);
  s->result = result;
  snprintf(s->err, sizeof s->err, "%s", err ? err : "");
}

static int setup(void **state) {
  *state = fl_test_fixture_new(sizeof(fixture), "wait");
  return *state ? 0 : -1;
}

static int teardown(void **state) { return fl_test_fixture_free(*state); }

static fl_client *attach(fixture *f, const char *name) {
  fl_ident id = {.name = name};
  fl_client *c = NULL;
  char err[512] = "";
  assert_int_equal(fl_gw_attach(f->g.gw, name ? &id : NULL, NULL, NULL, &c, err, sizeof err), 0);
  return c;
}

/* from sends content to the local entity to, with no wait: "sent". */
static void send_now(fl_gw *gw, fl_client *from, const char *to, const char *content) {
  json_t *sent = NULL;
  fl_wait *sw = NULL;
  char err[256] = "";
  assert_int_equal(fl_gw_send(gw, from, to, content, 0, seen_cb, NULL, &sent, &sw, err, sizeof err),
                   0);
  assert_null(sw);
  assert_string_equal(json_string_value(json_object_get(sent, "status")), "sent");
  json_decref(sent);
}

/* A waiter whose time is up completes with a count of its timeouts. */
static int timeouts;
static void count_timeout(fl_wait *w) {
  timeouts++;
  fl_wait_complete(w, json_integer(timeouts), NULL);
}
static int forgets;
static void count_forget(fl_wait *w) { forgets++; }
static const fl_wait_ops count_ops = {.timeout = count_timeout, .forget = count_forget};

static void test_timeout_calls_back_once(void **state) {
  fixture *f = *state;
  fl_client *c = attach(f, NULL);
  timeouts = forgets = 0;
  seen s = {0};
  fl_wait *w = NULL;
  char err[256] = "";
  assert_int_equal(
      fl_wait_new(f->g.gw, c, FL_WAIT_POLL, &count_ops, 0.02, seen_cb, &s, &w, err, sizeof err), 0);
  assert_non_null(w);
  assert_int_equal(c->nwaits, 1);
  assert_int_equal(s.calls, 0); /* never from inside the call */
  uv_run(&f->g.loop, UV_RUN_DEFAULT);
  assert_int_equal(s.calls, 1);
  assert_int_equal(timeouts, 1);
  assert_int_equal(forgets, 1); /* released as it completed */
  assert_int_equal(json_integer_value(s.result), 1);
  assert_string_equal(s.err, "");
  assert_int_equal(c->nwaits, 0);
  /* More loop turns bring nothing more. */
  uv_run(&f->g.loop, UV_RUN_NOWAIT);
  assert_int_equal(s.calls, 1);
  json_decref(s.result);
  fl_gw_detach(f->g.gw, &c);
}

static void test_cancel_never_calls_back(void **state) {
  fixture *f = *state;
  fl_client *c = attach(f, NULL);
  timeouts = forgets = 0;
  seen s = {0};
  fl_wait *w = NULL;
  char err[256] = "";
  assert_int_equal(
      fl_wait_new(f->g.gw, c, FL_WAIT_POLL, &count_ops, 0.01, seen_cb, &s, &w, err, sizeof err), 0);
  fl_gw_cancel(f->g.gw, &w);
  assert_null(w);
  assert_int_equal(forgets, 1);
  fl_gw_cancel(f->g.gw, &w); /* NULL-safe */
  fl_gw_cancel(f->g.gw, NULL);
  uv_run(&f->g.loop, UV_RUN_DEFAULT);
  assert_int_equal(s.calls, 0);
  assert_int_equal(timeouts, 0);
  assert_int_equal(c->nwaits, 0);
  fl_gw_detach(f->g.gw, &c);
}

static void test_detach_releases_silently(void **state) {
  fixture *f = *state;
  fl_client *c = attach(f, "alice");
  seen s = {0};
  json_t *result = NULL;
  fl_wait *w = NULL;
  char err[256] = "";
  assert_int_equal(
      fl_gw_poll(f->g.gw, c, NULL, 0.02, 0, seen_cb, &s, NULL, &result, &w, err, sizeof err), 0);
  assert_null(result);
  assert_non_null(w);
  fl_gw_detach(f->g.gw, &c);
  uv_run(&f->g.loop, UV_RUN_DEFAULT);
  assert_int_equal(s.calls, 0);
}

static void test_poll_times_out_empty(void **state) {
  fixture *f = *state;
  fl_client *c = attach(f, "alice");
  seen s = {0};
  json_t *result = NULL;
  fl_wait *w = NULL;
  char err[256] = "";
  assert_int_equal(
      fl_gw_poll(f->g.gw, c, NULL, 0.03, 0, seen_cb, &s, NULL, &result, &w, err, sizeof err), 0);
  assert_non_null(w);
  uv_run(&f->g.loop, UV_RUN_DEFAULT);
  assert_int_equal(s.calls, 1);
  assert_non_null(s.result);
  assert_int_equal(json_array_size(json_object_get(s.result, "messages")), 0);
  assert_int_equal(json_integer_value(json_object_get(s.result, "remaining")), 0);
  json_decref(s.result);
  fl_gw_detach(f->g.gw, &c);
}

static void test_per_client_cap(void **state) {
  fixture *f = *state;
  fl_client *c = attach(f, NULL);
  seen s = {0};
  fl_wait *w[FL_MAX_WAITERS_PER_CLIENT];
  char err[256] = "";
  for (int i = 0; i < FL_MAX_WAITERS_PER_CLIENT; i++)
    assert_int_equal(
        fl_wait_new(f->g.gw, c, FL_WAIT_POLL, &count_ops, 10, seen_cb, &s, &w[i], err, sizeof err),
        0);
  assert_int_equal(fl_wait_room(c, err, sizeof err), FL_EFULL);
  fl_wait *over = NULL;
  assert_int_equal(
      fl_wait_new(f->g.gw, c, FL_WAIT_POLL, &count_ops, 0.01, seen_cb, &s, &over, err, sizeof err),
      FL_EFULL);
  assert_null(over);
  char want[32];
  snprintf(want, sizeof want, "at most %d", FL_MAX_WAITERS_PER_CLIENT);
  assert_non_null(strstr(err, want));
  /* One ends: there is room again. */
  fl_gw_cancel(f->g.gw, &w[0]);
  assert_int_equal(fl_wait_room(c, err, sizeof err), 0);
  for (int i = 1; i < FL_MAX_WAITERS_PER_CLIENT; i++)
    fl_gw_cancel(f->g.gw, &w[i]);
  uv_run(&f->g.loop, UV_RUN_DEFAULT);
  assert_int_equal(s.calls, 0);
  fl_gw_detach(f->g.gw, &c);
}

/* A message for a long poll ends it before its time, with the message. */
static void test_poll_woken_by_message(void **state) {
  fixture *f = *state;
  fl_client *alice = attach(f, "alice"), *bob = attach(f, "bob");
  seen s = {0};
  json_t *result = NULL;
  fl_wait *w = NULL;
  char err[256] = "";
  assert_int_equal(
      fl_gw_poll(f->g.gw, alice, NULL, 30, 0, seen_cb, &s, NULL, &result, &w, err, sizeof err), 0);
  assert_non_null(w);
  send_now(f->g.gw, bob, "alice", "hello");
  assert_int_equal(s.calls, 1); /* woken at once, no loop turn needed */
  json_t *msgs = json_object_get(s.result, "messages");
  assert_int_equal(json_array_size(msgs), 1);
  assert_string_equal(json_string_value(json_object_get(json_array_get(msgs, 0), "content")),
                      "hello");
  json_decref(s.result);
  uv_run(&f->g.loop, UV_RUN_DEFAULT);
  assert_int_equal(s.calls, 1);
  fl_gw_detach(f->g.gw, &alice);
  fl_gw_detach(f->g.gw, &bob);
}

/* A message for a waiting poll whose recipient holds nothing is handed to
 * that poll and never held (messages_handed); one that comes while the
 * recipient holds something is held behind it and taken in order. */
static void test_handed_to_a_waiting_poll(void **state) {
  fixture *f = *state;
  fl_gw *gw = f->g.gw;
  fl_client *alice = attach(f, "alice"), *bob = attach(f, "bob"), *carol = attach(f, "carol");
  seen s = {0};
  json_t *result = NULL;
  fl_wait *w = NULL;
  char err[256] = "";
  size_t held = 99;
  assert_int_equal(
      fl_gw_poll(gw, alice, NULL, 30, 0, seen_cb, &s, NULL, &result, &w, err, sizeof err), 0);
  send_now(gw, bob, "alice", "one");
  assert_int_equal(s.calls, 1);
  json_t *msgs = json_object_get(s.result, "messages");
  assert_int_equal(json_array_size(msgs), 1);
  assert_string_equal(json_string_value(json_object_get(json_array_get(msgs, 0), "content")),
                      "one");
  assert_int_equal(json_integer_value(json_object_get(s.result, "remaining")), 0);
  assert_int_equal(gw->counters[FL_C_MSGS_HANDED], 1);
  assert_int_equal(gw->counters[FL_C_MSGS_DRAINED], 1);
  assert_int_equal(fl_store_total(gw->store, &held), 0);
  assert_int_equal(held, 0);
  json_decref(s.result);
  s.result = NULL;

  /* bob's next waits held; alice then waits for carol only: carol's
   * message is held behind bob's (not handed), and the poll takes it. */
  send_now(gw, bob, "alice", "two");
  assert_int_equal(
      fl_gw_poll(gw, alice, "carol", 30, 0, seen_cb, &s, NULL, &result, &w, err, sizeof err), 0);
  assert_non_null(w);
  send_now(gw, carol, "alice", "three");
  assert_int_equal(s.calls, 2);
  msgs = json_object_get(s.result, "messages");
  assert_int_equal(json_array_size(msgs), 1);
  assert_string_equal(json_string_value(json_object_get(json_array_get(msgs, 0), "content")),
                      "three");
  assert_int_equal(json_integer_value(json_object_get(s.result, "remaining")), 1);
  assert_int_equal(gw->counters[FL_C_MSGS_HANDED], 1);
  json_decref(s.result);
  assert_int_equal(fl_store_total(gw->store, &held), 0);
  assert_int_equal(held, 1); /* bob's "two" */
  fl_gw_detach(gw, &alice);
  fl_gw_detach(gw, &bob);
  fl_gw_detach(gw, &carol);
}

/* Inside a store batch a poll woken by a message is answered only once the
 * batch committed: the take it made is durable before any client sees it. */
static void test_answer_waits_for_the_commit(void **state) {
  fixture *f = *state;
  fl_client *alice = attach(f, "alice"), *bob = attach(f, "bob");
  seen s = {0};
  json_t *result = NULL;
  fl_wait *w = NULL;
  char err[256] = "";
  assert_int_equal(
      fl_gw_poll(f->g.gw, alice, NULL, 30, 0, seen_cb, &s, NULL, &result, &w, err, sizeof err), 0);
  assert_non_null(w);
  assert_int_equal(fl_store_batch_begin(f->g.gw->store), 0);
  fl_wait_defer_begin(f->g.gw);
  send_now(f->g.gw, bob, "alice", "hello");
  assert_int_equal(s.calls, 0); /* taken, but not handed out before the commit */
  assert_int_equal(fl_store_batch_end(f->g.gw->store), 0);
  fl_wait_defer_end(f->g.gw);
  assert_int_equal(s.calls, 1);
  json_t *msgs = json_object_get(s.result, "messages");
  assert_int_equal(json_array_size(msgs), 1);
  json_decref(s.result);
  fl_gw_detach(f->g.gw, &alice);
  fl_gw_detach(f->g.gw, &bob);
}

/* A blocking send is resolved by its reply. */
static void test_send_resolved_by_reply(void **state) {
  fixture *f = *state;
  fl_client *alice = attach(f, "alice"), *bob = attach(f, "bob");
  seen s = {0};
  json_t *result = NULL;
  fl_wait *w = NULL;
  char err[256] = "";
  assert_int_equal(
      fl_gw_send(f->g.gw, alice, "bob", "question", 30, seen_cb, &s, &result, &w, err, sizeof err),
      0);
  assert_null(result);
  assert_non_null(w);
  json_t *rep = NULL;
  fl_wait *rw = NULL;
  assert_int_equal(
      fl_gw_reply(f->g.gw, bob, "alice", "answer", NULL, seen_cb, NULL, &rep, &rw, err, sizeof err),
      0);
  assert_string_equal(json_string_value(json_object_get(rep, "status")), "delivered");
  json_decref(rep);
  assert_int_equal(s.calls, 1);
  assert_string_equal(json_string_value(json_object_get(s.result, "status")), "replied");
  json_t *reply = json_object_get(s.result, "reply");
  assert_string_equal(json_string_value(json_object_get(reply, "content")), "answer");
  assert_int_equal(f->g.gw->counters[FL_C_MSGS_HANDED], 1); /* never held */
  /* The reply names the send it answers and shares its trace. */
  assert_string_equal(json_string_value(json_object_get(reply, "inReplyTo")),
                      json_string_value(json_object_get(s.result, "msgId")));
  assert_string_equal(json_string_value(json_object_get(reply, "traceId")),
                      json_string_value(json_object_get(s.result, "traceId")));
  json_decref(s.result);
  fl_gw_detach(f->g.gw, &alice);
  fl_gw_detach(f->g.gw, &bob);
}

/* Shutdown ends every waiting call now: a send reads pending. */
static void test_shutdown_ends_waits(void **state) {
  fixture *f = *state;
  fl_client *alice = attach(f, "alice"), *bob = attach(f, "bob");
  seen s = {0};
  json_t *result = NULL;
  fl_wait *w = NULL;
  char err[256] = "";
  assert_int_equal(
      fl_gw_send(f->g.gw, alice, "bob", "anyone?", 30, seen_cb, &s, &result, &w, err, sizeof err),
      0);
  fl_gw_shutdown(f->g.gw);
  assert_int_equal(s.calls, 1);
  assert_string_equal(json_string_value(json_object_get(s.result, "status")), "pending");
  json_decref(s.result);
  assert_int_equal(alice->nwaits, 0);
  /* A shut-down gateway takes no new session. */
  fl_client *late = NULL;
  fl_ident id = {.name = "late"};
  assert_int_equal(fl_gw_attach(f->g.gw, &id, NULL, NULL, &late, err, sizeof err), FL_EOFFLINE);
  /* Sessions still end as usual (teardown's shutdown is a no-op now). */
  fl_gw_detach(f->g.gw, &alice);
  fl_gw_detach(f->g.gw, &bob);
}

/* Alice's send, waiting for bob's reply; bob replies at once. */
static void ask_bob(fixture *f, fl_client *alice, fl_client *bob) {
  seen s = {0};
  json_t *result = NULL, *rep = NULL;
  fl_wait *w = NULL, *rw = NULL;
  char err[256] = "";
  assert_int_equal(
      fl_gw_send(f->g.gw, alice, "bob", "question", 30, seen_cb, &s, &result, &w, err, sizeof err),
      0);
  assert_non_null(w);
  assert_int_equal(
      fl_gw_reply(f->g.gw, bob, "alice", "answer", NULL, seen_cb, NULL, &rep, &rw, err, sizeof err),
      0);
  json_decref(rep);
  assert_int_equal(s.calls, 1);
  assert_string_equal(json_string_value(json_object_get(s.result, "status")), "replied");
  json_decref(s.result);
}

/* After an answered call the caller's nudge is armed again exactly when it
 * still holds messages, also when the store last counted it empty
 * (store_empty.c): a message held for it since must be seen. */
static void test_nudge_rearmed_after_answer(void **state) {
  fixture *f = *state;
  fl_client *alice = attach(f, "alice"), *bob = attach(f, "bob"), *carol = attach(f, "carol");
  fl_entity *a = alice->entity;
  f->g.gw->cfg.nudge.enabled = 1;
  f->g.gw->cfg.nudge.first_ms = 60000; /* armed, never fired here */
  ask_bob(f, alice, bob);              /* alice holds nothing: counted empty, no nudge */
  assert_int_equal(a->nudge.armed, 0);
  ask_bob(f, alice, bob); /* the same, answered from what the store remembers */
  assert_int_equal(a->nudge.armed, 0);
  send_now(f->g.gw, carol, "alice", "held for alice");
  assert_int_equal(a->nudge.armed, 1); /* the message's own nudge */
  fl_nudge_stop(a);
  ask_bob(f, alice, bob); /* alice still holds carol's message */
  assert_int_equal(a->nudge.armed, 1);
  fl_gw_detach(f->g.gw, &alice);
  fl_gw_detach(f->g.gw, &bob);
  fl_gw_detach(f->g.gw, &carol);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_timeout_calls_back_once, setup, teardown),
      cmocka_unit_test_setup_teardown(test_cancel_never_calls_back, setup, teardown),
      cmocka_unit_test_setup_teardown(test_detach_releases_silently, setup, teardown),
      cmocka_unit_test_setup_teardown(test_poll_times_out_empty, setup, teardown),
      cmocka_unit_test_setup_teardown(test_per_client_cap, setup, teardown),
      cmocka_unit_test_setup_teardown(test_poll_woken_by_message, setup, teardown),
      cmocka_unit_test_setup_teardown(test_handed_to_a_waiting_poll, setup, teardown),
      cmocka_unit_test_setup_teardown(test_send_resolved_by_reply, setup, teardown),
      cmocka_unit_test_setup_teardown(test_answer_waits_for_the_commit, setup, teardown),
      cmocka_unit_test_setup_teardown(test_shutdown_ends_waits, setup, teardown),
      cmocka_unit_test_setup_teardown(test_nudge_rearmed_after_answer, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
