# Benchmarking a project's own kernels with an installed popper
# (find_package(popper) includes this file when popper::bench is installed).
#
# popper_add_bench_family(<family> DESCRIPTOR <family.yaml>
#                         SUITE_SOURCES <file>... [SUITE_LIBRARIES <lib>...]
#                         [CEILING_SOURCES <file>...] [CEILING_LIBRARIES <lib>...]
#                         [CONTRACTS <dir>])
#   The suite: executable bench_<family> from SUITE_SOURCES (written with
#   popper/bench.hpp), linked with popper::bench and SUITE_LIBRARIES. The
#   descriptor's `executable:` must name it.
#   The ceilings: one executable ceiling_<stem> per CEILING_SOURCES file
#   (plain C over popper/ceiling_cli.h), linked with CEILING_LIBRARIES; the
#   descriptor's `ceilings:` lists the stems.
#   Every program goes to <build>/bin, and the descriptor to
#   <build>/popper-bench/<family>/family.yaml with the tree it belongs to
#   appended (source_dir, build_dir, contracts: CONTRACTS, default
#   <source>/contracts). `popper bench compare|check|gate|baseline --family
#   <family>` run in that build directory (or given --build-dir, or the
#   descriptor's path as --family) then find the family, its programs, its
#   contracts' claims and its baselines (<source>/baselines).

function(popper_add_bench_family family)
  cmake_parse_arguments(ARG "" "DESCRIPTOR;CONTRACTS" "SUITE_SOURCES;SUITE_LIBRARIES;CEILING_SOURCES;CEILING_LIBRARIES"
                        ${ARGN})
  if(NOT family MATCHES "^[a-z][a-z0-9_]*$")
    message(FATAL_ERROR "popper_add_bench_family: family '${family}' must be lower-case letters, digits and '_'")
  endif()
  if(NOT ARG_DESCRIPTOR OR NOT ARG_SUITE_SOURCES)
    message(FATAL_ERROR "popper_add_bench_family(${family}): DESCRIPTOR and SUITE_SOURCES are required")
  endif()
  if(NOT TARGET popper::bench)
    message(FATAL_ERROR "popper_add_bench_family(${family}): this popper was installed without its bench API "
                        "(Google Benchmark was not found when it was built)")
  endif()
  get_filename_component(descriptor ${ARG_DESCRIPTOR} ABSOLUTE)
  if(NOT EXISTS ${descriptor})
    message(FATAL_ERROR "popper_add_bench_family(${family}): no descriptor ${descriptor}")
  endif()
  if(ARG_CONTRACTS)
    get_filename_component(contracts ${ARG_CONTRACTS} ABSOLUTE)
  else()
    set(contracts ${CMAKE_SOURCE_DIR}/contracts)
  endif()

  set(bin ${CMAKE_BINARY_DIR}/bin)
  add_executable(bench_${family} ${ARG_SUITE_SOURCES})
  target_link_libraries(bench_${family} PRIVATE popper::bench ${ARG_SUITE_LIBRARIES})
  set_target_properties(bench_${family} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${bin})
  foreach(src IN LISTS ARG_CEILING_SOURCES)
    get_filename_component(stem ${src} NAME_WE)
    add_executable(ceiling_${stem} ${src})
    target_link_libraries(ceiling_${stem} PRIVATE popper::core ${ARG_CEILING_LIBRARIES})
    set_target_properties(ceiling_${stem} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${bin})
  endforeach()

  # The descriptor as written, then the tree it belongs to (re-written when
  # the source descriptor changes: configure_file tracks it).
  set(out ${CMAKE_BINARY_DIR}/popper-bench/${family}/family.yaml)
  set(copy ${CMAKE_CURRENT_BINARY_DIR}/CMakeFiles/popper-bench-${family}.yaml)
  configure_file(${descriptor} ${copy} COPYONLY)
  file(READ ${copy} text)
  string(APPEND text "\n# Written by popper_add_bench_family(${family}) from ${descriptor}:\n"
         "source_dir: \"${CMAKE_SOURCE_DIR}\"\nbuild_dir: \"${CMAKE_BINARY_DIR}\"\ncontracts: \"${contracts}\"\n")
  file(CONFIGURE OUTPUT ${out} CONTENT "${text}" @ONLY)
endfunction()
