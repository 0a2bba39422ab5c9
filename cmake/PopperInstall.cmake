# cmake --install: what a project that puts its own kernels under contract
# uses through find_package(popper):
#   bin/popper                              the CLI (validate, scaffold, audit, mutants, bench)
#   lib/libpopper_harness.a, libpopper_testing.a   popper::harness, popper::testing
#   popper::bench                           the bench API (header-only, over Google Benchmark), when found
#   include/popper/ceiling_cli.h            the C header a raw-C ceiling program is written against
#   include/popper/                         their public headers
#   lib/cmake/popper/                       popperConfig.cmake (+ version), the export set,
#                                           PopperContracts.cmake (popper_add_contract_tests, popper_add_audit),
#                                           PopperBench.cmake (popper_add_bench_family)
# The kernels, falsifiers and benchmarks of popper's own families are not installed.
include(CMakePackageConfigHelpers)

set(POPPER_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/popper)
set(_popper_installed_targets popper popper_core popper_harness popper_testing)
set(POPPER_INSTALLS_BENCH_API OFF)  # read by popperConfig.cmake.in
if(TARGET popper_bench)
  list(APPEND _popper_installed_targets popper_bench)
  set(POPPER_INSTALLS_BENCH_API ON)
endif()
install(TARGETS ${_popper_installed_targets}
        EXPORT popperTargets
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/harness/include/popper DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT popperTargets NAMESPACE popper:: DESTINATION ${POPPER_INSTALL_CMAKEDIR})

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/popperConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/popperConfig.cmake
                              INSTALL_DESTINATION ${POPPER_INSTALL_CMAKEDIR})
# 0.x: a minor version may change the contract schema, so only the same minor matches.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/popperConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/popperConfig.cmake ${PROJECT_BINARY_DIR}/popperConfigVersion.cmake
              ${CMAKE_CURRENT_LIST_DIR}/PopperContracts.cmake ${CMAKE_CURRENT_LIST_DIR}/PopperBench.cmake
        DESTINATION ${POPPER_INSTALL_CMAKEDIR})
