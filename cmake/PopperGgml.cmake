# llama.cpp (ggml) as a pinned external: POPPER_GGML = AUTO | ON | OFF.
#
# scripts/install-deps.sh fetches @node-llama-cpp/linux-x64@3.22.1 and
# @node-llama-cpp/linux-x64-vulkan@3.22.1 from the npm registry (sha512 checked
# against dist.integrity), and the headers from the llama.cpp git bundle inside
# node-llama-cpp@3.22.1, into a cache outside the source tree:
#   POPPER_GGML_ROOT (default: $POPPER_GGML_HOME, else
#                     ${XDG_CACHE_HOME:-$HOME/.cache}/popper/ggml-3.22.1)
#     include/   ggml.h ggml-backend.h gguf.h llama.h ...
#     cpu/       libggml-base.so libggml.v0.5.0.so libllama.v0.5.0.so libggml-cpu-<arch>.so ...
#     vulkan/    the same plus libggml-vulkan.so
# Nothing of llama.cpp is in the repository. The CPU backends are separate
# libraries per micro-architecture, loaded at run time by path
# (ggml_backend_load), so the choice of variant is popper's and explicit.
#
#     cuda/      libggml-cuda.so ... (only where make gpu-check installed it)
# The vulkan and cuda packages hold the same libllama and registry as the cpu
# one; popper links the cpu package's and loads libggml-vulkan.so /
# libggml-cuda.so from their folders as backends (ggml_backend_load).
#
# Sets POPPER_HAVE_GGML and, when found, the imported targets
#   popper::ggml        libggml-base.so + libggml.v0.5.0.so + headers
#   popper::llama       libllama.v0.5.0.so (+ popper::ggml)
# and popper_use_ggml(<target>) which links popper::llama and defines
# POPPER_HAVE_GGML=1, POPPER_GGML_{CPU,VULKAN,CUDA}_DIR, POPPER_GGML_VERSION.
set(POPPER_GGML "AUTO" CACHE STRING "AUTO | ON | OFF")
set_property(CACHE POPPER_GGML PROPERTY STRINGS AUTO ON OFF)
set(POPPER_GGML_VERSION "3.22.1")
if(DEFINED ENV{POPPER_GGML_HOME})
  set(_popper_ggml_default "$ENV{POPPER_GGML_HOME}")
elseif(DEFINED ENV{XDG_CACHE_HOME})
  set(_popper_ggml_default "$ENV{XDG_CACHE_HOME}/popper/ggml-${POPPER_GGML_VERSION}")
else()
  set(_popper_ggml_default "$ENV{HOME}/.cache/popper/ggml-${POPPER_GGML_VERSION}")
endif()
set(POPPER_GGML_ROOT "${_popper_ggml_default}" CACHE PATH "unpacked llama.cpp (ggml) packages, see scripts/install-deps.sh")
set(POPPER_HAVE_GGML OFF)

if(NOT POPPER_GGML STREQUAL "OFF")
  set(_popper_ggml_missing)
  foreach(f include/ggml.h include/ggml-backend.h include/gguf.h include/llama.h
            cpu/libggml-base.so cpu/libggml.v0.5.0.so cpu/libllama.v0.5.0.so cpu/libggml-cpu-x64.so)
    if(NOT EXISTS ${POPPER_GGML_ROOT}/${f})
      list(APPEND _popper_ggml_missing ${f})
    endif()
  endforeach()
  if(NOT _popper_ggml_missing)
    set(POPPER_HAVE_GGML ON)
    add_library(popper::ggml_base SHARED IMPORTED)
    set_target_properties(popper::ggml_base PROPERTIES
      IMPORTED_LOCATION ${POPPER_GGML_ROOT}/cpu/libggml-base.so
      INTERFACE_INCLUDE_DIRECTORIES ${POPPER_GGML_ROOT}/include)
    add_library(popper::ggml_registry SHARED IMPORTED)
    set_target_properties(popper::ggml_registry PROPERTIES IMPORTED_LOCATION ${POPPER_GGML_ROOT}/cpu/libggml.v0.5.0.so)
    add_library(popper::ggml INTERFACE IMPORTED)
    set_target_properties(popper::ggml PROPERTIES INTERFACE_LINK_LIBRARIES "popper::ggml_base;popper::ggml_registry")
    add_library(popper::llama SHARED IMPORTED)
    set_target_properties(popper::llama PROPERTIES
      IMPORTED_LOCATION ${POPPER_GGML_ROOT}/cpu/libllama.v0.5.0.so
      INTERFACE_LINK_LIBRARIES popper::ggml)
    message(STATUS "popper: ggml ${POPPER_GGML_VERSION} from ${POPPER_GGML_ROOT}")
  elseif(POPPER_GGML STREQUAL "ON")
    message(FATAL_ERROR "POPPER_GGML=ON but ${POPPER_GGML_ROOT} lacks: ${_popper_ggml_missing}; "
                        "run scripts/install-deps.sh or set POPPER_GGML_ROOT")
  else()
    message(STATUS "popper: ggml not found in ${POPPER_GGML_ROOT}; ggml tests will report 'requires ggml'")
  endif()
endif()

function(popper_use_ggml target)
  if(POPPER_HAVE_GGML)
    target_link_libraries(${target} PRIVATE popper::llama)
    target_compile_definitions(${target} PRIVATE POPPER_HAVE_GGML=1
      POPPER_GGML_CPU_DIR="${POPPER_GGML_ROOT}/cpu" POPPER_GGML_VULKAN_DIR="${POPPER_GGML_ROOT}/vulkan"
      POPPER_GGML_CUDA_DIR="${POPPER_GGML_ROOT}/cuda"
      POPPER_GGML_VERSION="${POPPER_GGML_VERSION}")
  else()
    target_compile_definitions(${target} PRIVATE POPPER_HAVE_GGML=0)
  endif()
endfunction()
