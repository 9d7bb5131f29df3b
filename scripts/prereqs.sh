#!/usr/bin/env bash
# `make test`'s own set-up on a Debian machine with Go: installs what the tests need and is
# missing (PostgreSQL, Redis, Node.js and npm, chromium for the explorer's browser tests,
# pandas and matplotlib for examples/python, netcdf-bin, python3-netcdf4 and python3-xarray
# for the science formats' tests, gdal-bin and python3-owslib for the OGC tests) with apt-get
# when run as root, or stops at once
# naming the one command to run when not; then starts the system's PostgreSQL cluster and a
# Redis when none answers (scripts/testenv.sh starts throwaway servers when even that fails).
# `.ci/run` has no install logic of its own: it runs `make test`, which runs this first.
#
# PREREQS_CHECK_ONLY=1 decides and reports without installing or starting anything;
# SENSORGATE_PG_LIB (default /usr/lib/postgresql) is where Debian keeps PostgreSQL's binaries,
# PYTHON3 (default /usr/bin/python3) the interpreter whose Debian packages examples/ uses.
set -euo pipefail

PG_LIB=${SENSORGATE_PG_LIB:-/usr/lib/postgresql}
CHROMIUM=${CHROMIUM_PATH:-/usr/bin/chromium}
PYTHON3=${PYTHON3:-/usr/bin/python3}

# missing prints the Debian packages the tests need and this machine lacks, one a line.
# A server named by TEST_DATABASE_URL or TEST_REDIS_URL stands in for the local package.
missing() {
  if [ -z "${TEST_DATABASE_URL:-}" ] && ! command -v initdb >/dev/null 2>&1 && ! ls "$PG_LIB"/*/bin/initdb >/dev/null 2>&1; then
    echo postgresql
  fi
  [ -n "${TEST_REDIS_URL:-}" ] || command -v redis-server >/dev/null 2>&1 || echo redis-server
  command -v node >/dev/null 2>&1 || echo nodejs
  command -v npm >/dev/null 2>&1 || echo npm
  [ -x "$CHROMIUM" ] || echo chromium
  command -v jq >/dev/null 2>&1 || echo jq # the README's curl tour (examples/curl-tour.sh)
  "$PYTHON3" -c 'import pandas' >/dev/null 2>&1 || echo python3-pandas
  "$PYTHON3" -c 'import matplotlib' >/dev/null 2>&1 || echo python3-matplotlib
  # The science formats' readers (gateway/science, gateway/export): the netCDF-C tools,
  # netCDF4-python and xarray; DuckDB comes from npm (scripts/parquet-read). Debian has
  # no pyarrow, so pandas reads the NetCDF files (through xarray), not the Parquet ones.
  command -v ncdump >/dev/null 2>&1 || echo netcdf-bin
  "$PYTHON3" -c 'import netCDF4' >/dev/null 2>&1 || echo python3-netcdf4
  "$PYTHON3" -c 'import xarray' >/dev/null 2>&1 || echo python3-xarray
  # The OGC tests' independent clients (gateway/ogc): GDAL's ogrinfo and OWSLib.
  command -v ogrinfo >/dev/null 2>&1 || echo gdal-bin
  "$PYTHON3" -c 'import owslib.ogcapi.features' >/dev/null 2>&1 || echo python3-owslib
}

mapfile -t need < <(missing)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "make test: missing ${need[*]}; run this once, then make test again:" >&2
    echo "  sudo apt-get install -y ${need[*]}" >&2
    exit 1
  fi
  echo "make test: installing ${need[*]}" >&2
  if [ "${PREREQS_CHECK_ONLY:-}" = 1 ]; then
    echo "  apt-get install -y ${need[*]}   (not run: PREREQS_CHECK_ONLY=1)" >&2
    exit 0
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "make test: no apt-get on this machine; install the equivalents of: ${need[*]}" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${need[@]}"
fi
[ "${PREREQS_CHECK_ONLY:-}" = 1 ] && exit 0

# Start the system's servers when they are installed but down (a fresh container has no
# init system). Without root, scripts/testenv.sh starts throwaway ones instead.
[ "$(id -u)" = 0 ] || exit 0
if command -v pg_isready >/dev/null 2>&1 && ! pg_isready -q -h 127.0.0.1 -p 5432; then
  if command -v pg_ctlcluster >/dev/null 2>&1 && [ -n "$(ls /etc/postgresql 2>/dev/null)" ]; then
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | sort -V | tail -1)" main start || true
  fi
fi
if command -v redis-cli >/dev/null 2>&1 && ! redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG; then
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log || true
fi
