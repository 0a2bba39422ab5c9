#!/usr/bin/env bash
# The bundle check (CI, no GPU needed): a bundle made by scripts/bundle.sh
#   - is at most POPPER_BUNDLE_MAX_MB (default 60) MiB;
#   - carries popper's LICENSE and THIRD_PARTY.md, and the license of every
#     library it packs (scripts/bundle-licenses-check.sh: a library without
#     one fails the check, named);
#   - unpacked in another directory, every program and library in it finds every
#     library it needs inside the bundle or among the machine's own (glibc,
#     libstdc++/libgcc, the CUDA driver, runtime and cuBLAS), with
#     LD_LIBRARY_PATH limited to the bundle;
#   - runs its contract tests there, in an empty environment, with the source
#     and build trees hidden (a private mount namespace binds an empty folder
#     over them; where that is not allowed the run says so): every test passes
#     or is skipped with its reason (device tests: requires cuda), none fails.
#   scripts/bundle-check.sh BUNDLE.tar.xz [SOURCE_DIR BUILD_DIR]
set -uo pipefail
tarball="$(realpath "$1")"
src="${2:-$(cd "$(dirname "$0")/.." && pwd)}"
build="${3:-$src/build}"
max_mb="${POPPER_BUNDLE_MAX_MB:-60}"
fail=0
bad() { echo "bundle-check: FAIL: $*"; fail=1; }

size=$(stat -c %s "$tarball")
echo "bundle-check: $(basename "$tarball") is $(awk -v s="$size" 'BEGIN {printf "%.1f", s / 1048576}') MiB (limit $max_mb)"
[ "$size" -le $((max_mb * 1024 * 1024)) ] || bad "over $max_mb MiB"

where="$(mktemp -d /tmp/popper-bundle-check.XXXXXX)"
trap 'rm -rf "$where"' EXIT
tar -C "$where" -xJf "$tarball" || { bad "cannot unpack"; exit 1; }
b="$where/popper-bundle"
for f in env.sh run.sh gpu-check.sh MANIFEST bin/popper bin/popper_contract_tests share/popper/contracts; do
  [ -e "$b/$f" ] || bad "missing $f"
done

# Licenses: every packed library has its own beside it (licenses/INDEX).
"$(dirname "$0")/bundle-licenses-check.sh" "$b" || bad "a packed library has no license in the bundle (named above)"

# Libraries: resolved inside the bundle or among the machine's own, never elsewhere.
. "$(dirname "$0")/bundle-system-libs.sh"
checked=0
while IFS= read -r -d '' f; do
  file -b "$f" | grep -q '^ELF' || continue
  checked=$((checked + 1))
  while read -r name arrow path rest; do
    if [ "$path" = "not" ]; then
      system_lib "$name" || bad "$(realpath --relative-to="$b" "$f"): $name not found"
    elif [ "$arrow" = "=>" ] && [ -n "$path" ] && [[ "$path" != "$b"/* ]] && ! system_lib "$name"; then
      bad "$(realpath --relative-to="$b" "$f"): $name resolves outside the bundle ($path)"
    fi
  done < <(env -i LD_LIBRARY_PATH="$b/lib" ldd "$f" 2>/dev/null)
done < <(find "$b/bin" "$b/lib" -type f -print0)
echo "bundle-check: $checked programs and libraries checked with ldd"

# The contract tests, from the unpacked bundle, sources hidden.
run_tests='cd "$1" && . ./env.sh && popper_contract_tests --gtest_brief=1 > "$2/tests.log" 2>&1'
hide=()
for d in "$src" "$build" "$HOME/.cache/popper"; do
  d="$(realpath -m "$d")"
  [ -d "$d" ] || continue
  nested=0
  for h in "${hide[@]}"; do [[ "$d" == "$h"/* ]] && nested=1; done
  [ "$nested" = 1 ] || hide+=("$d")  # inside a hidden folder: hidden with it
done
mkdir -p "$where/empty" "$where/out"
mounts=""
for d in "${hide[@]}"; do mounts+="mount --bind '$where/empty' '$d' && "; done
if unshare -m true 2>/dev/null; then
  env -i PATH=/usr/bin:/bin HOME="$where" unshare -m bash -c "${mounts} bash -c '$run_tests' _ '$b' '$where/out'"
  rc=$?
  echo "bundle-check: contract tests ran with ${hide[*]} hidden (exit $rc)"
else
  env -i PATH=/usr/bin:/bin HOME="$where" bash -c "$run_tests" _ "$b" "$where/out"
  rc=$?
  echo "bundle-check: contract tests ran (exit $rc); the source tree could not be hidden here (no mount namespace)"
fi
log="$where/out/tests.log"
passed=$(grep -aoE '^\[  PASSED  \] [0-9]+' "$log" | grep -oE '[0-9]+$' | tail -1)
skipped=$(grep -aoE '^\[  SKIPPED \] [0-9]+' "$log" | grep -oE '[0-9]+$' | tail -1)
echo "bundle-check: ${passed:-0} passed, ${skipped:-0} skipped"
grep -aE '^\[  SKIPPED \] [A-Za-z0-9_]+\.' "$log" | sed 's/^/  /' | head -20
if [ "$rc" -ne 0 ]; then
  grep -aE '^\[  FAILED  \] [A-Za-z0-9_]+\.' "$log" | sed 's/^/  /'
  grep -aB5 -E '^\[  FAILED  \] [A-Za-z0-9_]+\.[A-Za-z0-9_]+ \(' "$log" | head -40
  bad "contract tests failed in the unpacked bundle"
fi
[ "${passed:-0}" -gt 0 ] || bad "no contract test passed"

# popper peak --device finds its probe beside popper, not under the cache's
# folder, wherever the cache is. The build's CPU peak is valid here: only the
# device part runs, and declines without a device. OPENBLAS_CORETYPE is kept:
# it is part of the machine's fingerprint, and without it the cached peak would
# not match and the CPU would be measured again (16 s on 2 cores).
if [ -x "$b/bin/popper_peak_device" ]; then
  mkdir -p "$where/elsewhere"
  if [ -f "$build/peak.json" ]; then cp "$build/peak.json" "$where/elsewhere/"; fi
  peak_out="$(cd "$where" && env -i PATH=/usr/bin:/bin HOME="$where" ${OPENBLAS_CORETYPE:+OPENBLAS_CORETYPE="$OPENBLAS_CORETYPE"} bash -c '. "$1/env.sh" && popper peak --device --no-vendors --cache "$2/peak.json"' _ "$b" "$where/elsewhere" 2>&1)"
  if grep -q 'popper_peak_device not found' <<<"$peak_out"; then bad "popper peak --device did not find bin/popper_peak_device: $(tail -1 <<<"$peak_out")"
  else echo "bundle-check: popper peak --device found its probe ($(tail -1 <<<"$peak_out"))"; fi
fi
[ "$fail" -eq 0 ] && echo "bundle-check: PASS"
exit "$fail"
