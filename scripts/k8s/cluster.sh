#!/usr/bin/env bash
# A real single-node Kubernetes on this machine, with no systemd and nothing pulled
# (docs/deploy.md, "Kubernetes test"):
#   cluster.sh up     containerd (its own socket and root, beside any Docker engine), etcd,
#                     kube-apiserver, kube-controller-manager, kube-scheduler, kubelet and
#                     kube-proxy as background processes, a bridge CNI network, then
#                     CoreDNS and metrics-server as pods; waits until the node is Ready
#                     and both add-ons answer.
#   cluster.sh down   stops every process it started (by the pids it wrote), removes the
#                     pods' containers, mounts, network and the cluster's state.
#   cluster.sh env    prints KUBECONFIG=... for the admin user.
# The binaries come from scripts/k8s/build.sh, the images from scripts/k8s/images.sh.
set -euo pipefail
CACHE=${K8S_CACHE:-$HOME/.cache/sensorgate/k8s}
K8S_VERSION=${K8S_VERSION:-v1.34.4}
BIN=$CACHE/bin/$K8S_VERSION
RUN=/run/sensorgate-k8s           # pids, sockets
DATA=/var/lib/sensorgate-k8s      # etcd, kubelet, containerd, the PostgreSQL volume
PKI=$CACHE/pki
LOG=$CACHE/log
CNI_CONF=$CACHE/cni
CTR_SOCK=$RUN/containerd/containerd.sock
API_PORT=${K8S_API_PORT:-16443}
ETCD_PORT=${K8S_ETCD_PORT:-23790}
SERVICE_CIDR=10.96.0.0/16
POD_CIDR=10.244.0.0/24
CLUSTER_DNS=10.96.0.10
NODE_NAME=$(hostname | tr '[:upper:]' '[:lower:]')
NODE_IP=$(ip -4 route get 1.1.1.1 2>/dev/null | sed -n 's/.* src \([0-9.]*\).*/\1/p')
NODE_IP=${NODE_IP:-$(hostname -I | awk '{print $1}')}
export KUBECONFIG=$PKI/admin.kubeconfig
kubectl() { "$BIN/kubectl" "$@"; }
log() { echo "k8s-cluster: $*"; }

# start NAME CMD...: runs CMD in the background in its own session, its output in
# $LOG/NAME.log and its pid in $RUN/NAME.pid.
start() {
  local name=$1; shift
  setsid "$@" >"$LOG/$name.log" 2>&1 </dev/null &
  echo $! >"$RUN/$name.pid"
}

# wait_for WHAT SECONDS CMD...: retries CMD every second; fails loudly with the last logs.
wait_for() {
  local what=$1 secs=$2; shift 2
  for _ in $(seq 1 "$secs"); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 1
  done
  echo "k8s-cluster: $what not ready after $secs s" >&2
  for f in "$LOG"/*.log; do echo "--- $f" >&2; tail -15 "$f" >&2; done
  exit 1
}

alive() { [ -f "$RUN/$1.pid" ] && kill -0 "$(cat "$RUN/$1.pid")" 2>/dev/null; }

up() {
  for b in kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl; do
    [ -x "$BIN/$b" ] || { echo "k8s-cluster: $BIN/$b is missing: run scripts/k8s/build.sh" >&2; exit 1; }
  done
  mkdir -p "$RUN" "$DATA" "$LOG" "$CNI_CONF"
  bash "$(dirname "$0")/certs.sh" "$PKI" "$NODE_NAME" "$NODE_IP" "$API_PORT"

  # The kernel settings a node needs: routing between the pod bridge and the host, and
  # bridged traffic through iptables (kube-proxy's Service rules apply to pod-to-pod).
  sysctl -qw net.ipv4.ip_forward=1 net.bridge.bridge-nf-call-iptables=1

  cat >"$CNI_CONF/10-sensorgate.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "sensorgate-k8s",
  "plugins": [
    {"type": "bridge", "bridge": "sgk8s0", "isGateway": true, "ipMasq": true, "hairpinMode": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": "$POD_CIDR"}]], "routes": [{"dst": "0.0.0.0/0"}],
              "dataDir": "$DATA/cni"}},
    {"type": "portmap", "capabilities": {"portMappings": true}},
    {"type": "firewall"}
  ]
}
EOF
  if ! alive containerd; then
    cat >"$CACHE/containerd.toml" <<EOF
version = 2
root = "$DATA/containerd"
state = "$RUN/containerd"
[grpc]
  address = "$CTR_SOCK"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "sensorgate/pause:$K8S_VERSION"
  # The kubelet asks for oom_score_adj down to -998 (the sandboxes, Guaranteed pods); this
  # machine's root lacks CAP_SYS_RESOURCE, so runc's write fails ("failed to update
  # /proc/self/oom_score_adj: Permission denied") and no pod starts. Clamped to
  # containerd's own value instead.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$CNI_CONF"
EOF
    log "containerd $(containerd --version | awk '{print $3}')"
    start containerd containerd --config "$CACHE/containerd.toml"
    wait_for containerd 30 ctr -a "$CTR_SOCK" version
  fi
  bash "$(dirname "$0")/images.sh" import

  if ! alive etcd; then
    log "etcd $(etcd --version | awk 'NR==1{print $3}')"
    start etcd etcd --name "$NODE_NAME" --data-dir "$DATA/etcd" \
      --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
      --listen-peer-urls "http://127.0.0.1:$((ETCD_PORT + 10))" --initial-advertise-peer-urls "http://127.0.0.1:$((ETCD_PORT + 10))" \
      --initial-cluster "$NODE_NAME=http://127.0.0.1:$((ETCD_PORT + 10))" --listen-metrics-urls "http://127.0.0.1:$((ETCD_PORT + 20))"
    wait_for etcd 30 curl -sf "http://127.0.0.1:$ETCD_PORT/health"
  fi

  log "kube-apiserver $K8S_VERSION on https://$NODE_IP:$API_PORT"
  alive kube-apiserver || start kube-apiserver "$BIN/kube-apiserver" \
    --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
    --advertise-address "$NODE_IP" --secure-port "$API_PORT" \
    --service-cluster-ip-range "$SERVICE_CIDR" --allow-privileged=true \
    --authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction \
    --client-ca-file "$PKI/ca.crt" --tls-cert-file "$PKI/apiserver.crt" --tls-private-key-file "$PKI/apiserver.key" \
    --kubelet-client-certificate "$PKI/apiserver-kubelet-client.crt" --kubelet-client-key "$PKI/apiserver-kubelet-client.key" \
    --kubelet-certificate-authority "$PKI/ca.crt" --kubelet-preferred-address-types InternalIP \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$PKI/sa.pub" --service-account-signing-key-file "$PKI/sa.key" \
    --requestheader-client-ca-file "$PKI/front-proxy-ca.crt" --requestheader-allowed-names front-proxy-client \
    --requestheader-username-headers X-Remote-User --requestheader-group-headers X-Remote-Group \
    --requestheader-extra-headers-prefix X-Remote-Extra- \
    --proxy-client-cert-file "$PKI/front-proxy-client.crt" --proxy-client-key-file "$PKI/front-proxy-client.key" \
    --enable-aggregator-routing=true
  wait_for kube-apiserver 180 kubectl get --raw /readyz

  alive kube-controller-manager || start kube-controller-manager "$BIN/kube-controller-manager" \
    --kubeconfig "$PKI/controller-manager.kubeconfig" \
    --authentication-kubeconfig "$PKI/controller-manager.kubeconfig" --authorization-kubeconfig "$PKI/controller-manager.kubeconfig" \
    --leader-elect=false --use-service-account-credentials=true \
    --cluster-signing-cert-file "$PKI/ca.crt" --cluster-signing-key-file "$PKI/ca.key" \
    --root-ca-file "$PKI/ca.crt" --service-account-private-key-file "$PKI/sa.key" \
    --allocate-node-cidrs=true --cluster-cidr 10.244.0.0/16 --node-cidr-mask-size 24 \
    --service-cluster-ip-range "$SERVICE_CIDR" --horizontal-pod-autoscaler-sync-period 10s
  alive kube-scheduler || start kube-scheduler "$BIN/kube-scheduler" \
    --kubeconfig "$PKI/scheduler.kubeconfig" --leader-elect=false \
    --authentication-kubeconfig "$PKI/scheduler.kubeconfig" --authorization-kubeconfig "$PKI/scheduler.kubeconfig"

  # The kubelet: cgroupfs driver (no systemd), cgroup v1 allowed (this kernel mounts the
  # v1 hierarchies; kubelet 1.35 would refuse them by default), the cluster CA for its
  # clients, the webhook for authorization (metrics-server reads /stats/summary).
  cat >"$CACHE/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $PKI/ca.crt}
authorization: {mode: Webhook}
clusterDomain: cluster.local
clusterDNS: [$CLUSTER_DNS]
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: unix://$CTR_SOCK
tlsCertFile: $PKI/kubelet.crt
tlsPrivateKeyFile: $PKI/kubelet.key
resolvConf: /etc/resolv.conf
serializeImagePulls: false
evictionHard: {memory.available: 200Mi, nodefs.available: 5%, imagefs.available: 5%}
imageGCHighThresholdPercent: 95
EOF
  alive kubelet || start kubelet "$BIN/kubelet" --config "$CACHE/kubelet.yaml" \
    --kubeconfig "$PKI/kubelet-client.kubeconfig" --root-dir "$DATA/kubelet" \
    --hostname-override "$NODE_NAME" --node-ip "$NODE_IP"

  cat >"$CACHE/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clusterCIDR: 10.244.0.0/16
hostnameOverride: $NODE_NAME
clientConnection: {kubeconfig: $PKI/kube-proxy.kubeconfig}
conntrack: {maxPerCore: 0}
EOF
  alive kube-proxy || start kube-proxy "$BIN/kube-proxy" --config "$CACHE/kube-proxy.yaml"

  wait_for "node $NODE_NAME" 180 kubectl wait --for=condition=Ready "node/$NODE_NAME" --timeout=1s
  log "node $NODE_NAME Ready"

  sed -e "s|@CLUSTER_DNS@|$CLUSTER_DNS|g" -e "s|@VERSION@|$K8S_VERSION|g" \
    "$(dirname "$0")/addons.yaml" | kubectl apply -f - >/dev/null
  wait_for coredns 180 kubectl -n kube-system rollout status deploy/coredns --timeout=1s
  wait_for metrics-server 240 kubectl -n kube-system rollout status deploy/metrics-server --timeout=1s
  wait_for "the metrics API" 240 kubectl get --raw /apis/metrics.k8s.io/v1beta1/nodes
  log "up: KUBECONFIG=$KUBECONFIG"
}

down() {
  for name in kube-proxy kubelet kube-scheduler kube-controller-manager kube-apiserver etcd; do
    if alive "$name"; then kill "$(cat "$RUN/$name.pid")" 2>/dev/null || true; fi
  done
  for _ in $(seq 1 20); do
    busy=""
    for name in kube-proxy kubelet kube-scheduler kube-controller-manager kube-apiserver etcd; do
      if alive "$name"; then busy=1; fi
    done
    [ -n "$busy" ] || break
    sleep 1
  done
  # What did not stop within 20 s (kube-apiserver can take longer to drain) is killed.
  for name in kube-proxy kubelet kube-scheduler kube-controller-manager kube-apiserver etcd; do
    if alive "$name"; then kill -9 "$(cat "$RUN/$name.pid")" 2>/dev/null || true; fi
  done
  if alive containerd; then
    # Every pod sandbox and container the kubelet left, then containerd itself.
    for ns in k8s.io; do
      for c in $(ctr -a "$CTR_SOCK" -n $ns tasks ls -q 2>/dev/null); do ctr -a "$CTR_SOCK" -n $ns tasks kill -s SIGKILL "$c" >/dev/null 2>&1 || true; done
      sleep 1
      for c in $(ctr -a "$CTR_SOCK" -n $ns tasks ls -q 2>/dev/null); do ctr -a "$CTR_SOCK" -n $ns tasks delete -f "$c" >/dev/null 2>&1 || true; done
      for c in $(ctr -a "$CTR_SOCK" -n $ns containers ls -q 2>/dev/null); do ctr -a "$CTR_SOCK" -n $ns containers delete "$c" >/dev/null 2>&1 || true; done
    done
    kill "$(cat "$RUN/containerd.pid")" 2>/dev/null || true
    sleep 1
  fi
  # Mounts the kubelet and containerd leave (volumes, netns, overlay rootfs), deepest first.
  { grep -oE " ($DATA|$RUN)/[^ ]*" /proc/self/mounts || true; } | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
  ip link delete sgk8s0 2>/dev/null || true
  # kube-proxy's and the CNI plugins' iptables chains.
  for table in nat filter mangle; do
    { iptables-save -t $table 2>/dev/null | grep -oE '^:(KUBE|CNI)-[^ ]+' || true; } | tr -d : | while read -r chain; do
      { iptables -t $table -S 2>/dev/null | grep -E -- "-j $chain( |$)" || true; } | sed 's/^-A/-D/' | while read -r rule; do
        eval "iptables -t $table $rule" 2>/dev/null || true
      done
    done
    { iptables-save -t $table 2>/dev/null | grep -oE '^:(KUBE|CNI)-[^ ]+' || true; } | tr -d : | while read -r chain; do iptables -t $table -F "$chain" 2>/dev/null || true; done
    { iptables-save -t $table 2>/dev/null | grep -oE '^:(KUBE|CNI)-[^ ]+' || true; } | tr -d : | while read -r chain; do iptables -t $table -X "$chain" 2>/dev/null || true; done
  done
  # State that must not outlive the cluster (the images stay in containerd's content store
  # under $DATA/containerd, so the next run imports nothing it already has).
  rm -rf "$DATA/etcd" "$DATA/kubelet" "$DATA/cni" "$DATA/pv" "$RUN"
  log "down"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  env) echo "KUBECONFIG=$KUBECONFIG KUBECTL=$BIN/kubectl" ;;
  *) echo "usage: $0 up|down|env" >&2; exit 2 ;;
esac
