/* log.h — one line per event on stderr.
 *
 * Format: "2026-01-02T03:04:05.678Z LEVEL [trace=ID] message". The trace id
 * is printed whenever a flow has one, so one grep follows a message across
 * every hop. Lines never carry message bodies, and a control byte in what
 * is logged (newline, escape) is written as '?', so a line is always one
 * event. Safe from any thread. */
#ifndef FL_LOG_H
#define FL_LOG_H

#include <stddef.h>

/* FL_LOG_EVENT is a per-message event (published, held, handed, a reply
 * resolving a send): a traced line that is always kept for `fleetctl trace`
 * but written to stderr only at debug (as a DEBUG line), so the default
 * level costs no write per message. */
enum fl_log_level { FL_LOG_DEBUG, FL_LOG_EVENT, FL_LOG_INFO, FL_LOG_WARN, FL_LOG_ERROR };

void fl_log_set_level(enum fl_log_level lvl);
/* trace may be NULL or "". */
void fl_log(enum fl_log_level lvl, const char *trace, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Calls cb for each line still remembered that carries trace (the newest
 * FL_LOG_TRACE_LINES traced lines are kept in memory), oldest first. */
void fl_log_find_trace(const char *trace, void (*cb)(void *ctx, const char *line), void *ctx);

/* The trace id of the newest remembered traced line whose text (after its
 * "[trace=ID]" tag) contains text, e.g. a msgId, into trace_out (n bytes).
 * Returns 0, FL_ENOTFOUND when no remembered line mentions text, FL_EINVAL
 * for an empty text, or FL_ETOOBIG when the id does not fit in n. */
int fl_log_trace_of(const char *text, char *trace_out, size_t n);

#define fl_debug(trace, ...) fl_log(FL_LOG_DEBUG, trace, __VA_ARGS__)
#define fl_event(trace, ...) fl_log(FL_LOG_EVENT, trace, __VA_ARGS__)
#define fl_info(trace, ...) fl_log(FL_LOG_INFO, trace, __VA_ARGS__)
#define fl_warn(trace, ...) fl_log(FL_LOG_WARN, trace, __VA_ARGS__)
#define fl_error(trace, ...) fl_log(FL_LOG_ERROR, trace, __VA_ARGS__)

#endif
