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

/* Traced lines kept for `fleetctl trace`: the newest of them, each at its
 * own length, packed in a fixed buffer of FL_LOG_TRACE_BYTES (at most
 * FL_LOG_TRACE_LINES lines), so it never grows and a short line costs only
 * its bytes. Lines are written one after another and wrap to the start when
 * the next does not fit; the oldest lines in the way are dropped. */
static char fl_ring_buf[FL_LOG_TRACE_BYTES];
static struct {
  size_t off, size; /* in fl_ring_buf, the NUL included */
} fl_ring_line[FL_LOG_TRACE_LINES];
static size_t fl_ring_head;  /* the oldest line's slot */
static size_t fl_ring_count; /* lines kept */
static size_t fl_ring_pos;   /* where the next line goes */
static pthread_mutex_t fl_ring_lock = PTHREAD_MUTEX_INITIALIZER;

/* The k-th kept line, oldest first. */
static const char *fl_ring_at(size_t k) {
  return fl_ring_buf + fl_ring_line[(fl_ring_head + k) % FL_LOG_TRACE_LINES].off;
}

static void fl_ring_drop_oldest(void) {
  fl_ring_head = (fl_ring_head + 1) % FL_LOG_TRACE_LINES;
  fl_ring_count--;
}

/* Keeps line (size bytes, its NUL included; at most FL_LOG_LINE_MAX).
 * Called with fl_ring_lock held. The lines from fl_ring_pos on are the
 * oldest, in order, so the ones in the way are always the oldest. */
static void fl_ring_keep(const char *line, size_t size) {
  if (fl_ring_pos + size > sizeof fl_ring_buf)
    fl_ring_pos = 0;
  while (fl_ring_count > 0) {
    size_t off = fl_ring_line[fl_ring_head].off;
    int in_the_way = off >= fl_ring_pos && off < fl_ring_pos + size;
    if (!in_the_way && fl_ring_count < FL_LOG_TRACE_LINES)
      break;
    fl_ring_drop_oldest();
  }
  size_t slot = (fl_ring_head + fl_ring_count) % FL_LOG_TRACE_LINES;
  fl_ring_line[slot].off = fl_ring_pos;
  fl_ring_line[slot].size = size;
  memcpy(fl_ring_buf + fl_ring_pos, line, size);
  fl_ring_pos += size;
  fl_ring_count++;
}

static enum fl_log_level fl_min_level = FL_LOG_INFO;

void fl_log_set_level(enum fl_log_level lvl) { fl_min_level = lvl; }

void fl_log(enum fl_log_level lvl, const char *trace, const char *fmt, ...) {
  static const char *const names[] = {"DEBUG", "DEBUG", "INFO", "WARN", "ERROR"};
  int traced = trace && *trace;
  int to_stderr = lvl >= fl_min_level;
  if (!to_stderr && !(traced && lvl == FL_LOG_EVENT))
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
  if (to_stderr)
    fwrite(line, 1, (size_t)n + 1, stderr);
  if (traced) {
    line[n] = '\0';
    pthread_mutex_lock(&fl_ring_lock);
    fl_ring_keep(line, (size_t)n + 1);
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
  /* Newest first. */
  for (size_t k = fl_ring_count; k > 0 && rc != 0; k--) {
    const char *t = strstr(fl_ring_at(k - 1), tag);
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
  for (size_t k = 0; k < fl_ring_count; k++) {
    const char *l = fl_ring_at(k);
    if (strstr(l, needle))
      cb(ctx, l);
  }
  pthread_mutex_unlock(&fl_ring_lock);
}
