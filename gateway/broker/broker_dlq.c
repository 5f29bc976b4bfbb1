/* broker_dlq.c — the broker thread's side of reading fleet.dlq: list, purge
 * and replay on a channel opened for the one command and closed after it.
 *
 * Reading is basic.get without auto-ack: every message read stays
 * unacknowledged on that channel, so closing the channel puts each back
 * where it was, and nothing is lost whatever happens in between. Only what a
 * purge removes is acked, and a replayed message is acked only after the
 * broker committed its republished copy. */
#include <stdlib.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/log.h"
#include "gateway/broker/broker_internal.h"
#include "gateway/proto/topology.h"

void fl_broker_dead_free(fl_broker_dead *v, size_t n) {
  for (size_t i = 0; v && i < n; i++)
    fl_free(v[i].body);
  fl_free(v);
}

static const amqp_field_value_t *fl_table_get(const amqp_table_t *t, const char *key) {
  size_t kl = strlen(key);
  for (int i = 0; t && i < t->num_entries; i++)
    if (t->entries[i].key.len == kl && memcmp(t->entries[i].key.bytes, key, kl) == 0)
      return &t->entries[i].value;
  return NULL;
}

static void fl_field_str(const amqp_field_value_t *v, char *out, size_t n) {
  out[0] = '\0';
  if (v && (v->kind == AMQP_FIELD_KIND_UTF8 || v->kind == AMQP_FIELD_KIND_BYTES))
    fl_broker_copy_bytes(out, n, v->value.bytes);
}

static long long fl_field_int(const amqp_field_value_t *v) {
  if (!v)
    return 0;
  switch (v->kind) {
  case AMQP_FIELD_KIND_I64:
    return (long long)v->value.i64;
  case AMQP_FIELD_KIND_U64:
  case AMQP_FIELD_KIND_TIMESTAMP:
    return (long long)v->value.u64;
  case AMQP_FIELD_KIND_I32:
    return v->value.i32;
  case AMQP_FIELD_KIND_U32:
    return v->value.u32;
  default:
    return 0;
  }
}

/* The first (newest) x-death entry into d. */
static void fl_read_death(const amqp_table_t *hdr, fl_broker_dead *d) {
  const amqp_field_value_t *xd = fl_table_get(hdr, "x-death");
  if (!xd || xd->kind != AMQP_FIELD_KIND_ARRAY || xd->value.array.num_entries < 1 ||
      xd->value.array.entries[0].kind != AMQP_FIELD_KIND_TABLE)
    return;
  const amqp_table_t *t = &xd->value.array.entries[0].value.table;
  fl_field_str(fl_table_get(t, "reason"), d->reason, sizeof d->reason);
  fl_field_str(fl_table_get(t, "queue"), d->queue, sizeof d->queue);
  fl_field_str(fl_table_get(t, "exchange"), d->exchange, sizeof d->exchange);
  d->count = fl_field_int(fl_table_get(t, "count"));
  d->time_ms = fl_field_int(fl_table_get(t, "time")) * 1000;
  const amqp_field_value_t *keys = fl_table_get(t, "routing-keys");
  if (keys && keys->kind == AMQP_FIELD_KIND_ARRAY && keys->value.array.num_entries > 0)
    fl_field_str(&keys->value.array.entries[0], d->routing_key, sizeof d->routing_key);
}

/* Is this header one RabbitMQ adds when dead-lettering? */
static int fl_is_death_header(amqp_bytes_t k) {
  return (k.len == 7 && memcmp(k.bytes, "x-death", 7) == 0) ||
         (k.len > 8 && memcmp(k.bytes, "x-first-", 8) == 0) ||
         (k.len > 7 && memcmp(k.bytes, "x-last-", 7) == 0);
}

/* Publishes msg again to the exchange and key it had been published with,
 * once the queue it died in is known to be there (its own key reaches that
 * queue alone: the loop replays only messages sent to one inbox), inside a
 * transaction on ch. 0, FL_EREFUSED (not possible: why), FL_EPROTO (the
 * broker closed the channel: why), FL_EBROKER. */
static int fl_republish(fl_broker *b, uint16_t ch, const amqp_message_t *msg,
                        const fl_broker_dead *d, char *why, size_t n) {
  if (!d->queue[0]) {
    fl_errf(why, n, "it carries no x-death queue, so fleet cannot tell where it belongs");
    return FL_EREFUSED;
  }
  amqp_queue_declare(b->conn, ch, amqp_cstring_bytes(d->queue), 1, 0, 0, 0, amqp_empty_table);
  int rc = fl_broker_rpc_result(b, ch, "the queue it died in", why, n);
  if (rc)
    return rc == FL_EREFUSED ? FL_EPROTO : rc;
  amqp_tx_select(b->conn, ch);
  if ((rc = fl_broker_rpc_result(b, ch, "tx.select", why, n)))
    return rc == FL_EREFUSED ? FL_EPROTO : rc;
  amqp_basic_properties_t p = msg->properties;
  amqp_table_entry_t *kept = NULL;
  int nkept = 0;
  if (p._flags & AMQP_BASIC_HEADERS_FLAG) {
    kept = fl_calloc((size_t)p.headers.num_entries + 1, sizeof *kept);
    if (!kept) {
      fl_errf(why, n, "out of memory");
      return FL_EREFUSED;
    }
    for (int i = 0; i < p.headers.num_entries; i++)
      if (!fl_is_death_header(p.headers.entries[i].key))
        kept[nkept++] = p.headers.entries[i];
    p.headers.entries = kept;
    p.headers.num_entries = nkept;
  }
  rc = amqp_basic_publish(b->conn, ch, amqp_cstring_bytes(d->exchange[0] ? d->exchange : FL_EX_MSG),
                          amqp_cstring_bytes(d->routing_key), 0, 0, &p, msg->body);
  fl_free(kept);
  if (rc != AMQP_STATUS_OK) {
    fl_errf(why, n, "republish failed: %s", amqp_error_string2(rc));
    return FL_EBROKER;
  }
  amqp_tx_commit(b->conn, ch);
  rc = fl_broker_rpc_result(b, ch, "tx.commit", why, n);
  return rc == FL_EREFUSED ? FL_EPROTO : rc;
}

/* Reads messages off fleet.dlq into it->dead until it is empty or full,
 * acting on each as the op says. 0, FL_EREFUSED (the channel was closed by
 * the broker: why), FL_EBROKER. */
static int fl_dlq_walk(fl_broker *b, uint16_t ch, struct item *it, char *why, size_t n) {
  it->dead = fl_calloc(FL_BROKER_DLQ_MAX, sizeof *it->dead);
  if (!it->dead) {
    fl_errf(why, n, "out of memory");
    return FL_EREFUSED;
  }
  it->status = it->dlq_op == FL_BROKER_DLQ_REPLAY ? FL_ENOTFOUND : 0;
  while (it->ndead < FL_BROKER_DLQ_MAX) {
    amqp_basic_get(b->conn, ch, amqp_cstring_bytes(FL_Q_DLQ), 0);
    amqp_rpc_reply_t r = amqp_get_rpc_reply(b->conn);
    if (r.reply_type == AMQP_RESPONSE_NORMAL && r.reply.id == AMQP_BASIC_GET_EMPTY_METHOD)
      return 0;
    int rc = fl_broker_rpc_result(b, ch, "basic.get " FL_Q_DLQ, why, n);
    if (rc)
      return rc;
    uint64_t dtag = ((amqp_basic_get_ok_t *)r.reply.decoded)->delivery_tag;
    amqp_message_t msg;
    r = amqp_read_message(b->conn, ch, &msg, 0);
    if (r.reply_type != AMQP_RESPONSE_NORMAL) {
      fl_errf(why, n, "reading a message of " FL_Q_DLQ " failed");
      return FL_EBROKER;
    }
    fl_broker_dead *d = &it->dead[it->ndead++];
    const amqp_table_t *hdr =
        (msg.properties._flags & AMQP_BASIC_HEADERS_FLAG) ? &msg.properties.headers : NULL;
    d->env_ok = fl_broker_env_from_headers(hdr, msg.body.len, &d->env, d->bad, sizeof d->bad) == 0;
    if (!d->env_ok && !d->bad[0])
      fl_broker_copy(d->bad, sizeof d->bad, "malformed envelope headers");
    fl_read_death(hdr, d);
    if (msg.body.len && (d->body = fl_malloc(msg.body.len)) != NULL) {
      memcpy(d->body, msg.body.bytes, msg.body.len);
      d->len = msg.body.len;
    }
    rc = 0;
    int settle = 0;
    if (it->dlq_op == FL_BROKER_DLQ_PURGE)
      settle = !it->older_than_ms || (d->time_ms && d->time_ms < it->older_than_ms);
    else if (it->dlq_op == FL_BROKER_DLQ_REPLAY && d->env_ok &&
             strcmp(d->env.msg_id, it->msg_id) == 0) {
      rc = fl_republish(b, ch, &msg, d, why, n);
      settle = rc == 0;
      it->status = 0;
      if (rc == FL_EREFUSED || rc == FL_EPROTO) {
        it->status = FL_EREFUSED;
        fl_broker_copy(it->why, sizeof it->why, why);
      }
    }
    amqp_destroy_message(&msg);
    if (rc == FL_EBROKER)
      return rc;
    if (rc == FL_EPROTO)
      return FL_EREFUSED; /* the channel is gone; nothing more to settle */
    if (settle) {
      if (amqp_basic_ack(b->conn, ch, dtag, 0) != AMQP_STATUS_OK) {
        fl_errf(why, n, "ack on " FL_Q_DLQ " failed");
        return FL_EBROKER;
      }
      if (it->dlq_op == FL_BROKER_DLQ_REPLAY) { /* the channel is transactional now */
        amqp_tx_commit(b->conn, ch);
        if ((rc = fl_broker_rpc_result(b, ch, "tx.commit", why, n)))
          return rc;
      }
      it->affected++;
    }
    if (it->dlq_op == FL_BROKER_DLQ_REPLAY && it->status != FL_ENOTFOUND)
      return 0;
  }
  return 0;
}

int fl_broker_dlq_serve(fl_broker *b, struct item *it, char *why, size_t n) {
  struct chan c;
  memset(&c, 0, sizeof c);
  uint16_t id = fl_broker_chan_alloc(b);
  if (!id) {
    it->status = FL_EBROKER;
    fl_broker_copy(it->why, sizeof it->why, "no channel is free for reading " FL_Q_DLQ);
    return 0;
  }
  int rc = fl_broker_chan_open(b, &c, id, why, n);
  if (rc == 0) {
    if (it->dlq_op == FL_BROKER_DLQ_PURGE && !it->older_than_ms) {
      amqp_queue_purge_ok_t *ok = amqp_queue_purge(b->conn, id, amqp_cstring_bytes(FL_Q_DLQ));
      rc = fl_broker_rpc_result(b, id, "queue.purge " FL_Q_DLQ, why, n);
      if (rc == 0 && ok)
        it->affected = ok->message_count;
    } else {
      rc = fl_dlq_walk(b, id, it, why, n);
    }
  }
  /* Closing the channel puts back every message read and not acked. On
   * FL_EREFUSED the broker closed it already. */
  fl_broker_chan_reset(b, &c);
  if (rc == 0) {
    amqp_channel_close(b->conn, id, AMQP_REPLY_SUCCESS);
    rc = fl_broker_rpc_result(b, id, "channel.close", why, n);
  }
  if (rc == FL_EBROKER) {
    it->status = FL_EBROKER;
    fl_broker_copy(it->why, sizeof it->why, why);
    return FL_EBROKER;
  }
  if (rc == FL_EREFUSED && it->status != FL_EREFUSED) {
    it->status = FL_EBROKER;
    fl_broker_copy(it->why, sizeof it->why, why);
  }
  return 0;
}
