#!/usr/bin/env bash
# Builds the compose stack's infrastructure images without any image registry:
#   sensorgate/debian:bookworm   a minimal Debian root file system made with debootstrap
#                                from Debian's packages, imported with `docker import`
#   sensorgate/postgres:15, sensorgate/redis:7, sensorgate/prometheus:2
#                                FROM it, with Debian's packages (deploy/docker/base/*)
# Cached between runs outside the clone: the root file system tarball in
# $SENSORGATE_CACHE/rootfs and the images in Docker's own image and layer cache, so a warm
# run only checks that the images are there (seconds).
set -euo pipefail
cd "$(dirname "$0")/../.."
CACHE=${SENSORGATE_CACHE:-$HOME/.cache/sensorgate}
SUITE=${DEBIAN_SUITE:-bookworm}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
BASE=sensorgate/debian:$SUITE
export DOCKER_BUILDKIT=0 # the classic builder: BuildKit would fetch its frontend image from a registry

if ! docker image inspect "$BASE" >/dev/null 2>&1; then
  tarball="$CACHE/rootfs/debian-$SUITE-minbase.tar"
  if [ ! -s "$tarball" ]; then
    command -v debootstrap >/dev/null 2>&1 || {
      [ "$(id -u)" = 0 ] || { echo "base-images: debootstrap is missing (apt-get install debootstrap)" >&2; exit 1; }
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
    }
    mkdir -p "$CACHE/rootfs"
    root=$(mktemp -d "$CACHE/rootfs/build.XXXXXX")
    trap 'rm -rf "$root"' EXIT
    echo "base-images: debootstrap --variant=minbase $SUITE (once; cached in $tarball)"
    debootstrap --variant=minbase "$SUITE" "$root" "$MIRROR" >"$CACHE/rootfs/debootstrap.log" 2>&1 || {
      tail -20 "$CACHE/rootfs/debootstrap.log" >&2; exit 1; }
    rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
    tar -C "$root" --numeric-owner -cf "$tarball.tmp" .
    mv "$tarball.tmp" "$tarball"
    rm -rf "$root"
    trap - EXIT
  fi
  echo "base-images: docker import $tarball as $BASE"
  docker import -c 'CMD ["/bin/bash"]' -c 'ENV LANG=C.UTF-8' "$tarball" "$BASE" >/dev/null
fi

# The layer cache makes these no-ops while their Dockerfiles are unchanged. --network host:
# apt in the build reaches the Debian mirror exactly as the host does.
for img in postgres:15 redis:7 prometheus:2; do
  name=${img%%:*}
  docker build -q --network host --build-arg "BASE=$BASE" -t "sensorgate/$img" "deploy/docker/base/$name" >/dev/null
  echo "base-images: sensorgate/$img $(docker image inspect -f '{{.Size}}' "sensorgate/$img" | awk '{printf "%.0f MB", $1/1e6}')"
done
