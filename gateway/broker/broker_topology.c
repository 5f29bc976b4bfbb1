/* broker_topology.c — what the broker link declares on the broker, on the
 * broker thread: the shared exchanges and queues, this gateway's control and
 * roster queues, and one inbox per entity the loop adds.
 *
 * The names come from topology.h. The shared part is declared on the
 * system channel on every connect; any failure there fails the connection
 * attempt, which is retried with backoff (broker_conn.c). Each inbox gets a
 * channel of its own, because AMQP reports a refused exclusive consumer or a
 * queue declared with other arguments by closing the channel: on a shared
 * channel one bad inbox would take every other consumer down with it. So a
 * channel-level failure here is one inbox's problem (reported through
 * on_inbox and retried every FL_BROKER_INBOX_RETRY_MS), and only a lost
 * connection is the link's. The registry of inboxes lives here too: it is
 * what a reconnect restores. */
#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/log.h"
#include "common/time.h"
#include "gateway/broker/broker_internal.h"
#include "gateway/proto/topology.h"

/* ---- declaring ---- */

static int declare_exchange(fl_broker *b, const char *name, const char *type, char *why, size_t n) {
  char what[96];
  fl_errf(what, sizeof(what), "declare exchange %s", name);
  amqp_exchange_declare(b->conn, FL_BROKER_CH_SYSTEM, amqp_cstring_bytes(name),
                        amqp_cstring_bytes(type), 0, 1, 0, 0, amqp_empty_table);
  return fl_broker_rpc_result(b, FL_BROKER_CH_SYSTEM, what, why, n);
}

static int bind_queue(fl_broker *b, uint16_t ch, const char *q, const char *ex, const char *key,
                      char *why, size_t n) {
  char what[FL_BROKER_SHORTSTR + 64];
  fl_errf(what, sizeof(what), "bind %s to %s key %s", q, ex, key);
  amqp_queue_bind(b->conn, ch, amqp_cstring_bytes(q), amqp_cstring_bytes(ex),
                  amqp_cstring_bytes(key), amqp_empty_table);
  return fl_broker_rpc_result(b, ch, what, why, n);
}

static int unbind_queue(fl_broker *b, uint16_t ch, const char *q, const char *ex, const char *key,
                        char *why, size_t n) {
  amqp_queue_unbind(b->conn, ch, amqp_cstring_bytes(q), amqp_cstring_bytes(ex),
                    amqp_cstring_bytes(key), amqp_empty_table);
  return fl_broker_rpc_result(b, ch, "unbind", why, n);
}

static int consume(fl_broker *b, uint16_t ch, const char *q, const char *tag, char *why, size_t n) {
  char what[FL_BROKER_SHORTSTR + 32];
  fl_errf(what, sizeof(what), "consume %s", q);
  amqp_basic_consume(b->conn, ch, amqp_cstring_bytes(q), amqp_cstring_bytes(tag), 0, 0, 1,
                     amqp_empty_table);
  return fl_broker_rpc_result(b, ch, what, why, n);
}

/* A queue name from a topology builder, or why it could not be made (the
 * host id and gids were checked already, so this means a bug). */
static int topo_name(int rc, const char *what, const char *part, char *why, size_t n) {
  if (rc)
    fl_errf(why, n, "cannot name the %s for %s: %s", what, part, fl_strerror(rc));
  return rc;
}

/* 1 if the durable system queues are declared as quorum queues too. A
 * classic one is declared without x-queue-type, as it always was, so an
 * existing queue still matches its declaration. */
static int quorum(const fl_broker *b) { return strcmp(b->queue_type, "quorum") == 0; }

/* The overflow policy of an inbox. A classic inbox refuses the newest
 * message (the publisher gets a nack) and dead-letters it; a quorum queue
 * does not support reject-publish-dlx, so a quorum inbox says drop-head:
 * the oldest message is dead-lettered to fleet.dlq. */
static const char *inbox_overflow(const fl_broker *b) {
  return quorum(b) ? "drop-head" : "reject-publish-dlx";
}

int fl_broker_topology_declare(fl_broker *b, char *why, size_t n) {
  const uint16_t ch = FL_BROKER_CH_SYSTEM;
  char q[FL_BROKER_SHORTSTR];
  int rc;
  if ((rc = declare_exchange(b, FL_EX_MSG, FL_EX_MSG_TYPE, why, n)) ||
      (rc = declare_exchange(b, FL_EX_ROSTER, FL_EX_ROSTER_TYPE, why, n)) ||
      (rc = declare_exchange(b, FL_EX_CONTROL, FL_EX_CONTROL_TYPE, why, n)) ||
      (rc = declare_exchange(b, FL_EX_CLAIMS, FL_EX_CLAIMS_TYPE, why, n)) ||
      (rc = declare_exchange(b, FL_EX_DLX, FL_EX_DLX_TYPE, why, n)))
    return rc;

  /* With queueType quorum every durable queue is a quorum queue: on a
   * cluster a classic queue lives on one node and is gone with it. The
   * x-queue-type entry comes last, so a classic declaration leaves it out. */
  amqp_table_entry_t dlq_args[] = {fl_broker_entry_long("x-max-length", FL_BROKER_DLQ_MAX_LENGTH),
                                   fl_broker_entry_str("x-queue-type", b->queue_type)};
  amqp_table_t dlq_table = {quorum(b) ? 2 : 1, dlq_args};
  amqp_queue_declare(b->conn, ch, amqp_cstring_bytes(FL_Q_DLQ), 0, 1, 0, 0, dlq_table);
  if ((rc = fl_broker_rpc_result(b, ch, "declare queue " FL_Q_DLQ, why, n)) ||
      (rc = bind_queue(b, ch, FL_Q_DLQ, FL_EX_DLX, FL_KEY_DLQ, why, n)))
    return rc;

  amqp_basic_qos(b->conn, ch, 0, (uint16_t)b->prefetch, 0);
  if ((rc = fl_broker_rpc_result(b, ch, "basic.qos", why, n)))
    return rc;

  /* control.<host>: durable, bound by the host id itself. */
  if ((rc = topo_name(fl_topology_control_queue(q, sizeof(q), b->host_id), "control queue",
                      b->host_id, why, n)))
    return rc;
  amqp_table_entry_t control_args[] = {fl_broker_entry_str("x-queue-type", b->queue_type)};
  amqp_table_t control_table = {quorum(b) ? 1 : 0, control_args};
  amqp_queue_declare(b->conn, ch, amqp_cstring_bytes(q), 0, 1, 0, 0, control_table);
  if ((rc = fl_broker_rpc_result(b, ch, "declare control queue", why, n)) ||
      (rc = bind_queue(b, ch, q, FL_EX_CONTROL, b->host_id, why, n)) ||
      (rc = consume(b, ch, q, FL_BROKER_TAG_CONTROL, why, n)))
    return rc;

  /* roster.<host>: exclusive and auto-delete, it lives as long as we do. */
  if ((rc = topo_name(fl_topology_roster_queue(q, sizeof(q), b->host_id), "roster queue",
                      b->host_id, why, n)))
    return rc;
  amqp_queue_declare(b->conn, ch, amqp_cstring_bytes(q), 0, 0, 1, 1, amqp_empty_table);
  if ((rc = fl_broker_rpc_result(b, ch, "declare roster queue", why, n)) ||
      (rc = bind_queue(b, ch, q, FL_EX_ROSTER, FL_KEY_ROSTER_ALL, why, n)) ||
      (rc = consume(b, ch, q, FL_BROKER_TAG_ROSTER, why, n)))
    return rc;

  /* claims.<host>: durable, so claims made while this gateway was down
   * wait for it. */
  if ((rc = topo_name(fl_topology_claims_queue(q, sizeof(q), b->host_id), "claims queue",
                      b->host_id, why, n)))
    return rc;
  amqp_table_entry_t claims_args[] = {
      fl_broker_entry_long("x-max-length", FL_BROKER_CLAIMS_MAX_LENGTH),
      fl_broker_entry_long("x-expires", FL_BROKER_CLAIMS_EXPIRES_MS),
      fl_broker_entry_str("x-queue-type", b->queue_type)};
  amqp_table_t claims_table = {quorum(b) ? 3 : 2, claims_args};
  amqp_queue_declare(b->conn, ch, amqp_cstring_bytes(q), 0, 1, 0, 0, claims_table);
  if ((rc = fl_broker_rpc_result(b, ch, "declare claims queue", why, n)) ||
      (rc = bind_queue(b, ch, q, FL_EX_CLAIMS, FL_KEY_CLAIMS, why, n)) ||
      (rc = consume(b, ch, q, FL_BROKER_TAG_CLAIMS, why, n)))
    return rc;
  return 0;
}

/* ---- inboxes ---- */

void fl_broker_inbox_free(struct inbox *ib) {
  if (!ib)
    return;
  for (size_t i = 0; i < ib->ngroups; i++)
    fl_free(ib->groups[i]);
  fl_free(ib->groups);
  fl_free(ib->ch.body);
  fl_broker_acks_free(&ib->ch.acks);
  fl_free(ib);
}

static struct inbox *inbox_find(fl_broker *b, const char *gid, size_t *idx) {
  for (size_t i = 0; i < b->ninboxes; i++) {
    if (strcmp(b->inboxes[i]->gid, gid) == 0) {
      if (idx)
        *idx = i;
      return b->inboxes[i];
    }
  }
  return NULL;
}

static int has_group(char *const *groups, size_t n, const char *g) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(groups[i], g) == 0)
      return 1;
  return 0;
}

/* Binds (or unbinds) q to fleet.msg with the broadcast key of group.
 * Returns as fl_broker_rpc_result. Groups were checked against the name rule
 * when the loop added them, so a key that cannot be built is a bug: it is
 * logged and skipped rather than failing the inbox. */
static int bind_group(fl_broker *b, uint16_t ch, const char *q, const char *group, int unbind,
                      char *why, size_t n) {
  /* Both keys of the group: this host's copy of a sealed broadcast, and the
   * one in clear that a gateway with broker.seal false publishes (only
   * when bodies in clear are taken: b->clear_broadcasts). group
   * NULL is everyone (broadcast.<host>.all and broadcast.all). */
  char keys[2][FL_BROKER_SHORTSTR];
  int rc = fl_topology_host_broadcast_key(keys[0], sizeof(keys[0]), b->host_id, group);
  if (rc == 0)
    rc = fl_topology_broadcast_key(keys[1], sizeof(keys[1]), group);
  if (rc) {
    fl_error(NULL, "broker: no broadcast key for group \"%s\" of %s: %s", group ? group : "all", q,
             fl_strerror(rc));
    return 0;
  }
  for (int k = 0; k < (b->clear_broadcasts ? 2 : 1); k++) {
    rc = unbind ? unbind_queue(b, ch, q, FL_EX_MSG, keys[k], why, n)
                : bind_queue(b, ch, q, FL_EX_MSG, keys[k], why, n);
    if (rc)
      return rc;
  }
  return 0;
}

/* The next retry of ib after a failure: the backoff doubles up to
 * FL_BROKER_INBOX_RETRY_MS. */
static void inbox_backoff(struct inbox *ib) {
  ib->retry_ms = !ib->retry_ms                                 ? FL_BROKER_INBOX_RETRY_FIRST_MS
                 : ib->retry_ms * 2 > FL_BROKER_INBOX_RETRY_MS ? FL_BROKER_INBOX_RETRY_MS
                                                               : ib->retry_ms * 2;
  ib->retry_at = (uint64_t)fl_mono_ms() + ib->retry_ms;
}

/* What a failed set-up of ib leaves (rc, why, whether its queue was declared
 * already): a refusal by the broker is this inbox's own, reported and
 * retried after a backoff; anything else takes the link down (FL_EBROKER,
 * why in b->err). */
static int inbox_failed(fl_broker *b, struct inbox *ib, int rc, const char *why, int declared,
                        int quiet) {
  char q[FL_BROKER_SHORTSTR];
  ib->consuming = 0;
  ib->consume_sent = 0;
  fl_broker_chan_reset(b, &ib->ch);
  if (rc != FL_EREFUSED) {
    fl_broker_copy(b->err, sizeof(b->err), why);
    return FL_EBROKER;
  }
  /* The server closed the channel: this inbox only. */
  inbox_backoff(ib);
  if (quiet && strcmp(ib->last_why, why) == 0)
    return 0;
  fl_broker_copy(ib->last_why, sizeof(ib->last_why), why);
  if (!declared && strstr(why, "PRECONDITION_FAILED") &&
      fl_topology_inbox_queue(q, sizeof(q), ib->gid) == 0) {
    /* Someone else declared agent.<gid>.inbox.v2 with other arguments
     * (PRECONDITION_FAILED): a queue we did not declare may drop what is
     * sent to it, so it is never consumed as if it were ours. */
    fl_error(NULL,
             "broker: inbox %s: the queue %s exists with arguments this gateway did not declare "
             "(deleted and declared again by another client?); it is NOT consumed and its "
             "messages may be dropped: delete the queue on the broker (retrying, backing off "
             "to every %d s): %s",
             ib->gid, q, FL_BROKER_INBOX_RETRY_MS / 1000, why);
    fl_broker_emit_inbox(b, ib->gid, FL_EREFUSED, why);
    return 0;
  }
  fl_error(NULL, "broker: inbox %s is not consumed (retrying, backing off to every %d s): %s",
           ib->gid, FL_BROKER_INBOX_RETRY_MS / 1000, why);
  fl_broker_emit_inbox(b, ib->gid, FL_EBROKER, why);
  return 0;
}

int fl_broker_inbox_setup(fl_broker *b, struct inbox *ib, int quiet) {
  char why[FL_BROKER_WHY_LEN], q[FL_BROKER_SHORTSTR];
  int rc, declared = 0;
  if (topo_name(fl_topology_inbox_queue(q, sizeof(q), ib->gid), "inbox", ib->gid, why,
                sizeof(why))) {
    fl_broker_emit_inbox(b, ib->gid, FL_EBROKER, why);
    return 0;
  }
  uint16_t id = fl_broker_chan_alloc(b);
  if (!id) {
    fl_broker_emit_inbox(b, ib->gid, FL_EBROKER, "no free AMQP channel for this inbox");
    return 0;
  }
  ib->quiet = quiet;
  if ((rc = fl_broker_chan_open(b, &ib->ch, id, why, sizeof(why))))
    return inbox_failed(b, ib, rc, why, declared, quiet);
  amqp_table_entry_t args[6];
  int na = 0;
  args[na++] = fl_broker_entry_str("x-dead-letter-exchange", FL_EX_DLX);
  args[na++] = fl_broker_entry_long("x-max-length", b->max_length);
  /* Overflow dead-letters, never drops silently (see inbox_overflow). */
  args[na++] = fl_broker_entry_str("x-overflow", inbox_overflow(b));
  args[na++] = fl_broker_entry_long("x-message-ttl", b->message_ttl_ms);
  args[na++] = fl_broker_entry_long("x-expires", b->queue_expires_ms);
  args[na++] = fl_broker_entry_str("x-queue-type", b->queue_type);
  amqp_table_t table = {na, args};
  amqp_queue_declare(b->conn, id, amqp_cstring_bytes(q), 0, 1, 0, 0, table);
  if ((rc = fl_broker_rpc_result(b, id, "declare inbox", why, sizeof(why))))
    return inbox_failed(b, ib, rc, why, declared, quiet);
  declared = 1;
  if ((rc = bind_queue(b, id, q, FL_EX_MSG, ib->gid, why, sizeof(why))) ||
      (rc = bind_group(b, id, q, NULL, 0, why, sizeof(why))))
    return inbox_failed(b, ib, rc, why, declared, quiet);
  for (size_t i = 0; i < ib->ngroups; i++)
    if ((rc = bind_group(b, id, q, ib->groups[i], 0, why, sizeof(why))))
      return inbox_failed(b, ib, rc, why, declared, quiet);
  amqp_basic_qos(b->conn, id, 0, (uint16_t)b->prefetch, 0);
  if ((rc = fl_broker_rpc_result(b, id, "basic.qos", why, sizeof(why))))
    return inbox_failed(b, ib, rc, why, declared, quiet);
  /* Its consumer starts with the others (fl_broker_inbox_start). */
  ib->ch.inbox = ib;
  b->inbox_start_at = (uint64_t)fl_mono_ms() + FL_BROKER_INBOX_SETTLE_MS;
  return 0;
}

int fl_broker_inbox_start(fl_broker *b, int now) {
  if (!b->inbox_start_at || (!now && (uint64_t)fl_mono_ms() < b->inbox_start_at))
    return 0;
  b->inbox_start_at = 0;
  for (size_t i = 0; i < b->ninboxes && b->conn; i++) {
    struct inbox *ib = b->inboxes[i];
    char q[FL_BROKER_SHORTSTR];
    if (!ib->ch.open || ib->consuming || ib->consume_sent ||
        fl_topology_inbox_queue(q, sizeof(q), ib->gid))
      continue;
    amqp_basic_consume_t m = {.queue = amqp_cstring_bytes(q),
                              .consumer_tag = amqp_cstring_bytes(ib->gid),
                              .exclusive = 1,
                              .arguments = amqp_empty_table};
    if (amqp_send_method(b->conn, ib->ch.id, AMQP_BASIC_CONSUME_METHOD, &m) != AMQP_STATUS_OK) {
      fl_errf(b->err, sizeof(b->err), "consume %s: the connection failed", q);
      return FL_EBROKER;
    }
    ib->consume_sent = 1;
  }
  return 0;
}

void fl_broker_inbox_consuming(fl_broker *b, struct inbox *ib) {
  char q[FL_BROKER_SHORTSTR] = "";
  (void)fl_topology_inbox_queue(q, sizeof(q), ib->gid);
  ib->consuming = 1;
  ib->last_why[0] = '\0';
  ib->retry_ms = 0;
  fl_info(NULL, "broker: consuming %s", q);
  fl_broker_emit_inbox(b, ib->gid, 0, "");
}

void fl_broker_inbox_closed(fl_broker *b, struct inbox *ib, const char *why) {
  char msg[FL_BROKER_WHY_LEN];
  int was_consuming = ib->consuming;
  fl_errf(msg, sizeof(msg), "consume: %s", why);
  if (!was_consuming) {
    /* Its consumer was refused (another gateway holds the inbox): as a
     * refusal during the set-up. */
    (void)inbox_failed(b, ib, FL_EREFUSED, msg, 1, ib->quiet);
    return;
  }
  fl_broker_chan_reset(b, &ib->ch);
  ib->consuming = 0;
  ib->consume_sent = 0;
  inbox_backoff(ib);
  fl_broker_copy(ib->last_why, sizeof(ib->last_why), why);
  fl_error(NULL, "broker: inbox %s: %s (retrying, backing off to every %d s)", ib->gid, why,
           FL_BROKER_INBOX_RETRY_MS / 1000);
  fl_broker_emit_inbox(b, ib->gid, FL_EBROKER, why);
}

int fl_broker_inbox_close(fl_broker *b, struct inbox *ib) {
  char why[FL_BROKER_WHY_LEN];
  if (!ib->ch.open)
    return 0;
  uint16_t id = ib->ch.id;
  fl_broker_chan_reset(b, &ib->ch);
  ib->consuming = 0;
  ib->consume_sent = 0;
  amqp_channel_close(b->conn, id, AMQP_REPLY_SUCCESS);
  int rc = fl_broker_rpc_result(b, id, "channel.close", why, sizeof(why));
  return rc == FL_EREFUSED ? 0 : rc;
}

/* The same gid added again: rebind its queue for the new groups (when it is
 * consumed) and keep them. Returns 0 or FL_EBROKER (b->err says why). */
static int inbox_regroup(fl_broker *b, struct inbox *ib, struct item *it) {
  char why[FL_BROKER_WHY_LEN], q[FL_BROKER_SHORTSTR];
  int rc = 0;
  /* The gid was checked when it was added, so its queue has a name. */
  if (b->conn && ib->ch.open && fl_topology_inbox_queue(q, sizeof(q), ib->gid) == 0) {
    for (size_t i = 0; i < it->ngroups && rc == 0; i++)
      if (!has_group(ib->groups, ib->ngroups, it->groups[i]))
        rc = bind_group(b, ib->ch.id, q, it->groups[i], 0, why, sizeof(why));
    for (size_t i = 0; i < ib->ngroups && rc == 0; i++)
      if (!has_group(it->groups, it->ngroups, ib->groups[i]))
        rc = bind_group(b, ib->ch.id, q, ib->groups[i], 1, why, sizeof(why));
  }
  for (size_t i = 0; i < ib->ngroups; i++)
    fl_free(ib->groups[i]);
  fl_free(ib->groups);
  ib->groups = it->groups;
  ib->ngroups = it->ngroups;
  it->groups = NULL;
  it->ngroups = 0;
  if (rc && rc != FL_EREFUSED) {
    fl_broker_copy(b->err, sizeof(b->err), why);
    return FL_EBROKER;
  }
  if (rc) {
    fl_broker_chan_reset(b, &ib->ch);
    ib->consuming = 0;
    ib->consume_sent = 0;
    fl_broker_emit_inbox(b, ib->gid, FL_EBROKER, why);
    return 0;
  }
  if (b->conn && !ib->ch.open)
    return fl_broker_inbox_setup(b, ib, 0);
  /* Consuming: said so again; its consumer on its way: said at its consume-ok. */
  if (b->conn && ib->consuming)
    fl_broker_emit_inbox(b, ib->gid, 0, "");
  return 0;
}

int fl_broker_inbox_add(fl_broker *b, struct item *it) {
  struct inbox *ib = inbox_find(b, it->gid, NULL);
  if (ib)
    return inbox_regroup(b, ib, it);
  if (b->ninboxes >= FL_BROKER_MAX_INBOXES) {
    /* The loop counts too, so this is only reachable by a bug. */
    fl_error(NULL, "broker: too many inboxes; %s not added", it->gid);
    return 0;
  }
  ib = fl_calloc(1, sizeof(*ib));
  if (!ib) {
    fl_error(NULL, "broker: out of memory adding inbox %s", it->gid);
    fl_broker_emit_inbox(b, it->gid, FL_ENOMEM, "out of memory");
    return 0;
  }
  fl_broker_copy(ib->gid, sizeof(ib->gid), it->gid);
  ib->groups = it->groups;
  ib->ngroups = it->ngroups;
  it->groups = NULL;
  it->ngroups = 0;
  b->inboxes[b->ninboxes++] = ib;
  return b->conn ? fl_broker_inbox_setup(b, ib, 0) : 0;
}

int fl_broker_inbox_remove(fl_broker *b, struct item *it) {
  size_t idx;
  struct inbox *ib = inbox_find(b, it->gid, &idx);
  int rc = 0;
  if (!ib)
    return 0;
  if (b->conn)
    rc = fl_broker_inbox_close(b, ib);
  b->inboxes[idx] = b->inboxes[--b->ninboxes];
  fl_broker_inbox_free(ib);
  return rc;
}

int fl_broker_inbox_delete(fl_broker *b, struct item *it) {
  char why[FL_BROKER_WHY_LEN], q[FL_BROKER_SHORTSTR];
  int rc = fl_broker_inbox_remove(b, it);
  if (rc < 0)
    return rc;
  if (fl_topology_inbox_queue(q, sizeof(q), it->gid) != 0)
    return 0;
  if (!b->conn) {
    /* Down: the queue's x-expires collects it. */
    fl_warn(NULL, "broker: link down, queue %s is left for its x-expires to collect", q);
    return 0;
  }
  amqp_queue_delete(b->conn, FL_BROKER_CH_SYSTEM, amqp_cstring_bytes(q), 0, 0);
  rc = fl_broker_rpc_result(b, FL_BROKER_CH_SYSTEM, "delete queue", why, sizeof(why));
  if (rc == FL_EREFUSED) {
    /* The channel was closed by the refusal: reopening it is the
     * reconnect's business, so report it as a lost link. */
    fl_broker_copy(b->err, sizeof(b->err), why);
    return FL_EBROKER;
  }
  if (rc == 0)
    fl_info(NULL, "broker: deleted queue %s", q);
  return rc < 0 ? rc : 0;
}

int fl_broker_inbox_retry(fl_broker *b) {
  uint64_t now = (uint64_t)fl_mono_ms();
  for (size_t i = 0; i < b->ninboxes && b->conn; i++) {
    struct inbox *ib = b->inboxes[i];
    int rc;
    if (!ib->consuming && !ib->ch.open && now >= ib->retry_at &&
        (rc = fl_broker_inbox_setup(b, ib, 1)) < 0)
      return rc;
  }
  return 0;
}

int fl_broker_inbox_cancelled(fl_broker *b, struct inbox *ib) {
  const char *why = "the broker cancelled the consumer (the queue was deleted); declaring it again";
  fl_error(NULL, "broker: inbox %s: %s", ib->gid, why);
  fl_broker_copy(ib->last_why, sizeof(ib->last_why), why);
  fl_broker_emit_inbox(b, ib->gid, FL_ECANCELLED, why);
  /* What it delivered and we did not ack went with the queue. */
  int rc = fl_broker_inbox_close(b, ib);
  ib->retry_ms = 0;
  ib->retry_at = 0; /* at once: the next retry pass declares it again */
  return rc;
}

int fl_broker_inbox_requeue(fl_broker *b, struct item *it) {
  struct inbox *ib = inbox_find(b, it->gid, NULL);
  /* The loop names the channel incarnation it saw fail: a newer one (the
   * inbox was set up again meanwhile) keeps consuming. */
  if (!ib || !ib->ch.open || !b->conn ||
      (uint32_t)(it->tag >> 32) != ((uint32_t)ib->ch.epoch << 16 | ib->ch.id))
    return 0;
  int rc = fl_broker_inbox_close(b, ib);
  fl_broker_copy(ib->last_why, sizeof(ib->last_why), it->why);
  inbox_backoff(ib);
  fl_broker_emit_inbox(b, ib->gid, FL_ESTORE, it->why);
  return rc;
}
