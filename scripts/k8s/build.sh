#!/usr/bin/env bash
# Builds the parts of the test cluster that are not Debian packages, from pinned sources
# fetched through the Go module proxy, into $CACHE/bin (docs/deploy.md, "Kubernetes test"):
#   - kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kube-proxy, kubectl
#     from k8s.io/kubernetes at $K8S_VERSION. Its module zip has no staging/ directory (the
#     staging modules are nested modules, published on their own as k8s.io/<name> v0.X.Y at
#     the same commit), so a copy of the module is built with each `replace k8s.io/<name>
#     => ./staging/src/k8s.io/<name>` turned into that published module at v0.X.Y.
#   - CoreDNS from github.com/coredns/coredns at $COREDNS_VERSION, with the plugins a
#     cluster DNS needs (plugin.cfg cut down, then its own directives generator): without
#     the cloud plugins (route53, azure, clouddns, ...) it builds in a fraction of the time.
#   - metrics-server from sigs.k8s.io/metrics-server at $METRICS_SERVER_VERSION.
#   - pause, from the C source in the Kubernetes module (build/pause/linux/pause.c), static.
# Each binary is kept and reused: a warm run builds nothing. The machine is shared: builds
# run niced, one package at a time.
set -euo pipefail
CACHE=${K8S_CACHE:-$HOME/.cache/sensorgate/k8s}
K8S_VERSION=${K8S_VERSION:-v1.34.4}
COREDNS_VERSION=${COREDNS_VERSION:-v1.12.1}
METRICS_SERVER_VERSION=${METRICS_SERVER_VERSION:-v0.8.0}
BIN=$CACHE/bin/$K8S_VERSION
SRC=$CACHE/src
mkdir -p "$BIN" "$SRC"
export GOFLAGS=-mod=mod CGO_ENABLED=0 GOMAXPROCS=${GOMAXPROCS:-1} GOWORK=off
log() { echo "k8s-build: $*"; }

# moddir MODULE@VERSION: the module's directory in the module cache, downloaded if needed.
moddir() {
  (cd "$SRC" && go mod download -json "$1" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
}

# copyof MODULE@VERSION NAME: a writable copy of the module to build in (its own main
# module, so its go.mod's replace and exclude directives apply).
copyof() {
  local dir; dir=$(moddir "$1")
  [ -n "$dir" ] || { echo "k8s-build: cannot download $1" >&2; exit 1; }
  if [ ! -f "$SRC/$2/.copied" ]; then
    rm -rf "${SRC:?}/$2"
    cp -r "$dir" "$SRC/$2"
    chmod -R u+w "$SRC/$2"
    touch "$SRC/$2/.copied"
  fi
  echo "$SRC/$2"
}

k8s_bins="kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl"
missing=""
for b in $k8s_bins; do [ -x "$BIN/$b" ] || missing="$missing ./cmd/$b"; done
if [ -n "$missing" ]; then
  start=$(date +%s)
  src=$(copyof "k8s.io/kubernetes@$K8S_VERSION" "kubernetes-$K8S_VERSION")
  cd "$src"
  rm -rf vendor go.work go.work.sum # vendor/ holds only OWNERS in the zip; go.work names staging/
  minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
  stagever=v0.${K8S_VERSION#v1.}
  for m in $(grep -o 'k8s.io/[a-z-]* => ./staging/src/k8s.io/[a-z-]*' go.mod | awk '{print $1}'); do
    go mod edit -replace "$m=$m@$stagever"
  done
  ld="-s -w"
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld="$ld -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
  done
  log "building$missing from k8s.io/kubernetes@$K8S_VERSION (staging modules at $stagever)"
  nice -n 19 go build -p 1 -trimpath -ldflags "$ld" -o "$BIN/" $missing
  log "kubernetes built in $(( $(date +%s) - start )) s"
fi

if [ ! -x "$BIN/coredns" ]; then
  start=$(date +%s)
  src=$(copyof "github.com/coredns/coredns@$COREDNS_VERSION" "coredns-$COREDNS_VERSION")
  cd "$src"
  keep=" root metadata cancel timeouts reload bind ready health prometheus errors log loadbalance cache rewrite hosts kubernetes loop forward "
  awk -F: -v keep="$keep" '/^#/ || NF<2 {print; next} index(keep, " "$1" ") {print}' plugin.cfg > plugin.cfg.new
  mv plugin.cfg.new plugin.cfg
  nice -n 19 go run directives_generate.go
  log "building coredns $COREDNS_VERSION"
  nice -n 19 go build -p 1 -trimpath -ldflags "-s -w -X github.com/coredns/coredns/coremain.GitCommit=$COREDNS_VERSION" -o "$BIN/coredns" .
  log "coredns built in $(( $(date +%s) - start )) s"
fi

if [ ! -x "$BIN/metrics-server" ]; then
  start=$(date +%s)
  src=$(copyof "sigs.k8s.io/metrics-server@$METRICS_SERVER_VERSION" "metrics-server-$METRICS_SERVER_VERSION")
  cd "$src"
  log "building metrics-server $METRICS_SERVER_VERSION"
  nice -n 19 go build -p 1 -trimpath -ldflags "-s -w" -o "$BIN/metrics-server" ./cmd/metrics-server
  log "metrics-server built in $(( $(date +%s) - start )) s"
fi

if [ ! -x "$BIN/pause" ]; then
  src=$(copyof "k8s.io/kubernetes@$K8S_VERSION" "kubernetes-$K8S_VERSION")
  gcc -Os -static -DVERSION="$K8S_VERSION" -o "$BIN/pause" "$src/build/pause/linux/pause.c"
  strip "$BIN/pause"
  log "pause built"
fi
log "binaries in $BIN: $(cd "$BIN" && echo *)"
