#!/usr/bin/env bash
# run.sh — the link probe's test, run by ctest (link_probe).
#
# Usage: tests/link/run.sh BINARY [LINK_TXT]
# BINARY is tests/link/probe_wait.c linked against the core's library alone.
# Fails, naming each, if the binary defines or needs any rabbitmq-c
# (amqp_*), libmicrohttpd (MHD_*) or libcurl (curl_*) symbol, if it needs
# (DT_NEEDED) one of those libraries, or if its link line (LINK_TXT, the
# link.txt CMake's Makefiles write; skipped when absent) names one.
set -euo pipefail

bin=${1:?usage: run.sh BINARY [LINK_TXT]}
link=${2-}
fails=0

syms=$(nm "$bin" | awk '$NF ~ /^(amqp_|MHD_|curl_)/ { print $NF }' | sort -u)
if [ -n "$syms" ]; then
  printf 'FAIL %s has %d rabbitmq-c, libmicrohttpd or libcurl symbols: %s\n' "$bin" \
    "$(printf '%s\n' "$syms" | wc -l)" "$(printf '%s\n' "$syms" | head -n 8 | tr '\n' ' ')"
  fails=$((fails + 1))
fi
needed=$(objdump -p "$bin" | awk '$1 == "NEEDED" && $2 ~ /^lib(rabbitmq|microhttpd|curl)/ { print $2 }')
if [ -n "$needed" ]; then
  printf 'FAIL %s needs %s\n' "$bin" "$(printf '%s\n' "$needed" | tr '\n' ' ')"
  fails=$((fails + 1))
fi
if [ -n "$link" ] && [ -f "$link" ]; then
  libs=$(tr ' ' '\n' <"$link" | grep -E 'rabbitmq|microhttpd|curl' | sort -u || true)
  if [ -n "$libs" ]; then
    printf 'FAIL the link line names %s\n' "$(printf '%s\n' "$libs" | tr '\n' ' ')"
    fails=$((fails + 1))
  fi
fi
if [ "$fails" -ne 0 ]; then
  exit 1
fi
printf 'ok   %s links no rabbitmq-c, libmicrohttpd or libcurl\n' "$(basename "$bin")"
