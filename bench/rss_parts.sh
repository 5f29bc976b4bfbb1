#!/usr/bin/env bash
# bench/rss_parts.sh — what a process's resident memory is made of, by part,
# from /proc/PID/smaps (what bench/README.md's RSS table is read from).
#
#   bash bench/rss_parts.sh PID [LABEL]
#
# Prints one "RESULT LABEL.PART_kib N" line per part with resident pages,
# largest first, then LABEL.total_kib (the sum, = VmRSS). The parts:
#   heap         the main heap ([heap], brk)
#   stack        the main thread's stack
#   thread_stacks  the other threads' stacks (an 8 MiB mapping above its
#                guard page, glibc's default)
#   arenas       anonymous mappings that start a malloc arena's 64 MiB
#                aligned reservation (the other threads' malloc arenas)
#   bss:NAME     the zeroed static data of the binary or of one library
#                (the anonymous mapping right after its file), once written
#   anon_other   every other anonymous mapping (large malloc blocks, the
#                libraries' own buffers)
#   shmem        shared memory (SQLite's WAL index, holds.db-shm)
#   lib:NAME     the file pages of one library or of the binary, by file name
# LABEL defaults to "rss".
set -euo pipefail

[ $# -ge 1 ] || { echo "usage: bash bench/rss_parts.sh PID [LABEL]" >&2; exit 2; }
pid=$1
label=${2:-rss}
awk -v l="$label" '
  function hex(h,   i, v) { # mawk has no strtonum
    v = 0
    for (i = 1; i <= length(h); i++) v = v * 16 + index("0123456789abcdef", substr(h, i, 1)) - 1
    return v
  }
  function flush() {
    if (cur != "") parts[cur] += rss
    cur = ""; rss = 0
  }
  /^[0-9a-f]+-[0-9a-f]+ / {
    flush()
    split($1, ad, "-")
    lo = hex(ad[1]); hi = hex(ad[2])
    size_kib = (hi - lo) / 1024
    perms = $2
    name = (NF >= 6) ? $6 : ""
    file = ""
    if (name == "[heap]") cur = "heap"
    else if (name == "[stack]") cur = "stack"
    else if (name ~ /^\[/) cur = "anon_other"
    else if (name ~ /-shm$/ || name ~ /^\/dev\/shm\// || name ~ /^\/(SYSV|memfd:)/) cur = "shmem"
    else if (name != "") { file = name; sub(/.*\//, "", file); sub(/\.so[.0-9]*$/, "", file); cur = "lib:" file }
    else if (lo == prev_hi && prev_file != "" && perms ~ /^rw/) cur = "bss:" prev_file
    else if (perms ~ /^rw/ && prev_guard && lo == prev_hi && (size_kib == 8188 || size_kib == 8192)) cur = "thread_stacks"
    else if (perms ~ /^rw/ && lo % 67108864 == 0) cur = "arenas"
    else cur = "anon_other"
    prev_guard = (perms == "---p" && name == "")
    prev_hi = hi
    prev_file = file
    next
  }
  /^Rss:/ { rss = $2 }
  END {
    flush()
    for (p in parts) { if (parts[p] > 0) printf "RESULT %s.%s_kib %d\n", l, p, parts[p]; tot += parts[p] }
    printf "RESULT %s.total_kib %d\n", l, tot
  }' "/proc/$pid/smaps" | sort -t' ' -k3,3nr
