/* schema_check.h — checks a JSON value against the JSON Schema subset that
 * schema/tools.json uses.
 *
 * Pure code, no I/O, no allocation that outlives the call. tools.c runs it on
 * every tools/call before the gateway sees the arguments. */
#ifndef FL_MCP_SCHEMA_CHECK_H
#define FL_MCP_SCHEMA_CHECK_H

#include <jansson.h>
#include <stddef.h>

/* Validates v (borrowed) against schema (borrowed; a non-object schema
 * accepts anything). Understands type, properties, required,
 * additionalProperties, minLength, maxLength, minimum, maximum, enum and
 * items. path names v in messages ("" = the arguments object). Returns 0, or
 * FL_EINVAL with err naming the argument and what it must be. */
int fl_schema_check(json_t *v, json_t *schema, const char *path, char *err, size_t errlen);

#endif
