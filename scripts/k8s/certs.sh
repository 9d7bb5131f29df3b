#!/usr/bin/env bash
# The test cluster's PKI, made with openssl the way kubeadm lays it out: a cluster CA
# (client certificates of every component, the API server's and the kubelet's serving
# certificates), a front-proxy CA (the aggregation layer: metrics-server), and the service
# account signing key pair; then one kubeconfig per client. Made once into $1 and reused
# while the node's name and address are the same (a warm run reuses them).
#   certs.sh DIR NODE_NAME NODE_IP APISERVER_PORT
set -euo pipefail
dir=$1 node=$2 ip=$3 port=$4
mkdir -p "$dir"
cd "$dir"
stamp="$node $ip $port"
if [ -f stamp ] && [ "$(cat stamp)" = "$stamp" ] && [ -f admin.kubeconfig ]; then
  exit 0
fi
rm -f ./*.crt ./*.key ./*.pub ./*.csr ./*.kubeconfig ./*.srl stamp

ca() { # ca NAME CN
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.crt" -days 3650 \
    -subj "/CN=$2" -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" 2>/dev/null
}
# cert NAME CA SUBJECT USAGE [SANS]: a key and a certificate signed by CA.
cert() {
  local name=$1 ca=$2 subj=$3 usage=$4 sans=${5:-}
  openssl req -newkey rsa:2048 -nodes -keyout "$name.key" -out "$name.csr" -subj "$subj" 2>/dev/null
  {
    echo "basicConstraints=critical,CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    echo "extendedKeyUsage=$usage"
    [ -z "$sans" ] || echo "subjectAltName=$sans"
  } >"$name.ext"
  openssl x509 -req -in "$name.csr" -CA "$ca.crt" -CAkey "$ca.key" -CAcreateserial \
    -days 3650 -out "$name.crt" -extfile "$name.ext" 2>/dev/null
  rm -f "$name.csr" "$name.ext"
}

ca ca sensorgate-k8s-ca
ca front-proxy-ca sensorgate-k8s-front-proxy-ca
cert apiserver ca "/CN=kube-apiserver" serverAuth \
  "IP:10.96.0.1,IP:127.0.0.1,IP:$ip,DNS:localhost,DNS:$node,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
cert apiserver-kubelet-client ca "/O=system:masters/CN=kube-apiserver-kubelet-client" clientAuth
cert kubelet ca "/CN=$node" serverAuth "IP:$ip,DNS:$node"
cert front-proxy-client front-proxy-ca "/CN=front-proxy-client" clientAuth
openssl genrsa -out sa.key 2048 2>/dev/null
openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null

# kubeconfig NAME SUBJECT: a client certificate and a kubeconfig that uses it.
kubeconfig() {
  cert "$1" ca "$2" clientAuth
  cat >"$1.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: sensorgate-k8s
  cluster: {certificate-authority: $dir/ca.crt, server: "https://$ip:$port"}
users:
- name: $1
  user: {client-certificate: $dir/$1.crt, client-key: $dir/$1.key}
contexts:
- name: $1
  context: {cluster: sensorgate-k8s, user: $1}
current-context: $1
EOF
}
kubeconfig admin "/O=system:masters/CN=kubernetes-admin"
kubeconfig controller-manager "/CN=system:kube-controller-manager"
kubeconfig scheduler "/CN=system:kube-scheduler"
kubeconfig kubelet-client "/O=system:nodes/CN=system:node:$node"
kubeconfig kube-proxy "/CN=system:kube-proxy"
echo "$stamp" >stamp
