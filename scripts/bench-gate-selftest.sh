#!/usr/bin/env bash
# Self-test of the CI bench gate (popper bench gate, callgrind instruction counts):
#   1. RUNS clean runs against the committed baseline must give zero REGRESSION;
#   2. with POPPER_BENCH_INJECT_SLOWDOWN=0.25 the hand tier must be flagged
#      REGRESSION (exit 1).
# usage: scripts/bench-gate-selftest.sh [BUILD_DIR] [RUNS]
#   QUICK=1 restricts both parts to one row (hand, small_128, f32) for ctest.
set -u
cd "$(dirname "$0")/.."
BUILD="${1:-build}"
RUNS="${2:-10}"
POPPER="${POPPER:-$BUILD/bin/popper}"
OUT="$(mktemp -d /tmp/popper-gate-selftest.XXXXXX)"
trap 'rm -rf "$OUT"' EXIT
FILTER=()
INJECTED_FILTER=(--tiers hand)
if [ "${QUICK:-0}" = 1 ]; then
  FILTER=(--shapes small_128 --tiers hand --precision f32)
  INJECTED_FILTER=(--shapes small_128 --tiers hand --precision f32)
fi

false_alarms=0
for i in $(seq 1 "$RUNS"); do
  "$POPPER" bench gate --family gemm --build-dir "$BUILD" --out "$OUT/clean-$i.csv" "${FILTER[@]}" \
      > "$OUT/clean-$i.txt" 2> "$OUT/clean-$i.err"
  rc=$?
  if [ $rc -eq 2 ]; then cat "$OUT/clean-$i.err" >&2; echo "gate selftest: gate could not run" >&2; exit 2; fi
  if [ $rc -ne 0 ] || grep -q '^REGRESSION' "$OUT/clean-$i.txt"; then
    false_alarms=$((false_alarms + 1)); cat "$OUT/clean-$i.txt"
  fi
  echo "clean run $i/$RUNS: exit $rc, $(grep '^summary:' "$OUT/clean-$i.txt")"
done
echo "false alarms: $false_alarms of $RUNS clean runs"

POPPER_BENCH_INJECT_SLOWDOWN=0.25 "$POPPER" bench gate --family gemm --build-dir "$BUILD" \
    --out "$OUT/injected.csv" "${INJECTED_FILTER[@]}" > "$OUT/injected.txt" 2> "$OUT/injected.err"
rc=$?
cat "$OUT/injected.txt"
if [ $rc -ne 1 ] || ! grep -q '^REGRESSION' "$OUT/injected.txt"; then
  echo "gate selftest: FAIL — injected 25% slowdown not flagged (exit $rc)" >&2; exit 1
fi
echo "injected 25% slowdown: flagged REGRESSION (exit 1)"
[ "$false_alarms" -eq 0 ] || { echo "gate selftest: FAIL — $false_alarms false alarm(s)" >&2; exit 1; }
echo "gate selftest: PASS"
