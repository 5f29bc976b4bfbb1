#!/usr/bin/env bash
# run.sh — the test of scripts/check-modules.sh, run by ctest (check_modules).
#
# tree/ is a tiny fake source tree with its own rank table (tree/ranks.txt):
# gateway/proto/ (0) <- gateway/core/ (1) <- gateway/verbs/, gateway/rooms/
# (2) <- gateway/ (3) <- mcp/ (4), every call going down. Each case copies
# it, adds one call, compiles every file to an object laid out as CMake does
# (CMakeFiles/<target>.dir/<source>.o) and runs the check on the objects: the
# good tree passes and prints nothing; a wrong-way call, a same-rank call, a
# circle across folders and a file circle in mcp/ each fail with their line;
# an allow-listed edge passes and a stale allow entry fails.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
check=$here/../../scripts/check-modules.sh
cc=${CC:-cc}
tmp=$(mktemp -d /tmp/fleet-modules.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0

# build NAME [FILE...]: compiles FILEs of NAME's copy (every .c when none).
build() {
  local src=$tmp/$1/src f files
  shift
  if [ $# -gt 0 ]; then files=("$@"); else mapfile -t files < <(cd "$src" && find . -name '*.c' | sed 's|^\./||'); fi
  for f in "${files[@]}"; do
    mkdir -p "$(dirname "$src/../build/CMakeFiles/fix.dir/$f")"
    "$cc" -c -o "$src/../build/CMakeFiles/fix.dir/$f.o" "$src/$f"
  done
}

# tree NAME: a copy of tree/ in $tmp/NAME/src, with the good tree's objects
# in $tmp/NAME/build (the first call builds them).
tree() {
  mkdir -p "$tmp/$1"
  cp -r "$here/tree" "$tmp/$1/src"
  if [ "$1" = good ]; then build good; else cp -r "$tmp/good/build" "$tmp/$1/build"; fi
}

# expect NAME STATUS [LINE...]: runs the check on NAME's objects (with
# $tmp/NAME/allow as the allow-list), wants STATUS and exactly the LINEs
# (in any order), or no output when none is given.
expect() {
  local name=$1 want=$2 out rc=0 got wantlines
  shift 2
  out=$(bash "$check" --table "$tmp/$name/src/ranks.txt" --allow "$tmp/$name/allow" \
    "$tmp/$name/build" 2>&1) || rc=$?
  got=$(printf '%s\n' "$out" | sed '/^$/d' | LC_ALL=C sort)
  wantlines=$( (for l in "$@"; do printf '%s\n' "$l"; done) | LC_ALL=C sort)
  if [ "$rc" -ne "$want" ] || [ "$got" != "$wantlines" ]; then
    printf 'FAIL %s: exit status %s (want %s); output:\n%s\nwanted:\n%s\n' "$name" "$rc" "$want" "$out" \
      "$wantlines"
    fails=$((fails + 1))
    return
  fi
  printf 'ok   %s\n' "$name"
}

# call NAME FILE FN: FILE of NAME's copy also calls FN (and is built again).
call() {
  printf 'int %s(void);\nint extra_%s(void);\nint extra_%s(void) { return %s(); }\n' "$3" "$3" "$3" "$3" \
    >>"$tmp/$1/src/$2"
  build "$1" "$2"
}

tree good
expect good 0

tree upward
call upward gateway/core/lone.c v_fn
expect upward 1 'upward: gateway/core/lone.c -> gateway/verbs/v.c: v_fn'

tree samerank
call samerank gateway/verbs/v.c r_fn
expect samerank 1 'same-rank: gateway/verbs/v.c -> gateway/rooms/r.c: r_fn'

tree circle
call circle gateway/core/c.c v_fn
expect circle 1 'upward: gateway/core/c.c -> gateway/verbs/v.c: v_fn' \
  'circle across folders (gateway/core/ gateway/verbs/): gateway/core/c.c -> gateway/verbs/v.c: v_fn; gateway/verbs/v.c -> gateway/core/c.c: c_fn'

tree mcpcircle
call mcpcircle mcp/n.c m_fn
expect mcpcircle 1 'file circle in mcp/: mcp/m.c mcp/n.c'

# A listed edge passes; a listed edge that is gone fails.
tree listed
call listed gateway/core/lone.c v_fn
printf '# known\ngateway/core/lone.c -> gateway/verbs/v.c: v_fn\n' >"$tmp/listed/allow"
expect listed 0

tree stale
printf 'gateway/core/lone.c -> gateway/verbs/v.c: v_fn\n' >"$tmp/stale/allow"
expect stale 1 \
  'stale allow entry (no longer found; take it off allow): gateway/core/lone.c -> gateway/verbs/v.c: v_fn'

tree unranked
mkdir -p "$tmp/unranked/src/clients"
printf 'int t_fn(void);\nint t_fn(void) { return 0; }\n' >"$tmp/unranked/src/clients/t.c"
build unranked clients/t.c
expect unranked 1 'unranked: clients/t.c is in no row of ranks.txt'

rc=0
bash "$check" "$tmp/no-such-dir" >/dev/null 2>&1 || rc=$?
if [ "$rc" -eq 2 ]; then printf 'ok   a missing build dir is a usage error\n'; else
  printf 'FAIL a missing build dir: exit status %s, want 2\n' "$rc"
  fails=$((fails + 1))
fi

if [ "$fails" -ne 0 ]; then
  printf 'check-modules test: %d failed\n' "$fails"
  exit 1
fi
printf 'check-modules test: all passed\n'
