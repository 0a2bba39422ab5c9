#!/usr/bin/env bash
# A mutant of one CPU path must be not_run wherever that path cannot run: a
# mutation point asked on another path counts hits there, and the audit then
# reports it survived on a CPU that lacks the path (an AVX2-only EPYC failed
# `make test` on q4k-packed-high-nibble-scale, an AVX-512 mutant asked in
# ISA-neutral code). POPPER_ISA_MAX caps the kernels below the path, on any
# CPU: capped at avx2 every cpu:avx512 mutant, and capped at scalar every
# cpu:avx2 and cpu:avx512 mutant, must come back not_run.
#   scripts/mutant-paths-check.sh POPPER_BIN CONTRACT_TEST_BIN CONTRACTS_DIR WORK_DIR
set -uo pipefail
popper=$1
tests=$2
contracts=$3
work=$4
rm -rf "$work" && mkdir -p "$work"
failures=0

check() {  # cap, then the paths it must leave unreached
  local cap=$1
  shift
  local paths=() p
  for p in "$@"; do paths+=(--paths "$p"); done
  local out="$work/cap-$cap.out"
  if ! "$popper" mutants --contracts "$contracts" --test-binary "$tests" --site "native:isa-max-$cap" \
      --env POPPER_ISA_MAX="$cap" "${paths[@]}" -o "$work/cap-$cap.json" >"$out" 2>&1; then
    echo "FAIL popper mutants (POPPER_ISA_MAX=$cap) exited non-zero: $(tail -3 "$out")"
    failures=$((failures + 1))
    return
  fi
  local runs reached
  runs=$(grep -cE '^\[[0-9]+/[0-9]+\] ' "$out")
  reached=$(grep -E '^\[[0-9]+/[0-9]+\] ' "$out" | grep -v ': not_run — ')
  if [ "$runs" -eq 0 ]; then
    echo "FAIL POPPER_ISA_MAX=$cap: no mutant of $* was run"
    failures=$((failures + 1))
  elif [ -n "$reached" ]; then
    echo "FAIL POPPER_ISA_MAX=$cap: mutants of $* judged although their path cannot run:"
    echo "$reached"
    failures=$((failures + 1))
  else
    echo "ok   POPPER_ISA_MAX=$cap: $runs mutant(s) of $* not_run"
  fi
}

check avx2 cpu:avx512
check scalar cpu:avx2 cpu:avx512
[ "$failures" -eq 0 ] || exit 1
