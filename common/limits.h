/* limits.h — every cap fleet enforces, in one place.
 *
 * Each buffer that grows with outside input has a cap named here. Going over
 * a cap is a clear error (and, for a peer, a closed connection); it is never
 * unbounded growth. Change a number here and every module follows. */
#ifndef FL_LIMITS_H
#define FL_LIMITS_H

/* One JSON-RPC line from a client. 4 MiB leaves room for a maximal message
 * content plus JSON escaping, and still bounds a hostile client. */
#define FL_MAX_LINE (4u * 1024u * 1024u)

/* Message content in bytes (UTF-8). 1 MiB is far above any brief an agent
 * writes, and small enough to hold thousands in SQLite. */
#define FL_MAX_CONTENT (1024u * 1024u)
/* A message body as it travels on the broker: the content, sealed to its
 * recipient gateway, is 40 bytes longer (a 24-byte nonce and a 16-byte MAC,
 * gateway/proto/seal.h). */
#define FL_MAX_WIRE_BODY (FL_MAX_CONTENT + 40u)

/* Bytes queued for one client socket that it has not read yet. A client that
 * stops reading is disconnected rather than growing our memory. */
#define FL_MAX_OUTQ (16u * 1024u * 1024u)

/* One tool result written straight as JSON (fleet_list's roster,
 * gateway/core/list.c). Its response line carries it twice, the second time
 * escaped as text (a roster's is about 10% longer: every quote gets a
 * backslash), so 6 MiB keeps the line well inside FL_MAX_OUTQ. That is about
 * 30,000 entities of 200 bytes each. */
#define FL_MAX_RESULT_JSON (6u * 1024u * 1024u)

/* Past this many unsent bytes a client's requests are not read until it
 * reads its answers: a client that floods and never reads stalls only
 * itself, well before FL_MAX_OUTQ would drop it. */
#define FL_OUTQ_PAUSE (1024u * 1024u)
/* A line this long or longer raises its client's socket send buffer to
 * hold it, up to FL_SNDBUF_MAX (mcp/server.c): below it the system's
 * default (about 200 KiB) takes a line in one or two parts anyway. The
 * maximum holds a fleet_list of about 10,000 entities whole; it is also
 * what a client that stops reading can leave in the kernel on top of
 * FL_MAX_OUTQ in fleetd, so it stays a fraction of that. */
#define FL_SNDBUF_RAISE_AT (256u * 1024u)
#define FL_SNDBUF_MAX (4u * 1024u * 1024u)

/* Lines served from one client before the others get a turn. */
#define FL_LINES_PER_TURN 16

/* Nesting depth of one JSON-RPC message; MCP needs a handful of levels.
 * Deeper lines are refused before they are parsed. */
#define FL_MAX_JSON_DEPTH 64

/* Messages held for one entity. Past this, sends to it fail with FL_EFULL. */
#define FL_MAX_HELD_PER_ENTITY 10000

/* Concurrent client connections on the socket. */
#define FL_MAX_CLIENTS 1024

/* Bounded waits: MCP clients time out long calls (commonly at 60 s), so a
 * waiting tool call never outlives 55 s; the default leaves margin too. */
#define FL_MAX_WAIT_S 55

/* The forward path: a sender waits for word that its brief was typed until
 * the brief's typing deadline plus this margin. It covers one delivery (a
 * look, the typing and its checks take well under a second; each check is
 * bounded at 3 s) and the receipt's trip back; hosts' clocks must agree
 * far better than this (NTP). */
#define FL_INJECT_MARGIN_MS 10000
/* A stop of another host's agent waits this long for that host's answer:
 * it only closes a pane and deletes an inbox there. */
#define FL_REMOTE_STOP_WAIT_S 15

/* fleet-hook (clients/fleet-hook.c), the client an agent's hooks run. A
 * report (prompt submitted, turn stopped, a notification) is one short call:
 * a fleetd that does not answer in FL_HOOK_CALL_S is treated as absent, so
 * the agent is never held up by fleet. A permission request waits up to
 * FL_HOOK_APPROVE_WAIT_S for a lead's fleet_approve, then leaves the agent's
 * own dialog to its user. The waiter an idle session keeps (an asyncRewake
 * hook) lives a day at most: after that the session is reached by typing,
 * as one without hooks. The summary of a tool's input that a BLOCKED
 * message carries is cut at FL_HOOK_SUMMARY_MAX bytes: enough to see what
 * the tool would do, bounded whatever the tool's input. */
#define FL_HOOK_CALL_S 5
#define FL_HOOK_APPROVE_WAIT_S 120
#define FL_HOOK_WAKE_S 86400
#define FL_HOOK_SUMMARY_MAX 512
/* A waiter back after a fleetd restart asks again as a reconnect; fleetd
 * may refuse it for a while (the worker's fleet-mcp registers again within
 * a few seconds of the restart, retrying at most every 30 s when refused),
 * so refusals are retried this long before the waiter gives up. */
#define FL_HOOK_REJOIN_S 60
/* How long fleetd keeps a permission request waiting for a lead's
 * fleet_approve (hooks.approveTimeoutMs): by default well inside
 * fleet-hook's own wait (FL_HOOK_APPROVE_WAIT_S), so fleetd's "nothing"
 * reaches the agent before fleet-hook gives up, and the agent's dialog
 * comes back to its pane. At most FL_HOOK_APPROVE_WAIT_S. */
#define FL_HOOK_APPROVE_TIMEOUT_MS 110000
/* Approvals (approve.c): requests waiting for a lead at once (one per
 * open permission dialog; a worker has one at a time, so the number of
 * sessions fleetd can have), and the requestIds answered or ended that
 * are remembered, so a late or repeated fleet_approve hears which. */
#define FL_MAX_APPROVALS FL_MAX_CLIENTS
#define FL_APPROVALS_REMEMBERED 1024
/* A decision's reason goes to the agent as its tool's error: a sentence or
 * a short paragraph. */
#define FL_MAX_APPROVE_REASON 1000
/* Delivery through the hooks (gateway/verbs/hook_deliver.c). A worker's
 * idle session parks one waiter per Stop (and one at its start); each
 * turn's Stop brings a new one, so two per worker are plenty: past that the
 * oldest is answered "nothing" and exits. Briefs handed to hooks whose
 * answer is still being written are bounded too (one write each, settled
 * within a loop turn or two). */
#define FL_HOOK_WAKES_PER_WORKER 2
#define FL_HOOK_HANDOFFS_MAX 256
#define FL_DEFAULT_WAIT_S 30
/* A parallel brief (fleet_send with `to` a list) goes to 2..16 recipients. */
#define FL_MIN_FANOUT 2
#define FL_MAX_FANOUT 16
/* Asks put to this host's entities that a gateway remembers by turn, so an
 * answer finds its asker (and a late one is told too_late). */
#define FL_MAX_TURNS 1024
/* A lead's coordId (<name>@<fleet>): it travels as the envelope's fromName. */
#define FL_MAX_COORD_ID 64
/* Leads of other fleets a gateway lists from the coordinator vhost. */
#define FL_MAX_COORDINATORS 256

/* Claude Code channel pushes (FLEET_CHANNEL=1): the msgIds one session
 * remembers having pushed (so each goes out once), the pushes one session
 * gets per second (past it a message waits for its poll, still held), and
 * the held messages pushed when a session attaches. */
#define FL_CHANNEL_REMEMBERED 1024
#define FL_CHANNEL_PUSHES_PER_S 50
#define FL_CHANNEL_BACKLOG 100

/* A user-facing error or failure reason (a refusal, why a spawn or a brief
 * failed, as fleetd words it and the tool results and receipts carry it):
 * fleetd's own sentences run to a few hundred bytes, and one may quote a
 * program's message (tmux's stderr) or another host's answer; 1 KiB keeps
 * every such message whole on the way to the user. */
#define FL_MAX_ERRMSG 1024

/* Messages returned by one fleet_poll. */
#define FL_MAX_POLL 100
#define FL_DEFAULT_POLL 20

/* Names (host ids, agent names, roles, groups): see common/names.h for the
 * rule; 63 keeps a name inside one DNS label and any routing key short. */
#define FL_MAX_NAME 63
#define FL_MAX_ROLE 32
#define FL_MAX_GROUPS 16
#define FL_MAX_GROUP_NAME 63
/* Entries of one authority list (authority.stop, authority.spawn): a few
 * hosts, names and roles; 32 is far past any fleet's lead count. Each entry
 * is "name@host" at most (or "role:<role>", shorter). */
#define FL_MAX_AUTHORITY 32
#define FL_MAX_AUTHORITY_ENTRY (2 * FL_MAX_NAME + 2)

/* A textual UUID plus NUL. */
#define FL_ID_LEN 37

/* A tmux pane id / socket path given by a client. */
#define FL_MAX_PANE 64
#define FL_MAX_PATH 1024

/* What fleetd reads of one tmux pane to tell whether it is idle (the
 * visible screen, from capture-pane): far above any real screen; a bigger
 * capture reads as "cannot tell". The prompt is looked for in the first
 * FL_MAX_PROMPT_SCAN bytes of the cursor line. */
#define FL_MAX_CAPTURE (256u * 1024u)
#define FL_MAX_PROMPT_SCAN 256u

/* nudge.quietMs: the screen must stay unchanged this long to read as idle. */
#define FL_MAX_QUIET_MS 10000

/* Waiting tool calls (send with wait_s, poll with wait_s) per client. */
#define FL_MAX_WAITERS_PER_CLIENT 64

/* The seen-set: the msgIds remembered for dedup after their message was
 * drained. Each is kept until its envelope can no longer be taken: its
 * expiresAt, and at most FL_ENVELOPE_MAX_LIFE_MS after its ts (what the
 * sender set, or a week when it set nothing; the longest a broker inbox
 * keeps a message). Bounded by count as well (store.maxSeen, default
 * FL_MAX_SEEN; ~250 bytes a key on disk): when a flood fills it, the keys
 * that expire first go, and the horizon (the latest expiry dropped) moves
 * up; an envelope that expires at or before the horizon is refused, so
 * dropping a key never lets its message in twice. */
#define FL_MAX_SEEN 100000
#define FL_MIN_SEEN 100
#define FL_MAX_MAX_SEEN 10000000
#define FL_ENVELOPE_MAX_LIFE_MS (7LL * 24 * 3600 * 1000)

/* SQLite's page cache for the store, in KiB. SQLite's default (2,000 KiB)
 * was the largest single part of a receiving gateway's heap after the
 * cross-host throughput benchmark (bench/README.md); the store's hot pages
 * (the seen-set's index and the held rows being drained) fit in far less,
 * and a page that falls out is read back from the OS's file cache. */
#define FL_STORE_CACHE_KIB 512

/* Random bytes each thread asks the kernel for at once (common/random.c):
 * a message on the hot path takes about 60 (a msgId, a traceId, a 24-byte
 * nonce), so one getrandom serves several messages instead of one per id
 * and nonce; small enough to cost nothing in RSS per thread. */
#define FL_RANDOM_POOL_BYTES 512

/* Recipients the store remembers as holding nothing (store_count.c), so the
 * count after each answered call (to re-arm a nudge) needs no SQLite read
 * transaction while nothing was held since. A handful covers the sessions
 * in calls at one time on a busy gateway; a miss only costs the query. */
#define FL_STORE_EMPTY_CACHE 16

/* ---- broker link (gateway/broker/broker.c) ---- */

/* Publishes accepted by fl_broker_publish and not yet reported through
 * on_publish_done (queued, on the wire, or awaiting the broker's confirm).
 * Past it, fl_broker_publish fails with FL_EFULL. 4096 keeps a fast link busy
 * (confirms come back in batches) and bounds memory to 4096 message copies. */
#define FL_BROKER_MAX_INFLIGHT 4096

/* Other commands (ack, reject, inbox changes) queued from the loop to the
 * broker thread. The thread drains the queue every few milliseconds, so a
 * full queue means the thread is wedged; the call fails with FL_EFULL. */
#define FL_BROKER_MAX_CMDS 16384

/* Events (deliveries, confirms, state changes) queued from the broker thread
 * to the loop. When full, the broker thread stops reading the socket, so the
 * broker holds the backlog instead of our heap. */
#define FL_BROKER_MAX_EVENTS 8192

/* Bytes of deliveries (the message and its envelope) on their way from the
 * broker thread to the loop, queued or being handled. The count above alone
 * let a loop held up by a slow commit collect thousands of deliveries of up
 * to a MiB each. Past this the broker thread stops reading the socket until
 * the loop has dealt with the ones it has (a message bigger than the budget
 * still goes, alone). */
#define FL_BROKER_MAX_EVENT_BYTES (4u * 1024u * 1024u)

/* Broker URIs one gateway may be given (the nodes of a cluster): it tries
 * them in turn until one answers. */
#define FL_BROKER_MAX_URIS 8

/* Inboxes one gateway consumes. Each takes its own channel and RabbitMQ's
 * default channel_max is 2047; two channels are the link's own. */
#define FL_BROKER_MAX_INBOXES 2000

/* Inboxes set up one shortly after another (a gateway starting, a burst of
 * agents) start consuming together, once none has been set up for this
 * long: see fl_broker_inbox_start. A new inbox's messages wait this much
 * longer on the broker, at most. */
#define FL_BROKER_INBOX_SETTLE_MS 20

/* Unacked deliveries per consumer (basic.qos). Acks wait for the client's
 * drain, so this is also how many messages one inbox has on their way at
 * once; 100 keeps a burst flowing while the rest of the backlog stays on the
 * broker, where the inbox caps and TTLs act, not in gateway memory. */
#define FL_BROKER_DEFAULT_PREFETCH 100

/* Inbox queue arguments (defaults; fleetd's config may override). One inbox
 * holds as many messages as one entity may hold locally; a message waits a
 * week; an inbox nobody consumed for 30 days is collected. */
#define FL_BROKER_DEFAULT_MAX_LENGTH FL_MAX_HELD_PER_ENTITY
#define FL_BROKER_DEFAULT_MESSAGE_TTL_MS (7L * 24 * 3600 * 1000)
#define FL_BROKER_DEFAULT_QUEUE_EXPIRES_MS (30L * 24 * 3600 * 1000)

/* fleet.dlq is capped too: anything with write access could fill it. */
#define FL_BROKER_DLQ_MAX_LENGTH 100000L

/* AMQP heartbeat. Short, so the broker frees a crashed gateway's exclusive
 * consumers quickly and a restarted gateway can take its inboxes back. */
#define FL_BROKER_DEFAULT_HEARTBEAT_S 10

/* Largest AMQP frame we negotiate (rabbitmq-c's default). */
#define FL_BROKER_FRAME_MAX 131072

/* Entities in one gateway's roster, local and remote together. A peer
 * announcing more is refused rather than growing our memory. */
#define FL_MAX_ENTITIES 10000
/* Gid owners remembered per host (store_gids.c): as many as one roster
 * holds, so a pinned host that announces gid after fresh gid grows the
 * store by this much at most; past it, that host's oldest rows go, which
 * frees only gids it announced itself. Written as a literal: it is pasted
 * into SQL. */
#define FL_MAX_GIDS_PER_HOST 10000
/* When it is full, the roster forgets this many of the remote entities that
 * left or have been offline longest at once (gateway/core/roster.h), so a long
 * run of agents that come and go never locks new ones out. */
#define FL_ROSTER_RECLAIM_BATCH 100

/* Local entities one host beat lists (gateway/fabric/beat.h): a body of at most
 * a few hundred KiB even with every group of every entity at its longest,
 * well inside FL_MAX_WIRE_BODY. A host with more beats the rest one by one. */
#define FL_MAX_BEAT_AGENTS 256

/* Deliveries from a sender whose presence has not arrived yet, parked
 * (unacked) until it does or a presence interval passes. */
#define FL_MAX_PARKED 1000

/* Hosts whose refused presence is tracked (gateway/fabric/refusals.h), so a host
 * that keeps beating unpinned is logged once a minute, not once a beat; and
 * the names each one's refused beats announced (a hint for errors). Past
 * the cap the host refused longest ago is forgotten. */
#define FL_MAX_REFUSING_HOSTS 64
#define FL_REFUSAL_NAMES 16

/* Spawn profiles (config "profiles", gateway/config/config.c). 32 profiles is far
 * more than one host runs kinds of agent; every field has its own cap so a
 * profile fits the fixed fl_profile that fl_gw_config copies by value. The
 * command and env are kept as one compact JSON text of at most
 * FL_MAX_PROFILE_LAUNCH bytes (a long agent command line with a few
 * variables takes well under 1 KiB). readyTimeoutS runs to 10 minutes, past
 * which a spawn has surely failed; quietMs to a minute. */
#define FL_MAX_PROFILES 32
#define FL_MAX_PROFILE_ARGS 64
#define FL_MAX_PROFILE_ENV 64
#define FL_MAX_PROFILE_LAUNCH 4096
#define FL_MAX_PROFILE_PROMPT 256
#define FL_PROFILE_READY_MAX_S 600
#define FL_PROFILE_READY_DEFAULT_S 60
#define FL_PROFILE_QUIET_MAX_MS 60000
#define FL_PROFILE_QUIET_DEFAULT_MS 500
/* profiles.<name>.commandChars: the leading characters an agent treats as
 * commands; agents document two or three ("!", "/", "#"). */
#define FL_MAX_COMMAND_CHARS 16

/* Other hosts whose _gateway beat (their spawn profiles) is remembered: as
 * many as can be pinned (FL_PEERS_MAX, gateway/proto/peers.h), since only pinned
 * hosts get that far. Past it a new host's beat is refused and logged. */
#define FL_MAX_HOSTS 1024

/* Spawns waiting for their agent to register. Each holds a terminal open
 * until its readyTimeoutS; past this, fleet_spawn fails with FL_EFULL
 * instead of opening windows without bound. */
#define FL_MAX_SPAWNS_PENDING 64

/* How long a host remembers a spawn it ran (its spawnId, spawner and
 * outcome): a SPAWN repeated within this is answered from the record and
 * starts nothing new. 30 days. */
#define FL_SPAWN_RECORD_KEEP_MS (30LL * 24 * 3600 * 1000)

/* One log line, and what fleetd remembers of traced lines for `fleetctl
 * trace`: the newest, at most FL_LOG_TRACE_LINES of them packed at their own
 * length in FL_LOG_TRACE_BYTES (a traced line is about 150-250 bytes, so
 * some 2,500 lines; a ring of 4096 full-size slots held 4 MiB). */
#define FL_LOG_LINE_MAX 1024
#define FL_LOG_TRACE_LINES 4096
#define FL_LOG_TRACE_BYTES (512u * 1024u)

/* ---- rooms (gateway/rooms/room.c) ---- */

/* One room envelope as served, in bytes: a bigger one is dropped
 * (oversize). */
#define FL_ROOM_MAX_ENVELOPE (64u * 1024u)
/* Hops a merged message may have made: a host re-serves what it merged
 * with hops + 1, and drops what arrives with hops at this limit. */
#define FL_ROOM_MAX_HOPS 4
/* Messages in one pull response, and its body in bytes. */
#define FL_ROOM_MAX_PAGE 500
#define FL_ROOM_MAX_BODY (4u * 1024u * 1024u)
/* Registered rooms per host, and a label's length. */
#define FL_ROOM_MAX_ROOMS 64
#define FL_ROOM_MAX_LABEL 128
/* A roomId: hex of a 32-byte unkeyed BLAKE2b, plus the NUL. */
#define FL_ROOM_ID_SIZE 65
/* rooms.maxMessages when unset, and its ceiling. */
#define FL_ROOM_DEFAULT_MAX_MESSAGES 10000
#define FL_ROOM_MAX_MAX_MESSAGES 1000000
/* A msgType's length. */
#define FL_ROOM_MAX_MSG_TYPE 64
/* Pages one sync pulls from one peer for one room before waiting for the
 * next sync. */
#define FL_ROOM_MAX_PAGES_PER_SYNC 8
/* ---- the HTTP servers (dashboard/API and rooms), each on its own -------- */
/* A connection has this long to send a whole request's headers (and an
 * idle keep-alive connection this long to start its next request): past
 * it, it is dropped, so a client that trickles its headers holds a slot
 * for seconds, not for ever. A browser or a peer sends its headers at once. */
#define FL_HTTP_HEADER_DEADLINE_MS 5000
/* How often the deadline above is looked at. */
#define FL_HTTP_SWEEP_MS 500
/* Connections still waiting for their headers (or idle between requests).
 * One more drops the oldest such connection that has waited longer than
 * FL_HTTP_WAIT_GRACE_MS, so a crowd of trickling clients cannot keep a
 * fresh request from being read, while a burst of clients that connect at
 * once (and send their headers at once) all get read. */
#define FL_HTTP_MAX_WAITING 64
#define FL_HTTP_WAIT_GRACE_MS 1000
/* Requests waiting for fleetd's loop; past it a request is answered 503 at
 * once (the loop answers each in well under a millisecond). As many as
 * there may be event streams, so that all of them may connect at once. */
#define FL_HTTP_QUEUE_CAP 128
/* Open event streams (/api/events): 100 dashboard tabs and some room to
 * spare; one more is answered 503 at once. */
#define FL_HTTP_MAX_STREAMS 128
/* Connections from one client address, whatever their state: one address
 * cannot take the whole server (a further request is answered 503). Above
 * FL_HTTP_MAX_STREAMS, because on loopback every local client shares one
 * address. */
#define FL_HTTP_MAX_PER_ADDR 192
/* All connections of one server: the budgets above, so that one kind
 * (trickling headers, event streams, requests) filling up never starves
 * the others, plus room for responses still being sent. Past it the
 * server closes a new connection unanswered: never reached while the
 * budgets hold. */
#define FL_HTTP_MAX_CONNECTIONS 384
_Static_assert(FL_HTTP_MAX_CONNECTIONS >=
                   FL_HTTP_MAX_WAITING + FL_HTTP_QUEUE_CAP + FL_HTTP_MAX_STREAMS + 32,
               "the connection cap holds every budget");

/* claims.<host> on the broker: at most this many claims wait for a fleetd
 * that is down, and the queue of a host gone for 30 days is deleted. */
#define FL_BROKER_CLAIMS_MAX_LENGTH 10000
#define FL_BROKER_CLAIMS_EXPIRES_MS (30LL * 24 * 3600 * 1000)
/* A claim's ttl_s ceiling (a week). */
#define FL_CLAIM_MAX_TTL_S (7 * 24 * 3600)

#endif
