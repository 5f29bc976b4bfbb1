/* identity.c — the node identity file (see identity.h).
 *
 * Loading is strict because the file is trust root material: a key readable
 * by others is already leaked, a malformed one is refused rather than
 * guessed at, and a key made for another host id would sign as a host the
 * peers pinned under a different name. Creation never overwrites: two
 * fleetds starting at once both write a temporary file, and only the first
 * link() into place wins; the other then loads the winner's key. Secret
 * bytes are wiped from every buffer this file owns before it is freed. */
#include "gateway/proto/identity.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/error.h"
#include "common/json_read.h"
#include "common/limits.h"
#include "common/names.h"
#include "common/time.h"

/* The identity file is about 250 bytes; anything much larger is not one. */
#define ID_MAX_FILE 4096
#define ID_VERSION 1

void fl_identity_clear(fl_identity *id) {
  if (id)
    sodium_memzero(id, sizeof *id);
}

/* fsyncs the directory holding path, so a rename or link into it survives a
 * power cut. */
static int id_sync_dir(const char *path) {
  char dir[4096];
  const char *slash = strrchr(path, '/');
  if (!slash)
    snprintf(dir, sizeof dir, ".");
  else if (slash == path)
    snprintf(dir, sizeof dir, "/");
  else if ((size_t)(slash - path) < sizeof dir)
    snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
  else
    return -ENAMETOOLONG;
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return -errno;
  int rc = fsync(fd) == 0 ? 0 : -errno;
  close(fd);
  return rc;
}

int fl_identity_write_file(const char *path, const void *data, size_t len, int replace) {
  if (!path || (!data && len))
    return FL_EINVAL;
  char tmp[4096];
  int w = snprintf(tmp, sizeof tmp, "%s.%ld.%08x.tmp", path, (long)getpid(),
                   (unsigned)randombytes_random());
  if (w < 0 || (size_t)w >= sizeof tmp)
    return -ENAMETOOLONG;
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0)
    return -errno;
  int rc = 0;
  const char *p = data;
  size_t left = len;
  while (left > 0) {
    ssize_t n = write(fd, p, left);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      rc = -errno;
      break;
    }
    p += n;
    left -= (size_t)n;
  }
  if (rc == 0 && fsync(fd) != 0)
    rc = -errno;
  if (close(fd) != 0 && rc == 0)
    rc = -errno;
  if (rc)
    goto out;
  if (replace) {
    if (rename(tmp, path) != 0)
      rc = -errno;
  } else if (link(tmp, path) != 0) {
    rc = -errno;
    /* A file system without hard links: fall back to rename, which is
     * atomic but could clobber a file that appeared since the caller
     * looked. Only first start creates without replace, so the window is
     * one start-up race on an unusual file system. */
    if ((rc == -EPERM || rc == -EOPNOTSUPP || rc == -ENOSYS) && access(path, F_OK) != 0)
      rc = rename(tmp, path) == 0 ? 0 : -errno;
  }
  if (rc == 0)
    rc = id_sync_dir(path);
out:
  unlink(tmp); /* after link() the temp name is a second name; after rename it is gone */
  return rc;
}

/* Decodes the base64 string at key into out (exactly n bytes). Returns 0 or
 * FL_ECONFIG with err naming the key. */
static int id_key_bytes(json_t *root, const char *key, unsigned char *out, size_t n,
                        const char *path, const char *what, char *err, size_t errlen) {
  const char *s = json_string_value(json_object_get(root, key));
  size_t got = 0;
  if (!s || fl_b64_decode(s, out, n, &got) != 0 || got != n) {
    sodium_memzero(out, n);
    fl_errf(err, errlen,
            "%s: key \"%s\" must be standard padded base64 of %s (%zu bytes); restore the file "
            "from a backup, or move it away to make a new identity (every peer must then re-pin "
            "this host)",
            path, key, what, n);
    return FL_ECONFIG;
  }
  return 0;
}

/* Parses and checks the identity JSON in buf into *out (zeroed first). */
static int id_parse(const char *path, const char *buf, size_t len, const char *host_id,
                    fl_identity *out, char *err, size_t errlen) {
  json_error_t jerr;
  json_t *root = fl_json_loadb(buf, len, 0, &jerr);
  int rc = FL_ECONFIG;
  const char *redo = "restore the file from a backup, or move it away to make a new identity "
                     "(every peer must then re-pin this host)";
  if (!root) {
    fl_errf(err, errlen, "%s:%d: %s; %s", path, jerr.line, jerr.text, redo);
    return FL_ECONFIG;
  }
  if (!json_is_object(root)) {
    fl_errf(err, errlen, "%s: the file must hold one JSON object; %s", path, redo);
    goto out;
  }
  json_t *ver = json_object_get(root, "version");
  if (json_is_integer(ver) && json_integer_value(ver) > ID_VERSION) {
    fl_errf(err, errlen, "%s: \"version\" is %lld, written by a newer fleet; upgrade fleetd", path,
            (long long)json_integer_value(ver));
    goto out;
  }
  if (!json_is_integer(ver) || json_integer_value(ver) != ID_VERSION) {
    fl_errf(err, errlen, "%s: key \"version\" must be %d; %s", path, ID_VERSION, redo);
    goto out;
  }
  const char *file_host = json_string_value(json_object_get(root, "hostId"));
  if (!file_host || !fl_name_valid(file_host, FL_MAX_NAME)) {
    fl_errf(err, errlen, "%s: key \"hostId\" must be a host id (%s); %s", path, fl_name_rule, redo);
    goto out;
  }
  const char *created = json_string_value(json_object_get(root, "created"));
  if (!created || !created[0]) {
    fl_errf(err, errlen, "%s: key \"created\" must be an RFC 3339 time string; %s", path, redo);
    goto out;
  }
  if (id_key_bytes(root, "publicKey", out->pk, sizeof out->pk, path, "an Ed25519 public key", err,
                   errlen) ||
      id_key_bytes(root, "secretKey", out->sk, sizeof out->sk, path,
                   "a libsodium Ed25519 secret key", err, errlen))
    goto out;
  if (strcmp(file_host, host_id) != 0) {
    fl_errf(err, errlen,
            "%s belongs to host id \"%s\", but this gateway runs as \"%s\": start it with "
            "--host-id %s (peers pinned this key under that id), or move the file away to make a "
            "new identity for \"%s\" and pin it on every peer",
            path, file_host, host_id, file_host, host_id);
    goto out;
  }
  /* The secret key's first half is the seed: rebuild the pair from it, and
   * both halves of the file must match what it yields. */
  unsigned char pk2[FL_SIGN_PK_BYTES], sk2[FL_SIGN_SK_BYTES];
  crypto_sign_seed_keypair(pk2, sk2, out->sk);
  int same =
      sodium_memcmp(pk2, out->pk, sizeof pk2) == 0 && sodium_memcmp(sk2, out->sk, sizeof sk2) == 0;
  sodium_memzero(sk2, sizeof sk2);
  if (!same) {
    fl_errf(err, errlen,
            "%s: \"publicKey\" is not the public half of \"secretKey\" (the file was edited or "
            "damaged); %s",
            path, redo);
    goto out;
  }
  snprintf(out->host_id, sizeof out->host_id, "%s", file_host);
  fl_b64_encode(out->pk, sizeof out->pk, out->pk_b64, sizeof out->pk_b64);
  rc = 0;
out:
  if (root) {
    /* jansson keeps its own copy of the secret key string: wipe it before
     * it goes back to the allocator. */
    json_t *sks = json_object_get(root, "secretKey");
    if (json_is_string(sks))
      sodium_memzero((char *)json_string_value(sks), json_string_length(sks));
    json_decref(root);
  }
  return rc;
}

/* What parsing and loading both need first: a valid host id, libsodium. */
static int fl_id_ready(const char *host_id, char *err, size_t errlen) {
  if (!fl_name_valid(host_id, FL_MAX_NAME)) {
    fl_errf(err, errlen, "host id \"%s\" is not valid: use %s", host_id ? host_id : "",
            fl_name_rule);
    return FL_EINVAL;
  }
  if (sodium_init() < 0) {
    fl_errf(err, errlen, "libsodium failed to initialise");
    return FL_ENOMEM;
  }
  return 0;
}

int fl_identity_parse(const char *path, const char *buf, size_t len, const char *host_id,
                      fl_identity *out, char *err, size_t errlen) {
  if (!out)
    return FL_EINVAL;
  sodium_memzero(out, sizeof *out);
  if (!path || (!buf && len)) {
    fl_errf(err, errlen, "no identity text to read");
    return FL_EINVAL;
  }
  int rc0 = fl_id_ready(host_id, err, errlen);
  if (rc0)
    return rc0;
  int rc = id_parse(path, buf ? buf : "", len, host_id, out, err, errlen);
  if (rc)
    sodium_memzero(out, sizeof *out);
  return rc;
}

/* Reads path into buf (size n). Returns the byte count, FL_ECONFIG (mode,
 * not a file, too large; err says so) or -errno (-ENOENT: none yet). */
static long id_read(const char *path, char *buf, size_t n, char *err, size_t errlen) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    if (e != ENOENT)
      fl_errf(err, errlen, "%s: cannot open: %s", path, strerror(e));
    return -e;
  }
  long rc;
  struct stat st;
  if (fstat(fd, &st) != 0) {
    rc = -errno;
    fl_errf(err, errlen, "%s: cannot stat: %s", path, strerror((int)-rc));
    goto out;
  }
  if (!S_ISREG(st.st_mode)) {
    rc = FL_ECONFIG;
    fl_errf(err, errlen, "%s is not a regular file; move it away", path);
    goto out;
  }
  if (st.st_mode & 077) {
    rc = FL_ECONFIG;
    fl_errf(err, errlen, "%s is mode %04o: it holds this host's secret key; run: chmod 600 %s",
            path, (unsigned)(st.st_mode & 07777), path);
    goto out;
  }
  size_t got = 0;
  for (;;) {
    ssize_t r = read(fd, buf + got, n - got);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0) {
      rc = -errno;
      fl_errf(err, errlen, "%s: cannot read: %s", path, strerror((int)-rc));
      goto out;
    }
    if (r == 0)
      break;
    got += (size_t)r;
    if (got == n) {
      rc = FL_ECONFIG;
      fl_errf(err, errlen, "%s is larger than an identity file can be (%d bytes); %s", path,
              ID_MAX_FILE, "move it away to make a new identity");
      goto out;
    }
  }
  rc = (long)got;
out:
  close(fd);
  return rc;
}

/* Makes a new key pair and writes it to path without replacing anything.
 * Returns 0, -EEXIST (someone else created it first) or -errno. */
static int id_create(const char *path, const char *host_id, char *err, size_t errlen) {
  unsigned char pk[FL_SIGN_PK_BYTES], sk[FL_SIGN_SK_BYTES];
  char pk_b64[FL_SIGN_PK_B64_SIZE],
      sk_b64[sodium_base64_ENCODED_LEN(FL_SIGN_SK_BYTES, sodium_base64_VARIANT_ORIGINAL)];
  char now[32], text[512];
  crypto_sign_keypair(pk, sk);
  fl_b64_encode(pk, sizeof pk, pk_b64, sizeof pk_b64);
  fl_b64_encode(sk, sizeof sk, sk_b64, sizeof sk_b64);
  fl_rfc3339_now(now, sizeof now);
  /* Written by hand rather than by jansson so no copy of the secret key is
   * left in memory this file cannot wipe. Every value is base64, a host id
   * or a timestamp: nothing needs JSON escaping. */
  int w = snprintf(text, sizeof text,
                   "{\n  \"version\": %d,\n  \"hostId\": \"%s\",\n  \"publicKey\": \"%s\",\n"
                   "  \"secretKey\": \"%s\",\n  \"created\": \"%s\"\n}\n",
                   ID_VERSION, host_id, pk_b64, sk_b64, now);
  int rc = fl_identity_write_file(path, text, (size_t)w, 0);
  if (rc && rc != -EEXIST)
    fl_errf(err, errlen, "%s: cannot create the node identity: %s", path, strerror(-rc));
  sodium_memzero(sk, sizeof sk);
  sodium_memzero(sk_b64, sizeof sk_b64);
  sodium_memzero(text, sizeof text);
  return rc;
}

int fl_identity_load(const char *state_dir, const char *host_id, fl_identity *out, char *err,
                     size_t errlen) {
  if (!out)
    return FL_EINVAL;
  sodium_memzero(out, sizeof *out);
  if (!state_dir || !state_dir[0]) {
    fl_errf(err, errlen, "no state directory to keep the node identity in");
    return FL_EINVAL;
  }
  int rc0 = fl_id_ready(host_id, err, errlen);
  if (rc0)
    return rc0;
  char path[4096];
  int w = snprintf(path, sizeof path, "%s/%s", state_dir, FL_IDENTITY_FILE);
  if (w < 0 || (size_t)w >= sizeof path) {
    fl_errf(err, errlen, "state directory path is too long");
    return -ENAMETOOLONG;
  }

  char buf[ID_MAX_FILE];
  long n = id_read(path, buf, sizeof buf, err, errlen);
  if (n == -ENOENT) {
    int rc = id_create(path, host_id, err, errlen);
    if (rc && rc != -EEXIST)
      return rc;
    /* Made now, or by a fleetd that started at the same moment: either
     * way, load what is on disk, so both run with the same key. */
    n = id_read(path, buf, sizeof buf, err, errlen);
    if (n == -ENOENT)
      fl_errf(err, errlen,
              "%s vanished right after it was created; is another program "
              "cleaning the state directory?",
              path);
  }
  int rc = n < 0 ? (int)n : fl_identity_parse(path, buf, (size_t)n, host_id, out, err, errlen);
  sodium_memzero(buf, sizeof buf);
  if (rc)
    sodium_memzero(out, sizeof *out);
  return rc;
}
