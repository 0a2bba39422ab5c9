#!/bin/bash
# Device call 1: the resident CUDA decode's new kernels: correctness, memcheck, speed, per-kernel times.
set -u
O=$1; R=/tmp/r; mkdir -p $R; t0=$SECONDS
log() { echo "[$((SECONDS - t0)) s] $*" | tee -a $R/summary.txt; }
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
mkdir -p /tmp/pb && tar xJf build/popper-bundle.tar.xz -C /tmp/pb
B=/tmp/pb/popper-bundle; . $B/env.sh
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1); CS=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null | head -1)
nvidia-smi > $R/nvidia-smi.txt 2>&1; log "$(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader)"
POPPER_REQUIRE_DEVICE=1 timeout 120 $B/bin/popper_contract_tests --gtest_filter='*.FALSIFY_MBP_012' > $R/mbp012.log 2>&1; log "MBP-012 rc=$? $(grep -aE '^\[  (PASSED|FAILED) ' $R/mbp012.log | tr '\n' ' ')"
grep -aiE 'rel|warp32|evidence' $R/mbp012.log | head -20 >> $R/summary.txt
POPPER_REQUIRE_DEVICE=1 timeout 120 $CS --tool memcheck --leak-check no --error-exitcode 3 $B/bin/popper_contract_tests --gtest_brief=1 --gtest_filter='*.FALSIFY_MBP_012' > $R/memcheck.log 2>&1; log "memcheck rc=$? $(grep -aoE 'ERROR SUMMARY: [0-9]+ error' $R/memcheck.log | tail -1)"
POPPER_REQUIRE_DEVICE=1 POPPER_DECODE_DEVICE=cuda timeout 150 $B/bin/popper bench compare --family decode --require-device --shapes canary_t8 --tiers hand,device --threads 1 --source-dir $POPPER_DATA_DIR --contracts $POPPER_DATA_DIR/contracts --out $R/decode-cuda --budget 110 > $R/decode-cuda.log 2>&1; log "decode cuda rc=$?"
cat $R/decode-cuda/bench-decode.md >> $R/summary.txt 2>/dev/null
grep -a 'BENCH-' $R/decode-cuda.log >> $R/summary.txt
POPPER_DECODE_DEVICE=cuda timeout 100 $NCU --clock-control none --metrics gpu__time_duration.sum --csv --launch-count 250 $B/bin/bench_decode --benchmark_filter='^decode/device/canary_t8/q4k/threads:1/real_time$' --benchmark_min_time=0.01s > $R/ncu.csv 2> $R/ncu.err; log "ncu rc=$?"
python3 - $R/ncu.csv >> $R/summary.txt 2>&1 <<'PY'
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
h = rows[0]; k = h.index('Kernel Name'); v = h.index('Metric Value'); u = h.index('Metric Unit')
t = collections.defaultdict(list)
for r in rows[1:]:
    x = float(r[v].replace(',', '')); x = x / 1000 if r[u] == 'nsecond' else x
    t[r[k].split('(')[0].split('::')[-1]].append(x)
for n, xs in t.items(): xs.sort(); print(f'{n:12s} n={len(xs):4d} median {xs[len(xs)//2]:8.2f} us  min {xs[0]:8.2f}  max {xs[-1]:8.2f}  sum {sum(xs):9.1f} us')
PY
log done
tar czf $O/r.tgz -C /tmp r; tail -40 $R/summary.txt
