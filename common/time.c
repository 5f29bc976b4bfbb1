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

/* v as n decimal digits (leading zeros) at o. */
static char *fl_put_digits(char *o, unsigned v, int n) {
  for (int i = n - 1; i >= 0; i--) {
    o[i] = (char)('0' + v % 10);
    v /= 10;
  }
  return o + n;
}

/* The first millisecond of year 10000: past it a year has five digits. */
#define FL_YEAR_10000_MS 253402300800000LL

void fl_rfc3339(long long ms, char *out) {
  if (ms < 0 || ms >= FL_YEAR_10000_MS) {
    /* Outside 1970..9999, as the C library writes it. */
    time_t s = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&s, &tm);
    size_t n = strftime(out, FL_TS_LEN, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out + n, FL_TS_LEN - n, ".%03dZ", (int)(ms % 1000));
    return;
  }
  /* The date from the day count, in arithmetic (a roster listing writes
   * thousands of these; gmtime_r and strftime cost a microsecond each):
   * the proleptic Gregorian calendar counted in 400-year eras from
   * 0000-03-01, so that a leap day falls at the end of its year. */
  long long secs = ms / 1000;
  unsigned sod = (unsigned)(secs % 86400);
  unsigned long long z = (unsigned long long)(secs / 86400) + 719468; /* days since 0000-03-01 */
  unsigned long long era = z / 146097;
  unsigned doe = (unsigned)(z - era * 146097);                          /* [0, 146096] */
  unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365; /* [0, 399] */
  unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);               /* [0, 365] */
  unsigned mp = (5 * doy + 2) / 153;                                    /* March = 0 */
  unsigned day = doy - (153 * mp + 2) / 5 + 1;
  unsigned month = mp < 10 ? mp + 3 : mp - 9;
  unsigned year = (unsigned)(era * 400 + yoe) + (month <= 2);
  char *o = fl_put_digits(out, year, 4);
  *o++ = '-';
  o = fl_put_digits(o, month, 2);
  *o++ = '-';
  o = fl_put_digits(o, day, 2);
  *o++ = 'T';
  o = fl_put_digits(o, sod / 3600, 2);
  *o++ = ':';
  o = fl_put_digits(o, sod / 60 % 60, 2);
  *o++ = ':';
  o = fl_put_digits(o, sod % 60, 2);
  *o++ = '.';
  o = fl_put_digits(o, (unsigned)(ms % 1000), 3);
  memcpy(o, "Z", 2);
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
