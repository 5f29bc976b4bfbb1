/* test_trust.c — unit tests for gateway/proto/identity.c, gateway/proto/peers.c and
 * gateway/proto/sign.c: the pieces that decide whether a message from another
 * host is believed.
 *
 * Each test that touches files gets its own mkdtemp state dir, removed
 * afterwards. Covered: identity creation (mode 0600) and reload to the same
 * key; refusal of a group/other-readable file (the message says chmod 600),
 * of malformed files (the message names the key), of a public key that is
 * not the secret key's, and of a file made for another host id. Peers: add,
 * lookup, listing order, remove, persistence, the 0600 mode, refusal of a
 * second key for a pinned host (FL_EPINNED) and idempotence for the same
 * key, bad host ids, keys and files. Signing: every vector of
 * schema/signing-vectors.json (embedded as fl_schema_signing_vectors) gives
 * the same canonical bytes and signature; verification fails after changing
 * any signed field, one body byte, the signature or the key. Also base64
 * edge cases, the version parser, an injected allocation failure, and that
 * schema/envelope.json's field order and sizes are the ones sign.c uses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* After the four above: cmocka.h uses them without including them. */
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/error.h"
#include "common/limits.h"
#include "common/names.h"
#include "gateway/proto/identity.h"
#include "gateway/proto/peers.h"
#include "gateway/proto/sign.h"
#include "tests/support/test_util.h"

extern const char fl_schema_signing_vectors[];
extern const char fl_schema_envelope[];

/* ---- fixture: a temporary state dir ---- */

typedef struct fixture {
  char dir[64];
  char id_path[128];
  char peers_path[128];
  char err[512];
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  assert_non_null(f);
  assert_int_equal(fl_test_tmpdir("trust", f->dir, sizeof f->dir), 0);
  snprintf(f->id_path, sizeof f->id_path, "%s/%s", f->dir, FL_IDENTITY_FILE);
  snprintf(f->peers_path, sizeof f->peers_path, "%s/%s", f->dir, FL_PEERS_FILE);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  fl_alloc_fail_after(-1);
  fl_test_rmtree(f->dir);
  free(f);
  return 0;
}

static void write_file(const char *path, const char *text, mode_t mode) {
  unlink(path);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
  assert_true(fd >= 0);
  size_t n = strlen(text);
  assert_int_equal(write(fd, text, n), (ssize_t)n);
  close(fd);
  assert_int_equal(chmod(path, mode), 0);
}

static mode_t file_mode(const char *path) {
  struct stat st;
  assert_int_equal(stat(path, &st), 0);
  return st.st_mode & 07777;
}

/* Asserts that haystack contains needle, showing both when not. */
static void assert_has(const char *haystack, const char *needle) {
  if (!strstr(haystack, needle))
    fail_msg("expected \"%s\" in: %s", needle, haystack);
}

/* ---- identity ---- */

static void test_identity_create_and_reload(void **state) {
  fixture *f = *state;
  fl_identity a, b;
  assert_int_equal(fl_identity_load(f->dir, "alpha", &a, f->err, sizeof f->err), 0);
  assert_int_equal(file_mode(f->id_path), 0600);
  assert_string_equal(a.host_id, "alpha");
  assert_int_equal(strlen(a.pk_b64), 44);

  /* The file is the documented JSON. */
  json_t *root = json_load_file(f->id_path, 0, NULL);
  assert_non_null(root);
  assert_int_equal(json_integer_value(json_object_get(root, "version")), 1);
  assert_string_equal(json_string_value(json_object_get(root, "hostId")), "alpha");
  assert_string_equal(json_string_value(json_object_get(root, "publicKey")), a.pk_b64);
  assert_int_equal(strlen(json_string_value(json_object_get(root, "secretKey"))), 88);
  assert_non_null(json_string_value(json_object_get(root, "created")));
  json_decref(root);

  assert_int_equal(fl_identity_load(f->dir, "alpha", &b, f->err, sizeof f->err), 0);
  assert_memory_equal(a.pk, b.pk, sizeof a.pk);
  assert_memory_equal(a.sk, b.sk, sizeof a.sk);
  assert_string_equal(a.pk_b64, b.pk_b64);

  /* The key pair works with the signer. */
  fl_envelope env;
  memset(&env, 0, sizeof env);
  snprintf(env.v, sizeof env.v, "1.0");
  snprintf(env.host, sizeof env.host, "alpha");
  assert_int_equal(fl_sign_envelope(&env, "hi", 2, a.sk), 0);
  assert_int_equal(fl_verify_envelope(&env, "hi", 2, b.pk), 0);

  fl_identity_clear(&a);
  fl_identity_clear(&b);
  static const unsigned char zero[FL_SIGN_SK_BYTES];
  assert_memory_equal(a.sk, zero, sizeof zero);
  fl_identity_clear(NULL);
}

static void test_identity_mode_refused(void **state) {
  fixture *f = *state;
  fl_identity id;
  assert_int_equal(fl_identity_load(f->dir, "alpha", &id, f->err, sizeof f->err), 0);
  fl_identity_clear(&id);
  assert_int_equal(chmod(f->id_path, 0644), 0);
  assert_int_equal(fl_identity_load(f->dir, "alpha", &id, f->err, sizeof f->err), FL_ECONFIG);
  assert_has(f->err, "chmod 600");
  assert_has(f->err, "0644");
  assert_has(f->err, f->id_path);
  static const unsigned char zero[FL_SIGN_SK_BYTES];
  assert_memory_equal(id.sk, zero, sizeof zero);
  /* Group-writable alone is refused too; 0600 loads again. */
  assert_int_equal(chmod(f->id_path, 0620), 0);
  assert_int_equal(fl_identity_load(f->dir, "alpha", &id, f->err, sizeof f->err), FL_ECONFIG);
  assert_int_equal(chmod(f->id_path, 0600), 0);
  assert_int_equal(fl_identity_load(f->dir, "alpha", &id, f->err, sizeof f->err), 0);
  fl_identity_clear(&id);
}

static void test_identity_malformed(void **state) {
  fixture *f = *state;
  fl_identity good, id;
  assert_int_equal(fl_identity_load(f->dir, "alpha", &good, f->err, sizeof f->err), 0);
  char sk_b64[FL_SIGN_SIG_B64_SIZE];
  assert_int_equal(fl_b64_encode(good.sk, sizeof good.sk, sk_b64, sizeof sk_b64), 0);
  /* Another key pair, for a public key that does not match. */
  unsigned char pk2[32], sk2[64];
  char pk2_b64[FL_SIGN_PK_B64_SIZE];
  crypto_sign_keypair(pk2, sk2);
  fl_b64_encode(pk2, sizeof pk2, pk2_b64, sizeof pk2_b64);

  struct {
    const char *version, *host, *pk, *sk, *created;
    const char *expect;
  } cases[] = {
      {"1", "\"alpha\"", NULL, NULL, "\"2026-01-01T00:00:00.000Z\"", NULL},
      {"\"1\"", "\"alpha\"", NULL, NULL, "\"x\"", "\"version\""},
      {"2", "\"alpha\"", NULL, NULL, "\"x\"", "newer fleet"},
      {"1", "\"al pha\"", NULL, NULL, "\"x\"", "\"hostId\""},
      {"1", "7", NULL, NULL, "\"x\"", "\"hostId\""},
      {"1", "\"alpha\"", "\"AAAA\"", NULL, "\"x\"", "\"publicKey\""},
      {"1", "\"alpha\"", "\"not base64!\"", NULL, "\"x\"", "\"publicKey\""},
      {"1", "\"alpha\"", NULL, "\"AAAA\"", "\"x\"", "\"secretKey\""},
      {"1", "\"alpha\"", NULL, "null", "\"x\"", "\"secretKey\""},
      {"1", "\"alpha\"", NULL, NULL, "3", "\"created\""},
      {"1", "\"alpha\"", "PK2", NULL, "\"x\"", "not the public half"},
  };
  char text[1024], pkq[64], skq[128];
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    snprintf(pkq, sizeof pkq, "\"%s\"", good.pk_b64);
    snprintf(skq, sizeof skq, "\"%s\"", sk_b64);
    const char *pk = cases[i].pk ? cases[i].pk : pkq;
    if (pk && strcmp(pk, "PK2") == 0) {
      snprintf(pkq, sizeof pkq, "\"%s\"", pk2_b64);
      pk = pkq;
    }
    snprintf(text, sizeof text,
             "{\"version\": %s, \"hostId\": %s, \"publicKey\": %s, \"secretKey\": %s, "
             "\"created\": %s}",
             cases[i].version, cases[i].host, pk, cases[i].sk ? cases[i].sk : skq,
             cases[i].created);
    write_file(f->id_path, text, 0600);
    f->err[0] = '\0';
    int rc = fl_identity_load(f->dir, "alpha", &id, f->err, sizeof f->err);
    if (!cases[i].expect) {
      assert_int_equal(rc, 0);
      assert_memory_equal(id.pk, good.pk, sizeof good.pk);
      fl_identity_clear(&id);
      continue;
    }
    if (rc != FL_ECONFIG)
      fail_msg("case %zu: rc %d (%s), expected FL_ECONFIG", i, rc, fl_strerror(rc));
    assert_has(f->err, cases[i].expect);
  }

  static const char *const not_json[] = {"", "{", "[1, 2]", "\"alpha\""};
  for (size_t i = 0; i < sizeof not_json / sizeof not_json[0]; i++) {
    write_file(f->id_path, not_json[i], 0600);
    assert_int_equal(fl_identity_load(f->dir, "alpha", &id, f->err, sizeof f->err), FL_ECONFIG);
    assert_has(f->err, f->id_path);
  }
  fl_identity_clear(&good);
}

static void test_identity_other_host(void **state) {
  fixture *f = *state;
  fl_identity id;
  assert_int_equal(fl_identity_load(f->dir, "alpha", &id, f->err, sizeof f->err), 0);
  fl_identity_clear(&id);
  assert_int_equal(fl_identity_load(f->dir, "beta", &id, f->err, sizeof f->err), FL_ECONFIG);
  assert_has(f->err, "belongs to host id \"alpha\"");
  assert_has(f->err, "\"beta\"");
  /* The refused file is left alone. */
  assert_int_equal(fl_identity_load(f->dir, "alpha", &id, f->err, sizeof f->err), 0);
  fl_identity_clear(&id);
}

static void test_identity_arguments(void **state) {
  fixture *f = *state;
  fl_identity id;
  assert_int_equal(fl_identity_load(f->dir, "", &id, f->err, sizeof f->err), FL_EINVAL);
  assert_int_equal(fl_identity_load(f->dir, "a/b", &id, NULL, 0), FL_EINVAL);
  char long_host[80];
  memset(long_host, 'h', 64);
  long_host[64] = '\0';
  assert_int_equal(fl_identity_load(f->dir, long_host, &id, f->err, sizeof f->err), FL_EINVAL);
  long_host[63] = '\0';
  assert_int_equal(fl_name_valid(long_host, FL_MAX_NAME), 1);
  assert_int_equal(fl_name_valid("web-1_prod-eu", FL_MAX_NAME), 1);
  /* '.' separates routing-key words: one rule refuses it everywhere. */
  assert_int_equal(fl_name_valid("web-1.prod_eu", FL_MAX_NAME), 0);
  assert_int_equal(fl_name_valid("é", FL_MAX_NAME), 0);
  assert_int_equal(fl_identity_load(NULL, "alpha", &id, f->err, sizeof f->err), FL_EINVAL);
  assert_int_equal(fl_identity_load(f->dir, "alpha", NULL, f->err, sizeof f->err), FL_EINVAL);
  char missing[128];
  snprintf(missing, sizeof missing, "%s/nope", f->dir);
  assert_true(fl_identity_load(missing, "alpha", &id, f->err, sizeof f->err) == -ENOENT);
  /* A directory where the file should be. */
  assert_int_equal(mkdir(f->id_path, 0700), 0);
  assert_int_equal(fl_identity_load(f->dir, "alpha", &id, f->err, sizeof f->err), FL_ECONFIG);
  assert_int_equal(rmdir(f->id_path), 0);
}

static void test_write_file_no_replace(void **state) {
  fixture *f = *state;
  char path[160];
  snprintf(path, sizeof path, "%s/w", f->dir);
  assert_int_equal(fl_identity_write_file(path, "one", 3, 0), 0);
  assert_int_equal(file_mode(path), 0600);
  assert_int_equal(fl_identity_write_file(path, "two", 3, 0), -EEXIST);
  assert_int_equal(fl_identity_write_file(path, "three", 5, 1), 0);
  char buf[16] = {0};
  FILE *fp = fopen(path, "r");
  assert_non_null(fp);
  assert_int_equal(fread(buf, 1, sizeof buf - 1, fp), 5);
  fclose(fp);
  assert_string_equal(buf, "three");
  /* No temporary file is left behind. */
  DIR *d = opendir(f->dir);
  struct dirent *de;
  int files = 0;
  while ((de = readdir(d)))
    files += de->d_name[0] != '.';
  closedir(d);
  assert_int_equal(files, 1);
}

/* ---- peers ---- */

static void key_b64(unsigned char fill, char out[FL_SIGN_PK_B64_SIZE]) {
  unsigned char pk[32];
  memset(pk, fill, sizeof pk);
  assert_int_equal(fl_b64_encode(pk, sizeof pk, out, FL_SIGN_PK_B64_SIZE), 0);
}

static void test_peers_pin(void **state) {
  fixture *f = *state;
  char k1[FL_SIGN_PK_B64_SIZE], k2[FL_SIGN_PK_B64_SIZE];
  key_b64(0x11, k1);
  key_b64(0x22, k2);
  unsigned char pk[32], want[32];
  memset(want, 0x11, sizeof want);

  fl_peers *p = NULL;
  assert_int_equal(fl_peers_load(f->dir, &p, f->err, sizeof f->err), 0);
  assert_int_equal(fl_peers_count(p), 0);
  assert_int_equal(fl_peers_lookup(p, "beta", pk), FL_ENOTFOUND);

  assert_int_equal(fl_peers_add(p, "beta", k1, "https://beta.lan:7777", f->err, sizeof f->err), 0);
  assert_int_equal(fl_peers_lookup(p, "beta", pk), 0);
  assert_memory_equal(pk, want, sizeof pk);

  /* A second key for a pinned host is refused, with the way out. */
  assert_int_equal(fl_peers_add(p, "beta", k2, NULL, f->err, sizeof f->err), FL_EPINNED);
  assert_has(f->err, "host beta is pinned to key ");
  assert_has(f->err, k1);
  assert_has(f->err, "fleetctl peer remove beta");
  assert_int_equal(fl_peers_lookup(p, "beta", pk), 0);
  assert_memory_equal(pk, want, sizeof pk);

  /* The same key again is fine; a url replaces the old one, none keeps it. */
  assert_int_equal(fl_peers_add(p, "beta", k1, NULL, f->err, sizeof f->err), 0);
  assert_string_equal(fl_peers_at(p, 0)->url, "https://beta.lan:7777");
  assert_int_equal(fl_peers_add(p, "beta", k1, "https://beta:8888", f->err, sizeof f->err), 0);
  assert_string_equal(fl_peers_at(p, 0)->url, "https://beta:8888");
  assert_int_equal(fl_peers_count(p), 1);

  /* Listing is in host order. */
  assert_int_equal(fl_peers_add(p, "gamma", k2, NULL, f->err, sizeof f->err), 0);
  assert_int_equal(fl_peers_add(p, "alpha", k2, "", f->err, sizeof f->err), 0);
  assert_int_equal(fl_peers_count(p), 3);
  assert_string_equal(fl_peers_at(p, 0)->host, "alpha");
  assert_string_equal(fl_peers_at(p, 1)->host, "beta");
  assert_string_equal(fl_peers_at(p, 2)->host, "gamma");
  assert_null(fl_peers_at(p, 3));
  assert_string_equal(fl_peers_at(p, 0)->url, "");
  assert_string_equal(fl_peers_at(p, 2)->pk_b64, k2);
  assert_true(strlen(fl_peers_at(p, 2)->pinned_at) >= 20);

  /* Persisted, 0600, and read back the same. */
  assert_int_equal(fl_peers_save(p, f->err, sizeof f->err), 0);
  assert_int_equal(file_mode(f->peers_path), 0600);
  fl_peers *q = NULL;
  assert_int_equal(fl_peers_load(f->dir, &q, f->err, sizeof f->err), 0);
  assert_int_equal(fl_peers_count(q), 3);
  for (size_t i = 0; i < 3; i++) {
    const fl_peer *a = fl_peers_at(p, i), *b = fl_peers_at(q, i);
    assert_string_equal(a->host, b->host);
    assert_memory_equal(a->pk, b->pk, sizeof a->pk);
    assert_string_equal(a->url, b->url);
    assert_string_equal(a->pinned_at, b->pinned_at);
  }
  json_t *root = json_load_file(f->peers_path, 0, NULL);
  assert_non_null(root);
  assert_int_equal(json_integer_value(json_object_get(root, "version")), 1);
  json_t *alpha = json_object_get(json_object_get(root, "peers"), "alpha");
  assert_true(json_is_null(json_object_get(alpha, "url")));
  assert_string_equal(json_string_value(json_object_get(alpha, "publicKey")), k2);
  json_decref(root);
  /* The pin survives the reload: a new key is still refused. */
  assert_int_equal(fl_peers_add(q, "beta", k2, NULL, f->err, sizeof f->err), FL_EPINNED);

  /* Remove, then the new key may be pinned. */
  assert_int_equal(fl_peers_remove(q, "beta"), 0);
  assert_int_equal(fl_peers_remove(q, "beta"), FL_ENOTFOUND);
  assert_int_equal(fl_peers_lookup(q, "beta", pk), FL_ENOTFOUND);
  assert_int_equal(fl_peers_count(q), 2);
  assert_int_equal(fl_peers_add(q, "beta", k2, NULL, f->err, sizeof f->err), 0);
  assert_int_equal(fl_peers_remove(q, "gamma"), 0);
  assert_int_equal(fl_peers_save(q, f->err, sizeof f->err), 0);
  fl_peers_free(&q);
  assert_null(q);
  assert_int_equal(fl_peers_load(f->dir, &q, f->err, sizeof f->err), 0);
  assert_int_equal(fl_peers_count(q), 2);
  assert_int_equal(fl_peers_lookup(q, "gamma", pk), FL_ENOTFOUND);
  assert_int_equal(fl_peers_lookup(q, "beta", pk), 0);
  memset(want, 0x22, sizeof want);
  assert_memory_equal(pk, want, sizeof pk);
  fl_peers_free(&q);
  fl_peers_free(&p);
  fl_peers_free(&p);
  fl_peers_free(NULL);
}

static void test_peers_bad_input(void **state) {
  fixture *f = *state;
  char k1[FL_SIGN_PK_B64_SIZE];
  key_b64(0x11, k1);
  fl_peers *p = NULL;
  assert_int_equal(fl_peers_load(f->dir, &p, f->err, sizeof f->err), 0);
  static const char *const bad_hosts[] = {"", "a b", "a/b", "ä",
                                          "0123456789012345678901234567890123456789012345678901"
                                          "234567890123"};
  for (size_t i = 0; i < sizeof bad_hosts / sizeof bad_hosts[0]; i++) {
    assert_int_equal(fl_peers_add(p, bad_hosts[i], k1, NULL, f->err, sizeof f->err), FL_EINVAL);
    assert_has(f->err, "host id");
  }
  assert_int_equal(fl_peers_add(p, NULL, k1, NULL, f->err, sizeof f->err), FL_EINVAL);
  /* Keys: base64 of exactly 32 bytes. */
  unsigned char b33[33] = {0};
  char k33[64];
  fl_b64_encode(b33, sizeof b33, k33, sizeof k33);
  static const char *const bad_keys[] = {"", "AAAA", "not base64 at all",
                                         "AAAAAAAAAAAAAAAAAAAAAA"
                                         "AAAAAAAAAAAAAAAAAAAAAA"};
  for (size_t i = 0; i < sizeof bad_keys / sizeof bad_keys[0]; i++) {
    assert_int_equal(fl_peers_add(p, "beta", bad_keys[i], NULL, f->err, sizeof f->err), FL_EINVAL);
    assert_has(f->err, "public key");
  }
  assert_int_equal(fl_peers_add(p, "beta", k33, NULL, f->err, sizeof f->err), FL_EINVAL);
  assert_int_equal(fl_peers_add(p, "beta", NULL, NULL, f->err, sizeof f->err), FL_EINVAL);
  assert_int_equal(fl_peers_add(p, "beta", k1, "has space", f->err, sizeof f->err), FL_EINVAL);
  assert_has(f->err, "url");
  assert_int_equal(fl_peers_count(p), 0);
  assert_int_equal(fl_peers_lookup(p, "a b", b33), FL_ENOTFOUND);
  assert_int_equal(fl_peers_remove(p, "nobody"), FL_ENOTFOUND);
  fl_peers_free(&p);

  /* Files: mode, JSON, and each key's shape. */
  char text[1024];
  snprintf(text, sizeof text,
           "{\"version\":1,\"peers\":{\"beta\":{\"publicKey\":\"%s\",\"url\":null,"
           "\"pinnedAt\":\"2026-01-01T00:00:00.000Z\"}}}",
           k1);
  write_file(f->peers_path, text, 0666);
  assert_int_equal(fl_peers_load(f->dir, &p, f->err, sizeof f->err), FL_ECONFIG);
  assert_has(f->err, "chmod 600");
  assert_null(p);
  assert_int_equal(chmod(f->peers_path, 0600), 0);
  assert_int_equal(fl_peers_load(f->dir, &p, f->err, sizeof f->err), 0);
  assert_int_equal(fl_peers_count(p), 1);
  fl_peers_free(&p);

  struct {
    const char *text, *expect;
  } files[] = {
      {"{", "peers.json:"},
      {"[]", "one JSON object"},
      {"{\"version\":2,\"peers\":{}}", "newer fleet"},
      {"{\"peers\":{}}", "\"version\""},
      {"{\"version\":1}", "\"peers\""},
      {"{\"version\":1,\"peers\":{\"a b\":{}}}", "\"a b\""},
      {"{\"version\":1,\"peers\":{\"beta\":1}}", "\"peers.beta\""},
      {"{\"version\":1,\"peers\":{\"beta\":{\"publicKey\":\"AAAA\",\"pinnedAt\":\"x\"}}}",
       "\"peers.beta.publicKey\""},
      {"{\"version\":1,\"peers\":{\"beta\":{\"publicKey\":\"K1\",\"url\":5,\"pinnedAt\":\"x\"}}}",
       "\"peers.beta.url\""},
      {"{\"version\":1,\"peers\":{\"beta\":{\"publicKey\":\"K1\"}}}", "\"peers.beta.pinnedAt\""},
  };
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    /* Splice the good key in where a case says K1. */
    char buf[1024];
    const char *k = strstr(files[i].text, "K1");
    if (k)
      snprintf(buf, sizeof buf, "%.*s%s%s", (int)(k - files[i].text), files[i].text, k1, k + 2);
    else
      snprintf(buf, sizeof buf, "%s", files[i].text);
    write_file(f->peers_path, buf, 0600);
    f->err[0] = '\0';
    int rc = fl_peers_load(f->dir, &p, f->err, sizeof f->err);
    if (rc != FL_ECONFIG)
      fail_msg("file %zu: rc %d, expected FL_ECONFIG", i, rc);
    assert_null(p);
    assert_has(f->err, files[i].expect);
  }
  assert_int_equal(fl_peers_load(NULL, &p, f->err, sizeof f->err), FL_EINVAL);
}

static void test_peers_alloc_failure(void **state) {
  fixture *f = *state;
  char k1[FL_SIGN_PK_B64_SIZE];
  key_b64(0x11, k1);
  fl_peers *p = NULL;
  fl_alloc_fail_after(0);
  assert_int_equal(fl_peers_load(f->dir, &p, f->err, sizeof f->err), FL_ENOMEM);
  assert_null(p);
  assert_int_equal(fl_peers_load(f->dir, &p, f->err, sizeof f->err), 0);
  fl_alloc_fail_after(0);
  assert_int_equal(fl_peers_add(p, "beta", k1, NULL, f->err, sizeof f->err), FL_ENOMEM);
  assert_int_equal(fl_peers_count(p), 0);
  assert_int_equal(fl_peers_add(p, "beta", k1, NULL, f->err, sizeof f->err), 0);
  fl_peers_free(&p);
}

/* ---- signing vectors ---- */

/* The signed fields, in canonical order: the signed rows of the envelope's
 * one field table (envelope.h). */
static const fl_envelope_field *fields[FL_ENVELOPE_NFIELDS];
static size_t nfields;
/* The first nalways of them are written always; the rest (sealedTo) only
 * when present, after them. */
static size_t nalways;

static void signed_fields(void) {
  nfields = 0;
  for (size_t i = 0; i < FL_ENVELOPE_NFIELDS; i++)
    if (fl_envelope_fields[i].is_signed == FL_SIGNED_ALWAYS)
      fields[nfields++] = &fl_envelope_fields[i];
  nalways = nfields;
  for (size_t i = 0; i < FL_ENVELOPE_NFIELDS; i++)
    if (fl_envelope_fields[i].is_signed == FL_SIGNED_IF_PRESENT)
      fields[nfields++] = &fl_envelope_fields[i];
}

static char *field_of(fl_envelope *env, size_t i) { return (char *)env + fields[i]->off; }

static void to_hex(const unsigned char *b, size_t n, char *out) {
  for (size_t i = 0; i < n; i++)
    sprintf(out + 2 * i, "%02x", b[i]);
}

static void test_vectors(void **state) {
  (void)state;
  json_error_t jerr;
  json_t *root = json_loads(fl_schema_signing_vectors, 0, &jerr);
  if (!root)
    fail_msg("schema/signing-vectors.json: %d: %s", jerr.line, jerr.text);
  json_t *vectors = json_object_get(root, "vectors");
  assert_true(json_array_size(vectors) >= 4);
  int non_ascii = 0, empty = 0, newlines = 0;

  size_t i;
  json_t *vec;
  json_array_foreach(vectors, i, vec) {
    const char *name = json_string_value(json_object_get(vec, "name"));
    const char *seed_hex = json_string_value(json_object_get(vec, "seed"));
    const char *pk_want = json_string_value(json_object_get(vec, "publicKey"));
    json_t *jenv = json_object_get(vec, "envelope");
    json_t *jbody = json_object_get(vec, "body");
    const char *canon_want = json_string_value(json_object_get(vec, "canonicalHex"));
    const char *sig_want = json_string_value(json_object_get(vec, "signature"));
    assert_non_null(name);
    assert_non_null(seed_hex);
    assert_non_null(pk_want);
    assert_true(json_is_object(jenv));
    assert_true(json_is_string(jbody));
    assert_non_null(canon_want);
    assert_non_null(sig_want);

    unsigned char seed[32], pk[32], sk[64];
    size_t seed_len = 0;
    assert_int_equal(
        sodium_hex2bin(seed, sizeof seed, seed_hex, strlen(seed_hex), NULL, &seed_len, NULL), 0);
    assert_int_equal(seed_len, 32);
    crypto_sign_seed_keypair(pk, sk, seed);
    char pk_b64[FL_SIGN_PK_B64_SIZE];
    fl_b64_encode(pk, sizeof pk, pk_b64, sizeof pk_b64);
    assert_string_equal(pk_b64, pk_want);

    fl_envelope env;
    memset(&env, 0, sizeof env);
    const char *key;
    json_t *val;
    json_object_foreach(jenv, key, val) {
      size_t k = 0;
      while (k < nfields && strcmp(fields[k]->key, key) != 0)
        k++;
      if (k == nfields)
        fail_msg("vector %s: envelope field \"%s\" is not a signed field", name, key);
      assert_true(json_string_length(val) < fields[k]->size);
      memcpy(field_of(&env, k), json_string_value(val), json_string_length(val) + 1);
    }
    const char *body = json_string_value(jbody);
    size_t len = json_string_length(jbody);
    for (size_t b = 0; b < len; b++) {
      non_ascii |= (unsigned char)body[b] >= 0x80;
      newlines |= body[b] == '\n';
    }
    empty |= len == 0;

    /* Canonical bytes. */
    unsigned char *canon = NULL;
    size_t clen = 0;
    assert_int_equal(fl_sign_canonical(&env, body, len, &canon, &clen), 0);
    char *hex = malloc(2 * clen + 1);
    assert_non_null(hex);
    to_hex(canon, clen, hex);
    hex[2 * clen] = '\0';
    if (strcmp(hex, canon_want) != 0)
      fail_msg("vector %s: canonical bytes differ:\n got %s\nwant %s", name, hex, canon_want);
    free(hex);
    fl_free(canon);

    /* Signature: Ed25519 is deterministic. */
    assert_int_equal(fl_sign_envelope(&env, body, len, sk), 0);
    if (strcmp(env.sig, sig_want) != 0)
      fail_msg("vector %s: signature differs:\n got %s\nwant %s", name, env.sig, sig_want);
    assert_int_equal(fl_verify_envelope(&env, body, len, pk), 0);

    /* Any one signed field changed, added or removed breaks it. */
    for (size_t k = 0; k < nfields; k++) {
      fl_envelope t = env;
      char *fv = field_of(&t, k);
      if (fv[0])
        fv[0] ^= 0x01;
      else
        snprintf(fv, fields[k]->size, "x");
      if (fl_verify_envelope(&t, body, len, pk) != FL_EBADSIG)
        fail_msg("vector %s: verify passed with %s changed", name, fields[k]->key);
      if (field_of(&env, k)[0]) {
        t = env;
        field_of(&t, k)[0] = '\0';
        assert_int_equal(fl_verify_envelope(&t, body, len, pk), FL_EBADSIG);
      }
    }
    /* One body byte changed, or one more or fewer. */
    char *copy = malloc(len + 1);
    assert_non_null(copy);
    memcpy(copy, body, len + 1);
    for (size_t b = 0; b < len; b++) {
      copy[b] ^= 0x20;
      assert_int_equal(fl_verify_envelope(&env, copy, len, pk), FL_EBADSIG);
      copy[b] ^= 0x20;
    }
    copy[len] = 'x';
    assert_int_equal(fl_verify_envelope(&env, copy, len + 1, pk), FL_EBADSIG);
    if (len)
      assert_int_equal(fl_verify_envelope(&env, copy, len - 1, pk), FL_EBADSIG);
    free(copy);
    /* Another key. */
    unsigned char other_pk[32], other_sk[64];
    crypto_sign_keypair(other_pk, other_sk);
    assert_int_equal(fl_verify_envelope(&env, body, len, other_pk), FL_EBADSIG);
    /* A damaged or missing signature. */
    fl_envelope t = env;
    t.sig[5] = t.sig[5] == 'A' ? 'B' : 'A';
    assert_int_equal(fl_verify_envelope(&t, body, len, pk), FL_EBADSIG);
    t = env;
    t.sig[0] = '\0';
    assert_int_equal(fl_verify_envelope(&t, body, len, pk), FL_EBADSIG);
    t = env;
    snprintf(t.sig, sizeof t.sig, "not base64");
    assert_int_equal(fl_verify_envelope(&t, body, len, pk), FL_EBADSIG);
    t = env;
    t.sig[86] = '\0'; /* 64 bytes become 63 plus padding trouble */
    assert_int_equal(fl_verify_envelope(&t, body, len, pk), FL_EBADSIG);
  }
  /* The vectors cover what the issue asked for. */
  assert_true(non_ascii);
  assert_true(empty);
  assert_true(newlines);
  json_decref(root);
}

/* schema/envelope.json is the source of the wire contract: the C signer must
 * write the fields in its fieldOrder, after its prefix, and each field's
 * maxBytes must be what the fl_envelope slot holds. */
static void test_schema_matches_signer(void **state) {
  (void)state;
  json_error_t jerr;
  json_t *root = json_loads(fl_schema_envelope, 0, &jerr);
  if (!root)
    fail_msg("schema/envelope.json: %d: %s", jerr.line, jerr.text);
  json_t *canon = json_object_get(root, "canonical");
  assert_string_equal(json_string_value(json_object_get(canon, "prefix")), FL_SIGN_CANON_PREFIX);
  json_t *order = json_object_get(canon, "fieldOrder");
  assert_int_equal(json_array_size(order), nalways);
  json_t *present = json_object_get(canon, "whenPresent");
  assert_int_equal(json_array_size(present), nfields - nalways);

  fl_envelope env;
  memset(&env, 0, sizeof env);
  for (size_t k = 0; k < nfields; k++)
    snprintf(field_of(&env, k), fields[k]->size, "%c", (char)('a' + k));
  unsigned char *c = NULL;
  size_t n = 0;
  assert_int_equal(fl_sign_canonical(&env, "", 0, &c, &n), 0);
  const char *line = (const char *)c + strlen(FL_SIGN_CANON_PREFIX);
  for (size_t k = 0; k < nfields; k++) {
    const char *name = json_string_value(k < nalways ? json_array_get(order, k)
                                                     : json_array_get(present, k - nalways));
    assert_non_null(name);
    char want[64];
    snprintf(want, sizeof want, "%s:1:%c\n", name, (char)('a' + k));
    if (strncmp(line, want, strlen(want)) != 0)
      fail_msg("canonical field %zu: want %s", k, want);
    line += strlen(want);
  }
  assert_memory_equal(line, "body:0:", 7);
  fl_free(c);
  /* A field written only when present leaves no line when absent. */
  for (size_t k = nalways; k < nfields; k++)
    field_of(&env, k)[0] = '\0';
  assert_int_equal(fl_sign_canonical(&env, "", 0, &c, &n), 0);
  line = (const char *)c + strlen(FL_SIGN_CANON_PREFIX);
  for (size_t k = 0; k < nalways; k++)
    line += strlen(fields[k]->key) + strlen(":1:a\n");
  assert_memory_equal(line, "body:0:", 7);
  fl_free(c);

  size_t i;
  json_t *f;
  json_array_foreach(json_object_get(root, "fields"), i, f) {
    const char *name = json_string_value(json_object_get(f, "name"));
    size_t max = (size_t)json_integer_value(json_object_get(f, "maxBytes"));
    if (strcmp(name, "sig") == 0) {
      assert_int_equal(max, sizeof env.sig - 1);
      assert_true(json_is_false(json_object_get(f, "signed")));
      continue;
    }
    size_t k = 0;
    while (k < nfields && strcmp(fields[k]->key, name) != 0)
      k++;
    if (k == nfields)
      fail_msg("envelope.json field %s is not signed by sign.c", name);
    assert_int_equal(max, fields[k]->size - 1);
    assert_true(json_is_true(json_object_get(f, "signed")));
  }
  json_decref(root);
}

/* ---- canonical form details, base64, versions ---- */

static void test_canonical_shape(void **state) {
  (void)state;
  fl_envelope env;
  memset(&env, 0, sizeof env);
  snprintf(env.v, sizeof env.v, "1.0");
  snprintf(env.host, sizeof env.host, "h");
  unsigned char *c = NULL;
  size_t n = 0;
  assert_int_equal(fl_sign_canonical(&env, "a\nb", 3, &c, &n), 0);
  const char *want = "fleet-envelope/1\nv:3:1.0\nkind:0:\nmsgId:0:\ntraceId:0:\nfrom:0:\n"
                     "to:0:\ninReplyTo:0:\nturnId:0:\nspawnId:0:\nfromName:0:\nhost:1:h\nts:0:\n"
                     "expiresAt:0:\nbody:3:a\nb";
  assert_int_equal(n, strlen(want));
  assert_memory_equal(c, want, n);
  fl_free(c);
  /* sig is not covered. */
  assert_int_equal(fl_sign_canonical(&env, NULL, 0, &c, &n), 0);
  snprintf(env.sig, sizeof env.sig, "anything");
  unsigned char *c2 = NULL;
  size_t n2 = 0;
  assert_int_equal(fl_sign_canonical(&env, "", 0, &c2, &n2), 0);
  assert_int_equal(n, n2);
  assert_memory_equal(c, c2, n);
  fl_free(c);
  fl_free(c2);
  /* A NUL in the body is just a byte. */
  assert_int_equal(fl_sign_canonical(&env, "a\0b", 3, &c, &n), 0);
  assert_memory_equal(c + n - 3, "a\0b", 3);
  fl_free(c);

  /* Arguments. */
  assert_int_equal(fl_sign_canonical(&env, NULL, 1, &c, &n), FL_EINVAL);
  assert_int_equal(fl_sign_canonical(NULL, "", 0, &c, &n), FL_EINVAL);
  assert_int_equal(fl_sign_canonical(&env, "", FL_MAX_WIRE_BODY + 1, &c, &n), FL_ETOOBIG);
  memset(env.kind, 'K', sizeof env.kind); /* no NUL in the slot */
  assert_int_equal(fl_sign_canonical(&env, "", 0, &c, &n), FL_EINVAL);
  unsigned char sk[64], pk[32];
  crypto_sign_keypair(pk, sk);
  assert_int_equal(fl_sign_envelope(&env, "", 0, sk), FL_EINVAL);
  assert_string_equal(env.sig, "");
  snprintf(env.kind, sizeof env.kind, "SEND");

  /* A body at the cap signs and verifies. */
  char *big = malloc(FL_MAX_CONTENT);
  assert_non_null(big);
  memset(big, 'b', FL_MAX_CONTENT);
  assert_int_equal(fl_sign_envelope(&env, big, FL_MAX_CONTENT, sk), 0);
  assert_int_equal(fl_verify_envelope(&env, big, FL_MAX_CONTENT, pk), 0);
  big[FL_MAX_CONTENT / 2] = 'c';
  assert_int_equal(fl_verify_envelope(&env, big, FL_MAX_CONTENT, pk), FL_EBADSIG);
  free(big);

  /* Out of memory is reported, not mistaken for a bad signature. */
  assert_int_equal(fl_sign_envelope(&env, "x", 1, sk), 0);
  fl_alloc_fail_after(0);
  assert_int_equal(fl_verify_envelope(&env, "x", 1, pk), FL_ENOMEM);
  fl_alloc_fail_after(0);
  assert_int_equal(fl_sign_envelope(&env, "x", 1, sk), FL_ENOMEM);
  assert_string_equal(env.sig, "");
  fl_alloc_fail_after(-1);
}

static void test_base64(void **state) {
  (void)state;
  char out[16];
  unsigned char bin[8];
  size_t n = 99;
  assert_int_equal(fl_b64_encode((const unsigned char *)"fo", 2, out, sizeof out), 0);
  assert_string_equal(out, "Zm8=");
  assert_int_equal(fl_b64_encode((const unsigned char *)"foob", 4, out, 8), FL_ETOOBIG);
  assert_int_equal(fl_b64_encode(NULL, 0, out, sizeof out), 0);
  assert_string_equal(out, "");
  assert_int_equal(fl_b64_decode("Zm9vYg==", bin, sizeof bin, &n), 0);
  assert_int_equal(n, 4);
  assert_memory_equal(bin, "foob", 4);
  assert_int_equal(fl_b64_decode("", bin, sizeof bin, &n), 0);
  assert_int_equal(n, 0);
  /* Unpadded, URL-safe, whitespace, junk after, non-canonical bits. */
  assert_int_equal(fl_b64_decode("Zm9vYg", bin, sizeof bin, &n), FL_EINVAL);
  assert_int_equal(fl_b64_decode("-_-_", bin, sizeof bin, &n), FL_EINVAL);
  assert_int_equal(fl_b64_decode("Zm9v Yg==", bin, sizeof bin, &n), FL_EINVAL);
  assert_int_equal(fl_b64_decode("Zm8=Zm8=", bin, sizeof bin, &n), FL_EINVAL);
  assert_int_equal(fl_b64_decode("Zm9=", bin, sizeof bin, &n), FL_EINVAL);
  /* Too long for the buffer. */
  assert_int_equal(fl_b64_decode("Zm9vYmFyYmF6", bin, 8, &n), FL_ETOOBIG);
  assert_int_equal(fl_b64_decode("Zm9vYmFyYg==", bin, 7, &n), 0);
  assert_int_equal(n, 7);
  assert_int_equal(fl_b64_decode(NULL, bin, sizeof bin, &n), FL_EINVAL);
}

static void test_envelope_major(void **state) {
  (void)state;
  struct {
    const char *v;
    int major;
  } cases[] = {
      {"1.0", 1},   {"1.12", 1},  {"2.0", 2},  {"0.9", 0},      {"1234.56", 1234}, {"10.1", 10},
      {"", -1},     {"1", -1},    {"1.", -1},  {".1", -1},      {"1.0.0", -1},     {"v1.0", -1},
      {"-1.0", -1}, {"1.0 ", -1}, {"1,0", -1}, {"12345.0", -1},
  };
  fl_envelope env;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    memset(&env, 0, sizeof env);
    snprintf(env.v, sizeof env.v, "%s", cases[i].v);
    if (fl_envelope_major(&env) != cases[i].major)
      fail_msg("\"%s\": got %d, want %d", env.v, fl_envelope_major(&env), cases[i].major);
  }
  memset(env.v, '1', sizeof env.v); /* no NUL */
  assert_int_equal(fl_envelope_major(&env), -1);
  assert_int_equal(fl_envelope_major(NULL), -1);
}

int main(void) {
  if (sodium_init() < 0)
    return 1;
  fl_alloc_init();
  signed_fields();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_identity_create_and_reload, setup, teardown),
      cmocka_unit_test_setup_teardown(test_identity_mode_refused, setup, teardown),
      cmocka_unit_test_setup_teardown(test_identity_malformed, setup, teardown),
      cmocka_unit_test_setup_teardown(test_identity_other_host, setup, teardown),
      cmocka_unit_test_setup_teardown(test_identity_arguments, setup, teardown),
      cmocka_unit_test_setup_teardown(test_write_file_no_replace, setup, teardown),
      cmocka_unit_test_setup_teardown(test_peers_pin, setup, teardown),
      cmocka_unit_test_setup_teardown(test_peers_bad_input, setup, teardown),
      cmocka_unit_test_setup_teardown(test_peers_alloc_failure, setup, teardown),
      cmocka_unit_test(test_vectors),
      cmocka_unit_test(test_schema_matches_signer),
      cmocka_unit_test(test_canonical_shape),
      cmocka_unit_test(test_base64),
      cmocka_unit_test(test_envelope_major),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
