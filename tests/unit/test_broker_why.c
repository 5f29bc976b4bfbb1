/* test_broker_why.c — unit tests for gateway/broker/broker_why.c.
 *
 * rabbitmq-c says "a socket error occurred" for a refused connect and
 * leaves errno at EINPROGRESS; the reason a user reads must say that the
 * connection was refused, by which address, and what to check. Other
 * errnos read as the system's text, and other rabbitmq-c statuses keep
 * rabbitmq-c's. No broker needed: a port nothing listens on is made here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* After the four above: cmocka.h uses them without including them. */
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gateway/broker/broker_internal.h"

/* A loopback port nothing listens on (bound, then closed). */
static int free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  assert_true(fd >= 0);
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
  socklen_t len = sizeof a;
  assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
  close(fd);
  return ntohs(a.sin_port);
}

static void test_refused(void **state) {
  (void)state;
  int port = free_port();
  char why[FL_BROKER_WHY_LEN], want[64];
  snprintf(want, sizeof want, "connection refused by 127.0.0.1:%d", port);
  /* As rabbitmq-c leaves it: a socket error, errno from its own connect. */
  fl_broker_connect_why("127.0.0.1", port, AMQP_STATUS_SOCKET_ERROR, EINPROGRESS, why, sizeof why);
  assert_non_null(strstr(why, want));
  assert_non_null(strstr(why, "is the broker running"));
  assert_null(strstr(why, "a socket error occurred"));
  /* errno already saying so is taken as it is. */
  fl_broker_connect_why("127.0.0.1", port, AMQP_STATUS_SOCKET_ERROR, ECONNREFUSED, why, sizeof why);
  assert_non_null(strstr(why, want));
  /* And the words fit a small buffer. */
  char tiny[16];
  fl_broker_connect_why("127.0.0.1", port, AMQP_STATUS_SOCKET_ERROR, 0, tiny, sizeof tiny);
  assert_int_equal(strlen(tiny), sizeof tiny - 1);
}

static void test_other_reasons(void **state) {
  (void)state;
  char why[FL_BROKER_WHY_LEN];
  /* Another errno reads as the system says it. */
  fl_broker_connect_why("127.0.0.1", 1, AMQP_STATUS_SOCKET_ERROR, EHOSTUNREACH, why, sizeof why);
  assert_non_null(strstr(why, "cannot connect to 127.0.0.1:1"));
  assert_non_null(strstr(why, strerror(EHOSTUNREACH)));
  /* Another status keeps rabbitmq-c's words. */
  fl_broker_connect_why("nowhere.invalid", 5672, AMQP_STATUS_HOSTNAME_RESOLUTION_FAILED, 0, why,
                        sizeof why);
  assert_non_null(strstr(why, "nowhere.invalid:5672"));
  assert_non_null(strstr(why, amqp_error_string2(AMQP_STATUS_HOSTNAME_RESOLUTION_FAILED)));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_refused),
      cmocka_unit_test(test_other_reasons),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
