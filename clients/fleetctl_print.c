/* fleetctl_print.c — how fleetctl's results read: the generic output
 * (JSON, key/value lines) and the human form of each command's result.
 * Each printer returns an exit status; --json bypasses them all
 * (fleetctl.c's ctl_run prints the raw result instead). */
#include "clients/fleetctl_internal.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clients/fleetctl_report.h"
#include "common/alloc.h"
#include "common/error.h"
#include "common/ids.h"
#include "common/limits.h"
#include "common/names.h"

/* ---- output ----------------------------------------------------------- */

int print_json(json_t *v) {
  char *s = json_dumps(v, JSON_INDENT(2) | JSON_ENCODE_ANY);
  if (!s)
    return fl_ctl_fail("out of memory");
  puts(s);
  fl_free(s);
  return FL_EXIT_OK;
}

/* A scalar as text into buf; objects and arrays as compact JSON. Returns
 * buf, or a new string in *heap (caller frees) when it does not fit. */
static const char *scalar_text(json_t *v, char *buf, size_t n, char **heap) {
  *heap = NULL;
  switch (json_typeof(v)) {
  case JSON_STRING:
    return json_string_value(v);
  case JSON_INTEGER:
    snprintf(buf, n, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    return buf;
  case JSON_REAL:
    snprintf(buf, n, "%g", json_real_value(v));
    return buf;
  case JSON_TRUE:
    return "true";
  case JSON_FALSE:
    return "false";
  case JSON_NULL:
    return "-";
  default:
    *heap = json_dumps(v, JSON_COMPACT);
    return *heap ? *heap : "?";
  }
}

/* "key: value" lines with the values aligned; an object value becomes an
 * indented block of its own. */
void print_kv(json_t *obj, int indent) {
  size_t w = 0;
  const char *key;
  json_t *v;
  json_object_foreach(obj, key, v) {
    if (strlen(key) > w)
      w = strlen(key);
  }
  json_object_foreach(obj, key, v) {
    if (json_is_object(v) && json_object_size(v) > 0) {
      printf("%*s%s:\n", indent, "", key);
      print_kv(v, indent + 2);
      continue;
    }
    char num[64], *heap;
    const char *text = scalar_text(v, num, sizeof num, &heap);
    printf("%*s%s:%*s %s\n", indent, "", key, (int)(w - strlen(key)), "", text);
    fl_free(heap);
  }
}

/* The first string among obj[keys...]; NULL when none is. */
const char *str_of(json_t *obj, const char *k1, const char *k2) {
  const char *s = json_string_value(json_object_get(obj, k1));
  if (!s && k2)
    s = json_string_value(json_object_get(obj, k2));
  return s;
}

/* The string at key k of obj, or dflt when it is absent or not a string
 * (str_of's second argument is another key, never a default). */
const char *str_or(json_t *obj, const char *k, const char *dflt) {
  const char *v = json_string_value(json_object_get(obj, k));
  return v ? v : dflt;
}

/* A party named in a result: a plain string, or an object with name/gid. */
void party(json_t *v, const char **name, const char **gid) {
  if (json_is_string(v)) {
    *name = json_string_value(v);
  } else if (json_is_object(v)) {
    *name = str_of(v, "name", NULL);
    *gid = str_of(v, "gid", NULL);
  }
}

/* ---- how results read ------------------------------------------------------ */

int print_kv_result(ctl *c, json_t *res) {
  if (json_is_object(res))
    print_kv(res, 0);
  return FL_EXIT_OK;
}

int print_peers(ctl *c, json_t *res) {
  json_t *peers = json_object_get(res, "peers"), *p;
  size_t i;
  if (json_array_size(peers) == 0)
    printf("no pinned peers\n");
  else
    json_array_foreach(peers, i, p) {
      printf("%-20s %s  %s  pinned %s\n", str_or(p, "host", "-"), str_or(p, "publicKey", "-"),
             str_or(p, "url", "-"), str_or(p, "pinnedAt", "-"));
      json_t *sync = json_object_get(p, "sync");
      if (json_is_object(sync))
        printf("%-20s sync: %s, last %s, merged %lld, refused %lld%s%s\n", "",
               json_is_true(json_object_get(sync, "ok")) ? "ok" : "failing",
               str_or(sync, "lastSync", "never"),
               (long long)json_integer_value(json_object_get(sync, "merged")),
               (long long)json_integer_value(json_object_get(sync, "refused")),
               json_object_get(sync, "error") ? ": " : "", str_or(sync, "error", ""));
    }
  return FL_EXIT_OK;
}

int print_rooms(ctl *c, json_t *res) {
  if (json_is_true(json_object_get(res, "degraded")))
    return fl_ctl_fail("rooms are not configured on this fleetd (set \"rooms\" in fleetd.json)");
  json_t *rooms = json_object_get(res, "rooms"), *r;
  size_t i;
  printf("serving %s, syncing every %llds\n", str_or(res, "listen", "nothing"),
         (long long)json_integer_value(json_object_get(res, "syncIntervalS")));
  if (json_array_size(rooms) == 0)
    printf("no registered rooms\n");
  json_array_foreach(rooms, i, r) {
    printf("%-24s %s  %lld messages, %lld dropped by the cap\n", str_or(r, "label", "-"),
           str_or(r, "roomId", "-"), (long long)json_integer_value(json_object_get(r, "messages")),
           (long long)json_integer_value(json_object_get(r, "dropped")));
    json_t *cur, *cursors = json_object_get(r, "cursors");
    size_t k;
    json_array_foreach(cursors, k, cur)
        printf("%-24s   peer %s at cursor %lld\n", "", str_or(cur, "peer", "-"),
               (long long)json_integer_value(json_object_get(cur, "cursor")));
  }
  return FL_EXIT_OK;
}

int print_trace(ctl *c, json_t *res) {
  json_t *lines = json_object_get(res, "lines"), *l;
  size_t i;
  if (json_array_size(lines) == 0)
    return fl_ctl_fail("nothing in fleetd's recent log for %s (a trace id or a msgId)", c->args[0]);
  const char *trace = str_of(res, "traceId", NULL);
  if (trace && strcmp(trace, c->args[0]) != 0)
    printf("trace %s (the flow of %s)\n", trace, c->args[0]);
  json_array_foreach(lines, i, l) printf("%s\n", json_string_value(l));
  return FL_EXIT_OK;
}

enum { COL_NAME, COL_ROLE, COL_HOST, COL_STATUS, COL_HELD, COL_GROUPS, COL_GID, NCOLS };

/* fleet_list's entities as a table with aligned columns. */
int print_roster(ctl *c, json_t *sc) {
  static const char *const heads[NCOLS] = {"NAME", "ROLE",   "HOST", "STATUS",
                                           "HELD", "GROUPS", "GID"};
  json_t *rows = NULL;
  int st = FL_EXIT_OK;
  json_t *ents = json_object_get(sc, "entities");
  if (json_array_size(ents) == 0) {
    puts("no entities");
    goto done;
  }
  /* Every cell as a string first, so the widths can be computed. */
  rows = json_array();
  size_t w[NCOLS];
  for (int k = 0; k < NCOLS; k++)
    w[k] = strlen(heads[k]);
  size_t i;
  json_t *e;
  json_array_foreach(ents, i, e) {
    char held[32] = "-", groups[1024] = "";
    json_t *h = json_object_get(e, "held");
    if (json_is_integer(h))
      snprintf(held, sizeof held, "%" JSON_INTEGER_FORMAT, json_integer_value(h));
    size_t gi, gl = 0;
    json_t *g;
    json_array_foreach(json_object_get(e, "groups"), gi, g) {
      const char *gs = json_string_value(g);
      if (gs && gl < sizeof groups)
        gl += (size_t)snprintf(groups + gl, sizeof groups - gl, "%s%s", gl ? "," : "", gs);
    }
    /* What its hooks report, beside the status: "online (blocked)". */
    char status[128];
    const char *act = json_string_value(json_object_get(json_object_get(e, "activity"), "state"));
    const char *stv = str_of(e, "status", NULL);
    if (act)
      snprintf(status, sizeof status, "%s (%s)", stv ? stv : "-", act);
    else
      snprintf(status, sizeof status, "%s", stv ? stv : "");
    const char *cells[NCOLS] = {str_of(e, "name", NULL),
                                str_of(e, "role", NULL),
                                str_of(e, "host", NULL),
                                status,
                                held,
                                groups,
                                str_of(e, "gid", NULL)};
    json_t *row = json_array();
    for (int k = 0; k < NCOLS; k++) {
      const char *cell = cells[k] && *cells[k] ? cells[k] : "-";
      json_t *js = json_string(cell);
      json_array_append_new(row, js ? js : json_string("?"));
      if (strlen(cell) > w[k])
        w[k] = strlen(cell);
    }
    json_array_append_new(rows, row);
  }
  if (json_array_size(rows) != json_array_size(ents)) {
    st = fl_ctl_fail("out of memory");
    goto done;
  }
  for (int k = 0; k < NCOLS - 1; k++)
    printf("%-*s  ", (int)w[k], heads[k]);
  printf("%s\n", heads[NCOLS - 1]);
  json_t *row;
  json_array_foreach(rows, i, row) {
    for (int k = 0; k < NCOLS; k++) {
      const char *cell = json_string_value(json_array_get(row, (size_t)k));
      if (k < NCOLS - 1)
        printf("%-*s  ", (int)w[k], cell ? cell : "?");
      else
        printf("%s\n", cell ? cell : "?");
    }
  }
done:
  json_decref(rows);
  return st;
}

int print_sent(ctl *c, json_t *sc) {
  const fl_ctl_opts *o = c->o;
  const char *name = NULL, *gid = NULL;
  party(json_object_get(sc, "to"), &name, &gid);
  if (!name)
    name = str_of(sc, "toName", NULL);
  if (!gid)
    gid = str_of(sc, "toGid", "gid");
  const char *msg_id = str_of(sc, "msgId", NULL), *trace_id = str_of(sc, "traceId", NULL);
  printf("sent msgId=%s traceId=%s to %s", msg_id ? msg_id : "?", trace_id ? trace_id : "?",
         name ? name : c->args[0]);
  if (gid && (!name || strcmp(gid, name) != 0))
    printf(" (%s)", gid);
  putchar('\n');

  const char *status = str_of(sc, "status", NULL);
  if (status && strcmp(status, "replied") == 0) {
    json_t *reply = json_object_get(sc, "reply");
    const char *text =
        json_is_string(reply) ? json_string_value(reply) : str_of(reply, "content", NULL);
    if (text)
      printf("%s%s", text, *text && text[strlen(text) - 1] == '\n' ? "" : "\n");
  } else if (status && strcmp(status, "injected") == 0) {
    printf("typed into the agent's terminal\n");
  } else if (status && strcmp(status, "failed") == 0) {
    const char *why = str_of(sc, "reason", NULL);
    fprintf(stderr, "fleetctl: not typed in: %s\n", why ? why : "no reason given");
    return FL_EXIT_FAIL;
  } else if (status && strcmp(status, "pending") == 0) {
    if (o->wait_s >= 0)
      printf("no reply within %lds; it will be held for `fleetctl poll`\n", o->wait_s);
    else
      printf("no reply yet; it will be held for `fleetctl poll`\n");
  }
  return FL_EXIT_OK;
}

int print_messages(ctl *c, json_t *sc) {
  json_t *msgs = json_object_get(sc, "messages");
  if (json_array_size(msgs) == 0)
    puts("no messages");
  size_t i;
  json_t *m;
  json_array_foreach(msgs, i, m) {
    const char *name = str_of(m, "fromName", NULL), *gid = NULL;
    if (!name)
      party(json_object_get(m, "from"), &name, &gid);
    char tsbuf[64], *heap = NULL;
    json_t *ts = json_object_get(m, "ts");
    const char *tstext = ts ? scalar_text(ts, tsbuf, sizeof tsbuf, &heap) : "-";
    const char *kind = str_of(m, "kind", NULL), *msg_id = str_of(m, "msgId", NULL);
    const char *content = str_of(m, "content", NULL);
    printf("[%s] from %s (%s, %s): %s\n", tstext, name ? name : (gid ? gid : "?"),
           kind ? kind : "?", msg_id ? msg_id : "?", content ? content : "");
    fl_free(heap);
  }
  return FL_EXIT_OK;
}

/* s with every control byte as '?': what a worker's agent wrote (its tool's
 * name, its input) never moves the operator's terminal. */
static void put_plain(const char *s) {
  for (; *s; s++)
    putchar((unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s);
}

/* The waiting permission requests, oldest first: one line each, then the
 * tool's input (its bounded summary) indented below. */
int print_approvals(ctl *c, json_t *res) {
  (void)c;
  json_t *reqs = json_object_get(res, "requests"), *r;
  size_t i;
  if (json_array_size(reqs) == 0) {
    printf("no permission request waits for a decision on %s\n", str_or(res, "host", "this host"));
    return FL_EXIT_OK;
  }
  json_array_foreach(reqs, i, r) {
    json_t *by = json_object_get(r, "spawner");
    const char *by_name = str_of(by, "name", NULL);
    printf("%s  %s (%s)  ", str_or(r, "requestId", "?"), str_or(r, "name", "?"),
           str_or(r, "gid", "?"));
    put_plain(str_or(r, "tool", "?"));
    printf("  until %s  asked of %s@%s\n  input: ", str_or(r, "expiresAt", "?"),
           by_name && *by_name ? by_name : str_or(by, "gid", "?"), str_or(by, "host", "?"));
    put_plain(str_or(r, "input", ""));
    putchar('\n');
  }
  printf("answer with: fleetctl approve AGENT REQUESTID allow|deny [REASON]\n");
  return FL_EXIT_OK;
}
