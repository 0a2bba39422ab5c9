#!/bin/bash
# Device call: memcheck over the tensor-core GEMMs under both kernels, the full gpu-check, the decode's launch count.
set -u
O=$1; R=/tmp/r; mkdir -p $R; t0=$SECONDS
log() { echo "[$((SECONDS - t0)) s] $*" | tee -a $R/summary.txt; }
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
mkdir -p /tmp/pb && tar xJf build/popper-bundle.tar.xz -C /tmp/pb
B=/tmp/pb/popper-bundle; . $B/env.sh
CS=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null | head -1)
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
log "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader); $(nproc) cpus; $(head -3 $B/VERSION 2>/dev/null | tr '\n' ' ')"
T='*.FALSIFY_GEMM_015:*.FALSIFY_GEMM_016:*.FALSIFY_GEMM_017'
POPPER_CUDA_TC_KERNEL=wmma POPPER_REQUIRE_DEVICE=1 timeout 100 $CS --tool memcheck --leak-check no --error-exitcode 3 $B/bin/popper_contract_tests --gtest_brief=1 --gtest_filter="$T" > $R/memcheck-wmma.log 2>&1
log "memcheck (wmma kernel, GEMM-015..017) rc=$? $(grep -aoE 'ERROR SUMMARY: [0-9]+ error' $R/memcheck-wmma.log | tail -1)"
grep -aE '^========= (Invalid|Uninitialized|Race|Barrier|Misaligned)' -A2 $R/memcheck-wmma.log | head -12 >> $R/summary.txt
POPPER_GPU_CHECK_BUDGET=${BUDGET:-400} timeout $(( ${BUDGET:-400} + 30 )) $B/run.sh $R/gpu-check > $R/gpu-check.log 2>&1; log "gpu-check rc=$?"
cat $R/gpu-check/summary.txt >> $R/summary.txt 2>/dev/null
POPPER_DECODE_DEVICE=cuda timeout 45 $NCU --clock-control none --metrics gpu__time_duration.sum --csv --launch-count 400 $B/bin/bench_decode --benchmark_filter='^decode/device/canary_t8/q4k/threads:1/real_time$' --benchmark_min_time=0.01 > $R/ncu.csv 2> $R/ncu.err; log "ncu rc=$?"
python3 - $R/ncu.csv >> $R/summary.txt 2>&1 <<'PY'
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
h = rows[0]; k = h.index('Kernel Name'); v = h.index('Metric Value')
t = collections.defaultdict(list)
for r in rows[1:]: t[r[k].split('(')[0].split('::')[-1]].append(float(r[v].replace(',', '')) / 1000)
print("launches profiled:", sum(len(x) for x in t.values()))
for n, xs in t.items(): xs.sort(); print(f"{n:14s} n={len(xs):4d} median {xs[len(xs)//2]:8.2f} us min {xs[0]:8.2f} max {xs[-1]:8.2f}")
PY
log done
tar czf $O/r.tgz -C /tmp r; tail -80 $R/summary.txt
