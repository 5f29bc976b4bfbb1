#!/usr/bin/env bash
# check-layers.sh — checks that every #include "…" follows fleet's ranks.
#
# The ranks come from ROOT/scripts/ranks.txt, one row per folder, lowest
# first: common/, each folder of gateway/, the top of gateway/, mcp/,
# clients/. A .c or .h file may include headers of its own folder or of a
# lower rank, never a higher one, and two folders of the same rank never
# include each other; so no two folders include each other in a circle.
# Nothing ranked includes a file in no row (tests/, bench/). Files under
# tests/ and bench/ (unit tests, fuzz targets, benchmarks) may include
# anything. Every quoted include must also name a header that exists, found
# beside the including file or from the root, as the compiler looks (the root
# is the one include directory the build adds). Angle-bracket includes are
# system headers and not checked.
#
# Includes that break a rank and are known, still to be removed, are listed
# in ROOT/scripts/ranks-allow-includes.txt as "FILE -> HEADER". A listed
# include passes; a listed one that is gone fails as stale, so the list only
# shrinks. When ROOT has docs/architecture.md, its rank table (the table
# after the line "<!-- rank table -->") must give each folder and file of
# ranks.txt the same rank.
#
# Usage: scripts/check-layers.sh [ROOT]   (ROOT defaults to the repository)
# Prints one line per problem, "file:line: #include "x": why", and exits 1 if
# there was any, 0 if none, 2 if ROOT is not a directory or has no rank
# table. Skips build trees (build/, build-*/), node_modules/, dot directories
# and tests/layers/ (the fixture trees of this check's own test, which are
# wrong on purpose).
set -euo pipefail

root=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
if [ ! -d "$root" ]; then
  printf 'check-layers: %s is not a directory (usage: check-layers.sh [ROOT])\n' "$root" >&2
  exit 2
fi
cd "$root"
table=scripts/ranks.txt
allow=scripts/ranks-allow-includes.txt
if [ ! -f "$table" ]; then
  printf 'check-layers: %s has no rank table (%s)\n' "$root" "$table" >&2
  exit 2
fi

# Pass 1 prints each problem as "E<TAB>line" (always a failure) or
# "R<TAB>FILE -> HEADER<TAB>line" (a broken rank, which the allow-list may
# pass); pass 2 applies the allow-list. Relative paths keep the report short
# and the same on every machine.
found=$(mktemp)
trap 'rm -f "$found"' EXIT
status=0
find . \( -path ./build -o -path './build-*' -o -name node_modules -o -path './.*' \
  -o -path ./tests/layers \) -prune -o -type f \( -name '*.c' -o -name '*.h' \) -print |
  sed 's|^\./||' | LC_ALL=C sort | tr '\n' '\0' |
  xargs -0 -r awk -v table="$table" '
    # The rank table: "rank folder [file...]"; "acyclic" lines are for
    # check-modules.sh.
    FILENAME == table {
      sub(/#.*/, "")
      if (NF < 2 || $1 == "acyclic") next
      for (i = 2; i <= NF; i++) {
        p = $i
        sub(/\/$/, "", p)
        rowrank[p] = $1 + 0
        rowfolder[p] = $2
        sub(/\/$/, "", rowfolder[p])
      }
      next
    }
    # The row of a path: its longest matching folder or file, or "".
    function row(p,   best, r) {
      best = ""
      for (r in rowrank)
        if ((p == r || substr(p, 1, length(r) + 1) == r "/") && length(r) > length(best)) best = r
      return best
    }
    function free(p) { return p ~ /^(tests|bench)\// }
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
      from = row(FILENAME)
    }
    /^[ \t]*#[ \t]*include[ \t]*"/ {
      inc = $0
      sub(/^[ \t]*#[ \t]*include[ \t]*"/, "", inc)
      if (!sub(/".*/, "", inc)) next
      where = FILENAME ":" FNR ": #include \"" inc "\": "
      # As the compiler does: beside the including file first, then the root.
      beside = norm(dir "/" inc)
      if (exists(beside)) target = beside
      else if (exists(norm(inc))) target = norm(inc)
      else {
        printf "E\t%sno such header (not at %s nor %s)\n", where, beside, norm(inc)
        next
      }
      if (from == "" || free(FILENAME)) next
      to = row(target)
      ff = rowfolder[from]
      tf = rowfolder[to]
      if (to == "") {
        printf "E\t%s%s is in no folder of %s; %s/ may include only ranked folders at or below its own rank\n", \
          where, target, table, ff
      } else if (tf == ff) {
        next
      } else if (rowrank[to] > rowrank[from]) {
        printf "R\t%s -> %s\t%s%s/ (rank %d) may not include %s/ (rank %d), a higher rank\n", \
          FILENAME, target, where, ff, rowrank[from], tf, rowrank[to]
      } else if (rowrank[to] == rowrank[from]) {
        printf "R\t%s -> %s\t%s%s/ and %s/ are both rank %d: neither may include the other\n", \
          FILENAME, target, where, ff, tf, rowrank[from]
      }
    }
  ' "$table" >"$found" || status=$?
# xargs says 123 when an awk run failed.
if [ "$status" -ne 0 ]; then
  printf 'check-layers: the check itself failed (status %s)\n' "$status" >&2
  exit 2
fi

# The docs' copy of the table: rows "| rank | `folder/`, `file` | …" after
# the marker, up to the first line that is not a table row.
docs=docs/architecture.md
if [ -f "$docs" ]; then
  want=$(awk '{ sub(/#.*/, "") } NF >= 2 && $1 != "acyclic" {
      for (i = 2; i <= NF; i++) { p = $i; sub(/\/$/, "", p); print $1 + 0, p } }' "$table" | LC_ALL=C sort)
  have=$(awk -F'|' '
      /^<!-- rank table -->/ { on = 1; next }
      on && !/^\|/ && n > 0 { exit }
      on && /^\|/ {
        n++
        r = $2; gsub(/[ \t]/, "", r); sub(/^−/, "-", r)
        if (r !~ /^-?[0-9]+$/) next
        k = split($3, cell, ",")
        for (i = 1; i <= k; i++) { p = cell[i]; gsub(/[ \t`]/, "", p); sub(/\/$/, "", p); print r + 0, p }
      }' "$docs" | LC_ALL=C sort)
  if [ "$want" != "$have" ]; then
    printf 'E\t%s: the rank table (after "<!-- rank table -->") does not match %s: it has [%s], the file [%s]\n' \
      "$docs" "$table" "$(printf '%s' "$have" | tr '\n' ';')" "$(printf '%s' "$want" | tr '\n' ';')" >>"$found"
  fi
fi

awk -F'\t' -v allow="$allow" '
  BEGIN {
    while ((getline line < allow) > 0) {
      sub(/#.*/, "", line)
      gsub(/^[ \t]+|[ \t]+$/, "", line)
      if (line != "") listed[line] = 1
    }
  }
  $1 == "E" { print $2; bad++; next }
  $1 == "R" { hit[$2] = 1; if (!($2 in listed)) { print $3; bad++ } }
  END {
    for (k in listed)
      if (!(k in hit)) { printf "%s: stale allow entry (no such include any more; take it off the list): %s\n", allow, k; bad++ }
    exit bad ? 1 : 0
  }
' "$found"
