/* peers.h — the public keys this gateway trusts, pinned per host.
 *
 * A receiving gateway accepts an envelope only if its signature verifies
 * under the key pinned for the envelope's `host`. Pins are made by an
 * operator (`fleetctl peer add HOST PUBKEY [URL]`) and kept in
 * <state_dir>/peers.json, mode 0600:
 *
 *   {"version": 1, "peers": {"HOST": {"publicKey": "<base64, 32 bytes>",
 *                                     "url": "…" | null,
 *                                     "pinnedAt": "<RFC 3339 UTC>"}}}
 *
 * Once a host is pinned, a different key for it is refused (FL_EPINNED):
 * a key change must be an explicit remove then add, never a silent swap —
 * that is what stops another machine from taking over a host's name.
 *
 * An fl_peers is a plain in-memory set; add and remove change only memory
 * and fl_peers_save writes the file (atomically: temp file, fsync, rename).
 * Not thread-safe: one thread owns a set. load and save block on the file
 * system; the other calls do not. */
#ifndef FL_PEERS_H
#define FL_PEERS_H

#include <stddef.h>

#include "gateway/proto/identity.h"
#include "gateway/proto/sign.h"

#define FL_PEERS_FILE "peers.json"
/* Pinned hosts per gateway. A fleet is a handful of hosts; 1024 bounds the
 * file and the linear lookups far above any real one. */
#define FL_PEERS_MAX 1024
/* A peer's URL, NUL included: room for any sane https:// address. */
#define FL_PEER_URL_SIZE 512

typedef struct fl_peers fl_peers;

/* One pin. Strings are NUL-terminated; url is "" when none was given. */
typedef struct fl_peer {
  char host[FL_HOST_ID_SIZE];
  unsigned char pk[FL_SIGN_PK_BYTES];
  char pk_b64[FL_SIGN_PK_B64_SIZE];
  char url[FL_PEER_URL_SIZE];
  char pinned_at[32];
} fl_peer;

/* Reads <state_dir>/peers.json into a new set; a missing file is an empty
 * set (the file is written by the first save). The file must not be
 * writable by group or others (whoever can write it can swap a pin).
 * On success *out is the caller's, freed with fl_peers_free. Returns 0;
 * FL_ECONFIG when the file is refused (err names the key that is wrong, or
 * the mode, and how to fix it); FL_EFULL over FL_PEERS_MAX; -errno;
 * FL_ENOMEM; FL_EINVAL for bad arguments. err (errlen bytes) may be NULL. */
int fl_peers_load(const char *state_dir, fl_peers **out, char *err, size_t errlen);

/* Parses the text of a pin list (len bytes at buf, not necessarily
 * NUL-terminated) into a new set, with every check fl_peers_load makes on
 * what it read, except the file's mode and size; path names the file in
 * messages and is where fl_peers_save writes. This is the parser
 * fl_peers_load uses. Returns as fl_peers_load does; on failure *out is
 * NULL. */
int fl_peers_parse(const char *path, const char *buf, size_t len, fl_peers **out, char *err,
                   size_t errlen);

/* Frees *p and sets it to NULL. NULL-safe. */
void fl_peers_free(fl_peers **p);

/* Pins host to the public key pk_b64 (standard padded base64 of 32 bytes).
 * url may be NULL (none; an existing pin keeps its url) or a URL to reach
 * the host, which replaces the old one. Pinning the key already pinned is
 * fine (returns 0; only the url may change). Returns 0; FL_EPINNED when
 * another key is pinned for host (err says how to change it deliberately);
 * FL_EINVAL for a bad host id, key or url (err says which); FL_EFULL. */
int fl_peers_add(fl_peers *p, const char *host, const char *pk_b64, const char *url, char *err,
                 size_t errlen);

/* Unpins host. Returns 0 or FL_ENOTFOUND. */
int fl_peers_remove(fl_peers *p, const char *host);

/* Copies the key pinned for host into pk. Returns 0, FL_ENOTFOUND (not
 * pinned, including a malformed host id) or FL_EINVAL. */
int fl_peers_lookup(const fl_peers *p, const char *host, unsigned char pk[FL_SIGN_PK_BYTES]);

/* Iteration, in host order: fl_peers_at(p, i) for i < fl_peers_count(p).
 * The pin is borrowed and valid until the next add, remove or free.
 * fl_peers_at returns NULL when i is out of range. */
size_t fl_peers_count(const fl_peers *p);
const fl_peer *fl_peers_at(const fl_peers *p, size_t i);

/* Writes the set to the file it was loaded from (mode 0600, replacing it
 * atomically). Returns 0, FL_ENOMEM or -errno; err says which. */
int fl_peers_save(const fl_peers *p, char *err, size_t errlen);

#endif
