#!/usr/bin/env bash
# One leg of the CPU matrix: the contract and harness test binaries as the CPU
# MODEL would run them (qemu-user, no root, no VM), each kernel picking its
# path by itself (POPPER_DISPATCH=auto: no forced narrower paths), with the
# BLAS environment controlled (no forced OpenBLAS core type: OpenBLAS picks
# for the emulated CPU). MODEL "native" runs on this CPU the same way. Then
# the mutants that break only one CPU path run in this leg, so the audit can
# show which leg catches which.
#   scripts/cpu-leg.sh MODEL BUILD_DIR SOURCE_DIR
# Writes BUILD_DIR/results/cpu-MODEL-{contract,harness}_tests.json and
# cpu-MODEL-mutants.json. Exit 77 (ctest: skipped) when qemu-user is missing,
# unless POPPER_REQUIRE_QEMU=1 (CI), where that is a failure.
set -u
MODEL="$1"; BUILD="$2"; SRC="$3"
RESULTS="$BUILD/results"
mkdir -p "$RESULTS"
PREFIX=()
SITE=native
if [ "$MODEL" != native ]; then
  if ! command -v qemu-x86_64 >/dev/null 2>&1; then
    echo "skipped: requires qemu-user (qemu-x86_64 not found; scripts/install-deps.sh installs it)"
    [ "${POPPER_REQUIRE_QEMU:-0}" = 1 ] && { echo "POPPER_REQUIRE_QEMU=1: the CPU matrix is required here" >&2; exit 1; }
    exit 77
  fi
  PREFIX=(qemu-x86_64 -cpu "$MODEL")
  SITE="emulated:$MODEL"
fi
ENV=(env -u OPENBLAS_CORETYPE -u POPPER_ISA_MAX POPPER_DISPATCH=auto)
[ "$MODEL" != native ] && ENV+=(POPPER_CPU_MODEL="$MODEL")
# Where the emulated CPU has FMA (Haswell), qemu computes every fused
# multiply-add in software: on an Intel Xeon host the 24-layer decode canary's
# parity tests took 10-60 s each, FALSIFY-GEMM-002 (every ISA the CPU has,
# large shapes) 143 s and FALSIFY-GEMM-013 (the bench shapes, k = 2048) more,
# and the leg passed its 2400 s limit (on a Zen 4 host the whole leg took 4
# minutes). They run natively in every other run (make test, the native leg,
# whose AVX-512 CPU runs the AVX2 kernels too); the leg's dispatch, its other
# tests and its mutants stay.
FILTER=()
if [ "$MODEL" = Haswell ]; then
  FILTER=(--gtest_filter=-multi_backend_parity_v1.*:gemm_v1.FALSIFY_GEMM_002:gemm_v1.FALSIFY_GEMM_013)
  echo "== $SITE: the decode canary's parity tests, FALSIFY-GEMM-002 and -013 are left to the native runs: software FMA"
fi
rc=0
echo "== $SITE: contract tests"
"${ENV[@]}" "${PREFIX[@]}" "$BUILD/bin/popper_contract_tests" --gtest_brief=1 "${FILTER[@]}" \
    --gtest_output="json:$RESULTS/cpu-$MODEL-contract_tests.json"
tests_rc=$?
# Under qemu-user the whole run has died of SIGSEGV now and then (2 of 5 full
# Haswell runs, in FALSIFY-TRAIN-001, which passes alone, 40 repetitions, and
# natively, also under valgrind): not understood yet. Such a death is said here
# and the run repeated once; a test that fails, or a second death, fails the leg.
if [ "$tests_rc" -gt 128 ] && [ "$MODEL" != native ]; then
  echo "== $SITE: WARNING: popper_contract_tests died of signal $((tests_rc - 128)) under qemu-user; running it again"
  "${ENV[@]}" "${PREFIX[@]}" "$BUILD/bin/popper_contract_tests" --gtest_brief=1 "${FILTER[@]}" \
      --gtest_output="json:$RESULTS/cpu-$MODEL-contract_tests.json"
  tests_rc=$?
fi
[ "$tests_rc" -eq 0 ] || rc=1
echo "== $SITE: harness tests"
"${ENV[@]}" "${PREFIX[@]}" "$BUILD/bin/popper_harness_tests" --gtest_brief=1 \
    --gtest_output="json:$RESULTS/cpu-$MODEL-harness_tests.json" || rc=1
# The path the kernels pick here, and the mutants that break exactly that path.
path=$("${ENV[@]}" "${PREFIX[@]}" "$BUILD/bin/popper_dispatch_probe" | sed 's/.*"cpu_isa":"\([a-z0-9]*\)".*/\1/')
echo "== $SITE: kernels dispatch to cpu:$path; running the mutants of that path"
env -u OPENBLAS_CORETYPE "$BUILD/bin/popper" mutants --contracts "$SRC/contracts" \
    --test-binary "$BUILD/bin/popper_contract_tests" --site "$SITE" --paths "cpu:$path" \
    ${PREFIX:+--exec-prefix "${PREFIX[*]}"} --env POPPER_DISPATCH=auto \
    $( [ "$MODEL" != native ] && echo --env POPPER_CPU_MODEL="$MODEL" ) \
    -o "$RESULTS/cpu-$MODEL-mutants.json" || rc=1
exit $rc
