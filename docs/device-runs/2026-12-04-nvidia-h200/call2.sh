#!/bin/bash
# Device call 2: the contract tests, memcheck and audit after the pool fix; the decode's device tier alone on CUDA and Vulkan.
set -u
O=$1; R=/tmp/r2; mkdir -p $R; t0=$SECONDS
log() { echo "[$((SECONDS - t0)) s] $*" | tee -a $R/summary.txt; }
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
mkdir -p /tmp/pb && tar xJf build/popper-bundle.tar.xz -C /tmp/pb
B=/tmp/pb/popper-bundle; . $B/env.sh
log "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader); $(nproc) cpus"
POPPER_GPU_CHECK_BUDGET=160 timeout 185 $B/run.sh $R/gpu-check --steps tests,memcheck,audit > $R/gpu-check.log 2>&1; log "gpu-check tests,memcheck,audit rc=$?"
cat $R/gpu-check/summary.txt >> $R/summary.txt 2>/dev/null; tar czf $O/r2.tgz -C /tmp r2
for dev in cuda vulkan; do
  POPPER_REQUIRE_DEVICE=1 POPPER_DECODE_DEVICE=$dev timeout 55 $B/bin/popper bench compare --family decode --require-device --shapes canary_t8 --tiers device --threads 1 --source-dir $POPPER_DATA_DIR --contracts $POPPER_DATA_DIR/contracts --out $R/decode-$dev --budget 35 > $R/decode-$dev.log 2>&1; log "decode $dev rc=$?"
  grep -a '| device' $R/decode-$dev/bench-decode.md >> $R/summary.txt 2>/dev/null
done
$B/bin/popper bench merge $R/decode-cuda/bench-decode.csv $R/decode-vulkan/bench-decode.csv -o $R/decode-merged.csv --claims $POPPER_DATA_DIR/contracts --source-dir $POPPER_DATA_DIR > $R/decode-merge.log 2>&1
grep -a 'BENCH-MBP-00[35]' $R/decode-merge.log >> $R/summary.txt
log done
tar czf $O/r2.tgz -C /tmp r2; tail -40 $R/summary.txt
