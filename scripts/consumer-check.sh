#!/usr/bin/env bash
# popper as a package, end to end, from this checkout:
#   1. configure and build popper harness-only (POPPER_HARNESS_ONLY: only the
#      harness's dependencies), install it to a temporary prefix;
#   2. build examples/consumer against the installed package (find_package(popper));
#   3. ctest lists one test per contract id and runs them;
#   4. a deliberately broken kernel (POPPER_MUTANT=dot-drop-last) fails ctest,
#      and the failing ids show by name;
#   5. the audit target runs every mutant, writes JUnit XML, and the XML
#      validates against docs/junit.xsd;
#   6. the bench (popper_add_bench_family): bench compare with the contract's
#      claim judged, the audit with that claim, a baseline recorded and a timed
#      check against it (re-measured interleaved with the baseline's commit,
#      built against the installed popper), the same check with an injected
#      slowdown that must fail, the bench mutants (each caught, and failing
#      the compare), and the
#      instruction gate against a gate baseline recorded in the consumer's tree.
# The consumer is copied into a git repository of its own first, as a
# project using popper has one (the reference builds check out its commits).
# usage: scripts/consumer-check.sh [WORK_DIR]   (default: a temporary directory, removed after)
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
if [ $# -ge 1 ]; then work=$1; mkdir -p "$work"; else
  work=$(mktemp -d /tmp/popper-consumer.XXXXXX); trap 'rm -rf "$work"' EXIT
fi
jobs=${JOBS:-2}
step() { echo "== consumer-check: $*"; }

# The harness-only build sits at the depth of build/ in the source tree: ccache
# (its base dir is the source tree) then sees the same relative paths and flags
# as the main build's harness objects and reuses them (a cold build took ~7 min
# on 2 cores).
harness_build="$src/build-consumer"
rm -rf "$harness_build"
step "popper, harness only, built in $harness_build and installed to $work/prefix"
cmake -S "$src" -B "$harness_build" -DPOPPER_HARNESS_ONLY=ON -DPOPPER_WERROR=ON -DCMAKE_BUILD_TYPE=Release > "$work/popper-configure.log"
cmake --build "$harness_build" -j"$jobs" > "$work/popper-build.log" || { tail -40 "$work/popper-build.log"; exit 1; }
cmake --install "$harness_build" --prefix "$work/prefix" > "$work/popper-install.log"
test -x "$work/prefix/bin/popper" && test -f "$work/prefix/lib/cmake/popper/popperConfig.cmake"

step "examples/consumer, as a git repository of its own, against the installed package"
proj="$work/dotkit"
cp -r "$src/examples/consumer" "$proj"
git -C "$proj" init -q && git -C "$proj" add -A &&
  git -C "$proj" -c user.name=consumer-check -c user.email=ci@localhost commit -qm "dotkit" > /dev/null
cmake -S "$proj" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$work/prefix" > "$work/consumer-configure.log"
cmake --build "$work/consumer" -j"$jobs" > "$work/consumer-build.log" || { tail -40 "$work/consumer-build.log"; exit 1; }

step "ctest -N: one test per contract id"
ctest --test-dir "$work/consumer" -N | tee "$work/ctest-N.txt"
for id in FALSIFY_DOT_001 FALSIFY_DOT_002 KANI_DOT_001; do
  grep -q "dot_v1\.$id\$" "$work/ctest-N.txt" || { echo "consumer-check: ctest does not list $id" >&2; exit 1; }
done

for label in popper contract:dot-v1 family:dot; do
  n=$(ctest --test-dir "$work/consumer" -N -L "^$label\$" | grep -c "Test *#" || true)
  [ "$n" -eq 3 ] || { echo "consumer-check: label $label has $n tests, expected 3" >&2; exit 1; }
done

step "a deliberately broken kernel fails, by id"
if POPPER_MUTANT=dot-drop-last ctest --test-dir "$work/consumer" > "$work/ctest-broken.txt" 2>&1; then
  echo "consumer-check: ctest passed with the kernel one term short" >&2; exit 1
fi
grep -E "Failed|\*\*\*" "$work/ctest-broken.txt" || true
for id in FALSIFY_DOT_001 KANI_DOT_001; do
  grep -qE "dot_v1\.$id .*(Failed|\*\*\*Failed)" "$work/ctest-broken.txt" ||
    { echo "consumer-check: the failing id $id is not named" >&2; exit 1; }
done

step "ctest and the audit (every mutant, JUnit XML)"
rm -rf "$work/consumer/popper_results"
ctest --test-dir "$work/consumer" --output-on-failure
cmake --build "$work/consumer" --target dot_audit
xmllint --noout --schema "$src/docs/junit.xsd" "$work/consumer/dot-junit.xml"
grep -c "<testcase" "$work/consumer/dot-junit.xml" | sed 's/^/consumer-check: JUnit testcases: /'

# The bench runs in the consumer's build directory, where popper finds the
# family popper_add_bench_family() wrote (popper-bench/dot/family.yaml).
popper="$work/prefix/bin/popper"
short=(--threads 1 --trials 2 --min-time 0.05)
# The timed checks run 4 trials a side, and both re-measure their noisy rows
# interleaved with the baseline's build (--rerun): against a baseline taken a
# minute earlier alone, a noisy machine's drift hid the 50% slowdown.
timed=(--threads 1 --trials 4 --min-time 0.05)
cd "$work/consumer"
step "bench compare --family dot, every shape, the claim judged"
"$popper" bench compare --family dot --shapes all "${short[@]}" --out reports > "$work/compare.log" 2>&1 ||
  { tail -30 "$work/compare.log"; exit 1; }
grep -E '^\| n_' "$work/compare.log" | head -3
grep -q '"id": *"BENCH-DOT-001"' reports/bench-claims.json &&
  grep -A3 '"id": *"BENCH-DOT-001"' reports/bench-claims.json | grep -q '"verdict": *"met"' ||
  { echo "consumer-check: BENCH-DOT-001 is not met" >&2; grep BENCH-DOT "$work/compare.log" >&2; exit 1; }
grep BENCH-DOT "$work/compare.log"

step "the dot family's bench mutants, each caught; the audit judges the claim and reports their power"
"$popper" bench mutants --family dot -o bench-mutants-dot.json > "$work/bench-mutants.log" 2>&1 ||
  { cat "$work/bench-mutants.log"; exit 1; }
grep '^bench mutant' "$work/bench-mutants.log"
"$popper" audit --contracts "$proj/contracts" --results popper_results/dot_contract_tests \
  --test-binary ./dot_contract_tests --bench-claims reports/bench-claims.json \
  --bench-mutant-results bench-mutants-dot.json -o audit-bench > "$work/audit-bench.log" 2>&1 ||
  { tail -20 "$work/audit-bench.log"; exit 1; }
grep -E 'BENCH-DOT-001 .*\| met' audit-bench/coverage.md
grep -E 'bench mutants killed' audit-bench/coverage.md

step "a baseline, then the timed check against it, re-measured interleaved with the baseline's commit"
"$popper" bench compare --family dot --shapes gate "${timed[@]}" --out reports-base > "$work/compare-base.log" 2>&1
"$popper" bench baseline save --from reports-base/bench-dot.csv --dir "$proj/baselines" | tee "$work/baseline.log"
base=$(sed -n 's/^saved \([^ ]*\) .*/\1/p' "$work/baseline.log")
# Committed, as a project keeps its baselines: the current run is then a later
# commit, and --rerun builds the baseline's own commit to interleave with.
git -C "$proj" add baselines &&
  git -C "$proj" -c user.name=consumer-check -c user.email=ci@localhost commit -qm "dot baseline" > /dev/null
# On a shared machine one timed check can meet a disturbance on one side
# (a false REGRESSION of 1.7x, interleaved, in one of three runs on a loaded
# 2-core Zen 4 guest). Each timed check that goes the unexpected way is run
# once more, from a fresh measurement, and said; only two in a row fail.
clean_check() {  # RUN: the clean compare and check; exit status of the check
  "$popper" bench compare --family dot --shapes gate "${timed[@]}" --out reports-again > "$work/compare-again.log" 2>&1
  "$popper" bench check --baseline "$base" --current reports-again/bench-dot.csv --rerun > "$work/check.log" 2>&1
}
if ! clean_check; then
  echo "consumer-check: WARNING: the clean check failed; measuring again once:"
  grep -E '^(REGRESSION|NOISY) ' "$work/check.log" | head -3
  clean_check || { echo "consumer-check: the clean check failed twice" >&2; tail -30 "$work/check.log" >&2; exit 1; }
fi
grep -m1 'interleaved now with' "$work/check.log" | sed 's/.*(\(commit [^)]*\)).*/consumer-check: interleaved with the baseline side: \1/'
tail -2 "$work/check.log"

step "the same check with a 50% slowdown injected into the hand tier must fail"
slow_check() {  # the compare with the slowdown injected and its check; sets rc
  POPPER_BENCH_INJECT_SLOWDOWN=0.5 "$popper" bench compare --family dot --shapes gate "${timed[@]}" \
    --out reports-slow > "$work/compare-slow.log" 2>&1
  set +e
  "$popper" bench check --baseline "$base" --current reports-slow/bench-dot.csv --rerun > "$work/check-slow.log" 2>&1
  rc=$?
  set -e
}
slow_check
if [ "$rc" -ne 1 ]; then
  echo "consumer-check: WARNING: the injected slowdown's check exited $rc, not 1; measuring again once:"
  grep -E '^[A-Z]+ +dot/hand/' "$work/check-slow.log" | head -3
  slow_check
fi
grep -E 'REGRESSION' "$work/check-slow.log" | head -3
[ "$rc" -eq 1 ] || { echo "consumer-check: the injected slowdown's check exited $rc twice, not 1" >&2; exit 1; }

step "the bench mutants fail the compare too"
for mutant in cached-result skipped-work unsynchronised-timing; do
  if POPPER_BENCH_MUTANT=$mutant "$popper" bench compare --family dot --shapes n_1k --tiers hand "${short[@]}" \
    --out reports-mutant > "$work/compare-mutant.log" 2>&1; then
    echo "consumer-check: bench compare passed with the $mutant bench mutant" >&2; exit 1
  fi
  grep -m1 -E 'INCORRECT|INVALID|invalid' "$work/compare-mutant.log"
done

step "the instruction gate against a gate baseline recorded in the consumer's tree"
"$popper" bench gate --family dot --no-check --jobs "$jobs" --out reports/bench-dot-gate.csv > "$work/gate-record.log" 2>&1 ||
  { tail -20 "$work/gate-record.log"; exit 1; }
"$popper" bench baseline save --from reports/bench-dot-gate.csv --dir "$proj/baselines"
"$popper" bench gate --family dot --jobs "$jobs" > "$work/gate.log" 2>&1 || { tail -30 "$work/gate.log"; exit 1; }
grep -E 'UNCHANGED|REGRESSION|family dot' "$work/gate.log" | head -4
step "PASS"
