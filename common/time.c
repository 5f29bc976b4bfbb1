/* time.c — clocks and RFC 3339 timestamps (see time.h). */
#include "common/time.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/error.h"

long long fl_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

long long fl_mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

long long fl_mono_ms(void) { return fl_mono_ns() / 1000000; }

void fl_rfc3339(long long ms, char *out) {
  time_t s = (time_t)(ms / 1000);
  struct tm tm;
  gmtime_r(&s, &tm);
  size_t n = strftime(out, FL_TS_LEN, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(out + n, FL_TS_LEN - n, ".%03dZ", (int)(ms % 1000));
}

void fl_rfc3339_now(char *out, size_t n) {
  char ts[FL_TS_LEN];
  fl_rfc3339(fl_now_ms(), ts);
  snprintf(out, n, "%s", ts);
}

/* Reads exactly n digits at *p into *v. */
static int fl_digits(const char **p, int n, int *v) {
  *v = 0;
  for (int i = 0; i < n; i++, (*p)++) {
    if (**p < '0' || **p > '9')
      return -1;
    *v = *v * 10 + (**p - '0');
  }
  return 0;
}

int fl_rfc3339_parse(const char *s, long long *ms) {
  if (!s || !ms)
    return FL_EINVAL;
  const char *p = s;
  struct tm tm;
  memset(&tm, 0, sizeof tm);
  int y, mo, d, h, mi, sec;
  if (fl_digits(&p, 4, &y) || *p++ != '-' || fl_digits(&p, 2, &mo) || *p++ != '-' ||
      fl_digits(&p, 2, &d) || *p++ != 'T' || fl_digits(&p, 2, &h) || *p++ != ':' ||
      fl_digits(&p, 2, &mi) || *p++ != ':' || fl_digits(&p, 2, &sec))
    return FL_EINVAL;
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60)
    return FL_EINVAL;
  long long frac = 0;
  if (*p == '.') {
    int digits = 0;
    for (p++; *p >= '0' && *p <= '9'; p++, digits++)
      if (digits < 3)
        frac = frac * 10 + (*p - '0');
    if (digits == 0 || digits > 9)
      return FL_EINVAL;
    for (; digits < 3; digits++)
      frac *= 10;
  }
  if (*p++ != 'Z' || *p != '\0')
    return FL_EINVAL;
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = sec;
  *ms = (long long)timegm(&tm) * 1000 + frac;
  return 0;
}
