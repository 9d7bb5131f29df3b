#!/usr/bin/env bash
# Makes sure a Docker engine answers: if `docker info` fails, installs Debian's docker.io
# when dockerd is missing (as root, with apt-get) and starts dockerd in the background
# (there is no systemd on CI's machines), then waits for it. Exits non-zero, loudly, when
# no engine can be had: the compose test must fail rather than pass without Docker.
set -euo pipefail
CACHE=${SENSORGATE_CACHE:-$HOME/.cache/sensorgate}
mkdir -p "$CACHE"

if docker info >/dev/null 2>&1; then
  exit 0
fi
if ! command -v dockerd >/dev/null 2>&1; then
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "docker-engine: no Docker engine and no dockerd; install docker.io (apt-get install docker.io) or Docker Engine" >&2
    exit 1
  fi
  echo "docker-engine: installing Debian's docker.io"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io >/dev/null
fi
if [ "$(id -u)" != 0 ]; then
  echo "docker-engine: dockerd is installed but not running, and starting it needs root" >&2
  exit 1
fi
# A pid file left by a dockerd that was killed (CI ends what a session left running) stops
# a new one from starting when its pid now belongs to another process.
# A dockerd still shutting down is waited for (up to 30 s).
pidfile=/var/run/docker.pid
for _ in $(seq 1 30); do
  [ -f "$pidfile" ] && [ "$(cat "/proc/$(cat "$pidfile")/comm" 2>/dev/null)" = dockerd ] || break
  sleep 1
done
if [ -f "$pidfile" ] && [ "$(cat "/proc/$(cat "$pidfile")/comm" 2>/dev/null)" != dockerd ]; then
  rm -f "$pidfile"
fi
echo "docker-engine: starting dockerd (log: $CACHE/dockerd.log)"
# setsid: the daemon outlives this make run and its process group (CI ends what it started
# anyway when the run is over).
setsid dockerd >"$CACHE/dockerd.log" 2>&1 </dev/null &
for _ in $(seq 1 60); do
  if docker info >/dev/null 2>&1; then
    docker info --format 'docker-engine: up, server {{.ServerVersion}}, storage {{.Driver}}'
    exit 0
  fi
  sleep 1
done
echo "docker-engine: dockerd did not answer within 60 s; its log:" >&2
tail -30 "$CACHE/dockerd.log" >&2
exit 1
