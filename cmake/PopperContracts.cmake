# popper_add_contract_tests(TARGET <target> CONTRACTS <yaml>... [POPPER_EXECUTABLE <path>])
#
# For each contract, generates <binary dir>/gen/<stem>_contract_test.cpp with
# `popper scaffold` at build time (one TEST per falsification test and kani
# harness, each calling popper::run_bound) and adds it to <target>. The
# source is regenerated when the YAML or the scaffolder changes and written
# only when its text changes. Usable from another project: include this file
# and pass POPPER_EXECUTABLE when the `popper` target is not in the build.
function(popper_add_contract_tests)
  cmake_parse_arguments(ARG "" "TARGET;POPPER_EXECUTABLE" "CONTRACTS" ${ARGN})
  if(NOT ARG_TARGET)
    message(FATAL_ERROR "popper_add_contract_tests: TARGET is required")
  endif()
  if(ARG_POPPER_EXECUTABLE)
    set(tool ${ARG_POPPER_EXECUTABLE})
    set(tool_dep ${ARG_POPPER_EXECUTABLE})
  elseif(TARGET popper)
    set(tool $<TARGET_FILE:popper>)
    set(tool_dep popper)
  else()
    message(FATAL_ERROR "popper_add_contract_tests: no 'popper' target; pass POPPER_EXECUTABLE")
  endif()
  set(gen_dir ${CMAKE_CURRENT_BINARY_DIR}/gen)
  file(MAKE_DIRECTORY ${gen_dir})
  foreach(contract IN LISTS ARG_CONTRACTS)
    get_filename_component(abs ${contract} ABSOLUTE)
    get_filename_component(stem ${contract} NAME_WE)
    set(out ${gen_dir}/${stem}_contract_test.cpp)
    add_custom_command(
      OUTPUT ${out}
      COMMAND ${tool} scaffold ${abs} -o ${out}
      DEPENDS ${tool_dep} ${abs}
      COMMENT "popper scaffold ${stem}"
      VERBATIM)
    target_sources(${ARG_TARGET} PRIVATE ${out})
  endforeach()
endfunction()
