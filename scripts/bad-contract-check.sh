#!/usr/bin/env bash
# Every popper command that reads a contract, on every input in
# tests/corpus/fuzz (inputs that once hung or crashed the loader), under a
# memory and a time limit: each must exit 1 or 2 with a positioned
# POP-V diagnostic and write nothing. A limit reached is a hang or a runaway
# allocation, an exit of 128+ a crash: both fail.
#   scripts/bad-contract-check.sh POPPER_BIN SOURCE_DIR WORK_DIR
set -uo pipefail
popper=$1
src=$2
work=$3
limit_s=${POPPER_BAD_INPUT_SECONDS:-20}  # a hang guard, not a speed test: these take milliseconds
limit_kb=${POPPER_BAD_INPUT_KB:-2097152}  # 2 GiB of address space
rm -rf "$work" && mkdir -p "$work"
failures=0 runs=0

# run NAME EXPECTED_EXITS CMD... : run under the limits, check exit code and output.
run() {
  local name=$1 expected=$2
  shift 2
  local out="$work/out" code
  (ulimit -v "$limit_kb"; timeout -k 5 "$limit_s" "$@") >"$out" 2>&1
  code=$?
  runs=$((runs + 1))
  if [ "$code" -eq 124 ] || [ "$code" -eq 137 ]; then
    echo "FAIL $name: no answer within ${limit_s} s (a hang): $*"; failures=$((failures + 1)); return
  fi
  if [[ " $expected " != *" $code "* ]]; then
    echo "FAIL $name: exit $code, expected one of {$expected}: $*"; sed 's/^/    /' "$out" | head -5
    failures=$((failures + 1)); return
  fi
  if ! grep -Eq '(:[0-9]+:[0-9]+: error\[POP-V0|"code": *"POP-V0)' "$out"; then
    echo "FAIL $name: no positioned POP-V diagnostic in the output: $*"; sed 's/^/    /' "$out" | head -5
    failures=$((failures + 1)); return
  fi
}

for input in "$src"/tests/corpus/fuzz/*; do
  base=$(basename "$input")
  [ "$base" = README.md ] && continue
  dir="$work/$base"
  mkdir -p "$dir/contracts"
  f="$dir/contracts/input.yaml"
  cp "$input" "$f"
  run "$base validate" "1" "$popper" validate "$f"
  run "$base validate json" "1" "$popper" validate --format json "$f"
  run "$base validate pv" "1" "$popper" validate --profile pv "$f"
  run "$base migrate" "1" "$popper" migrate "$f"
  run "$base migrate --write" "1" "$popper" migrate --write "$f"
  cmp -s "$input" "$f" || { echo "FAIL $base: migrate --write changed a file it could not read"; failures=$((failures + 1)); }
  run "$base scaffold" "1" "$popper" scaffold "$f" -o "$dir/gen.cpp"
  [ -e "$dir/gen.cpp" ] && { echo "FAIL $base: scaffold wrote $dir/gen.cpp for a bad contract"; failures=$((failures + 1)); }
  run "$base graph" "1" "$popper" graph "$f"
  echo '{"testsuites": []}' >"$dir/results.json"
  echo '{}' >"$dir/bindings.json"
  run "$base audit" "1" "$popper" audit --contracts "$dir/contracts" --results "$dir/results.json" \
    --bindings "$dir/bindings.json" -o "$dir/reports"
done
echo "bad-contract-check: $runs command runs, $failures failure(s)"
[ "$failures" -eq 0 ]
