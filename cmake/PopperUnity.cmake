# popper_unity_by_folder(<target> <base_dir> <batch_size>): compiles the
# target's sources under <base_dir> as unity sources, each batch holding at
# most <batch_size> files of one folder. A harness room or a falsifier family
# shares its headers, and most of a translation unit's compile is parsing
# them: eight of the engine's bench sources compiled in 33 s as one unity
# source against 57 s one by one, six gemm falsifiers (with their precompiled
# header) in 19 s against 35 s (GCC 12 -O3). Batches never cross a folder, so
# a helper's name need only be unique within its folder. Sources with their own
# compile definitions are compiled alone (CMake leaves them out), as is any
# file marked SKIP_UNITY_BUILD_INCLUSION; sources outside <base_dir>
# (generated ones) keep no group and are compiled alone too.
function(popper_unity_by_folder target base_dir batch_size)
  set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_MODE GROUP)
  get_target_property(sources ${target} SOURCES)
  foreach(source IN LISTS sources)
    cmake_path(ABSOLUTE_PATH source BASE_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR} OUTPUT_VARIABLE path)
    cmake_path(IS_PREFIX base_dir "${path}" NORMALIZE inside)
    if(NOT inside OR NOT path MATCHES "\\.cpp$")
      continue()
    endif()
    cmake_path(GET path PARENT_PATH folder)
    cmake_path(RELATIVE_PATH folder BASE_DIRECTORY ${base_dir} OUTPUT_VARIABLE room)
    string(MAKE_C_IDENTIFIER "${room}" room)
    if(NOT DEFINED count_${room})
      set(count_${room} 0)
    endif()
    math(EXPR batch "${count_${room}} / ${batch_size}")
    math(EXPR count_${room} "${count_${room}} + 1")
    set_source_files_properties(${path} TARGET_DIRECTORY ${target} PROPERTIES UNITY_GROUP ${room}_${batch})
  endforeach()
endfunction()
