#!/usr/bin/env bash
# bench/broker_cost.sh — what each of fleet's ways of using the broker costs
# the broker, one at a time, side by side in one run.
#
#   bash bench/broker_cost.sh
#
# Builds the drivers (bench/build/), starts a throwaway RabbitMQ on loopback
# (tests/rabbitmq.sh), and runs the raw throughput measurement
# (amqp_baseline tput) once per variant, each switching on one thing fleet
# does that the plain baseline does not (bench/README.md lists them). For
# each it reports the broker's CPU per message (the node's utime + stime over
# the run), msgs/s, the client's CPU per message, and the broker's CPU over
# the plain run's. Every variant runs BENCH_ROUNDS times, interleaved with the
# others, and the median round is reported. Stops the broker (trap). Knobs:
#
#   BENCH_N=8000         messages per run (the backlog variants need fewer than
#                        the inbox cap, 10000: beyond it the broker refuses them)
#   BENCH_SIZE=1024      bytes per message (the envelope variants add fleet's
#                        sealing overhead, 40 bytes)
#   BENCH_RAW_WINDOW=1000  unconfirmed publishes in flight (as bench/run.sh)
#   BENCH_ROUNDS=3       runs of every variant
#   BENCH_VARIANTS="..." the variants to run, by name with spaces as _ (default: all)
#   BENCH_PORT=          the broker's port (default: a free one in 5900-5999)
#   BENCH_NO_BUILD=1     skip building
#   BENCH_MODE=rtt       instead of throughput, the request/reply round trip
#                        (amqp_baseline rtt, BENCH_RTT_N calls at BENCH_RATE/s,
#                        default 300 at 20/s, as bench/run.sh's raw_rtt) per
#                        variant, with the variants that apply to one call at a
#                        time; reports p50 and p99 and each over the plain run's
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
BBUILD=$REPO/bench/build
N=${BENCH_N:-8000}
SIZE=${BENCH_SIZE:-1024}
WINDOW=${BENCH_RAW_WINDOW:-1000}
ROUNDS=${BENCH_ROUNDS:-3}
SEALED=$((SIZE + 40))

# name|amqp_baseline options (the fleet-like window is fleetd's cap, 64)
ALL_VARIANTS=(
  "plain|"
  "topic|-x"
  "mandatory|-m"
  "q-dlx|-q dlx"
  "q-maxlen|-q maxlen"
  "q-maxlen+overflow|-q maxlen,overflow"
  "q-ttl|-q ttl"
  "q-expires|-q expires"
  "q-type|-q type"
  "q-inbox (all six)|-q inbox"
  "envelope+sealed size|-e -s $SEALED"
  "window 64|-w 64"
  "acks multiple/50|-a 50"
  "acks held to prefetch, 1 by 1|-H"
  "backlog|-b"
  "backlog, acks multiple/50|-b -a 50"
  "backlog+topic|-b -x"
  "backlog+mandatory|-b -m"
  "backlog+q-dlx|-b -q dlx"
  "backlog+q-maxlen+overflow|-b -q maxlen,overflow"
  "backlog+q-ttl|-b -q ttl"
  "backlog+q-expires|-b -q expires"
  "backlog+q-inbox|-b -q inbox"
  "backlog+envelope|-b -e -s $SEALED"
  "prefetch 1000, acks held|-p 1000 -H"
  "q-v2|-q v2"
  "backlog+envelope in 1 header|-b -E -s $SEALED"
  "envelope in 1 header|-E -s $SEALED"
  "fleet-like, backlog+q-v2|-x -m -q inbox,v2 -e -s $SEALED -w 64 -b"
  "fleet-like, backlog, acks multiple/50|-x -m -q inbox -e -s $SEALED -w 64 -b -a 50"
  "fleet-like|-x -m -q inbox -e -s $SEALED -w 64"
  "fleet-like, acks held|-x -m -q inbox -e -s $SEALED -w 64 -H"
  "fleet-like, backlog|-x -m -q inbox -e -s $SEALED -w 64 -b"
  "fleet-like, acks multiple/50|-x -m -q inbox -e -s $SEALED -w 64 -a 50"
)

# The same for the round trip: one call at a time, so no window, backlog or
# ack batching.
RTT_VARIANTS=(
  "plain|"
  "topic|-x"
  "mandatory|-m"
  "q-dlx|-q dlx"
  "q-maxlen+overflow|-q maxlen,overflow"
  "q-ttl|-q ttl"
  "q-expires|-q expires"
  "q-inbox (all six)|-q inbox"
  "envelope in 1 header|-E -s $SEALED"
  "topic+envelope|-x -E -s $SEALED"
  "topic+q-inbox|-x -q inbox"
  "fleet-like|-x -m -q inbox -E -s $SEALED"
)
MODE=${BENCH_MODE:-tput}
RTT_N=${BENCH_RTT_N:-300}
RATE=${BENCH_RATE:-20}
if [ "$MODE" = rtt ]; then
  ALL_VARIANTS=("${RTT_VARIANTS[@]}")
elif [ "$MODE" != tput ]; then
  echo "broker_cost: BENCH_MODE is tput or rtt" >&2
  exit 2
fi

log() { printf '[broker_cost %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

WORK=
MQ_STARTED=0
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  if [ "$MQ_STARTED" = 1 ]; then
    log "stopping the broker"
    sh "$REPO/tests/rabbitmq.sh" stop "$WORK/mq" >/dev/null 2>&1 || true
  fi
  [ -n "$WORK" ] && rm -rf "$WORK"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ "${BENCH_NO_BUILD:-0}" != 1 ]; then
  log "building the drivers in $BBUILD"
  cmake -S "$REPO/bench" -B "$BBUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$BBUILD" -j2 --target amqp_baseline >/dev/null
fi

WORK=$(mktemp -d /tmp/flcost-XXXXXX)
chmod 755 "$WORK" # the node runs as user rabbitmq when we are root
. "$REPO/bench/ports.sh"
PORT=${BENCH_PORT:-}
[ -n "$PORT" ] || PORT=$(bench_port) || { echo "broker_cost: no free port in 5900-5999" >&2; exit 1; }
URI="amqp://guest:guest@127.0.0.1:$PORT/"
log "starting a private RabbitMQ on 127.0.0.1:$PORT"
MQ_STARTED=1
sh "$REPO/tests/rabbitmq.sh" start "$WORK/mq" "$PORT" >"$WORK/mq-start.out" 2>"$WORK/mq-start.err" ||
  { cat "$WORK/mq-start.err" >&2; exit 1; }
BEAM=$(cat "$WORK/mq/rabbitmq.pid")

VARIANTS=()
for v in "${ALL_VARIANTS[@]}"; do
  name=${v%%|*}
  name=${name// /_}
  if [ -z "${BENCH_VARIANTS:-}" ] || [[ " $BENCH_VARIANTS " == *" $name "* ]]; then
    VARIANTS+=("$v")
  fi
done

RESULTS=$WORK/results.txt
: >"$RESULTS"
# A warm-up run, not reported: the first publishes after boot are slower.
"$BBUILD/amqp_baseline" "$URI" tput -n "$N" -s "$SIZE" -w "$WINDOW" -p 100 -l warmup >/dev/null
for r in $(seq "$ROUNDS"); do
  i=0
  for v in "${VARIANTS[@]}"; do
    name=${v%%|*}
    opts=${v#*|}
    log "round $r/$ROUNDS: $name ($opts)"
    # shellcheck disable=SC2086 # opts is a list of options
    if [ "$MODE" = rtt ]; then
      "$BBUILD/amqp_baseline" "$URI" rtt -n "$RTT_N" -s "$SIZE" -r "$RATE" -p 100 $opts \
        -l "v$i.r$r" >>"$RESULTS"
      i=$((i + 1))
      continue
    fi
    "$BBUILD/amqp_baseline" "$URI" tput -n "$N" -s "$SIZE" -w "$WINDOW" -p 100 -B "$BEAM" \
      $opts -l "v$i.r$r" >>"$RESULTS"
    i=$((i + 1))
  done
done

# The median over the rounds of one variant's KEY.
med() { # INDEX KEY
  awk -v pre="v$1." -v k="$2" '$1 == "RESULT" && index($2, pre) == 1 && $2 ~ ("\\." k "$") { print $3 }' "$RESULTS" |
    sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "nan" }'
}
echo
if [ "$MODE" = rtt ]; then
  echo "request/reply round trip by variant: $RTT_N calls x $SIZE B at $RATE/s, prefetch 100, median of $ROUNDS rounds"
  echo
  printf '| %-30s | %-40s | %8s | %8s | %10s | %10s |\n' "variant" "amqp_baseline options" "p50 ms" "p99 ms" "p50/plain" "p99/plain"
  printf '| --- | --- | ---: | ---: | ---: | ---: |\n'
  b50=$(med 0 p50_ms)
  b99=$(med 0 p99_ms)
  i=0
  for v in "${VARIANTS[@]}"; do
    a50=$(med "$i" p50_ms)
    a99=$(med "$i" p99_ms)
    printf '| %-30s | %-40s | %8s | %8s | %10s | %10s |\n' "${v%%|*}" "${v#*|}" "$a50" "$a99" \
      "$(awk -v a="$a50" -v b="$b50" 'BEGIN { printf "%.2f", a / b }')" \
      "$(awk -v a="$a99" -v b="$b99" 'BEGIN { printf "%.2f", a / b }')"
    i=$((i + 1))
  done
  exit 0
fi
echo "broker CPU per message by variant: $N x $SIZE B, window $WINDOW unless said, prefetch 100, median of $ROUNDS rounds"
echo
printf '| %-30s | %-44s | %9s | %9s | %9s | %8s |\n' "variant" "amqp_baseline options" "broker us" "msgs/s" "client us" "broker/plain"
printf '|%s|%s|%s|%s|%s|%s|\n' "$(printf -- '-%.0s' $(seq 32))" "$(printf -- '-%.0s' $(seq 46))" \
  "$(printf -- '-%.0s' $(seq 11))" "$(printf -- '-%.0s' $(seq 11))" "$(printf -- '-%.0s' $(seq 11))" "$(printf -- '-%.0s' $(seq 14))"
base=$(med 0 broker_us_per_msg)
i=0
for v in "${VARIANTS[@]}"; do
  b=$(med "$i" broker_us_per_msg)
  printf '| %-30s | %-44s | %9s | %9s | %9s | %12s |\n' "${v%%|*}" "${v#*|}" "$b" \
    "$(med "$i" msgs_per_s)" "$(med "$i" client_us_per_msg)" \
    "$(awk -v a="$b" -v b="$base" 'BEGIN { if (b + 0 > 0) printf "%.2f", a / b; else print "n/a" }')"
  i=$((i + 1))
done
