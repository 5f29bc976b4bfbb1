#!/usr/bin/env bash
# check-format.sh — checks the C sources follow the repository's .clang-format.
#
# Runs `clang-format --dry-run --Werror` over every tracked *.c and *.h under
# common/ gateway/ mcp/ clients/ tests/ bench/ (every such file, when the
# tree is not a git checkout) and prints each file that differs. Fix one with
# `clang-format -i FILE`; the Debian package is clang-format (scripts/test.sh
# installs it).
#
# FLEET_FORMAT_CHECK: unset or "enforce" exits 1 when any file differs;
# "warn" prints the same report and exits 0 (for a tree not yet formatted).
# Exits 2 when clang-format is missing or FLEET_FORMAT_CHECK has another value.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

mode=${FLEET_FORMAT_CHECK:-enforce}
case $mode in
enforce | warn) ;;
*)
  printf 'check-format: FLEET_FORMAT_CHECK=%s is not one of enforce, warn\n' "$mode" >&2
  exit 2
  ;;
esac
if ! command -v clang-format >/dev/null 2>&1; then
  printf 'check-format: clang-format is not installed (apt-get install clang-format, or run scripts/test.sh)\n' >&2
  exit 2
fi

dirs=(common gateway mcp clients tests bench)
files=()
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  while IFS= read -r -d '' f; do
    # A tracked file deleted in the work tree is not there to check.
    [ -f "$f" ] && files+=("$f")
  done < <(git ls-files -z -- "${dirs[@]/%//*.c}" "${dirs[@]/%//*.h}")
else
  while IFS= read -r -d '' f; do
    files+=("${f#./}")
  done < <(find "${dirs[@]}" -name node_modules -prune -o -type f \( -name '*.c' -o -name '*.h' \) -print0 2>/dev/null)
fi

# One clang-format over every file first: starting it is most of its cost
# (a run per file takes some 20 times as long). Only when that finds a
# difference does a run per file name each file that differs.
differ=0
if [ "${#files[@]}" -gt 0 ] && ! clang-format --dry-run --Werror "${files[@]}" >/dev/null 2>&1; then
  for f in "${files[@]}"; do
    if ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then
      printf 'check-format: %s differs from .clang-format (fix: clang-format -i %s)\n' "$f" "$f"
      differ=$((differ + 1))
    fi
  done
fi

if [ "$differ" -eq 0 ]; then
  printf 'check-format: all %d files follow .clang-format\n' "${#files[@]}"
  exit 0
fi
if [ "$mode" = warn ]; then
  printf 'check-format: %d of %d files differ (FLEET_FORMAT_CHECK=warn: reported, not enforced)\n' \
    "$differ" "${#files[@]}"
  exit 0
fi
printf 'check-format: %d of %d files differ from .clang-format\n' "$differ" "${#files[@]}"
exit 1
