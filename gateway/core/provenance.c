/* provenance.c — the line fleet writes at the top of each delivered brief
 * (provenance.h). */
#include "gateway/core/provenance.h"

#include <stdio.h>
#include <string.h>

#include "gateway/core/gw_internal.h"
#include "gateway/core/roster.h"
#include "gateway/inject/inject_text.h"

/* Copies src into dst (FL_PROVENANCE_FIELD + 1 bytes), keeping only
 * [A-Za-z0-9._:-]; "?" when src is empty. */
static void fl_prov_field(char dst[FL_PROVENANCE_FIELD + 1], const char *src) {
  size_t i = 0;
  for (; src && src[i] && i < FL_PROVENANCE_FIELD; i++) {
    unsigned char c = (unsigned char)src[i];
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
             c == '.' || c == '_' || c == ':' || c == '-';
    dst[i] = ok ? (char)c : '_';
  }
  dst[i] = '\0';
  if (!i)
    snprintf(dst, FL_PROVENANCE_FIELD + 1, "?");
}

/* The words of VERIFIED before the host (provenance.h). */
static const char *fl_prov_verified(int remote, int auth) {
  if (!remote)
    return "local";
  switch (auth) {
  case FL_AUTH_SIGNED:
    return "signed by pinned host ";
  case FL_AUTH_PAIR_SEALED:
    return "sealed by pinned host ";
  default:
    return "pinned host ";
  }
}

void fl_provenance_format(const char *name, const char *host, const char *role, int remote,
                          int auth, const char *msg_id, char *buf, size_t n) {
  char nm[FL_PROVENANCE_FIELD + 1], at[FL_PROVENANCE_FIELD + 1], rl[FL_PROVENANCE_FIELD + 1],
      id[FL_PROVENANCE_FIELD + 1];
  fl_prov_field(nm, name);
  fl_prov_field(at, host);
  fl_prov_field(rl, role);
  fl_prov_field(id, msg_id);
  snprintf(buf, n,
           "%sfrom %s@%s (role %s), verified: %s%s, msgId %s; answer with fleet_reply to %s@%s, "
           "inReplyTo %s",
           FL_INJECT_TEXT_PREFIX, nm, at, rl, fl_prov_verified(remote, auth), remote ? at : "", id,
           nm, at, id);
}

void fl_provenance_line(fl_gw *gw, const fl_fwd *f, char *buf, size_t n) {
  fl_entity *from = fl_entity_by_gid(gw, f->from_gid);
  int remote = f->sender_host[0] != '\0';
  fl_provenance_format(f->from_name[0] ? f->from_name : (from ? from->name : ""),
                       remote ? f->sender_host : gw->cfg.host_id, from ? from->role : "", remote,
                       f->auth, f->msg_id, buf, n);
}
