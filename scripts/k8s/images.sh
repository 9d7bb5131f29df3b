#!/usr/bin/env bash
# The test cluster's images, built here and imported into its containerd (namespace
# k8s.io, the one the kubelet's CRI uses): nothing is pulled from a registry.
#   images.sh build    the project's images (`make images-prebuilt IMAGE_TAG=k8s-test`),
#                      PostgreSQL and Redis from Debian's packages (scripts/docker/base-images.sh),
#                      and pause, CoreDNS and metrics-server FROM scratch with the binaries
#                      of scripts/k8s/build.sh; all with the Docker engine of scripts/docker.
#   images.sh import   `docker save` of each into `ctr -n k8s.io images import`, skipping an
#                      image whose Docker image id was already imported.
set -euo pipefail
cd "$(dirname "$0")/../.."
CACHE=${K8S_CACHE:-$HOME/.cache/sensorgate/k8s}
K8S_VERSION=${K8S_VERSION:-v1.34.4}
BIN=$CACHE/bin/$K8S_VERSION
CTR_SOCK=/run/sensorgate-k8s/containerd/containerd.sock
export DOCKER_BUILDKIT=0 # the classic builder: BuildKit would fetch its frontend image
TAG=k8s-test
# airquality also as k8s-test-v2 (the same image under a second name): the rolling update
# check moves the Deployment to it.
PROJECT="sensorgate/gateway:$TAG sensorgate/ocean:$TAG sensorgate/weather:$TAG sensorgate/airquality:$TAG sensorgate/airquality:$TAG-v2"
BASE="sensorgate/postgres:15 sensorgate/redis:7"
ADDONS="sensorgate/pause:$K8S_VERSION sensorgate/coredns:$K8S_VERSION sensorgate/metrics-server:$K8S_VERSION"
log() { echo "k8s-images: $*"; }

# scratch IMAGE BINARY USER ENTRYPOINT...: an image of one static binary on an empty base.
scratch() {
  local image=$1 binary=$2 user=$3; shift 3
  local ctx; ctx=$(mktemp -d)
  cp "$BIN/$binary" "$ctx/$binary"
  local ep; ep=$(printf '"%s",' "$@"); ep="[${ep%,}]"
  printf 'FROM scratch\nLABEL org.sensorgate.build=k8s-test\nCOPY %s /%s\nUSER %s\nENTRYPOINT %s\n' \
    "$binary" "$binary" "$user" "$ep" >"$ctx/Dockerfile"
  docker build -q -t "$image" "$ctx" >/dev/null
  rm -rf "$ctx"
}

build() {
  bash scripts/docker/engine.sh
  bash scripts/docker/base-images.sh
  nice -n 19 make -s images-prebuilt IMAGE_TAG=$TAG GO="env GOMAXPROCS=${GOMAXPROCS:-1} go" >/dev/null
  docker tag "sensorgate/airquality:$TAG" "sensorgate/airquality:$TAG-v2"
  scratch "sensorgate/pause:$K8S_VERSION" pause 65535:65535 /pause
  scratch "sensorgate/coredns:$K8S_VERSION" coredns 0:0 /coredns
  scratch "sensorgate/metrics-server:$K8S_VERSION" metrics-server 1000:1000 /metrics-server
  docker image prune -f --filter label=org.sensorgate.build=prebuilt >/dev/null
  docker image prune -f --filter label=org.sensorgate.build=k8s-test >/dev/null
  log "built: $PROJECT $BASE $ADDONS"
}

import() {
  local seen=$CACHE/imported.txt
  touch "$seen"
  for image in $PROJECT $BASE $ADDONS; do
    local id; id=$(docker image inspect -f '{{.Id}}' "$image")
    if grep -qx "$image $id" "$seen" && ctr -a "$CTR_SOCK" -n k8s.io images ls -q | grep -qx "docker.io/$image"; then
      continue
    fi
    docker save "$image" | ctr -a "$CTR_SOCK" -n k8s.io images import - >/dev/null
    grep -v "^$image " "$seen" >"$seen.tmp" || true
    echo "$image $id" >>"$seen.tmp"
    mv "$seen.tmp" "$seen"
    log "imported $image"
  done
}

case "${1:-}" in
  build) build ;;
  import) import ;;
  *) echo "usage: $0 build|import" >&2; exit 2 ;;
esac
