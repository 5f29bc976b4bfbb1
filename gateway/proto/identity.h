/* identity.h — this gateway's node identity: an Ed25519 key pair.
 *
 * The pair lives in <state_dir>/node-identity.json, mode 0600, and never
 * leaves the host: fleetd signs every envelope it publishes with it
 * (sign.h), and other gateways pin its public key (peers.h). The file is
 * created on first start:
 *
 *   {"version": 1, "hostId": "…", "publicKey": "<base64, 32 bytes>",
 *    "secretKey": "<base64, libsodium's 64-byte secret key>",
 *    "created": "<RFC 3339 UTC>"}
 *
 * An identity file is refused, with a message that says how to fix it, when
 * group or others may access it, when it is malformed, when its public key
 * is not the one its secret key derives, or when it was made for another
 * host id (peers pinned it under that id).
 *
 * Calls here block on the file system (a few small reads, or a write and
 * fsync on first start); they run once at start-up, before the loop. */
#ifndef FL_IDENTITY_H
#define FL_IDENTITY_H

#include <stddef.h>

#include "gateway/proto/sign.h"

#define FL_IDENTITY_FILE "node-identity.json"
/* A host id (common/names.h: 1-63 letters, digits, '-' or '_'; they
 * appear in routing keys and queue names), plus the NUL. */
#define FL_HOST_ID_SIZE 64

/* A loaded identity. It is a plain value the caller embeds; the secret key
 * is in it, so clear it with fl_identity_clear when done. */
typedef struct fl_identity {
  char host_id[FL_HOST_ID_SIZE];
  unsigned char pk[FL_SIGN_PK_BYTES];
  unsigned char sk[FL_SIGN_SK_BYTES];
  char pk_b64[FL_SIGN_PK_B64_SIZE]; /* what `fleetctl peer add` takes on other hosts */
} fl_identity;

/* Loads <state_dir>/node-identity.json into *out, or creates it (and a new
 * key pair) when it does not exist. host_id is this gateway's host id; the
 * file must have been made for it. state_dir must exist. Calls sodium_init.
 * Returns 0; FL_EINVAL for a bad argument or host id; FL_ECONFIG when the
 * file is refused (mode, malformed, key mismatch, other host id); -errno
 * when it cannot be read or written; FL_ENOMEM. On failure *out is zeroed
 * and err (errlen bytes; may be NULL) says what was wrong and how to fix
 * it. */
int fl_identity_load(const char *state_dir, const char *host_id, fl_identity *out, char *err,
                     size_t errlen);

/* Parses the text of an identity file (len bytes at buf, not necessarily
 * NUL-terminated) into *out, with every check fl_identity_load makes on
 * what it read, except the file's mode; path only names the file in
 * messages. This is the parser fl_identity_load uses. Returns 0; FL_EINVAL
 * for a bad argument or host id; FL_ECONFIG when the text is refused;
 * FL_ENOMEM. On failure *out is zeroed and err says why. */
int fl_identity_parse(const char *path, const char *buf, size_t len, const char *host_id,
                      fl_identity *out, char *err, size_t errlen);

/* Zeroes all of *id, secret key included. NULL-safe. */
void fl_identity_clear(fl_identity *id);

/* Writes len bytes of data to path as a new file of mode 0600, whole or not
 * at all: a temporary file beside it (O_CREAT|O_EXCL, 0600) is written and
 * fsynced, then moved into place, then the directory is fsynced. With
 * replace = 0 an existing path is never overwritten (returns -EEXIST); with
 * replace = 1 it is replaced atomically. Shared by the identity and the
 * pinned-peer file. Returns 0 or -errno. */
int fl_identity_write_file(const char *path, const void *data, size_t len, int replace);

#endif
