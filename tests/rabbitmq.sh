#!/bin/sh
# rabbitmq.sh — a private, throwaway RabbitMQ node for tests.
#
#   tests/rabbitmq.sh start DIR PORT   start a node on 127.0.0.1:PORT; prints its node name
#   tests/rabbitmq.sh stop DIR         stop the node started in DIR and remove DIR
#   tests/rabbitmq.sh ctl DIR ARGS...  run rabbitmqctl ARGS against that node
#   tests/rabbitmq.sh kill9 DIR        kill -9 the node (a crash: nothing is flushed)
#   tests/rabbitmq.sh restart DIR      start the node of DIR again, on its old data
#   tests/rabbitmq.sh join DIR OTHERDIR  make the node of DIR join the cluster of
#                                      the node of OTHERDIR (stop_app,
#                                      join_cluster, start_app)
#
# Everything the node writes (database, logs, config, Erlang cookie) lives
# under DIR, so several nodes (and a system rabbitmq-server from the package
# install) can run side by side: each has its own node name
# (fleettest-PORT@localhost), AMQP port PORT and distribution port
# PORT+20000. Every listener is bound to loopback. The node and rabbitmqctl
# share one cookie through HOME=DIR/home, so no RABBITMQ_ERLANG_COOKIE (which
# newer versions reject). Run as root, the node runs as user `rabbitmq` (the
# Debian package's user), and DIR is handed to that user.
#
# The AMQP URI is amqp://guest:guest@127.0.0.1:PORT/ (guest is allowed on
# loopback). Exit status: 0 ok, 1 failure, 2 usage.
#
# Clusters: the nodes of one cluster must share an Erlang cookie. Set
# FLEET_RMQ_COOKIE (letters and digits, 16-255 of them) for `start` and the
# node (and rabbitmqctl) use it instead of a random one; start each node of
# the cluster with the same value, then `join` every node but the first to
# the first. `join` refuses nodes whose cookies differ.
#
# Optional TLS listener (for amqps:// tests): set FLEET_RMQ_TLS_PORT and
# FLEET_RMQ_TLS_CERTDIR (a directory holding cacert.pem, cert.pem and
# key.pem) for `start`. The three files are copied into DIR/tls (so the
# node's user can read them) and the node also listens for AMQP over TLS on
# 127.0.0.1:FLEET_RMQ_TLS_PORT. Clients are not asked for a certificate.
set -eu

RMQ_BIN=${RMQ_BIN:-/usr/lib/rabbitmq/bin}
# Seconds to wait for the node to finish booting; a cold first boot on a slow
# CI machine takes 5-20 s.
START_TIMEOUT=${RABBITMQ_START_TIMEOUT:-60}

usage() {
  echo "usage: $0 start DIR PORT | stop DIR | ctl DIR ARGS... | kill9 DIR | restart DIR | join DIR OTHERDIR" >&2
  exit 2
}

die() {
  echo "rabbitmq.sh: $*" >&2
  exit 1
}

# Runs "$@" with the node's environment, as the node's user.
as_node() {
  set -- env HOME="$DIR/home" \
    RABBITMQ_NODENAME="$NODE" \
    RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 \
    RABBITMQ_NODE_PORT="$PORT" \
    RABBITMQ_DIST_PORT="$DIST_PORT" \
    RABBITMQ_MNESIA_BASE="$DIR/mnesia" \
    RABBITMQ_LOG_BASE="$DIR/log" \
    RABBITMQ_CONFIG_FILE="$DIR/rabbitmq.conf" \
    RABBITMQ_ADVANCED_CONFIG_FILE="$DIR/advanced.config" \
    RABBITMQ_CONF_ENV_FILE="$DIR/rabbitmq-env.conf" \
    RABBITMQ_ENABLED_PLUGINS_FILE="$DIR/enabled_plugins" \
    RABBITMQ_PID_FILE="$DIR/rabbitmq.pid" \
    RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}" \
    ERL_EPMD_ADDRESS=127.0.0.1 \
    "$@"
  if [ "$(id -u)" = 0 ]; then
    runuser -u rabbitmq -- "$@"
  else
    "$@"
  fi
}

load_node() {
  [ -f "$DIR/node" ] || die "no node was started in $DIR"
  NODE=$(sed -n 1p "$DIR/node")
  PORT=$(sed -n 2p "$DIR/node")
  DIST_PORT=$((PORT + 20000))
}

ctl() {
  as_node "$RMQ_BIN/rabbitmqctl" -n "$NODE" "$@"
}

cmd_start() {
  case "$PORT" in '' | *[!0-9]*) usage ;; esac
  [ "$PORT" -gt 0 ] && [ "$PORT" -lt 45536 ] || die "PORT must be 1..45535 (the distribution port is PORT+20000)"
  NODE="fleettest-$PORT@localhost"
  DIST_PORT=$((PORT + 20000))
  if [ -f "$DIR/node" ]; then
    die "$DIR already holds a node; run '$0 stop $DIR' first"
  fi
  mkdir -p "$DIR/home" "$DIR/mnesia" "$DIR/log"
  cat >"$DIR/rabbitmq.conf" <<EOF
listeners.tcp.1 = 127.0.0.1:$PORT
loopback_users = none
log.file.level = info
log.console = false
EOF
  if [ -n "${FLEET_RMQ_TLS_PORT:-}" ]; then
    case "$FLEET_RMQ_TLS_PORT" in *[!0-9]*) die "FLEET_RMQ_TLS_PORT must be a port number" ;; esac
    [ -n "${FLEET_RMQ_TLS_CERTDIR:-}" ] || die "FLEET_RMQ_TLS_PORT needs FLEET_RMQ_TLS_CERTDIR (cacert.pem, cert.pem, key.pem)"
    mkdir -p "$DIR/tls"
    for f in cacert.pem cert.pem key.pem; do
      [ -r "$FLEET_RMQ_TLS_CERTDIR/$f" ] || die "no readable $FLEET_RMQ_TLS_CERTDIR/$f"
      cp "$FLEET_RMQ_TLS_CERTDIR/$f" "$DIR/tls/$f"
    done
    chmod 600 "$DIR/tls/key.pem"
    cat >>"$DIR/rabbitmq.conf" <<EOF
listeners.ssl.1 = 127.0.0.1:$FLEET_RMQ_TLS_PORT
ssl_options.cacertfile = $DIR/tls/cacert.pem
ssl_options.certfile = $DIR/tls/cert.pem
ssl_options.keyfile = $DIR/tls/key.pem
ssl_options.verify = verify_none
ssl_options.fail_if_no_peer_cert = false
EOF
  fi
  echo '[].' >"$DIR/advanced.config"
  echo '[].' >"$DIR/enabled_plugins"
  : >"$DIR/rabbitmq-env.conf"
  # One cookie for the node and rabbitmqctl; Erlang insists it is private.
  if [ -n "${FLEET_RMQ_COOKIE:-}" ]; then
    case "$FLEET_RMQ_COOKIE" in *[!A-Za-z0-9]*) die "FLEET_RMQ_COOKIE must be letters and digits" ;; esac
    [ ${#FLEET_RMQ_COOKIE} -ge 16 ] && [ ${#FLEET_RMQ_COOKIE} -le 255 ] ||
      die "FLEET_RMQ_COOKIE must be 16-255 characters long"
    printf '%s' "$FLEET_RMQ_COOKIE" >"$DIR/home/.erlang.cookie"
  else
    od -An -N16 -tx1 /dev/urandom | tr -d ' \n' >"$DIR/home/.erlang.cookie"
  fi
  chmod 400 "$DIR/home/.erlang.cookie"
  printf '%s\n%s\n' "$NODE" "$PORT" >"$DIR/node"
  if [ "$(id -u)" = 0 ]; then
    chown -R rabbitmq:rabbitmq "$DIR"
  fi
  # epmd (the Erlang port mapper) is shared by every node on the host; start
  # it if none runs. It stays up, as epmd is designed to.
  if ! epmd -names >/dev/null 2>&1; then
    ERL_EPMD_ADDRESS=127.0.0.1 epmd -daemon || die "cannot start epmd"
  fi
  boot
  echo "$NODE"
}

# Launches the node described by DIR and waits until it serves.
boot() {
  # The outer subshell lives as long as the node: it must not hold the
  # caller's stdout/stderr, or a caller reading them to the end would hang.
  (cd "$DIR" && as_node setsid "$RMQ_BIN/rabbitmq-server" \
    >"$DIR/log/startup.log" 2>&1 </dev/null &) >/dev/null 2>&1 </dev/null
  waited=0
  while :; do
    if ctl await_startup --timeout 5 >/dev/null 2>&1; then
      break
    fi
    waited=$((waited + 5))
    if [ "$waited" -ge "$START_TIMEOUT" ]; then
      echo "rabbitmq.sh: node $NODE did not start in ${START_TIMEOUT}s; last log lines:" >&2
      tail -n 30 "$DIR/log/startup.log" >&2 || true
      cmd_stop_quiet
      exit 1
    fi
    sleep 1
  done
}

# The node's operating-system pid (from its pid file), or nothing.
node_pid() {
  pid=$(cat "$DIR/rabbitmq.pid" 2>/dev/null || true)
  case "$pid" in '' | *[!0-9]*) ;; *) echo "$pid" ;; esac
}

cmd_kill9() {
  load_node
  pid=$(node_pid)
  [ -n "$pid" ] || die "no pid file for the node in $DIR"
  kill -9 "$pid" || die "cannot kill $pid"
  # Gone for good before we return, so a restart does not race it.
  n=0
  while kill -0 "$pid" 2>/dev/null; do
    n=$((n + 1))
    [ "$n" -lt 100 ] || die "node $pid did not die"
    sleep 0.1
  done
  rm -f "$DIR/rabbitmq.pid"
}

cmd_restart() {
  load_node
  boot
  echo "$NODE"
}

# Joins the node of DIR to the cluster of the node of OTHER.
cmd_join() {
  load_node
  [ -f "$OTHER/node" ] || die "no node was started in $OTHER"
  other_node=$(sed -n 1p "$OTHER/node")
  cmp -s "$DIR/home/.erlang.cookie" "$OTHER/home/.erlang.cookie" ||
    die "$DIR and $OTHER have different Erlang cookies; start both with the same FLEET_RMQ_COOKIE"
  ctl stop_app >/dev/null || die "stop_app on $NODE failed"
  ctl join_cluster "$other_node" >/dev/null || die "$NODE could not join $other_node"
  ctl start_app >/dev/null || die "start_app on $NODE failed"
  ctl await_startup --timeout "$START_TIMEOUT" >/dev/null || die "$NODE did not start again after joining"
  echo "$NODE"
}

cmd_stop_quiet() {
  ctl stop >/dev/null 2>&1 || true
  # If the node never answered, end the process we started (by its pid file).
  if [ -f "$DIR/rabbitmq.pid" ]; then
    pid=$(cat "$DIR/rabbitmq.pid" 2>/dev/null || true)
    case "$pid" in '' | *[!0-9]*) ;; *) kill "$pid" 2>/dev/null || true ;; esac
  fi
}

cmd_stop() {
  load_node
  cmd_stop_quiet
  rm -rf "$DIR"
}

[ $# -ge 2 ] || usage
CMD=$1
DIR=$2
case "$DIR" in /*) ;; *) DIR="$(pwd)/$DIR" ;; esac
case "$CMD" in
start)
  [ $# -eq 3 ] || usage
  PORT=$3
  cmd_start
  ;;
stop)
  [ $# -eq 2 ] || usage
  cmd_stop
  ;;
ctl)
  shift 2
  load_node
  ctl "$@"
  ;;
kill9)
  [ $# -eq 2 ] || usage
  cmd_kill9
  ;;
restart)
  [ $# -eq 2 ] || usage
  cmd_restart
  ;;
join)
  [ $# -eq 3 ] || usage
  OTHER=$3
  case "$OTHER" in /*) ;; *) OTHER="$(pwd)/$OTHER" ;; esac
  cmd_join
  ;;
*) usage ;;
esac
