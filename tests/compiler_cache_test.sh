#!/usr/bin/env bash
# The compiler cache is used on a machine whose ccache has never run (ctest
# compiler_cache_fresh_dir): a scratch project that includes
# cmake/PopperCompilerCache.cmake, configured with a cache directory that does
# not exist yet, must compile through ccache. Exit 77 (skipped) without ccache.
#   tests/compiler_cache_test.sh CMAKE_MODULE_DIR
set -uo pipefail
module="$(cd "${1:?usage: compiler_cache_test.sh CMAKE_MODULE_DIR}" && pwd)/PopperCompilerCache.cmake"
command -v ccache >/dev/null 2>&1 || { echo "skipped: requires ccache"; exit 77; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/src"
cat >"$work/src/CMakeLists.txt" <<CML
cmake_minimum_required(VERSION 3.25)
project(cache_probe LANGUAGES C)
include("$module")
message(STATUS "launcher: \${CMAKE_C_COMPILER_LAUNCHER}")
CML
out=$(CCACHE_DIR="$work/never-ran/ccache" cmake -S "$work/src" -B "$work/build" 2>&1)
if grep -q "launcher: .*ccache" <<<"$out"; then
  echo "ok: a fresh cache directory is created and used"
  exit 0
fi
echo "FAIL: with a cache directory that did not exist, the build compiles without ccache:"
grep -i ccache <<<"$out"
exit 1
