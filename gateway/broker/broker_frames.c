/* broker_frames.c — the frames the broker sends, handled: publish confirms
 * and returns, deliveries assembled from their method, header and body
 * frames, consumer and channel events, and the read that takes them off
 * the connection (fl_broker_read_frames).
 *
 * Runs on the broker thread, or on the loop holding the link lock while
 * the thread sleeps (broker_reader.c, b->on_loop): nothing here waits for
 * the network, and what would (closing a cancelled consumer's channel, an
 * RPC) is left to the thread. */
#include <string.h>
#include <sys/time.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/log.h"
#include "gateway/broker/broker_internal.h"

/* Settles publishes up to seq (multiple) or just seq. */
static void confirm(fl_broker *b, uint64_t seq, int multiple, int ack) {
  if (seq < b->head_seq)
    return;
  uint64_t from = multiple ? b->head_seq : seq;
  for (uint64_t s = from; s <= seq && s - b->head_seq < b->pending.n; s++) {
    struct item **slot = fl_broker_pending_at(&b->pending, (size_t)(s - b->head_seq));
    struct item *it = *slot;
    if (!it)
      continue;
    *slot = NULL;
    if (!ack) {
      fl_broker_publish_done(b, it, FL_EBROKER,
                             "the broker refused the message (nack): the inbox may be full");
    } else if (it->returned) {
      char why[FL_BROKER_WHY_LEN];
      fl_errf(why, sizeof(why), "unroutable: no inbox bound to key %s", it->routing_key);
      fl_broker_publish_done(b, it, FL_EBROKER, why);
    } else {
      fl_broker_publish_done(b, it, 0, "");
    }
  }
  while (b->pending.n && *fl_broker_pending_at(&b->pending, 0) == NULL) {
    fl_broker_pending_pop(&b->pending);
    b->head_seq++;
  }
}

/* A basic.return's content is complete: mark the publish it returns. Returns
 * carry no sequence number, so match the oldest unconfirmed mandatory
 * publish with the same exchange, key and message id; a return always
 * precedes its confirm. */
static void returned(fl_broker *b, struct chan *c) {
  for (size_t i = 0; i < b->pending.n; i++) {
    struct item *it = *fl_broker_pending_at(&b->pending, i);
    if (it && it->mandatory && !it->returned && strcmp(it->exchange, c->exchange) == 0 &&
        strcmp(it->routing_key, c->routing_key) == 0 && strcmp(it->env.msg_id, c->msg_id) == 0) {
      it->returned = 1;
      fl_warn(it->env.trace_id, "broker: %s returned to key %s: %s",
              it->env.msg_id[0] ? it->env.msg_id : "message", it->routing_key, c->reply_text);
      return;
    }
  }
}

/* A delivery's content is complete: hand it to the loop, one that cannot
 * even be parsed without its body and with why it cannot (the loop counts
 * it and dead-letters it). */
static void delivered(fl_broker *b, struct chan *c) {
  if (c->dtag > 0xffffffffu) {
    /* Tags carry 32 bits of the broker's tag; four billion deliveries on one
     * channel means the link is recycled rather than risk a wrong ack. */
    fl_broker_link_lost(b, "delivery tag space of a channel exhausted; reconnecting");
    return;
  }
  struct item *it = fl_calloc(1, sizeof(*it));
  if (!it) {
    fl_error(c->env.trace_id, "broker: out of memory; message requeued");
    fl_broker_acks_settle(&c->acks, c->dtag);
    amqp_basic_reject(b->conn, c->id, c->dtag, 1);
    return;
  }
  it->type = EV_DELIVERY;
  it->tag = (uint64_t)c->epoch << 48 | (uint64_t)c->id << 32 | c->dtag;
  it->source = c->source;
  it->redelivered = c->redelivered;
  fl_broker_copy(it->exchange, sizeof(it->exchange), c->exchange);
  fl_broker_copy(it->routing_key, sizeof(it->routing_key), c->routing_key);
  if (c->inbox)
    fl_broker_copy(it->gid, sizeof(it->gid), c->inbox->gid);
  it->env = c->env;
  if (c->bad[0]) {
    /* Unreadable: the loop counts it and rejects it to fleet.dlq. */
    fl_broker_copy(it->why, sizeof(it->why), c->bad);
  } else {
    it->body = c->body;
    it->len = c->size;
    c->body = NULL;
  }
  /* Past the budget this waits for the loop, and the socket waits with it. */
  it->weight = sizeof(*it) + it->len;
  fl_broker_emit(b, it, it->weight);
}

static void content_done(fl_broker *b, struct chan *c) {
  c->content = 0;
  if (c->is_return)
    returned(b, c);
  else
    delivered(b, c);
  if (c->body) {
    fl_free(c->body);
    c->body = NULL;
  }
}

/* A method frame on channel c. Returns 0, or FL_EBROKER after fl_broker_link_lost. */
static int handle_method(fl_broker *b, struct chan *c, amqp_frame_t *f) {
  char why[FL_BROKER_WHY_LEN];
  switch (f->payload.method.id) {
  case AMQP_BASIC_ACK_METHOD: {
    amqp_basic_ack_t *m = f->payload.method.decoded;
    if (c == &b->pub)
      confirm(b, m->delivery_tag, m->multiple, 1);
    return 0;
  }
  case AMQP_BASIC_NACK_METHOD: {
    amqp_basic_nack_t *m = f->payload.method.decoded;
    if (c == &b->pub)
      confirm(b, m->delivery_tag, m->multiple, 0);
    return 0;
  }
  case AMQP_BASIC_RETURN_METHOD: {
    amqp_basic_return_t *m = f->payload.method.decoded;
    memset(c->msg_id, 0, sizeof(c->msg_id));
    c->is_return = 1;
    c->content = 1;
    fl_broker_copy_bytes(c->exchange, sizeof(c->exchange), m->exchange);
    fl_broker_copy_bytes(c->routing_key, sizeof(c->routing_key), m->routing_key);
    fl_errf(c->reply_text, sizeof(c->reply_text), "%u %.*s", m->reply_code, (int)m->reply_text.len,
            (const char *)m->reply_text.bytes);
    return 0;
  }
  case AMQP_BASIC_DELIVER_METHOD: {
    amqp_basic_deliver_t *m = f->payload.method.decoded;
    c->is_return = 0;
    c->content = 1;
    c->dtag = m->delivery_tag;
    c->redelivered = m->redelivered;
    fl_broker_copy_bytes(c->exchange, sizeof(c->exchange), m->exchange);
    fl_broker_copy_bytes(c->routing_key, sizeof(c->routing_key), m->routing_key);
    if (c->inbox)
      c->source = FL_BROKER_INBOX;
    else if (m->consumer_tag.len == strlen(FL_BROKER_TAG_CLAIMS) &&
             memcmp(m->consumer_tag.bytes, FL_BROKER_TAG_CLAIMS, strlen(FL_BROKER_TAG_CLAIMS)) == 0)
      c->source = FL_BROKER_CLAIMS;
    else
      c->source =
          (m->consumer_tag.len == strlen(FL_BROKER_TAG_CONTROL) &&
           memcmp(m->consumer_tag.bytes, FL_BROKER_TAG_CONTROL, strlen(FL_BROKER_TAG_CONTROL)) == 0)
              ? FL_BROKER_CONTROL
              : FL_BROKER_ROSTER;
    return 0;
  }
  case AMQP_BASIC_CONSUME_OK_METHOD:
    if (c->inbox && c->inbox->consume_sent && !c->inbox->consuming)
      fl_broker_inbox_consuming(b, c->inbox);
    return 0;
  case AMQP_BASIC_CANCEL_METHOD:
    /* The broker cancelled a consumer (its queue was deleted): we asked for
     * this with consumer_cancel_notify at login. */
    if (c->inbox && b->on_loop) {
      /* Closing its channel is an RPC, which the loop never waits for. */
      c->inbox->cancel_due = 1;
      b->deferred = 1;
      return 0;
    }
    if (c->inbox) {
      if (fl_broker_inbox_cancelled(b, c->inbox) < 0) {
        fl_broker_link_lost(b, "the connection failed while closing a cancelled inbox");
        return FL_EBROKER;
      }
      return 0;
    }
    fl_broker_link_lost(b, "the broker cancelled a control or roster consumer");
    return FL_EBROKER;
  case AMQP_CHANNEL_CLOSE_METHOD: {
    amqp_channel_close_t *m = f->payload.method.decoded;
    amqp_channel_close_ok_t ok = {0};
    fl_errf(why, sizeof(why), "the broker closed channel %u: %.*s", f->channel,
            (int)m->reply_text.len, (const char *)m->reply_text.bytes);
    amqp_send_method(b->conn, f->channel, AMQP_CHANNEL_CLOSE_OK_METHOD, &ok);
    if (c->inbox) {
      fl_broker_inbox_closed(b, c->inbox, why);
      return 0;
    }
    fl_broker_link_lost(b, why);
    return FL_EBROKER;
  }
  default:
    return 0;
  }
}

/* A content header frame: what the body will be, and the envelope. */
static void handle_header(fl_broker *b, struct chan *c, amqp_frame_t *f) {
  amqp_basic_properties_t *p = f->payload.properties.decoded;
  c->size = (size_t)f->payload.properties.body_size;
  c->got = 0;
  c->bad[0] = '\0';
  fl_free(c->body);
  c->body = NULL;
  if (c->is_return) {
    if (p->_flags & AMQP_BASIC_MESSAGE_ID_FLAG)
      fl_broker_copy_bytes(c->msg_id, sizeof(c->msg_id), p->message_id);
  } else {
    const amqp_table_t *hdr = (p->_flags & AMQP_BASIC_HEADERS_FLAG) ? &p->headers : NULL;
    if (fl_broker_env_from_headers(hdr, f->payload.properties.body_size, &c->env, c->bad,
                                   sizeof(c->bad)) != 0) {
      if (!c->bad[0])
        fl_broker_copy(c->bad, sizeof(c->bad), "malformed envelope headers");
    } else if (c->size) {
      c->body = fl_malloc(c->size);
      if (!c->body)
        fl_broker_copy(c->bad, sizeof(c->bad), "out of memory for the body");
    }
  }
  c->content = 2;
  if (c->size == 0)
    content_done(b, c);
}

/* Handles one frame. Returns 0, or FL_EBROKER after fl_broker_link_lost. */
static int handle_frame(fl_broker *b, amqp_frame_t *f) {
  char why[FL_BROKER_WHY_LEN];
  if (f->channel == 0) {
    if (f->frame_type == AMQP_FRAME_METHOD &&
        f->payload.method.id == AMQP_CONNECTION_CLOSE_METHOD) {
      amqp_connection_close_t *m = f->payload.method.decoded;
      amqp_connection_close_ok_t ok = {0};
      fl_errf(why, sizeof(why), "the broker closed the connection: %.*s", (int)m->reply_text.len,
              (const char *)m->reply_text.bytes);
      amqp_send_method(b->conn, 0, AMQP_CONNECTION_CLOSE_OK_METHOD, &ok);
      fl_broker_link_lost(b, why);
      return FL_EBROKER;
    }
    if (f->frame_type == AMQP_FRAME_METHOD &&
        f->payload.method.id == AMQP_CONNECTION_BLOCKED_METHOD)
      fl_warn(NULL, "broker: the broker blocks publishing (resource alarm)");
    return 0;
  }
  struct chan *c = b->chans[f->channel];
  if (!c || !c->open)
    return 0; /* a frame for a channel we closed */

  if (f->frame_type == AMQP_FRAME_METHOD)
    return handle_method(b, c, f);
  if (f->frame_type == AMQP_FRAME_HEADER && c->content == 1) {
    handle_header(b, c, f);
    return b->conn ? 0 : FL_EBROKER;
  }
  if (f->frame_type == AMQP_FRAME_BODY && c->content == 2) {
    amqp_bytes_t frag = f->payload.body_fragment;
    if (frag.len > c->size - c->got) {
      fl_broker_link_lost(b, "the broker sent more body than announced");
      return FL_EBROKER;
    }
    if (c->body)
      memcpy(c->body + c->got, frag.bytes, frag.len);
    c->got += frag.len;
    if (c->got == c->size)
      content_done(b, c);
    return b->conn ? 0 : FL_EBROKER;
  }
  return 0;
}

int fl_broker_read_frames(fl_broker *b, int on_loop, int *more) {
  int i;
  *more = 0;
  b->on_loop = on_loop;
  for (i = 0; b->conn; i++) {
    if (i == FL_BROKER_BATCH || (on_loop && fl_xqueue_over_budget(b->events))) {
      *more = 1;
      break;
    }
    amqp_frame_t f;
    struct timeval zero = {0, 0};
    /* A zero timeout still sends the heartbeats we owe and notices the
     * broker's missing ones. */
    int rc = amqp_simple_wait_frame_noblock(b->conn, &f, &zero);
    if (rc == AMQP_STATUS_TIMEOUT)
      break;
    if (rc != AMQP_STATUS_OK) {
      char why[FL_BROKER_WHY_LEN];
      fl_errf(why, sizeof(why), "connection lost: %s", amqp_error_string2(rc));
      fl_broker_link_lost(b, why);
      break;
    }
    uint16_t ch = f.channel;
    if (handle_frame(b, &f) < 0)
      break;
    amqp_maybe_release_buffers_on_channel(b->conn, ch);
  }
  b->on_loop = 0;
  if (!b->conn)
    *more = 0;
  else if (amqp_frames_enqueued(b->conn) || amqp_data_in_buffer(b->conn))
    *more = 1;
  return i;
}
