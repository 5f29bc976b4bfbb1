#!/usr/bin/env bash
# run.sh — the fault suite (every *.test.mjs in tests/faults/: broker and
# gateway kills, hostile clients, fds and disk running out) on its own.
#
#   bash tests/faults/run.sh           the short profile (what the test command runs)
#   bash tests/faults/run.sh --long    faults.test.mjs with 20,000 messages, 20 faults of each kind
#
# Uses the binaries in FLEET_BIN_DIR (default: build/, built by scripts/test.sh
# or scripts/setup.sh); FLEET_FAULT_SEED=N replays one run's random choices;
# FLEET_FAULT_KINDS=gateway-kill,... and FLEET_FAULT_EACH=N narrow the faults;
# FLEET_KEEP_TMP=1 keeps each gateway's test dir (fleetd.log has its output).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
profile=short
case "${1:-}" in
  '') ;;
  --long) profile=long ;;
  --short) profile=short ;;
  *)
    echo "usage: bash tests/faults/run.sh [--long]" >&2
    exit 2
    ;;
esac
export FLEET_BIN_DIR=${FLEET_BIN_DIR:-$PWD/build}
[ -x "$FLEET_BIN_DIR/fleetd" ] || {
  echo "faults: no fleetd in $FLEET_BIN_DIR (build first: bash scripts/test.sh, or cmake)" >&2
  exit 1
}
FLEET_FAULT_PROFILE=$profile exec node --test --test-concurrency=1 --test-timeout=0 tests/faults/
