#!/bin/bash
# Summarises one phase of functional/test.sh from the output of its `cargo test` run: how many
# tests ran, how many were skipped, failed or ignored. libtest counts a functional test that
# returned early (no KURYR_FUNCTIONAL=1) as passed; such a test writes a line starting with
# "FUNCTIONAL TEST SKIPPED: NAME" (functional/common/mod.rs), counted here as skipped, not passed.
#
# usage: functional/summary.sh PHASE LOG [--require-run]
#   --require-run   exit 1 when no test ran (every one skipped, filtered out, or none built)
set -euo pipefail
phase=$1 log=$2 require=${3:-}
passed=0 failed=0 ignored=0
while read -r p f i; do
  passed=$((passed + p)) failed=$((failed + f)) ignored=$((ignored + i))
done < <(sed -n 's/^test result: [A-Za-z]*\. \([0-9]*\) passed; \([0-9]*\) failed; \([0-9]*\) ignored;.*/\1 \2 \3/p' "$log")
# Anywhere in a line: with one test thread, libtest's "test NAME ... " precedes it on stdout.
markers=$(grep -o 'FUNCTIONAL TEST SKIPPED: [^ ]*' "$log" || true)
skipped=$(grep -c . <<<"$markers" || true)
ran=$((passed + failed - skipped))
echo "$phase: $ran ran ($((passed - skipped)) passed, $failed failed), $skipped skipped, $ignored ignored"
if [ "$skipped" -gt 0 ]; then sed 's/^FUNCTIONAL TEST SKIPPED: /  skipped: /' <<<"$markers" | sort -u | awk 'NR <= 20'; fi
if [ "$require" = --require-run ] && [ "$ran" -le 0 ]; then
  echo "$phase: no test ran: the functional phase proves nothing (is KURYR_FUNCTIONAL=1 set, the stack up, the filter right?)" >&2
  exit 1
fi
