# Vulkan compute for every family: impl/<family>/vulkan/*.comp are compiled to
# SPIR-V by glslc at build time (cmake/PopperVulkan.cmake) and embedded through
# generated headers in <build>/gen/vulkan (never committed). Without Vulkan
# the runtime compiles as stubs and every Vulkan entry declines.
foreach(lib IN LISTS POPPER_IMPL_LIBRARIES)
  target_compile_definitions(${lib} PUBLIC POPPER_HAVE_VULKAN=$<BOOL:${POPPER_HAVE_VULKAN}>)
  target_link_libraries(${lib} PUBLIC ${CMAKE_DL_LIBS})
endforeach()
if(POPPER_HAVE_VULKAN)
  file(GLOB POPPER_VULKAN_SHADERS CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*/vulkan/*.comp)
  popper_vulkan_embed_shaders(POPPER_VULKAN_SPIRV ${POPPER_VULKAN_SHADERS})
  add_custom_target(popper_vulkan_shaders DEPENDS ${POPPER_VULKAN_SPIRV})
  foreach(lib IN LISTS POPPER_IMPL_LIBRARIES)
    add_dependencies(${lib} popper_vulkan_shaders)
    target_include_directories(${lib} PRIVATE ${POPPER_VULKAN_GEN_DIR})
    target_link_libraries(${lib} PRIVATE Vulkan::Headers)
  endforeach()
endif()
