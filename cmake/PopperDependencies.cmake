# Every third-party dependency, from Debian packages (scripts/install-deps.sh).
# The harness's first (all a POPPER_HARNESS_ONLY build needs), then the kernels'.
find_package(Threads REQUIRED)
find_package(yaml-cpp REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(fmt REQUIRED)
find_package(GTest REQUIRED)
# Google Benchmark: under popper::bench (popper/bench.hpp), the API a bench
# suite is written with. A harness-only build without it installs no bench API.
find_package(benchmark QUIET)

# yaml-cpp 0.7 exports the target as 'yaml-cpp'; later versions as 'yaml-cpp::yaml-cpp'.
if(TARGET yaml-cpp::yaml-cpp)
  set(POPPER_YAML_TARGET yaml-cpp::yaml-cpp)
else()
  set(POPPER_YAML_TARGET yaml-cpp)
endif()
if(POPPER_HARNESS_ONLY)
  return()
endif()

find_package(rapidcheck REQUIRED)
if(NOT benchmark_FOUND)
  message(FATAL_ERROR "popper's own benchmarks need Google Benchmark (libbenchmark-dev, scripts/install-deps.sh)")
endif()
find_package(Eigen3 3.3 REQUIRED NO_MODULE)
find_package(OpenMP REQUIRED COMPONENTS CXX)
find_package(PkgConfig REQUIRED)
pkg_check_modules(OPENBLAS REQUIRED IMPORTED_TARGET openblas)
pkg_check_modules(LAPACKE REQUIRED IMPORTED_TARGET lapacke)
include(PopperVulkan)  # POPPER_HAVE_VULKAN: GLSL compute shaders -> SPIR-V (glslc), loader opened at run time
include(PopperGgml)    # POPPER_HAVE_GGML: llama.cpp (ggml) packages as Q4_K oracle and q4k ceiling
include(PopperTorch)   # POPPER_HAVE_TORCH: libtorch as the training step's peer tier and gradient oracle

# ---- BLIS: optional second GEMM ceiling vendor (ceiling/blis_*.c) ----
# POPPER_BLIS=AUTO (default) uses BLIS when found, ON requires it, OFF never
# looks. Debian's libblis-*-dev put blis.h and libblis.so under a per-threading
# folder (blis-openmp, blis-pthread, blis-serial); the OpenMP build is preferred.
set(POPPER_BLIS "AUTO" CACHE STRING "AUTO | ON | OFF: build the BLIS GEMM ceiling")
set_property(CACHE POPPER_BLIS PROPERTY STRINGS AUTO ON OFF)
set(POPPER_HAVE_BLIS OFF)
if(NOT POPPER_BLIS STREQUAL "OFF")
  set(_blis_suffixes blis-openmp blis-pthread blis-serial blis)
  find_path(POPPER_BLIS_INCLUDE_DIR blis.h
    PATHS /usr/include/${CMAKE_LIBRARY_ARCHITECTURE} /usr/local/include
    PATH_SUFFIXES ${_blis_suffixes})
  find_library(POPPER_BLIS_LIBRARY NAMES blis
    PATHS /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE} /usr/local/lib
    PATH_SUFFIXES ${_blis_suffixes})
  if(POPPER_BLIS_INCLUDE_DIR AND POPPER_BLIS_LIBRARY)
    set(POPPER_HAVE_BLIS ON)
    add_library(popper_blis INTERFACE)
    target_include_directories(popper_blis INTERFACE ${POPPER_BLIS_INCLUDE_DIR})
    target_link_libraries(popper_blis INTERFACE ${POPPER_BLIS_LIBRARY} Threads::Threads m)
    message(STATUS "popper: BLIS ${POPPER_BLIS_LIBRARY} (GEMM ceiling vendor)")
  elseif(POPPER_BLIS STREQUAL "ON")
    message(FATAL_ERROR "POPPER_BLIS=ON but BLIS was not found (Debian: apt-get install libblis-openmp-dev)")
  else()
    message(STATUS "popper: BLIS not found; the GEMM ceiling uses OpenBLAS only (install libblis-openmp-dev)")
  endif()
endif()
