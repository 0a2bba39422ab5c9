#!/usr/bin/env bash
# Installs everything popper needs to build, test, benchmark and fuzz, from
# Debian packages only. Idempotent: packages already present are skipped.
# This is the single place where the project's dependencies are written.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
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
  clang libclang-rt-14-dev           # libFuzzer target and sanitizers
  valgrind                           # instruction-count regression gate
  qemu-user                          # the CPU matrix: tests as other x86-64 CPUs run them
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages already installed"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: done"
