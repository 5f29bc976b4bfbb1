/* http_libs.h — libcurl and libmicrohttpd, loaded at run time.
 *
 * fleetd does not link either library: both, with what they pull in (GnuTLS,
 * nettle, gmp, p11-kit, Kerberos, LDAP, SASL, libssh2, nghttp2, ...), cost
 * about 6 MiB of resident memory in every process that maps them, used or
 * not (symbol and relocation tables, relocated data, constructors, the pages
 * the kernel maps around each one touched): bench/README.md.
 * A gateway with neither "rooms" nor "http" in its config never loads them;
 * one that pulls rooms loads libcurl when its puller starts, and one that
 * serves HTTP (rooms.listen, http.listen) loads libmicrohttpd when its first
 * server starts. Each table is filled once, under a lock, and never
 * changes after; a library stays loaded until the process exits.
 *
 * The headers still come from the libraries' dev packages at build time; the
 * sonames are the ABI those headers describe. */
#ifndef FL_HTTP_LIBS_H
#define FL_HTTP_LIBS_H

#include <curl/curl.h>
#include <microhttpd.h>
#include <stddef.h>

/* The soname loaded for each (the ABI of the headers built against). */
#define FL_HTTP_CURL_SONAME "libcurl.so.4"
#define FL_HTTP_MHD_SONAME "libmicrohttpd.so.12"

/* The libcurl functions gateway/http/http_pull.c calls: X(field, symbol). */
#define FL_CURL_FNS(X)                                                                             \
  X(global_init, curl_global_init)                                                                 \
  X(global_cleanup, curl_global_cleanup)                                                           \
  X(multi_init, curl_multi_init)                                                                   \
  X(multi_cleanup, curl_multi_cleanup)                                                             \
  X(multi_setopt, curl_multi_setopt)                                                               \
  X(multi_add_handle, curl_multi_add_handle)                                                       \
  X(multi_remove_handle, curl_multi_remove_handle)                                                 \
  X(multi_socket_action, curl_multi_socket_action)                                                 \
  X(multi_assign, curl_multi_assign)                                                               \
  X(multi_info_read, curl_multi_info_read)                                                         \
  X(easy_init, curl_easy_init)                                                                     \
  X(easy_cleanup, curl_easy_cleanup)                                                               \
  X(easy_setopt, curl_easy_setopt)                                                                 \
  X(easy_getinfo, curl_easy_getinfo)                                                               \
  X(easy_strerror, curl_easy_strerror)

/* The libmicrohttpd functions gateway/http/http_serve.c calls. */
#define FL_MHD_FNS(X)                                                                              \
  X(start_daemon, MHD_start_daemon)                                                                \
  X(stop_daemon, MHD_stop_daemon)                                                                  \
  X(get_daemon_info, MHD_get_daemon_info)                                                          \
  X(get_connection_info, MHD_get_connection_info)                                                  \
  X(get_connection_values, MHD_get_connection_values)                                              \
  X(lookup_connection_value, MHD_lookup_connection_value)                                          \
  X(suspend_connection, MHD_suspend_connection)                                                    \
  X(resume_connection, MHD_resume_connection)                                                      \
  X(create_response_from_buffer, MHD_create_response_from_buffer)                                  \
  X(create_response_from_callback, MHD_create_response_from_callback)                              \
  X(add_response_header, MHD_add_response_header)                                                  \
  X(queue_response, MHD_queue_response)                                                            \
  X(destroy_response, MHD_destroy_response)

/* A pointer to the library's own function, with its exact prototype. */
#define FL_HTTP_FN_FIELD(field, sym) __typeof__(sym) *field;

typedef struct fl_curl_fns {
  FL_CURL_FNS(FL_HTTP_FN_FIELD)
} fl_curl_fns;

typedef struct fl_mhd_fns {
  FL_MHD_FNS(FL_HTTP_FN_FIELD)
} fl_mhd_fns;

/* Loads libcurl (once; later calls return the same table). 0 and *out
 * (borrowed, valid until exit), or FL_ECONFIG with err saying which library
 * is missing and what installs it. May block on the disk: call at start-up. */
int fl_http_curl(const fl_curl_fns **out, char *err, size_t errlen);
/* The same for libmicrohttpd. */
int fl_http_mhd(const fl_mhd_fns **out, char *err, size_t errlen);

/* The mechanism under both, for its tests: dlopens soname and sets syms[i]
 * to the address of names[i] (n of them). 0 and *handle, or FL_ECONFIG with
 * err naming the soname, what failed (dlerror), `what` (the feature that
 * needs it) and `pkg` (the package that installs it); on failure nothing
 * stays loaded. */
int fl_http_lib_open(const char *soname, const char *what, const char *pkg,
                     const char *const *names, void **syms, size_t n, void **handle, char *err,
                     size_t errlen);

#endif
