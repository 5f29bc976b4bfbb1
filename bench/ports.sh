# ports.sh — sourced by the bench scripts: the port of a private broker.
#
# bench_port prints a port in 5900-5999 (clear of the test suite's
# 5700-5899) that is free on 127.0.0.1, with the one 20000 above it free
# too (tests/rabbitmq.sh puts the node's distribution port there); or
# fails after 50 tries.
bench_port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
bench_port() {
  local p
  for _ in $(seq 50); do
    p=$((5900 + RANDOM % 100))
    if bench_port_free "$p" && bench_port_free $((p + 20000)); then
      echo "$p"
      return 0
    fi
  done
  return 1
}
