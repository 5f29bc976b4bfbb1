/* broker_direct.c — a publish the loop writes on the link itself.
 *
 * A publish is a command for the broker thread, and a thread asleep in
 * poll() must be woken to send it: on an idle link that wake-up was the
 * largest single step of a request's sending side (bench/README.md, "U1 hop
 * by hop"). While asleep the thread holds no lock (link_mu, broker_conn.c),
 * so the loop takes the lock, without waiting for it, and sends the publish
 * at once, when nothing can go wrong by it:
 *   - no publish is outstanding, so none queued is overtaken (publishes keep
 *     their order) and none is waiting for a confirm;
 *   - the link is up, over plain TCP, its publish channel open;
 *   - the socket's send queue has room for the frames, so the send cannot
 *     block the loop.
 * Otherwise, or while the thread is awake, the publish is queued as ever.
 * The item goes into the thread's pending list as any publish does, and its
 * confirm comes back through the thread. The loop never reports an event or
 * drops the link: a send that fails leaves the item in pending and asks the
 * thread (direct_why, woken by a CMD_WAKE) to drop the link, which reports
 * it like every publish lost with a link. Publishes in a burst still go
 * through the thread, which sends them in batches. */
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "common/alloc.h"
#include "common/error.h"
#include "gateway/broker/broker_internal.h"

/* Room kept in the send queue beyond the body: the method and header frames
 * (the envelope's headers) and whatever the thread queued (acks, a
 * heartbeat). */
#define FL_DIRECT_SLACK (16 * 1024)

/* Whether fd's send queue takes len more bytes and the slack without
 * filling up. */
static int fl_direct_room(int fd, size_t len) {
  int queued = 0, sndbuf = 0;
  socklen_t sl = sizeof sndbuf;
  if (fd < 0 || ioctl(fd, SIOCOUTQ, &queued) != 0 ||
      getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, &sl) != 0 || queued < 0 || sndbuf <= 0)
    return 0;
  return (size_t)sndbuf > (size_t)queued + len + FL_DIRECT_SLACK;
}

int fl_broker_direct_publish(fl_broker *b, struct item *it) {
  if (b->outstanding != 0 || uv_mutex_trylock(&b->link_mu) != 0)
    return 0;
  int sent = 0, failed = 0;
  if (b->conn && !b->ci.ssl && b->pub.open && b->pending.n == 0 && !b->direct_why[0] &&
      fl_direct_room(amqp_get_sockfd(b->conn), it->len)) {
    int rc = fl_broker_publish_wire(b, it);
    if (rc != AMQP_STATUS_OK) {
      fl_errf(b->direct_why, sizeof b->direct_why, "publish failed: %s", amqp_error_string2(rc));
      failed = 1;
    }
    sent = 1;
  }
  uv_mutex_unlock(&b->link_mu);
  if (!sent)
    return 0;
  b->direct++;
  if (failed) {
    /* The thread drops the link and reports this publish with it. Without
     * the wake (no memory), it finds the broken socket at its next poll. */
    struct item *wake = fl_calloc(1, sizeof(*wake));
    if (wake) {
      wake->type = CMD_WAKE;
      if (fl_xqueue_push(b->cmds, wake) != 0)
        fl_broker_item_free(wake);
    }
  }
  return 1;
}
