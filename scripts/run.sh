#!/usr/bin/env bash
# `make run`: starts the gateway and whichever backing services are built in bin/ (ocean,
# weather, airquality) on embedded defaults (SQLite files under ./data, simulated
# providers, in-process rate limiting), prints the URL and a ready-to-paste curl line, and
# stops every process it started on Ctrl-C or SIGTERM (deploy/devscripts tests it). Any
# variable of docs/gateway.md may be set to override; OCEAN_ADDR, WEATHER_ADDR and
# AIRQUALITY_ADDR move the services (default 127.0.0.1:8081-8083).
set -euo pipefail
cd "$(dirname "$0")/.."

export SENSORGATE_ENV=${SENSORGATE_ENV:-development}
export DEV_API_KEY=${DEV_API_KEY:-sg_dev_4f7b1d2c9a8e6b3f0d5c7a9e1b2d4f6a}
export GATEWAY_ADDR=${GATEWAY_ADDR:-127.0.0.1:8080}
export SQLITE_PATH=${SQLITE_PATH:-./data/gateway.db}
# The services' addresses (the gateway's SERVICE_URLS follow them unless set).
declare -A addrs=([ocean]=${OCEAN_ADDR:-127.0.0.1:8081} [weather]=${WEATHER_ADDR:-127.0.0.1:8082} [airquality]=${AIRQUALITY_ADDR:-127.0.0.1:8083})
export SERVICE_URLS=${SERVICE_URLS:-ocean=http://${addrs[ocean]},weather=http://${addrs[weather]},airquality=http://${addrs[airquality]}}
mkdir -p data

if [ ! -x bin/gateway ]; then
  echo "run: bin/gateway is missing; build it with: make build" >&2
  exit 1
fi

pids=()
stopping=0
# stop_all signals every process group it started and waits for them; one that is still
# there after STOP_TIMEOUT seconds is killed. A second signal while it stops is ignored, not
# fatal: GNU make passes a SIGTERM on to its children, so `kill -TERM -- -<make's group>`
# reaches this script twice in a row, and dying at the second one would leave every binary
# running without a parent.
stop_all() {
  [ "$stopping" = 1 ] && return
  stopping=1
  trap '' INT TERM
  # A signal between a start and its `pids+=` would miss a process: the shell's own job
  # table has them all.
  local pid
  for pid in $(jobs -p); do [[ " ${pids[*]} " == *" $pid "* ]] || pids+=("$pid"); done
  echo
  echo "run: stopping ${#pids[@]} processes..."
  # Each child runs in its own process group (set -m below), so its whole group is
  # signalled: nothing it started is left behind.
  for pid in "${pids[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
  local deadline=$((SECONDS + ${STOP_TIMEOUT:-30})) left
  while :; do
    left=()
    for pid in "${pids[@]}"; do kill -0 -- "-$pid" 2>/dev/null && left+=("$pid"); done
    [ ${#left[@]} = 0 ] && break
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "run: ${#left[@]} processes did not stop within ${STOP_TIMEOUT:-30} s; killing them" >&2
      for pid in "${left[@]}"; do kill -KILL -- "-$pid" 2>/dev/null || true; done
      break
    fi
    sleep 0.1
  done
  wait 2>/dev/null || true
  echo "run: stopped"
}
trap 'stop_all; exit 130' INT
trap 'stop_all; exit 143' TERM
trap stop_all EXIT

set -m # job control: every background job gets its own process group
start() { # start NAME CMD...: runs CMD with each output line prefixed by [NAME]
  local name=$1; shift
  # The prefixing sed ignores Ctrl-C: it must outlive its process to pass on the
  # shutdown log instead of breaking the pipe under it.
  "$@" > >(trap '' INT TERM; exec sed -u "s/^/[$name] /") 2>&1 &
  pids+=($!)
}

services=()
for svc in ocean weather airquality; do
  if [ -x "bin/$svc" ]; then
    start "$svc" env SERVICE_ADDR="${addrs[$svc]}" "bin/$svc"
    services+=("$svc")
  else
    echo "run: bin/$svc is not built; starting without it"
  fi
done
set +m
# Wait until each service has ingested its first cycle (/readyz), so that the gateway's first
# catalog sync already finds every station instead of an empty listing.
for svc in "${services[@]}"; do
  for _ in $(seq 300); do
    curl -fsS -o /dev/null "http://${addrs[$svc]}/readyz" 2>/dev/null && break
    sleep 0.2
  done
done
set -m
start gateway bin/gateway serve
set +m

url="http://$GATEWAY_ADDR"
for _ in $(seq 150); do
  if curl -fsS -o /dev/null "$url/healthz" 2>/dev/null; then break; fi
  if ! kill -0 "${pids[-1]}" 2>/dev/null; then
    echo "run: the gateway exited during start; see its log above" >&2
    exit 1
  fi
  sleep 0.2
done

cat <<MSG

  sensorgate is running at $url (environment: $SENSORGATE_ENV)
  services: ${services[*]:-none (the catalog stays empty; try: bin/gateway catalog import gateway/catalogsync/testdata/catalog.json)}

  curl -H 'x-api-key: $DEV_API_KEY' '$url/api/v1/sensors?limit=5'

  Explorer (the key rides in the URL fragment, which the browser never sends):
    $url/explorer#key=$DEV_API_KEY

  API reference: $url/docs      Ctrl-C stops everything.

MSG
# Account dashboard: a one-time sign-in link (15 minutes) for the development account.
echo "  Account dashboard, signed in as the development account: $(bin/gateway accounts signin-link --email dev@sensorgate.local 2>/dev/null | head -n1 || echo "unavailable (see bin/gateway accounts -h)")"

# Stop everything as soon as any one process ends (a port in use, a crash).
wait -n "${pids[@]}" || true
echo "run: a process exited; stopping the others" >&2
exit 1
