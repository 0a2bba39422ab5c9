#!/usr/bin/env bash
# Installs everything popper needs to build, test, benchmark and fuzz, from
# Debian packages only. Idempotent: packages already present are skipped.
# This is the single place where the project's dependencies are written.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  ccache                             # compiler cache: a fresh clone (CI) reuses earlier builds' objects
  libgtest-dev libgmock-dev          # GoogleTest
  librapidcheck-dev                  # RapidCheck property tests
  libbenchmark-dev                   # Google Benchmark
  libyaml-cpp-dev                    # contract loader (keeps node marks)
  libeigen3-dev                      # dense oracles
  nlohmann-json3-dev                 # JSON reports and results
  libcli11-dev                       # popper CLI
  libfmt-dev                         # formatting
  libopenblas-dev liblapacke-dev     # CBLAS + LAPACKE: wrapped and ceiling tiers
  libblis-openmp-dev                 # BLIS: second GEMM ceiling vendor (optional at configure: POPPER_BLIS)
  clang libclang-rt-14-dev           # libFuzzer target and the sanitizer build (make asan: clang)
  libomp-dev                         # OpenMP runtime for clang builds (make asan)
  clang-format clang-tidy            # make format-check (.clang-format), make tidy (.clang-tidy)
  valgrind                           # instruction-count regression gate
  # --- Vulkan compute backend: loader + headers, lavapipe (Mesa's
  # CPU Vulkan device, so the shaders run here), GLSL -> SPIR-V compiler, vulkaninfo
  libvulkan-dev mesa-vulkan-drivers glslc vulkan-tools
  curl ca-certificates               # llama.cpp (ggml) packages from the npm registry, below
  qemu-user                          # the CPU matrix: tests as other x86-64 CPUs run them
  libxml2-utils                      # xmllint: the audit's JUnit XML checked against docs/junit.xsd
  patchelf file xz-utils             # make bundle: RUNPATHs of the packed programs, the bundle check
  chromium                           # headless: reports/index.html loaded and checked (scripts/report-check.sh)
  libtorch-dev                       # libtorch 1.13: the train family's peer tier and gradient oracle (optional at configure: POPPER_TORCH)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages already installed"
else
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# --- llama.cpp (ggml), pinned: the Q4_K oracle and the q4k bench ceiling -------
# Prebuilt C-ABI libraries from the npm registry (no Node.js needed to use them),
# each tarball's sha512 checked against the registry's dist.integrity AND the
# value pinned here; headers from the llama.cpp git bundle inside
# node-llama-cpp at the same version (its one commit pinned too). Unpacked into
# a cache outside the source tree (cmake/PopperGgml.cmake looks there):
#   ${POPPER_GGML_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/popper/ggml-3.22.1}/{cpu,vulkan,include}
# and cuda/ (143 MB, the ggml-cuda parity subject) only where `nvidia-smi -L`
# lists a GPU, or with POPPER_GGML_CUDA=1; beside them llama.cpp's LICENSE (MIT)
# and its licenses/ folder (the notices of the code it vendors), which make
# bundle packs with the libraries.
# POPPER_SKIP_GGML=1 skips this block (the ggml tests then report "requires ggml").
ggml_version=3.22.1
ggml_commit=de3ff815ea7d559ee917f063901b8986f038abc6
ggml_packages=(
  "@node-llama-cpp/linux-x64|cpu|bins/linux-x64|sha512-5uCCDNqWCNfaAm8aR/Uzxbo4HBpKgNF91kCHPepKhgMgV2OAmatoefbOlMihsqCiH2Od35E/eUHQCFbfRBJuOg=="
  "@node-llama-cpp/linux-x64-vulkan|vulkan|bins/linux-x64-vulkan|sha512-bBxqU+JOcBu1nb5Qj2zcMci+JByT1E8EajHvYodyNfVIPkEhXh+/HMwR1/BT7xP08YK0hks+kM8fglER0P8JEg=="
  "node-llama-cpp|source|llama|sha512-bltIipuWmc123H7tMIgDGKSsSrhmhlQYeVUC48XTjVW7XGJJiJJyCdlTMzQ/LiWoPkGDpcL4FviDpgw7qfTiDw=="
)
ggml_cuda_package="@node-llama-cpp/linux-x64-cuda|cuda|bins/linux-x64-cuda|sha512-8rQCjyNNLZJUFit+YpjwlC4hwkKgOMIkB2wuycKBf8NU2O3ySKbiWZQ8aw9ku2nUTXjSnUIrE6KB88itduTBuA=="
if [ "${POPPER_GGML_CUDA:-0}" = 1 ] || nvidia-smi -L >/dev/null 2>&1; then ggml_packages+=("$ggml_cuda_package"); fi
ggml_home="${POPPER_GGML_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/popper/ggml-$ggml_version}"
fetch_ggml() {
  local want_cuda=0
  [[ " ${ggml_packages[*]} " == *"|cuda|"* ]] && want_cuda=1
  if [ -f "$ggml_home/STAMP" ] && grep -qx "commit $ggml_commit" "$ggml_home/STAMP" && [ -s "$ggml_home/LICENSE" ] &&
     { [ "$want_cuda" = 0 ] || [ -f "$ggml_home/cuda/libggml-cuda.so" ]; }; then
    echo "install-deps: ggml $ggml_version already in $ggml_home"
    return 0
  fi
  command -v npm >/dev/null || { $SUDO apt-get install -y -qq --no-install-recommends npm; }
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  mkdir -p "$ggml_home"
  : > "$tmp/STAMP"
  for entry in "${ggml_packages[@]}"; do
    IFS='|' read -r name dest inner pinned <<<"$entry"
    local registry tarball got
    registry="$(npm view "$name@$ggml_version" dist.integrity)"
    tarball="$(npm view "$name@$ggml_version" dist.tarball)"
    [ "$registry" = "$pinned" ] || { echo "install-deps: $name@$ggml_version: registry integrity $registry differs from the pinned $pinned" >&2; return 1; }
    curl -fsSL --retry 3 -o "$tmp/$dest.tgz" "$tarball"
    got="$(node -e 'const c=require("crypto"),f=require("fs");process.stdout.write("sha512-"+c.createHash("sha512").update(f.readFileSync(process.argv[1])).digest("base64"))' "$tmp/$dest.tgz")"
    [ "$got" = "$registry" ] || { echo "install-deps: $name@$ggml_version: tarball sha512 $got does not match dist.integrity $registry" >&2; return 1; }
    mkdir -p "$tmp/$dest" && tar -xzf "$tmp/$dest.tgz" -C "$tmp/$dest"
    echo "package $name@$ggml_version $got" >> "$tmp/STAMP"
    if [ "$dest" = source ]; then
      git -c advice.detachedHead=false clone -q "$tmp/source/package/$inner/gitRelease.bundle" "$tmp/llama.cpp"
      [ "$(git -C "$tmp/llama.cpp" rev-parse HEAD)" = "$ggml_commit" ] || { echo "install-deps: gitRelease.bundle is not at $ggml_commit" >&2; return 1; }
      rm -rf "$ggml_home/include" && mkdir -p "$ggml_home/include"
      cp "$tmp/llama.cpp"/ggml/include/*.h "$tmp/llama.cpp"/include/llama.h "$ggml_home/include/"
      cp "$tmp/llama.cpp/LICENSE" "$ggml_home/LICENSE"
      rm -rf "$ggml_home/licenses"
      if [ -d "$tmp/llama.cpp/licenses" ]; then cp -r "$tmp/llama.cpp/licenses" "$ggml_home/licenses"; fi
    else
      rm -rf "${ggml_home:?}/$dest" && cp -r "$tmp/$dest/package/$inner" "$ggml_home/$dest"
    fi
  done
  echo "commit $ggml_commit" >> "$tmp/STAMP"
  mv "$tmp/STAMP" "$ggml_home/STAMP"
  echo "install-deps: ggml $ggml_version (llama.cpp $ggml_commit) in $ggml_home"
}
if [ "${POPPER_SKIP_GGML:-0}" != 1 ]; then fetch_ggml; fi
echo "install-deps: done"
