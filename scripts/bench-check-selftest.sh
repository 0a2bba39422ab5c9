#!/usr/bin/env bash
# Self-test of the timed check (popper bench check), the twin of the gate
# self-test, for every family at its gate shapes:
#   1. a baseline run, then RUNS clean runs each checked against it: no pair
#      may exit 1, and at most 5% of the pairs' rows may be left NOISY (the
#      rows flagged REGRESSION or WARNING are printed too);
#   2. a run with POPPER_BENCH_INJECT_SLOWDOWN=0.25: at least 95% of the hand
#      rows must be flagged REGRESSION, and no ceiling or wrapped row;
#   3. the same with 0.10: the detection rate at the default budget;
#   4. --reps 3 with 0.50 injected: refused with the minimum, or REGRESSION.
# Each check is the one `make bench-check` runs: with --rerun, so the suite
# rows are measured again alternately with the baseline's side (here the same
# build, as every run measures the commit the tree is at: commit first) and
# judged on those trials, while the budget lasts. CHECK_ARGS adds options
# (e.g. --budget 300, --no-interleave). INJECT lists the slowdowns of step 2
# and 3 (default "0.25 0.10"), and REPS3=0 leaves step 4 out: INJECT=0.25
# REPS3=0 with RUNS=1 is the short form, one clean pair and one injected run.
# A benchmark, not a unit test: it takes a long time and wants a quiet machine.
# usage: scripts/bench-check-selftest.sh [BUILD_DIR] [RUNS] [FAMILY...]
set -u
cd "$(dirname "$0")/.."
BUILD="${1:-build}"
RUNS="${2:-10}"
shift $(( $# > 2 ? 2 : $# ))
POPPER="${POPPER:-$BUILD/bin/popper}"
FAMILIES=("$@")
[ ${#FAMILIES[@]} -eq 0 ] && FAMILIES=($(ls bench/*/family.yaml | xargs -n1 dirname | xargs -n1 basename))
OUT="${OUT:-$(mktemp -d /tmp/popper-check-selftest.XXXXXX)}"
mkdir -p "$OUT"
start=$(date +%s)
failures=0
compare() {  # compare FAMILY OUTDIR [extra args...]: the run's wall time goes to stdout
  local fam=$1 dir=$2 t0=$(date +%s) rc; shift 2
  "$POPPER" bench compare --family "$fam" --shapes gate --build-dir "$BUILD" --out "$dir" "$@" > "$dir.log" 2>&1
  rc=$?
  echo "$fam: $(basename "$dir") run took $(( $(date +%s) - t0 )) s"
  return $rc
}
count() { grep -cE "$1" "$2"; }
check() {  # check BASE_CSV CURRENT_CSV OUT_TXT: the exit code of the check
  "$POPPER" bench check --baseline "$1" --current "$2" --rerun --rerun-out "${3%.txt}-rerun" ${CHECK_ARGS:-} \
    > "$3" 2> "${3%.txt}.check.log"
}

for fam in "${FAMILIES[@]}"; do
  echo "== $fam: baseline run"
  compare "$fam" "$OUT/$fam-base" || { tail "$OUT/$fam-base.log"; echo "$fam: baseline run failed" >&2; exit 2; }
  base="$OUT/$fam-base/bench-$fam.csv"
  # What this machine lets the check see today (a noisy host widens every interval).
  echo "$fam baseline: noise $(grep -m1 '^# noise_between_trials:' "$base" | cut -d: -f2-); detectable slowdown$(grep -m1 '^# detectable_slowdown:' "$base" | cut -d: -f2-)"
  pair_alarms=0; flagged=0; rows=0; moved=0; noisy=0
  for i in $(seq 1 "$RUNS"); do
    compare "$fam" "$OUT/$fam-clean-$i" || { echo "$fam: clean run $i failed" >&2; exit 2; }
    check "$base" "$OUT/$fam-clean-$i/bench-$fam.csv" "$OUT/$fam-clean-$i.txt"
    rc=$?
    [ $rc -ne 0 ] && pair_alarms=$((pair_alarms + 1))
    n=$(count '^(REGRESSION|WARNING|UNCHANGED|IMPROVEMENT|NOISY|MISSING|MOVED) ' "$OUT/$fam-clean-$i.txt")
    f=$(count '^(REGRESSION|WARNING) ' "$OUT/$fam-clean-$i.txt")
    m=$(count '^MOVED ' "$OUT/$fam-clean-$i.txt")
    z=$(count '^NOISY ' "$OUT/$fam-clean-$i.txt")
    rows=$((rows + n)); flagged=$((flagged + f)); moved=$((moved + m)); noisy=$((noisy + z))
    echo "$fam clean pair $i/$RUNS: exit $rc, $(grep '^summary:' "$OUT/$fam-clean-$i.txt")"
  done
  echo "$fam: clean pairs exiting 1: $pair_alarms of $RUNS; rows flagged: $flagged of $rows; rows NOISY: $noisy of $rows" \
    "(by tier: $(cat "$OUT"/$fam-clean-*.txt | grep -E '^NOISY ' | awk '{split($2, k, "/"); print k[2]}' | sort | uniq -c | awk '{printf "%s %s ", $2, $1}'));" \
    "vendor rows MOVED (the machine): $moved"
  [ "$pair_alarms" -eq 0 ] || failures=$((failures + 1))
  [ $((noisy * 100)) -le $((rows * 5)) ] || { echo "$fam: more than 5% of the clean pairs' rows NOISY" >&2; failures=$((failures + 1)); }
  for f in ${INJECT:-0.25 0.10}; do
    POPPER_BENCH_INJECT_SLOWDOWN=$f compare "$fam" "$OUT/$fam-inj-$f" || { echo "$fam: injected run failed" >&2; exit 2; }
    check "$base" "$OUT/$fam-inj-$f/bench-$fam.csv" "$OUT/$fam-inj-$f.txt"
    hand=$(count '^[A-Z]+ +[^ ]+/hand/' "$OUT/$fam-inj-$f.txt")
    hit=$(count '^REGRESSION +[^ ]+/hand/' "$OUT/$fam-inj-$f.txt")
    other=$(count '^(REGRESSION|WARNING) +[^ ]+/(ceiling|wrapped)/' "$OUT/$fam-inj-$f.txt")
    ratios=$(grep -E '^[A-Z]+ +[^ ]+/hand/' "$OUT/$fam-inj-$f.txt" | awk '{print $3}' | tr '\n' ' ')
    echo "$fam injected $f: REGRESSION on $hit of $hand hand rows (ratios: $ratios); ceiling/wrapped rows flagged: $other"
    if [ "$f" = 0.25 ] && { [ "$hand" -eq 0 ] || [ $((hit * 100)) -lt $((hand * 95)) ] || [ "$other" -ne 0 ]; }; then
      failures=$((failures + 1))
    fi
  done
  if [ "${REPS3:-1}" = 0 ]; then
    :
  elif POPPER_BENCH_INJECT_SLOWDOWN=0.5 compare "$fam" "$OUT/$fam-reps3" --reps 3; then
    check "$base" "$OUT/$fam-reps3/bench-$fam.csv" "$OUT/$fam-reps3.txt"
    rc=$?
    hand=$(count '^[A-Z]+ +[^ ]+/hand/' "$OUT/$fam-reps3.txt")
    hit=$(count '^REGRESSION +[^ ]+/hand/' "$OUT/$fam-reps3.txt")
    echo "$fam --reps 3, 50% injected: exit $rc, REGRESSION on $hit of $hand hand rows"
    [ $rc -eq 1 ] && [ "$hit" -gt 0 ] || failures=$((failures + 1))
  else
    echo "$fam --reps 3: refused: $(grep -m1 'minimum' "$OUT/$fam-reps3.log")"
  fi
done
echo "check selftest: ${#FAMILIES[@]} families, $RUNS clean pairs each, $(( $(date +%s) - start )) s; results in $OUT"
[ "$failures" -eq 0 ] || { echo "check selftest: FAIL ($failures)" >&2; exit 1; }
echo "check selftest: PASS"
