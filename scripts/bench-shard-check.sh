#!/usr/bin/env bash
# bench compare --shard K/N and bench merge on a real family: two shards,
# merged, must hold exactly the rows of the unsharded run (same keys, nothing
# twice). Short timings (it checks the row set, not the speed), and a budget
# of 1 s, so no inconclusive claim is measured again in more trials.
# usage: scripts/bench-shard-check.sh [BUILD_DIR] [FAMILY]   (default gemm: three gate shapes)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
FAMILY=${2:-gemm}
POPPER=$BUILD/bin/popper
out=$(mktemp -d /tmp/popper-shard.XXXXXX)
trap 'rm -rf "$out"' EXIT
quick=(--family "$FAMILY" --shapes gate --build-dir "$BUILD" --trials 2 --reps 2 --min-time 0.01 --threads 1 --no-core-types --budget 1)
"$POPPER" bench compare "${quick[@]}" --out "$out/all" > "$out/all.log" 2>&1 || { tail "$out/all.log"; exit 1; }
# The shards run as the Slurm array example runs them (examples/distributed/bench-array.sbatch).
for task in 0 1; do
  SLURM_ARRAY_TASK_ID=$task SLURM_ARRAY_TASK_COUNT=2 POPPER=$POPPER FAMILY=$FAMILY SHAPES=gate RESULTS=$out \
    POPPER_BENCH_ARGS="${quick[*]:4}" examples/distributed/bench-array.sbatch > "$out/s$task.log" 2>&1 ||
    { tail "$out/s$task.log"; exit 1; }
done
# --claims judges the contracts' claims on the merge (bench-claims.json beside it).
"$POPPER" bench merge "$out/$FAMILY-shard-0/bench-$FAMILY.csv" "$out/$FAMILY-shard-1/bench-$FAMILY.csv" \
  -o "$out/merged.csv" --claims contracts --build-dir "$BUILD" > "$out/merge.log" 2>&1 || { tail "$out/merge.log"; exit 1; }
rows() { grep -v '^#' "$1" | tail -n +2 | cut -d, -f1-7 | sort; }
if ! diff <(rows "$out/all/bench-$FAMILY.csv") <(rows "$out/merged.csv"); then
  echo "bench-shard-check: the merged shards' rows differ from the unsharded run's (above)" >&2; exit 1
fi
# Claims judged on the merged shards (bench merge --claims) cover what the
# unsharded run's cover: same ids, each measured (met, not met, inconclusive)
# or not in the same way; the timings, and so met or not, may differ — and so
# may partially_measured, which a failing or straddling group outranks: the
# groups not measured are compared on their own.
coverage() {  # id, verdict class, and the groups not measured ("X and N more"), from bench-claims.json
  grep -E '"(detail|id|verdict)"' "$1" | sed -E 's/^ *"[a-z]+": "(.*)",?$/\1/' | paste - - - |
    sed -E 's/^([^\t]*not measured \(or not verified\): ([^;\t]*))?[^\t]*\t/\2\t/' |
    sed -E 's/\t(met|not_met|inconclusive|partially_measured)$/\tmeasured/' | sort
}
if ! diff <(coverage "$out/all/bench-claims.json") <(coverage "$out/bench-claims.json"); then
  echo "bench-shard-check: claims judged on the merged shards cover other groups than the unsharded run's (above)" >&2; exit 1
fi
echo "bench-shard-check: $FAMILY: 2 shards merged = unsharded run, $(rows "$out/merged.csv" | wc -l) rows, $(coverage "$out/bench-claims.json" | wc -l) claims judged alike: PASS"
