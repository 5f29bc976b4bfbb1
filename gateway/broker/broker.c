/* broker.c — the broker link's public API (broker.h), on the loop thread.
 *
 * Every fl_broker_* function runs on the loop thread and queues: a
 * command goes onto b->cmds, which wakes the broker thread (broker_conn.c),
 * except a publish the loop can send itself while that thread sleeps
 * (broker_reader.c);
 * that thread's events come back on b->events, whose uv_async_t runs
 * on_events here, which hands them to the caller's callbacks in bursts
 * bracketed by on_batch. Nothing here waits on the network. A publish is one
 * item from fl_broker_publish to its on_publish_done: the command the thread
 * sends is the event it returns, so reporting an outcome never needs memory
 * that might not be there.
 *
 * Besides the queues the loop keeps only its own view: whether the link is
 * up (as last reported), how many publishes are outstanding (for FL_EFULL),
 * and which inboxes it added (for FL_BROKER_MAX_INBOXES). */
#include "gateway/broker/broker.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/limits.h"
#include "common/log.h"
#include "common/names.h"
#include "gateway/broker/broker_internal.h"

void fl_broker_item_free(struct item *it) {
  if (!it)
    return;
  for (size_t i = 0; i < it->ngroups; i++)
    fl_free(it->groups[i]);
  fl_free(it->groups);
  fl_free(it->body);
  fl_broker_dead_free(it->dead, it->ndead);
  if (it->type == EV_READ && it->rfd >= 0)
    close(it->rfd);
  fl_free(it);
}

static void item_free_cb(void *it) { fl_broker_item_free(it); }

/* ---- events ---- */

static void dispatch(fl_broker *b, struct item *it, int stopping) {
  switch (it->type) {
  case CMD_PUBLISH:
    b->outstanding--;
    if (b->ev.on_publish_done)
      b->ev.on_publish_done(b->ctx, it->req, it->status, it->why);
    break;
  case CMD_DLQ:
    if (b->ev.on_dlq)
      b->ev.on_dlq(b->ctx, it->req, stopping ? FL_ECANCELLED : it->status, it->why, it->dead,
                   it->ndead, it->affected);
    break;
  case EV_STATE:
    if (stopping)
      break;
    b->up = it->up;
    if (b->ev.on_state)
      b->ev.on_state(b->ctx, it->up, it->why);
    break;
  case EV_READ:
    if (!stopping)
      fl_broker_reader_offer(b, it);
    break;
  case EV_INBOX:
    if (!stopping && b->ev.on_inbox)
      b->ev.on_inbox(b->ctx, it->gid, it->status, it->why);
    break;
  case EV_DELIVERY:
    if (!stopping && b->ev.on_delivery) {
      fl_broker_delivery d = {
          .tag = it->tag,
          .source = it->source,
          .gid = it->gid,
          .exchange = it->exchange,
          .routing_key = it->routing_key,
          .redelivered = it->redelivered,
          .env = &it->env,
          .body = it->body,
          .len = it->len,
          .bad = it->why[0] ? it->why : NULL,
      };
      b->ev.on_delivery(b->ctx, &d);
    }
    break;
  default:
    break;
  }
  fl_broker_item_free(it);
}

/* Takes every queued event and runs its callback. While not stopping, the
 * on_batch bracket opens at the burst's first delivery: a burst of confirms
 * alone (each sender's publish confirmed, with nothing to store) costs the
 * loop no store transaction. */
static void drain_events(fl_broker *b, int stopping) {
  void *batch[FL_BROKER_BATCH];
  size_t n;
  int open = 0;
  while ((n = fl_xqueue_pop(b->events, batch, FL_BROKER_BATCH)) > 0) {
    size_t settled = 0;
    for (size_t i = 0; i < n; i++) {
      struct item *it = batch[i];
      settled += it->weight;
      if (!stopping && !open && it->type == EV_DELIVERY && b->ev.on_batch) {
        b->ev.on_batch(b->ctx, 1);
        open = 1;
      }
      dispatch(b, it, stopping);
    }
    fl_xqueue_settle_bytes(b->events, settled);
  }
  if (open)
    b->ev.on_batch(b->ctx, 0);
}

void fl_broker_events_run(fl_broker *b) {
  if (!b->stopped)
    drain_events(b, 0);
}

static void on_events(void *ctx) { fl_broker_events_run(ctx); }

/* Sends the acks the loop gave since its last flush: from the loop itself
 * when it can (fl_broker_reader_ack), else as commands, in order. */
static void flush_acks(fl_broker *b) {
  size_t n = b->nlacks, dropped = 0;
  if (!n)
    return;
  b->nlacks = 0;
  uv_prepare_stop(&b->ack_prep);
  if (fl_broker_reader_ack(b, b->lacks, n))
    return;
  for (size_t i = 0; i < n; i++) {
    struct item *it = fl_calloc(1, sizeof(*it));
    if (it) {
      it->type = CMD_ACK;
      it->tag = b->lacks[i];
    }
    if (!it || fl_xqueue_push(b->cmds, it) != 0) {
      fl_broker_item_free(it);
      dropped++;
    }
  }
  if (dropped)
    fl_warn(NULL,
            "broker: %zu acks dropped (the command queue is full or memory ran out); the "
            "broker delivers those messages again after a reconnect",
            dropped);
}

static void on_ack_prep(uv_prepare_t *h) { flush_acks(h->data); }

/* Queues a command for the thread, after the acks given before it. On
 * failure the caller still owns it. */
static int send_cmd(fl_broker *b, struct item *it) {
  flush_acks(b);
  return fl_xqueue_push(b->cmds, it);
}

void fl_broker_wake_thread(fl_broker *b) {
  struct item *it = fl_calloc(1, sizeof(*it));
  if (!it)
    return;
  it->type = CMD_WAKE;
  if (send_cmd(b, it) != 0)
    fl_broker_item_free(it); /* full: the thread has commands to wake it */
}

/* ---- life cycle ---- */

static void broker_destroy(fl_broker *b);

static void on_closed(void *ctx) {
  fl_broker *b = ctx;
  b->closed = 1;
  if (b->free_on_close)
    broker_destroy(b);
}

/* Frees b and everything it holds; the events queue's handle, if it was
 * made, is closed. The thread is not running. */
static void broker_destroy(fl_broker *b) {
  if (!b)
    return;
  fl_xqueue_free(&b->cmds, item_free_cb);
  fl_xqueue_free(&b->events, item_free_cb);
  fl_broker_conn_free(b);
  if (b->mu_made)
    uv_mutex_destroy(&b->link_mu);
  for (size_t i = 0; i < b->ninboxes; i++)
    fl_broker_inbox_free(b->inboxes[i]);
  fl_free(b->loop_inboxes);
  fl_free(b->uri_buf);
  fl_free(b->host_id);
  fl_free(b->queue_type);
  fl_free(b->ca_file);
  fl_free(b);
}

int fl_broker_start(uv_loop_t *loop, const fl_broker_config *cfg, const fl_broker_events *ev,
                    void *ctx, fl_broker **out) {
  fl_broker *b = NULL;
  int rc;
  if (!loop || !cfg || !out || !cfg->uri)
    return FL_EINVAL;
  *out = NULL;
  if (!fl_name_valid(cfg->host_id, FL_MAX_NAME)) {
    fl_error(NULL, "broker: host id \"%s\" is not %s", cfg->host_id ? cfg->host_id : "",
             fl_name_rule);
    return FL_ECONFIG;
  }
  if (cfg->queue_type && strcmp(cfg->queue_type, "classic") != 0 &&
      strcmp(cfg->queue_type, "quorum") != 0) {
    fl_error(NULL, "broker: queue type \"%s\" is not \"classic\" or \"quorum\"", cfg->queue_type);
    return FL_ECONFIG;
  }
  b = fl_calloc(1, sizeof(*b));
  if (!b)
    return FL_ENOMEM;
  b->t_up = -1;
  b->loop = loop;
  if (ev)
    b->ev = *ev;
  b->ctx = ctx;
  b->prefetch = cfg->prefetch ? cfg->prefetch : FL_BROKER_DEFAULT_PREFETCH;
  if (b->prefetch > 65535)
    b->prefetch = 65535; /* basic.qos carries a 16-bit count */
  b->heartbeat_s = cfg->heartbeat_s ? cfg->heartbeat_s : FL_BROKER_DEFAULT_HEARTBEAT_S;
  b->clear_broadcasts = cfg->clear_broadcasts != 0;
  b->max_length = cfg->max_length > 0 ? cfg->max_length : FL_BROKER_DEFAULT_MAX_LENGTH;
  b->message_ttl_ms =
      cfg->message_ttl_ms > 0 ? cfg->message_ttl_ms : FL_BROKER_DEFAULT_MESSAGE_TTL_MS;
  b->queue_expires_ms =
      cfg->queue_expires_ms > 0 ? cfg->queue_expires_ms : FL_BROKER_DEFAULT_QUEUE_EXPIRES_MS;
  b->uri_buf = fl_strdup(cfg->uri);
  b->host_id = fl_strdup(cfg->host_id);
  b->queue_type = fl_strdup(cfg->queue_type ? cfg->queue_type : "classic");
  b->ca_file = cfg->ca_file ? fl_strdup(cfg->ca_file) : NULL;
  b->loop_inboxes = fl_calloc(FL_BROKER_MAX_INBOXES, sizeof(*b->loop_inboxes));
  if (!b->uri_buf || !b->host_id || !b->queue_type || (cfg->ca_file && !b->ca_file) ||
      !b->loop_inboxes) {
    rc = FL_ENOMEM;
    goto fail;
  }
  /* One URI, or several separated by commas (a cluster's nodes). */
  for (char *save = NULL, *u = strtok_r(b->uri_buf, ",", &save); u;
       u = strtok_r(NULL, ",", &save)) {
    while (*u == ' ')
      u++;
    if (b->ncis == FL_BROKER_MAX_URIS) {
      fl_error(NULL, "broker: more than %d broker URIs given", FL_BROKER_MAX_URIS);
      rc = FL_ECONFIG;
      goto fail;
    }
    struct amqp_connection_info *ci = &b->cis[b->ncis++];
    amqp_default_connection_info(ci);
    if (amqp_parse_url(u, ci) != AMQP_STATUS_OK) {
      /* Never log the URI itself: it carries the password. */
      fl_error(NULL,
               "broker: broker URI %zu is malformed; expected amqp[s]://user:pass@host:port/vhost "
               "(several are separated by commas)",
               b->ncis);
      rc = FL_ECONFIG;
      goto fail;
    }
    /* "amqp://host/" names the empty vhost, which no broker has; users mean "/". */
    if (!ci->vhost || !ci->vhost[0])
      ci->vhost = "/";
    if (ci->ssl && b->ca_file && access(b->ca_file, R_OK) != 0) {
      fl_error(NULL, "broker: CA file %s is not readable", b->ca_file);
      rc = FL_ECONFIG;
      goto fail;
    }
  }
  if (b->ncis == 0) {
    fl_error(NULL, "broker: the broker URI is empty");
    rc = FL_ECONFIG;
    goto fail;
  }
  b->ci = b->cis[0];
  if ((rc = uv_mutex_init(&b->link_mu)) != 0)
    goto fail;
  b->mu_made = 1;
  if ((rc = fl_broker_conn_init(b)) ||
      (rc = fl_xqueue_new_to_worker(FL_BROKER_MAX_CMDS + FL_BROKER_MAX_INFLIGHT, &b->cmds)))
    goto fail;
  /* Last: from here on, freeing b takes a loop turn to close the handle. */
  if ((rc = fl_xqueue_new_to_loop(loop, FL_BROKER_MAX_EVENTS, on_events, b, &b->events)))
    goto fail;
  fl_xqueue_set_max_bytes(b->events, FL_BROKER_MAX_EVENT_BYTES);
  /* Cannot fail: libuv's prepare init only links the handle in. */
  uv_prepare_init(loop, &b->ack_prep);
  b->ack_prep.data = b;
  if ((rc = uv_thread_create(&b->thread, fl_broker_thread_main, b)) != 0) {
    b->stopped = 1;
    b->free_on_close = 1;
    uv_close((uv_handle_t *)&b->ack_prep, NULL);
    fl_xqueue_close(b->events, on_closed);
    return rc;
  }
  *out = b;
  return 0;
fail:
  broker_destroy(b);
  return rc;
}

int fl_broker_dlq(fl_broker *b, enum fl_broker_dlq_op op, const char *msg_id,
                  long long older_than_ms, void *req) {
  if (!b || b->stopped)
    return FL_EINVAL;
  if (!b->up)
    return FL_EBROKER;
  struct item *it = fl_calloc(1, sizeof(*it));
  if (!it)
    return FL_ENOMEM;
  it->type = CMD_DLQ;
  it->dlq_op = op;
  it->older_than_ms = older_than_ms;
  fl_broker_copy(it->msg_id, sizeof(it->msg_id), msg_id);
  it->req = req;
  int rc = send_cmd(b, it);
  if (rc != 0)
    fl_broker_item_free(it);
  return rc;
}

int fl_broker_publish(fl_broker *b, const char *exchange, const char *routing_key, unsigned flags,
                      const fl_envelope *env, const char *body, size_t len, void *req) {
  if (!b || !exchange || !routing_key || (!body && len) || b->stopped)
    return FL_EINVAL;
  if (strlen(exchange) >= FL_BROKER_SHORTSTR || strlen(routing_key) >= FL_BROKER_SHORTSTR)
    return FL_EINVAL;
  if (len > FL_MAX_WIRE_BODY)
    return FL_ETOOBIG;
  if (!b->up)
    return FL_EBROKER;
  if (b->outstanding >= FL_BROKER_MAX_INFLIGHT)
    return FL_EFULL;
  struct item *it = fl_calloc(1, sizeof(*it));
  if (!it)
    return FL_ENOMEM;
  it->type = CMD_PUBLISH;
  fl_broker_copy(it->exchange, sizeof(it->exchange), exchange);
  fl_broker_copy(it->routing_key, sizeof(it->routing_key), routing_key);
  it->mandatory = (flags & FL_BROKER_MANDATORY) != 0;
  it->packed = env && (flags & FL_BROKER_PACKED);
  if (env)
    it->env = *env;
  it->req = req;
  if (len) {
    it->body = fl_malloc(len);
    if (!it->body) {
      fl_broker_item_free(it);
      return FL_ENOMEM;
    }
    memcpy(it->body, body, len);
  }
  it->len = len;
  b->outstanding++;
  if (fl_broker_reader_publish(b, it))
    return 0;
  int rc = send_cmd(b, it);
  if (rc != 0) {
    b->outstanding--;
    fl_broker_item_free(it);
    return rc;
  }
  return 0;
}

/* Finds gid among the inboxes the loop added: 0 and *idx, or FL_ENOTFOUND. */
static int loop_inbox_find(fl_broker *b, const char *gid, size_t *idx) {
  for (size_t i = 0; i < b->ninboxes_loop; i++) {
    if (strcmp(b->loop_inboxes[i].gid, gid) == 0) {
      *idx = i;
      return 0;
    }
  }
  return FL_ENOTFOUND;
}

int fl_broker_add_inbox(fl_broker *b, const char *gid, const char *const *groups, size_t ngroups) {
  if (!b || b->stopped || !fl_name_valid(gid, FL_ID_LEN - 1) || (ngroups && !groups) ||
      ngroups > FL_MAX_GROUPS)
    return FL_EINVAL;
  for (size_t i = 0; i < ngroups; i++)
    if (!fl_name_valid(groups[i], FL_MAX_GROUP_NAME))
      return FL_EINVAL;
  size_t idx;
  int known = loop_inbox_find(b, gid, &idx) == 0;
  if (!known && b->ninboxes_loop >= FL_BROKER_MAX_INBOXES)
    return FL_EFULL;
  struct item *it = fl_calloc(1, sizeof(*it));
  if (!it)
    return FL_ENOMEM;
  it->type = CMD_ADD_INBOX;
  fl_broker_copy(it->gid, sizeof(it->gid), gid);
  if (ngroups) {
    it->groups = fl_calloc(ngroups, sizeof(*it->groups));
    if (!it->groups) {
      fl_broker_item_free(it);
      return FL_ENOMEM;
    }
    for (size_t i = 0; i < ngroups; i++) {
      it->groups[i] = fl_strdup(groups[i]);
      if (!it->groups[i]) {
        it->ngroups = i;
        fl_broker_item_free(it);
        return FL_ENOMEM;
      }
    }
    it->ngroups = ngroups;
  }
  int rc = send_cmd(b, it);
  if (rc != 0) {
    fl_broker_item_free(it);
    return rc;
  }
  if (!known)
    fl_broker_copy(b->loop_inboxes[b->ninboxes_loop++].gid, FL_ID_LEN, gid);
  return 0;
}

static int remove_inbox(fl_broker *b, const char *gid, enum item_type type) {
  if (!b || b->stopped || !fl_name_valid(gid, FL_ID_LEN - 1))
    return FL_EINVAL;
  struct item *it = fl_calloc(1, sizeof(*it));
  if (!it)
    return FL_ENOMEM;
  it->type = type;
  fl_broker_copy(it->gid, sizeof(it->gid), gid);
  int rc = send_cmd(b, it);
  if (rc != 0) {
    fl_broker_item_free(it);
    return rc;
  }
  size_t idx;
  if (loop_inbox_find(b, gid, &idx) == 0)
    b->loop_inboxes[idx] = b->loop_inboxes[--b->ninboxes_loop];
  return 0;
}

int fl_broker_remove_inbox(fl_broker *b, const char *gid) {
  return remove_inbox(b, gid, CMD_REMOVE_INBOX);
}

int fl_broker_delete_inbox(fl_broker *b, const char *gid) {
  return remove_inbox(b, gid, CMD_DELETE_INBOX);
}

int fl_broker_requeue_inbox(fl_broker *b, const char *gid, uint64_t tag, const char *why) {
  if (!b || b->stopped || !fl_name_valid(gid, FL_ID_LEN - 1))
    return FL_EINVAL;
  struct item *it = fl_calloc(1, sizeof(*it));
  if (!it)
    return FL_ENOMEM;
  it->type = CMD_REQUEUE_INBOX;
  it->tag = tag;
  fl_broker_copy(it->gid, sizeof(it->gid), gid);
  fl_broker_copy(it->why, sizeof(it->why), why);
  int rc = send_cmd(b, it);
  if (rc != 0)
    fl_broker_item_free(it);
  return rc;
}

static int settle(fl_broker *b, uint64_t tag, enum item_type type, int requeue) {
  if (!b || b->stopped)
    return FL_EINVAL;
  struct item *it = fl_calloc(1, sizeof(*it));
  if (!it)
    return FL_ENOMEM;
  it->type = type;
  it->tag = tag;
  it->requeue = requeue;
  int rc = send_cmd(b, it);
  if (rc != 0)
    fl_broker_item_free(it);
  return rc;
}

int fl_broker_ack(fl_broker *b, uint64_t tag) {
  if (!b || b->stopped)
    return FL_EINVAL;
  if (b->nlacks == FL_BROKER_BATCH)
    flush_acks(b);
  b->lacks[b->nlacks++] = tag;
  if (b->nlacks == 1)
    uv_prepare_start(&b->ack_prep, on_ack_prep);
  return 0;
}

int fl_broker_reject(fl_broker *b, uint64_t tag, int requeue) {
  return settle(b, tag, CMD_REJECT, requeue);
}

int fl_broker_is_up(const fl_broker *b) { return b && b->up; }

void fl_broker_loop_counts(const fl_broker *b, fl_broker_loop_use *out) {
  if (!out)
    return;
  if (b)
    *out = b->loop_use;
  else
    memset(out, 0, sizeof(*out));
}

void fl_broker_stop(fl_broker *b) {
  if (!b || b->stopped)
    return;
  flush_acks(b); /* the acks given so far go before the connection closes */
  /* Events first: a thread waiting for room in a full queue must not wait
   * for a loop that is about to join it. */
  fl_xqueue_shutdown(b->events);
  fl_xqueue_shutdown(b->cmds);
  uv_thread_join(&b->thread);
  b->stopped = 1;
  b->up = 0;
  fl_broker_reader_close(b);
  /* As the thread drops the acks still queued when it stops. */
  b->nlacks = 0;
  uv_close((uv_handle_t *)&b->ack_prep, NULL);
  /* Only publish outcomes are reported now; the rest is dropped. */
  drain_events(b, 1);
  fl_xqueue_close(b->events, on_closed);
}

void fl_broker_free(fl_broker **pb) {
  if (!pb || !*pb)
    return;
  fl_broker *b = *pb;
  *pb = NULL;
  fl_broker_stop(b);
  if (b->closed)
    broker_destroy(b);
  else
    b->free_on_close = 1;
}
