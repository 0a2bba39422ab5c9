#!/usr/bin/env bash
# A family's bench mutants (popper/bench.hpp bench_mutant): its suite's rows
# matching FILTER must come out verified as built, and reported incorrect,
# naming the check after timing, under each bench mutant. Exit 0 when every
# mutant is caught, 1 when one survives or a clean row fails, 2 on usage.
#   bench-mutant-selftest.sh SUITE FILTER
set -uo pipefail
[ $# -eq 2 ] || { echo "usage: bench-mutant-selftest.sh SUITE FILTER" >&2; exit 2; }
suite=$1 filter=$2
run() { POPPER_BENCH_MUTANT="$1" "$suite" --benchmark_filter="$filter" --benchmark_min_time=0.01 2>&1; }
clean=$(run "")
hand=$(grep -c '/hand/' <<<"$clean")
if [ "$hand" -eq 0 ] || grep -q 'ERROR OCCURRED' <<<"$clean"; then
  echo "bench-mutant-selftest: the clean run of $filter has no hand row or an error:"; echo "$clean"; exit 1
fi
status=0
for mutant in cached-result; do
  out=$(run "$mutant")
  caught=$(grep '/hand/' <<<"$out" | grep -c "ERROR OCCURRED: 'incorrect: after timing")
  if [ "$caught" -eq "$hand" ]; then
    echo "bench mutant $mutant: caught on $caught hand row(s) by verification after timing"
  else
    echo "bench mutant $mutant: SURVIVED on $((hand - caught)) of $hand hand row(s):"; echo "$out"; status=1
  fi
done
exit "$status"
