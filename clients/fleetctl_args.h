/* fleetctl_args.h — fleetctl's command line: the options and the words
 * after them, as one fl_ctl_opts.
 *
 * Options may come before or after the command, as "--name VALUE" or
 * "--name=VALUE"; "--" ends them (for CONTENT that starts with '-'). Values
 * are range-checked here (--wait, --max); which command takes which option,
 * and how many arguments, is the command table's business (fleetctl.c).
 * The strings in fl_ctl_opts are borrowed from argv. */
#ifndef FL_FLEETCTL_ARGS_H
#define FL_FLEETCTL_ARGS_H

/* Command-line arguments after the command word: send's TO CONTENT and peer
 * add's add HOST PUBKEY URL are the most any command takes. */
#define FL_CTL_MAX_ARGS 4

typedef struct fl_ctl_opts {
  const char *socket; /* --socket, or NULL */
  int json;
  const char *as;
  long wait_s; /* -1 = not given */
  long max;    /* -1 = not given */
  const char *from;
  const char *host;  /* spawn --host */
  const char *name;  /* spawn --name */
  const char *brief; /* spawn --brief */
  long older_than_s; /* dlq purge --older-than, in seconds; -1 = not given */
  const char *dir;   /* profile --dir */
  const char *cwd;   /* profile --cwd */
  const char *check; /* hooks --check */
  const char *cmd;
  const char *args[FL_CTL_MAX_ARGS]; /* the first FL_CTL_MAX_ARGS of them */
  int nargs;                         /* all of them, kept or not */
  int help;
} fl_ctl_opts;

/* Fills o (set wait_s and max to -1 first) from argv. Returns 0, or
 * FL_EXIT_USAGE after reporting the usage error (fleetctl_report.h). */
int fl_ctl_parse_args(int argc, char **argv, fl_ctl_opts *o);

#endif
