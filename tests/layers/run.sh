#!/usr/bin/env bash
# run.sh — the test of scripts/check-layers.sh, run by ctest (check_layers).
#
# good/ is a tiny fake tree (common/, gateway/, mcp/, clients/, tests/) whose
# includes all follow the layers, including relative and "../" ones; the
# check must pass on it and print nothing. bad/ is the same tree with one
# wrong include, gateway/x.c including "mcp/y.h"; the check must fail and
# name exactly that file, line and include. Three more wrong trees are made
# from good/ in a temporary directory: a missing header, a layer file
# including a test header, common/ including gateway/, and the gateway core
# including a cross-host header.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
check=$here/../../scripts/check-layers.sh
tmp=$(mktemp -d /tmp/fleet-layers.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0

# expect NAME ROOT STATUS [PATTERN]: runs the check on ROOT, wants STATUS and,
# when given, one output line matching PATTERN (a grep -E expression) and no
# other line.
expect() {
  local name=$1 root=$2 want=$3 pattern=${4-} out rc=0
  out=$(bash "$check" "$root" 2>&1) || rc=$?
  if [ "$rc" -ne "$want" ]; then
    printf 'FAIL %s: exit status %s, want %s; output:\n%s\n' "$name" "$rc" "$want" "$out"
    fails=$((fails + 1))
    return
  fi
  if [ -z "$pattern" ]; then
    if [ -n "$out" ]; then
      printf 'FAIL %s: want no output, got:\n%s\n' "$name" "$out"
      fails=$((fails + 1))
      return
    fi
  elif [ "$(printf '%s\n' "$out" | wc -l)" -ne 1 ] || ! printf '%s\n' "$out" | grep -Eq -- "$pattern"; then
    printf 'FAIL %s: want one line matching /%s/, got:\n%s\n' "$name" "$pattern" "$out"
    fails=$((fails + 1))
    return
  fi
  printf 'ok   %s\n' "$name"
}

expect "good tree passes" "$here/good" 0
expect "gateway including mcp fails" "$here/bad" 1 \
  '^gateway/x\.c:5: #include "mcp/y\.h": gateway/ may not include mcp/, a higher layer'

cp -r "$here/good" "$tmp/missing"
printf '#include "gateway/nope.h"\n' >>"$tmp/missing/mcp/y.c"
expect "a missing header fails" "$tmp/missing" 1 \
  '^mcp/y\.c:8: #include "gateway/nope\.h": no such header'

cp -r "$here/good" "$tmp/testhdr"
mkdir -p "$tmp/testhdr/tests/support"
printf '/* util.h */\n' >"$tmp/testhdr/tests/support/util.h"
printf '#include "tests/support/util.h"\n' >>"$tmp/testhdr/clients/tool.c"
expect "a layer including tests/ fails" "$tmp/testhdr" 1 \
  '^clients/tool\.c:7: #include "tests/support/util\.h": tests/support/util\.h is in no layer'

cp -r "$here/good" "$tmp/common"
printf '#include "../gateway/x.h"\n' >>"$tmp/common/common/base.c"
expect "common including gateway (relative path) fails" "$tmp/common" 1 \
  '^common/base\.c:5: #include "\.\./gateway/x\.h": common/ may not include gateway/'

cp -r "$here/good" "$tmp/core"
mkdir -p "$tmp/core/gateway/fabric" "$tmp/core/gateway/core"
printf '/* fabric.h */\n' >"$tmp/core/gateway/fabric/fabric.h"
printf '#include "gateway/fabric/fabric.h"\n' >"$tmp/core/gateway/core/router.c"
expect "the gateway core including the cross-host side fails" "$tmp/core" 1 \
  '^gateway/core/router\.c:1: #include "gateway/fabric/fabric\.h": the gateway core may not include the cross-host side'

expect "a missing root is a usage error" "$tmp/no-such-dir" 2 'no-such-dir is not a directory'

if [ "$fails" -ne 0 ]; then
  printf 'check-layers test: %d failed\n' "$fails"
  exit 1
fi
printf 'check-layers test: all passed\n'
