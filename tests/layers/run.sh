#!/usr/bin/env bash
# run.sh — the test of scripts/check-layers.sh, run by ctest (check_layers).
#
# good/ is a tiny fake tree with its own rank table (scripts/ranks.txt):
# common/ (-1) <- gateway/core/ and gateway/gw.h (0) <- gateway/verbs/,
# gateway/rooms/ (1) <- gateway/ (2) <- mcp/ (3) <- clients/ (4), plus tests/.
# Its includes all follow the ranks, including relative and "../" ones; the
# check must pass on it and print nothing. bad/ is the same tree with one
# wrong include, gateway/x.c including "mcp/y.h"; the check must fail and
# name exactly that file, line and include. More wrong trees are made from
# good/ in a temporary directory: a missing header, a ranked file including
# a test header, common/ including gateway/, the core including a higher
# rank, two folders of the same rank, an allow-listed include (passes), a
# stale allow entry, and a docs rank table that differs from the file.
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
  '^gateway/x\.c:5: #include "mcp/y\.h": gateway/ \(rank 2\) may not include mcp/ \(rank 3\), a higher rank$'

cp -r "$here/good" "$tmp/missing"
printf '#include "gateway/nope.h"\n' >>"$tmp/missing/mcp/y.c"
expect "a missing header fails" "$tmp/missing" 1 \
  '^mcp/y\.c:8: #include "gateway/nope\.h": no such header'

cp -r "$here/good" "$tmp/testhdr"
mkdir -p "$tmp/testhdr/tests/support"
printf '/* util.h */\n' >"$tmp/testhdr/tests/support/util.h"
printf '#include "tests/support/util.h"\n' >>"$tmp/testhdr/clients/tool.c"
expect "a layer including tests/ fails" "$tmp/testhdr" 1 \
  '^clients/tool\.c:7: #include "tests/support/util\.h": tests/support/util\.h is in no folder of scripts/ranks\.txt'

cp -r "$here/good" "$tmp/common"
printf '#include "../gateway/x.h"\n' >>"$tmp/common/common/base.c"
expect "common including gateway (relative path) fails" "$tmp/common" 1 \
  '^common/base\.c:5: #include "\.\./gateway/x\.h": common/ \(rank -1\) may not include gateway/ \(rank 2\)'

cp -r "$here/good" "$tmp/core"
printf '#include "gateway/verbs/verb.h"\n' >>"$tmp/core/gateway/core/core.h"
expect "the core including a higher rank fails" "$tmp/core" 1 \
  '^gateway/core/core\.h:6: #include "gateway/verbs/verb\.h": gateway/core/ \(rank 0\) may not include gateway/verbs/ \(rank 1\), a higher rank$'

cp -r "$here/good" "$tmp/same"
printf '#include "../rooms/room.h"\n' >>"$tmp/same/gateway/verbs/verb.h"
expect "two folders of the same rank fail" "$tmp/same" 1 \
  '^gateway/verbs/verb\.h:7: #include "\.\./rooms/room\.h": gateway/verbs/ and gateway/rooms/ are both rank 1: neither may include the other$'

cp -r "$tmp/same" "$tmp/listed"
printf '# known\ngateway/verbs/verb.h -> gateway/rooms/room.h\n' >"$tmp/listed/scripts/ranks-allow-includes.txt"
expect "an allow-listed include passes" "$tmp/listed" 0

cp -r "$here/good" "$tmp/stale"
printf 'gateway/verbs/verb.h -> gateway/rooms/room.h\n' >"$tmp/stale/scripts/ranks-allow-includes.txt"
expect "a stale allow entry fails" "$tmp/stale" 1 \
  'stale allow entry \(no such include any more; take it off the list\): gateway/verbs/verb\.h -> gateway/rooms/room\.h$'

cp -r "$here/good" "$tmp/docs"
mkdir -p "$tmp/docs/docs"
docs_table() {
  printf '# map\n\n<!-- rank table -->\n| rank | folder | holds |\n| ---: | --- | --- |\n'
  printf '| −1 | `common/` | base |\n| 0 | `gateway/core/`, `gateway/gw.h` | core |\n'
  printf '| 1 | `gateway/verbs/` | verbs |\n| %s | `gateway/rooms/` | rooms |\n' "$1"
  printf '| 2 | `gateway/` | top |\n| 3 | `mcp/` | mcp |\n| 4 | `clients/` | clients |\n\nafter\n'
}
docs_table 1 >"$tmp/docs/docs/architecture.md"
expect "a docs rank table that matches passes" "$tmp/docs" 0
docs_table 2 >"$tmp/docs/docs/architecture.md"
expect "a docs rank table that differs fails" "$tmp/docs" 1 \
  '^docs/architecture\.md: the rank table .*does not match scripts/ranks\.txt: it has \[.*2 gateway/rooms;.*\], the file \[.*1 gateway/rooms;.*\]$'

expect "a missing root is a usage error" "$tmp/no-such-dir" 2 'no-such-dir is not a directory'

if [ "$fails" -ne 0 ]; then
  printf 'check-layers test: %d failed\n' "$fails"
  exit 1
fi
printf 'check-layers test: all passed\n'
