/* fleetctl_args.c — fleetctl's options (see fleetctl_args.h).
 *
 * Every option error is a usage error naming the option and what it takes;
 * arguments past FL_CTL_MAX_ARGS are still counted, so the command's own
 * check can say how many it takes instead of a generic "too many". */
#include "clients/fleetctl_args.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "clients/fleetctl_report.h"
#include "common/error.h"
#include "common/limits.h"

/* Parses a whole decimal in [lo, hi]. Returns 0 or FL_EINVAL. */
static int parse_long(const char *s, long lo, long hi, long *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi)
    return FL_EINVAL;
  *out = v;
  return 0;
}

/* "90", "90s", "15m", "2h", "7d" into seconds (at most ten years). */
static int parse_duration(const char *s, long *out) {
  char *end;
  errno = 0;
  long n = strtol(s, &end, 10);
  long unit = 1;
  if (end == s || n < 0 || errno)
    return -1;
  if (*end == 's' || *end == 'm' || *end == 'h' || *end == 'd') {
    unit = *end == 's' ? 1 : *end == 'm' ? 60 : *end == 'h' ? 3600 : 86400;
    end++;
  }
  if (*end || n > 315360000L / unit)
    return -1;
  *out = n * unit;
  return 0;
}

enum ctl_opt_match { CTL_OPT_OTHER, CTL_OPT_FOUND, CTL_OPT_NO_VALUE };

/* Matches "--name VALUE" or "--name=VALUE": CTL_OPT_FOUND with *val set,
 * CTL_OPT_OTHER when arg is not this option, CTL_OPT_NO_VALUE when the value
 * is missing. */
static enum ctl_opt_match opt_value(const char *name, int argc, char **argv, int *i,
                                    const char **val) {
  size_t n = strlen(name);
  const char *a = argv[*i];
  if (strncmp(a, name, n) != 0)
    return CTL_OPT_OTHER;
  if (a[n] == '=') {
    *val = a + n + 1;
    return CTL_OPT_FOUND;
  }
  if (a[n] != '\0')
    return CTL_OPT_OTHER;
  if (*i + 1 >= argc)
    return CTL_OPT_NO_VALUE;
  *val = argv[++*i];
  return CTL_OPT_FOUND;
}

int fl_ctl_parse_args(int argc, char **argv, fl_ctl_opts *o) {
  int end_opts = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!end_opts && a[0] == '-' && a[1] != '\0') {
      const char *v = NULL;
      enum ctl_opt_match m;
      if (strcmp(a, "--") == 0) {
        end_opts = 1;
      } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
        o->help = 1;
      } else if (strcmp(a, "--json") == 0) {
        o->json = 1;
      } else if ((m = opt_value("--socket", argc, argv, &i, &v)) != CTL_OPT_OTHER) {
        if (m == CTL_OPT_NO_VALUE || !*v)
          return fl_ctl_usage_fail(NULL, "--socket needs a PATH");
        o->socket = v;
      } else if ((m = opt_value("--as", argc, argv, &i, &v)) != CTL_OPT_OTHER) {
        if (m == CTL_OPT_NO_VALUE || !*v)
          return fl_ctl_usage_fail(NULL, "--as needs a NAME");
        o->as = v;
      } else if ((m = opt_value("--wait", argc, argv, &i, &v)) != CTL_OPT_OTHER) {
        if (m == CTL_OPT_NO_VALUE || parse_long(v, 0, FL_MAX_WAIT_S, &o->wait_s) != 0)
          return fl_ctl_usage_fail(NULL, "--wait needs whole SECONDS from 0 to %d", FL_MAX_WAIT_S);
      } else if ((m = opt_value("--max", argc, argv, &i, &v)) != CTL_OPT_OTHER) {
        if (m == CTL_OPT_NO_VALUE || parse_long(v, 1, FL_MAX_POLL, &o->max) != 0)
          return fl_ctl_usage_fail(NULL, "--max needs a count from 1 to %d", FL_MAX_POLL);
      } else if ((m = opt_value("--from", argc, argv, &i, &v)) != CTL_OPT_OTHER) {
        if (m == CTL_OPT_NO_VALUE || !*v)
          return fl_ctl_usage_fail(NULL, "--from needs a name or gid");
        o->from = v;
      } else if ((m = opt_value("--host", argc, argv, &i, &v)) != CTL_OPT_OTHER) {
        if (m == CTL_OPT_NO_VALUE || !*v)
          return fl_ctl_usage_fail(NULL, "--host needs a HOST id");
        o->host = v;
      } else if ((m = opt_value("--name", argc, argv, &i, &v)) != CTL_OPT_OTHER) {
        if (m == CTL_OPT_NO_VALUE || !*v)
          return fl_ctl_usage_fail(NULL, "--name needs a NAME");
        o->name = v;
      } else if ((m = opt_value("--older-than", argc, argv, &i, &v)) != CTL_OPT_OTHER) {
        if (m == CTL_OPT_NO_VALUE || parse_duration(v, &o->older_than_s) != 0)
          return fl_ctl_usage_fail(NULL, "--older-than needs a duration: N, Ns, Nm, Nh or Nd");
      } else if ((m = opt_value("--brief", argc, argv, &i, &v)) != CTL_OPT_OTHER) {
        if (m == CTL_OPT_NO_VALUE || !*v)
          return fl_ctl_usage_fail(NULL, "--brief needs TEXT");
        o->brief = v;
      } else if ((m = opt_value("--dir", argc, argv, &i, &v)) != CTL_OPT_OTHER) {
        if (m == CTL_OPT_NO_VALUE || !*v)
          return fl_ctl_usage_fail(NULL, "--dir needs a DIR");
        o->dir = v;
      } else if ((m = opt_value("--cwd", argc, argv, &i, &v)) != CTL_OPT_OTHER) {
        if (m == CTL_OPT_NO_VALUE || !*v)
          return fl_ctl_usage_fail(NULL, "--cwd needs a DIR");
        o->cwd = v;
      } else if ((m = opt_value("--check", argc, argv, &i, &v)) != CTL_OPT_OTHER) {
        if (m == CTL_OPT_NO_VALUE || !*v)
          return fl_ctl_usage_fail(NULL, "--check needs a settings FILE");
        o->check = v;
      } else {
        return fl_ctl_usage_fail(NULL, "unknown option '%s'", a);
      }
    } else if (!o->cmd) {
      o->cmd = a;
    } else {
      /* Counted past the cap too, so the command's own check can say how
       * many it takes; only the first FL_CTL_MAX_ARGS are kept. */
      if (o->nargs < FL_CTL_MAX_ARGS)
        o->args[o->nargs] = a;
      o->nargs++;
    }
  }
  return 0;
}
