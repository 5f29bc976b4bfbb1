#!/usr/bin/env bash
# run.sh — builds the libFuzzer targets and runs each for a given time.
#
#   bash tests/fuzz/run.sh [--seconds N] [--runs N] [--jobs N] [--build DIR] [TARGET...]
#
# TARGET is a name such as jsonrpc or fuzz_jsonrpc; with none, every
# tests/fuzz/fuzz_*.c runs. Each target starts from a scratch copy of its
# seed corpus (tests/fuzz/corpus/<name>/, which stays as it is) and runs for
# --seconds (default 60) or --runs executions (default: no cap), whichever
# comes first; --jobs targets run at once (default 1). The build (clang,
# FLEET_FUZZ=ON, ASan + UBSan) goes to --build (default build-fuzz/ in the
# tree). A crash, a sanitizer report, a leak or a broken invariant leaves the
# input as crash-*/leak-*/timeout-* in the target's work directory, printed
# with the result. Prints one line per target: executions, seconds, result.
# Exits 1 when any target failed, 2 on a usage or build error.
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
seconds=60
runs=0
jobs=1
build="$root/build-fuzz"
targets=()

usage() {
  sed -n '3,15p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

while [ $# -gt 0 ]; do
  case "$1" in
  --seconds) seconds=${2:-}; shift 2 ;;
  --runs) runs=${2:-}; shift 2 ;;
  --jobs) jobs=${2:-}; shift 2 ;;
  --build) build=${2:-}; shift 2 ;;
  -h | --help) usage ;;
  -*) echo "run.sh: unknown option $1" >&2; usage ;;
  *) targets+=("${1#fuzz_}"); shift ;;
  esac
done
for n in "$seconds" "$runs" "$jobs"; do
  case "$n" in '' | *[!0-9]*) echo "run.sh: --seconds, --runs and --jobs take a number" >&2; exit 2 ;; esac
done
[ "$jobs" -ge 1 ] || jobs=1

if [ ${#targets[@]} -eq 0 ]; then
  for src in "$here"/fuzz_*.c; do
    n=$(basename "$src" .c)
    targets+=("${n#fuzz_}")
  done
fi
for t in "${targets[@]}"; do
  if [ ! -f "$here/fuzz_$t.c" ] || [ ! -d "$here/corpus/$t" ]; then
    echo "run.sh: no fuzz target $t (tests/fuzz/fuzz_$t.c and tests/fuzz/corpus/$t/)" >&2
    exit 2
  fi
done

command -v clang >/dev/null || { echo "run.sh: clang is needed for libFuzzer" >&2; exit 2; }
echo "run.sh: building ${targets[*]} in $build"
CC=clang cmake -S "$root" -B "$build" -DFLEET_FUZZ=ON -DFLEET_SANITIZE=ON \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$build.cmake.log" 2>&1 ||
  { cat "$build.cmake.log" >&2; echo "run.sh: cmake failed" >&2; exit 2; }
rm -f "$build.cmake.log"
bins=()
for t in "${targets[@]}"; do bins+=("fuzz_$t"); done
cmake --build "$build" -j"$(nproc)" --target "${bins[@]}" >/dev/null ||
  { echo "run.sh: build failed" >&2; exit 2; }

work="$build/runs"
mkdir -p "$work"

# Runs one target; its summary line goes to $work/$t.result.
run_one() {
  local t=$1 dir="$work/$1"
  rm -rf "$dir"
  mkdir -p "$dir/corpus"
  cp "$here/corpus/$t"/* "$dir/corpus/"
  local opts=(-max_total_time="$seconds" -print_final_stats=1 -artifact_prefix="$dir/"
    -max_len=65536 -rss_limit_mb=4096 -timeout=30)
  [ "$runs" -gt 0 ] && opts+=(-runs="$runs")
  local start end rc
  start=$(date +%s)
  (cd "$dir" && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 "$build/fuzz_$t" "${opts[@]}" \
    corpus >"$dir/log" 2>&1)
  rc=$?
  end=$(date +%s)
  local execs cov
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$dir/log" | tail -1 | cut -d' ' -f2)
  local result=clean
  if [ $rc -ne 0 ]; then
    result="FAILED (exit $rc): $(ls "$dir" | grep -E '^(crash|leak|timeout|oom)-' | head -1)"
  fi
  printf '%-12s %12s execs %6s s  cov %-6s %s\n' "$t" "${execs:-?}" $((end - start)) \
    "${cov:-?}" "$result" >"$work/$t.result"
  [ $rc -eq 0 ]
}

cap=""
[ "$runs" -gt 0 ] && cap=" (at most $runs runs)"
echo "run.sh: $seconds s per target$cap, $jobs at a time; logs in $work/<target>/log"
fail=0
pids=()
names=()
for t in "${targets[@]}"; do
  run_one "$t" &
  pids+=($!)
  names+=("$t")
  if [ ${#pids[@]} -ge "$jobs" ]; then
    wait "${pids[0]}" || fail=1
    cat "$work/${names[0]}.result"
    pids=("${pids[@]:1}")
    names=("${names[@]:1}")
  fi
done
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || fail=1
  cat "$work/${names[$i]}.result"
done
if [ $fail -ne 0 ]; then
  echo "run.sh: a target failed; its input is in $work/<target>/" >&2
  exit 1
fi
echo "run.sh: every target ran clean"
