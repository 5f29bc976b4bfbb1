/* tool_result.h — the response line of a successful tool call, with its
 * structured result serialized once.
 *
 * An MCP tool result carries the same JSON twice: as structuredContent (the
 * object) and as content[0].text (that object's text, as a JSON string).
 * Building it as one jansson tree and dumping that would serialize the object
 * twice (once to make the text, once more inside the line) and check and copy
 * the text as a string on the way. Here the object is dumped once; the line
 * embeds those bytes escaped (the text) and raw (structuredContent). The JSON
 * is the same as the tree's: text parses to an object equal to
 * structuredContent. A result too big to build as a tree at all (fleet_list)
 * comes already written (common/json_writer.h) and goes in the same way. */
#ifndef FL_MCP_TOOL_RESULT_H
#define FL_MCP_TOOL_RESULT_H

#include <jansson.h>

#include "common/json_writer.h"

/* {"jsonrpc":"2.0","id":ID,"result":{"content":[{"type":"text","text":"…"}],
 * "structuredContent":…}} and a '\n', NUL-terminated (free with fl_free, or
 * fl_big_free, which keeps a big one spare: common/alloc.h), or
 * NULL when memory runs out. id is borrowed (NULL is written as null);
 * structured is stolen. */
char *fl_tool_result_line(json_t *id, json_t *structured);
/* The same line for a structured result already written as JSON: out->json,
 * compact, as json_dumps or common/json_writer.h writes it, and out->text,
 * when its writer made it, the same escaped (else it is escaped here). The
 * contents of out are stolen: freed once the line is made, or when memory
 * runs out (then NULL). The line's length goes to *len when len is not
 * NULL. */
char *fl_tool_result_line_take(json_t *id, fl_json_out *out, size_t *len);

#endif
