/* broker_why.c — why the broker thread could not open its connection, in
 * words a user can act on.
 *
 * rabbitmq-c reports a refused or unreachable TCP connect only as "a
 * socket error occurred", and leaves errno at EINPROGRESS from its
 * non-blocking connect (the real reason sits in the socket's SO_ERROR,
 * which it does not pass on). So when errno, read right after the failing
 * call, says nothing, one short connect of our own finds out which it was:
 * refused (nothing listens there), timed out, unreachable. Broker thread
 * only; blocks for at most FL_BROKER_PROBE_MS. */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/error.h"
#include "gateway/broker/broker_internal.h"

/* The probe's connect timeout: a refusal is immediate; a silent network
 * gets one second, so fl_broker_stop stays brisk. */
#define FL_BROKER_PROBE_MS 1000

/* connect() to host:port as rabbitmq-c does (every address in turn): 0 when
 * one connects now, else the errno of the last failure. */
static int fl_probe_errno(const char *host, int port) {
  struct addrinfo hints, *res = NULL;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  char service[16];
  snprintf(service, sizeof service, "%d", port);
  if (getaddrinfo(host, service, &hints, &res) != 0)
    return 0; /* rabbitmq-c would have said "hostname lookup failed" */
  int err = 0;
  for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      err = errno;
      continue;
    }
    err = connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 ? 0 : errno;
    if (err == EINPROGRESS) {
      struct pollfd p = {fd, POLLOUT, 0};
      int r = poll(&p, 1, FL_BROKER_PROBE_MS);
      socklen_t len = sizeof err;
      if (r == 0)
        err = ETIMEDOUT;
      else if (r < 0)
        err = errno;
      else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
        err = errno;
    }
    close(fd);
    if (err == 0)
      break;
  }
  freeaddrinfo(res);
  return err;
}

void fl_broker_connect_why(const char *host, int port, int rc, int err_no, char *why, size_t n) {
  if (rc != AMQP_STATUS_SOCKET_ERROR) {
    fl_errf(why, n, "cannot connect to %s:%d: %s", host, port, amqp_error_string2(rc));
    return;
  }
  int e = err_no;
  if (e == 0 || e == EINPROGRESS || e == EAGAIN || e == EINTR)
    e = fl_probe_errno(host, port);
  if (e == ECONNREFUSED)
    fl_errf(why, n, "connection refused by %s:%d (is the broker running and listening there?)",
            host, port);
  else if (e)
    fl_errf(why, n, "cannot connect to %s:%d: %s", host, port, strerror(e));
  else
    fl_errf(why, n, "cannot connect to %s:%d: %s", host, port, amqp_error_string2(rc));
}
