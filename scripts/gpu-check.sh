#!/usr/bin/env bash
# gpu-check: on a machine with an NVIDIA GPU, everything popper can check on
# the device, declines forbidden. `make gpu-check` runs it over a build tree,
# a bundle's run.sh over the bundle (scripts/bundle.sh).
#
#   gpu-check.sh --bin DIR --data DIR --out DIR [--jobs N] [--no-bench] [--budget S]
#                [--cpu-mutants FILE]
#     --bin     popper, popper_contract_tests, bench_* and ceiling_* programs
#     --data    contracts/, bench/<family>/family.yaml, baselines/ (a source tree
#               or a bundle's share/popper)
#     --out     every log and report of the run
#     --budget  seconds for the whole run (a lent GPU is time-limited; also
#               $POPPER_GPU_CHECK_BUDGET): each step runs under what is left,
#               the benches are given a share of it (bench compare --budget, so
#               they finish and report), a step cut off is named as such and
#               one with under 10 s left is not started
#     --cpu-mutants  this build's mutant results from a machine without a
#               device (default: the bundle's results/cpu-mutants.json, or
#               <bin>/../results/audit/mutants.json from make test): the
#               decline paths a device machine cannot take are judged there
#
# Steps, each run whatever the one before gave; a step that fails is named:
#   1. the contract tests with POPPER_REQUIRE_DEVICE=1 (a decline, or a
#      device test without device evidence, fails)
#   2. compute-sanitizer memcheck over the tests that ran on CUDA in step 1
#      (not run, and said so, where compute-sanitizer is not installed)
#   3. the audit of those results with every test under each of its mutants
#      (device mutants are judged here, where their path runs)
#   4. popper peak --device: the device's measured ceilings
#   5. the GEMM family's device tiers (cuBLAS ceiling, popper's cuBLAS wrapper,
#      the hand CUDA kernels; f32, f16, bf16) on square_1k, square_4k,
#      ffn_gate_up, lm_head
#   6. the resident decode on canary_t8: the CPU hand tier and the device tier
#      on CUDA, then on Vulkan (the claims BENCH-MBP-003..005)
# Exit 0 when every step passed, 1 when any failed (each named), 2 on usage.
set -uo pipefail
bin="" data="" out="" jobs="$(nproc 2>/dev/null || echo 2)" bench=1 budget="${POPPER_GPU_CHECK_BUDGET:-0}" cpu_mutants=""
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin="$2"; shift 2 ;;
    --data) data="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --no-bench) bench=0; shift ;;
    --budget) budget="$2"; shift 2 ;;
    --cpu-mutants) cpu_mutants="$2"; shift 2 ;;
    *) echo "gpu-check: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -n "$bin" ] && [ -n "$data" ] && [ -n "$out" ] || { echo "usage: gpu-check.sh --bin DIR --data DIR --out DIR" >&2; exit 2; }
case "$budget" in ''|*[!0-9]*) echo "gpu-check: --budget takes whole seconds, not '$budget'" >&2; exit 2 ;; esac
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

# bench_budget SHARE: the --budget option for a bench step given 1/SHARE of
# the time left (nothing without a budget): bench compare then plans its
# trials to finish and write its reports inside it.
bench_budget() {
  [ "$budget" -gt 0 ] || return 0
  local b=$(( $(left) / $1 - 10 ))
  echo "--budget $(( b > 10 ? b : 10 ))"
}

if ! nvidia-smi -L > "$out/devices.txt" 2>&1; then
  say "gpu-check: no CUDA device (nvidia-smi -L failed: $(head -1 "$out/devices.txt")): nothing to check here"
  exit 1
fi
say "gpu-check: $(head -1 "$out/devices.txt"); driver $(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)"

# 1. Contract tests, declines forbidden.
POPPER_REQUIRE_DEVICE=1 step "contract tests" "$bin/popper_contract_tests" --gtest_output="json:$out/contract_tests.json" \
  > "$out/contract_tests.log" 2>&1
rc=$?
passed=$(grep -aoE '^\[  PASSED  \] [0-9]+' "$out/contract_tests.log" | grep -oE '[0-9]+$' | tail -1)
skipped=$(grep -aoE '^\[  SKIPPED \] [0-9]+ test' "$out/contract_tests.log" | grep -oE '[0-9]+' | tail -1)
fails=$(grep -aE '^\[  FAILED  \] [A-Za-z0-9_]+\.[A-Za-z0-9_]+' "$out/contract_tests.log" | awk '{print $4}' | sort -u)
say "tests: ${passed:-0} passed, ${skipped:-0} skipped, $(grep -c . <<<"$fails") failed (exit $rc)"
if [ -n "$fails" ]; then
  while read -r t; do say "  FAILED $t"; done <<<"$fails"
fi
[ "$rc" -eq 0 ] || [ "$rc" -eq 124 ] || failed+=("contract tests")

# 2. memcheck over the tests that recorded a CUDA path (a kernel can read past
# an operand and still give the right answer: only the sanitizer sees it).
sanitizer="$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)"
cuda_tests=$(awk -F'"' '$2 == "name" {name = $4} $2 == "popper_backends" && $4 ~ /(^|,)cuda/ {print "*." name}' \
  "$out/contract_tests.json" 2>/dev/null | paste -sd: -)
if [ -z "$sanitizer" ]; then
  say "memcheck: not run (compute-sanitizer not found)"
elif [ -z "$cuda_tests" ]; then
  say "memcheck: not run (no test recorded a CUDA path in step 1)"
else
  POPPER_REQUIRE_DEVICE=1 step memcheck "$sanitizer" --tool memcheck --leak-check no --error-exitcode 3 \
    "$bin/popper_contract_tests" --gtest_brief=1 --gtest_filter="$cuda_tests" > "$out/memcheck.log" 2>&1
  rc=$?
  say "memcheck: $(grep -c . <<<"${cuda_tests//:/$'\n'}") tests, $(grep -aoE 'ERROR SUMMARY: [0-9]+ error' "$out/memcheck.log" | tail -1 || echo 'no summary') (exit $rc)"
  grep -aE '^========= (Invalid|Uninitialized|Race|Barrier|Misaligned)' -A1 "$out/memcheck.log" | sort | uniq -c | sort -rn | head -5 >> "$summary"
  [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ] || failed+=("memcheck (see $out/memcheck.log)")
fi

# 3. Audit with device evidence and every mutant.
mutant_inputs=()
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

# 4. The device's ceilings.
step "peak --device" "$bin/popper" peak --device --no-vendors --cache "$out/peak.json" > "$out/peak.txt" 2>&1
rc=$?
sed -n '/^device/,$p' "$out/peak.txt" | tee -a "$summary"
[ "$rc" -eq 0 ] || [ "$rc" -eq 124 ] || failed+=("popper peak --device (see $out/peak.txt)")

# 5. GEMM device tiers.
if [ "$bench" = 1 ]; then
  # shellcheck disable=SC2046
  POPPER_REQUIRE_DEVICE=1 step "gemm device tiers" "$bin/popper" bench compare --family gemm --device --require-device \
    --source-dir "$data" --shapes square_1k,square_4k,ffn_gate_up,lm_head --contracts "$data/contracts" \
    --out "$out/bench" $(bench_budget 2) > "$out/bench.log" 2>&1
  rc=$?
  [ -f "$out/bench/bench-gemm-device.md" ] && cat "$out/bench/bench-gemm-device.md" >> "$summary"
  [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ] || failed+=("bench compare --family gemm --device (exit $rc, see $out/bench.log)")

# 6. Resident decode, CUDA then Vulkan (the driver's ICD), beside the CPU hand tier.
  share=2
  for dev in cuda vulkan; do
    # shellcheck disable=SC2046
    POPPER_REQUIRE_DEVICE=1 POPPER_DECODE_DEVICE=$dev step "decode on $dev" "$bin/popper" bench compare --family decode \
      --require-device --shapes canary_t8 --tiers hand,device --threads 1 --source-dir "$data" \
      --contracts "$data/contracts" --out "$out/decode-$dev" $(bench_budget $share) > "$out/decode-$dev.log" 2>&1
    rc=$?
    share=1
    [ -f "$out/decode-$dev/bench-decode.md" ] && cat "$out/decode-$dev/bench-decode.md" >> "$summary"
    [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ] || failed+=("decode on $dev (exit $rc, see $out/decode-$dev.log)")
  done
fi

say "gpu-check: $((SECONDS - start)) s"
if [ ${#failed[@]} -eq 0 ]; then
  say "gpu-check: PASS"
  exit 0
fi
say "gpu-check: FAIL: $(printf '%s; ' "${failed[@]}" | sed 's/; $//')"
exit 1
