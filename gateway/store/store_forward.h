/* store_forward.h — the durable record of briefs on the forward path.
 *
 * A brief (a SEND for an entity whose messages are typed into its terminal)
 * is recorded here, not in the holds, before anything acknowledges it, and
 * its row then walks one way: queued -> typing -> injected | failed. The
 * mark "typing" is committed just before the first key goes in, so after a
 * crash a brief whose typing started but was not confirmed is known, and is
 * reported failed instead of typed again. Finished rows stay (their content
 * dropped) as the seen record that keeps a redelivered or replayed brief
 * from being typed twice; they are pruned by age. A row also remembers
 * whether its outcome still has to be reported to the sender.
 *
 * Same rules as store.h: synchronous, loop thread, a call that returned 0
 * has committed (or joined the open batch). */
#ifndef FL_STORE_FORWARD_H
#define FL_STORE_FORWARD_H

#include <stddef.h>
#include <stdint.h>

#include "common/limits.h"
#include "gateway/store/store.h"

enum fl_fwd_state { FL_FWD_QUEUED = 0, FL_FWD_TYPING = 1, FL_FWD_INJECTED = 2, FL_FWD_FAILED = 3 };

/* One brief. Strings NUL-terminated, optional ones "". */
typedef struct fl_fwd {
  int64_t seq; /* arrival order, set by fl_store_fwd_put */
  char msg_id[FL_ID_LEN];
  char to_gid[FL_ID_LEN];
  char from_gid[FL_ID_LEN];
  char from_name[FL_MAX_NAME + 1];
  char trace_id[FL_ID_LEN];
  char sender_host[64]; /* "" = the sender is on this host */
  int auth;             /* enum fl_msg_auth: how sender_host was proven */
  /* Where it is typed when the recipient's session is not there to say. */
  char pane[FL_MAX_PANE + 1];
  char socket[FL_MAX_PATH + 1];
  int64_t deadline_ms;        /* typing never starts at or after this */
  int64_t at_ms;              /* recorded at */
  int state;                  /* enum fl_fwd_state */
  int reported;               /* the outcome reached the sender (or nobody waits) */
  char reason[FL_MAX_ERRMSG]; /* why it failed, "" otherwise */
  char *content;              /* owned; "" once finished */
  size_t content_len;
} fl_fwd;

/* Records f (content copied) as queued and sets f->seq. FL_EDUP when
 * (msg_id, to_gid) was recorded before, whatever its state; FL_EINVAL for
 * an empty key; FL_ESTORE. */
int fl_store_fwd_put(fl_store *s, fl_fwd *f);
/* The oldest queued brief for to_gid into *out (content new: free it with
 * fl_fwd_clear). FL_ENOTFOUND when none is queued. */
int fl_store_fwd_next(fl_store *s, const char *to_gid, fl_fwd *out);
/* The brief (msg_id, to_gid) into *out, as fl_store_fwd_next. */
int fl_store_fwd_get(fl_store *s, const char *msg_id, const char *to_gid, fl_fwd *out);
/* Moves the brief to state (reason may be NULL); a finished state drops the
 * content. FL_ENOTFOUND when no such row. */
int fl_store_fwd_set(fl_store *s, const char *msg_id, const char *to_gid, int state,
                     const char *reason);
/* Marks the brief's outcome as reported. */
int fl_store_fwd_reported(fl_store *s, const char *msg_id, const char *to_gid);
/* After a restart: every brief left "typing" becomes failed with reason.
 * *n (may be NULL) says how many. */
int fl_store_fwd_fail_typing(fl_store *s, const char *reason, size_t *n);
/* Calls cb for each finished brief not reported yet (content ""), oldest
 * first, at most max. cb must not call into the store. */
int fl_store_fwd_each_unreported(fl_store *s, size_t max, void (*cb)(void *ctx, const fl_fwd *f),
                                 void *ctx);
/* Calls cb for each distinct to_gid with a queued brief. cb must not call
 * into the store. */
int fl_store_fwd_each_queued_gid(fl_store *s, void (*cb)(void *ctx, const char *to_gid), void *ctx);
/* Deletes finished briefs recorded before cutoff_ms. */
int fl_store_fwd_prune(fl_store *s, int64_t cutoff_ms, size_t *n);

/* Frees f->content. NULL-safe. */
void fl_fwd_clear(fl_fwd *f);

#endif
