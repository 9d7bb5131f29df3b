#!/usr/bin/env bash
# Load test of the gateway's traffic path (docs/traffic.md), in one run, side by side:
#   direct   wrk -> backend (nginx serving a real service answer recorded at start, ~1.7 KB)
#   nginx    wrk -> nginx as a plain reverse proxy (keepalive upstream) -> backend
#   go-proxy wrk -> Go's floor: net/http + httputil.ReverseProxy, tuned, nothing else -> backend
#   go-sync  wrk -> net/http + the gateway's own upstream transport (pkg/h1pool: the answer
#            read on the handler's goroutine over kept-alive connections), nothing else
#            -> backend (the floor of the gateway's uncached hop)
#   go-static wrk -> net/http answering a fixed body of the gateway's answer's size, no
#            middleware, no upstream (the floor of a cache hit)
#   go-fasthttp (FASTHTTP=1 only) wrk -> net/http + fasthttp's HostClient -> backend
#   caddy    wrk -> Caddy (Debian's package, admin off, plain reverse_proxy; also on
#            net/http) -> backend
#   caddy-go wrk -> the same Caddyfile on Caddy built from its Go module at CADDY_VERSION
#            (default below; go install, cached under ~/.cache/sensorgate; CADDY_GO_ROW=0
#            leaves it out) -> backend
#   gateway  wrk -> gateway (x-api-key auth, Redis rate limiter, proxy) -> backend,
#            uncached (every request a distinct query, a real upstream call) and hot (the
#            same request again and again, answered within the cache's freshness bound)
#   gateway-bearer-uncached, gateway-bearer-hot  the same two with an OAuth access token
#            (Authorization: Bearer) instead of the key, got through the whole flow
#            (scripts/loadtest/oauthtoken: sign-in link, registration, PKCE, consent, code)
#   gateway-500, gateway-500-gzip  wrk -> gateway -> backend for a 500-row JSON readings
#            page (issue 14, about 400 KB), the same page again and again, without and
#            with Accept-Encoding: gzip. The page is over the readings cache's 256 KiB
#            bound per answer, so each request is fetched (concurrent ones coalesced);
#            no fixed-rate latency for these two rows
# Throughput at saturation: wrk, 2 threads, 50 connections. Latency at a fixed 1000 req/s:
# scripts/loadtest/fixedrate (open loop, measured from when each request was due).
#
# Every measurement runs ROUNDS times, interleaved (direct, nginx, gateway, gateway, then
# again), and the table shows each path's median, so that a burst of other work on the
# machine skews one round of every path rather than all rounds of one.
#
# usage: scripts/loadtest.sh [-d SECONDS] [-c CONNECTIONS] [-r RATE] [-n ROUNDS] [-o FILE] [-p PROFILE]
#
# -p PROFILE: profile-guided optimization input instead of the comparison (`make pgo`): the
# gateway is built with -tags pprof, each gateway path (uncached, hot, 500-row page plain
# and gzip) runs ROUNDS times under wrk while /debug/pprof/profile records the gateway's
# CPU, and the merged profile is written to PROFILE (gateway/cmd/gateway/default.pgo, which
# `go build` of the main package then uses by itself). No other proxy is started.
# PROFILE_PATHS=DIR in the environment also keeps each path's profile in DIR.
# Needs nginx, caddy, wrk, redis-server (installed with apt-get when missing and run as root)
# and Go. The gateway is built as a release build (make build's flags).
# Everything it starts listens on 127.0.0.1 and is stopped when it exits.
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=8 CONNS=50 RATE=1000 ROUNDS=3 OUT="" PROFILE=""
while getopts "d:c:r:n:o:p:" o; do
  case $o in
    d) DURATION=$OPTARG ;; c) CONNS=$OPTARG ;; r) RATE=$OPTARG ;; n) ROUNDS=$OPTARG ;; o) OUT=$OPTARG ;;
    p) PROFILE=$OPTARG ;;
    *) echo "usage: $0 [-d seconds] [-c connections] [-r rate] [-n rounds] [-o file] [-p profile]" >&2; exit 2 ;;
  esac
done
case $PROFILE in "" | /*) ;; *) PROFILE=$PWD/$PROFILE ;; esac # the script runs from the repository root

need=()
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need+=(nginx)
command -v wrk >/dev/null 2>&1 || need+=(wrk)
command -v caddy >/dev/null 2>&1 || need+=(caddy)
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "loadtest: missing ${need[*]}; install them: sudo apt-get install -y ${need[*]}" >&2; exit 1
  fi
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)

tmp=$(mktemp -d /tmp/sensorgate-load.XXXXXX)
chmod 755 "$tmp" # nginx workers (www-data when started as root) read the recorded answers
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for f in "$tmp"/nginx*.pid; do [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null || echo $((20000 + RANDOM % 20000)); }
wait_http() { for _ in $(seq 300); do curl -fsS -o /dev/null "$@" 2>/dev/null && return 0; sleep 0.1; done; echo "loadtest: $* did not answer" >&2; return 1; }
log() { echo "loadtest: $*" >&2; }

log "building gateway, ocean and the fixed-rate probe"
mkdir -p "$tmp/bin" "$tmp/www/v1"
if [ -n "$PROFILE" ]; then
  # The profiled build: release flags plus the pprof listener (pkg/obs/pprof.go);
  # symbols are kept so that the profile names functions.
  go build -trimpath -tags nomsgpack,pprof -o "$tmp/bin/gateway" ./gateway/cmd/gateway
else
  go build -trimpath -tags nomsgpack -ldflags='-s -w' -o "$tmp/bin/gateway" ./gateway/cmd/gateway
fi
go build -o "$tmp/bin/ocean" ./services/cmd/ocean
(cd scripts/loadtest/fixedrate && GOWORK=off go build -o "$tmp/bin/fixedrate" .)
(cd scripts/loadtest/goproxy && GOWORK=off go build -o "$tmp/bin/goproxy" .)
(cd scripts/loadtest/oauthtoken && GOWORK=off go build -o "$tmp/bin/oauthtoken" .)
# Caddy from its Go module, a current release beside Debian's 2.6: built once per version
# and kept under ~/.cache/sensorgate (a first build takes minutes).
CADDY_VERSION=${CADDY_VERSION:-v2.11.9}
CADDY_GO=$HOME/.cache/sensorgate/caddy-$CADDY_VERSION/caddy
[ "${CADDY_GO_ROW:-1}" = 0 ] && CADDY_GO="" # CADDY_GO_ROW=0: no caddy-go row (and no build)
if [ -z "$PROFILE" ] && [ -n "$CADDY_GO" ] && [ ! -x "$CADDY_GO" ]; then
  log "building caddy $CADDY_VERSION from its Go module (once, into $(dirname "$CADDY_GO"))"
  mkdir -p "$(dirname "$CADDY_GO")"
  if ! GOWORK=off GOBIN=$(dirname "$CADDY_GO") go install -trimpath -ldflags='-s -w' "github.com/caddyserver/caddy/v2/cmd/caddy@$CADDY_VERSION" >"$tmp/caddy-build.log" 2>&1; then
    cat "$tmp/caddy-build.log" >&2; log "caddy $CADDY_VERSION did not build: no caddy-go row"; CADDY_GO=""
  fi
fi

# 1. Record real answers of the ocean service (simulated NDBC buoys) for the backend.
P_OCEAN=$(free_port)
SERVICE_ADDR=127.0.0.1:$P_OCEAN READINGS_SQLITE_PATH=$tmp/ocean.db SIM_STATIONS=3 SIM_DAYS=4 LOG_LEVEL=warn \
  "$tmp/bin/ocean" >"$tmp/ocean.log" 2>&1 &
pids+=($!); OCEAN_PID=$!
wait_http "http://127.0.0.1:$P_OCEAN/readyz"
S=http://127.0.0.1:$P_OCEAN
curl -fsS "$S/v1/meta" >"$tmp/www/v1/meta.json"
curl -fsS "$S/v1/health" >"$tmp/www/v1/health.json"
curl -fsS "$S/v1/sensors?limit=1000" >"$tmp/www/v1/sensors.json"
EXT=$(grep -o '"external_id":"[^"]*"' "$tmp/www/v1/sensors.json" | head -1 | cut -d'"' -f4)
curl -fsS "$S/v1/sensors/$EXT/readings?limit=2" >"$tmp/www/readings.json"
curl -fsS "$S/v1/sensors/$EXT/readings/latest" >"$tmp/www/latest.json"
# The 500-row page (issue 14) is another sensor's, so that the backend tells the two pages
# apart by path alone.
EXT500=$(grep -o '"external_id":"[^"]*"' "$tmp/www/v1/sensors.json" | sed -n 2p | cut -d'"' -f4)
curl -fsS "$S/v1/sensors/$EXT500/readings?limit=500" >"$tmp/www/readings500.json"
kill "$OCEAN_PID"
BYTES=$(wc -c <"$tmp/www/readings.json")
BYTES500=$(wc -c <"$tmp/www/readings500.json")
ROWS500=$(grep -o "\"timestamp\":" "$tmp/www/readings500.json" | wc -l)
log "backend answer: GET /v1/sensors/$EXT/readings?limit=2, $BYTES bytes; GET /v1/sensors/$EXT500/readings?limit=500, $BYTES500 bytes"

# 2. nginx: the static backend and, as a separate nginx (its own master and workers), the
#    plain reverse proxy in front of it. Separate, because the gateway is a separate process
#    from its backend too: one nginx serving both would often proxy a request to itself in
#    the same worker, with no process switch at all, which no deployment has.
P_BACK=$(free_port) P_NGINX=$(free_port) P_BACK_H2=$(free_port)
nginx_conf() { # name server-block
  cat <<CONF
worker_processes 2;
pid $tmp/nginx-$1.pid;
error_log $tmp/nginx-$1-error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  default_type application/json;
  keepalive_requests 1000000;
  client_body_temp_path $tmp/nginx-$1-body;
  proxy_temp_path $tmp/nginx-$1-proxy;
  fastcgi_temp_path $tmp/nginx-$1-fcgi;
  uwsgi_temp_path $tmp/nginx-$1-uwsgi;
  scgi_temp_path $tmp/nginx-$1-scgi;
$2
}
CONF
}
nginx_conf backend "  server {
    listen 127.0.0.1:$P_BACK;
    listen 127.0.0.1:$P_BACK_H2 http2;
    root $tmp/www;
    location = /v1/meta { try_files /v1/meta.json =404; }
    location = /v1/health { try_files /v1/health.json =404; }
    location = /v1/sensors { try_files /v1/sensors.json =404; }
    location ~ ^/v1/sensors/[^/]+/readings/latest\$ { try_files /latest.json =404; }
    location = /v1/sensors/$EXT500/readings { try_files /readings500.json =404; }
    location ~ ^/v1/sensors/[^/]+/readings\$ { try_files /readings.json =404; }
  }" >"$tmp/nginx-backend.conf"
nginx_conf proxy "  upstream backend { server 127.0.0.1:$P_BACK; keepalive 64; }
  server {
    listen 127.0.0.1:$P_NGINX;
    location / {
      proxy_pass http://backend;
      proxy_http_version 1.1;
      proxy_set_header Connection \"\";
    }
  }" >"$tmp/nginx-proxy.conf"
"$NGINX" -c "$tmp/nginx-backend.conf" -p "$tmp"
"$NGINX" -c "$tmp/nginx-proxy.conf" -p "$tmp"
wait_http "http://127.0.0.1:$P_BACK/v1/meta"
wait_http "http://127.0.0.1:$P_NGINX/v1/meta"

# 2b. Go's floor for the same hop: net/http's server and httputil.ReverseProxy, tuned
#     (pooled buffers, a large idle pool), with no auth, limiter or cache.
P_GOPROXY=$(free_port) P_CADDY=$(free_port) P_GOSYNC=$(free_port) P_GOFAST=$(free_port) P_CADDYGO=$(free_port)
if [ -z "$PROFILE" ]; then
"$tmp/bin/goproxy" -addr "127.0.0.1:$P_GOPROXY" -backend "http://127.0.0.1:$P_BACK" >"$tmp/goproxy.log" 2>&1 &
pids+=($!); GOPROXY_PID=$!
wait_http "http://127.0.0.1:$P_GOPROXY/v1/meta"
"$tmp/bin/goproxy" -mode sync -addr "127.0.0.1:$P_GOSYNC" -backend "http://127.0.0.1:$P_BACK" >"$tmp/gosync.log" 2>&1 &
pids+=($!); GOSYNC_PID=$!
wait_http "http://127.0.0.1:$P_GOSYNC/v1/meta"
if [ "${FASTHTTP:-}" = 1 ]; then
  "$tmp/bin/goproxy" -mode fasthttp -addr "127.0.0.1:$P_GOFAST" -backend "http://127.0.0.1:$P_BACK" >"$tmp/gofast.log" 2>&1 &
  pids+=($!); GOFAST_PID=$!
  wait_http "http://127.0.0.1:$P_GOFAST/v1/meta"
fi

# 2c. Caddy, the best-known Go reverse proxy: admin endpoint off, plain HTTP, reverse_proxy
#     with its defaults (keep-alive pool to the backend), no logging.
cat >"$tmp/Caddyfile" <<CADDY
{
	admin off
	auto_https off
}
http://127.0.0.1:$P_CADDY {
	reverse_proxy 127.0.0.1:$P_BACK
}
CADDY
XDG_DATA_HOME=$tmp/caddy-data XDG_CONFIG_HOME=$tmp/caddy-config HOME=$tmp \
  caddy run --config "$tmp/Caddyfile" --adapter caddyfile >"$tmp/caddy.log" 2>&1 &
pids+=($!); CADDY_PID=$!
wait_http "http://127.0.0.1:$P_CADDY/v1/meta"
if [ -n "$CADDY_GO" ]; then
  sed "s/127.0.0.1:$P_CADDY {/127.0.0.1:$P_CADDYGO {/" "$tmp/Caddyfile" >"$tmp/Caddyfile-go"
  XDG_DATA_HOME=$tmp/caddygo-data XDG_CONFIG_HOME=$tmp/caddygo-config HOME=$tmp \
    "$CADDY_GO" run --config "$tmp/Caddyfile-go" --adapter caddyfile >"$tmp/caddy-go.log" 2>&1 &
  pids+=($!); CADDYGO_PID=$!
  wait_http "http://127.0.0.1:$P_CADDYGO/v1/meta"
  CADDY_GO_VERSION=$CADDY_VERSION # (its own "caddy version" says "unknown" when built by go install)
fi
fi # not in profile mode

# 3. Redis and the gateway (production key on a plan far above the load, so every answer is
#    a 200 that went through the limiter; the OAuth app's key, on the default plan, too).
#    The dashboard's public origin is https (production wants it) on localhost (passkeys want
#    a host name), though nothing terminates TLS here: the token tool sends to the gateway's
#    own address and keeps cookies itself.
P_REDIS=$(free_port)
redis-server --port "$P_REDIS" --bind 127.0.0.1 --save '' --appendonly no --dir "$tmp" >"$tmp/redis.log" 2>&1 &
pids+=($!); REDIS_PID=$!
for _ in $(seq 50); do redis-cli -p "$P_REDIS" ping 2>/dev/null | grep -q PONG && break; sleep 0.1; done
P_GW=$(free_port)
export GATEWAY_ADDR=127.0.0.1:$P_GW SENSORGATE_ENV=production SQLITE_PATH=$tmp/catalog.db \
  REDIS_URL=redis://127.0.0.1:$P_REDIS/0 RATE_LIMIT_PLANS=bench=1000000000/h,default=1000000000/h INTERNAL_TOKEN=loadtest-internal-token \
  SERVICE_URLS=ocean=http://127.0.0.1:$P_BACK LOG_LEVEL=warn OTEL_SDK_DISABLED=true ACCOUNT_ORIGIN=https://localhost:$P_GW
GW_BIN=${GATEWAY_BIN:-$tmp/bin/gateway} # GATEWAY_BIN measures another build of the gateway
KEY=$("$GW_BIN" keys create --owner loadtest --env production --plan bench | head -1)
"$GW_BIN" accounts create-admin --name "Load test" --email loadtest@example.org >/dev/null
LINK=$("$GW_BIN" accounts signin-link --email loadtest@example.org | head -1)
P_PPROF=$(free_port)
if [ -n "$PROFILE" ]; then
  PPROF_ADDR=127.0.0.1:$P_PPROF "$GW_BIN" >"$tmp/gateway.log" 2>&1 &
else
  "$GW_BIN" >"$tmp/gateway.log" 2>&1 &
fi
pids+=($!); GW_PID=$!
GW=http://127.0.0.1:$P_GW
wait_http -H "x-api-key: $KEY" "$GW/api/v1/sensors/$EXT"
wait_http -H "x-api-key: $KEY" "$GW/api/v1/sensors/$EXT/readings?limit=2"
BEARER=$("$tmp/bin/oauthtoken" -addr "$GW" -link "$LINK")
wait_http -H "Authorization: Bearer $BEARER" "$GW/api/v1/sensors/$EXT/readings?limit=2"
TTL=$(curl -fsS -D - -o /dev/null -H "x-api-key: $KEY" "$GW/api/v1/sensors/$EXT/readings?limit=2" | tr -d '\r' | awk -F'max-age=' '/^Cache-Control/ {print $2}')
wait_http -H "x-api-key: $KEY" "$GW/api/v1/sensors/$EXT500/readings?limit=500"
GZBYTES500=$(curl -fsS -H "x-api-key: $KEY" -H "Accept-Encoding: gzip" "$GW/api/v1/sensors/$EXT500/readings?limit=500" | wc -c)
log "500-row page through the gateway: $BYTES500 bytes, $GZBYTES500 bytes with gzip"
# go-static answers a fixed body of the size of the gateway's hot answer.
GWBYTES=$(curl -fsS -H "x-api-key: $KEY" "$GW/api/v1/sensors/$EXT/readings?limit=2" | wc -c)
P_GOSTATIC=$(free_port)
if [ -z "$PROFILE" ]; then
  "$tmp/bin/goproxy" -mode static -size "$GWBYTES" -addr "127.0.0.1:$P_GOSTATIC" >"$tmp/gostatic.log" 2>&1 &
  pids+=($!); GOSTATIC_PID=$!
  wait_http "http://127.0.0.1:$P_GOSTATIC/"
fi
PATHS=(direct nginx go-proxy go-sync go-static)
[ -n "${GOFAST_PID:-}" ] && PATHS+=(go-fasthttp)
PATHS+=(caddy)
[ -n "${CADDYGO_PID:-}" ] && PATHS+=(caddy-go)
PATHS+=(gateway-uncached gateway-hot gateway-bearer-uncached gateway-bearer-hot gateway-500 gateway-500-gzip)
# A/B: GATEWAY_BIN_B (another build) and/or GATEWAY_ENV_B (extra environment, e.g. "GOGC=100")
# start a second gateway on its own catalog copy, measured in the same rounds as b-uncached
# and b-hot, so that two variants meet the same load on the machine. H2C=1 makes B the same
# build speaking HTTP/2 without TLS to the backend (UPSTREAM_HTTP2; the backend's second,
# http2 listener), beside A's HTTP/1.1.
if [ "${H2C:-}" = 1 ]; then
  GATEWAY_ENV_B="UPSTREAM_HTTP2=true SERVICE_URLS=ocean=http://127.0.0.1:$P_BACK_H2 ${GATEWAY_ENV_B:-}"
fi
if [ -n "${GATEWAY_BIN_B:-}${GATEWAY_ENV_B:-}" ]; then
  B_BIN=${GATEWAY_BIN_B:-$GW_BIN} P_GWB=$(free_port)
  cp "$tmp/catalog.db" "$tmp/catalog-b.db"
  # shellcheck disable=SC2086 # GATEWAY_ENV_B is a list of NAME=value words
  env GATEWAY_ADDR=127.0.0.1:$P_GWB SQLITE_PATH=$tmp/catalog-b.db ${GATEWAY_ENV_B:-} "$B_BIN" >"$tmp/gateway-b.log" 2>&1 &
  pids+=($!); GWB_PID=$!
  GWB=http://127.0.0.1:$P_GWB
  wait_http -H "x-api-key: $KEY" "$GWB/api/v1/sensors/$EXT/readings?limit=2"
  PATHS+=(b-uncached b-hot)
  log "B: ${GATEWAY_BIN_B:-same build} ${GATEWAY_ENV_B:-}"
fi

# 4. Measure.
LOADAVG=$(cut -d' ' -f1-3 /proc/loadavg)
declare -A RPS P50 P99 CPU_NGINX CPU_GW CPU_REDIS
# CPU seconds (user+system, in clock ticks) a set of processes has used so far. Throughput
# on a shared machine swings with whatever else runs; the CPU each hop spends per request
# does not, so the run reports both.
ticks() { local t=0 p; for p in "$@"; do [ -r "/proc/$p/stat" ] && t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done; echo $t; }
nginx_workers() { cat "$tmp"/nginx-*.pid | xargs -n1 pgrep -P | tr '\n' ' '; }
per_req_us() { awk -v t="$1" -v n="$2" -v hz="$(getconf CLK_TCK)" 'BEGIN { if (n > 0) printf "%.1f", t / hz / n * 1e6; else print "n/a" }'; }
run_wrk() { # name url [lua] [header...]
  local name=$1 url=$2 lua=${3:-} hdr
  local args=(-t2 -c"$CONNS" -d"${DURATION}s" --latency)
  [ -n "$lua" ] && args+=(-s "$lua")
  for hdr in "${@:4}"; do [ -n "$hdr" ] && args+=(-H "$hdr"); done
  local workers; workers=$(nginx_workers)
  UNIQUE_BASE=$(((RANDOM << 15 | RANDOM) % 400000000)); export UNIQUE_BASE # unique.lua: this run's since= values are its own
  # shellcheck disable=SC2086 # one pid per word
  local n0 g0 r0; n0=$(ticks $workers) g0=$(ticks "$GWP") r0=$(ticks "$REDIS_PID")
  wrk "${args[@]}" "$url" >"$tmp/wrk-$name.txt" 2>&1 || true
  # shellcheck disable=SC2086
  local n1 g1 r1; n1=$(ticks $workers) g1=$(ticks "$GWP") r1=$(ticks "$REDIS_PID")
  local non2xx rps reqs; non2xx=$(awk '/Non-2xx/ {print $NF}' "$tmp/wrk-$name.txt")
  rps=$(awk '/^Requests\/sec/ {printf "%.0f", $2}' "$tmp/wrk-$name.txt")
  reqs=$(awk '/requests in/ {print $1}' "$tmp/wrk-$name.txt")
  RPS[$name]="${RPS[$name]:-} $rps"
  CPU_NGINX[$name]="${CPU_NGINX[$name]:-} $(per_req_us $((n1 - n0)) "$reqs")"
  CPU_GW[$name]="${CPU_GW[$name]:-} $(per_req_us $((g1 - g0)) "$reqs")"
  CPU_REDIS[$name]="${CPU_REDIS[$name]:-} $(per_req_us $((r1 - r0)) "$reqs")"
  log "round $round $name: $rps req/s${non2xx:+ ($non2xx non-2xx!)}; CPU per request: nginx $(per_req_us $((n1 - n0)) "$reqs") us, gateway $(per_req_us $((g1 - g0)) "$reqs") us, redis $(per_req_us $((r1 - r0)) "$reqs") us"
}
run_rate() { # name url [header]
  local name=$1 url=$2 hdr=${3:-}
  local args=(-rate "$RATE" -duration "${DURATION}s")
  [ -n "$hdr" ] && args+=(-header "$hdr")
  "$tmp/bin/fixedrate" "${args[@]}" "$url" >"$tmp/rate-$name.txt" 2>&1 || true
  local p50 p99; p50=$(awk '/^p50/ {print $2}' "$tmp/rate-$name.txt"); p99=$(awk '/^p50/ {print $6}' "$tmp/rate-$name.txt")
  P50[$name]="${P50[$name]:-} ${p50%ms}"; P99[$name]="${P99[$name]:-} ${p99%ms}"
  log "round $round $name at $RATE/s: p50 $p50 p99 $p99 ($(head -1 "$tmp/rate-$name.txt" | sed 's/.*statuses //'))"
}
median() { tr ' ' '\n' | { grep -v '^$' || true; } | sort -g | awk '{v[NR]=$1} END { if (NR == 0) print "n/a"; else if (NR % 2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2 }'; }
LUA=scripts/loadtest/unique.lua
H="x-api-key: $KEY"
HB="Authorization: Bearer $BEARER"
GZ="Accept-Encoding: gzip"
GWP=$GW_PID # the gateway whose CPU run_wrk counts
if [ -n "$PROFILE" ]; then
  # Profile mode (-p): each gateway path under wrk while pprof records the gateway's CPU
  # for as long; the profiles are merged into one, weighted by the time each path ran.
  wait_http "http://127.0.0.1:$P_PPROF/debug/pprof/"
  for round in $(seq "$ROUNDS"); do
    for path in uncached hot 500 500-gzip; do
      curl -fsS -o "$tmp/cpu-$path-$round.pprof" "http://127.0.0.1:$P_PPROF/debug/pprof/profile?seconds=$DURATION" &
      cpid=$!
      case $path in
        uncached) run_wrk gateway-uncached "$GW/api/v1/sensors/$EXT/readings?limit=2" "$LUA" "$H" ;;
        hot) run_wrk gateway-hot "$GW/api/v1/sensors/$EXT/readings?limit=2" "" "$H" ;;
        500) run_wrk gateway-500 "$GW/api/v1/sensors/$EXT500/readings?limit=500" "" "$H" ;;
        500-gzip) run_wrk gateway-500-gzip "$GW/api/v1/sensors/$EXT500/readings?limit=500" "" "$H" "$GZ" ;;
      esac
      wait "$cpid"
    done
  done
  mkdir -p "$(dirname "$PROFILE")"
  # PROFILE_PATHS=DIR keeps each path's own profile too (cpu-PATH-ROUND.pprof), to read
  # where one path's time goes (docs/traffic.md, "Where the time goes").
  if [ -n "${PROFILE_PATHS:-}" ]; then mkdir -p "$PROFILE_PATHS" && cp "$tmp"/cpu-*.pprof "$PROFILE_PATHS"/; fi
  go tool pprof -proto "$tmp"/cpu-*.pprof >"$PROFILE" 2>"$tmp/pprof.log" || { cat "$tmp/pprof.log" >&2; exit 1; }
  log "wrote $PROFILE ($(wc -c <"$PROFILE") bytes; load average $(cut -d' ' -f1-3 /proc/loadavg))"
  go tool pprof -top -nodecount 25 "$PROFILE" 2>/dev/null | sed 's/^/loadtest: /' >&2 || true
  exit 0
fi
for round in $(seq "$ROUNDS"); do
  run_wrk direct "http://127.0.0.1:$P_BACK/v1/sensors/$EXT/readings?limit=2" "$LUA"
  run_wrk nginx "http://127.0.0.1:$P_NGINX/v1/sensors/$EXT/readings?limit=2" "$LUA"
  GWP=$GOPROXY_PID run_wrk go-proxy "http://127.0.0.1:$P_GOPROXY/v1/sensors/$EXT/readings?limit=2" "$LUA"
  GWP=$GOSYNC_PID run_wrk go-sync "http://127.0.0.1:$P_GOSYNC/v1/sensors/$EXT/readings?limit=2" "$LUA"
  GWP=$GOSTATIC_PID run_wrk go-static "http://127.0.0.1:$P_GOSTATIC/v1/sensors/$EXT/readings?limit=2" "$LUA"
  [ -n "${GOFAST_PID:-}" ] && GWP=$GOFAST_PID run_wrk go-fasthttp "http://127.0.0.1:$P_GOFAST/v1/sensors/$EXT/readings?limit=2" "$LUA"
  GWP=$CADDY_PID run_wrk caddy "http://127.0.0.1:$P_CADDY/v1/sensors/$EXT/readings?limit=2" "$LUA"
  [ -n "${CADDYGO_PID:-}" ] && GWP=$CADDYGO_PID run_wrk caddy-go "http://127.0.0.1:$P_CADDYGO/v1/sensors/$EXT/readings?limit=2" "$LUA"
  GWP=$GW_PID run_wrk gateway-uncached "$GW/api/v1/sensors/$EXT/readings?limit=2" "$LUA" "$H"
  GWP=$GW_PID run_wrk gateway-hot "$GW/api/v1/sensors/$EXT/readings?limit=2" "" "$H"
  GWP=$GW_PID run_wrk gateway-bearer-uncached "$GW/api/v1/sensors/$EXT/readings?limit=2" "$LUA" "$HB"
  GWP=$GW_PID run_wrk gateway-bearer-hot "$GW/api/v1/sensors/$EXT/readings?limit=2" "" "$HB"
  GWP=$GW_PID run_wrk gateway-500 "$GW/api/v1/sensors/$EXT500/readings?limit=500" "" "$H"
  GWP=$GW_PID run_wrk gateway-500-gzip "$GW/api/v1/sensors/$EXT500/readings?limit=500" "" "$H" "$GZ"
  if [ -n "${GWB:-}" ]; then
    GWP=$GWB_PID run_wrk b-uncached "$GWB/api/v1/sensors/$EXT/readings?limit=2" "$LUA" "$H"
    GWP=$GWB_PID run_wrk b-hot "$GWB/api/v1/sensors/$EXT/readings?limit=2" "" "$H"
  fi
  run_rate direct "http://127.0.0.1:$P_BACK/v1/sensors/$EXT/readings?limit=2&n={n}"
  run_rate nginx "http://127.0.0.1:$P_NGINX/v1/sensors/$EXT/readings?limit=2&n={n}"
  run_rate go-proxy "http://127.0.0.1:$P_GOPROXY/v1/sensors/$EXT/readings?limit=2&n={n}"
  run_rate go-sync "http://127.0.0.1:$P_GOSYNC/v1/sensors/$EXT/readings?limit=2&n={n}"
  run_rate go-static "http://127.0.0.1:$P_GOSTATIC/v1/sensors/$EXT/readings?limit=2&n={n}"
  [ -n "${GOFAST_PID:-}" ] && run_rate go-fasthttp "http://127.0.0.1:$P_GOFAST/v1/sensors/$EXT/readings?limit=2&n={n}"
  run_rate caddy "http://127.0.0.1:$P_CADDY/v1/sensors/$EXT/readings?limit=2&n={n}"
  [ -n "${CADDYGO_PID:-}" ] && run_rate caddy-go "http://127.0.0.1:$P_CADDYGO/v1/sensors/$EXT/readings?limit=2&n={n}"
  run_rate gateway-uncached "$GW/api/v1/sensors/$EXT/readings?limit=2&since=2001-01-01T00:00:00Z&page={n}" "$H"
  run_rate gateway-hot "$GW/api/v1/sensors/$EXT/readings?limit=2" "$H"
  run_rate gateway-bearer-uncached "$GW/api/v1/sensors/$EXT/readings?limit=2&since=2002-01-01T00:00:00Z&page={n}" "$HB"
  run_rate gateway-bearer-hot "$GW/api/v1/sensors/$EXT/readings?limit=2" "$HB"
  if [ -n "${GWB:-}" ]; then
    run_rate b-uncached "$GWB/api/v1/sensors/$EXT/readings?limit=2&since=2001-01-01T00:00:00Z&page={n}" "$H"
    run_rate b-hot "$GWB/api/v1/sensors/$EXT/readings?limit=2" "$H"
  fi
done
ROUNDS_RPS=""
for n in "${PATHS[@]}"; do
  ROUNDS_RPS="$ROUNDS_RPS $n:$(echo "${RPS[$n]}" | tr -s ' ' ',' | sed 's/^,//')"
  RPS[$n]=$(echo "${RPS[$n]}" | median); P50[$n]=$(echo "${P50[$n]:-}" | median); P99[$n]=$(echo "${P99[$n]:-}" | median) # the 500-row rows have no fixed-rate latency
  CPU_NGINX[$n]=$(echo "${CPU_NGINX[$n]}" | median); CPU_GW[$n]=$(echo "${CPU_GW[$n]}" | median); CPU_REDIS[$n]=$(echo "${CPU_REDIS[$n]}" | median)
done
peak_rss() { awk '/^VmHWM/ {print int($2 / 1024)}' "/proc/$1/status" 2>/dev/null || echo "?"; }
GW_RSS="$(peak_rss "$GW_PID")${GWB_PID:+ (B: $(peak_rss "$GWB_PID"))}"

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
diff_ms() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%+.3f", a - b }'; }
{
  echo "sensorgate load test, $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores (load average before: $LOADAVG), median of $ROUNDS rounds of wrk -t2 -c$CONNS -d${DURATION}s and of a fixed $RATE req/s for ${DURATION}s (scripts/loadtest/fixedrate)"
  echo "backend answer: $BYTES bytes (a recorded readings page of the ocean service), and $BYTES500 bytes for the 500-row page; gateway cache freshness bound: ${TTL:-?} s"
  echo
  echo "| path | req/s at saturation | vs nginx | p50 at $RATE/s | p99 at $RATE/s | p99 vs nginx |"
  echo "|---|---|---|---|---|---|"
  for n in "${PATHS[@]}"; do
    case $n in
      gateway-500*) echo "| $n | ${RPS[$n]} | $(ratio "${RPS[$n]}" "${RPS[nginx]}")x | - | - | - |" ;;
      *) echo "| $n | ${RPS[$n]} | $(ratio "${RPS[$n]}" "${RPS[nginx]}")x | ${P50[$n]} ms | ${P99[$n]} ms | $(diff_ms "${P99[$n]}" "${P99[nginx]}") ms |" ;;
    esac
  done
  echo
  echo "500-row page (issue 14; gateway-500 and gateway-500-gzip, the same page each time, over the cache's per-answer bound so fetched and coalesced): ${ROWS500:-?} rows, $BYTES500 bytes plain, $GZBYTES500 bytes with gzip ($(ratio "$BYTES500" "$GZBYTES500")x smaller); gzip costs $(ratio "${RPS[gateway-500]}" "${RPS[gateway-500-gzip]}")x the throughput (gateway-500-gzip at $(ratio "${RPS[gateway-500-gzip]}" "${RPS[gateway-500]}")x gateway-500)"
  echo
  echo "req/s per round:$ROUNDS_RPS"
  echo
  echo "CPU per request at saturation (us, median of rounds; user+system from /proc; nginx = the workers of both nginx instances, the backend and the proxy):"
  echo
  echo "| path | nginx workers | Go proxy (gateway, go-proxy or caddy) | redis | the hop's own cost |"
  echo "|---|---|---|---|---|"
  for n in "${PATHS[@]}"; do
    case $n in
      direct) hop="-" ;;
      nginx) hop="$(awk -v a="${CPU_NGINX[nginx]}" -v b="${CPU_NGINX[direct]}" 'BEGIN { printf "%.1f", a - b }') (nginx minus direct)" ;;
      *) hop="$(awk -v a="${CPU_GW[$n]}" -v b="${CPU_REDIS[$n]}" 'BEGIN { printf "%.1f", a + b }') (Go proxy + redis)" ;;
    esac
    echo "| $n | ${CPU_NGINX[$n]} | ${CPU_GW[$n]} | ${CPU_REDIS[$n]} | $hop |"
  done
  echo
  echo "gateway peak RSS: ${GW_RSS} MiB"
  echo
  [ -n "${GWB:-}" ] && echo "B (b-uncached, b-hot): ${GATEWAY_BIN_B:-same build} ${GATEWAY_ENV_B:-}" && echo
  echo "caddy: Debian's $(caddy version 2>/dev/null | cut -d' ' -f1)${CADDY_GO_VERSION:+, caddy-go: $CADDY_GO_VERSION built from its Go module}; go-static answers $GWBYTES bytes (the gateway's hot answer's size)"
  echo
  echo "ratios: gateway-uncached $(ratio "${RPS[gateway-uncached]}" "${RPS[nginx]}")x nginx, $(ratio "${RPS[gateway-uncached]}" "${RPS[caddy]}")x caddy${CADDYGO_PID:+, $(ratio "${RPS[gateway-uncached]}" "${RPS[caddy-go]}")x caddy-go}; gateway CPU per uncached request $(ratio "${CPU_GW[gateway-uncached]}" "${CPU_GW[go-proxy]}")x go-proxy's, $(ratio "${CPU_GW[gateway-uncached]}" "${CPU_GW[go-sync]}")x go-sync's, $(ratio "${CPU_GW[gateway-uncached]}" "$(awk -v a="${CPU_NGINX[nginx]}" -v b="${CPU_NGINX[direct]}" 'BEGIN { print a - b }')")x nginx's hop"
  echo "ratios: gateway-hot $(ratio "${RPS[gateway-hot]}" "${RPS[nginx]}")x nginx, $(ratio "${RPS[gateway-hot]}" "${RPS[go-static]}")x go-static; CPU per hot request $(ratio "${CPU_GW[gateway-hot]}" "${CPU_GW[go-static]}")x go-static's; go-sync CPU $(ratio "${CPU_GW[go-sync]}" "${CPU_GW[go-proxy]}")x go-proxy's; p99 at $RATE/s vs nginx: uncached $(diff_ms "${P99[gateway-uncached]}" "${P99[nginx]}") ms, hot $(diff_ms "${P99[gateway-hot]}" "${P99[nginx]}") ms"
  echo "ratios: Bearer against x-api-key: CPU per request uncached $(ratio "${CPU_GW[gateway-bearer-uncached]}" "${CPU_GW[gateway-uncached]}")x, hot $(ratio "${CPU_GW[gateway-bearer-hot]}" "${CPU_GW[gateway-hot]}")x; req/s uncached $(ratio "${RPS[gateway-bearer-uncached]}" "${RPS[gateway-uncached]}")x, hot $(ratio "${RPS[gateway-bearer-hot]}" "${RPS[gateway-hot]}")x"
  echo "targets: gateway-uncached CPU per request <= 1.0x go-proxy's, req/s >= 0.5x nginx and >= 1.5x caddy (both caddy rows); gateway-hot >= 1.5x nginx; gateway p99 at $RATE/s <= nginx p99 + 0.5 ms (uncached and hot)"
} | tee ${OUT:+"$OUT"}
