# Optional Vulkan compute backend: POPPER_VULKAN = AUTO | ON | OFF.
#
# Build time needs the Vulkan headers (libvulkan-dev) and glslc (Debian
# package glslc); both come from scripts/install-deps.sh. Nothing links the
# loader: impl/common/vulkan_runtime.cpp opens libvulkan.so.1 at run time, so
# a binary built here still runs (and declines to the CPU) on a machine with
# no loader or no device.
#
# Sets POPPER_HAVE_VULKAN and provides
#   popper_vulkan_embed_shaders(<out-var> <shader.comp>...)
# which compiles each GLSL compute shader to SPIR-V with glslc at build time
# and writes it as a C array initializer (glslc -mfmt=c) to
#   <build>/gen/vulkan/<family>/<name>.spv.inc
# (generated, never committed); <out-var> receives the generated files.
# Host code includes them as  #include "<family>/<name>.spv.inc"  with
# POPPER_VULKAN_GEN_DIR on its include path.
set(POPPER_VULKAN "AUTO" CACHE STRING "AUTO | ON | OFF")
set_property(CACHE POPPER_VULKAN PROPERTY STRINGS AUTO ON OFF)
set(POPPER_HAVE_VULKAN OFF)
set(POPPER_VULKAN_GEN_DIR ${PROJECT_BINARY_DIR}/gen/vulkan)

if(NOT POPPER_VULKAN STREQUAL "OFF")
  find_package(Vulkan QUIET COMPONENTS glslc)
  if(TARGET Vulkan::Headers AND Vulkan_GLSLC_EXECUTABLE)
    set(POPPER_HAVE_VULKAN ON)
    message(STATUS "popper: Vulkan headers ${Vulkan_INCLUDE_DIRS}, glslc ${Vulkan_GLSLC_EXECUTABLE}")
  elseif(POPPER_VULKAN STREQUAL "ON")
    message(FATAL_ERROR "POPPER_VULKAN=ON but the Vulkan headers or glslc were not found; "
                        "run scripts/install-deps.sh (libvulkan-dev, glslc) or use POPPER_VULKAN=AUTO")
  else()
    message(STATUS "popper: Vulkan headers or glslc not found, building without Vulkan (its entries will decline)")
  endif()
endif()

function(popper_vulkan_embed_shaders out_var)
  set(generated)
  foreach(shader IN LISTS ARGN)
    get_filename_component(name ${shader} NAME_WE)
    get_filename_component(vulkan_dir ${shader} DIRECTORY)
    get_filename_component(family_dir ${vulkan_dir} DIRECTORY)
    get_filename_component(family ${family_dir} NAME)
    set(out ${POPPER_VULKAN_GEN_DIR}/${family}/${name}.spv.inc)
    add_custom_command(
      OUTPUT ${out}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${POPPER_VULKAN_GEN_DIR}/${family}
      COMMAND ${Vulkan_GLSLC_EXECUTABLE} --target-env=vulkan1.1 -O -Werror -mfmt=c
              -I ${vulkan_dir} -MD -MF ${out}.d -o ${out} ${shader}
      MAIN_DEPENDENCY ${shader}
      DEPFILE ${out}.d
      COMMENT "glslc ${family}/${name}.comp -> SPIR-V"
      VERBATIM)
    list(APPEND generated ${out})
  endforeach()
  set(${out_var} ${generated} PARENT_SCOPE)
endfunction()
