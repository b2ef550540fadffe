# shellcheck shell=bash
# Sourced by functional/test.sh: the functional suite as jobs of one test each, run in waves.
#
# A wave runs its jobs on a pool of processes (longest first); each job is one test of one
# functional binary (`BINARY --exact NAME`), in its own process, its output kept in its own log.
# Tests that stop, pause or restart a service (ALONE in test.sh) run in a wave of their own, one
# at a time; all the others share the stack at once: each test builds its own routers, with
# names and cluster tags no other test uses (functional/common: unique), so no test can see
# another's writes.
#
#   functional_executables BINARY...        "name path" lines of the built functional binaries
#   wave_jobs EXE_LIST                      "binary<TAB>test" lines, one per test of each binary
#   run_wave LABEL PARALLEL LOG JOBFILE CMD_PREFIX...
#                                           run each job as CMD_PREFIX... EXE --exact TEST,
#                                           PARALLEL at a time; all logs appended to LOG; each
#                                           job's wall time recorded in $KURYR_PHASES.tests;
#                                           returns 1 when a job failed (after all ran)

functional_executables() { # BINARY...
  local args=() b
  for b in "$@"; do args+=(--test "$b"); done
  cargo test --no-run --message-format=json "${args[@]}" 2>/dev/null | /usr/bin/python3 -c '
import json, sys
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and "test" in m["target"]["kind"]:
        print(m["target"]["name"], m["executable"])'
}

wave_jobs() { # EXE_LIST ("name path" lines)
  local name exe
  while read -r name exe; do
    "$exe" --list --format terse 2>/dev/null | sed -n "s/^\(.*\): test\$/$name\t\1/p"
  done <<<"$1"
}

# The slowest tests first, so that the pool does not end waiting for one long test started last.
# Substrings of "binary<TAB>test", in the order of their wall time in a parallel wave on 2 cores
# (2026-11-28, docs/development.md#the-functional-waves); the other tests follow in list order.
SLOW_FIRST=(the_public_ingress_conformance_suite interrupted_convergence_resumes apply_killed_at_random_points
  examples_route_as_kubernetes_says pool_and_member_in_error basic_fixture_routes gateway_api_conformance_ci_cases
  a_deposed_leaders_busy_retries two_routers_of_one_cluster https_with_sni_redirects a_named_host_never_reaches
  certificate_rotation_serves status_responder_answers updates_make_only_the_necessary forwarded_headers_reach
  a_moved_group_is_served router_set_three_routers quota_refuses_the_newest h2_a_barbican_store handler_pipeline_on_real
  node_port_members_route zone_shares_through
  real_api_server_gateway_conditions real_api_server_ingress_status restart_keeps_the_leader)

order_jobs() { # JOBFILE: slow ones first, the order otherwise kept
  local f=$1 s
  { for s in "${SLOW_FIRST[@]}"; do grep -F -- "$s" "$f" || true; done; cat "$f"; } | awk '!seen[$0]++'
}

run_wave() { # LABEL PARALLEL LOG JOBFILE CMD_PREFIX...
  local label=$1 parallel=$2 log=$3 jobfile=$4; shift 4
  local dir bin test exe n=0 failed=0 i rc done_pid running=()
  dir=$(mktemp -d "$LOGS/wave.XXXX")
  local total; total=$(grep -c . "$jobfile" || true)
  echo "--- $label: $total tests, $parallel at a time (logs: $dir)"
  while IFS=$'\t' read -r bin test; do
    exe=$(awk -v b="$bin" '$1 == b { print $2 }' <<<"$EXES")
    # wait for a free slot: only this wave's jobs count (Zed's phase may run in the background
    # of this shell, and must neither take a slot nor be reaped here)
    while [ "${#running[@]}" -ge "$parallel" ]; do
      wait -n -p done_pid "${running[@]}" || true
      running=("${running[@]/#$done_pid/}"); read -ra running <<<"${running[*]}"
    done
    n=$((n + 1))
    (
      start=$(date +%s)
      rc=0
      "$@" "$exe" --exact "$test" > "$dir/$n.log" 2>&1 < /dev/null || rc=$?
      end=$(date +%s)
      printf '%s\t%s\t%s\t%s\n' "$label: $bin $test" "$start" "$end" "$([ "$rc" = 0 ] || echo FAILED)" >> "$KURYR_PHASES.tests"
      echo "$rc" > "$dir/$n.rc"
      printf '  [%4ss] %-6s %s %s\n' "$((end - start))" "$([ "$rc" = 0 ] && echo ok || echo FAILED)" "$bin" "$test"
    ) &
    running+=("$!")
  done < <(order_jobs "$jobfile")
  [ "${#running[@]}" = 0 ] || wait "${running[@]}" || true
  for ((i = 1; i <= n; i++)); do
    cat "$dir/$i.log" >> "$log"
    rc=$(cat "$dir/$i.rc" 2>/dev/null || echo 1)
    if [ "$rc" != 0 ]; then
      failed=$((failed + 1))
      # also listed, with their logs' last lines, after the time table (the end of a CI log)
      printf '%s\t%s\n' "$label: $(sed -n "${i}p" <(order_jobs "$jobfile") | tr '\t' ' ')" "$dir/$i.log" >> "$KURYR_PHASES.failed"
      echo "=== FAILED ($label): $(sed -n "${i}p" <(order_jobs "$jobfile") | tr '\t' ' '); its log ($dir/$i.log), last lines:"
      tail -n 40 "$dir/$i.log" | sed 's/^/  | /'
    fi
  done
  [ "$failed" = 0 ] || { echo "--- $label: $failed of $n tests failed"; return 1; }
}
