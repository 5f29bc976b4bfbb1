/* test_http_libs.c — unit tests for gateway/http/http_libs.c.
 *
 * The loader's failures are what an operator reads when fleetd starts with
 * rooms or http on a machine without libcurl or libmicrohttpd: a missing
 * library and a library without a symbol must each name the soname, the
 * feature and the package, and leave nothing loaded. The two real tables
 * must load here (the build has both libraries) and fill every entry. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* After the four above: cmocka.h uses them without including them. */
#include <cmocka.h>

#include <string.h>

#include "common/error.h"
#include "gateway/http/http_libs.h"

static void test_missing_library_names_it(void **state) {
  (void)state;
  const char *names[] = {"strlen"};
  void *syms[1] = {(void *)1};
  void *h = (void *)1;
  char err[512] = "";
  int rc = fl_http_lib_open("libfleet-absent.so.9", "pulling rooms from peers", "libfleet9", names,
                            syms, 1, &h, err, sizeof err);
  assert_int_equal(rc, FL_ECONFIG);
  assert_null(h);
  assert_non_null(strstr(err, "libfleet-absent.so.9"));
  assert_non_null(strstr(err, "pulling rooms from peers"));
  assert_non_null(strstr(err, "install the package libfleet9"));
}

static void test_missing_symbol_names_it(void **state) {
  (void)state;
  const char *names[] = {"strlen", "fl_no_such_function"};
  void *syms[2] = {0};
  void *h = (void *)1;
  char err[512] = "";
  int rc =
      fl_http_lib_open("libc.so.6", "serving HTTP", "libc6", names, syms, 2, &h, err, sizeof err);
  assert_int_equal(rc, FL_ECONFIG);
  assert_null(h);
  assert_non_null(strstr(err, "fl_no_such_function"));
  assert_non_null(strstr(err, "libc.so.6"));
}

static void test_both_tables_load(void **state) {
  (void)state;
  char err[512] = "";
  const fl_curl_fns *c = NULL;
  assert_int_equal(fl_http_curl(&c, err, sizeof err), 0);
  assert_non_null(c);
#define FL_CHECK(field, sym) assert_non_null(c->field);
  FL_CURL_FNS(FL_CHECK)
#undef FL_CHECK
  const fl_curl_fns *again = NULL;
  assert_int_equal(fl_http_curl(&again, err, sizeof err), 0);
  assert_ptr_equal(again, c);
  assert_non_null(strstr(c->easy_strerror(CURLE_OK), "No error"));

  const fl_mhd_fns *m = NULL;
  assert_int_equal(fl_http_mhd(&m, err, sizeof err), 0);
  assert_non_null(m);
#define FL_CHECK(field, sym) assert_non_null(m->field);
  FL_MHD_FNS(FL_CHECK)
#undef FL_CHECK
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_missing_library_names_it),
      cmocka_unit_test(test_missing_symbol_names_it),
      cmocka_unit_test(test_both_tables_load),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
