/* provenance.h — the line fleet writes at the top of each delivered brief.
 *
 * A brief typed into an agent opens with one line that fleet wrote, not
 * the sender, so the agent can tell a colleague's message from text an
 * attacker planted in a file:
 *
 *   (fleet) from NAME@HOST (role ROLE), verified: VERIFIED, msgId ID;
 *   answer with fleet_reply to NAME@HOST, inReplyTo ID
 *
 * (one line; wrapped here). VERIFIED says what fleet checked:
 *   local                      the sender is on this host;
 *   signed by pinned host HOST its envelope's signature checked against
 *                              HOST's pinned key (the signed form);
 *   sealed by pinned host HOST its body opened under the pair key only HOST
 *                              and this host hold (the pair-sealed form,
 *                              no signature);
 *   pinned host HOST           one of the two, not recorded (a brief taken
 *                              by a fleetd that did not keep which).
 * Every field is cut to FL_PROVENANCE_FIELD bytes and keeps
 * only [A-Za-z0-9._:-] (anything else becomes '_'), so nothing a sender
 * controls can end the line or look like something else; the line starts
 * with FL_INJECT_TEXT_PREFIX, which no agent reads as a command. The whole
 * line fits in FL_PROVENANCE_MAX bytes. Pure but for the roster look-up of
 * the sender's role. */
#ifndef FL_PROVENANCE_H
#define FL_PROVENANCE_H

#include <stddef.h>

#include "gateway/gw.h"
#include "gateway/store/store_forward.h"

/* A field of the line (name, host, role, msgId) is cut to this many
 * bytes: names and hosts are at most 64 by their own rules. */
#define FL_PROVENANCE_FIELD 64
/* The line with its longest fields: seven fields and the fixed words. */
#define FL_PROVENANCE_MAX 640

/* Writes the provenance line of brief f (no newline) into buf of n bytes
 * (n >= FL_PROVENANCE_MAX: it is never cut). */
void fl_provenance_line(fl_gw *gw, const fl_fwd *f, char *buf, size_t n);

/* The line itself, from its fields (any of them NULL or "" shows as "?"):
 * remote 0 = the sender is on this host (host is this host), else host is
 * the sender's and auth (enum fl_msg_auth) how it was proven. Pure. */
void fl_provenance_format(const char *name, const char *host, const char *role, int remote,
                          int auth, const char *msg_id, char *buf, size_t n);

#endif
