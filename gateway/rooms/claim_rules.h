/* claim_rules.h — who owns a resource, computed from a set of claim
 * messages the same way on every gateway, whatever order they arrived in.
 *
 * The events of one resource are put in a total order — earliest ts first,
 * then the smallest `from` (the agent's gid), then the smallest msgId — and
 * replayed: a claim takes a free resource (the first valid claim wins, so a
 * tie goes to the earliest ts, then the smallest from); the owner's own
 * claim renews its expiry; a release by the owner frees it; a handoff is
 * valid only from the current owner and moves ownership to its target; an
 * owner whose TTL ran out (by the next event's ts, or by now) holds nothing.
 * Anything else (a release or handoff from a non-owner, a claim on a held
 * resource) changes nothing. An agent is the same agent only on the same
 * host: a host cannot release or hand off a claim of another host's agent
 * by naming its gid.
 *
 * Time: ts is the sending host's wall clock, so hosts' clocks must agree
 * within the settle window. fl_claim_admit is the receiver's check before an
 * event joins its log: an event dated more than the window ahead of the
 * receiver's clock is refused, and one dated more than the window behind it
 * (late: backdated, or from a host whose clock runs slow) is refused when it
 * would take the resource from an owner that has settled here. So an owner
 * settled on this host stays the owner until it releases, hands off or
 * expires, whatever a peer dates its events.
 *
 * Pure; safe on any thread. */
#ifndef FL_CLAIM_RULES_H
#define FL_CLAIM_RULES_H

#include <stddef.h>

#include "common/limits.h"

#define FL_CLAIM_MAX_RESOURCE 128

typedef enum fl_claim_op { FL_CLAIM_ISSUE, FL_CLAIM_RELEASE, FL_CLAIM_HANDOFF } fl_claim_op;

/* An agent that can own: gid (may be "" for a handoff target known only as
 * name@host), name, host. */
typedef struct fl_claim_agent {
  char gid[FL_ID_LEN];
  char name[FL_MAX_NAME + 1];
  char host[64];
} fl_claim_agent;

typedef struct fl_claim_event {
  fl_claim_op op;
  char msg_id[FL_ID_LEN];
  char resource[FL_CLAIM_MAX_RESOURCE + 1];
  long long ts_ms;
  long long ttl_ms;    /* ISSUE */
  fl_claim_agent from; /* who sent it */
  fl_claim_agent to;   /* HANDOFF */
} fl_claim_event;

typedef struct fl_claim_state {
  int owned; /* 0: free */
  fl_claim_agent owner;
  long long since_ms;     /* ts of the event that made the owner */
  long long expires_ms;   /* when the owner's TTL runs out */
  char msg_id[FL_ID_LEN]; /* that event */
} fl_claim_state;

/* 1 when agent a is agent b: the same gid when both have one, else the
 * same name and host. */
int fl_claim_agent_is(const fl_claim_agent *a, const fl_claim_agent *b);

/* Why fl_claim_admit refuses an event. */
typedef enum fl_claim_admit_rc {
  FL_CLAIM_ADMITTED = 0,
  FL_CLAIM_FUTURE, /* ts is more than settle_ms ahead of now_ms */
  FL_CLAIM_LATE    /* ts is settle_ms or more behind now_ms and it would unseat a settled owner */
} fl_claim_admit_rc;

/* Whether e, arriving at now_ms, may join a log of n events (any order; all
 * resources; sorted in place) whose claims settle after settle_ms. events
 * must have room for n + 1 (events[n] is scratch). */
fl_claim_admit_rc fl_claim_admit(fl_claim_event *events, size_t n, const fl_claim_event *e,
                                 long long now_ms, long long settle_ms);

/* The state of resource at now_ms from events (n of them, any order, other
 * resources' ignored). events is sorted in place. */
void fl_claim_compute(fl_claim_event *events, size_t n, const char *resource, long long now_ms,
                      fl_claim_state *out);

#endif
