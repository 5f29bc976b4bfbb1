/* probe_wait.c — a program that uses only the core's waiting calls
 * (fl_wait_release), linked against the core's library alone
 * (fleet_gw_core). tests/link/run.sh checks the result carries no
 * rabbitmq-c, libmicrohttpd or libcurl: the core links only lower folders.
 * It is built, never run for its behaviour. */
#include <stddef.h>

#include "gateway/core/wait.h"

int main(int argc, char **argv) {
  (void)argv;
  /* Never true when run: the call is here for the linker to resolve. */
  if (argc > 1000)
    fl_wait_release(NULL);
  return 0;
}
