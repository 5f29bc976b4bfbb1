/* bench_util.h — the small helpers the benchmark drivers share: a monotonic
 * clock, pacing, percentiles over a sample array, and dying with a message.
 *
 * Header-only (static functions), so the bench's own CMake project needs no
 * library for them; nothing here is part of fleet. */
#ifndef FL_BENCH_UTIL_H
#define FL_BENCH_UTIL_H

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* The driver's name in fb_die's messages; each driver sets it in main, and a
 * driver's other files define FB_PROG to it before including this header. */
#ifndef FB_PROG
#define FB_PROG "bench"
#endif
static const char *fb_prog = FB_PROG;

/* Prints "PROG: message" on stderr and exits 1. */
static void fb_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn, unused));
static void fb_die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s: ", fb_prog);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(1);
}

/* Nanoseconds on CLOCK_MONOTONIC: comparable across threads and processes
 * of one host, which is all the latency numbers need (everything runs on
 * loopback). */
static inline uint64_t fb_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Sleeps until the monotonic time t_ns (returns at once if it has passed). */
static inline void fb_sleep_until(uint64_t t_ns) {
  struct timespec ts = {(time_t)(t_ns / 1000000000u), (long)(t_ns % 1000000000u)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
  }
}

static int fb_cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Nearest-rank percentile (p in 0..100) of v[0..n), in milliseconds. Sorts v. */
static inline double fb_pct_ms(uint64_t *v, size_t n, double p) {
  if (n == 0)
    return -1;
  qsort(v, n, sizeof *v, fb_cmp_u64);
  size_t k = (size_t)((p / 100.0) * (double)n + 0.999999);
  if (k < 1)
    k = 1;
  if (k > n)
    k = n;
  return (double)v[k - 1] / 1e6;
}

/* Prints the p50/p99/max lines of a latency sample as "RESULT label.key value". */
static inline void fb_report_latency(const char *label, uint64_t *v, size_t n) {
  double p50 = fb_pct_ms(v, n, 50), p99 = fb_pct_ms(v, n, 99), max = fb_pct_ms(v, n, 100);
  double sum = 0;
  for (size_t i = 0; i < n; i++)
    sum += (double)v[i] / 1e6;
  printf("RESULT %s.n %zu\n", label, n);
  printf("RESULT %s.p50_ms %.3f\n", label, p50);
  printf("RESULT %s.p99_ms %.3f\n", label, p99);
  printf("RESULT %s.max_ms %.3f\n", label, max);
  printf("RESULT %s.mean_ms %.3f\n", label, n ? sum / (double)n : -1.0);
  fflush(stdout);
}

#endif
