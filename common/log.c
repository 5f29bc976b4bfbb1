/* log.c — the line logger (see log.h). */
#include "common/log.h"
#include "common/time.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/error.h"
#include "common/limits.h"

/* Traced lines kept for `fleetctl trace`: FL_LOG_TRACE_LINES of at most
 * FL_LOG_LINE_MAX bytes, a fixed ring, so it never grows. */
static char fl_ring[FL_LOG_TRACE_LINES][FL_LOG_LINE_MAX];
static size_t fl_ring_next;
static pthread_mutex_t fl_ring_lock = PTHREAD_MUTEX_INITIALIZER;

static enum fl_log_level fl_min_level = FL_LOG_INFO;

void fl_log_set_level(enum fl_log_level lvl) { fl_min_level = lvl; }

void fl_log(enum fl_log_level lvl, const char *trace, const char *fmt, ...) {
  static const char *const names[] = {"DEBUG", "INFO", "WARN", "ERROR"};
  if (lvl < fl_min_level)
    return;
  char ts[FL_TS_LEN];
  fl_rfc3339(fl_now_ms(), ts);
  char line[FL_LOG_LINE_MAX];
  int n = snprintf(line, sizeof line, "%s %s ", ts, names[lvl]);
  if (trace && *trace && n < (int)sizeof line)
    n += snprintf(line + n, sizeof line - (size_t)n, "[trace=%s] ", trace);
  va_list ap;
  va_start(ap, fmt);
  if (n < (int)sizeof line)
    n += vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
  va_end(ap);
  if (n >= (int)sizeof line)
    n = (int)sizeof line - 1;
  /* One event, one line: a control byte from anywhere (a host id or a
   * reason read off the wire) cannot start a line of its own or recolour
   * a terminal. */
  for (int i = 0; i < n; i++)
    if ((unsigned char)line[i] < 0x20 || line[i] == 0x7f)
      line[i] = '?';
  line[n] = '\n';
  fwrite(line, 1, (size_t)n + 1, stderr);
  if (trace && *trace) {
    line[n] = '\0';
    pthread_mutex_lock(&fl_ring_lock);
    memcpy(fl_ring[fl_ring_next], line, (size_t)n + 1);
    fl_ring_next = (fl_ring_next + 1) % FL_LOG_TRACE_LINES;
    pthread_mutex_unlock(&fl_ring_lock);
  }
}

int fl_log_trace_of(const char *text, char *trace_out, size_t n) {
  static const char tag[] = "[trace=";
  int rc = FL_ENOTFOUND;
  if (!text || !*text || !trace_out || n == 0)
    return FL_EINVAL;
  trace_out[0] = '\0';
  pthread_mutex_lock(&fl_ring_lock);
  /* Newest first: the ring's last written slot is just before fl_ring_next. */
  for (size_t k = 1; k <= FL_LOG_TRACE_LINES && rc != 0; k++) {
    const char *l = fl_ring[(fl_ring_next + FL_LOG_TRACE_LINES - k) % FL_LOG_TRACE_LINES];
    const char *t = l[0] ? strstr(l, tag) : NULL;
    if (!t)
      continue;
    t += sizeof tag - 1;
    size_t len = strcspn(t, "]");
    /* The id itself is not a mention: look past the tag. */
    if (t[len] != ']' || !strstr(t + len, text))
      continue;
    if (len >= n) {
      rc = FL_ETOOBIG;
      break;
    }
    memcpy(trace_out, t, len);
    trace_out[len] = '\0';
    rc = 0;
  }
  pthread_mutex_unlock(&fl_ring_lock);
  return rc;
}

void fl_log_find_trace(const char *trace, void (*cb)(void *ctx, const char *line), void *ctx) {
  char needle[96];
  snprintf(needle, sizeof needle, "[trace=%s]", trace);
  pthread_mutex_lock(&fl_ring_lock);
  for (size_t k = 0; k < FL_LOG_TRACE_LINES; k++) {
    const char *l = fl_ring[(fl_ring_next + k) % FL_LOG_TRACE_LINES];
    if (l[0] && strstr(l, needle))
      cb(ctx, l);
  }
  pthread_mutex_unlock(&fl_ring_lock);
}
