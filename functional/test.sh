#!/bin/bash
# Runs ALL tests of kuryr-l7-router: unit tests, then the functional tests against real local
# OpenStacks (Keystone, Neutron, Octavia, Barbican) that this script installs, starts and stops
# (functional/openstack.sh; as root on a bare Debian 12 machine), and the data-plane self-test.
#
#   1. the WHOLE functional suite on OpenStack 2025.1 (Octavia 16; Debian 13's packages in a
#      chroot and a network namespace of its own), the primary target;
#   2. the part that differs by release on Zed (Octavia 11.0.0, Debian 12's own packages), the
#      oldest supported release: the tests named by ZED_FILTERS below.
#
# usage: functional/test.sh   (as root; cold machine: ~5.5 min install of 2025.1, ~3 min of Zed)
#   RELEASES="2025.1 zed"  which phases to run (e.g. RELEASES=zed for the Zed part only)
#   KEEP_STACK=1           leave the last stack running afterwards (for debugging)
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
T0=$(date +%s)
step() { echo; echo "=== [$(( $(date +%s) - T0 ))s] $*"; }

# The split (substring filters of test names, as `cargo test` takes them; extend these lists):
# - ZED_FILTERS: what differs by release, so it runs on Zed too: the fully-populated create
#   (Debian's 11.0.0 worker leaves the children PENDING_CREATE, with and without
#   `openstack.sh octavia-fixes`), the preflight (API 2.26: no HSTS), Barbican 15's legacy
#   policies and secret handling (the TLS listener, the `creator` role).
ZED_FILTERS=(fully_populated_create preflight_on_the_local_stack barbican https_listener)
# - ZED_ONLY: tests of Zed's own behaviour, skipped on 2025.1 (Octavia 16 has 11.0.1's fixes).
ZED_ONLY=(fully_populated_create_on_octavia_11_0_0)

# every [[test]] target named functional_* in Cargo.toml (their sources live under functional/)
FTESTS=$(sed -n 's/^name = "\(functional_[a-z0-9_]*\)"$/--test \1/p' Cargo.toml)
STACK=""
stop_stack() {
  [ -n "$STACK" ] || return 0
  step "stopping the local OpenStack $STACK"
  OPENSTACK_RELEASE=$STACK functional/openstack.sh stop || true
  STACK=""
}
[ "${KEEP_STACK:-0}" = 1 ] || trap stop_stack EXIT

# Each phase's `cargo test` output is kept to count what ran and what was skipped (a functional
# test without KURYR_FUNCTIONAL=1 returns early, and libtest would count it as passed; see
# functional/summary.sh). A functional phase that ran no test fails the run.
LOGS=$(mktemp -d)
SUMMARY=()
summarise() { # PHASE LOG [--require-run]
  local out
  out=$(functional/summary.sh "$@") || { echo "$out"; exit 1; }
  echo "$out"
  SUMMARY+=("$(head -n 1 <<<"$out")")
}

step "unit and integration tests (no network)"
cargo test --all-targets --no-fail-fast 2>&1 | tee "$LOGS/unit.log"
summarise "unit phase (functional tests skipped here run below)" "$LOGS/unit.log"
# build the functional tests now: `openstack.sh run` runs them in the 2025.1 stack's network
# namespace, where cargo could not reach a registry
# shellcheck disable=SC2086  # $FTESTS: --test NAME pairs
cargo test --no-run $FTESTS

RELEASES=${RELEASES:-2025.1 zed}
for release in $RELEASES; do
  step "starting the local OpenStack $release (OPENSTACK_RELEASE=$release functional/openstack.sh start)"
  OPENSTACK_RELEASE=$release functional/openstack.sh start
  STACK=$release
  run=(env OPENSTACK_RELEASE="$release" functional/openstack.sh run env KURYR_FUNCTIONAL=1)
  if [ "$release" = zed ]; then
    step "functional tests on Zed: the part that differs by release (${ZED_FILTERS[*]})"
    # shellcheck disable=SC2086
    "${run[@]}" cargo test --no-fail-fast $FTESTS -- "${ZED_FILTERS[@]}" 2>&1 | tee "$LOGS/$release.log"
    summarise "functional phase on $release" "$LOGS/$release.log" --require-run
  else
    step "functional tests on $release: the whole suite (skipped: ${ZED_ONLY[*]})"
    skips=(); for t in "${ZED_ONLY[@]}"; do skips+=(--skip "$t"); done
    # shellcheck disable=SC2086
    "${run[@]}" cargo test --no-fail-fast $FTESTS -- "${skips[@]}" 2>&1 | tee "$LOGS/$release.log"
    summarise "functional phase on $release" "$LOGS/$release.log" --require-run
    if [ -x functional/dataplane/selftest.sh ]; then
      step "data-plane self-test on $release: Octavia-rendered haproxy routing real HTTP and HTTPS requests"
      "${run[@]}" functional/dataplane/selftest.sh
    fi
  fi
  # one stack at a time (2 cores); KEEP_STACK=1 keeps the last one
  if [ "${KEEP_STACK:-0}" != 1 ] || [ "$release" != "${RELEASES##* }" ]; then stop_stack; fi
done
step "all tests passed"
printf '%s\n' "${SUMMARY[@]}"
