#!/bin/bash
# A real Kubernetes control plane for kuryr-l7-router, built from Go modules (functional/kube/:
# kube-apiserver from k8s.io/kubernetes with an embedded etcd) and started on loopback with RBAC,
# a service-account issuer, the Gateway API v1.6.1 standard CRDs (from the sigs.k8s.io/gateway-api
# module) and the shipped RBAC of etc/manifests. docs/development.md#a-real-api-server.
#
#   functional/kube.sh build        go build (needs the module proxy the first time; then Go's caches)
#   functional/kube.sh start [DIR]  start it in the background, wait until ready, print its env
#   functional/kube.sh env   [DIR]  the env lines (KUBECONFIG of an admin; the controller's token)
#   functional/kube.sh token [DIR]  a fresh token of the kuryr-l7-router ServiceAccount
#   functional/kube.sh compact [DIR] compact etcd at its current revision
#   functional/kube.sh stop  [DIR]
# DIR: $KURYR_KUBE_DIR or /tmp/kuryr-kube. The built binary and the CRDs' path are kept in
# $KURYR_KUBE_HOME (default ~/.cache/kuryr-kube), outside the repository.
# Inside the 2025.1 stack's network namespace (functional/openstack.sh run ...) the loopback is the
# namespace's own: start it there for a test run there (the functional test does it itself).
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
REPO=$PWD
HOME_DIR=${KURYR_KUBE_HOME:-$HOME/.cache/kuryr-kube}
BIN=$HOME_DIR/bin/kube-testcluster
GATEWAY_API=sigs.k8s.io/gateway-api@v1.6.1
# The shipped manifests applied, in order (also the binary's default; given here so that a binary
# built before a manifest was added applies it too)
SHIPPED=namespace.yaml,serviceaccount.yaml,clusterrole.yaml,clusterrolebinding.yaml,secrets-clusterrole.yaml,role.yaml,rolebinding.yaml,ingressclass.yaml

need_go() {
  # the official tarball's place, when a login shell's profile did not put it on PATH
  command -v go > /dev/null || { [ -x /usr/local/go/bin/go ] && PATH=$PATH:/usr/local/go/bin; }
  command -v go > /dev/null || { echo "FAILED: no Go toolchain (go) on PATH: the real API server is built from Go modules" >&2; exit 1; }
}

build() {
  need_go
  mkdir -p "$HOME_DIR/bin"
  local t0 crds
  t0=$(date +%s)
  # no symbol table nor DWARF: a shorter link, a smaller binary (nobody debugs it here)
  (cd functional/kube && go build -ldflags="-s -w" -o "$BIN" .)
  # the CRDs come from the module itself (verified against go.sum's database like any module),
  # never from a copy in this repository
  crds=$(cd /tmp && GOFLAGS=-mod=mod go mod download -json "$GATEWAY_API" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  [ -d "$crds/config/crd/standard" ] || { echo "FAILED: $GATEWAY_API has no config/crd/standard ($crds)" >&2; exit 1; }
  echo "$crds/config/crd/standard" > "$HOME_DIR/crds.path"
  echo "built in $(($(date +%s) - t0))s: $BIN; CRDs: $(cat "$HOME_DIR/crds.path")"
}

dir_of() { echo "${1:-${KURYR_KUBE_DIR:-/tmp/kuryr-kube}}"; }

print_env() { # DIR
  local d=$1
  echo "export KUBECONFIG=$d/admin.kubeconfig"
  echo "export KURYR_KUBE_DIR=$d"
  echo "# the controller: [kubernetes] api_root = $(cat "$d/ready")"
  echo "#   token_file = $d/serviceaccount/token, ssl_ca_crt_file = $d/serviceaccount/ca.crt"
  echo "#   (or kubeconfig = $d/controller.kubeconfig)"
}

start() { # DIR
  local d=$1 pid
  if [ ! -x "$BIN" ] || [ ! -s "$HOME_DIR/crds.path" ]; then
    echo "FAILED: $BIN not built: run functional/kube.sh build" >&2; exit 1
  fi
  if [ -s "$d.pid" ] && kill -0 "$(cat "$d.pid")" 2>/dev/null; then
    echo "already running (pid $(cat "$d.pid"))" >&2; print_env "$d"; return 0
  fi
  rm -rf "$d"; mkdir -p "$(dirname "$d")"
  setsid "$BIN" serve -dir "$d" -manifests "$REPO/etc/manifests" -apply "$SHIPPED" -crds "$(cat "$HOME_DIR/crds.path")" \
    > "$d.log" 2>&1 < /dev/null &
  pid=$!; echo "$pid" > "$d.pid"
  for _ in $(seq 1 360); do
    [ -e "$d/ready" ] && { echo "started (pid $pid, log $d.log)" >&2; print_env "$d"; return 0; }
    if [ -e "$d/failed" ] || ! kill -0 "$pid" 2>/dev/null; then break; fi
    sleep 0.5
  done
  echo "FAILED: the control plane did not become ready (log $d.log); its last lines:" >&2
  tail -n 20 "$d.log" | sed 's/^/  | /' >&2
  stop "$d"; exit 1
}

stop() { # DIR
  local d=$1 pid
  [ -s "$d.pid" ] || return 0
  pid=$(cat "$d.pid")
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid"
    for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
  fi
  rm -f "$d.pid"
}

case "${1:-}" in
  build) build ;;
  start) start "$(dir_of "${2:-}")" ;;
  stop) stop "$(dir_of "${2:-}")" ;;
  env) print_env "$(dir_of "${2:-}")" ;;
  token) "$BIN" token -dir "$(dir_of "${2:-}")" ;;
  compact) "$BIN" compact -dir "$(dir_of "${2:-}")" ;;
  *) sed -n '2,18p' "$0" >&2; exit 2 ;;
esac
