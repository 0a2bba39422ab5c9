#!/usr/bin/env bash
# One leg of the CPU matrix: the contract and harness test binaries as the CPU
# MODEL would run them (qemu-user, no root, no VM), each kernel picking its
# path by itself (POPPER_DISPATCH=auto: no forced narrower paths), with the
# BLAS environment controlled (no forced OpenBLAS core type: OpenBLAS picks
# for the emulated CPU). MODEL "native" runs on this CPU the same way. Then
# the mutants that break only one CPU path run in this leg, so the audit can
# show which leg catches which.
#   scripts/cpu-leg.sh MODEL BUILD_DIR SOURCE_DIR
# Writes BUILD_DIR/results/cpu-MODEL-{contract,harness}_tests.json (an
# emulated leg's second contract-test shard: cpu-MODEL.shard1-contract_tests.json;
# the native leg's capped runs: cpu-native.isa-max-ISA-contract_tests.json)
# and cpu-MODEL-mutants.json. Exit 77 (ctest: skipped) when qemu-user is missing,
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
# Under qemu-user every vector instruction is emulated. Where the CPU model
# has FMA (Haswell), each fused multiply-add is a call per lane (perf on the
# leg: float32_muladd and fmaf half the time), 100 to 1000 times slower than
# native: on a 2-core Xeon host the whole leg ran past 40 minutes. So each
# emulated leg leaves its slowest tests to the native leg, which runs them
# with the kernels capped at the path that leg takes (POPPER_ISA_MAX: the
# path is recorded as forced, at site "native:isa-max=<isa>"):
#   Haswell (20 s or more there): the decode canary's parity tests (10-78 s
#     each), FALSIFY-GEMM-002 (143 s), -005 (29 s), -013 (over 3 minutes),
#     FALSIFY-FUSED-006 (30 s), FALSIFY-NSA-001 (over 15 minutes), -006 (89 s),
#     FALSIFY-TRAIN-001 (62 s), -003 (over 10 minutes), -004 (142 s), -006
#     (41 s), KANI-Q4K-001 (43 s) and FALSIFY-GEMM-019 (252 s); natively,
#     capped at avx2: 44 s in all (beside the scalar run, on a 2-core Zen 5).
#   Nehalem (15 s or more there, 260 of its 373 CPU-s): FALSIFY-TRAIN-003
#     (81 s), FALSIFY-NSA-001 (56 s), FALSIFY-GEMM-002 (47 s), FALSIFY-MBP-006
#     (31 s), FALSIFY-GEMM-013 (26 s), FALSIFY-MBP-005 (19 s), FALSIFY-GEMM-019
#     (34 s); natively, capped at scalar: 47 s, 36 s of it FALSIFY-NSA-001.
# Each leg's dispatch, every other test of every family and its mutants stay.
# The budget contract's tests time a training step; under an emulator that
# timing says nothing of any CPU, so no emulated leg runs them, and the
# emulated legs can run side by side (make test-cpus).
LEFT_OUT_Haswell=multi_backend_parity_v1.*:gemm_v1.FALSIFY_GEMM_002:gemm_v1.FALSIFY_GEMM_005:gemm_v1.FALSIFY_GEMM_013:fused_kernels_v1.FALSIFY_FUSED_006:nsa_selection_v1.FALSIFY_NSA_001:nsa_selection_v1.FALSIFY_NSA_006:training_step_v1.FALSIFY_TRAIN_001:training_step_v1.FALSIFY_TRAIN_003:training_step_v1.FALSIFY_TRAIN_004:training_step_v1.FALSIFY_TRAIN_006:q4k_gemv_v1.KANI_Q4K_001:gemm_v1.FALSIFY_GEMM_019
LEFT_OUT_Nehalem=training_step_v1.FALSIFY_TRAIN_003:nsa_selection_v1.FALSIFY_NSA_001:gemm_v1.FALSIFY_GEMM_002:multi_backend_parity_v1.FALSIFY_MBP_006:gemm_v1.FALSIFY_GEMM_013:multi_backend_parity_v1.FALSIFY_MBP_005:gemm_v1.FALSIFY_GEMM_019
FILTER=()
if [ "$MODEL" != native ]; then
  left_out_var=LEFT_OUT_$MODEL
  skip=training_step_budget_v1.*${!left_out_var:+:${!left_out_var}}
  FILTER=("--gtest_filter=-$skip")
  echo "== $SITE: left to the native leg (see scripts/cpu-leg.sh): ${skip//:/ }"
fi
rc=0
# An emulated leg runs its contract tests as two gtest shards side by side:
# the legs run two at a time on a 2-core runner, and the slowest one (Nehalem,
# whose scalar paths emulate slowest) would otherwise finish alone on one core
# long after the others. The audit reads every cpu-*-contract_tests.json;
# the site of each test is in its own result.
SHARDS=1
[ "$MODEL" != native ] && SHARDS=2
rm -f "$RESULTS/cpu-$MODEL-contract_tests.json" "$RESULTS/cpu-$MODEL".shard*-contract_tests.json
contract_tests() {  # SHARD: runs that shard, writing its JSON; exits with the tests' status
  local shard=$1 out="$RESULTS/cpu-$MODEL-contract_tests.json"
  [ "$shard" -gt 0 ] && out="$RESULTS/cpu-$MODEL.shard$shard-contract_tests.json"
  local run=("${ENV[@]}" GTEST_TOTAL_SHARDS=$SHARDS GTEST_SHARD_INDEX=$shard "${PREFIX[@]}"
             "$BUILD/bin/popper_contract_tests" --gtest_brief=1 "${FILTER[@]}" --gtest_output="json:$out")
  "${run[@]}"
  local tests_rc=$?
  # Under qemu-user the whole run can die of SIGSEGV (2 of 5 full Haswell runs,
  # in FALSIFY-TRAIN-001, which passes alone, repeated, natively and under
  # valgrind; the cause is unknown). Such a death is said here and the run
  # repeated once; a test that fails, or a second death, fails the leg.
  if [ "$tests_rc" -gt 128 ] && [ "$MODEL" != native ]; then
    echo "== $SITE: WARNING: popper_contract_tests (shard $shard) died of signal $((tests_rc - 128)) under qemu-user; running it again"
    "${run[@]}"
    tests_rc=$?
  fi
  return "$tests_rc"
}
echo "== $SITE: contract tests ($SHARDS shard(s))"
pids=()
for ((shard = 0; shard < SHARDS; ++shard)); do
  contract_tests "$shard" &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid" || rc=1; done
# The native leg then runs what the emulated legs left out, capped at each
# leg's path, the two side by side.
if [ "$MODEL" = native ]; then
  capped_tests() {  # ISA FILTER
    local out="$RESULTS/cpu-native.isa-max-$1-contract_tests.json"
    echo "== native: the tests left out under emulation, kernels capped at $1: ${2//:/ }"
    "${ENV[@]}" POPPER_ISA_MAX="$1" "$BUILD/bin/popper_contract_tests" --gtest_brief=1 --gtest_filter="$2" \
        --gtest_output="json:$out"
  }
  rm -f "$RESULTS"/cpu-native.isa-max-*-contract_tests.json
  capped_tests avx2 "$LEFT_OUT_Haswell" & avx2_pid=$!
  capped_tests scalar "$LEFT_OUT_Nehalem" & scalar_pid=$!
  wait "$avx2_pid" || rc=1
  wait "$scalar_pid" || rc=1
fi
# The bench orchestration tests (compare's trials, budgets and step limits,
# the bench API's timer, the ceiling probes and programs, the screening cache)
# time child processes, which run natively (qemu-user does not follow exec),
# or time the host's scheduler: a pace probe beside a rival thread, a meter's
# probe. In an emulated leg they test the host again, not the CPU: the rival
# test alone took 369 s of the Haswell leg on a 2-vCPU Xeon, its emulated
# FMAs run beside a pinned rival. The native leg runs them all, and the
# Widest pace loop there takes the same AVX2 FMA path as Haswell's. The
# CPU-dependent harness code (the pace loop's sums on each path, the peak
# probe's paths) stays in every leg.
HARNESS_FILTER=()
[ "$MODEL" != native ] && HARNESS_FILTER=("--gtest_filter=-BenchCompare.*:BenchApi.*:CeilingProbe.*:CeilingCli.*:BenchScreeningCache.*:EveryLoop/BenchPaceLoop.AProbeSeesARivalOnItsCpu/*:BenchPace.AMeterThatDoesNotProbeReadsUnknown")
echo "== $SITE: harness tests ${HARNESS_FILTER[*]}"
"${ENV[@]}" "${PREFIX[@]}" "$BUILD/bin/popper_harness_tests" --gtest_brief=1 "${HARNESS_FILTER[@]}" \
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
