/* fleet_mcp_calls.c — the requests relayed to fleetd and not answered yet
 * (see fleet_mcp_calls.h).
 *
 * An array in arrival order: a session has a handful of calls in flight (a
 * few parked waits, the odd quick call), so a linear search is the simple
 * and fast choice, and the cap bounds the worst case. Each call is kept as
 * its id's compact JSON text, the same bytes fleetd writes back (both sides
 * dump the id with jansson, compact), so an answer is matched by comparing
 * bytes, without parsing the answer. */
#include "clients/fleet_mcp_calls.h"

#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/json_read.h"

/* The JSON-RPC code for "the server is unavailable": -32000 is the first of
 * the implementation-defined server errors. */
#define FL_CALLS_UNAVAILABLE -32000

typedef struct fl_call {
  char *tok; /* the id's compact JSON text */
  enum fl_call_kind kind;
} fl_call;

struct fl_calls {
  fl_call *v;
  size_t n, alloc, cap;
};

fl_calls *fl_calls_new(size_t cap) {
  fl_calls *c = fl_calloc(1, sizeof *c);
  if (c)
    c->cap = cap;
  return c;
}

void fl_calls_free(fl_calls **cp) {
  if (!cp || !*cp)
    return;
  fl_calls *c = *cp;
  for (size_t i = 0; i < c->n; i++)
    fl_free(c->v[i].tok);
  fl_free(c->v);
  fl_free(c);
  *cp = NULL;
}

size_t fl_calls_count(const fl_calls *c) { return c ? c->n : 0; }

/* The id's compact JSON text (new), or NULL for an id that is no string or
 * integer, or when out of memory. */
static char *fl_calls_tok(json_t *id) {
  if (!json_is_string(id) && !json_is_integer(id))
    return NULL;
  /* jansson allocates through fl_malloc (fl_alloc_init): fl_free frees it. */
  return json_dumps(id, JSON_COMPACT | JSON_ENCODE_ANY);
}

static void fl_calls_remove(fl_calls *c, size_t i) {
  fl_free(c->v[i].tok);
  memmove(&c->v[i], &c->v[i + 1], (c->n - i - 1) * sizeof c->v[0]);
  c->n--;
}

/* Keeps tok (taken: freed here on failure) as the newest call. */
static int fl_calls_keep(fl_calls *c, char *tok, enum fl_call_kind kind) {
  if (c->n >= c->cap) {
    fl_free(tok);
    return FL_EFULL;
  }
  if (c->n == c->alloc) {
    size_t want = c->alloc ? c->alloc * 2 : 8;
    if (want > c->cap)
      want = c->cap;
    fl_call *v = fl_realloc(c->v, want * sizeof *v);
    if (!v) {
      fl_free(tok);
      return FL_ENOMEM;
    }
    c->v = v;
    c->alloc = want;
  }
  c->v[c->n++] = (fl_call){.tok = tok, .kind = kind};
  return 0;
}

int fl_calls_add(fl_calls *c, json_t *id, enum fl_call_kind kind) {
  if (!c)
    return FL_EINVAL;
  if (!json_is_string(id) && !json_is_integer(id))
    return FL_EINVAL;
  char *tok = fl_calls_tok(id);
  if (!tok)
    return FL_ENOMEM;
  return fl_calls_keep(c, tok, kind);
}

int fl_calls_add_tok(fl_calls *c, const char *tok, size_t toklen, enum fl_call_kind kind) {
  if (!c || !tok || toklen == 0)
    return FL_EINVAL;
  char *copy = fl_malloc(toklen + 1);
  if (!copy)
    return FL_ENOMEM;
  memcpy(copy, tok, toklen);
  copy[toklen] = '\0';
  return fl_calls_keep(c, copy, kind);
}

void fl_calls_forget(fl_calls *c, json_t *id) {
  if (!c)
    return;
  char *tok = fl_calls_tok(id);
  if (!tok)
    return;
  size_t n = strlen(tok);
  enum fl_call_kind kind;
  (void)fl_calls_take(c, tok, n, &kind);
  fl_free(tok);
}

int fl_calls_take(fl_calls *c, const char *tok, size_t toklen, enum fl_call_kind *kind) {
  if (!c || !tok)
    return 0;
  for (size_t i = 0; i < c->n; i++) {
    if (strlen(c->v[i].tok) == toklen && memcmp(c->v[i].tok, tok, toklen) == 0) {
      *kind = c->v[i].kind;
      fl_calls_remove(c, i);
      return 1;
    }
  }
  return 0;
}

char *fl_calls_pop_lost(fl_calls *c, const char *why, int *left) {
  *left = 0;
  if (!c || c->n == 0)
    return NULL;
  json_t *id = fl_json_loadb(c->v[0].tok, strlen(c->v[0].tok), JSON_DECODE_ANY, NULL);
  enum fl_call_kind kind = c->v[0].kind;
  fl_calls_remove(c, 0);
  *left = c->n > 0;
  char *line = id ? fl_calls_lost_line(id, kind, why) : NULL;
  json_decref(id);
  return line;
}

/* Serialises v (stolen) as one line ending in '\n' (fl_free), or NULL. */
static char *fl_calls_line(json_t *v) {
  char *j = v ? json_dumps(v, JSON_COMPACT) : NULL;
  json_decref(v);
  if (!j)
    return NULL;
  size_t n = strlen(j);
  char *line = fl_realloc(j, n + 2);
  if (!line) {
    fl_free(j);
    return NULL;
  }
  line[n] = '\n';
  line[n + 1] = '\0';
  return line;
}

char *fl_calls_lost_line(json_t *id, enum fl_call_kind kind, const char *why) {
  if (!id || !why)
    return NULL;
  if (kind == FL_CALL_TOOL)
    return fl_calls_line(json_pack("{s:s, s:O, s:{s:[{s:s, s:s}], s:b}}", "jsonrpc", "2.0", "id",
                                   id, "result", "content", "type", "text", "text", why, "isError",
                                   1));
  return fl_calls_line(json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", id, "error",
                                 "code", FL_CALLS_UNAVAILABLE, "message", why));
}

int fl_calls_line_id(const char *line, size_t len, const char **tok, size_t *toklen) {
  static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":";
  size_t hn = sizeof head - 1;
  if (len <= hn || memcmp(line, head, hn) != 0)
    return 0;
  const char *p = line + hn, *end = line + len, *q = p;
  if (*q == '"') {
    /* A string: up to the closing quote, past escaped characters. */
    for (q++; q < end && *q != '"'; q++)
      if (*q == '\\')
        q++;
    if (q >= end)
      return 0;
    q++;
  } else {
    while (q < end && *q != ',' && *q != '}')
      q++;
  }
  if (q == p || q >= end)
    return 0;
  *tok = p;
  *toklen = (size_t)(q - p);
  return 1;
}
