#!/usr/bin/env bash
# test.sh — install what the tests need, build, run every test.
#
# 1. Installs missing Debian packages (the build's, tmux, rabbitmq-server,
#    clang-format, chromium, iproute2 for ss) and the integration suite's
#    node modules (npm ci in tests/
#    when node_modules is missing or package-lock.json changed since the last
#    install).
#    rabbitmq-server is installed but no broker is left running: suites that
#    need one start their own private broker.
# 2. Checks the includes follow the ranks (scripts/check-layers.sh) and the
#    sources follow .clang-format (scripts/check-format.sh).
# 3. Builds build/ (warnings are errors), the benchmark drivers (bench/build,
#    built only, not run) and build-asan/ (Debug, AddressSanitizer + UBSan,
#    warnings are errors).
# 4. Runs the unit tests (ctest, which also runs scripts/check-modules.sh on
#    each tree's objects) in both trees, the real agent CLIs (tests/clis,
#    their own npm install; while build-asan compiles) and the fault suite's
#    short profile against the optimized binaries, then the integration suite
#    (node's test runner) against the sanitizer binaries.
#
# Needs no terminal (CI=true is fine). Exits non-zero if anything failed; the
# last line says which steps passed.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
JOBS=$(nproc 2>/dev/null || echo 2)

say() { printf '%s\n' "test: $*"; }
die() {
  printf '%s\n' "test: error: $*" >&2
  printf '%s\n' "test: FAILED (setup)"
  exit 1
}

export DEBIAN_FRONTEND=noninteractive
SUDO=()
if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then
  SUDO=(sudo -n)
fi

# ---- packages ------------------------------------------------------------
PKGS=(build-essential pkg-config libuv1-dev libjansson-dev libsqlite3-dev libsodium-dev
  librabbitmq-dev libcmocka-dev libmicrohttpd-dev libcurl4-openssl-dev tmux rabbitmq-server openssl
  clang-format systemd chromium iproute2)
command -v cmake >/dev/null 2>&1 || PKGS+=(cmake)

missing=()
for p in "${PKGS[@]}"; do
  if [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" != "install ok installed" ]; then
    missing+=("$p")
  fi
done
if [ "${#missing[@]}" -gt 0 ]; then
  say "installing: ${missing[*]}"
  # The rabbitmq-server package starts a system broker on install. Tell
  # invoke-rc.d not to start services for the duration (unless the machine
  # already has a policy of its own), and stop the broker afterwards anyway.
  policy=/usr/sbin/policy-rc.d
  own_policy=0
  if [ ! -e "$policy" ] && [ "$(id -u)" -eq 0 ]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 755 "$policy" && own_policy=1
  fi
  rc=0
  "${SUDO[@]}" apt-get update -q || rc=$?
  if [ "$rc" -eq 0 ]; then
    "${SUDO[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}" || rc=$?
  fi
  if [ "$own_policy" -eq 1 ]; then rm -f "$policy"; fi
  [ "$rc" -eq 0 ] || die "apt-get failed (status $rc) installing: ${missing[*]}"
  if [[ " ${missing[*]} " == *" rabbitmq-server "* ]]; then
    if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
      "${SUDO[@]}" systemctl stop rabbitmq-server >/dev/null 2>&1 || true
      "${SUDO[@]}" systemctl disable rabbitmq-server >/dev/null 2>&1 || true
    elif command -v service >/dev/null 2>&1; then
      "${SUDO[@]}" service rabbitmq-server stop >/dev/null 2>&1 || true
    fi
    if command -v update-rc.d >/dev/null 2>&1; then
      "${SUDO[@]}" update-rc.d rabbitmq-server disable >/dev/null 2>&1 || true
    fi
  fi
else
  say "packages: all present"
fi

command -v node >/dev/null 2>&1 || die "node (20 or later) is needed for the integration tests"
command -v npm >/dev/null 2>&1 || die "npm is needed for the integration tests"

# ---- node modules for the integration suite --------------------------------
stamp=tests/node_modules/.fleet-lock.sha256
want=$(sha256sum tests/package-lock.json | cut -d' ' -f1)
if [ ! -d tests/node_modules ] || [ "$(cat "$stamp" 2>/dev/null || true)" != "$want" ]; then
  say "npm ci in tests/"
  (cd tests && npm ci --no-audit --no-fund --loglevel=error) || die "npm ci failed"
  echo "$want" >"$stamp"
else
  say "node modules: up to date"
fi

# ---- build and test --------------------------------------------------------
# Each step's output goes to the terminal and to a log, from which the test
# counts are read for the final line.
logdir=$(mktemp -d)
broker_dir=
asan_pid=
cleanup() {
  if [ -n "$asan_pid" ]; then
    kill "$asan_pid" 2>/dev/null || true
  fi
  if [ -n "$broker_dir" ]; then
    bash "$ROOT/tests/rabbitmq.sh" stop "$broker_dir" >/dev/null 2>&1 || true
    rm -rf "$broker_dir"
  fi
  rm -rf "$logdir"
}
trap cleanup EXIT
declare -a passed=() failed=()
tests_passed=0
tests_failed=0
step() {
  local name=$1
  shift
  local log
  log=$logdir/$(printf '%s' "$name" | tr -c 'A-Za-z0-9' '_').log
  say "== $name"
  local ok=0
  if ("$@") 2>&1 | tee "$log"; then ok=1; fi
  # ctest: "100% tests passed, 0 tests failed out of 7"
  local c
  c=$(sed -n 's/.*tests passed, \([0-9]*\) tests\{0,1\} failed out of \([0-9]*\).*/\1 \2/p' "$log" | tail -n 1)
  if [ -n "$c" ]; then
    set -- $c
    tests_failed=$((tests_failed + $1))
    tests_passed=$((tests_passed + $2 - $1))
  fi
  # node --test: "# pass 14" / "# fail 0" (TAP) or "ℹ pass 14" (spec)
  local np nf
  np=$(sed -n 's/^\(# \|ℹ \)pass \([0-9]*\)$/\2/p' "$log" | tail -n 1)
  nf=$(sed -n 's/^\(# \|ℹ \)fail \([0-9]*\)$/\2/p' "$log" | tail -n 1)
  tests_passed=$((tests_passed + ${np:-0}))
  tests_failed=$((tests_failed + ${nf:-0}))
  if [ "$ok" -eq 1 ]; then
    passed+=("$name")
  else
    failed+=("$name")
    say "!! $name failed"
  fi
  [ "$ok" -eq 1 ]
}

build_tree() {
  local dir=$1
  shift
  cmake -S . -B "$dir" -DFLEET_WERROR=ON "$@" >/dev/null && cmake --build "$dir" -j"$JOBS"
}

# The benchmark drivers (bench/) build from some of the product's own
# sources; building them here keeps a moved or added source from breaking
# bench/run.sh unnoticed. They are not run: benchmarks are not tests.
bench_drivers() {
  cmake -S bench -B bench/build -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build bench/build -j"$JOBS"
}

unit_tests() {
  cd "$1" && ctest --output-on-failure -j"$JOBS"
}

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

# The cross-host test files share the broker node started above, each in a
# vhost of its own (tests/integration/broker-harness.mjs); the few that stop,
# kill or restart their broker, or work on the node as a whole, still boot
# their own.
integration() {
  if [ -n "${FLEET_TEST_AMQP_URI:-}" ]; then
    export FLEET_TEST_SHARED_BROKER_DIR=$broker_dir
  fi
  FLEET_BIN_DIR=$ROOT/build-asan node --test --test-concurrency=1 tests/integration/
}

# The fault suite's short profile, against the optimized build (kills of
# brokers and gateways under load, hostile clients, fds and disk running
# out: every *.test.mjs in tests/faults/).
faults() {
  FLEET_BIN_DIR=$ROOT/build FLEET_FAULT_PROFILE=short node --test --test-concurrency=1 tests/faults/
}

# fleet with the real agent CLIs (Claude Code, opencode, Codex; pinned in
# tests/clis/package.json), each against a fake model API on loopback, run
# against the optimized build. Their install runs here, when tests/clis has
# no node_modules or its lock changed since the last install. It is an npm
# install that keeps the lock as it is (--no-save), not npm ci: each CLI's
# packages for other platforms are optional dependencies the registry may
# not serve, which npm ci refuses to leave out.
clis() {
  local stamp=tests/clis/node_modules/.fleet-lock.sha256 want
  want=$(sha256sum tests/clis/package-lock.json | cut -d' ' -f1)
  if [ ! -d tests/clis/node_modules ] || [ "$(cat "$stamp" 2>/dev/null || true)" != "$want" ]; then
    say "npm install in tests/clis/"
    (cd tests/clis && npm install --no-save --no-audit --no-fund --loglevel=error) || return 1
    echo "$want" >"$stamp"
  fi
  FLEET_BIN_DIR=$ROOT/build node --test --test-concurrency=1 tests/clis/
}

# Source checks, before anything is built: they take a second or two.
step "layers" bash scripts/check-layers.sh || true
step "format" bash scripts/check-format.sh || true

# The broker link's unit tests talk to a private RabbitMQ on loopback (the
# cross-host integration suite starts its own). Not starting is a failure:
# tests that need a broker never skip silently here.
broker_dir=$(mktemp -d /tmp/fleet-rmq.XXXXXX)
broker_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1] % 20000 + 5000)')
if step "broker" bash tests/rabbitmq.sh start "$broker_dir" "$broker_port"; then
  export FLEET_TEST_AMQP_URI="amqp://guest:guest@127.0.0.1:$broker_port/"
  export FLEET_TEST_RABBITMQCTL="bash $ROOT/tests/rabbitmq.sh ctl $broker_dir"
fi

# build-asan compiles in the background while the optimized build's unit
# tests and the real CLIs run (they mostly wait on processes); it is done
# before the fault suite starts, whose latency bounds want the cores to
# themselves, and its output is shown as the "build-asan" step.
asan_log=$logdir/build-asan.out
start_asan_build() {
  (build_tree build-asan -DFLEET_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug >"$asan_log" 2>&1) &
  asan_pid=$!
}
# Waits for it here (a step runs in a subshell, which cannot wait for it),
# then shows its output as a step.
asan_rc=0
wait_asan_build() {
  wait "$asan_pid" || asan_rc=$?
  asan_pid=
}
asan_built() {
  cat "$asan_log"
  return "$asan_rc"
}

asan_ok=0
if step "build" build_tree build -DFLEET_SANITIZE=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo; then
  start_asan_build
  step "bench drivers" bench_drivers || true
  step "unit (build)" unit_tests build || true
  step "clis (build)" clis || true
  wait_asan_build
  if step "build-asan" asan_built; then asan_ok=1; fi
  step "faults (build)" faults || true
else
  start_asan_build
  wait_asan_build
  if step "build-asan" asan_built; then asan_ok=1; fi
fi
if [ "$asan_ok" -eq 1 ]; then
  step "unit (build-asan)" unit_tests build-asan || true
  step "integration (build-asan)" integration || true
fi

echo
say "steps passed: ${passed[*]:-none}"
if [ "${#failed[@]}" -eq 0 ]; then
  echo "test: ${tests_passed} passed, ${tests_failed} failed"
  exit 0
fi
say "steps FAILED: ${failed[*]}"
# A failed step without a test count (a build) still counts as a failure.
[ "$tests_failed" -gt 0 ] || tests_failed=${#failed[@]}
echo "test: ${tests_passed} passed, ${tests_failed} failed"
exit 1
