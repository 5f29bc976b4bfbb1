/* peers.c — pinned peer keys (see peers.h).
 *
 * The set is a sorted array: a fleet pins a handful of hosts, listing wants
 * host order, and a linear scan of at most FL_PEERS_MAX entries is cheaper
 * than any index. Keys are stored as bytes and re-encoded for the file, so
 * "the same key" means the same 32 bytes, never the same spelling. The file
 * is read strictly (a damaged pin list must not quietly trust less, or
 * more) and written whole through fl_identity_write_file. */
#include "gateway/proto/peers.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/json_read.h"
#include "common/limits.h"
#include "common/names.h"
#include "common/time.h"

/* A pin takes under 700 bytes of JSON; 1 KiB each for FL_PEERS_MAX pins
 * bounds what load will read. */
#define PEERS_MAX_FILE ((long)FL_PEERS_MAX * 1024L)
#define PEERS_VERSION 1

struct fl_peers {
  char path[4096];
  fl_peer *v; /* sorted by host */
  size_t n, cap;
};

/* Index of host, or of where it would go (with *found = 0). */
static size_t peers_find(const fl_peers *p, const char *host, int *found) {
  size_t i = 0;
  *found = 0;
  for (; i < p->n; i++) {
    int c = strcmp(p->v[i].host, host);
    if (c == 0)
      *found = 1;
    if (c >= 0)
      break;
  }
  return i;
}

/* A URL is printable ASCII without spaces: it is shown to operators and
 * passed on verbatim. */
static int peers_url_valid(const char *url) {
  size_t n = strlen(url);
  if (n == 0 || n >= FL_PEER_URL_SIZE)
    return 0;
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)url[i] <= 0x20 || (unsigned char)url[i] >= 0x7f)
      return 0;
  return 1;
}

/* Decodes pk_b64 into exactly 32 bytes. */
static int peers_key(const char *pk_b64, unsigned char pk[FL_SIGN_PK_BYTES]) {
  size_t got = 0;
  return pk_b64 && fl_b64_decode(pk_b64, pk, FL_SIGN_PK_BYTES, &got) == 0 &&
         got == FL_SIGN_PK_BYTES;
}

/* Inserts a checked pin at index i. */
static int peers_insert(fl_peers *p, size_t i, const fl_peer *pin) {
  if (p->n == FL_PEERS_MAX)
    return FL_EFULL;
  if (p->n == p->cap) {
    size_t cap = p->cap ? p->cap * 2 : 8;
    fl_peer *v = fl_realloc(p->v, cap * sizeof *v);
    if (!v)
      return FL_ENOMEM;
    p->v = v;
    p->cap = cap;
  }
  memmove(&p->v[i + 1], &p->v[i], (p->n - i) * sizeof *p->v);
  p->v[i] = *pin;
  p->n++;
  return 0;
}

void fl_peers_free(fl_peers **p) {
  if (!p || !*p)
    return;
  fl_free((*p)->v);
  fl_free(*p);
  *p = NULL;
}

int fl_peers_add(fl_peers *p, const char *host, const char *pk_b64, const char *url, char *err,
                 size_t errlen) {
  if (!p)
    return FL_EINVAL;
  if (!fl_name_valid(host, FL_MAX_NAME)) {
    fl_errf(err, errlen, "host id \"%s\" is not valid: use %s", host ? host : "", fl_name_rule);
    return FL_EINVAL;
  }
  fl_peer pin;
  memset(&pin, 0, sizeof pin);
  if (!peers_key(pk_b64, pin.pk)) {
    fl_errf(err, errlen,
            "\"%s\" is not a public key: give the 44-character base64 publicKey from the "
            "other host's %s",
            pk_b64 ? pk_b64 : "", FL_IDENTITY_FILE);
    return FL_EINVAL;
  }
  if (url && url[0] && !peers_url_valid(url)) {
    fl_errf(err, errlen, "url must be 1-%d printable characters without spaces",
            FL_PEER_URL_SIZE - 1);
    return FL_EINVAL;
  }
  int found;
  size_t i = peers_find(p, host, &found);
  if (found) {
    fl_peer *old = &p->v[i];
    if (memcmp(old->pk, pin.pk, sizeof pin.pk) != 0) {
      fl_errf(err, errlen,
              "host %s is pinned to key %s; remove the pin first (fleetctl peer remove %s) if "
              "the key really changed",
              host, old->pk_b64, host);
      return FL_EPINNED;
    }
    if (url && url[0])
      snprintf(old->url, sizeof old->url, "%s", url);
    return 0;
  }
  snprintf(pin.host, sizeof pin.host, "%s", host);
  fl_b64_encode(pin.pk, sizeof pin.pk, pin.pk_b64, sizeof pin.pk_b64);
  snprintf(pin.url, sizeof pin.url, "%s", url ? url : "");
  fl_rfc3339_now(pin.pinned_at, sizeof pin.pinned_at);
  int rc = peers_insert(p, i, &pin);
  if (rc == FL_EFULL)
    fl_errf(err, errlen, "already %d hosts pinned; remove one first", FL_PEERS_MAX);
  else if (rc)
    fl_errf(err, errlen, "out of memory");
  return rc;
}

int fl_peers_remove(fl_peers *p, const char *host) {
  if (!p || !host)
    return FL_EINVAL;
  int found;
  size_t i = peers_find(p, host, &found);
  if (!found)
    return FL_ENOTFOUND;
  memmove(&p->v[i], &p->v[i + 1], (p->n - i - 1) * sizeof *p->v);
  p->n--;
  return 0;
}

int fl_peers_lookup(const fl_peers *p, const char *host, unsigned char pk[FL_SIGN_PK_BYTES]) {
  if (!p || !host || !pk)
    return FL_EINVAL;
  int found;
  size_t i = peers_find(p, host, &found);
  if (!found)
    return FL_ENOTFOUND;
  memcpy(pk, p->v[i].pk, FL_SIGN_PK_BYTES);
  return 0;
}

size_t fl_peers_count(const fl_peers *p) { return p ? p->n : 0; }

const fl_peer *fl_peers_at(const fl_peers *p, size_t i) {
  return (p && i < p->n) ? &p->v[i] : NULL;
}

/* Reads one "peers" entry of the file into the set. */
static int peers_load_entry(fl_peers *p, const char *host, json_t *ent, char *err, size_t errlen) {
  const char *fix = "fix the entry by hand, or delete it and pin again";
  if (!fl_name_valid(host, FL_MAX_NAME)) {
    fl_errf(err, errlen, "%s: \"peers\" has a key \"%s\" that is not a host id (%s); %s", p->path,
            host, fl_name_rule, fix);
    return FL_ECONFIG;
  }
  if (!json_is_object(ent)) {
    fl_errf(err, errlen, "%s: key \"peers.%s\" must be an object; %s", p->path, host, fix);
    return FL_ECONFIG;
  }
  fl_peer pin;
  memset(&pin, 0, sizeof pin);
  const char *pk_b64 = json_string_value(json_object_get(ent, "publicKey"));
  if (!peers_key(pk_b64, pin.pk)) {
    fl_errf(err, errlen,
            "%s: key \"peers.%s.publicKey\" must be standard padded base64 of a "
            "32-byte Ed25519 public key; %s",
            p->path, host, fix);
    return FL_ECONFIG;
  }
  json_t *url = json_object_get(ent, "url");
  if (url && !json_is_null(url) &&
      (!json_is_string(url) || !peers_url_valid(json_string_value(url)))) {
    fl_errf(err, errlen,
            "%s: key \"peers.%s.url\" must be null or a URL of 1-%d printable "
            "characters; %s",
            p->path, host, FL_PEER_URL_SIZE - 1, fix);
    return FL_ECONFIG;
  }
  const char *at = json_string_value(json_object_get(ent, "pinnedAt"));
  if (!at || !at[0] || strlen(at) >= sizeof pin.pinned_at) {
    fl_errf(err, errlen, "%s: key \"peers.%s.pinnedAt\" must be an RFC 3339 time; %s", p->path,
            host, fix);
    return FL_ECONFIG;
  }
  snprintf(pin.host, sizeof pin.host, "%s", host);
  fl_b64_encode(pin.pk, sizeof pin.pk, pin.pk_b64, sizeof pin.pk_b64);
  snprintf(pin.url, sizeof pin.url, "%s", json_is_string(url) ? json_string_value(url) : "");
  snprintf(pin.pinned_at, sizeof pin.pinned_at, "%s", at);
  int found;
  size_t i = peers_find(p, host, &found); /* JSON object keys are unique */
  int rc = peers_insert(p, i, &pin);
  if (rc == FL_EFULL)
    fl_errf(err, errlen, "%s pins more than %d hosts", p->path, FL_PEERS_MAX);
  else if (rc)
    fl_errf(err, errlen, "out of memory");
  return rc;
}

/* Parses the pin list text in buf into p, which is empty. */
static int peers_parse_into(fl_peers *p, const char *buf, size_t len, char *err, size_t errlen) {
  json_error_t jerr;
  json_t *root = fl_json_loadb(buf, len, 0, &jerr);
  if (!root) {
    fl_errf(err, errlen, "%s:%d: %s (fix the JSON by hand)", p->path, jerr.line, jerr.text);
    return FL_ECONFIG;
  }
  int rc = FL_ECONFIG;
  json_t *ver = json_object_get(root, "version");
  json_t *peers = json_object_get(root, "peers");
  if (!json_is_object(root)) {
    fl_errf(err, errlen, "%s: the file must hold one JSON object", p->path);
  } else if (json_is_integer(ver) && json_integer_value(ver) > PEERS_VERSION) {
    fl_errf(err, errlen, "%s: \"version\" is %lld, written by a newer fleet; upgrade fleetd",
            p->path, (long long)json_integer_value(ver));
  } else if (!json_is_integer(ver) || json_integer_value(ver) != PEERS_VERSION) {
    fl_errf(err, errlen, "%s: key \"version\" must be %d", p->path, PEERS_VERSION);
  } else if (!json_is_object(peers)) {
    fl_errf(err, errlen, "%s: key \"peers\" must be an object of host -> pin", p->path);
  } else {
    const char *host;
    json_t *ent;
    rc = 0;
    json_object_foreach(peers, host, ent) {
      if ((rc = peers_load_entry(p, host, ent, err, errlen)) != 0)
        break;
    }
  }
  json_decref(root);
  return rc;
}

/* A new empty set that saves to path. */
static int peers_new(const char *path, fl_peers **out, char *err, size_t errlen) {
  fl_peers *p = fl_calloc(1, sizeof *p);
  if (!p) {
    fl_errf(err, errlen, "out of memory");
    return FL_ENOMEM;
  }
  int w = snprintf(p->path, sizeof p->path, "%s", path);
  if (w < 0 || (size_t)w >= sizeof p->path) {
    fl_free(p);
    fl_errf(err, errlen, "state directory path is too long");
    return -ENAMETOOLONG;
  }
  *out = p;
  return 0;
}

int fl_peers_parse(const char *path, const char *buf, size_t len, fl_peers **out, char *err,
                   size_t errlen) {
  if (!out)
    return FL_EINVAL;
  *out = NULL;
  if (!path || !path[0] || (!buf && len)) {
    fl_errf(err, errlen, "no pin list text to read");
    return FL_EINVAL;
  }
  fl_peers *p;
  int rc = peers_new(path, &p, err, errlen);
  if (rc)
    return rc;
  rc = peers_parse_into(p, buf ? buf : "", len, err, errlen);
  if (rc) {
    fl_peers_free(&p);
    return rc;
  }
  *out = p;
  return 0;
}

/* Reads the open file fd (named path) into a new buffer *text of *len
 * bytes, after checking what it is. */
static int peers_read_fd(const char *path, int fd, char **text, size_t *len, char *err,
                         size_t errlen) {
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    fl_errf(err, errlen, "%s: cannot stat: %s", path, strerror(e));
    return -e;
  }
  if (!S_ISREG(st.st_mode)) {
    fl_errf(err, errlen, "%s is not a regular file; move it away", path);
    return FL_ECONFIG;
  }
  if (st.st_mode & 022) {
    fl_errf(err, errlen,
            "%s is mode %04o: whoever can write it can change which keys this "
            "host trusts; run: chmod 600 %s",
            path, (unsigned)(st.st_mode & 07777), path);
    return FL_ECONFIG;
  }
  const char *big = "%s is larger than %ld bytes; it is not a pin list fleet wrote";
  if (st.st_size > PEERS_MAX_FILE) {
    fl_errf(err, errlen, big, path, PEERS_MAX_FILE);
    return FL_ECONFIG;
  }
  /* One byte more than the cap, so a file that grew since fstat shows. */
  size_t cap = (size_t)st.st_size + 1, got = 0;
  char *buf = fl_malloc(cap);
  if (!buf) {
    fl_errf(err, errlen, "out of memory");
    return FL_ENOMEM;
  }
  for (;;) {
    ssize_t r = read(fd, buf + got, cap - got);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0) {
      int e = errno;
      fl_free(buf);
      fl_errf(err, errlen, "%s: cannot read: %s", path, strerror(e));
      return -e;
    }
    if (r == 0)
      break;
    got += (size_t)r;
    if (got == cap) {
      if (cap > (size_t)PEERS_MAX_FILE) {
        fl_free(buf);
        fl_errf(err, errlen, big, path, PEERS_MAX_FILE);
        return FL_ECONFIG;
      }
      size_t ncap = cap * 2 > (size_t)PEERS_MAX_FILE + 1 ? (size_t)PEERS_MAX_FILE + 1 : cap * 2;
      char *nbuf = fl_realloc(buf, ncap);
      if (!nbuf) {
        fl_free(buf);
        fl_errf(err, errlen, "out of memory");
        return FL_ENOMEM;
      }
      buf = nbuf;
      cap = ncap;
    }
  }
  *text = buf;
  *len = got;
  return 0;
}

int fl_peers_load(const char *state_dir, fl_peers **out, char *err, size_t errlen) {
  if (!out)
    return FL_EINVAL;
  *out = NULL;
  if (!state_dir || !state_dir[0]) {
    fl_errf(err, errlen, "no state directory to keep pinned peers in");
    return FL_EINVAL;
  }
  char path[4096];
  int w = snprintf(path, sizeof path, "%s/%s", state_dir, FL_PEERS_FILE);
  if (w < 0 || (size_t)w >= sizeof path) {
    fl_errf(err, errlen, "state directory path is too long");
    return -ENAMETOOLONG;
  }
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    if (e == ENOENT) /* no file yet: nobody is pinned */
      return peers_new(path, out, err, errlen);
    fl_errf(err, errlen, "%s: cannot open: %s", path, strerror(e));
    return -e;
  }
  char *text = NULL;
  size_t len = 0;
  int rc = peers_read_fd(path, fd, &text, &len, err, errlen);
  close(fd);
  if (rc == 0)
    rc = fl_peers_parse(path, text, len, out, err, errlen);
  fl_free(text);
  return rc;
}

int fl_peers_save(const fl_peers *p, char *err, size_t errlen) {
  if (!p)
    return FL_EINVAL;
  int rc = FL_ENOMEM;
  char *text = NULL;
  json_t *peers = json_object();
  json_t *root = json_pack("{s:i, s:O}", "version", PEERS_VERSION, "peers", peers);
  if (!peers || !root)
    goto out;
  for (size_t i = 0; i < p->n; i++) {
    const fl_peer *pin = &p->v[i];
    json_t *ent =
        json_pack("{s:s, s:o, s:s}", "publicKey", pin->pk_b64, "url",
                  pin->url[0] ? json_string(pin->url) : json_null(), "pinnedAt", pin->pinned_at);
    if (!ent || json_object_set_new(peers, pin->host, ent) != 0)
      goto out;
  }
  text = json_dumps(root, JSON_INDENT(2));
  if (!text)
    goto out;
  size_t len = strlen(text);
  char *line = fl_realloc(text, len + 2); /* a text file ends with a newline */
  if (!line)
    goto out;
  text = line;
  text[len++] = '\n';
  text[len] = '\0';
  rc = fl_identity_write_file(p->path, text, len, 1);
out:
  if (rc == FL_ENOMEM)
    fl_errf(err, errlen, "out of memory");
  else if (rc)
    fl_errf(err, errlen, "%s: cannot write: %s", p->path, strerror(-rc));
  fl_free(text);
  json_decref(root);
  json_decref(peers);
  return rc;
}
