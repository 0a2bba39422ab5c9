#!/usr/bin/env bash
# A family's bench mutants (popper/bench.hpp bench_mutant): its suite's rows
# matching FILTER must come out verified as built, and reported incorrect,
# naming the check after timing, under each bench mutant that breaks a
# result. Given COLD_FILTER (cold rows), those must come out verified as
# built and invalid under warm-under-cold. Exit 0 when every mutant is
# caught, 1 when one survives or a clean row fails, 2 on usage.
#   bench-mutant-selftest.sh SUITE FILTER [COLD_FILTER]
set -uo pipefail
[ $# -eq 2 ] || [ $# -eq 3 ] || { echo "usage: bench-mutant-selftest.sh SUITE FILTER [COLD_FILTER]" >&2; exit 2; }
suite=$1
run() { POPPER_BENCH_MUTANT="$1" "$suite" --benchmark_filter="$2" --benchmark_min_time=0.01 2>&1; }
status=0
# expect FILTER MUTANTS MESSAGE: every hand row of FILTER is clean as built and
# reports MESSAGE under each of MUTANTS.
expect() {
  local filter=$1 mutants=$2 message=$3 clean hand out caught
  clean=$(run "" "$filter")
  hand=$(grep -c '/hand/' <<<"$clean")
  if [ "$hand" -eq 0 ] || grep -q 'ERROR OCCURRED' <<<"$clean"; then
    echo "bench-mutant-selftest: the clean run of $filter has no hand row or an error:"; echo "$clean"; status=1
    return
  fi
  for mutant in $mutants; do
    out=$(run "$mutant" "$filter")
    caught=$(grep '/hand/' <<<"$out" | grep -c "ERROR OCCURRED: '$message")
    if [ "$caught" -eq "$hand" ]; then
      echo "bench mutant $mutant: caught on $caught hand row(s) ($message)"
    else
      echo "bench mutant $mutant: SURVIVED on $((hand - caught)) of $hand hand row(s):"; echo "$out"; status=1
    fi
  done
}
expect "$2" "cached-result skipped-work" "incorrect: after timing"
[ $# -eq 3 ] && expect "$3" "warm-under-cold" "invalid: cold, yet the caches were not evicted"
exit "$status"
