# NSA extras: the router reads its committed threshold file with yaml-cpp, from
# the program's data directory (popper/runtime_paths.hpp: config/nsa-router.yaml;
# POPPER_NSA_ROUTER_CONFIG overrides it at run time).
foreach(_nsa_target IN LISTS POPPER_IMPL_LIBRARIES)
  target_link_libraries(${_nsa_target} PRIVATE ${POPPER_YAML_TARGET})
endforeach()
