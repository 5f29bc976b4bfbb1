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

char *fl_tool_result_line_take(json_t *id, char *sj, size_t sn, size_t *len) {
  static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":";
  static const char mid[] = ",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"";
  static const char mid2[] = "\"}],\"structuredContent\":";
  static const char tail[] = "}}\n";
  char *line = NULL, *ij = id ? json_dumps(id, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
  if (!sj || (id && !ij)) {
    fl_free(sj);
    goto done;
  }
  const char *idt = ij ? ij : "null";
  size_t in = strlen(idt), en = fl_json_escaped_len(sj, sn);
  size_t pre = sizeof head - 1 + in + sizeof mid - 1; /* where the text starts */
  size_t at = pre + en + sizeof mid2 - 1;             /* where structuredContent starts */
  size_t total = at + sn + sizeof tail;
  /* In sj's own buffer (for a megabyte result, one more mapping instead of
   * a second one and a copy): the JSON moves to its place at the end, then
   * its escaped copy is written before it, ending before it starts. */
  line = fl_realloc(sj, total);
  if (!line) {
    fl_free(sj);
    goto done;
  }
  memmove(line + at, line, sn);
  char *o = line;
  o = fl_put(o, head, sizeof head - 1);
  o = fl_put(o, idt, in);
  o = fl_put(o, mid, sizeof mid - 1);
  o = fl_json_escape(o, line + at, sn);
  fl_put(o, mid2, sizeof mid2 - 1);
  fl_put(line + at + sn, tail, sizeof tail); /* with its NUL */
  if (len)
    *len = total - 1;

done:
  fl_free(ij);
  return line;
}

char *fl_tool_result_line(json_t *id, json_t *structured) {
  char *sj = structured ? json_dumps(structured, JSON_COMPACT) : NULL;
  char *line = sj ? fl_tool_result_line_take(id, sj, strlen(sj), NULL) : NULL;
  json_decref(structured);
  return line;
}
