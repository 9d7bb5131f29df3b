#!/usr/bin/env bash
# make k8s-test: a real single-node Kubernetes on this machine, the k8s-test overlay
# (deploy/k8s/overlays/k8s-test: the dev overlay with images built here) applied to it,
# the checks of deploy/k8stest, then everything torn down (docs/deploy.md, "Kubernetes
# test"). Needs root (containerd, the kubelet, iptables) and installs what it needs:
# Debian's containerd, runc, CNI plugins and etcd; Kubernetes, CoreDNS and metrics-server
# built from their Go modules (scripts/k8s/build.sh), cached in ~/.cache/sensorgate/k8s.
# K8S_KEEP=1 leaves the cluster up after the test (scripts/k8s/cluster.sh down ends it).
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE=${K8S_CACHE:-$HOME/.cache/sensorgate/k8s}
K8S_VERSION=${K8S_VERSION:-v1.34.4}
export K8S_CACHE=$CACHE K8S_VERSION
t0=$(date +%s)
stamp() { echo "k8s-test: $1 done at +$(( $(date +%s) - t0 )) s"; }

if [ "$(id -u)" != 0 ]; then
  echo "k8s-test: needs root (containerd, the kubelet and kube-proxy run here)" >&2
  exit 1
fi
missing=""
for p in containerd runc containernetworking-plugins etcd-server; do
  dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "k8s-test: apt-get install$missing"
  apt-get update -qq
  # Another apt-get may hold the lock for a while on a shared machine.
  for i in $(seq 1 60); do
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null && break
    [ "$i" = 60 ] && { echo "k8s-test: apt-get install$missing failed" >&2; exit 1; }
    sleep 5
  done
fi
stamp "Debian packages"

bash scripts/k8s/build.sh
stamp "binaries"
bash scripts/k8s/images.sh build
# The overlay runs PostgreSQL and Redis as the users Debian's packages made in them.
for want in "sensorgate/postgres:15 uid=100(postgres) gid=102(postgres)" "sensorgate/redis:7 uid=100(redis) gid=101(redis)"; do
  image=${want%% *}
  got=$(docker run --rm --entrypoint id "$image" | awk '{print $1, $2}')
  [ "$got" = "${want#* }" ] || { echo "k8s-test: $image runs as '$got', the overlay expects '${want#* }'" >&2; exit 1; }
done
stamp "images"

if [ "${K8S_KEEP:-}" != 1 ]; then
  trap 'bash scripts/k8s/cluster.sh down' EXIT
fi
bash scripts/k8s/cluster.sh down >/dev/null 2>&1 || true # whatever a killed run left
bash scripts/k8s/cluster.sh up
# PostgreSQL's PersistentVolume (the overlay's postgres-pv.yaml), owned by its user.
install -d -o 100 -g 102 -m 0700 /var/lib/sensorgate-k8s/pv/postgres
stamp "cluster up"

export KUBECONFIG=$CACHE/pki/admin.kubeconfig KUBECTL=$CACHE/bin/$K8S_VERSION/kubectl
set +e
(cd deploy && GOMAXPROCS=${GOMAXPROCS:-1} nice -n 10 go test -count=1 -timeout 60m -tags k8s -v ./k8stest/)
rc=$?
set -e
stamp "checks (rc=$rc)"
exit $rc
