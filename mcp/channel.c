/* channel.c — Claude Code channel pushes for one session (see channel.h).
 *
 * The shape follows Claude Code's channels reference: the method is
 * notifications/claude/channel, params.content is the text Claude reads and
 * params.meta a flat map of string attributes (identifier keys) shown with
 * it. The session's server declares capabilities.experimental
 * ["claude/channel"] = {} in its initialize result (mcp.c). */
#include "mcp/channel.h"

#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/ids.h"
#include "common/limits.h"
#include "common/time.h"
#include "mcp/jsonrpc.h"

struct fl_channel {
  char pushed[FL_CHANNEL_REMEMBERED][FL_ID_LEN]; /* a ring of msgIds */
  size_t next;
  long long second_ms; /* monotonic start of the current second */
  unsigned in_second;  /* pushes in it */
};

int fl_channel_wanted(json_t *init_params) {
  json_t *ident = json_object_get(json_object_get(init_params, "_meta"), "fleet/identity");
  json_t *exp = json_object_get(json_object_get(init_params, "capabilities"), "experimental");
  return json_is_true(json_object_get(ident, "channel")) &&
         json_object_get(exp, FL_CHANNEL_CAPABILITY) != NULL;
}

fl_channel *fl_channel_new(void) { return fl_calloc(1, sizeof(fl_channel)); }

void fl_channel_free(fl_channel **ch) {
  if (!ch || !*ch)
    return;
  fl_free(*ch);
  *ch = NULL;
}

static int fl_channel_seen(const fl_channel *ch, const char *msg_id) {
  for (size_t i = 0; i < FL_CHANNEL_REMEMBERED; i++)
    if (ch->pushed[i][0] && strcmp(ch->pushed[i], msg_id) == 0)
      return 1;
  return 0;
}

/* 1 when one more push fits in the current second (and counts it). */
static int fl_channel_budget(fl_channel *ch) {
  long long now = fl_mono_ms();
  if (now - ch->second_ms >= 1000) {
    ch->second_ms = now;
    ch->in_second = 0;
  }
  if (ch->in_second >= FL_CHANNEL_PUSHES_PER_S)
    return 0;
  ch->in_second++;
  return 1;
}

char *fl_channel_line(fl_channel *ch, const fl_msg_view *m) {
  if (!ch || !m || !m->msg_id || !*m->msg_id || fl_channel_seen(ch, m->msg_id) ||
      !fl_channel_budget(ch))
    return NULL;
  char ts[FL_TS_LEN];
  fl_rfc3339(m->ts_ms, ts);
  json_t *meta =
      json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "msgId", m->msg_id, "from", m->from_name,
                "fromGid", m->from_gid, "kind", m->kind, "traceId", m->trace_id, "ts", ts);
  if (meta && m->in_reply_to && *m->in_reply_to)
    json_object_set_new(meta, "inReplyTo", json_string(m->in_reply_to));
  json_t *params = json_pack("{s:s%, s:o}", "content", m->content, m->content_len, "meta", meta);
  if (!params)
    return NULL;
  char *line = fl_rpc_notification("notifications/claude/channel", params);
  if (line) {
    snprintf(ch->pushed[ch->next], FL_ID_LEN, "%s", m->msg_id);
    ch->next = (ch->next + 1) % FL_CHANNEL_REMEMBERED;
  }
  return line;
}
