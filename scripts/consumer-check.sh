#!/usr/bin/env bash
# popper as a package, end to end (issue 15), from this checkout:
#   1. configure and build popper harness-only (POPPER_HARNESS_ONLY: only the
#      harness's dependencies), install it to a temporary prefix;
#   2. build examples/consumer against the installed package (find_package(popper));
#   3. ctest lists one test per contract id and runs them;
#   4. a deliberately broken kernel (POPPER_MUTANT=dot-drop-last) fails ctest,
#      and the failing ids show by name;
#   5. the audit target runs every mutant, writes JUnit XML, and the XML
#      validates against docs/junit.xsd.
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

step "examples/consumer against the installed package"
cmake -S "$src/examples/consumer" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$work/prefix" > "$work/consumer-configure.log"
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
step "PASS"
