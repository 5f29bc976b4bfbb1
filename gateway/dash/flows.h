/* flows.h — the recent flows the dashboard lists: a ring of the last
 * messages this gateway committed or published (send, reply, broadcast),
 * with who sent them to whom and, for a send, how long its reply took.
 *
 * A reply that names the send it answers (inReplyTo) closes that send: its
 * status turns "replied" and the time between the two is its latency. */
#ifndef FL_FLOWS_H
#define FL_FLOWS_H

#include <jansson.h>
#include <stddef.h>

#include "common/ids.h"
#include "common/limits.h"

#define FL_FLOWS_RING 256

typedef struct fl_flow {
  char msg_id[FL_ID_LEN];
  char trace_id[FL_ID_LEN];
  char in_reply_to[FL_ID_LEN];
  char kind[16];
  char from[FL_MAX_NAME + 80]; /* name@host */
  char to[FL_MAX_NAME + 80];
  long long ts_ms;
  long long latency_ms; /* -1 = none (yet) */
  int replied;
} fl_flow;

typedef struct fl_flows {
  fl_flow at[FL_FLOWS_RING];
  size_t next, n;
} fl_flows;

/* Records one message at now_ms. When it is a reply to a send still in the
 * ring, that send is closed and its latency in ms returned; else -1. */
long long fl_flows_add(fl_flows *f, const char *msg_id, const char *trace_id, const char *kind,
                       const char *in_reply_to, const char *from, const char *to, long long now_ms);

/* The newest limit flows, newest first, as the JSON API shows them. */
json_t *fl_flows_json(const fl_flows *f, size_t limit);

#endif
