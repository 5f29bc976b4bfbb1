/* hints.c — per-interface words for the gateway's refusals (see hints.h).
 *
 * One table, one row per interface, so a hint added for agents is added for
 * fleetctl in the same place. A fix is added only when the gateway's text
 * names neither interface's words for it, so a gateway that learns to say
 * it never makes the message say it twice. */
#include "mcp/hints.h"

#include <string.h>

#include "common/error.h"

typedef struct fl_hint_words {
  const char *roster;     /* what lists who is there */
  const char *other_name; /* how to pick another name (after "; ") */
  const char *give_name;  /* how to give a name at all */
  const char *read_held;  /* how to read what is held (a nudge's hint) */
} fl_hint_words;

static const fl_hint_words fl_words[] = {
    [FL_IFACE_AGENT] = {"fleet_list", "set another FLEET_NAME",
                        "set FLEET_NAME in the MCP server's environment",
                        "call fleet_poll to read them"},
    [FL_IFACE_FLEETCTL] = {"fleetctl roster", "use another --as NAME", "give --as NAME",
                           "run fleetctl poll to read them"},
};

static const fl_hint_words *fl_words_of(fl_iface iface) {
  return &fl_words[iface == FL_IFACE_FLEETCTL ? FL_IFACE_FLEETCTL : FL_IFACE_AGENT];
}

fl_iface fl_hints_iface(json_t *init_params) {
  const char *name =
      json_string_value(json_object_get(json_object_get(init_params, "clientInfo"), "name"));
  return name && strcmp(name, FL_MCP_CLIENT_FLEETCTL) == 0 ? FL_IFACE_FLEETCTL : FL_IFACE_AGENT;
}

void fl_hints_refusal(fl_iface iface, int rc, const char *err, char *out, size_t n) {
  const fl_hint_words *w = fl_words_of(iface);
  /* Either interface's words count as named: the gateway said it already. */
  if (rc == FL_ENAMETAKEN && !strstr(err, "FLEET_NAME") && !strstr(err, "--as"))
    fl_errf(out, n, "%s; %s", err, w->other_name);
  else if (rc == FL_ENOTFOUND && !strstr(err, "fleet_list") && !strstr(err, "fleetctl roster"))
    /* "... list the roster to see who is there (fleet_list)"; a text that
     * does not say that gets the whole clause. */
    fl_errf(out, n, "%s (%s%s)", err, w->roster,
            strstr(err, "who is there") ? "" : " shows who is there");
  else
    fl_errf(out, n, "%s", err);
}

const char *fl_hints_give_name(fl_iface iface) { return fl_words_of(iface)->give_name; }

const char *fl_hints_read_held(fl_iface iface) { return fl_words_of(iface)->read_held; }
