#!/bin/bash
# Device call 2: the new kernels checked and timed (wgmma GEMM, decode v2, Vulkan decode).
set -u
O=$1; R=/tmp/r; mkdir -p $R; t0=$SECONDS
log() { echo "[$((SECONDS - t0)) s] $*" | tee -a $R/summary.txt; }
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
mkdir -p /tmp/pb && tar xJf build/popper-bundle.tar.xz -C /tmp/pb
B=/tmp/pb/popper-bundle; . $B/env.sh
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1); CS=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null | head -1)
log "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
T='*.FALSIFY_GEMM_015:*.FALSIFY_GEMM_016:*.FALSIFY_GEMM_017:*.FALSIFY_MBP_011:*.FALSIFY_MBP_012'
for k in auto wmma; do
  POPPER_CUDA_TC_KERNEL=$k POPPER_REQUIRE_DEVICE=1 timeout 150 $B/bin/popper_contract_tests --gtest_filter="$T" > $R/tests-$k.log 2>&1; log "tests ($k) rc=$? $(grep -aE '^\[  (PASSED|FAILED) ' $R/tests-$k.log | tr '\n' ' ')"
done
grep -aE 'FAILED|Failure|rel|max|kernel' $R/tests-auto.log | head -30 >> $R/summary.txt
POPPER_REQUIRE_DEVICE=1 timeout 150 $CS --tool memcheck --leak-check no --error-exitcode 3 $B/bin/popper_contract_tests --gtest_brief=1 --gtest_filter="$T" > $R/memcheck.log 2>&1; log "memcheck rc=$? $(grep -aoE 'ERROR SUMMARY: [0-9]+ error' $R/memcheck.log | tail -1)"
grep -aE '^========= (Invalid|Uninitialized|Race|Barrier|Misaligned)' -A2 $R/memcheck.log | head -12 >> $R/summary.txt
timeout 60 $B/bin/popper peak --device --no-vendors --cache $R/peak.json > $R/peak.txt 2>&1; log "peak rc=$?"
POPPER_REQUIRE_DEVICE=1 timeout 150 $B/bin/popper bench compare --family gemm --device --require-device --source-dir $POPPER_DATA_DIR --shapes square_4k,ffn_gate_up,lm_head --contracts $POPPER_DATA_DIR/contracts --out $R/gemm --budget 100 > $R/gemm.log 2>&1; log "gemm rc=$?"
sed -n '/^| shape/,/^$/p' $R/gemm/bench-gemm-device.md >> $R/summary.txt 2>/dev/null; grep -a 'BENCH-GEMM-00[345]' $R/gemm.log >> $R/summary.txt
for dev in cuda vulkan; do
  tiers=device; [ $dev = cuda ] && tiers=hand,device
  POPPER_REQUIRE_DEVICE=1 POPPER_DECODE_DEVICE=$dev timeout 120 $B/bin/popper bench compare --family decode --require-device --shapes canary_t8 --tiers $tiers --threads 1 --source-dir $POPPER_DATA_DIR --contracts $POPPER_DATA_DIR/contracts --out $R/decode-$dev --budget 60 > $R/decode-$dev.log 2>&1; log "decode $dev rc=$?"
  grep -a '| device' $R/decode-$dev/bench-decode.md >> $R/summary.txt 2>/dev/null
done
grep -a 'BENCH-MBP-00[34]' $R/decode-cuda.log >> $R/summary.txt
POPPER_DECODE_DEVICE=cuda timeout 60 $NCU --clock-control none --metrics gpu__time_duration.sum --csv --launch-count 250 $B/bin/bench_decode --benchmark_filter='^decode/device/canary_t8/q4k/threads:1/real_time$' --benchmark_min_time=0.01 > $R/ncu.csv 2> $R/ncu.err; log "ncu rc=$?"
python3 - $R/ncu.csv >> $R/summary.txt 2>&1 <<'PY'
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
h = rows[0]; k = h.index('Kernel Name'); v = h.index('Metric Value')
t = collections.defaultdict(list)
for r in rows[1:]: t[r[k].split('(')[0].split('::')[-1]].append(float(r[v].replace(',', '')) / 1000)
for n, xs in t.items(): xs.sort(); print(f"{n:12s} n={len(xs):4d} median {xs[len(xs)//2]:8.2f} us min {xs[0]:8.2f} max {xs[-1]:8.2f}")
PY
log done
tar czf $O/r.tgz -C /tmp r; cat $R/summary.txt | tail -60
