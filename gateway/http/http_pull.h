/* http_pull.h — HTTP GETs on the loop: libcurl's multi interface driven by
 * libuv (curl_multi_socket_action with a uv_poll_t per socket and one
 * uv_timer_t), so a slow peer never stalls anything.
 *
 * Each GET has a total timeout and a cap on the response body; only http://
 * and https:// are followed, never a redirect. Its callback runs on the loop
 * exactly once (done, failed, or cancelled by fl_http_pull_stop). */
#ifndef FL_HTTP_PULL_H
#define FL_HTTP_PULL_H

#include <stddef.h>
#include <uv.h>

typedef struct fl_http_pull fl_http_pull;

/* status: the HTTP status (0 when the request failed: err says why);
 * body (len bytes, NUL-terminated, borrowed for the call) the response. */
typedef void (*fl_http_pull_cb)(void *ctx, long status, const char *body, size_t len,
                                const char *err);

/* 0 and *out; or FL_ECONFIG (libcurl cannot be loaded: err says which and
 * what installs it), FL_ENOMEM. Loads and initialises libcurl (counted,
 * thread-safe) on the first call. */
int fl_http_pull_new(uv_loop_t *loop, fl_http_pull **out, char *err, size_t errlen);
/* Starts a GET of url. 0, or FL_EINVAL (not http(s)://), FL_ENOMEM; on
 * failure cb never runs. */
int fl_http_pull_get(fl_http_pull *p, const char *url, size_t max_body, unsigned timeout_ms,
                     fl_http_pull_cb cb, void *ctx);
/* GETs in flight. */
size_t fl_http_pull_active(const fl_http_pull *p);
/* Cancels every GET (each callback runs with "cancelled") and closes the
 * handles; run the loop once more, then fl_http_pull_free. */
void fl_http_pull_stop(fl_http_pull *p);
void fl_http_pull_free(fl_http_pull **p);

#endif
