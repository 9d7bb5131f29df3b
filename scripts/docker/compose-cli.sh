#!/usr/bin/env bash
# Prints the command that runs Compose v2: `docker compose` when the installed plugin is
# v2 or newer, else a docker-compose binary built from its Go module at a pinned version
# into the cache (no prebuilt binary is downloaded; the Go module proxy serves the source).
# Debian's docker-compose 1.29 is never used: it rejects the compose file's top-level name.
set -euo pipefail
CACHE=${SENSORGATE_CACHE:-$HOME/.cache/sensorgate}
VERSION=${COMPOSE_VERSION:-v2.40.3}
MODULE=github.com/docker/compose/v2

if v=$(docker compose version --short 2>/dev/null) && [[ ${v#v} =~ ^([2-9]|[1-9][0-9])\. ]]; then
  echo "docker compose"
  exit 0
fi
bin="$CACHE/bin/docker-compose-$VERSION"
if [ ! -x "$bin" ]; then
  echo "compose-cli: building Compose $VERSION from $MODULE (once; cached in $bin)" >&2
  # The module's go.mod has exclude directives, so `go install mod@version` refuses it;
  # build inside a writable copy of the module instead, with its own go.mod and go.sum.
  dir=$(GOWORK=off GOFLAGS=-mod=mod go mod download -json "$MODULE@$VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [ -n "$dir" ] || { echo "compose-cli: go mod download $MODULE@$VERSION failed" >&2; exit 1; }
  src=$(mktemp -d "${TMPDIR:-/tmp}/compose-src.XXXXXX")
  trap 'rm -rf "$src"' EXIT
  cp -r "$dir/." "$src" && chmod -R u+w "$src"
  mkdir -p "$CACHE/bin"
  (cd "$src" && GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath \
    -ldflags "-s -w -X $MODULE/internal.Version=$VERSION" -o "$bin.tmp" ./cmd) >&2
  mv "$bin.tmp" "$bin"
fi
echo "$bin"
