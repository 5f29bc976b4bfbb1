/* http_libs.c — libcurl and libmicrohttpd loaded on first use (see
 * http_libs.h): dlopen once, every symbol looked up, the table filled, under
 * one lock; a library that is missing, or lacks a symbol, is a start-up
 * error naming it and its package. */
#include "gateway/http/http_libs.h"

#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

#include "common/error.h"

int fl_http_lib_open(const char *soname, const char *what, const char *pkg,
                     const char *const *names, void **syms, size_t n, void **handle, char *err,
                     size_t errlen) {
  *handle = NULL;
  /* RTLD_LOCAL: its symbols serve only the lookups below. RTLD_NOW: a
   * library too old for the headers fails here, not on first use. */
  void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *why = dlerror();
    fl_errf(err, errlen, "%s needs %s, which cannot be loaded (%s); install the package %s", what,
            soname, why ? why : "not found", pkg);
    return FL_ECONFIG;
  }
  for (size_t i = 0; i < n; i++) {
    dlerror();
    syms[i] = dlsym(h, names[i]);
    if (!syms[i]) {
      fl_errf(err, errlen, "%s needs %s with %s, which it lacks; install a newer %s", what, soname,
              names[i], pkg);
      dlclose(h);
      return FL_ECONFIG;
    }
  }
  *handle = h;
  return 0;
}

static pthread_mutex_t fl_libs_mu = PTHREAD_MUTEX_INITIALIZER;

#define FL_SYM_NAME(field, sym) #sym,
#define FL_ONE(field, sym) +1
#define FL_SET(field, sym) memcpy(&t->field, &syms[i++], sizeof t->field);

static fl_curl_fns fl_curl_table;
static const fl_curl_fns *fl_curl_loaded;

int fl_http_curl(const fl_curl_fns **out, char *err, size_t errlen) {
  static const char *const names[] = {FL_CURL_FNS(FL_SYM_NAME)};
  void *syms[0 FL_CURL_FNS(FL_ONE)];
  int rc = 0;
  pthread_mutex_lock(&fl_libs_mu);
  if (!fl_curl_loaded) {
    void *h;
    rc = fl_http_lib_open(FL_HTTP_CURL_SONAME, "pulling rooms from peers (\"rooms\")",
                          "libcurl4 (or libcurl4-openssl-dev)", names, syms,
                          sizeof syms / sizeof *syms, &h, err, errlen);
    if (rc == 0) {
      fl_curl_fns *t = &fl_curl_table;
      size_t i = 0;
      FL_CURL_FNS(FL_SET)
      fl_curl_loaded = t;
    }
  }
  *out = fl_curl_loaded;
  pthread_mutex_unlock(&fl_libs_mu);
  return rc;
}

static fl_mhd_fns fl_mhd_table;
static const fl_mhd_fns *fl_mhd_loaded;

int fl_http_mhd(const fl_mhd_fns **out, char *err, size_t errlen) {
  static const char *const names[] = {FL_MHD_FNS(FL_SYM_NAME)};
  void *syms[0 FL_MHD_FNS(FL_ONE)];
  int rc = 0;
  pthread_mutex_lock(&fl_libs_mu);
  if (!fl_mhd_loaded) {
    void *h;
    rc = fl_http_lib_open(FL_HTTP_MHD_SONAME, "serving HTTP (\"http.listen\" or \"rooms.listen\")",
                          "libmicrohttpd12 (or libmicrohttpd-dev)", names, syms,
                          sizeof syms / sizeof *syms, &h, err, errlen);
    if (rc == 0) {
      fl_mhd_fns *t = &fl_mhd_table;
      size_t i = 0;
      FL_MHD_FNS(FL_SET)
      fl_mhd_loaded = t;
    }
  }
  *out = fl_mhd_loaded;
  pthread_mutex_unlock(&fl_libs_mu);
  return rc;
}
