#!/usr/bin/env bash
# bench/compare.sh — two builds of fleetd side by side, in one run, on one
# embedded gateway each (no broker): what a change to fleetd's own path costs
# or saves, as new/old ratios.
#
#   bash bench/compare.sh OLD_BIN_DIR NEW_BIN_DIR
#
# Each round starts an embedded fleetd from OLD, measures it, stops it, then
# does the same with NEW (the order alternates each round, so drift on a
# shared machine hits both alike). Measured per build and round:
#   - local send throughput (sender and receiver on the one gateway; the
#     receiver polls up to 100 at a time), and fleetd's CPU time per message
#     over that run (user + system, from /proc);
#   - the local U1 round trip (send with wait_s, poll, reply) at BENCH_RATE.
# Printed: the median over rounds of each, and new/old. Knobs: BENCH_ROUNDS
# (3), BENCH_N (20000), BENCH_SIZE (1024), BENCH_WINDOW (64), BENCH_RATE (20),
# BENCH_RTT_N (300), BENCH_KEEP=1 keeps the work dir. The drivers come from
# bench/build (bench/run.sh builds them).
set -euo pipefail

[ $# = 2 ] || { echo "usage: bash bench/compare.sh OLD_BIN_DIR NEW_BIN_DIR" >&2; exit 2; }
REPO=$(cd "$(dirname "$0")/.." && pwd)
OLD=$(cd "$1" && pwd)
NEW=$(cd "$2" && pwd)
FB=$REPO/bench/build/fleet_bench
ROUNDS=${BENCH_ROUNDS:-3}
N=${BENCH_N:-20000}
SIZE=${BENCH_SIZE:-1024}
WINDOW=${BENCH_WINDOW:-64}
RATE=${BENCH_RATE:-20}
RTT_N=${BENCH_RTT_N:-300}
for b in "$OLD/fleetd" "$NEW/fleetd" "$FB"; do
  [ -x "$b" ] || { echo "compare: $b is missing" >&2; exit 1; }
done

WORK=$(mktemp -d /tmp/flcompare-XXXXXX)
PID=
cleanup() {
  local rc=$?
  if [ -n "$PID" ]; then
    kill -TERM "$PID" 2>/dev/null || true
    wait "$PID" 2>/dev/null || true
  fi
  if [ "${BENCH_KEEP:-0}" = 1 ] || [ "$rc" != 0 ]; then
    echo "compare: work dir kept: $WORK" >&2
  else
    rm -rf "$WORK"
  fi
}
trap cleanup EXIT
RESULTS=$WORK/results.txt
: >"$RESULTS"

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

one() { # WHICH BIN_DIR ROUND
  local d=$WORK/$1-$3
  mkdir -p "$d"
  printf '{"logLevel":"info"}\n' >"$d/fleetd.json"
  "$2/fleetd" --state-dir "$d/state" --socket "$d/fleetd.sock" --host-id "cmp$1" \
    --config "$d/fleetd.json" 2>"$d/fleetd.log" &
  PID=$!
  for _ in $(seq 200); do
    [ -S "$d/fleetd.sock" ] && break
    sleep 0.05
  done
  local c0 c1
  c0=$(cpu_ticks "$PID")
  "$FB" tput "$d/fleetd.sock" "$d/fleetd.sock" -n "$N" -s "$SIZE" -w "$WINDOW" -l "$1_tput" >>"$RESULTS"
  c1=$(cpu_ticks "$PID")
  awk -v t=$((c1 - c0)) -v hz="$(getconf CLK_TCK)" -v n="$N" -v l="$1" \
    'BEGIN { printf "RESULT %s_tput.cpu_us_per_msg %.2f\n", l, t / hz * 1e6 / n }' >>"$RESULTS"
  "$FB" rtt "$d/fleetd.sock" "$d/fleetd.sock" -n "$RTT_N" -s "$SIZE" -r "$RATE" -l "$1_u1" >>"$RESULTS"
  kill -TERM "$PID"
  wait "$PID" 2>/dev/null || true
  PID=
}

for r in $(seq "$ROUNDS"); do
  if [ $((r % 2)) = 1 ]; then
    one old "$OLD" "$r"
    one new "$NEW" "$r"
  else
    one new "$NEW" "$r"
    one old "$OLD" "$r"
  fi
  echo "compare: round $r of $ROUNDS done" >&2
done

. "$REPO/bench/compare_table.sh"
echo
echo "old: $OLD"
echo "new: $NEW"
echo "medians of $ROUNDS rounds, $N x $SIZE B local sends, U1 at $RATE/s x $RTT_N, $(nproc) cores"
echo
table_head
row "local send throughput msgs/s" tput.msgs_per_s
row "fleetd CPU us per message (send + poll)" tput.cpu_us_per_msg
row "receiver's mean messages per poll" tput.mean_batch
row "local U1 p50 ms" u1.p50_ms
row "local U1 p99 ms" u1.p99_ms
row "local U1 mean ms" u1.mean_ms
