#!/usr/bin/env bash
# Stop what ci/docker-up.sh started, and only that: the wheel server and our dockerd (which takes
# its containerd with it). An engine that was already running before docker-up is left alone.
# Safe to run twice, or when docker-up never ran.
set -uo pipefail
state="${SYNCGATE_DOCKER_STATE:-/tmp/syncgate-docker}"
log() { echo "docker-down: $*" >&2; }

# stop PIDFILE NAME SECONDS: SIGTERM, wait, then SIGKILL; removes the pid file.
stop() {
  local pidfile=$1 name=$2 grace=$3 pid
  [[ -f $pidfile ]] || return 0
  pid="$(cat "$pidfile")"
  if kill -0 "$pid" 2>/dev/null; then
    log "stopping $name (pid $pid)"
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 1 $((grace * 4))); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.25
    done
    if kill -0 "$pid" 2>/dev/null; then
      log "$name did not stop in ${grace} s; killing it"
      kill -KILL "$pid" 2>/dev/null
    fi
  fi
  rm -f "$pidfile"
}

stop "$state/wheels.pid" "wheel server" 5
rm -f "$state/wheels.port" "$state/env"
stop "$state/dockerd.pid" dockerd 30
exit 0
