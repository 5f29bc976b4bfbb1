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
  fl_json_out out = {.json = structured ? json_dumps(structured, JSON_COMPACT) : NULL};
  out.len = out.json ? strlen(out.json) : 0;
  char *line = out.json ? fl_tool_result_line_take(id, &out, NULL) : NULL;
  json_decref(structured);
  return line;
}
