#!/usr/bin/env bash
# Finds a PostgreSQL and a Redis for the tests, or starts throwaway local instances of them,
# then runs the command it is given with TEST_DATABASE_URL and TEST_REDIS_URL exported.
# Used by `make test`; says exactly what to install when a server binary is missing.
set -euo pipefail

PG_URL=${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}
REDIS_URL=${TEST_REDIS_URL:-redis://127.0.0.1:6379/0}
tmp=""
cleanup() {
  if [ -n "$tmp" ]; then
    [ -f "$tmp/pg/postmaster.pid" ] && "$PG_BIN/pg_ctl" -D "$tmp/pg" -m immediate stop >/dev/null 2>&1 || true
    [ -f "$tmp/redis.pid" ] && kill "$(cat "$tmp/redis.pid")" 2>/dev/null || true
    rm -rf "$tmp"
  fi
}
trap cleanup EXIT

pg_up() { command -v pg_isready >/dev/null 2>&1 && pg_isready -q -d "$1" -t 2; }
redis_up() {
  if command -v redis-cli >/dev/null 2>&1; then redis-cli -u "$1" ping 2>/dev/null | grep -q PONG; else
    local hp=${1#redis://}; hp=${hp%%/*}; (exec 3<>"/dev/tcp/${hp%:*}/${hp#*:}") 2>/dev/null; fi
}
mktmp() { [ -n "$tmp" ] || tmp=$(mktemp -d /tmp/sensorgate-test.XXXXXX); }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null || echo $((20000 + RANDOM % 20000)); }

if ! pg_up "$PG_URL"; then
  PG_BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
  [ -z "$PG_BIN" ] && command -v initdb >/dev/null 2>&1 && PG_BIN=$(dirname "$(command -v initdb)")
  if [ -z "$PG_BIN" ] || [ ! -x "$PG_BIN/initdb" ]; then
    echo "make test: no PostgreSQL at $PG_URL and no PostgreSQL binaries to start one." >&2
    echo "  install them:  sudo apt-get install -y postgresql   (or brew install postgresql)" >&2
    echo "  or point TEST_DATABASE_URL at a server where the user may CREATE DATABASE." >&2
    exit 1
  fi
  mktmp; port=$(free_port)
  run_pg() { if [ "$(id -u)" = 0 ]; then chown -R postgres "$tmp" && su postgres -s /bin/sh -c "$*"; else sh -c "$*"; fi; }
  chmod 755 "$tmp"
  run_pg "'$PG_BIN/initdb' -D '$tmp/pg' -U postgres -A trust >/dev/null"
  run_pg "'$PG_BIN/pg_ctl' -D '$tmp/pg' -o '-p $port -k $tmp -c listen_addresses=127.0.0.1 -c fsync=off' -l '$tmp/pg.log' -w start >/dev/null"
  PG_URL="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
  echo "make test: started a throwaway PostgreSQL on port $port" >&2
fi

if ! redis_up "$REDIS_URL"; then
  if ! command -v redis-server >/dev/null 2>&1; then
    echo "make test: no Redis at $REDIS_URL and no redis-server to start one." >&2
    echo "  install it:  sudo apt-get install -y redis-server   (or brew install redis)" >&2
    echo "  or point TEST_REDIS_URL at a server." >&2
    exit 1
  fi
  mktmp; port=$(free_port)
  redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes \
    --pidfile "$tmp/redis.pid" --logfile "$tmp/redis.log" --dir "$tmp" >/dev/null
  for _ in $(seq 50); do redis_up "redis://127.0.0.1:$port/0" && break; sleep 0.1; done
  REDIS_URL="redis://127.0.0.1:$port/0"
  echo "make test: started a throwaway Redis on port $port" >&2
fi

export TEST_DATABASE_URL=$PG_URL TEST_REDIS_URL=$REDIS_URL
"$@"
