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

void fl_provenance_line(fl_gw *gw, const fl_fwd *f, char *buf, size_t n) {
  fl_entity *from = fl_entity_by_gid(gw, f->from_gid);
  const char *host = f->sender_host[0] ? f->sender_host : gw->cfg.host_id;
  char name[FL_PROVENANCE_FIELD + 1], at[FL_PROVENANCE_FIELD + 1], role[FL_PROVENANCE_FIELD + 1],
      id[FL_PROVENANCE_FIELD + 1];
  fl_prov_field(name, f->from_name[0] ? f->from_name : (from ? from->name : ""));
  fl_prov_field(at, host);
  fl_prov_field(role, from ? from->role : "");
  fl_prov_field(id, f->msg_id);
  snprintf(buf, n,
           "%sfrom %s@%s (role %s), verified: %s%s, msgId %s; answer with fleet_reply to %s@%s, "
           "inReplyTo %s",
           FL_INJECT_TEXT_PREFIX, name, at, role,
           f->sender_host[0] ? "signed by pinned host " : "local", f->sender_host[0] ? at : "", id,
           name, at, id);
}
