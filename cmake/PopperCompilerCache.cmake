# Compiles through ccache when it is installed (scripts/install-deps.sh
# installs it; -DPOPPER_CCACHE=OFF opts out). Paths are hashed relative to the
# source tree and the build directory is left out of the hash, so a fresh
# clone — CI's, or a second checkout — reuses the objects an earlier build of
# the same sources compiled: CI's full builds (the tests', the sanitizers',
# the consumer check's) were about half of its wall time. The price: debug
# info of a cached object may name the other checkout's build directory.
option(POPPER_CCACHE "compile through ccache when it is found" ON)
if(POPPER_CCACHE AND PROJECT_IS_TOP_LEVEL)
  find_program(POPPER_CCACHE_PROGRAM ccache)
  if(POPPER_CCACHE_PROGRAM)
    set(_popper_launcher ${CMAKE_COMMAND} -E env CCACHE_BASEDIR=${PROJECT_SOURCE_DIR} CCACHE_NOHASHDIR=true
        ${POPPER_CCACHE_PROGRAM})
    foreach(lang C CXX CUDA)
      if(NOT CMAKE_${lang}_COMPILER_LAUNCHER)
        set(CMAKE_${lang}_COMPILER_LAUNCHER ${_popper_launcher})
      endif()
    endforeach()
    message(STATUS "ccache: ${POPPER_CCACHE_PROGRAM} (base dir ${PROJECT_SOURCE_DIR})")
  endif()
endif()
