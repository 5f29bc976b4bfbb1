/* broker_reader.c — the loop reads the broker's socket while the broker
 * thread sleeps (the link lock: broker_internal.h).
 *
 * Each time the broker thread is about to sleep and the loop does not
 * watch its socket, it offers it (EV_READ, with a dup of the socket the
 * first time for a connection). The loop watches the dup with a uv_poll_t.
 * When the broker sends, the loop takes the link lock with a trylock, reads
 * what is there (fl_broker_read_frames, zero timeout) and runs the events
 * at once, so a delivery to an idle gateway costs no thread hand-off.
 *
 * The loop stops watching, and wakes the thread to read instead, when the
 * trylock fails (the thread is awake: it reads before it sleeps) or when
 * more is left than one read takes (a burst, or the events queue over its
 * budget: the thread waits for room, the loop never does). The thread
 * offers the socket again the next time it sleeps. The dup goes when its
 * connection is gone: link_teardown shuts the socket down, so the dup
 * reads as hung up and the broker sees the connection end at once.
 *
 * While it watches, the loop also sends on the link itself: a publish
 * (fl_broker_reader_publish) and the acks of a turn of the loop
 * (fl_broker_reader_ack), when no command waits for the thread (nothing
 * may pass one) and the socket's send buffer has room, so the send cannot
 * block. Afterwards it reads what rabbitmq-c took off the socket while it
 * sent, which no poll would show. */
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/alloc.h"
#include "gateway/broker/broker_internal.h"

/* Room kept in the send buffer beyond a message's body for its method and
 * header frames (the envelope's headers are a few KiB at most). */
#define SEND_SLACK 8192

struct fl_broker_reader {
  uv_poll_t poll;
  int fd;       /* the dup it watches; closed with the handle */
  uint64_t gen; /* the connection it belongs to (b->conn_gen) */
  fl_broker *b;
};

static void reader_closed(uv_handle_t *h) {
  struct fl_broker_reader *r = h->data;
  close(r->fd);
  fl_free(r);
}

void fl_broker_reader_close(fl_broker *b) {
  struct fl_broker_reader *r = b->reader;
  if (!r)
    return;
  b->reader = NULL;
  atomic_store(&b->lr_gen, 0);
  uv_close((uv_handle_t *)&r->poll, reader_closed);
}

/* Leaves the socket to the thread until it offers it again. */
static void stop_watching(fl_broker *b) {
  uv_poll_stop(&b->reader->poll);
  atomic_store(&b->lr_gen, 0);
  atomic_store(&b->lr_lost, 1);
  fl_broker_wake_thread(b);
}

static void on_readable(uv_poll_t *h, int status, int events) {
  struct fl_broker_reader *r = h->data;
  fl_broker *b = r->b;
  (void)events;
  if (b->stopped)
    return;
  if (status < 0) {
    fl_broker_reader_close(b); /* the thread reads this connection from now on */
    return;
  }
  if (uv_mutex_trylock(&b->link_mu) != 0) {
    stop_watching(b);
    return;
  }
  if (!b->conn || b->conn_gen != r->gen) {
    uv_mutex_unlock(&b->link_mu);
    fl_broker_reader_close(b);
    return;
  }
  int more = 0;
  if (fl_broker_read_frames(b, 1, &more) > 0)
    b->loop_use.reads++;
  int lost = !b->conn;
  int wake = lost || b->deferred;
  uv_mutex_unlock(&b->link_mu);
  if (lost)
    fl_broker_reader_close(b);
  else if (more)
    stop_watching(b);
  if (wake)
    fl_broker_wake_thread(b);
  fl_broker_events_run(b);
}

void fl_broker_reader_offer(fl_broker *b, struct item *it) {
  struct fl_broker_reader *r = b->reader;
  if (it->rfd >= 0) {
    fl_broker_reader_close(b);
    r = fl_calloc(1, sizeof(*r));
    if (!r)
      return; /* the thread reads; the item's free closes the dup */
    if (uv_poll_init(b->loop, &r->poll, it->rfd) != 0) {
      fl_free(r);
      return;
    }
    r->fd = it->rfd;
    it->rfd = -1;
    r->gen = it->seq;
    r->b = b;
    r->poll.data = r;
    b->reader = r;
  }
  if (!r || r->gen != it->seq)
    return; /* for a connection that is gone */
  if (uv_poll_start(&r->poll, UV_READABLE, on_readable) == 0)
    atomic_store(&b->lr_gen, r->gen);
}

/* Whether a publish of len bytes fits in the socket's send buffer now, so
 * sending it cannot block: what is queued (SIOCOUTQ) plus the message and
 * room for its frames' headers stays within SO_SNDBUF. */
static int send_room(int fd, size_t len) {
  int queued = 0, sndbuf = 0;
  socklen_t sl = sizeof(sndbuf);
  if (ioctl(fd, SIOCOUTQ, &queued) != 0 || getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, &sl) != 0)
    return 0;
  return queued >= 0 && sndbuf > 0 && (size_t)queued + len + SEND_SLACK <= (size_t)sndbuf;
}

/* Takes the link for the loop: the thread sleeps with the socket handed
 * over, no command waits (what the loop sends must not pass one), and the
 * trylock succeeds. Returns 1 with the link lock held and b->on_loop set,
 * else 0. */
static int link_take(fl_broker *b) {
  struct fl_broker_reader *r = b->reader;
  if (!r || atomic_load(&b->lr_gen) != r->gen || !fl_xqueue_is_empty(b->cmds))
    return 0;
  if (uv_mutex_trylock(&b->link_mu) != 0)
    return 0;
  if (!b->conn || b->conn_gen != r->gen) {
    uv_mutex_unlock(&b->link_mu);
    return 0;
  }
  b->on_loop = 1;
  return 1;
}

/* Gives the link back after the loop sent on it. rabbitmq-c reads while
 * it sends: what it took off the socket (a confirm, a delivery) waits in
 * its buffers, where no poll sees it, so it is read now. Events the loop
 * queued run at its next turn. */
static void link_give(fl_broker *b) {
  int more = 0;
  b->on_loop = 0;
  if (b->conn && (amqp_frames_enqueued(b->conn) || amqp_data_in_buffer(b->conn)))
    if (fl_broker_read_frames(b, 1, &more) > 0)
      b->loop_use.reads++;
  int lost = !b->conn;
  uv_mutex_unlock(&b->link_mu);
  if (lost) {
    fl_broker_reader_close(b);
    fl_broker_wake_thread(b);
  } else if (more) {
    stop_watching(b);
  }
  /* Any outcome it already has (a full ring, a lost link) is an event. */
  if (!fl_xqueue_is_empty(b->events))
    fl_xqueue_wake(b->events);
}

int fl_broker_reader_publish(fl_broker *b, struct item *it) {
  if (!b->reader || !send_room(b->reader->fd, it->len) || !link_take(b))
    return 0;
  fl_broker_publish_now(b, it);
  b->loop_use.publishes++;
  link_give(b);
  return 1;
}

int fl_broker_reader_ack(fl_broker *b, const uint64_t *tags, size_t n) {
  if (!b->reader || !send_room(b->reader->fd, 0) || !link_take(b))
    return 0;
  struct fl_broker_ack_run run;
  run.n = 0;
  for (size_t i = 0; i < n && b->conn; i++) {
    if (run.n == FL_BROKER_BATCH)
      fl_broker_ack_flush(b, &run);
    fl_broker_settle_tag(b, 1, tags[i], 0, &run);
  }
  if (run.n && b->conn)
    fl_broker_ack_flush(b, &run);
  b->loop_use.acks++;
  link_give(b);
  return 1;
}
