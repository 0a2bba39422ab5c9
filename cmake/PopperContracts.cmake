# Putting a project's kernels under contract, from popper's own tree or from an
# installed popper (find_package(popper) includes this file).
#
# popper_add_contract_tests(TARGET <target> CONTRACTS <yaml>...
#                           [DISCOVER] [RESULTS_DIR <dir>] [LABELS <label>...]
#                           [ENVIRONMENT <var=value>...] [TEST_PROPERTIES <property> <value>...]
#                           [POPPER_EXECUTABLE <path>])
#   For each contract, generates <binary dir>/popper_gen/<target>/<stem>_contract_test.cpp
#   with `popper scaffold` at build time — one TEST per falsification test and
#   kani harness, each calling popper::run_bound — and adds it to <target>
#   (which links popper::testing). The contract's text is compiled in, so the
#   binary reads no source file at run time. The source is regenerated when the
#   YAML or the scaffolder changes and written only when its text changes. Two
#   contracts of one target may not share a stem: the audit and the mutant
#   runner know a contract by its stem.
#   DISCOVER: one ctest test per contract id (gtest_discover_tests), named
#   <stem>.<ID>, labelled popper, contract:<stem> and LABELS; each writes its
#   GoogleTest JSON to RESULTS_DIR (default <binary dir>/popper_results/<target>),
#   where popper_add_audit reads them. ENVIRONMENT and TEST_PROPERTIES
#   (single-valued pairs, e.g. TIMEOUT 600 FIXTURES_SETUP x) are set on every
#   discovered test.
#
# popper_add_audit(NAME <name> TEST_TARGET <target> CONTRACTS <yaml or dir>...
#                  [RESULTS_DIR <dir>] [OUTPUT <dir>] [MUTANTS] [JUNIT <file>] [ARGS <arg>...])
#   A target <name> that runs `popper audit` over the results of TEST_TARGET's
#   discovered tests (run ctest first), writing coverage.{json,md} to OUTPUT
#   (default <binary dir>/popper_audit/<name>); MUTANTS runs every declared
#   mutant; JUNIT also writes JUnit XML.

function(_popper_tool out_tool out_dep explicit)
  if(explicit)
    set(${out_tool} ${explicit} PARENT_SCOPE)
    set(${out_dep} ${explicit} PARENT_SCOPE)
  elseif(TARGET popper)  # popper's own tree, or added with add_subdirectory
    set(${out_tool} $<TARGET_FILE:popper> PARENT_SCOPE)
    set(${out_dep} popper PARENT_SCOPE)
  elseif(TARGET popper::popper)  # installed: an imported executable
    set(${out_tool} $<TARGET_FILE:popper::popper> PARENT_SCOPE)
    set(${out_dep} $<TARGET_FILE:popper::popper> PARENT_SCOPE)
  else()
    message(FATAL_ERROR "popper: no popper executable; use find_package(popper) or pass POPPER_EXECUTABLE")
  endif()
endfunction()

# The GoogleTest suite name `popper scaffold` gives a contract stem.
function(_popper_suite_name stem out)
  string(REGEX REPLACE "[^A-Za-z0-9]" "_" suite "${stem}")
  if(suite STREQUAL "" OR suite MATCHES "^[0-9]")
    set(suite "c_${suite}")
  endif()
  set(${out} ${suite} PARENT_SCOPE)
endfunction()

function(popper_add_contract_tests)
  cmake_parse_arguments(ARG "DISCOVER" "TARGET;POPPER_EXECUTABLE;RESULTS_DIR" "CONTRACTS;LABELS;ENVIRONMENT;TEST_PROPERTIES"
                        ${ARGN})
  if(NOT ARG_TARGET)
    message(FATAL_ERROR "popper_add_contract_tests: TARGET is required")
  endif()
  if(NOT ARG_CONTRACTS)
    message(FATAL_ERROR "popper_add_contract_tests(${ARG_TARGET}): CONTRACTS is empty")
  endif()
  _popper_tool(tool tool_dep "${ARG_POPPER_EXECUTABLE}")
  set(gen_dir ${CMAKE_CURRENT_BINARY_DIR}/popper_gen/${ARG_TARGET})
  file(MAKE_DIRECTORY ${gen_dir})
  if(NOT ARG_RESULTS_DIR)
    set(ARG_RESULTS_DIR ${CMAKE_CURRENT_BINARY_DIR}/popper_results/${ARG_TARGET})
  endif()
  # The properties written into the ctest include file below, each value in a
  # bracket argument so that ';', quotes and backslashes pass through unchanged.
  set(props "LABELS [==[popper;contract:STEM")
  foreach(label IN LISTS ARG_LABELS)
    string(APPEND props ";${label}")
  endforeach()
  string(APPEND props "]==]")
  if(ARG_ENVIRONMENT)
    string(APPEND props " ENVIRONMENT [==[${ARG_ENVIRONMENT}]==]")
  endif()
  set(pending "${ARG_TEST_PROPERTIES}")
  while(pending)
    list(LENGTH pending n)
    if(n LESS 2)
      message(FATAL_ERROR "popper_add_contract_tests(${ARG_TARGET}): TEST_PROPERTIES '${pending}' has no value")
    endif()
    list(POP_FRONT pending name value)
    string(APPEND props " ${name} [==[${value}]==]")
  endwhile()
  get_target_property(seen ${ARG_TARGET} POPPER_CONTRACT_FILES)
  if(NOT seen)
    set(seen "")
  endif()
  foreach(contract IN LISTS ARG_CONTRACTS)
    get_filename_component(abs ${contract} ABSOLUTE)
    get_filename_component(stem ${contract} NAME_WE)
    foreach(other IN LISTS seen)
      get_filename_component(other_stem ${other} NAME_WE)
      if(other_stem STREQUAL stem AND NOT other STREQUAL abs)
        message(FATAL_ERROR "popper_add_contract_tests(${ARG_TARGET}): ${abs} and ${other} share the stem '${stem}'; "
                            "rename one (a contract is known by its stem to the audit and the mutant runner)")
      endif()
    endforeach()
    list(APPEND seen ${abs})
    set(out ${gen_dir}/${stem}_contract_test.cpp)
    add_custom_command(
      OUTPUT ${out}
      COMMAND ${tool} scaffold ${abs} -o ${out}
      DEPENDS ${tool_dep} ${abs}
      COMMENT "popper scaffold ${stem}"
      VERBATIM)
    target_sources(${ARG_TARGET} PRIVATE ${out})
    if(ARG_DISCOVER)
      include(GoogleTest)
      _popper_suite_name(${stem} suite)
      file(MAKE_DIRECTORY ${ARG_RESULTS_DIR})
      gtest_discover_tests(${ARG_TARGET}
        TEST_FILTER "${suite}.*"
        TEST_LIST popper_tests_${ARG_TARGET}_${suite}
        EXTRA_ARGS "--popper-results-dir=${ARG_RESULTS_DIR}"
        DISCOVERY_TIMEOUT 60)
      # Labels and properties go on in a ctest include file read after the
      # discovered list: list values do not survive gtest_discover_tests' PROPERTIES.
      string(REPLACE "contract:STEM" "contract:${stem}" stem_props "${props}")
      set(props_file ${gen_dir}/${stem}_properties.cmake)
      file(WRITE ${props_file}
           "foreach(t IN LISTS popper_tests_${ARG_TARGET}_${suite})\n"
           "  set_tests_properties(\"\${t}\" PROPERTIES ${stem_props})\n"
           "endforeach()\n")
      set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${props_file})
    endif()
  endforeach()
  set_target_properties(${ARG_TARGET} PROPERTIES POPPER_CONTRACT_FILES "${seen}" POPPER_RESULTS_DIR ${ARG_RESULTS_DIR})
endfunction()

function(popper_add_audit)
  cmake_parse_arguments(ARG "MUTANTS" "NAME;TEST_TARGET;RESULTS_DIR;OUTPUT;JUNIT;POPPER_EXECUTABLE" "CONTRACTS;ARGS"
                        ${ARGN})
  if(NOT ARG_NAME OR NOT ARG_TEST_TARGET OR NOT ARG_CONTRACTS)
    message(FATAL_ERROR "popper_add_audit: NAME, TEST_TARGET and CONTRACTS are required")
  endif()
  _popper_tool(tool tool_dep "${ARG_POPPER_EXECUTABLE}")
  if(NOT ARG_RESULTS_DIR)
    get_target_property(ARG_RESULTS_DIR ${ARG_TEST_TARGET} POPPER_RESULTS_DIR)
  endif()
  if(NOT ARG_OUTPUT)
    set(ARG_OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/popper_audit/${ARG_NAME})
  endif()
  set(contracts "")
  foreach(c IN LISTS ARG_CONTRACTS)
    get_filename_component(abs ${c} ABSOLUTE)
    list(APPEND contracts ${abs})
  endforeach()
  set(extra ${ARG_ARGS})
  if(ARG_MUTANTS)
    list(APPEND extra --mutants)
  endif()
  if(ARG_JUNIT)
    list(APPEND extra --junit ${ARG_JUNIT})
  endif()
  add_custom_target(${ARG_NAME}
    COMMAND ${tool} audit --contracts ${contracts} --results ${ARG_RESULTS_DIR}
            --test-binary $<TARGET_FILE:${ARG_TEST_TARGET}> -o ${ARG_OUTPUT} ${extra}
    DEPENDS ${tool_dep} ${ARG_TEST_TARGET}
    COMMENT "popper audit ${ARG_NAME} (run ctest first: it reads ${ARG_RESULTS_DIR})"
    VERBATIM)
endfunction()
