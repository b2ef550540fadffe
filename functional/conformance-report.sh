#!/bin/bash
# The Gateway API ConformanceReport (gateway.networking.k8s.io/v1, the upstream v1.6.1 schema),
# from our conformance tests' outcomes, in one command:
#   GATEWAY_API_CONFORMANCE=<dir> functional/conformance-report.sh [OUT]
# <dir> holds conformance/ and pkg/features/ of Gateway API v1.6.1, e.g.
#   git -C <gateway-api clone> archive v1.6.1 conformance pkg/features | tar -x -C <dir>
# It runs, each recording its outcome per upstream test (KURYR_CONFORMANCE_RESULTS):
#   1. gateway_conformance::conformance_cases: our fixtures (tests/fixtures/gateway/cases/);
#   2. gateway_conformance::upstream_manifests_give_the_same_statuses_and_answers: the upstream
#      manifests of each test (from <dir>);
#   3. with KURYR_CONFORMANCE_DATAPLANE=1 (the local OpenStack 2025.1 stack running): the data-plane
#      tests, every case with a request table sent through Octavia-rendered haproxy (CI cases and
#      the opt-in others; about 10 minutes);
# then functional/conformance_report.py writes OUT (default
# docs/conformance/standard-v<version>-default-report.yaml): a test passes when every source that
# ran it passed. KURYR_REPORT_* (see the script) override the implementation's fields.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${GATEWAY_API_CONFORMANCE:?set it to a directory holding conformance/ and pkg/features/ of Gateway API v1.6.1}"
for d in conformance/tests pkg/features; do
  [ -d "$GATEWAY_API_CONFORMANCE/$d" ] || { echo "error: $GATEWAY_API_CONFORMANCE/$d is missing" >&2; exit 2; }
done
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
out=${1:-docs/conformance/standard-v$version-default-report.yaml}
results=$(mktemp /tmp/kuryr-conformance-results.XXXXXX)
trap 'rm -f "$results"' EXIT
export KURYR_CONFORMANCE_RESULTS=$results GATEWAY_API_CONFORMANCE

echo "== conformance tests: fixtures and upstream manifests" >&2
cargo test --test it gateway_conformance:: -- --test-threads=1 >&2

if [ "${KURYR_CONFORMANCE_DATAPLANE:-0}" = 1 ]; then
  echo "== data plane through Octavia-rendered haproxy (local OpenStack 2025.1)" >&2
  exe=$(cargo test --no-run --message-format=json --test functional_dataplane 2>/dev/null | /usr/bin/python3 -c '
import json, sys
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and "test" in m["target"]["kind"]:
        print(m["executable"])' | tail -n 1)
  [ -x "$exe" ] || { echo "error: the functional_dataplane test binary was not built" >&2; exit 1; }
  for t in gateway::gateway_api_conformance_ci_cases_through_octavia_rendered_haproxy \
           gateway::gateway_api_conformance_other_cases_through_octavia_rendered_haproxy; do
    OPENSTACK_RELEASE=2025.1 functional/openstack.sh run env KURYR_FUNCTIONAL=1 KURYR_GATEWAY_DATAPLANE=1 \
      KURYR_CONFORMANCE_RESULTS="$results" "$exe" --exact "$t" --nocapture >&2 || true  # its failures are in the results
  done
  # a data-plane test that did not run must not leave the report as if it had
  grep -q dataplane "$results" || { echo "error: the data-plane tests recorded no outcome (did they run?)" >&2; exit 1; }
fi

mkdir -p "$(dirname "$out")"
KURYR_REPORT_VERSION=${KURYR_REPORT_VERSION:-v$version+$commit} \
  /usr/bin/python3 functional/conformance_report.py "$results" "$GATEWAY_API_CONFORMANCE" "$out"
