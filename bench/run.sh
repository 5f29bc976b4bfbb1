#!/usr/bin/env bash
# bench/run.sh — fleet against the raw broker, on one private RabbitMQ, in one run.
#
#   bash bench/run.sh
#
# Builds fleet (build/, RelWithDebInfo = -O2 -g) and the drivers (bench/build/,
# -O2), starts a throwaway RabbitMQ on loopback (tests/rabbitmq.sh), measures
# the raw rabbitmq-c baseline, starts four fleetd gateways (hostA..hostD) on
# that broker, measures fleet with sealed bodies (the default: pair-sealed
# point-to-point messages), restarts the gateways with broker.pairSeal false
# (every message signed) and measures throughput and U1 again, then with
# broker.seal false in clear, prints the tables (each target MET or MISSED)
# and stops
# everything it started (trap), whatever happens. bench/README.md explains
# each number. Knobs (environment):
#
#   BENCH_N=20000          messages in each throughput run
#   BENCH_SIZE=1024        bytes per message
#   BENCH_WINDOW=64        fleet sender's requests in flight (fleetd's cap is 64)
#   BENCH_RAW_WINDOW=1000  raw publisher's unconfirmed publishes in flight
#   BENCH_RATE=20          calls/s of every round-trip measurement
#   BENCH_RTT_N=300        round trips measured at BENCH_RATE
#   BENCH_BCAST_N=200      broadcasts measured at BENCH_RATE (hostA to hostB, hostC, hostD)
#   BENCH_LAT_RATE=200 BENCH_LAT_N=2000   the extra raw one-way run at a higher pace
#   BENCH_LOG_LEVEL=info   fleetd's log level (info is the default a user gets)
#   BENCH_PREFETCH=        fleetd broker.prefetch (empty = fleetd's default)
#   BENCH_KEEP=1           keep the work dir (fleetd logs, results) in /tmp
#   BENCH_C32_N=100        calls per pair in the 32-in-flight U1 runs (direct, then via fleet-mcp)
#   BENCH_C32_PAIRS=4      direct/fleet-mcp run pairs of it, in alternating order (keep it even)
#   BENCH_TPUT_PAIRS=4     raw/fleet throughput run pairs, back to back, in alternating order
#   BENCH_U1_PAIRS=2       raw request/reply / fleet U1 run pairs, the same way (keep both even)
#   BENCH_STARTS=20        embedded start-ups timed (median reported)
#   BENCH_SESSIONS=1000    sessions held connected for the memory row
#   BENCH_HELD=10000       messages held for one receiver for the memory row
#   BENCH_SYNC_N=3000      local sends per store.synchronous run (normal, then full)
#   BENCH_EMBEDDED_ONLY=1  run only the one-gateway table (e), no broker
#   BENCH_SIM_HOSTS=200 BENCH_SIM_AGENTS=25   (f) simulated remote hosts, agents on each
#   BENCH_SIM_WINDOW=20    (f) seconds of each CPU window (idle, then beating)
#   BENCH_SIM_LIST_N=200   (f) fleet_list calls timed with every entry present
#   BENCH_SIM_ONLY=1       run only (f), presence at scale (the broker and one gateway)
#   BENCH_SIM_ENTITY_BEATS=1  (f) the simulated hosts beat each agent alone, as the earlier wire did
#   BENCH_TPUT_ONLY=1      run only the throughput pairs (raw_tput, fleet_tput) with
#                          the broker's CPU per message, then stop
#   FLEET_BUILD_DIR=build  where fleet is built; BENCH_NO_BUILD=1 skips building
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${FLEET_BUILD_DIR:-$REPO/build}
BBUILD=$REPO/bench/build
N=${BENCH_N:-20000}
SIZE=${BENCH_SIZE:-1024}
WINDOW=${BENCH_WINDOW:-64}
RAW_WINDOW=${BENCH_RAW_WINDOW:-1000}
RATE=${BENCH_RATE:-20}
RTT_N=${BENCH_RTT_N:-300}
BCAST_N=${BENCH_BCAST_N:-200}
LAT_RATE=${BENCH_LAT_RATE:-200}
LAT_N=${BENCH_LAT_N:-2000}
LOG_LEVEL=${BENCH_LOG_LEVEL:-info}
STARTS=${BENCH_STARTS:-20}
C32_N=${BENCH_C32_N:-100}
C32_PAIRS=${BENCH_C32_PAIRS:-4}
TPUT_PAIRS=${BENCH_TPUT_PAIRS:-4}
U1_PAIRS=${BENCH_U1_PAIRS:-2}
SESSIONS=${BENCH_SESSIONS:-1000}
HELD=${BENCH_HELD:-10000}
SYNC_N=${BENCH_SYNC_N:-3000}
PREFETCH=${BENCH_PREFETCH:-}
SIM_HOSTS=${BENCH_SIM_HOSTS:-200}
SIM_AGENTS=${BENCH_SIM_AGENTS:-25}
SIM_WINDOW=${BENCH_SIM_WINDOW:-20}
SIM_EACH=${BENCH_SIM_ENTITY_BEATS:+-e}
SIM_LIST_N=${BENCH_SIM_LIST_N:-200}
SIM_ONLY=${BENCH_SIM_ONLY:-0}
TPUT_ONLY=${BENCH_TPUT_ONLY:-0}

log() { printf '[bench %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# ---- clean-up: every process we start is recorded here and ended in the trap ----
WORK=
MQ_STARTED=0
FLEETD_PIDS=()
SIM_PID=
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  local pid
  if [ -n "$SIM_PID" ]; then
    kill -TERM "$SIM_PID" 2>/dev/null || true
    wait "$SIM_PID" 2>/dev/null || true
  fi
  for pid in "${FLEETD_PIDS[@]}"; do
    kill -TERM "$pid" 2>/dev/null || true
  done
  for pid in "${FLEETD_PIDS[@]}"; do
    for _ in $(seq 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  if [ "$MQ_STARTED" = 1 ]; then
    log "stopping the broker"
    sh "$REPO/tests/rabbitmq.sh" stop "$WORK/mq" >/dev/null 2>&1 || true
  fi
  if [ -n "$WORK" ]; then
    if [ "${BENCH_KEEP:-0}" = 1 ] || [ "$rc" != 0 ]; then
      log "work dir kept: $WORK"
    else
      rm -rf "$WORK"
    fi
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

T_START=$(date +%s)

# ---- build ----
if [ "${BENCH_NO_BUILD:-0}" != 1 ]; then
  log "building fleet in $BUILD"
  cmake -S "$REPO" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$BUILD" -j2 --target fleetd fleetctl fleet-mcp >/dev/null
  log "building the drivers in $BBUILD"
  cmake -S "$REPO/bench" -B "$BBUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$BBUILD" -j2 >/dev/null
fi
for b in "$BUILD/fleetd" "$BUILD/fleetctl" "$BUILD/fleet-mcp" "$BBUILD/amqp_baseline" "$BBUILD/fleet_bench" "$BBUILD/presence_sim"; do
  [ -x "$b" ] || { echo "bench: $b is missing (build it, or unset BENCH_NO_BUILD)" >&2; exit 1; }
done

# ---- broker ----
WORK=$(mktemp -d /tmp/flbench-XXXXXX)
# Run as root, the node runs as user rabbitmq, which must traverse WORK.
chmod 755 "$WORK"
RESULTS=$WORK/results.txt
: >"$RESULTS"

# ---- (e) one embedded gateway (no broker): start-up, memory, store.synchronous ----
fb() { "$BBUILD/fleet_bench" "$@" | tee -a "$RESULTS" | sed 's/^/  /' >&2; }
EMB_PID=
emb_start() { # NAME [STORE_SYNC]
  local d=$WORK/emb-$1
  mkdir -p "$d"
  if [ -n "${2:-}" ]; then
    printf '{"logLevel":"%s","store":{"synchronous":"%s"}}\n' "$LOG_LEVEL" "$2" >"$d/fleetd.json"
  else
    printf '{"logLevel":"%s"}\n' "$LOG_LEVEL" >"$d/fleetd.json"
  fi
  "$BUILD/fleetd" --state-dir "$d/state" --socket "$d/fleetd.sock" --host-id "emb$1" \
    --config "$d/fleetd.json" 2>"$d/fleetd.log" &
  EMB_PID=$!
  FLEETD_PIDS+=("$EMB_PID")
  for _ in $(seq 200); do
    [ -S "$d/fleetd.sock" ] && return 0
    sleep 0.05
  done
  echo "bench: embedded fleetd $1 did not come up; its log:" >&2
  tail -n 30 "$d/fleetd.log" >&2
  exit 1
}
emb_stop() {
  kill -TERM "$EMB_PID" 2>/dev/null || true
  wait "$EMB_PID" 2>/dev/null || true
  local keep=() pid
  for pid in "${FLEETD_PIDS[@]}"; do [ "$pid" = "$EMB_PID" ] || keep+=("$pid"); done
  FLEETD_PIDS=("${keep[@]}")
}
if [ "$SIM_ONLY" != 1 ] && [ "$TPUT_ONLY" != 1 ]; then
log "(e) embedded start-up to socket ready, $STARTS starts"
mkdir -p "$WORK/emb-start"
fb startup "$BUILD/fleetd" "$WORK/emb-start" -n "$STARTS" -l emb_startup
log "(e) fleetd RSS with $SESSIONS sessions connected"
emb_start sess
fb sessions "$WORK/emb-sess/fleetd.sock" "$EMB_PID" -n "$SESSIONS" -l emb_sessions
log "(e) fleet-mcp RSS (one session through it)"
fb mcp "$WORK/emb-sess/fleetd.sock" "$BUILD/fleet-mcp" -l emb_mcp
emb_stop
log "(e) fleetd RSS with $HELD x $SIZE B messages held for one receiver"
emb_start held
fb held "$WORK/emb-held/fleetd.sock" "$EMB_PID" -n "$HELD" -s "$SIZE" -w "$WINDOW" -l emb_held
emb_stop
log "(e) local send throughput, $SYNC_N x $SIZE B, store.synchronous normal then full"
emb_start syncn normal
fb tput "$WORK/emb-syncn/fleetd.sock" "$WORK/emb-syncn/fleetd.sock" -n "$SYNC_N" -s "$SIZE" -w "$WINDOW" -l emb_sync_normal
fb rtt "$WORK/emb-syncn/fleetd.sock" "$WORK/emb-syncn/fleetd.sock" -n "$RTT_N" -s "$SIZE" -r "$RATE" -l emb_u1_normal
emb_stop
emb_start syncf full
fb tput "$WORK/emb-syncf/fleetd.sock" "$WORK/emb-syncf/fleetd.sock" -n "$SYNC_N" -s "$SIZE" -w "$WINDOW" -l emb_sync_full
fb rtt "$WORK/emb-syncf/fleetd.sock" "$WORK/emb-syncf/fleetd.sock" -n "$RTT_N" -s "$SIZE" -r "$RATE" -l emb_u1_full
emb_stop
log "(e) JSON read: fleet's reader against jansson's, a fleet_send line and a poll result"
"$BBUILD/json_bench" -s "$SIZE" | tee -a "$RESULTS" | sed 's/^/  /' >&2
fi

get() { awk -v k="$1" '$1 == "RESULT" && $2 == k { v = $3 } END { print (v == "" ? "nan" : v) }' "$RESULTS"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 > 0) printf "%.2f", a / b; else print "n/a" }'; }
# Runs measured in pairs, labelled A_P and B_P for P = 1..N: B against A, run
# back to back. Prints OUT_A.KEY and OUT_B.KEY, the median of each key over
# the runs that reported it; and for each KEY given, OUT_R.KEY_pairP (B / A
# in pair P, "nan" when it lacks a run) and OUT_R.KEY, the geometric mean of
# the whole pairs' ratios ("nan" when there is none). A pair run at one
# moment shares that moment's machine: on 2 shared cores the same run moves
# by 10-30% from one minute to the next, and a ratio of runs made minutes
# apart moved with it.
pairs_summary() { # A B N OUT_A OUT_B OUT_R KEY...
  local a=$1 b=$2 n=$3 oa=$4 ob=$5 or=$6
  shift 6
  awk -v A="$a" -v B="$b" -v n="$n" -v OA="$oa" -v OB="$ob" -v OR="$or" -v keys="$*" '
    function med(x, k,   i, j, t) {
      for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (x[j] < x[i]) { t = x[i]; x[i] = x[j]; x[j] = t }
      return k % 2 ? x[(k + 1) / 2] : (x[k / 2] + x[k / 2 + 1]) / 2 }
    $1 == "RESULT" {
      d = index($2, "."); l = substr($2, 1, d - 1); k = substr($2, d + 1)
      if (substr(l, 1, length(A) + 1) == A "_") { w = "a"; r = substr(l, length(A) + 2) }
      else if (substr(l, 1, length(B) + 1) == B "_") { w = "b"; r = substr(l, length(B) + 2) }
      else next
      if (!d || r !~ /^[0-9]+$/ || $3 !~ /^-?[0-9]+(\.[0-9]+)?$/) next # "nan" is no value
      v[w, r + 0, k] = $3 + 0; f[k] = 1 }
    END {
      for (k in f) for (m = 0; m < 2; m++) {
        w = m ? "b" : "a"; c = 0
        for (i = 1; i <= n; i++) if ((w, i, k) in v) x[++c] = v[w, i, k]
        if (c) printf "RESULT %s.%s %.6g\n", m ? OB : OA, k, med(x, c) }
      nk = split(keys, K, " ")
      for (j = 1; j <= nk; j++) {
        k = K[j]; g = 0; ok = 0
        for (i = 1; i <= n; i++) {
          p = v["a", i, k]; q = v["b", i, k]
          if (p > 0 && q > 0) { g += log(q / p); ok++; printf "RESULT %s.%s_pair%d %.2f\n", OR, k, i, q / p }
          else printf "RESULT %s.%s_pair%d nan\n", OR, k, i }
        if (ok) printf "RESULT %s.%s %.2f\n", OR, k, exp(g / ok)
        else printf "RESULT %s.%s nan\n", OR, k } }' "$RESULTS"
}
# Runs N pairs: RUN_A P then RUN_B P for odd P, the other way round for even
# P, so a steady drift over the pairs hits both sides alike.
pairs_run() { # N RUN_A RUN_B
  local p
  for p in $(seq "$1"); do
    if [ $((p % 2)) = 1 ]; then
      "$2" "$p"
      "$3" "$p"
    else
      "$3" "$p"
      "$2" "$p"
    fi
  done
}
# Each pair's ratio of OUT_R.KEY, space-separated.
pairs_list() { # OUT_R KEY N
  local p
  for p in $(seq "$3"); do printf '%s ' "$(get "$1.$2_pair$p")"; done
}
verdict() { awk -v r="$1" -v op="$2" -v t="$3" 'BEGIN {
  if (r == "n/a" || r == "nan") { print "n/a"; exit }
  ok = (op == ">=") ? (r + 0 >= t + 0) : (r + 0 <= t + 0)
  printf "%s (target %s %s)", ok ? "MET" : "MISSED", op, t }'; }
mib() { awk -v k="$1" 'BEGIN { if (k + 0 > 0) printf "%.1f", k / 1024; else print "nan" }'; }

embedded_table() {
  local st rs rh rm tn tf un uf
  st=$(get emb_startup.p50_ms)
  rs=$(mib "$(get emb_sessions.rss_kib)")
  rh=$(mib "$(get emb_held.rss_kib)")
  rm=$(mib "$(get emb_mcp.rss_kib)")
  tn=$(get emb_sync_normal.msgs_per_s)
  tf=$(get emb_sync_full.msgs_per_s)
  un=$(get emb_u1_normal.p50_ms)
  uf=$(get emb_u1_full.p50_ms)
  echo
  echo "one embedded gateway (no broker): start-up, memory, store.synchronous"
  echo
  printf '| %-58s | %12s | %-26s |\n' "metric" "value" "verdict"
  printf '|%s|%s|%s|\n' "$(printf -- '-%.0s' $(seq 60))" "$(printf -- '-%.0s' $(seq 14))" "$(printf -- '-%.0s' $(seq 28))"
  printf '| %-58s | %12s | %-26s |\n' "start-up to socket ready p50 ms (median of $STARTS)" "$st" "$(verdict "$st" '<=' 50)"
  printf '| %-58s | %12s | %-26s |\n' "start-up to socket ready max ms" "$(get emb_startup.max_ms)" "for information"
  printf '| %-58s | %12s | %-26s |\n' "fleetd RSS MiB, idle" "$(mib "$(get emb_sessions.rss_idle_kib)")" "for information"
  printf '| %-58s | %12s | %-26s |\n' "fleetd RSS MiB with $(get emb_sessions.sessions) sessions connected" "$rs" "$(verdict "$rs" '<=' 20)"
  printf '| %-58s | %12s | %-26s |\n' "fleetd RSS MiB with $(get emb_held.held) messages held" "$rh" "$(verdict "$rh" '<=' 32)"
  printf '| %-58s | %12s | %-26s |\n' "fleet-mcp RSS MiB (one session)" "$rm" "$(verdict "$rm" '<=' 2)"
  printf '| %-58s | %12s | %-26s |\n' "local send msgs/s, store.synchronous normal" "$tn" ""
  printf '| %-58s | %12s | %-26s |\n' "local send msgs/s, store.synchronous full" "$tf" "full/normal $(ratio "$tf" "$tn")"
  printf '| %-58s | %12s | %-26s |\n' "local U1 p50 ms, store.synchronous normal" "$un" ""
  printf '| %-58s | %12s | %-26s |\n' "local U1 p50 ms, store.synchronous full" "$uf" "full/normal $(ratio "$uf" "$un")"
  printf '| %-58s | %12s | %-26s |\n' "JSON read us, fleet_send line of $(get json_send.bytes) B: jansson / fleet" "$(get json_send.jansson_us) / $(get json_send.fleet_us)" "fleet/jansson $(get json_send.ratio)"
  printf '| %-58s | %12s | %-26s |\n' "JSON read us, poll result of $(get json_poll.bytes) B: jansson / fleet" "$(get json_poll.jansson_us) / $(get json_poll.fleet_us)" "fleet/jansson $(get json_poll.ratio)"
}
if [ "${BENCH_EMBEDDED_ONLY:-0}" = 1 ]; then
  embedded_table | tee "$WORK/table.txt"
  echo
  echo "whole run: $(($(date +%s) - T_START)) s"
  exit 0
fi

. "$REPO/bench/ports.sh"
PORT=$(bench_port) || { echo "bench: no free port in 5900-5999" >&2; exit 1; }
URI="amqp://guest:guest@127.0.0.1:$PORT/"
log "starting a private RabbitMQ on 127.0.0.1:$PORT"
MQ_STARTED=1
# Output to files: the node outlives the script's own stdout otherwise.
if ! sh "$REPO/tests/rabbitmq.sh" start "$WORK/mq" "$PORT" >"$WORK/mq-start.out" 2>"$WORK/mq-start.err"; then
  cat "$WORK/mq-start.err" >&2
  exit 1
fi

# ---- (f) presence at scale: many simulated hosts beating on one gateway ----
# CPU seconds (user + system) of a process so far, from /proc/PID/stat.
cpu_s() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$1/stat"; }
pct() { awk -v a="$1" -v b="$2" -v w="$3" 'BEGIN { printf "%.2f", (b - a) * 100 / w }'; }
sim_run() {
  local d=$WORK/hostS beam n h k i0 i1 b0 b1 j0 j1 c0 c1
  beam=$(cat "$WORK/mq/rabbitmq.pid")
  mkdir -p "$d"
  # The default presence interval: the one a user gets.
  printf '{"logLevel":"%s","broker":{"uri":"%s"}}\n' "$LOG_LEVEL" "$URI" >"$d/fleetd.json"
  "$BUILD/fleetd" --state-dir "$d/state" --socket "$d/fleetd.sock" --host-id hostS \
    --broker "$URI" --config "$d/fleetd.json" 2>"$d/fleetd.log" &
  local pid=$!
  FLEETD_PIDS+=("$pid")
  for _ in $(seq 200); do
    [ -S "$d/fleetd.sock" ] && grep -q "broker link is up" "$d/fleetd.log" && break
    sleep 0.1
  done
  grep -q "broker link is up" "$d/fleetd.log" || { tail -n 30 "$d/fleetd.log" >&2; exit 1; }
  log "(f) pinning $SIM_HOSTS simulated hosts on hostS (fleetctl peer add)"
  n=0
  while read -r h k; do
    "$BUILD/fleetctl" --socket "$d/fleetd.sock" peer add "$h" "$k" >>"$WORK/pin-sim.out" 2>&1 ||
      { tail -n 5 "$WORK/pin-sim.out" >&2; exit 1; }
    n=$((n + 1))
  done < <("$BBUILD/presence_sim" pins -H "$SIM_HOSTS")
  log "(f) hostS idle for ${SIM_WINDOW} s (fleetd and broker CPU)"
  sleep 2
  i0=$(cpu_s "$pid"); b0=$(cpu_s "$beam")
  sleep "$SIM_WINDOW"
  i1=$(cpu_s "$pid"); b1=$(cpu_s "$beam")
  log "(f) $SIM_HOSTS hosts x $SIM_AGENTS agents beating every 5 s (the default interval)"
  "$BBUILD/presence_sim" run "$URI" -H "$SIM_HOSTS" -a "$SIM_AGENTS" $SIM_EACH -l sim >"$WORK/sim.out" 2>"$WORK/sim.err" &
  SIM_PID=$!
  fb list "$d/fleetd.sock" $((SIM_HOSTS * SIM_AGENTS)) -n 1 -W 0 -l sim_wait
  sleep 5 # one whole interval: every host's burst is on its steady pace
  log "(f) steady beats for ${SIM_WINDOW} s (fleetd and broker CPU)"
  j0=$(cpu_s "$pid"); c0=$(cpu_s "$beam")
  sleep "$SIM_WINDOW"
  j1=$(cpu_s "$pid"); c1=$(cpu_s "$beam")
  log "(f) fleet_list x $SIM_LIST_N at $RATE/s with every entry present"
  fb list "$d/fleetd.sock" $((SIM_HOSTS * SIM_AGENTS)) -n "$SIM_LIST_N" -r "$RATE" -l sim_list
  kill -TERM "$SIM_PID" 2>/dev/null || true
  wait "$SIM_PID" || { cat "$WORK/sim.err" >&2; exit 1; }
  SIM_PID=
  sed 's/^/  /' "$WORK/sim.out" >&2
  cat "$WORK/sim.out" >>"$RESULTS"
  local beats_s
  beats_s=$(awk '$2 == "sim.beats_per_s" { print $3 }' "$WORK/sim.out")
  {
    echo "RESULT sim_cpu.pins $n"
    echo "RESULT sim_cpu.beats_per_s $beats_s"
    echo "RESULT sim_cpu.idle_pct $(pct "$i0" "$i1" "$SIM_WINDOW")"
    echo "RESULT sim_cpu.busy_pct $(pct "$j0" "$j1" "$SIM_WINDOW")"
    echo "RESULT sim_broker.idle_pct $(pct "$b0" "$b1" "$SIM_WINDOW")"
    echo "RESULT sim_broker.busy_pct $(pct "$c0" "$c1" "$SIM_WINDOW")"
    "$BUILD/fleetctl" --socket "$d/fleetd.sock" --json status | python3 -c '
import json, sys
c = json.load(sys.stdin)["counters"]
print("RESULT sim_verify.rejects", sum(v for k, v in c.items() if k.startswith("verify_")))
print("RESULT sim_verify.presence_refused", c["presence_refused"])
print("RESULT sim_verify.presence_received", c["presence_received"])'
  } | tee -a "$RESULTS" | sed 's/^/  /' >&2
}
sim_table() {
  local f_idle f_busy bi bb per bper p99
  f_idle=$(get sim_cpu.idle_pct); f_busy=$(get sim_cpu.busy_pct)
  bi=$(get sim_broker.idle_pct); bb=$(get sim_broker.busy_pct)
  per=$(awk -v a="$f_idle" -v b="$f_busy" 'BEGIN { printf "%.2f", b - a }')
  bper=$(awk -v a="$bi" -v b="$bb" 'BEGIN { printf "%.2f", b - a }')
  p99=$(get sim_list.p99_ms)
  echo
  echo "presence at scale: $(get sim.hosts) simulated hosts x $SIM_AGENTS agents = $(get sim.agents) remote agents on hostS, beats every $(get sim.interval_ms) ms"
  echo
  printf '| %-58s | %12s | %-26s |\n' "metric" "value" "verdict"
  printf '|%s|%s|%s|\n' "$(printf -- '-%.0s' $(seq 60))" "$(printf -- '-%.0s' $(seq 14))" "$(printf -- '-%.0s' $(seq 28))"
  printf '| %-58s | %12s | %-26s |\n' "hostS fleetd CPU % of a core, idle" "$f_idle" "for information"
  printf '| %-58s | %12s | %-26s |\n' "hostS fleetd CPU % of a core, while $(get sim_cpu.beats_per_s) beats/s" "$f_busy" "for information"
  printf '| %-58s | %12s | %-26s |\n' "presence CPU % of a core (beating - idle)" "$per" "$(verdict "$per" '<=' 5)"
  printf '| %-58s | %12s | %-26s |\n' "fleetd CPU us per beat" "$(awk -v p="$per" -v r="$(get sim_cpu.beats_per_s)" 'BEGIN { if (r > 0) printf "%.1f", p * 1e4 / r; else print "n/a" }')" "for information"
  printf '| %-58s | %12s | %-26s |\n' "fleetd CPU us per remote agent refreshed" "$(awk -v p="$per" -v a="$(get sim.agents)" -v i="$(get sim.interval_ms)" 'BEGIN { if (a > 0) printf "%.1f", p * 1e4 * i / 1000 / a; else print "n/a" }')" "for information"
  printf '| %-58s | %12s | %-26s |\n' "broker CPU % of a core, idle / beating" "$bi / $bb" "for information"
  printf '| %-58s | %12s | %-26s |\n' "broker CPU us per beat (1 publish, 1 delivery)" "$(awk -v p="$bper" -v r="$(get sim_cpu.beats_per_s)" 'BEGIN { if (r > 0) printf "%.1f", p * 1e4 / r; else print "n/a" }')" "for information"
  printf '| %-58s | %12s | %-26s |\n' "fleet_list p50 ms, $(get sim_list.entries) entries" "$(get sim_list.p50_ms)" "for information"
  printf '| %-58s | %12s | %-26s |\n' "fleet_list p99 ms, $(get sim_list.entries) entries" "$p99" "$(verdict "$p99" '<=' 5)"
  printf '| %-58s | %12s | %-26s |\n' "fleet_list result bytes" "$(get sim_list.response_bytes)" "for information"
  printf '| %-58s | %12s | %-26s |\n' "beat bytes: body / on the wire (AMQP frames)" "$(get sim.body_bytes) / $(get sim.wire_bytes)" "for information"
  printf '| %-58s | %12s | %-26s |\n' "beats refused by hostS (verify_* counters, all)" "$(get sim_verify.rejects)" "$(verdict "$(get sim_verify.rejects)" '<=' 0)"
  printf '| %-58s | %12s | %-26s |\n' "beats refused as stale or malformed (presence_refused)" "$(get sim_verify.presence_refused)" "for information"
  printf '| %-58s | %12s | %-26s |\n' "listed online while fleet_list was timed: calls short" "$(get sim_list.online_below_expected)" "$(verdict "$(get sim_list.online_below_expected)" '<=' 0)"
}
if [ "$SIM_ONLY" = 1 ]; then
  sim_run
  sim_table | tee "$WORK/table.txt"
  echo
  echo "whole run: $(($(date +%s) - T_START)) s"
  exit 0
fi

# ---- (a) raw baseline ----
raw() { "$BBUILD/amqp_baseline" "$URI" "$@" | tee -a "$RESULTS" | sed 's/^/  /' >&2; }
# raw_tput and raw_rtt run in (b), each paired with its fleet run.
if [ "$TPUT_ONLY" != 1 ]; then
log "(a) raw one-way latency at $LAT_RATE/s x $LAT_N"
raw lat -n "$LAT_N" -s "$SIZE" -r "$LAT_RATE" -p 100 -l "raw_lat$LAT_RATE"
log "(a) raw one-way latency at $RATE/s x $RTT_N (the pace of the fleet round trips)"
raw lat -n "$RTT_N" -s "$SIZE" -r "$RATE" -p 100 -l raw_lat
# The same two, using the broker as fleet does (bench/broker_cost.sh): the
# topic exchange, mandatory, an inbox's six queue arguments, the envelope in
# its one header and the sealed size; for information, not a target.
FLEETLIKE=(-x -m -q inbox -E -s "$((SIZE + 40))")
log "(a) raw request/reply round trip using the broker as fleet does"
raw rtt -n "$RTT_N" -r "$RATE" -p 100 "${FLEETLIKE[@]}" -l raw_rtt_fleetlike
log "(a) raw throughput using the broker as fleet does: 8000 messages (under an inbox's cap), window $WINDOW"
raw tput -n 8000 -w "$WINDOW" -p 100 "${FLEETLIKE[@]}" -B "$(cat "$WORK/mq/rabbitmq.pid")" -l raw_tput_fleetlike
fi

# ---- (b) four gateways ----
HOSTS=(hostA hostB hostC hostD)
SEAL=true
PAIRSEAL=true
start_fleetd() { # HOST
  local h=$1 d=$WORK/$1
  mkdir -p "$d"
  local extra=",\"pairSeal\":$PAIRSEAL"
  [ -n "$PREFETCH" ] && extra="$extra,\"prefetch\":$PREFETCH"
  printf '{"logLevel":"%s","broker":{"uri":"%s","presenceIntervalMs":500,"seal":%s%s}}\n' \
    "$LOG_LEVEL" "$URI" "$SEAL" "$extra" >"$d/fleetd.json"
  : >"$d/fleetd.log"
  "$BUILD/fleetd" --state-dir "$d/state" --socket "$d/fleetd.sock" --host-id "$h" \
    --broker "$URI" --config "$d/fleetd.json" 2>"$d/fleetd.log" &
  FLEETD_PIDS+=($!)
}
wait_up() { # HOST
  local d=$WORK/$1
  for _ in $(seq 200); do
    if [ -S "$d/fleetd.sock" ] && grep -q "broker link is up" "$d/fleetd.log" 2>/dev/null; then
      return 0
    fi
    sleep 0.1
  done
  echo "bench: fleetd $1 did not come up with its broker link in 20 s; its log:" >&2
  tail -n 30 "$d/fleetd.log" >&2
  exit 1
}
stop_all() {
  local pid
  for pid in "${FLEETD_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${FLEETD_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  FLEETD_PIDS=()
}
start_all() {
  local h
  for h in "${HOSTS[@]}"; do start_fleetd "$h"; done
  for h in "${HOSTS[@]}"; do wait_up "$h"; done
}
log "(b) starting fleetd ${HOSTS[*]} (log level $LOG_LEVEL${PREFETCH:+, prefetch $PREFETCH}), sealing on"
start_all
SA=$WORK/hostA/fleetd.sock
SB=$WORK/hostB/fleetd.sock
SC=$WORK/hostC/fleetd.sock
SD=$WORK/hostD/fleetd.sock

# Trust: each gateway pins every other's key (kept in the state dirs across
# the restart below).
pubkey() { # HOST
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["publicKey"])' \
    "$WORK/$1/state/node-identity.json"
}
for h in "${HOSTS[@]}"; do
  for o in "${HOSTS[@]}"; do
    [ "$h" = "$o" ] && continue
    "$BUILD/fleetctl" --socket "$WORK/$h/fleetd.sock" peer add "$o" "$(pubkey "$o")" >>"$WORK/pin.out" 2>&1 ||
      { cat "$WORK/pin.out" >&2; exit 1; }
  done
done
log "pinned every gateway's key on every other"


# VmRSS and its parts (RssAnon: heap and stacks; RssFile: the binary and
# its libraries' pages; RssShmem: the SQLite WAL index) of PID, in KiB; then
# every part of bench/rss_parts.sh (heap, static data, each library, ...)
# into results.txt alone.
rss_parts() { # PID LABEL
  awk -v l="$2" '/^(VmRSS|RssAnon|RssFile|RssShmem):/ { printf "RESULT %s.%s_kib %s\n", l, $1, $2 }' \
    "/proc/$1/status" | sed 's/:_kib/_kib/' | tee -a "$RESULTS" | sed 's/^/  /' >&2
  bash "$REPO/bench/rss_parts.sh" "$1" "$2.part" >>"$RESULTS"
}

# Throughput with the CPU each side spent on it: the sending gateway
# (hostA), the receiving one (hostB) and the broker, per message, over the
# whole run.
tput_cpu() { # SUFFIX
  local x=$1 beam a0 a1 b0 b1 q0 q1
  beam=$(cat "$WORK/mq/rabbitmq.pid")
  a0=$(cpu_s "${FLEETD_PIDS[0]}"); b0=$(cpu_s "${FLEETD_PIDS[1]}"); q0=$(cpu_s "$beam")
  fb tput "$SA" "$SB" -n "$N" -s "$SIZE" -w "$WINDOW" -l "fleet_tput$x"
  a1=$(cpu_s "${FLEETD_PIDS[0]}"); b1=$(cpu_s "${FLEETD_PIDS[1]}"); q1=$(cpu_s "$beam")
  {
    echo "RESULT fleet_tput$x.sender_us_per_msg $(awk -v a="$a0" -v b="$a1" -v n="$N" 'BEGIN { printf "%.1f", (b - a) * 1e6 / n }')"
    echo "RESULT fleet_tput$x.receiver_us_per_msg $(awk -v a="$b0" -v b="$b1" -v n="$N" 'BEGIN { printf "%.1f", (b - a) * 1e6 / n }')"
    echo "RESULT fleet_tput$x.broker_us_per_msg $(awk -v a="$q0" -v b="$q1" -v n="$N" 'BEGIN { printf "%.1f", (b - a) * 1e6 / n }')"
  } | tee -a "$RESULTS" | sed 's/^/  /' >&2
}
# Each gateway's RSS, read after a throughput run.
rss_both() { # SUFFIX
  rss_parts "${FLEETD_PIDS[0]}" "rss_a$1"
  rss_parts "${FLEETD_PIDS[1]}" "rss_b$1"
}
# The raw throughput baseline, run with the gateways up (and idle), as raw_tput_PAIR.
raw_tput_run() { # PAIR
  raw tput -n "$N" -s "$SIZE" -w "$RAW_WINDOW" -p 100 -B "$(cat "$WORK/mq/rabbitmq.pid")" -l "raw_tput_$1"
}
# fleet_tput_PAIR; the RSS is read after the first.
fleet_tput_run() { # PAIR
  tput_cpu "_$1"
  if [ "$1" = 1 ]; then rss_both ""; fi
}
raw_rtt_run() { # PAIR
  raw rtt -n "$RTT_N" -s "$SIZE" -r "$RATE" -p 100 -l "raw_rtt_$1"
}
fleet_u1_run() { # PAIR
  fb rtt "$SA" "$SB" -n "$RTT_N" -s "$SIZE" -r "$RATE" -l "fleet_u1_$1"
}
# Throughput in pairs: the raw baseline and fleet back to back, the order
# alternating from pair to pair, TPUT_PAIRS times. The ratio is the geometric
# mean of the pairs' ratios (fleet_tput_vs_raw.msgs_per_s), each figure the
# median of its runs (raw_tput.*, fleet_tput.*). The RSS is read after the
# first fleet run, 20,000 messages in, as with one run.
tput_pairs() {
  log "(b) cross-host throughput: raw ($N x $SIZE B, confirms window $RAW_WINDOW, prefetch 100) and fleet ($N x $SIZE B, hostA -> hostB, window $WINDOW, poll max 100), $TPUT_PAIRS pairs of runs"
  pairs_run "$TPUT_PAIRS" raw_tput_run fleet_tput_run
  pairs_summary raw_tput fleet_tput "$TPUT_PAIRS" raw_tput fleet_tput fleet_tput_vs_raw msgs_per_s |
    tee -a "$RESULTS" | sed 's/^/  /' >&2
}
# U1 in pairs with the raw request/reply, as tput_pairs does (fleet_u1_vs_raw.p50_ms, .p99_ms).
u1_pairs() {
  # The throughput runs leave disk work behind (the broker's message store,
  # hostB's WAL checkpoint): let it finish before timing single calls.
  sleep 10
  log "(b) U1 round trip hostA -> hostB (send wait_s, reply) and the raw request/reply, at $RATE/s x $RTT_N each, $U1_PAIRS pairs of runs"
  pairs_run "$U1_PAIRS" raw_rtt_run fleet_u1_run
  pairs_summary raw_rtt fleet_u1 "$U1_PAIRS" raw_rtt fleet_u1 fleet_u1_vs_raw p50_ms p99_ms |
    tee -a "$RESULTS" | sed 's/^/  /' >&2
}

measure() { # SUFFIX ("" sealed, "_signed" pairSeal false, "_clear" in clear)
  local x=$1
  if [ -z "$x" ]; then
    tput_pairs
    u1_pairs
  else
    log "(b$x) fleet cross-host throughput: $N x $SIZE B, hostA -> hostB, window $WINDOW, poll max 100"
    tput_cpu "$x"
    rss_both "$x"
    log "(b$x) fleet U1 round trip hostA -> hostB at $RATE/s x $RTT_N (send wait_s, reply)"
    fb rtt "$SA" "$SB" -n "$RTT_N" -s "$SIZE" -r "$RATE" -l "fleet_u1$x"
  fi
  [ "$x" = _signed ] && return 0
  if [ -z "$x" ]; then
    log "(b) the same U1 with both agents' sessions through fleet-mcp (stdio), as an MCP client's"
    fb rtt "$SA" "$SB" -n "$RTT_N" -s "$SIZE" -r "$RATE" -m "$BUILD/fleet-mcp" -l fleet_u1_mcp
    # 32 pairs, each calling again as soon as its answer is read (the rate is
    # a ceiling, not a pace): 32 calls in flight, direct and then through
    # one fleet-mcp per session.
    # One run of each reads the hop anywhere from 0.85 to 1.56 on 2 shared
    # cores (the same build twice: 0.91 and 1.23), and the second run of
    # two was often the slower, whichever it was. So runs go in pairs, direct and
    # through fleet-mcp back to back, the order alternating from pair to
    # pair; the hop is the geometric mean of the pairs' ratios (with as
    # many pairs of each order, a steady drift cancels out), and each
    # figure the median of its runs.
    log "(b) U1 with 32 calls in flight (32 pairs x $C32_N, unpaced), direct and through fleet-mcp, $C32_PAIRS pairs of runs"
    pairs_run "$C32_PAIRS" c32_direct_run c32_mcp_run
    pairs_summary c32_direct c32_mcp "$C32_PAIRS" fleet_u1_c32 fleet_u1_c32_mcp fleet_u1_c32_hop p50_ms >>"$RESULTS"
  fi
  log "(b$x) fleet broadcast hostA -> hostB, hostC, hostD at $RATE/s x $BCAST_N"
  fb bcast "$SA" "$SB" "$SC" "$SD" -n "$BCAST_N" -s "$SIZE" -r "$RATE" -l "fleet_bcast$x"
}
# One 32-in-flight run: direct sessions, or each through its own fleet-mcp.
c32_direct_run() { # PAIR
  fb rtt "$SA" "$SB" -c 32 -n "$C32_N" -W 2 -s "$SIZE" -r 10000 -l "c32_direct_$1"
}
c32_mcp_run() { # PAIR
  fb rtt "$SA" "$SB" -c 32 -n "$C32_N" -W 2 -s "$SIZE" -r 10000 -m "$BUILD/fleet-mcp" -l "c32_mcp_$1"
}
if [ "$TPUT_ONLY" = 1 ]; then
  BEAM=$(cat "$WORK/mq/rabbitmq.pid")
  log "(b) the broker idle with the gateways up, 5 s"
  i0=$(cpu_s "$BEAM")
  sleep 5
  i1=$(cpu_s "$BEAM")
  tput_pairs
  FL_T=$(get fleet_tput.msgs_per_s)
  RAW_T=$(get raw_tput.msgs_per_s)
  IDLE=$(pct "$i0" "$i1" 5)
  {
    echo
    echo "throughput only: $N x $SIZE B, fleetd log level $LOG_LEVEL, medians of $TPUT_PAIRS pairs of runs"
    echo
    printf '| %-58s | %12s | %12s | %14s |\n' "metric" "baseline" "fleet" "fleet/baseline"
    printf '|%s|%s|%s|%s|\n' "$(printf -- '-%.0s' $(seq 60))" "$(printf -- '-%.0s' $(seq 14))" \
      "$(printf -- '-%.0s' $(seq 14))" "$(printf -- '-%.0s' $(seq 16))"
    printf '| %-58s | %12s | %12s | %14s |\n' "throughput msgs/s: raw 1 queue vs fleet hostA->hostB" "$RAW_T" "$FL_T" "$(get fleet_tput_vs_raw.msgs_per_s)"
    printf '| %-58s | %12s | %12s | %14s |\n' "broker CPU us per message (over the whole run)" "$(get raw_tput.broker_us_per_msg)" "$(get fleet_tput.broker_us_per_msg)" "$(ratio "$(get fleet_tput.broker_us_per_msg)" "$(get raw_tput.broker_us_per_msg)")"
    echo
    echo "  the throughput ratio is the geometric mean of the pairs' (each pair: $(pairs_list fleet_tput_vs_raw msgs_per_s "$TPUT_PAIRS"))"
    echo "  sending / receiving gateway CPU us per message: $(get fleet_tput.sender_us_per_msg) / $(get fleet_tput.receiver_us_per_msg)"
    echo "  broker CPU % of a core with the four gateways up and idle: $IDLE"
    echo "  fleet sends the broker nacked because hostB's inbox was full: $(get fleet_tput.refused_full)"
    echo "  fleet receiver: $(get fleet_tput.polls) polls, mean $(get fleet_tput.mean_batch), max $(get fleet_tput.max_batch) messages per poll"
    echo
    echo "whole run: $(($(date +%s) - T_START)) s"
  } | tee "$WORK/table.txt"
  exit 0
fi
measure ""
# ---- (c) one gateway ----
log "(c) fleet local round trip on hostA at $RATE/s x $RTT_N (send wait_s, reply)"
fb rtt "$SA" "$SA" -n "$RTT_N" -s "$SIZE" -r "$RATE" -l fleet_local

LOG_LINES_A=$(wc -l <"$WORK/hostA/fleetd.log")
LOG_LINES_B=$(wc -l <"$WORK/hostB/fleetd.log")

# ---- (g) the signed form: broker.pairSeal false, every message signed ----
log "(g) restarting the gateways with broker.pairSeal false (the signed form)"
stop_all
PAIRSEAL=false
start_all
measure "_signed"
PAIRSEAL=true

# ---- (d) the same in clear: broker.seal false, one broadcast publish ----
log "(d) restarting the gateways with broker.seal false"
stop_all
SEAL=false
start_all
measure "_clear"
stop_all
# ---- (f) presence at scale, with the other gateways stopped ----
sim_run

# ---- the table ----

RAW_T=$(get raw_tput.msgs_per_s)
FL_T=$(get fleet_tput.msgs_per_s)
RAW_L=$(get raw_lat.p50_ms)
RAW_L99=$(get raw_lat.p99_ms)
RAW_R=$(get raw_rtt.p50_ms)
RAW_R99=$(get raw_rtt.p99_ms)
U1=$(get fleet_u1.p50_ms)
U1_99=$(get fleet_u1.p99_ms)
LOC=$(get fleet_local.p50_ms)
LOC99=$(get fleet_local.p99_ms)
R_T=$(get fleet_tput_vs_raw.msgs_per_s)
R_U1=$(ratio "$U1" "$RAW_L")
R_U1R=$(get fleet_u1_vs_raw.p50_ms)
R_U1R99=$(get fleet_u1_vs_raw.p99_ms)
FL_TC=$(get fleet_tput_clear.msgs_per_s)
U1C=$(get fleet_u1_clear.p50_ms)
U1C_99=$(get fleet_u1_clear.p99_ms)
BC=$(get fleet_bcast.p50_ms)
BC_99=$(get fleet_bcast.p99_ms)
BCC=$(get fleet_bcast_clear.p50_ms)
BCC_99=$(get fleet_bcast_clear.p99_ms)
R_SEAL_U1=$(ratio "$U1" "$U1C")
R_SEAL_T=$(ratio "$FL_T" "$FL_TC")

{
  echo
  echo "fleet benchmark — $(nproc) cores, $N x $SIZE B messages, round trips at $RATE/s x $RTT_N, fleetd log level $LOG_LEVEL"
  echo "(sealed throughput and U1 with their raw baselines: medians of $TPUT_PAIRS and $U1_PAIRS pairs of runs, each ratio the geometric mean of its pairs')"
  echo
  printf '| %-58s | %12s | %12s | %14s |\n' "metric" "baseline" "fleet" "fleet/baseline"
  printf '|%s|%s|%s|%s|\n' "$(printf -- '-%.0s' $(seq 60))" "$(printf -- '-%.0s' $(seq 14))" \
    "$(printf -- '-%.0s' $(seq 14))" "$(printf -- '-%.0s' $(seq 16))"
  printf '| %-58s | %12s | %12s | %14s |\n' "throughput msgs/s: raw 1 queue vs fleet hostA->hostB" "$RAW_T" "$FL_T" "$R_T"
  printf '| %-58s | %12s | %12s | %14s |\n' "round trip p50 ms: raw one-way p50 vs fleet U1 p50" "$RAW_L" "$U1" "$R_U1"
  printf '| %-58s | %12s | %12s | %14s |\n' "round trip p50 ms: raw request/reply p50 vs fleet U1 p50" "$RAW_R" "$U1" "$R_U1R"
  printf '| %-58s | %12s | %12s | %14s |\n' "round trip p99 ms: raw request/reply p99 vs fleet U1 p99" "$RAW_R99" "$U1_99" "$R_U1R99"
  printf '| %-58s | %12s | %12s | %14s |\n' "U1 p50 ms: socket direct vs through fleet-mcp (stdio)" "$U1" "$(get fleet_u1_mcp.p50_ms)" "$(ratio "$(get fleet_u1_mcp.p50_ms)" "$U1")"
  printf '| %-58s | %12s | %12s | %14s |\n' "U1 p99 ms: socket direct vs through fleet-mcp (stdio)" "$U1_99" "$(get fleet_u1_mcp.p99_ms)" "$(ratio "$(get fleet_u1_mcp.p99_ms)" "$U1_99")"
  printf '| %-58s | %12s | %12s | %14s |\n' "U1 p50 ms, 32 in flight: direct vs through fleet-mcp" "$(get fleet_u1_c32.p50_ms)" "$(get fleet_u1_c32_mcp.p50_ms)" "$(get fleet_u1_c32_hop.p50_ms)"
  printf '| %-58s | %12s | %12s | %14s |\n' "U1 p99 ms, 32 in flight: direct vs through fleet-mcp" "$(get fleet_u1_c32.p99_ms)" "$(get fleet_u1_c32_mcp.p99_ms)" "$(ratio "$(get fleet_u1_c32_mcp.p99_ms)" "$(get fleet_u1_c32.p99_ms)")"
  printf '| %-58s | %12s | %12s | %14s |\n' "U1 calls/s, 32 in flight: direct vs through fleet-mcp" "$(get fleet_u1_c32.calls_per_s)" "$(get fleet_u1_c32_mcp.calls_per_s)" "$(ratio "$(get fleet_u1_c32_mcp.calls_per_s)" "$(get fleet_u1_c32.calls_per_s)")"
  printf '| %-58s | %12s | %12s | %14s |\n' "throughput msgs/s: raw using the broker as fleet does" "$(get raw_tput_fleetlike.msgs_per_s)" "$FL_T" "$(ratio "$FL_T" "$(get raw_tput_fleetlike.msgs_per_s)")"
  printf '| %-58s | %12s | %12s | %14s |\n' "round trip p50 ms: raw req/reply as fleet uses the broker" "$(get raw_rtt_fleetlike.p50_ms)" "$U1" "$(ratio "$U1" "$(get raw_rtt_fleetlike.p50_ms)")"
  printf '| %-58s | %12s | %12s | %14s |\n' "local round trip (one gateway) p50 ms, vs raw req/reply" "$RAW_R" "$LOC" "$(ratio "$LOC" "$RAW_R")"
  printf '| %-58s | %12s | %12s | %14s |\n' "local round trip (one gateway) p99 ms, vs raw req/reply" "$RAW_R99" "$LOC99" "$(ratio "$LOC99" "$RAW_R99")"
  echo
  echo "the cost of sealing (sealed, the default, vs broker.seal false):"
  echo
  printf '| %-58s | %12s | %12s | %14s |\n' "metric" "in clear" "sealed" "sealed/clear"
  printf '|%s|%s|%s|%s|\n' "$(printf -- '-%.0s' $(seq 60))" "$(printf -- '-%.0s' $(seq 14))" \
    "$(printf -- '-%.0s' $(seq 14))" "$(printf -- '-%.0s' $(seq 16))"
  printf '| %-58s | %12s | %12s | %14s |\n' "throughput msgs/s hostA->hostB" "$FL_TC" "$FL_T" "$R_SEAL_T"
  printf '| %-58s | %12s | %12s | %14s |\n' "U1 p50 ms" "$U1C" "$U1" "$R_SEAL_U1"
  printf '| %-58s | %12s | %12s | %14s |\n' "U1 p99 ms" "$U1C_99" "$U1_99" "$(ratio "$U1_99" "$U1C_99")"
  printf '| %-58s | %12s | %12s | %14s |\n' "broadcast to 3 hosts p50 ms: 1 publish vs 3 sealed copies" "$BCC" "$BC" "$(ratio "$BC" "$BCC")"
  printf '| %-58s | %12s | %12s | %14s |\n' "broadcast to 3 hosts p99 ms: 1 publish vs 3 sealed copies" "$BCC_99" "$BC_99" "$(ratio "$BC_99" "$BCC_99")"
  echo
  echo "other numbers:"
  echo "  raw one-way publish->consume at $RATE/s: p50 $RAW_L ms, p99 $RAW_L99 ms; at $LAT_RATE/s: p50 $(get raw_lat$LAT_RATE.p50_ms) ms, p99 $(get raw_lat$LAT_RATE.p99_ms) ms"
  echo "  raw publisher confirmed/s: $(get raw_tput.confirmed_per_s); fleet sender's sends answered/s: $(get fleet_tput.sent_per_s)"
  echo "  fleet sends the broker nacked because hostB's inbox was full (resent after 5 ms): $(get fleet_tput.refused_full)"
  echo "  fleet receiver: $(get fleet_tput.polls) polls, mean $(get fleet_tput.mean_batch), max $(get fleet_tput.max_batch) messages per poll"
  echo "  fleetd log lines: hostA $LOG_LINES_A, hostB $LOG_LINES_B"
  echo
  echo "the signed form (broker.pairSeal false) vs the pair-sealed form (the default), sealed:"
  echo
  printf '| %-58s | %12s | %12s | %14s |\n' "metric" "signed" "pair-sealed" "pair/signed"
  printf '|%s|%s|%s|%s|\n' "$(printf -- '-%.0s' $(seq 60))" "$(printf -- '-%.0s' $(seq 14))" \
    "$(printf -- '-%.0s' $(seq 14))" "$(printf -- '-%.0s' $(seq 16))"
  for row in "throughput msgs/s hostA->hostB:fleet_tput%s.msgs_per_s" \
    "sender gateway CPU us per message:fleet_tput%s.sender_us_per_msg" \
    "receiver gateway CPU us per message:fleet_tput%s.receiver_us_per_msg" \
    "broker CPU us per message:fleet_tput%s.broker_us_per_msg" \
    "U1 p50 ms:fleet_u1%s.p50_ms" "U1 p99 ms:fleet_u1%s.p99_ms" \
    "hostA RSS MiB after the throughput run:rss_a%s.VmRSS_kib" \
    "hostB RSS MiB after the throughput run:rss_b%s.VmRSS_kib"; do
    # shellcheck disable=SC2059
    k1=$(printf "${row#*:}" _signed); k2=$(printf "${row#*:}" "")
    v1=$(get "$k1"); v2=$(get "$k2")
    case $k1 in *_kib) v1=$(mib "$v1"); v2=$(mib "$v2") ;; esac
    printf '| %-58s | %12s | %12s | %14s |\n' "${row%%:*}" "$v1" "$v2" "$(ratio "$v2" "$v1")"
  done
  echo
  echo "  what each gateway's RSS holds after the throughput run (MiB: anon = heap and stacks,"
  echo "  file = binary and libraries, shmem = SQLite's WAL index):"
  for h in a b; do
    echo "    host${h^^}: $(mib "$(get rss_$h.VmRSS_kib)") = anon $(mib "$(get rss_$h.RssAnon_kib)") + file $(mib "$(get rss_$h.RssFile_kib)") + shmem $(awk -v k="$(get rss_$h.RssShmem_kib)" 'BEGIN { printf "%.1f", k / 1024 }')"
  done
  echo
  RA=$(mib "$(get rss_a.VmRSS_kib)"); RB=$(mib "$(get rss_b.VmRSS_kib)")
  echo "targets (issue 28, on the sealed default):"
  echo "  cross-host throughput >= 0.4 x raw (the geometric mean of $TPUT_PAIRS pairs of runs = $R_T): $(verdict "$R_T" '>=' 0.4)"
  echo "  (each pair: $(pairs_list fleet_tput_vs_raw msgs_per_s "$TPUT_PAIRS"))"
  echo "  U1 p50 <= 2.0 x raw request/reply p50 (the geometric mean of $U1_PAIRS pairs of runs = $R_U1R): $(verdict "$R_U1R" '<=' 2.0)"
  echo "  U1 p99 <= 2.5 x raw request/reply p99 (the same pairs = $R_U1R99): $(verdict "$R_U1R99" '<=' 2.5)"
  echo "  (each pair, p50: $(pairs_list fleet_u1_vs_raw p50_ms "$U1_PAIRS")p99: $(pairs_list fleet_u1_vs_raw p99_ms "$U1_PAIRS"))"
  echo "  hostA RSS after the throughput run <= 12 MiB (= $RA): $(verdict "$RA" '<=' 12)"
  echo "  hostB RSS after the throughput run <= 12 MiB (= $RB): $(verdict "$RB" '<=' 12)"
  echo "  the aim: U1 p50 <= 1.5 x raw request/reply p50 (= $R_U1R): $(verdict "$R_U1R" '<=' 1.5)"
  echo "earlier targets, kept:"
  echo "  cross-host throughput >= 0.5 x raw (= $R_T): $(verdict "$R_T" '>=' 0.5)"
  echo "  round-trip p50 <= 4 x raw publish->consume p50 at $RATE/s (fleet U1 p50 / raw one-way p50 = $R_U1): $(verdict "$R_U1" '<=' 4)"
  echo "  sealing costs U1 p50 at most 10% (sealed U1 p50 / clear U1 p50 = $R_SEAL_U1): $(verdict "$R_SEAL_U1" '<=' 1.10)"
  R_HOP=$(get fleet_u1_c32_hop.p50_ms)
  echo "  the stdio hop adds at most 15% to U1 p50 with 32 calls in flight (through fleet-mcp / direct, the geometric mean of $C32_PAIRS pairs of runs = $R_HOP): $(verdict "$R_HOP" '<=' 1.15)"
  echo "  (each pair: $(pairs_list fleet_u1_c32_hop p50_ms "$C32_PAIRS"))"
  echo "  (with one call in flight: through fleet-mcp / direct = $(ratio "$(get fleet_u1_mcp.p50_ms)" "$U1"), for information)"
  embedded_table
  sim_table
  echo
  echo "whole run: $(($(date +%s) - T_START)) s"
} | tee "$WORK/table.txt"
