#!/bin/bash
# Runs ALL tests of kuryr-l7-router: unit tests, then functional tests against a real local
# OpenStack (Keystone, Neutron, Octavia) that this script installs (apt, needs root), starts and
# stops again, and the data-plane self-test (Octavia-rendered haproxy on loopback).
#
# usage: functional/test.sh            (as root; ~3 min apt the first time, ~25 s stack start)
#   KEEP_STACK=1   leave the OpenStack services running afterwards (for debugging)
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
export ROOT=${ROOT:-/tmp/ostack}
T0=$(date +%s)
step() { echo; echo "=== [$(( $(date +%s) - T0 ))s] $*"; }

step "unit and integration tests (no network)"
cargo test --all-targets --no-fail-fast

step "starting the local OpenStack (functional/openstack.sh start)"
functional/openstack.sh start
if [ "${KEEP_STACK:-0}" != 1 ]; then
  trap 'step "stopping the local OpenStack"; functional/openstack.sh stop' EXIT
fi

step "functional tests against the real Keystone, Neutron and Octavia"
# every [[test]] target named functional_* in Cargo.toml (their sources live under functional/)
FTESTS=$(sed -n 's/^name = "\(functional_[a-z0-9_]*\)"$/--test \1/p' Cargo.toml)
KURYR_FUNCTIONAL=1 KURYR_CONFIG_FILE="$ROOT/etc/kuryr/kuryr.conf" cargo test --no-fail-fast $FTESTS

if [ -x functional/dataplane/selftest.sh ]; then
  step "data-plane self-test: Octavia-rendered haproxy routing real HTTP and HTTPS requests"
  functional/dataplane/selftest.sh
fi
step "all tests passed"
