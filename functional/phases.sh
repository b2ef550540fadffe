# shellcheck shell=bash
# Sourced by .ci/run and functional/test.sh: the wall time of each phase of a run, printed as a
# table at the end (also when the run fails), against CI's 90-min limit.
#
# One run shares one table: the first script to source this sets KURYR_RUN_T0 and
# KURYR_PHASES (a file of "name<TAB>start<TAB>end<TAB>note" lines) and exports them, so that
# functional/test.sh, called by .ci/run, adds its phases to the same table.
#   phase NAME CMD...            run CMD as the phase NAME (its exit status is returned)
#   phase_mark NAME START [NOTE] record a phase that ran elsewhere (a background job) from START to now
#   phase_table                  print the table and the total
CI_LIMIT_MIN=90
CI_WARN_MIN=60
if [ -z "${KURYR_PHASES:-}" ]; then
  KURYR_RUN_T0=$(date +%s)
  KURYR_PHASES=$(mktemp /tmp/kuryr-phases.XXXXXX)
  export KURYR_RUN_T0 KURYR_PHASES
fi

phase_mark() { # NAME START [NOTE]
  printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$(date +%s)" "${3:-}" >> "$KURYR_PHASES"
}

phase() { # NAME CMD...
  local name=$1 start rc=0; shift
  start=$(date +%s)
  echo; echo "=== [$((start - KURYR_RUN_T0))s] $name"
  "$@" || rc=$?
  phase_mark "$name" "$start" "$([ "$rc" = 0 ] || echo "FAILED (exit $rc)")"
  return "$rc"
}

fmt_secs() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

phase_table() {
  local now total name start end note
  now=$(date +%s); total=$((now - KURYR_RUN_T0))
  echo
  echo "=== time table of this run ($(date -u +%F), $(nproc) cores; begins and ends are seconds from the start)"
  printf '%-66s %6s %6s %8s  %s\n' phase begin end wall note
  while IFS=$'\t' read -r name start end note; do
    printf '%-66s %6s %6s %8s  %s\n' "$name" "$((start - KURYR_RUN_T0))" "$((end - KURYR_RUN_T0))" "$(fmt_secs $((end - start)))" "$note"
  done < <(sort -t $'\t' -k2,2n "$KURYR_PHASES")
  printf '%-66s %6s %6s %8s  %s\n' "TOTAL (limit ${CI_LIMIT_MIN} min)" 0 "$total" "$(fmt_secs "$total")" \
    "$((total * 100 / (CI_LIMIT_MIN * 60)))% of the limit"
  if [ -s "$KURYR_PHASES.tests" ]; then
    echo "the slowest functional tests (each in its own process; a wave's wall time is less than their sum):"
    while IFS=$'\t' read -r name start end note; do
      printf '  %9s  %s %s\n' "$(fmt_secs $((end - start)))" "$name" "$note"
    done < <(awk -F'\t' '{ print $3 - $2 "\t" $0 }' "$KURYR_PHASES.tests" | sort -rn | head -n 12 | cut -f2-)
  fi
  if [ -s "$KURYR_PHASES.failed" ]; then
    echo "=== $(grep -c . "$KURYR_PHASES.failed") functional tests FAILED; each one's log ends so:"
    while IFS=$'\t' read -r name log; do
      echo "--- FAILED: $name ($log)"
      # the panic's message first (a backtrace would fill the tail), then the end of the log
      grep -A4 'panicked at' "$log" | grep -Ev '^\s+[0-9]+: |^\s+at |stack backtrace' | head -n 12 | cut -c1-300 | sed 's/^/  ! /'
      grep -Ev '^\s*$|^\s+[0-9]+: |^\s+at ' "$log" | tail -n "${FAILED_TAIL_LINES:-20}" | cut -c1-300 | sed 's/^/  | /'
    done < "$KURYR_PHASES.failed"
  fi
  if [ "$total" -gt $((CI_WARN_MIN * 60)) ]; then
    echo "!!!!!!!! WARNING: this run took $(fmt_secs "$total"), more than ${CI_WARN_MIN} min of CI's ${CI_LIMIT_MIN}-min limit:"
    echo "!!!!!!!! a slower machine will not land. Find the phase that grew in the table above."
  fi
}
