#!/usr/bin/env bash
# check-layers.sh — checks that every #include "…" follows fleet's layers.
#
# The layers, lowest first: common/ <- gateway/ <- mcp/ <- clients/. A .c or
# .h file in a layer may include headers of its own layer or a lower one,
# never a higher one and never anything outside the layers (tests/, bench/).
# Files under tests/ and bench/ (unit tests, fuzz targets, benchmarks) may
# include anything. Every quoted include must also name a header that
# exists, found beside the including file or from the root, as the compiler
# looks (the root is the one include directory the build adds). Angle-bracket
# includes are system headers and not checked. Since an include can only go
# down, no two layers can depend on each other in a circle.
#
# Inside gateway/, the core (core/, inject/) reaches the cross-host side
# (fabric/, broker/) only through core/remote.h's table of operations, so a
# core file may not include a cross-host header. remote.c, the seam that starts the
# backend, is the one exception.
#
# Usage: scripts/check-layers.sh [ROOT]   (ROOT defaults to the repository)
# Prints one line per problem, "file:line: #include "x": why", and exits 1 if
# there was any, 0 if none, 2 if ROOT is not a directory. Skips build trees
# (build/, build-*/), node_modules/, dot directories and tests/layers/ (the
# fixture trees of this check's own test, which are wrong on purpose).
set -euo pipefail

root=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
if [ ! -d "$root" ]; then
  printf 'check-layers: %s is not a directory (usage: check-layers.sh [ROOT])\n' "$root" >&2
  exit 2
fi
cd "$root"

# Relative paths keep the report short and the same on every machine.
status=0
find . \( -path ./build -o -path './build-*' -o -name node_modules -o -path './.*' \
  -o -path ./tests/layers \) -prune -o -type f \( -name '*.c' -o -name '*.h' \) -print |
  sed 's|^\./||' | LC_ALL=C sort | tr '\n' '\0' |
  xargs -0 -r awk '
    # The layer a path is in: its rank, or 0 for tests/bench (anything goes)
    # and -1 for a file outside every layer that is not a test either.
    function rank(p,   top) {
      top = p
      sub(/\/.*/, "", top)
      if (top == p) return -1
      if (top == "common") return 1
      if (top == "gateway") return 2
      if (top == "mcp") return 3
      if (top == "clients") return 4
      if (top == "tests" || top == "bench") return 0
      return -1
    }
    function layer(p,   top) {
      top = p
      sub(/\/.*/, "", top)
      return top == p ? "the top level" : top "/"
    }
    # a/b/../c -> a/c, ./x -> x; a path climbing above the root stays as is.
    function norm(p,   n, parts, out, k, i) {
      n = split(p, parts, "/")
      k = 0
      for (i = 1; i <= n; i++) {
        if (parts[i] == "" || parts[i] == ".") continue
        if (parts[i] == ".." && k > 0 && out[k] != "..") { k--; continue }
        out[++k] = parts[i]
      }
      p = ""
      for (i = 1; i <= k; i++) p = p (i > 1 ? "/" : "") out[i]
      return p
    }
    function exists(p,   line, r) {
      if (p in seen) return seen[p]
      r = (getline line < p) >= 0
      if (r) close(p)
      seen[p] = r
      return r
    }
    FNR == 1 {
      dir = FILENAME
      if (!sub(/\/[^\/]*$/, "", dir)) dir = "."
      from = rank(FILENAME)
    }
    /^[ \t]*#[ \t]*include[ \t]*"/ {
      inc = $0
      sub(/^[ \t]*#[ \t]*include[ \t]*"/, "", inc)
      if (!sub(/".*/, "", inc)) next
      # As the compiler does: beside the including file first, then the root.
      beside = norm(dir "/" inc)
      if (exists(beside)) target = beside
      else if (exists(norm(inc))) target = norm(inc)
      else {
        printf "%s:%d: #include \"%s\": no such header (not at %s nor %s)\n", \
          FILENAME, FNR, inc, beside, norm(inc)
        bad++
        next
      }
      if (from <= 0) next
      to = rank(target)
      if (to <= 0) {
        printf "%s:%d: #include \"%s\": %s is in no layer; %s may include only common/, gateway/, mcp/, clients/ headers at or below its own layer\n", \
          FILENAME, FNR, inc, target, layer(FILENAME)
        bad++
      } else if (to > from) {
        printf "%s:%d: #include \"%s\": %s may not include %s, a higher layer (common <- gateway <- mcp <- clients: include only your own layer or a lower one)\n", \
          FILENAME, FNR, inc, layer(FILENAME), layer(target)
        bad++
      }
      if (FILENAME ~ /^gateway\/(core|inject)\// && target ~ /^gateway\/(fabric\/(fabric|presence|inbound)\.h|broker\/)/ &&
          FILENAME != "gateway/core/remote.c") {
        printf "%s:%d: #include \"%s\": the gateway core may not include the cross-host side; reach it through gateway/core/remote.h\n", \
          FILENAME, FNR, inc
        bad++
      }
    }
    END { exit bad ? 1 : 0 }
  ' || status=$?
# xargs says 123 when an awk run found problems; anything else is a failure
# of the check itself.
case $status in
0) exit 0 ;;
1 | 123) exit 1 ;;
*)
  printf 'check-layers: the check itself failed (status %s)\n' "$status" >&2
  exit 2
  ;;
esac
