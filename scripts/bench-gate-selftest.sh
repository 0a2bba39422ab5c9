#!/usr/bin/env bash
# Self-test of the CI bench gate (popper bench gate, callgrind instruction
# counts), for every bench family, needing no committed baseline:
#   1. record a baseline of this build in a temporary folder;
#   2. RUNS clean runs against it must give zero REGRESSION;
#   3. with POPPER_BENCH_INJECT_SLOWDOWN=0.25 every hand row must be REGRESSION
#      (and the gate exit 1);
#   4. with no baseline for the gate key the gate exits 2, and a baseline
#      recorded under another gate key is refused (exit 2), for the first family.
# usage: scripts/bench-gate-selftest.sh [BUILD_DIR] [RUNS] [FAMILY...]
#   QUICK=1 restricts each family to one hand row (its first gate shape and
#   precision), for ctest. KEY_RULES=0 leaves out step 4 (ctest runs it for
#   one family: the rules are the gate's, not a family's).
set -u
cd "$(dirname "$0")/.."
BUILD="${1:-build}"
RUNS="${2:-10}"
shift $(( $# > 2 ? 2 : $# ))
POPPER="${POPPER:-$BUILD/bin/popper}"
FAMILIES=("$@")
[ ${#FAMILIES[@]} -eq 0 ] && FAMILIES=($(ls bench/*/family.yaml | xargs -n1 dirname | xargs -n1 basename))
OUT="$(mktemp -d /tmp/popper-gate-selftest.XXXXXX)"
trap 'rm -rf "$OUT"' EXIT
start=$(date +%s)
failures=0

first_of() {  # first list item of a family.yaml gate key
  sed -n "/^gate:/,\$p" "bench/$1/family.yaml" | grep -m1 "^  $2:" | sed 's/.*\[\([^],]*\).*/\1/' | tr -d ' '
}

for fam in "${FAMILIES[@]}"; do
  FILTER=()
  INJECTED=(--tiers hand)
  if [ "${QUICK:-0}" = 1 ]; then
    FILTER=(--shapes "$(first_of "$fam" shapes)" --tiers hand --precision "$(first_of "$fam" precisions)")
    INJECTED=("${FILTER[@]}")
  fi
  echo "== $fam: recording a baseline of this build"
  if ! "$POPPER" bench gate --family "$fam" --build-dir "$BUILD" --out "$OUT/$fam-base.csv" --no-check "${FILTER[@]}" \
       > "$OUT/$fam-base.txt" 2> "$OUT/$fam-base.err"; then
    cat "$OUT/$fam-base.err" >&2; echo "gate selftest: $fam: the gate could not run" >&2; exit 2
  fi
  false_alarms=0
  for i in $(seq 1 "$RUNS"); do
    "$POPPER" bench gate --family "$fam" --build-dir "$BUILD" --baseline "$OUT/$fam-base.csv" \
        --out "$OUT/$fam-clean-$i.csv" "${FILTER[@]}" > "$OUT/$fam-clean-$i.txt" 2> "$OUT/$fam-clean-$i.err"
    rc=$?
    if [ $rc -eq 2 ]; then cat "$OUT/$fam-clean-$i.err" >&2; echo "gate selftest: $fam: gate error" >&2; exit 2; fi
    if [ $rc -ne 0 ] || grep -q '^REGRESSION' "$OUT/$fam-clean-$i.txt"; then
      false_alarms=$((false_alarms + 1)); cat "$OUT/$fam-clean-$i.txt"
    fi
    echo "$fam clean run $i/$RUNS: exit $rc, $(grep '^summary:' "$OUT/$fam-clean-$i.txt")"
  done
  echo "$fam: false alarms: $false_alarms of $RUNS clean runs"
  [ "$false_alarms" -eq 0 ] || failures=$((failures + 1))

  POPPER_BENCH_INJECT_SLOWDOWN=0.25 "$POPPER" bench gate --family "$fam" --build-dir "$BUILD" \
      --baseline "$OUT/$fam-base.csv" --out "$OUT/$fam-injected.csv" "${INJECTED[@]}" \
      > "$OUT/$fam-injected.txt" 2> "$OUT/$fam-injected.err"
  rc=$?
  hand_rows=$(grep -cE '^[A-Z]+ +[^ ]+/hand/' "$OUT/$fam-injected.txt")
  flagged=$(grep -cE '^REGRESSION +[^ ]+/hand/' "$OUT/$fam-injected.txt")
  grep -E '^(REGRESSION|WARNING|UNCHANGED|IMPROVEMENT|MISSING) ' "$OUT/$fam-injected.txt"
  if [ $rc -ne 1 ] || [ "$flagged" -ne "$hand_rows" ] || [ "$hand_rows" -eq 0 ]; then
    echo "gate selftest: FAIL — $fam: injected 25% slowdown flagged on $flagged of $hand_rows hand rows (exit $rc)" >&2
    failures=$((failures + 1))
  else
    echo "$fam: injected 25% slowdown: REGRESSION on $flagged of $hand_rows hand rows (exit 1)"
  fi
done
# A gate with nothing to compare with is no pass (these two rules have no
# other test): in a source folder holding no baseline for
# this gate key, the gate exits 2; a baseline there whose gate_key names
# another machine (copied, not recorded) is refused, exit 2, never compared.
if [ "${KEY_RULES:-1}" = 1 ]; then
  fam="${FAMILIES[0]}"
  ONE=(--shapes "$(first_of "$fam" shapes)" --tiers hand --precision "$(first_of "$fam" precisions)")
  SRC="$OUT/src"
  mkdir -p "$SRC" && ln -s "$PWD/bench" "$SRC/bench"
  "$POPPER" bench gate --family "$fam" --source-dir "$SRC" --build-dir "$BUILD" --out "$OUT/nobase.csv" "${ONE[@]}" \
      > "$OUT/nobase.txt" 2>&1
  rc=$?
  key=$(grep -o 'no gate baseline for key [^ ]*' "$OUT/nobase.txt" | awk '{print $NF}')
  if [ $rc -ne 2 ] || [ -z "$key" ]; then
    cat "$OUT/nobase.txt"; echo "gate selftest: FAIL — $fam without a baseline: exit $rc, not 2 naming the key" >&2
    failures=$((failures + 1))
  else
    echo "$fam without a baseline: exit 2 (key $key)"
    mkdir -p "$SRC/baselines/$key"
    sed 's/^# gate_key: .*/# gate_key: gate-of-another-machine/' "$OUT/nobase.csv" > "$SRC/baselines/$key/$fam-gate.csv"
    cp "$OUT/nobase.csv.functions.json" "$SRC/baselines/$key/$fam-gate.csv.functions.json" 2>/dev/null
    "$POPPER" bench gate --family "$fam" --source-dir "$SRC" --build-dir "$BUILD" --out "$OUT/copied.csv" "${ONE[@]}" \
        > "$OUT/copied.txt" 2>&1
    rc=$?
    if [ $rc -ne 2 ] || ! grep -q 'it was copied, not recorded' "$OUT/copied.txt"; then
      cat "$OUT/copied.txt"; echo "gate selftest: FAIL — $fam with another key's baseline: exit $rc, not refused" >&2
      failures=$((failures + 1))
    else
      echo "$fam with another gate key's baseline: refused (exit 2)"
    fi
  fi
fi

echo "gate selftest: ${#FAMILIES[@]} families, $RUNS clean runs each, $(( $(date +%s) - start )) s"
[ "$failures" -eq 0 ] || { echo "gate selftest: FAIL ($failures)" >&2; exit 1; }
echo "gate selftest: PASS"
