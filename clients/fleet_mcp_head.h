/* fleet_mcp_head.h — what fleet-mcp must know of a client's line (its
 * method and its id), read without building a JSON tree.
 *
 * Every request an MCP client sends passes through fleet-mcp, which needs
 * only two of its members: "method", to know which calls are special
 * (initialize gets the identity), and "id", to answer the call itself if
 * fleetd's connection is lost under it. A tool call carries its arguments
 * too, often kilobytes of message text; parsing all of it into a tree to
 * read two members cost more than the rest of the relay. This scanner walks
 * the line once, checks that it is JSON that jansson would accept, and
 * points at the two members in place.
 *
 * It is sound, not complete: when it says yes, the line is one JSON object
 * that jansson parses, with the method and id it reports. Anything it is
 * not sure of (an escape in the method or the id, a number that might not
 * fit, a \u0000, nesting deeper than FL_MCP_HEAD_MAX_DEPTH) is a no, and
 * the caller reads the line with jansson as before. Pure, no allocation. */
#ifndef FL_FLEET_MCP_HEAD_H
#define FL_FLEET_MCP_HEAD_H

#include <stddef.h>

/* Deeper nesting is left to jansson (whose own limit is far higher). */
#define FL_MCP_HEAD_MAX_DEPTH 64

typedef struct fl_mcp_head {
  /* The top-level "method" string's bytes, between its quotes; NULL when
   * there is none. */
  const char *method;
  size_t method_len;
  /* The top-level "id": its JSON text (an integer, or a string with its
   * quotes), which is the same bytes jansson writes for it compact; NULL
   * when there is none. */
  const char *id;
  size_t id_len;
} fl_mcp_head;

/* Scans line[0..len) (without its '\n'). Returns 1 and fills *h when the
 * line is a JSON object that jansson accepts whose method (if present) is a
 * string with no escapes and whose id (if present) is an integer of at most
 * 18 digits or a string with no escapes; where a member appears twice, the
 * last one counts, as in jansson. Returns 0 otherwise: read it with jansson. */
int fl_mcp_head_scan(const char *line, size_t len, fl_mcp_head *h);

#endif
