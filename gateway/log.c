/* log.c — the line logger (see log.h). */
#include "gateway/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <sys/time.h>
#include <time.h>

static enum fl_log_level fl_min_level = FL_LOG_INFO;

void fl_log_set_level(enum fl_log_level lvl) { fl_min_level = lvl; }

void fl_log(enum fl_log_level lvl, const char *trace, const char *fmt, ...) {
  static const char *const names[] = {"DEBUG", "INFO", "WARN", "ERROR"};
  if (lvl < fl_min_level)
    return;
  struct timeval tv;
  gettimeofday(&tv, NULL);
  struct tm tm;
  gmtime_r(&tv.tv_sec, &tm);
  char line[2048];
  int n = snprintf(line, sizeof line, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s ", tm.tm_year + 1900,
                   tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                   (long)(tv.tv_usec / 1000), names[lvl]);
  if (trace && *trace && n < (int)sizeof line)
    n += snprintf(line + n, sizeof line - (size_t)n, "[trace=%s] ", trace);
  va_list ap;
  va_start(ap, fmt);
  if (n < (int)sizeof line)
    n += vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
  va_end(ap);
  if (n >= (int)sizeof line)
    n = (int)sizeof line - 1;
  line[n] = '\n';
  fwrite(line, 1, (size_t)n + 1, stderr);
}
