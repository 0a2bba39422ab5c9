#!/usr/bin/env bash
# popper train and popper budget end to end on the tiny preset (FALSIFY-BUDGET-003
# checks the gate in-process; this checks what a user sees): a baseline is
# measured into a scratch baselines folder; a clean run exits 0 (a run a burst
# of host load stopped is retried, up to three times); a 4x delay injected into
# gemm_forward stops training with the Jidoka alert naming it and exit 1, after
# writing both traces;
# a missing budget and another machine's budget file exit 2 and say why.
#   scripts/train-cli-check.sh POPPER_BIN WORK_DIR [sanitized]
# "sanitized" (an ASan build): the clean run's timing is not judged. There the
# memory-bound tiny bricks run out of L2 (the shadow memory doubles their
# footprint), so neighbours' memory traffic moves them 2-3x between steps (the
# optimizer 0.32-0.9 ms against a 0.33 ms budget, 11 stops in 20 clean runs):
# a stop is a true alert about the host, reported, not counted as a failure.
set -uo pipefail
popper=$1
work=$2
sanitized=${3:-}
declined=
rm -rf "$work" && mkdir -p "$work"
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
common=(--preset tiny --baselines "$work/baselines" --trace-out "$work/traces" --quiet)

"$popper" budget baseline --preset tiny --steps 24 --warmup 4 --baselines "$work/baselines" --quiet >"$work/baseline.out" 2>&1 ||
  fail "budget baseline exited $?: $(tail -3 "$work/baseline.out")"
budget=$(ls "$work"/baselines/*/train-budget.json 2>/dev/null | head -1)
[ -n "$budget" ] || fail "no baselines/<fingerprint>/train-budget.json written"

# A burst of host load can stop a clean run too (CI under ASan saw the optimizer
# brick at 2.2x its budget in two runs in a row): up to three runs.
clean=1
for attempt in 1 2 3; do
  "$popper" train "${common[@]}" --steps 12 >"$work/clean.out" 2>&1
  clean=$?
  [ "$clean" -eq 0 ] && break
done
if [ "$clean" -eq 1 ] && [ "$sanitized" = sanitized ] && grep -q "^JIDOKA: " "$work/clean.out"; then
  declined="the clean run's timing not judged (sanitized build)"
  echo "$declined: stopped three times: $(grep -m1 JIDOKA "$work/clean.out")"
else
  [ "$clean" -eq 0 ] || fail "a clean run exited $clean three times: $(grep -m1 JIDOKA "$work/clean.out")"
fi
grep -q "^MFU = 6 P tokens" "$work/clean.out" || fail "the clean run prints no MFU line"
grep -q "^gemm_backward " "$work/clean.out" || fail "the clean run prints no brick table"

# On a shared host a burst of load can double another tiny brick for three steps and stop
# the run first (a true alert, about the host): such a run is retried, up to three times.
for attempt in 1 2 3; do
  "$popper" train "${common[@]}" --steps 16 --inject-delay gemm_forward=4x --inject-from 4 >"$work/jidoka.out" 2>&1
  code=$?
  grep -q "JIDOKA: brick gemm_forward" "$work/jidoka.out" && break
done
[ "$code" -eq 1 ] || fail "the injected run exited $code, expected 1"
grep -q "JIDOKA: brick gemm_forward took .* x its budget .*: training stopped at step" "$work/jidoka.out" ||
  fail "no Jidoka alert naming gemm_forward, its budget and its time: $(tail -2 "$work/jidoka.out")"
for f in "$work/traces/train-tiny-hand-t1.trace.json" "$work/traces/train-tiny-hand-t1.otlp.json"; do
  [ -s "$f" ] || fail "trace $f not written"
done

"$popper" train --preset tiny --baselines "$work/none" --quiet >"$work/nobudget.out" 2>&1
code=$?
{ [ "$code" -eq 2 ] && grep -q "no budget for this machine" "$work/nobudget.out"; } || fail "a missing budget: exit $code: $(tail -1 "$work/nobudget.out")"

if [ -n "$budget" ]; then
  mkdir -p "$work/foreign/other-machine"
  sed 's/"fingerprint": "[^"]*"/"fingerprint": "other-machine"/' "$budget" >"$work/foreign.json"
  "$popper" train --preset tiny --budget-file "$work/foreign.json" --quiet >"$work/foreign.out" 2>&1
  code=$?
  { [ "$code" -eq 2 ] && grep -q "measured on machine other-machine" "$work/foreign.out"; } ||
    fail "another machine's budget: exit $code: $(tail -1 "$work/foreign.out")"
fi

echo "train CLI: $failures failure(s)${declined:+; $declined}"
[ "$failures" -eq 0 ]
