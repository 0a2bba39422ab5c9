#!/usr/bin/env bash
# make bundle: everything a GPU machine needs to run popper's device checks,
# built here, in one relocatable archive:
#
#   popper-bundle/
#     bin/            the CLI, the contract tests, the bench suites and ceilings,
#                     popper_parity, popper_peak_device (RUNPATH $ORIGIN/../lib)
#     lib/            every shared library they load that a GPU machine with only
#                     the NVIDIA driver and CUDA may lack (the closure under ldd,
#                     plus the dlopen'ed Vulkan loader); glibc, libstdc++/libgcc
#                     and the CUDA driver, runtime and cuBLAS stay the machine's
#     lib/ggml/       llama.cpp's CPU and Vulkan backend packages (dlopen'ed)
#     share/popper/   the data they read: contracts, tests/corpus, config,
#                     bench/<family>/family.yaml, baselines; results/cpu-mutants.json,
#                     this build's own mutant results (make test's audit), when
#                     newer than its test binary: a device machine cannot take
#                     the decline paths, so gpu-check's audit counts them from here
#     <family>/       build artifacts read at run time (ptxas logs)
#     LICENSE, THIRD_PARTY.md   popper's license and its third-party notices
#     licenses/       the license of every library packed (Debian's copyright
#                     file of the package that installed it, llama.cpp's LICENSE
#                     for ggml) and of the code compiled into the programs, the
#                     texts those files cite from /usr/share/common-licenses, and
#                     INDEX: library -> license file -> package and version
#                     (scripts/bundle-licenses-check.sh holds the bundle to it)
#     env.sh          the environment (library and data paths) every run needs
#     run.sh [OUT]    gpu-check, the audit with device evidence and mutants, the
#                     GPU bench and popper peak --device, results under OUT
#     MANIFEST        what was packed, from which commit
#
#   scripts/bundle.sh [BUILD_DIR] [OUT.tar.xz]     (default build, BUILD_DIR/popper-bundle.tar.xz)
# Fails when the archive would exceed POPPER_BUNDLE_MAX_MB (default 60).
set -euo pipefail
src="$(cd "$(dirname "$0")/.." && pwd)"
build="$(cd "${1:-$src/build}" && pwd)"
out="${2:-$build/popper-bundle.tar.xz}"
max_mb="${POPPER_BUNDLE_MAX_MB:-60}"
command -v patchelf >/dev/null || { echo "bundle: patchelf is missing (scripts/install-deps.sh installs it)" >&2; exit 2; }
[ -x "$build/bin/popper_contract_tests" ] || { echo "bundle: $build/bin has no popper_contract_tests: build first (make build)" >&2; exit 2; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
stage="$work/popper-bundle"
mkdir -p "$stage/bin" "$stage/lib" "$stage/share/popper"

. "$(dirname "$0")/bundle-system-libs.sh"

# Every library packed and the file it came from (licenses/INDEX is made from it).
packed="$work/packed"
: >"$packed"
pack_lib() {  # SOURCE DEST_FILE
  local from
  from="$(realpath "$1")"
  # Found by ldd beside another packed library (ggml's backends): that one's origin.
  if [[ "$from" == "$(realpath "$stage")"/* ]]; then
    from="$(awk -F'\t' -v p="${from#"$(realpath "$stage")"/}" '$1 == p {print $2; exit}' "$packed")"
  fi
  cp -L "$1" "$2"
  printf '%s\t%s\n' "${2#"$stage"/}" "$from" >>"$packed"
}

# Copy every non-system library FILE needs (ldd resolves the whole closure) into DEST.
copy_closure() {
  local file="$1" dest="$2" name path
  while read -r name path; do
    [ -n "$path" ] && [ -f "$path" ] || continue
    system_lib "$name" && continue
    [ -e "$dest/$name" ] || pack_lib "$path" "$dest/$name"
  done < <(ldd "$file" 2>/dev/null | awk '/=>/ {print $1, $3}')
}

# Binaries: everything the build put in bin/ but the harness's own unit tests
# and stale outputs of renamed targets (only what this build's CMake knows).
targets="$(cmake --build "$build" --target help 2>/dev/null | sed -n 's/^\.\.\. //p')"
for f in "$build"/bin/*; do
  name="$(basename "$f")"
  [ -x "$f" ] && [ -f "$f" ] || continue
  # The libtorch peer (libpopper_train_torch.so, ceiling_torch_train_raw) stays out: with libtorch
  # and what it loads it is over 400 MiB; without it FALSIFY-TRAIN-006 reports "requires libtorch".
  case "$name" in popper_harness_tests|popper_fuzz_contract|libpopper_train_torch.so|ceiling_torch_train_raw) continue ;; esac
  grep -qx "$name" <<<"$targets" || continue
  case "$name" in
    *.so | *.so.*) pack_lib "$f" "$stage/bin/$name" ;;  # popper's own: its LICENSE
    *) cp "$f" "$stage/bin/" ;;
  esac
done

# llama.cpp's backend packages (loaded with dlopen: ldd does not see them).
ggml_cpu="$(grep -m1 '^POPPER_GGML_ROOT:' "$build/CMakeCache.txt" | cut -d= -f2-)"
if [ -n "$ggml_cpu" ] && [ -d "$ggml_cpu/cpu" ]; then
  mkdir -p "$stage/lib/ggml/cpu" "$stage/lib/ggml/vulkan"
  for f in "$ggml_cpu"/cpu/*.so; do pack_lib "$f" "$stage/lib/ggml/cpu/$(basename "$f")"; done
  if [ -f "$ggml_cpu/vulkan/libggml-vulkan.so" ]; then
    for f in libggml-vulkan.so libggml-base.so; do pack_lib "$ggml_cpu/vulkan/$f" "$stage/lib/ggml/vulkan/$f"; done
  fi
  if [ -d "$ggml_cpu/cuda" ]; then
    mkdir -p "$stage/lib/ggml/cuda"
    for f in "$ggml_cpu"/cuda/*.so; do pack_lib "$f" "$stage/lib/ggml/cuda/$(basename "$f")"; done
  fi
fi

# The Vulkan loader: dlopen'ed by popper's runtime and needed by ggml-vulkan.
vulkan="$(ldconfig -p | awk '/libvulkan\.so\.1 .*x86-64/ {found = $NF} END {print found}')"
if [ -n "$vulkan" ]; then pack_lib "$vulkan" "$stage/lib/libvulkan.so.1"; fi

for f in "$stage"/bin/* "$stage"/lib/ggml/*/*.so "$stage"/lib/libvulkan.so.1; do
  if [ -f "$f" ]; then copy_closure "$f" "$stage/lib"; fi
done
for f in "$stage"/bin/*; do patchelf --set-rpath '$ORIGIN/../lib' "$f"; done
for f in "$stage"/lib/*.so*; do patchelf --set-rpath '$ORIGIN' "$f" 2>/dev/null || true; done
for f in "$stage"/lib/ggml/*/*.so; do patchelf --set-rpath '$ORIGIN:$ORIGIN/../..' "$f" 2>/dev/null || true; done

# Licenses: most of the packed libraries' licenses require their notice to
# travel with the binary. Each library's is the copyright file of the Debian
# package that installed it, or llama.cpp's LICENSE for ggml (put in its cache
# by scripts/install-deps.sh); popper's own libraries are under its LICENSE.
lic="$stage/licenses"
mkdir -p "$lic"
cp "$src/LICENSE" "$src/THIRD_PARTY.md" "$stage/"
# The Debian package that installed FILE (dpkg knows a usr-merged file by the path it was installed under).
deb_package() {
  local p
  for p in "$1" "${1#/usr}"; do
    dpkg -S "$p" 2>/dev/null | grep -v '^diversion' | head -1 | sed 's/[:,].*//' | grep . && return 0
  done
  return 1
}
# Copies PACKAGE's copyright file (one copy per doc folder: libgomp1, libgfortran5 and
# libquadmath0 share gcc-12-base's) and the common-licenses texts it cites, which a
# machine other than Debian lacks; prints "licenses/<file> debian:<package> <version> (source ...)".
deb_license() {
  local pkg="$1" copyright name t
  copyright="/usr/share/doc/$pkg/copyright"
  [ -s "$copyright" ] || return 1
  name="$(basename "$(dirname "$(realpath "$copyright")")").copyright"
  cp -L "$copyright" "$lic/$name"
  for t in $(grep -oE '/usr/share/common-licenses/[A-Za-z0-9.+-]*[A-Za-z0-9+]' "$copyright" | sort -u); do
    if [ -f "$t" ]; then mkdir -p "$lic/common-licenses" && cp -L "$t" "$lic/common-licenses/"; fi
  done
  echo "licenses/$name debian:$pkg $(dpkg-query -W -f='${Version} (source ${source:Package} ${source:Version})' "$pkg")"
}
ggml_stamp_commit="$(sed -n 's/^commit //p' "${ggml_cpu:-/nonexistent}/STAMP" 2>/dev/null || true)"
if [ -n "$ggml_cpu" ] && [ -d "$ggml_cpu/cpu" ] && [ ! -d "$ggml_cpu/licenses" ]; then
  echo "bundle: $ggml_cpu has llama.cpp's LICENSE but not the notices of the code it vendors (licenses/):" \
    "remove $ggml_cpu/STAMP and run scripts/install-deps.sh to fetch them" >&2
fi
license_line() {  # LIBRARY_IN_BUNDLE SOURCE_FILE
  local rel="$1" from="$2" pkg line
  if [ -n "$ggml_cpu" ] && [[ "$from" == "$(realpath "$ggml_cpu")"/* ]]; then
    [ -s "$ggml_cpu/LICENSE" ] || return 1
    # llama.cpp's LICENSE, then the notices of the code it vendors (its licenses/ folder).
    if [ ! -f "$lic/llama.cpp.LICENSE" ]; then
      {
        cat "$ggml_cpu/LICENSE"
        for t in "$ggml_cpu"/licenses/*; do
          if [ -f "$t" ]; then printf '\n\n---- llama.cpp licenses/%s ----\n\n' "$(basename "$t")" && cat "$t"; fi
        done
      } >"$lic/llama.cpp.LICENSE"
    fi
    echo "$rel licenses/llama.cpp.LICENSE llama.cpp ${ggml_stamp_commit:-?} (npm @node-llama-cpp packages)"
  elif [[ "$from" == "$(realpath "$build")"/* || "$from" == "$(realpath "$src")"/* ]]; then
    echo "$rel LICENSE popper"
  elif pkg="$(deb_package "$from")" && line="$(deb_license "$pkg")"; then
    echo "$rel $line"
  else
    return 1
  fi
}
# Code compiled into the programs rather than packed as a library: static
# (GoogleTest, RapidCheck) and header-only (CLI11, nlohmann/json, Eigen, the
# Vulkan headers) libraries, whose notices must travel with the programs too.
compiled_in=(libgtest-dev libgmock-dev librapidcheck-dev libcli11-dev nlohmann-json3-dev libeigen3-dev libvulkan-dev)
{
  echo "# The license of every library this bundle packs (scripts/bundle.sh), checked by"
  echo "# scripts/bundle-licenses-check.sh. Paths are relative to the bundle's root."
  echo "# library  license-file  origin (Debian package and version, with its source package)"
  while IFS=$'\t' read -r rel from; do
    license_line "$rel" "$from" || echo "bundle: no license found for $rel (from $from): it is packed without one" >&2
  done <"$packed"
  for pkg in "${compiled_in[@]}"; do
    if line="$(deb_license "$pkg")"; then echo "compiled-in $line"; fi
  done
} >"$lic/INDEX"
"$src/scripts/bundle-licenses-check.sh" "$stage" || { echo "bundle: a packed library has no license (above)" >&2; exit 1; }

# Data the binaries read (popper/runtime_paths.hpp) and build artifacts.
data="$stage/share/popper"
cp -r "$src/contracts" "$src/config" "$src/baselines" "$data/"
mkdir -p "$data/tests" && cp -r "$src/tests/corpus" "$data/tests/"
for fam in "$src"/bench/*/family.yaml; do
  mkdir -p "$data/bench/$(basename "$(dirname "$fam")")" && cp "$fam" "$data/bench/$(basename "$(dirname "$fam")")/"
done
for log in "$build"/*/*ptxas*.log; do
  if [ ! -f "$log" ]; then continue; fi
  mkdir -p "$stage/$(basename "$(dirname "$log")")" && cp "$log" "$stage/$(basename "$(dirname "$log")")/"
done
cpu_mutants="$build/results/audit/mutants.json"
if [ -f "$cpu_mutants" ] && [ "$cpu_mutants" -nt "$build/bin/popper_contract_tests" ]; then
  mkdir -p "$data/results" && cp "$cpu_mutants" "$data/results/cpu-mutants.json"
else
  echo "bundle: no mutant results newer than $build/bin/popper_contract_tests (run make test first): gpu-check's audit will count the decline-path mutants as not run" >&2
fi
cp "$src/scripts/bundle-env.sh" "$stage/env.sh"
cp "$src/scripts/gpu-check.sh" "$stage/gpu-check.sh"
cp "$src/scripts/bundle-run.sh" "$stage/run.sh"
chmod +x "$stage/run.sh" "$stage/gpu-check.sh"

{
  echo "popper bundle"
  echo "commit $(git -C "$src" rev-parse HEAD 2>/dev/null || echo unknown)$(git -C "$src" status --porcelain --untracked-files=no 2>/dev/null | grep -q . && echo -dirty)"
  echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -n), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
  # The compiler CMake enabled CUDA with (PopperCuda.cmake sets it as a plain variable: not in the cache).
  nvcc="$(sed -n 's/^set(CMAKE_CUDA_COMPILER "\(.*\)")$/\1/p' "$build"/CMakeFiles/*/CMakeCUDACompiler.cmake 2>/dev/null | head -1 || true)"
  echo "cuda ${nvcc:+$("$nvcc" --version 2>/dev/null | tail -1)}${nvcc:-none (the device code is not in this bundle)}"
  echo "files:"
  (cd "$stage" && find . -type f ! -name MANIFEST -printf '%s %p\n' | sort -k2)
} > "$stage/MANIFEST"

mkdir -p "$(dirname "$out")"
tmp="$out.tmp.$$"
# xz -3 rather than -6: 19 s instead of 45 on 2 cores, for 35 MiB instead of 30, far inside what
# a device call carries.
tar -C "$work" -cf - popper-bundle | xz -T0 -3 > "$tmp"
size=$(stat -c %s "$tmp")
if [ "$size" -gt $((max_mb * 1024 * 1024)) ]; then
  rm -f "$tmp"
  echo "bundle: $((size / 1048576)) MiB is over the ${max_mb} MiB limit (POPPER_BUNDLE_MAX_MB)" >&2
  exit 1
fi
mv "$tmp" "$out"
echo "bundle: $out, $(awk -v s="$size" 'BEGIN {printf "%.1f", s / 1048576}') MiB ($(ls "$stage/bin" | wc -l) programs, $(find "$stage/lib" -name '*.so*' | wc -l) libraries)"
