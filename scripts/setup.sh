#!/usr/bin/env bash
# setup.sh — install what fleet needs, build it, and start fleetd.
#
# Installs the missing Debian packages (only when something is missing),
# builds into build/ (RelWithDebInfo), starts fleetd in the background in its
# embedded single-host mode (no broker) and waits until its socket accepts
# connections. If fleetd already answers on its socket, it is left alone.
# Finally prints how to connect Claude Code and opencode, and how to stop it.
#
# Environment: FLEET_STATE_DIR and FLEET_SOCKET choose other places than the
# defaults (state: $XDG_STATE_HOME/fleet or ~/.local/state/fleet; socket:
# $XDG_RUNTIME_DIR/fleet/fleetd.sock or <state>/fleetd.sock). fleetd also
# reads FLEET_HOST_ID and FLEET_BROKER_URI; when they are set, this script
# says so instead of claiming the single-host mode.
#
# Options:
#   --no-start   install and build only; do not start fleetd
#   --broker     also install RabbitMQ (rabbitmq-server), for trying several
#                hosts on one machine (docs/two-hosts.md)
set -euo pipefail

start=1
want_broker=0
for arg in "$@"; do
  case $arg in
  --no-start) start=0 ;;
  --broker) want_broker=1 ;;
  -h | --help)
    sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'
    exit 0
    ;;
  *)
    printf 'setup: unknown option %s (try --help)\n' "$arg" >&2
    exit 2
    ;;
  esac
done

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD

say() { printf '%s\n' "setup: $*"; }
die() {
  printf '%s\n' "setup: error: $*" >&2
  exit 1
}

# ---- packages ------------------------------------------------------------
PKGS=(build-essential pkg-config libuv1-dev libjansson-dev libsqlite3-dev libsodium-dev
  librabbitmq-dev libcmocka-dev libmicrohttpd-dev libcurl4-openssl-dev tmux)
command -v cmake >/dev/null 2>&1 || PKGS+=(cmake)
[ "$want_broker" -eq 0 ] || PKGS+=(rabbitmq-server)

missing=()
for p in "${PKGS[@]}"; do
  if [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" != "install ok installed" ]; then
    missing+=("$p")
  fi
done
if [ "${#missing[@]}" -gt 0 ]; then
  say "installing: ${missing[*]}"
  SUDO=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || die "need root (or sudo) to install: ${missing[*]}"
    SUDO=(sudo)
  fi
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
    "${missing[@]}"
else
  say "packages: all present"
fi

# ---- build ---------------------------------------------------------------
say "building into build/"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc 2>/dev/null || echo 2)"
for b in fleetd fleet-mcp fleetctl; do
  [ -x "build/$b" ] || die "build/$b was not built"
done

if [ "$start" -eq 0 ]; then
  say "built build/fleetd, build/fleet-mcp and build/fleetctl (not started: --no-start)"
  exit 0
fi

# ---- where fleetd lives (the same rules as fleetd's own defaults) ----------
if [ -n "${FLEET_STATE_DIR:-}" ]; then
  state=$FLEET_STATE_DIR
elif [ -n "${XDG_STATE_HOME:-}" ]; then
  state=$XDG_STATE_HOME/fleet
else
  [ -n "${HOME:-}" ] || die "HOME is not set; set FLEET_STATE_DIR"
  state=$HOME/.local/state/fleet
fi
if [ -n "${FLEET_SOCKET:-}" ]; then
  sock=$FLEET_SOCKET
elif [ -n "${XDG_RUNTIME_DIR:-}" ]; then
  sock=$XDG_RUNTIME_DIR/fleet/fleetd.sock
else
  sock=$state/fleetd.sock
fi
log=$state/fleetd.log
pidfile=$state/fleetd.pid
mkdir -p "$state"
chmod 700 "$state"

# Does something accept connections on the socket?
sock_accepts() {
  [ -S "$sock" ] || return 1
  python3 - "$sock" <<'PY' 2>/dev/null
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(2)
s.connect(sys.argv[1])
s.close()
PY
}

# ---- start ---------------------------------------------------------------
if sock_accepts; then
  say "fleetd is already running (socket $sock answers); leaving it as it is"
  running_pid=$(cat "$pidfile" 2>/dev/null || true)
else
  if [ -n "${FLEET_BROKER_URI:-}" ]; then
    mode="broker mode: FLEET_BROKER_URI is set"
  else
    mode="embedded single-host mode"
  fi
  if [ -n "${FLEET_HOST_ID:-}" ]; then
    mode="$mode, host id $FLEET_HOST_ID from FLEET_HOST_ID"
  fi
  say "starting fleetd ($mode), state dir $state, log: $log"
  say "note: the state dir's key is bound to this host id; a second fleetd (another host id,"
  say "      or one with a broker) needs its own FLEET_STATE_DIR and FLEET_SOCKET (docs/two-hosts.md)"
  nohup "$ROOT/build/fleetd" >>"$log" 2>&1 </dev/null &
  running_pid=$!
  echo "$running_pid" >"$pidfile"
  for _ in $(seq 1 150); do
    sock_accepts && break
    if ! kill -0 "$running_pid" 2>/dev/null; then
      tail -n 20 "$log" >&2 || true
      die "fleetd exited during start; see $log"
    fi
    sleep 0.1
  done
  sock_accepts || {
    tail -n 20 "$log" >&2 || true
    die "fleetd did not open $sock within 15 s; see $log"
  }
  say "fleetd is running (pid $running_pid), socket $sock"
fi
# A non-default socket must be written into the client configs.
ctl_cmd=("$ROOT/build/fleetctl")
if [ -n "${FLEET_SOCKET:-}" ] || [ -n "${FLEET_STATE_DIR:-}" ]; then
  ctl_cmd+=(--socket "$sock")
fi
ctl=$(printf '%q ' "${ctl_cmd[@]}")
ctl=${ctl% }
"${ctl_cmd[@]}" status || true

# ---- how to use it -------------------------------------------------------
# Stop exactly the fleetd on this socket: its own pid, as it reports it.
status_pid=$("${ctl_cmd[@]}" status --json 2>/dev/null |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])' 2>/dev/null || true)
if [ -n "$status_pid" ]; then
  stop_cmd="kill $status_pid"
elif [ -n "${running_pid:-}" ] && kill -0 "$running_pid" 2>/dev/null; then
  stop_cmd="kill $running_pid"
else
  stop_cmd="kill \$($ctl status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"pid\"])')"
fi
cat <<EOF

Connect Claude Code (run in your project; FLEET_NAME in the config is the
agent's name, change it per agent):
  $ctl mcp-config claude          # prints .mcp.json content
  claude mcp add-json fleet "\$($ctl mcp-config claude 2>/dev/null | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["mcpServers"]["fleet"]))')"

Connect opencode (merge the "mcp" block into opencode.json):
  $ctl mcp-config opencode

Give each agent its own name with --as, e.g.:
  $ctl --as worker-1 mcp-config claude

See who is connected:
  $ctl roster

Stop this fleetd (SIGTERM to its pid; it drains and exits):
  $stop_cmd
EOF
