# NSA extras: the router reads its committed threshold file with yaml-cpp, and
# knows where that file lives in the source tree (POPPER_NSA_ROUTER_CONFIG
# overrides it at run time).
foreach(_nsa_target popper_impl popper_impl_mutants)
  target_link_libraries(${_nsa_target} PRIVATE ${POPPER_YAML_TARGET})
endforeach()
set_source_files_properties(${CMAKE_CURRENT_SOURCE_DIR}/nsa/router.cpp PROPERTIES
  COMPILE_DEFINITIONS "POPPER_NSA_ROUTER_CONFIG_DEFAULT=\"${PROJECT_SOURCE_DIR}/config/nsa-router.yaml\"")
