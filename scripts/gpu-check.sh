#!/usr/bin/env bash
# gpu-check: on a machine with an NVIDIA GPU, everything popper can check on
# the device, declines forbidden. `make gpu-check` runs it over a build tree,
# a bundle's run.sh over the bundle (scripts/bundle.sh).
#
#   gpu-check.sh --bin DIR --data DIR --out DIR [--jobs N] [--no-bench] [--budget S]
#                [--cpu-mutants FILE] [--steps LIST]
#     --bin     popper, popper_contract_tests, bench_* and ceiling_* programs
#     --data    contracts/, bench/<family>/family.yaml, baselines/ (a source tree
#               or a bundle's share/popper)
#     --out     every log and report of the run
#     --budget  seconds for the whole run (a lent GPU is time-limited; also
#               $POPPER_GPU_CHECK_BUDGET): each step runs under what is left,
#               the benches are given a share of it (bench compare --budget, so
#               they finish and report), a step cut off is named as such and
#               one with under 10 s left is not started
#     --steps   which steps, in which order (comma-separated names from the
#               list below; default tests,memcheck,audit,peak,gemm,decode).
#               With a budget, a bench step gets its weight's share of the
#               time left over the steps still to come (gemm 3, decode 2,
#               tests 2, the others 1), whatever the order
#     --cpu-mutants  this build's mutant results from a machine without a
#               device (default: the bundle's results/cpu-mutants.json, or
#               <bin>/../results/audit/mutants.json from make test): the
#               decline paths a device machine cannot take are judged there
#
# Steps, each run whatever the one before gave; a step that fails is named:
#   1. tests: the contract tests with POPPER_REQUIRE_DEVICE=1 (a decline, or a
#      device test without device evidence, fails)
#   2. memcheck: compute-sanitizer memcheck over the tests that ran on CUDA in step 1
#      (not run, and said so, where compute-sanitizer is not installed)
#   3. audit: the audit of those results with every test under each of its mutants
#      (device mutants are judged here, where their path runs)
#   4. peak: popper peak --device: the device's measured ceilings
#   5. gemm: the GEMM family's device tiers (cuBLAS ceiling, popper's cuBLAS wrapper,
#      the hand CUDA kernels; f32, f16, bf16) on square_1k, square_4k,
#      ffn_gate_up, lm_head
#   6. decode: the resident decode on canary_t8: the CPU hand tier and the device tier
#      on CUDA, then the device tier on Vulkan; the claims BENCH-MBP-003..005
#      judged on the two tables merged
# Exit 0 when every step passed, 1 when any failed (each named), 2 on usage.
set -uo pipefail
bin="" data="" out="" jobs="$(nproc 2>/dev/null || echo 2)" bench=1 budget="${POPPER_GPU_CHECK_BUDGET:-0}" cpu_mutants=""
steps="tests,memcheck,audit,peak,gemm,decode"
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin="$2"; shift 2 ;;
    --data) data="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --no-bench) bench=0; shift ;;
    --budget) budget="$2"; shift 2 ;;
    --cpu-mutants) cpu_mutants="$2"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    *) echo "gpu-check: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -n "$bin" ] && [ -n "$data" ] && [ -n "$out" ] || { echo "usage: gpu-check.sh --bin DIR --data DIR --out DIR" >&2; exit 2; }
case "$budget" in ''|*[!0-9]*) echo "gpu-check: --budget takes whole seconds, not '$budget'" >&2; exit 2 ;; esac
IFS=, read -ra order <<<"$steps"
for s in "${order[@]}"; do
  case "$s" in tests|memcheck|audit|peak|gemm|decode) ;;
    *) echo "gpu-check: unknown step '$s' in --steps (steps: tests, memcheck, audit, peak, gemm, decode)" >&2; exit 2 ;;
  esac
done
if [ "$bench" = 0 ]; then
  kept=()
  for s in "${order[@]}"; do [ "$s" = gemm ] || [ "$s" = decode ] || kept+=("$s"); done
  order=("${kept[@]}")
fi
if [ -z "$cpu_mutants" ]; then
  for f in "$data/results/cpu-mutants.json" "$bin/../results/audit/mutants.json"; do
    if [ -f "$f" ]; then cpu_mutants="$f"; break; fi
  done
fi
mkdir -p "$out"
out="$(cd "$out" && pwd)"
summary="$out/summary.txt"
: > "$summary"
say() { echo "$*" | tee -a "$summary"; }
failed=()
start=$SECONDS

left() { echo $((budget - (SECONDS - start))); }

# step NAME CMD...: runs CMD under the time left (no limit without a budget)
# and notes its wall time; returns CMD's status (124 when the budget cut it
# off, after naming it among the failures).
step() {
  local name="$1" t0=$SECONDS rc; shift
  if [ "$budget" -gt 0 ]; then
    if [ "$(left)" -lt 10 ]; then
      say "$name: not started, the ${budget} s budget is spent"
      failed+=("$name (not started: budget)")
      return 124
    fi
    timeout --kill-after=5 "$(left)" "$@"
  else
    "$@"
  fi
  rc=$?
  echo "[$name: $((SECONDS - t0)) s, exit $rc]" >> "$summary"
  if [ "$budget" -gt 0 ] && { [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; }; then
    say "$name: cut off by the ${budget} s budget"
    failed+=("$name (cut off: budget)")
    return 124
  fi
  return "$rc"
}

# weight STEP: its share of the time left, against the steps still to come.
weight() { case "$1" in gemm) echo 3 ;; decode-cuda|decode-vulkan|tests) echo 2 ;; *) echo 1 ;; esac; }
pending=()  # the steps (decode as its two devices) not yet run

# bench_budget STEP: the --budget option for a bench step given its weight's
# share of the time left (nothing without a budget): bench compare then plans
# its trials, and stops a trial, to write its reports inside it.
bench_budget() {
  [ "$budget" -gt 0 ] || return 0
  local total=0 p
  for p in "${pending[@]}"; do total=$((total + $(weight "$p"))); done
  local b=$(( $(left) * $(weight "$1") / (total > 0 ? total : 1) - 10 ))
  echo "--budget $(( b > 10 ? b : 10 ))"
}

if ! nvidia-smi -L > "$out/devices.txt" 2>&1; then
  say "gpu-check: no CUDA device (nvidia-smi -L failed: $(head -1 "$out/devices.txt")): nothing to check here"
  exit 1
fi
say "gpu-check: $(head -1 "$out/devices.txt"); driver $(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)"

# 1. Contract tests, declines forbidden.
run_tests() {
  POPPER_REQUIRE_DEVICE=1 step "contract tests" "$bin/popper_contract_tests" --gtest_output="json:$out/contract_tests.json" \
    > "$out/contract_tests.log" 2>&1
  local rc=$? passed skipped fails
  passed=$(grep -aoE '^\[  PASSED  \] [0-9]+' "$out/contract_tests.log" | grep -oE '[0-9]+$' | tail -1)
  skipped=$(grep -aoE '^\[  SKIPPED \] [0-9]+ test' "$out/contract_tests.log" | grep -oE '[0-9]+' | tail -1)
  fails=$(grep -aE '^\[  FAILED  \] [A-Za-z0-9_]+\.[A-Za-z0-9_]+' "$out/contract_tests.log" | awk '{print $4}' | sort -u)
  say "tests: ${passed:-0} passed, ${skipped:-0} skipped, $(grep -c . <<<"$fails") failed (exit $rc)"
  if [ -n "$fails" ]; then
    while read -r t; do say "  FAILED $t"; done <<<"$fails"
  fi
  [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ] || failed+=("contract tests")
}

# 2. memcheck over the tests that recorded a CUDA path in step 1 (a kernel can
# read past an operand and still give the right answer: only the sanitizer sees it).
run_memcheck() {
  local sanitizer cuda_tests rc
  sanitizer="$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)"
  cuda_tests=$(awk -F'"' '$2 == "name" {name = $4} $2 == "popper_backends" && $4 ~ /(^|,)cuda/ {print "*." name}' \
    "$out/contract_tests.json" 2>/dev/null | paste -sd: -)
  if [ -z "$sanitizer" ]; then
    say "memcheck: not run (compute-sanitizer not found)"
  elif [ -z "$cuda_tests" ]; then
    say "memcheck: not run (no test recorded a CUDA path in the tests step)"
  else
    POPPER_REQUIRE_DEVICE=1 step memcheck "$sanitizer" --tool memcheck --leak-check no --error-exitcode 3 \
      "$bin/popper_contract_tests" --gtest_brief=1 --gtest_filter="$cuda_tests" > "$out/memcheck.log" 2>&1
    rc=$?
    say "memcheck: $(grep -c . <<<"${cuda_tests//:/$'\n'}") tests, $(grep -aoE 'ERROR SUMMARY: [0-9]+ error' "$out/memcheck.log" | tail -1 || echo 'no summary') (exit $rc)"
    grep -aE '^========= (Invalid|Uninitialized|Race|Barrier|Misaligned)' -A1 "$out/memcheck.log" | sort | uniq -c | sort -rn | head -5 >> "$summary"
    [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ] || failed+=("memcheck (see $out/memcheck.log)")
  fi
}

# 3. Audit with device evidence and every mutant.
run_audit() {
  local mutant_inputs=() rc
  if [ -n "$cpu_mutants" ]; then
    mutant_inputs=(--mutant-results "$cpu_mutants")
    say "audit: decline-path mutants from $cpu_mutants (this build, without a device)"
  fi
  POPPER_REQUIRE_DEVICE=1 step audit "$bin/popper" audit --contracts "$data/contracts" --results "$out/contract_tests.json" \
    --test-binary "$bin/popper_contract_tests" --mutants "${mutant_inputs[@]}" --jobs "$jobs" -o "$out/audit" \
    > "$out/audit.log" 2>&1
  rc=$?
  if [ -f "$out/audit/coverage.md" ]; then
    say "audit: $(grep -m1 -iE 'mutants killed' "$out/audit/coverage.md" | sed 's/|/ /g; s/  */ /g') (exit $rc)"
  fi
  [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ] || failed+=("audit (see $out/audit/coverage.md)")
}

# 4. The device's ceilings.
run_peak() {
  step "peak --device" "$bin/popper" peak --device --no-vendors --cache "$out/peak.json" > "$out/peak.txt" 2>&1
  local rc=$?
  sed -n '/^device/,$p' "$out/peak.txt" | tee -a "$summary"
  [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ] || failed+=("popper peak --device (see $out/peak.txt)")
}

# 5. GEMM device tiers.
run_gemm() {
  # shellcheck disable=SC2046
  POPPER_REQUIRE_DEVICE=1 step "gemm device tiers" "$bin/popper" bench compare --family gemm --device --require-device \
    --source-dir "$data" --shapes square_1k,square_4k,ffn_gate_up,lm_head --contracts "$data/contracts" \
    --out "$out/bench" $(bench_budget gemm) > "$out/bench.log" 2>&1
  local rc=$?
  [ -f "$out/bench/bench-gemm-device.md" ] && cat "$out/bench/bench-gemm-device.md" >> "$summary"
  [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ] || failed+=("bench compare --family gemm --device (exit $rc, see $out/bench.log)")
}

# 6. Resident decode on DEVICE (cuda, or vulkan through the driver's ICD); the
# CUDA run times the CPU hand tier beside it. The claims comparing the two
# (BENCH-MBP-005: Vulkan against CUDA) are judged on the two runs merged.
run_decode() {
  local dev="$1" rc tiers=hand,device
  [ "$dev" = cuda ] || tiers=device
  # shellcheck disable=SC2046
  POPPER_REQUIRE_DEVICE=1 POPPER_DECODE_DEVICE=$dev step "decode on $dev" "$bin/popper" bench compare --family decode \
    --require-device --shapes canary_t8 --tiers "$tiers" --threads 1 --source-dir "$data" \
    --contracts "$data/contracts" --out "$out/decode-$dev" $(bench_budget "decode-$dev") > "$out/decode-$dev.log" 2>&1
  rc=$?
  [ -f "$out/decode-$dev/bench-decode.md" ] && cat "$out/decode-$dev/bench-decode.md" >> "$summary"
  [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ] || failed+=("decode on $dev (exit $rc, see $out/decode-$dev.log)")
}

merge_decode() {
  local parts=() dev
  for dev in cuda vulkan; do
    [ -f "$out/decode-$dev/bench-decode.csv" ] && parts+=("$out/decode-$dev/bench-decode.csv")
  done
  [ ${#parts[@]} -eq 2 ] || { say "decode claims: not judged together (a device's run wrote no table)"; return; }
  mkdir -p "$out/decode"
  "$bin/popper" bench merge "${parts[@]}" -o "$out/decode/bench-decode.csv" --claims "$data/contracts" \
    --source-dir "$data" > "$out/decode-merge.log" 2>&1 || failed+=("decode merge (see $out/decode-merge.log)")
  grep -a 'BENCH-' "$out/decode-merge.log" | tee -a "$summary"
}

for s in "${order[@]}"; do
  if [ "$s" = decode ]; then pending+=(decode-cuda decode-vulkan); else pending+=("$s"); fi
done
for s in "${order[@]}"; do
  case "$s" in
    decode)
      for dev in cuda vulkan; do
        run_decode "$dev"
        pending=("${pending[@]:1}")
      done
      merge_decode
      ;;
    *)
      "run_$s"
      pending=("${pending[@]:1}")
      ;;
  esac
done

say "gpu-check: $((SECONDS - start)) s"
if [ ${#failed[@]} -eq 0 ]; then
  say "gpu-check: PASS"
  exit 0
fi
say "gpu-check: FAIL: $(printf '%s; ' "${failed[@]}" | sed 's/; $//')"
exit 1
