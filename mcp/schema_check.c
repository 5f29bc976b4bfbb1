/* schema_check.c — checks tool arguments against their embedded JSON Schema.
 *
 * Only the keywords schema/tools.json uses are understood: type (one or a
 * list), properties, required, additionalProperties (false), minLength,
 * maxLength, minimum, maximum, enum and items. The messages name the argument
 * and say what it must be, because an agent reads them to fix its call. */
#include "mcp/schema_check.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/error.h"

static int fl_type_is(json_t *v, const char *t) {
  if (strcmp(t, "string") == 0)
    return json_is_string(v);
  if (strcmp(t, "integer") == 0)
    return json_is_integer(v) ||
           (json_is_real(v) && floor(json_real_value(v)) == json_real_value(v));
  if (strcmp(t, "number") == 0)
    return json_is_number(v);
  if (strcmp(t, "boolean") == 0)
    return json_is_boolean(v);
  if (strcmp(t, "object") == 0)
    return json_is_object(v);
  if (strcmp(t, "array") == 0)
    return json_is_array(v);
  if (strcmp(t, "null") == 0)
    return json_is_null(v);
  return 1;
}

static const char *fl_name(const char *path) { return *path ? path : "arguments"; }

/* UTF-8 code points, as JSON Schema counts string length. */
static size_t fl_utf8_len(const char *s) {
  size_t n = 0;
  for (; *s; s++)
    n += ((unsigned char)*s & 0xc0) != 0x80;
  return n;
}

int fl_schema_check(json_t *v, json_t *schema, const char *path, char *err, size_t errlen) {
  if (!json_is_object(schema))
    return 0;
  json_t *type = json_object_get(schema, "type");
  if (json_is_string(type) && !fl_type_is(v, json_string_value(type))) {
    fl_errf(err, errlen, "'%s' must be %s %s", fl_name(path),
            strchr("aeiou", json_string_value(type)[0]) ? "an" : "a", json_string_value(type));
    return FL_EINVAL;
  }
  if (json_is_array(type)) {
    size_t i;
    json_t *t;
    int ok = 0;
    json_array_foreach(type, i, t) ok |= fl_type_is(v, json_string_value(t));
    if (!ok) {
      fl_errf(err, errlen, "'%s' has the wrong type", fl_name(path));
      return FL_EINVAL;
    }
  }
  json_t *en = json_object_get(schema, "enum");
  if (json_is_array(en)) {
    size_t i;
    json_t *e;
    int ok = 0;
    json_array_foreach(en, i, e) ok |= json_equal(e, v);
    if (!ok) {
      fl_errf(err, errlen, "'%s' is not one of the allowed values", fl_name(path));
      return FL_EINVAL;
    }
  }
  if (json_is_string(v)) {
    size_t len = fl_utf8_len(json_string_value(v));
    json_t *mn = json_object_get(schema, "minLength"), *mx = json_object_get(schema, "maxLength");
    if (mn && (json_int_t)len < json_integer_value(mn)) {
      fl_errf(err, errlen, "'%s' must not be empty", fl_name(path));
      return FL_EINVAL;
    }
    if (mx && (json_int_t)len > json_integer_value(mx)) {
      fl_errf(err, errlen, "'%s' is longer than %lld characters", fl_name(path),
              (long long)json_integer_value(mx));
      return FL_EINVAL;
    }
  }
  if (json_is_number(v)) {
    double d = json_number_value(v);
    json_t *mn = json_object_get(schema, "minimum"), *mx = json_object_get(schema, "maximum");
    if ((mn && d < json_number_value(mn)) || (mx && d > json_number_value(mx)) || isnan(d)) {
      fl_errf(err, errlen, "'%s' must be between %g and %g", fl_name(path),
              mn ? json_number_value(mn) : -INFINITY, mx ? json_number_value(mx) : INFINITY);
      return FL_EINVAL;
    }
  }
  if (json_is_object(v)) {
    json_t *props = json_object_get(schema, "properties");
    json_t *req = json_object_get(schema, "required");
    size_t i;
    json_t *r;
    json_array_foreach(req, i, r) {
      if (!json_object_get(v, json_string_value(r))) {
        fl_errf(err, errlen, "missing required argument '%s'", json_string_value(r));
        return FL_EINVAL;
      }
    }
    const char *key;
    json_t *val;
    json_object_foreach(v, key, val) {
      char sub[256];
      snprintf(sub, sizeof sub, "%s%s%s", path, *path ? "." : "", key);
      json_t *ps = json_object_get(props, key);
      if (!ps) {
        if (json_is_false(json_object_get(schema, "additionalProperties"))) {
          fl_errf(err, errlen, "unknown argument '%s'", sub);
          return FL_EINVAL;
        }
        continue;
      }
      int rc = fl_schema_check(val, ps, sub, err, errlen);
      if (rc)
        return rc;
    }
  }
  if (json_is_array(v)) {
    json_t *items = json_object_get(schema, "items");
    size_t i;
    json_t *it;
    json_array_foreach(v, i, it) {
      char sub[256];
      snprintf(sub, sizeof sub, "%s[%zu]", fl_name(path), i);
      int rc = fl_schema_check(it, items, sub, err, errlen);
      if (rc)
        return rc;
    }
  }
  return 0;
}
