/* tool_result.c — one tool result line, its structured JSON dumped once (see
 * tool_result.h).
 *
 * The text copy is the structured JSON escaped as a JSON string, the way
 * jansson escapes one (common/json_writer.h): jansson's dump, and the
 * writer's output, are valid UTF-8, so the escaped text is too. */
#include "mcp/tool_result.h"

#include <string.h>

#include "common/alloc.h"
#include "common/json_writer.h"
#include "common/limits.h"

static char *fl_put(char *o, const char *s, size_t n) {
  memcpy(o, s, n);
  return o + n;
}

char *fl_tool_result_line_take(json_t *id, fl_json_out *out, size_t *len) {
  static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":";
  static const char mid[] = ",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"";
  static const char mid2[] = "\"}],\"structuredContent\":";
  static const char tail[] = "}}\n";
  const char *sj = out->json;
  size_t sn = out->len;
  char *line = NULL, *ij = id ? json_dumps(id, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
  if (!sj || (id && !ij))
    goto done;
  const char *idt = ij ? ij : "null";
  size_t in = strlen(idt), en = out->text ? out->text_len : fl_json_escaped_len(sj, sn);
  size_t total = sizeof head - 1 + in + sizeof mid - 1 + en + sizeof mid2 - 1 + sn + sizeof tail;
  /* A new block for the line: big ones are spare blocks (alloc.h), so a
   * megabyte result faults in no fresh pages. */
  line = fl_big_malloc(total, NULL);
  if (!line)
    goto done;
  char *o = line;
  o = fl_put(o, head, sizeof head - 1);
  o = fl_put(o, idt, in);
  o = fl_put(o, mid, sizeof mid - 1);
  o = out->text ? fl_put(o, out->text, en) : fl_json_escape(o, sj, sn);
  o = fl_put(o, mid2, sizeof mid2 - 1);
  o = fl_put(o, sj, sn);
  fl_put(o, tail, sizeof tail); /* with its NUL */
  if (len)
    *len = total - 1;

done:
  fl_json_out_free(out);
  fl_free(ij);
  return line;
}

char *fl_tool_result_line(json_t *id, json_t *structured) {
  /* Dumped through a writer rather than json_dumps, which grows a buffer
   * of its own from 16 bytes and then copies the whole dump once more: a
   * poll result of a hundred 1 KiB messages is 130 KB, and every block of
   * 128 KiB or more was a fresh mapping faulted in page by page. The
   * writer's big blocks are spares (common/alloc.h). */
  fl_json_out out = {0};
  if (structured) {
    fl_jw w;
    fl_jw_init(&w, FL_MAX_RESULT_JSON);
    fl_jw_json(&w, structured);
    if (fl_jw_take(&w, &out.json, &out.len) != 0)
      fl_jw_free(&w);
  }
  char *line = out.json ? fl_tool_result_line_take(id, &out, NULL) : NULL;
  json_decref(structured);
  return line;
}
