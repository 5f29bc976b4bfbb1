/* gw_config.h — the gateway's configuration as the daemon hands it over:
 * fl_gw_config and the types it is made of (nudges, spawn profiles, the
 * forward path's bounds, authority lists).
 *
 * config.c fills it (defaults, file, environment, flags); fl_gw_new
 * (gateway/gateway.h) copies it into the gateway, whose modules read it.
 * The MCP layer never sees it. Plain data: every string NUL-terminated. */
#ifndef FL_GW_CONFIG_H
#define FL_GW_CONFIG_H

#include <stddef.h>

#include "common/limits.h"

typedef struct fl_nudge_config {
  int enabled;
  unsigned first_ms;   /* delay from a message being held to the first nudge */
  unsigned backoff_ms; /* first reminder gap; doubles after each reminder */
  unsigned max_ms;     /* cap on the reminder gap */
  char text[256];      /* the line typed into the pane */
  /* The line is typed only when the pane is idle with an empty input: its
   * cursor line matches prompt (a POSIX ERE; "" = no prompt test) and the
   * screen has not changed for quiet_ms (0 = no quiet test). */
  char prompt[256];
  unsigned quiet_ms;
} fl_nudge_config;

/* One spawn profile (config "profiles.<name>"), validated by config.c:
 * every string NUL-terminated, name, role and groups by the name rule,
 * prompt and busy POSIX EREs that compile. What it runs (command argv and env)
 * stays on this host: presence and fleet_list announce only name, backend,
 * role and groups. */
typedef struct fl_profile {
  char name[FL_MAX_NAME + 1];
  char backend[8]; /* "tmux" or "exec" */
  char role[FL_MAX_ROLE + 1];
  char groups[FL_MAX_GROUPS][FL_MAX_GROUP_NAME + 1];
  size_t ngroups;
  char cwd[FL_MAX_PATH];              /* "" = the gateway's working directory */
  char prompt[FL_MAX_PROFILE_PROMPT]; /* "" = none given */
  /* A POSIX ERE for a line the agent shows only while it is at work
   * (busy; "" = none given): a screen with such a line is busy even when
   * its cursor line looks like an empty prompt and it is still. */
  char busy[FL_MAX_PROFILE_PROMPT];
  /* The leading characters the agent treats as commands (commandChars;
   * FL_INJECT_COMMAND_CHARS_DEFAULT when not given, "" = none). */
  char command_chars[FL_MAX_COMMAND_CHARS + 1];
  unsigned ready_timeout_s;
  unsigned quiet_ms;
  /* {"command":[argv...],"env":{name:value...}} as compact JSON: argv has
   * 1..FL_MAX_PROFILE_ARGS strings, env at most FL_MAX_PROFILE_ENV. */
  char launch[FL_MAX_PROFILE_LAUNCH];
} fl_profile;

/* The forward path's bounds (config "inject"). */
typedef struct fl_inject_config {
  unsigned timeout_s; /* a brief not typed within this is withdrawn and reported failed */
  int on_draft_fail;  /* 1: a brief meeting a draft in the input line fails; 0: it waits */
} fl_inject_config;

/* One authority list: entries "<host>", "<name>@<host>" or "role:<role>";
 * set 0 when the key is absent (the defaults alone apply). */
typedef struct fl_authority {
  char v[FL_MAX_AUTHORITY][FL_MAX_AUTHORITY_ENTRY + 1];
  size_t n;
  int set;
} fl_authority;

typedef struct fl_gw_config {
  char host_id[128];
  char state_dir[1024];
  char socket[1024];
  char broker_uri[1024];
  char broker_ca_file[1024];
  char broker_queue_type[16];    /* "classic" (default) or "quorum" */
  unsigned broker_prefetch;      /* 0 = the broker link's default */
  unsigned broker_heartbeat_s;   /* 0 = the broker link's default */
  unsigned presence_interval_ms; /* presence beat period */
  unsigned presence_ttl_ms;      /* a remote entry unheard this long reads offline */
  int store_sync_full;           /* store.synchronous: 1 "full", 0 "normal" (default) */
  unsigned store_max_seen;       /* store.maxSeen: the seen-set's count bound; 0 = FL_MAX_SEEN */
  int broker_no_seal;            /* broker.seal: false — bodies cross the broker in clear */
  int broker_accept_unsealed;    /* broker.acceptUnsealed: take a peer's body in clear */
  int broker_no_pair_seal;       /* broker.pairSeal: false — always the signed form */
  fl_nudge_config nudge;
  fl_inject_config inject;
  fl_profile profiles[FL_MAX_PROFILES]; /* sorted by name */
  size_t nprofiles;
  /* Lead-to-lead mailboxes (config "coordinator"): the coordinator vhost's
   * URI ("" = none) and this fleet's name, the default coordId suffix. */
  char coord_uri[1024];
  char coord_fleet[FL_MAX_NAME + 1];
  /* Room federation (config "rooms"); rooms_on 0 = off (room tools read
   * degraded). */
  int rooms_on;
  char rooms_listen[128];         /* "HOST:PORT" served; "" = serve nothing */
  unsigned rooms_sync_interval_s; /* pull period */
  unsigned rooms_max_messages;    /* cap per room; the oldest are dropped */
  unsigned claims_settle_ms;      /* 0 = the transport's default */
  /* The dashboard, JSON API and /metrics (config "http"); http_on 0 = off.
   * http_require_token: 1, 0, or -1 = only off loopback. */
  int http_on;
  char http_listen[128];
  int http_require_token;
  /* Who may act on this host beyond the defaults (config "authority"; see
   * spawn.h for how an entry matches). */
  fl_authority auth_stop, auth_spawn, auth_approve;
  /* How long a permission request waits for a lead's fleet_approve
   * (config "hooks.approveTimeoutMs"; 0 = it never waits). */
  unsigned hooks_approve_timeout_ms;
} fl_gw_config;

#endif
