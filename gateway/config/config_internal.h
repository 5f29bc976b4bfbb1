/* config_internal.h — what the configuration's files share (config.c: the
 * layers, the file and its top-level, broker and nudge keys;
 * config_profiles.c: the spawn profiles). Nothing outside them includes
 * this. Every call fills err through fl_errf with the file and key path. */
#ifndef FL_CONFIG_INTERNAL_H
#define FL_CONFIG_INTERNAL_H

#include <jansson.h>
#include <stddef.h>

#include "gateway/config/config.h"

/* What a JSON value is, for "must be a string, not a number". Static. */
const char *fl_config_json_kind(const json_t *v);
/* The key as the user wrote it: "uri" inside "broker" is "broker.uri". */
void fl_config_key_name(char *out, size_t n, const char *section, const char *key);
/* A string at obj.key, if present, into dst (size n). 0 or FL_ECONFIG. */
int fl_config_file_str(json_t *obj, const char *section, const char *key, char *dst, size_t n,
                       const char *file, char *err, size_t errlen);
/* A true/false key: sets *dst to 1 or 0 when present. 0 or FL_ECONFIG. */
int fl_config_file_bool(json_t *obj, const char *section, const char *key, int *dst,
                        const char *file, char *err, size_t errlen);
/* A whole number from 0 to max at obj.key, if present, into dst. */
int fl_config_file_ms(json_t *obj, const char *section, const char *key, unsigned *dst, long max,
                      const char *file, char *err, size_t errlen);
/* Fails on the first key of obj not in known (NULL-ended), listing them. */
int fl_config_known_keys(json_t *obj, const char *section, const char *const known[],
                         const char *file, char *err, size_t errlen);
/* profiles: {name: profile} (borrowed) onto cfg; replaces any profiles
 * applied before. 0 or FL_ECONFIG. */
int fl_config_apply_profiles(fl_config *cfg, json_t *profiles, const char *file, char *err,
                             size_t errlen);

/* rooms: {listen, syncIntervalS, maxMessages} and claims: {settleMs}
 * (borrowed) onto cfg (config_rooms.c). 0 or FL_ECONFIG. */
int fl_config_apply_rooms(fl_config *cfg, json_t *rooms, const char *file, char *err,
                          size_t errlen);
int fl_config_apply_claims(fl_config *cfg, json_t *claims, const char *file, char *err,
                           size_t errlen);

/* http: {listen, requireToken} (borrowed) onto cfg (config_http.c). 0 or
 * FL_ECONFIG. */
int fl_config_apply_http(fl_config *cfg, json_t *http, const char *file, char *err, size_t errlen);

/* authority: {stop: [...], spawn: [...], approve: [...]} (borrowed) onto
 * cfg (config_authority.c). 0 or FL_ECONFIG. */
int fl_config_apply_authority(fl_config *cfg, json_t *authority, const char *file, char *err,
                              size_t errlen);

/* hooks: {approveTimeoutMs} (borrowed) onto cfg (config_hooks.c). 0 or
 * FL_ECONFIG. */
int fl_config_apply_hooks(fl_config *cfg, json_t *hooks, const char *file, char *err,
                          size_t errlen);

#endif
