#!/usr/bin/env bash
# bench/compare_crosshost.sh — two builds of fleetd side by side across the
# broker, in one run: what a change to the cross-host path costs or saves.
#
#   bash bench/compare_crosshost.sh OLD_BIN_DIR NEW_BIN_DIR
#
# Starts one private RabbitMQ on loopback (tests/rabbitmq.sh, a port from
# bench/ports.sh). Each round measures the raw request/reply round trip
# (amqp_baseline rtt), then, for OLD and NEW in turn (the order alternates
# each round), starts two gateways hostA and hostB from that build (sealing
# on, the default; each build keeps its own state dirs, so the pins made in
# its first round stay), and measures:
#   - the cross-host U1 round trip (fleet_bench rtt, hostA -> hostB), and
#     each gateway's context switches per call over it (all its threads,
#     from /proc: a thread waking another costs one);
#   - with BENCH_TPUT=1, cross-host throughput (fleet_bench tput) and both
#     gateways' and the broker's CPU per message over it (user + system,
#     from /proc), then each gateway's RSS and its parts (bench/rss_parts.sh;
#     every part is in results.txt, BENCH_KEEP=1);
#   - with BENCH_C32=1, U1 with 32 calls in flight (32 pairs, unpaced,
#     BENCH_C32_N calls each) with direct sessions, then with every session
#     through its own fleet-mcp from the same build dir: the stdio hop.
# Printed: the median over rounds of each, new/old, and each build's U1 p50
# over the raw round trip's median. Knobs: BENCH_ROUNDS (3), BENCH_RATE (20),
# BENCH_RTT_N (300), BENCH_SIZE (1024), BENCH_TPUT (0), BENCH_N (10000),
# BENCH_WINDOW (64), BENCH_C32 (0), BENCH_C32_N (50), BENCH_KEEP=1 keeps the
# work dir. The drivers come from
# bench/build (bench/run.sh builds them); fleetctl is taken from each dir.
set -euo pipefail

[ $# = 2 ] || { echo "usage: bash bench/compare_crosshost.sh OLD_BIN_DIR NEW_BIN_DIR" >&2; exit 2; }
REPO=$(cd "$(dirname "$0")/.." && pwd)
OLD=$(cd "$1" && pwd)
NEW=$(cd "$2" && pwd)
FB=$REPO/bench/build/fleet_bench
AB=$REPO/bench/build/amqp_baseline
ROUNDS=${BENCH_ROUNDS:-3}
RATE=${BENCH_RATE:-20}
RTT_N=${BENCH_RTT_N:-300}
SIZE=${BENCH_SIZE:-1024}
TPUT=${BENCH_TPUT:-0}
N=${BENCH_N:-10000}
WINDOW=${BENCH_WINDOW:-64}
C32=${BENCH_C32:-0}
C32_N=${BENCH_C32_N:-50}
for b in "$OLD/fleetd" "$NEW/fleetd" "$OLD/fleetctl" "$NEW/fleetctl" "$OLD/fleet-mcp" "$NEW/fleet-mcp" \
  "$FB" "$AB"; do
  [ -x "$b" ] || { echo "compare: $b is missing" >&2; exit 1; }
done

WORK=$(mktemp -d /tmp/flxcompare-XXXXXX)
chmod 755 "$WORK" # the node runs as user rabbitmq and must reach its dir
PIDS=()
MQ=0
stop_gateways() {
  local pid
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  PIDS=()
}
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  stop_gateways
  [ "$MQ" = 1 ] && sh "$REPO/tests/rabbitmq.sh" stop "$WORK/mq" >/dev/null 2>&1 || true
  if [ "${BENCH_KEEP:-0}" = 1 ] || [ "$rc" != 0 ]; then
    echo "compare: work dir kept: $WORK" >&2
  else
    rm -rf "$WORK"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
RESULTS=$WORK/results.txt
: >"$RESULTS"

. "$REPO/bench/ports.sh"
PORT=$(bench_port) || { echo "compare: no free port in 5900-5999" >&2; exit 1; }
URI="amqp://guest:guest@127.0.0.1:$PORT/"
MQ=1
sh "$REPO/tests/rabbitmq.sh" start "$WORK/mq" "$PORT" >"$WORK/mq-start.out" 2>"$WORK/mq-start.err" ||
  { cat "$WORK/mq-start.err" >&2; exit 1; }

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
# Context switches of every thread of process $1 so far (voluntary ones are
# a thread going to sleep: each wake-up of one costs one).
ctx_switches() { { cat /proc/"$1"/task/*/status 2>/dev/null || true; } | awk '/^(non)?voluntary_ctxt_switches:/ { n += $2 } END { print n }'; }

start_pair() { # WHICH BIN_DIR
  local h d
  for h in hostA hostB; do
    d=$WORK/$1/$h
    mkdir -p "$d"
    printf '{"logLevel":"info","broker":{"uri":"%s","presenceIntervalMs":500}}\n' "$URI" >"$d/fleetd.json"
    : >"$d/fleetd.log"
    "$2/fleetd" --state-dir "$d/state" --socket "$d/fleetd.sock" --host-id "$h" \
      --config "$d/fleetd.json" 2>"$d/fleetd.log" &
    PIDS+=($!)
  done
  for h in hostA hostB; do
    d=$WORK/$1/$h
    for _ in $(seq 200); do
      [ -S "$d/fleetd.sock" ] && grep -q "broker link is up" "$d/fleetd.log" && break
      sleep 0.1
    done
    grep -q "broker link is up" "$d/fleetd.log" || { tail -n 30 "$d/fleetd.log" >&2; exit 1; }
  done
  if [ ! -e "$WORK/$1/pinned" ]; then
    local key
    for h in hostA hostB; do
      local o=hostB
      [ "$h" = hostB ] && o=hostA
      key=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["publicKey"])' \
        "$WORK/$1/$o/state/node-identity.json")
      "$2/fleetctl" --socket "$WORK/$1/$h/fleetd.sock" peer add "$o" "$key" >>"$WORK/pin.out" 2>&1 ||
        { cat "$WORK/pin.out" >&2; exit 1; }
    done
    : >"$WORK/$1/pinned"
  fi
}

one() { # WHICH BIN_DIR
  start_pair "$1" "$2"
  local sa=$WORK/$1/hostA/fleetd.sock sb=$WORK/$1/hostB/fleetd.sock
  local ca0 cb0
  ca0=$(ctx_switches "${PIDS[0]}"); cb0=$(ctx_switches "${PIDS[1]}")
  "$FB" rtt "$sa" "$sb" -n "$RTT_N" -s "$SIZE" -r "$RATE" -l "$1_u1" >>"$RESULTS"
  awk -v a=$(($(ctx_switches "${PIDS[0]}") - ca0)) -v b=$(($(ctx_switches "${PIDS[1]}") - cb0)) \
    -v n="$RTT_N" -v l="$1" 'BEGIN {
      printf "RESULT %s_u1.ctxsw_a_per_call %.2f\n", l, a / n
      printf "RESULT %s_u1.ctxsw_b_per_call %.2f\n", l, b / n }' >>"$RESULTS"
  if [ "$C32" = 1 ]; then
    "$FB" rtt "$sa" "$sb" -c 32 -n "$C32_N" -W 2 -s "$SIZE" -r 10000 -l "$1_c32" >>"$RESULTS"
    "$FB" rtt "$sa" "$sb" -c 32 -n "$C32_N" -W 2 -s "$SIZE" -r 10000 -m "$2/fleet-mcp" \
      -l "$1_c32_mcp" >>"$RESULTS"
  fi
  if [ "$TPUT" = 1 ]; then
    local a0 a1 b0 b1 m0 m1 beam
    beam=$(cat "$WORK/mq/rabbitmq.pid")
    a0=$(cpu_ticks "${PIDS[0]}"); b0=$(cpu_ticks "${PIDS[1]}"); m0=$(cpu_ticks "$beam")
    "$FB" tput "$sa" "$sb" -n "$N" -s "$SIZE" -w "$WINDOW" -l "$1_tput" >>"$RESULTS"
    a1=$(cpu_ticks "${PIDS[0]}"); b1=$(cpu_ticks "${PIDS[1]}"); m1=$(cpu_ticks "$beam")
    awk -v a=$((a1 - a0)) -v b=$((b1 - b0)) -v m=$((m1 - m0)) -v hz="$(getconf CLK_TCK)" -v n="$N" -v l="$1" 'BEGIN {
      printf "RESULT %s_tput.sender_us_per_msg %.2f\n", l, a / hz * 1e6 / n
      printf "RESULT %s_tput.receiver_us_per_msg %.2f\n", l, b / hz * 1e6 / n
      printf "RESULT %s_tput.broker_us_per_msg %.2f\n", l, m / hz * 1e6 / n }' >>"$RESULTS"
    # Each gateway's resident memory after the run, by part (rss_parts.sh).
    bash "$REPO/bench/rss_parts.sh" "${PIDS[0]}" "$1_rss_a" >>"$RESULTS"
    bash "$REPO/bench/rss_parts.sh" "${PIDS[1]}" "$1_rss_b" >>"$RESULTS"
    awk -v l="$1" '/^(RssAnon|RssFile):/ { printf "RESULT %s_rss_a.%s_kib %s\n", l, substr($1, 1, length($1) - 1), $2 }' \
      "/proc/${PIDS[0]}/status" >>"$RESULTS"
    awk -v l="$1" '/^(RssAnon|RssFile):/ { printf "RESULT %s_rss_b.%s_kib %s\n", l, substr($1, 1, length($1) - 1), $2 }' \
      "/proc/${PIDS[1]}/status" >>"$RESULTS"
  fi
  stop_gateways
}

for r in $(seq "$ROUNDS"); do
  "$AB" "$URI" rtt -n "$RTT_N" -s "$SIZE" -r "$RATE" -p 100 -l raw_rtt >>"$RESULTS"
  if [ $((r % 2)) = 1 ]; then
    one old "$OLD"
    one new "$NEW"
  else
    one new "$NEW"
    one old "$OLD"
  fi
  echo "compare: round $r of $ROUNDS done" >&2
done

. "$REPO/bench/compare_table.sh"
RAW=$(med raw_rtt.p50_ms)
echo
echo "old: $OLD"
echo "new: $NEW"
echo "medians of $ROUNDS rounds, U1 at $RATE/s x $RTT_N, $SIZE B, $(nproc) cores; raw request/reply p50 $RAW ms (p99 $(med raw_rtt.p99_ms))"
echo
table_head
row "cross-host U1 p50 ms" u1.p50_ms
row "cross-host U1 p99 ms" u1.p99_ms
row "cross-host U1 mean ms" u1.mean_ms
row "hostA context switches per U1 call" u1.ctxsw_a_per_call
row "hostB context switches per U1 call" u1.ctxsw_b_per_call
table_line "U1 p50 / raw request/reply p50" \
  "$(ratio "$(med old_u1.p50_ms)" "$RAW")" "$(ratio "$(med new_u1.p50_ms)" "$RAW")" ""
if [ "$TPUT" = 1 ]; then
  row "cross-host throughput msgs/s" tput.msgs_per_s
  row "sending fleetd CPU us per message" tput.sender_us_per_msg
  row "receiving fleetd CPU us per message" tput.receiver_us_per_msg
  row "broker CPU us per message" tput.broker_us_per_msg
  row "hostA RSS KiB after the throughput run" rss_a.total_kib
  row "hostB RSS KiB after the throughput run" rss_b.total_kib
  row "hostA RssAnon KiB" rss_a.RssAnon_kib
  row "hostB RssAnon KiB" rss_b.RssAnon_kib
  row "hostA RssFile KiB" rss_a.RssFile_kib
  row "hostB RssFile KiB" rss_b.RssFile_kib
fi
if [ "$C32" = 1 ]; then
  row "32 in flight, direct: p50 ms" c32.p50_ms
  row "32 in flight, through fleet-mcp: p50 ms" c32_mcp.p50_ms
  row "32 in flight, through fleet-mcp: p99 ms" c32_mcp.p99_ms
  table_line "the stdio hop: through fleet-mcp / direct p50" \
    "$(ratio "$(med old_c32_mcp.p50_ms)" "$(med old_c32.p50_ms)")" \
    "$(ratio "$(med new_c32_mcp.p50_ms)" "$(med new_c32.p50_ms)")" ""
fi
