#!/usr/bin/env bash
# gpu-check: on a machine with an NVIDIA GPU, everything popper can check on
# the device, declines forbidden. `make gpu-check` runs it over a build tree,
# a bundle's run.sh over the bundle (scripts/bundle.sh).
#
#   gpu-check.sh --bin DIR --data DIR --out DIR [--jobs N] [--no-bench]
#     --bin   popper, popper_contract_tests, bench_* and ceiling_* programs
#     --data  contracts/, bench/<family>/family.yaml, baselines/ (a source tree
#             or a bundle's share/popper)
#     --out   every log and report of the run
#
# Steps, each run whatever the one before gave; a step that fails is named:
#   1. the contract tests with POPPER_REQUIRE_DEVICE=1 (a decline, or a
#      device test without device evidence, fails)
#   2. the audit of those results with every test under each of its mutants
#      (device mutants are judged here, where their path runs)
#   3. popper peak --device: the device's measured ceilings
#   4. the GEMM family's device tiers (cuBLAS ceiling, popper's cuBLAS wrapper,
#      the hand CUDA kernels; f32, f16, bf16) on square_1k, square_4k,
#      ffn_gate_up, lm_head
#   5. the resident decode on canary_t8: the CPU hand tier and the device tier
#      on CUDA, then on Vulkan (the claims BENCH-MBP-003..005)
# Exit 0 when every step passed, 1 when any failed (each named), 2 on usage.
set -uo pipefail
bin="" data="" out="" jobs="$(nproc 2>/dev/null || echo 2)" bench=1
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin="$2"; shift 2 ;;
    --data) data="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --no-bench) bench=0; shift ;;
    *) echo "gpu-check: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -n "$bin" ] && [ -n "$data" ] && [ -n "$out" ] || { echo "usage: gpu-check.sh --bin DIR --data DIR --out DIR" >&2; exit 2; }
mkdir -p "$out"
out="$(cd "$out" && pwd)"
summary="$out/summary.txt"
: > "$summary"
say() { echo "$*" | tee -a "$summary"; }
failed=()

if ! nvidia-smi -L > "$out/devices.txt" 2>&1; then
  say "gpu-check: no CUDA device (nvidia-smi -L failed: $(head -1 "$out/devices.txt")): nothing to check here"
  exit 1
fi
say "gpu-check: $(head -1 "$out/devices.txt"); driver $(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)"

# 1. Contract tests, declines forbidden.
POPPER_REQUIRE_DEVICE=1 "$bin/popper_contract_tests" --gtest_output="json:$out/contract_tests.json" \
  > "$out/contract_tests.log" 2>&1
rc=$?
passed=$(grep -aoE '^\[  PASSED  \] [0-9]+' "$out/contract_tests.log" | grep -oE '[0-9]+$' | tail -1)
skipped=$(grep -aoE '^\[  SKIPPED \] [0-9]+ test' "$out/contract_tests.log" | grep -oE '[0-9]+' | tail -1)
fails=$(grep -aE '^\[  FAILED  \] [A-Za-z0-9_]+\.[A-Za-z0-9_]+' "$out/contract_tests.log" | awk '{print $4}' | sort -u)
say "tests: ${passed:-0} passed, ${skipped:-0} skipped, $(grep -c . <<<"$fails") failed (exit $rc)"
if [ -n "$fails" ]; then
  while read -r t; do say "  FAILED $t"; done <<<"$fails"
fi
[ "$rc" -eq 0 ] || failed+=("contract tests")

# 2. Audit with device evidence and every mutant.
POPPER_REQUIRE_DEVICE=1 "$bin/popper" audit --contracts "$data/contracts" --results "$out/contract_tests.json" \
  --test-binary "$bin/popper_contract_tests" --mutants --jobs "$jobs" -o "$out/audit" > "$out/audit.log" 2>&1
rc=$?
say "audit: $(grep -m1 -iE 'mutants killed' "$out/audit/coverage.md" 2>/dev/null | sed 's/|/ /g; s/  */ /g' || echo 'no report') (exit $rc)"
[ "$rc" -eq 0 ] || failed+=("audit (see $out/audit/coverage.md)")

# 3. The device's ceilings.
"$bin/popper" peak --device --no-vendors --cache "$out/peak.json" > "$out/peak.txt" 2>&1
rc=$?
sed -n '/^device/,$p' "$out/peak.txt" | tee -a "$summary"
[ "$rc" -eq 0 ] || failed+=("popper peak --device")

# 4. GEMM device tiers.
if [ "$bench" = 1 ]; then
  POPPER_REQUIRE_DEVICE=1 "$bin/popper" bench compare --family gemm --device --require-device --source-dir "$data" \
    --shapes square_1k,square_4k,ffn_gate_up,lm_head --contracts "$data/contracts" --out "$out/bench" \
    > "$out/bench.log" 2>&1
  rc=$?
  [ -f "$out/bench/bench-gemm-device.md" ] && cat "$out/bench/bench-gemm-device.md" >> "$summary"
  [ "$rc" -eq 0 ] || failed+=("bench compare --family gemm --device (exit $rc, see $out/bench.log)")

# 5. Resident decode, CUDA then Vulkan (the driver's ICD), beside the CPU hand tier.
  for dev in cuda vulkan; do
    POPPER_REQUIRE_DEVICE=1 POPPER_DECODE_DEVICE=$dev "$bin/popper" bench compare --family decode --require-device \
      --shapes canary_t8 --tiers hand,device --threads 1 --source-dir "$data" --contracts "$data/contracts" \
      --out "$out/decode-$dev" > "$out/decode-$dev.log" 2>&1
    rc=$?
    [ -f "$out/decode-$dev/bench-decode.md" ] && cat "$out/decode-$dev/bench-decode.md" >> "$summary"
    [ "$rc" -eq 0 ] || failed+=("decode on $dev (exit $rc, see $out/decode-$dev.log)")
  done
fi

if [ ${#failed[@]} -eq 0 ]; then
  say "gpu-check: PASS"
  exit 0
fi
say "gpu-check: FAIL: ${failed[*]}"
exit 1
