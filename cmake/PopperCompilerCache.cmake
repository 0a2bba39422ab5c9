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
  # A cache directory this user cannot write would fail every compile: then build without it.
  set(_popper_ccache_ok FALSE)
  if(POPPER_CCACHE_PROGRAM)
    execute_process(COMMAND ${POPPER_CCACHE_PROGRAM} -k cache_dir OUTPUT_VARIABLE _popper_ccache_dir
                    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    set(_popper_probe "${_popper_ccache_dir}/.popper-write-probe")
    if(_popper_ccache_dir)  # ccache -k prints nothing when it has no cache_dir
      # Two calls: the COMMANDs of one execute_process run at once, as a
      # pipeline, so on a fresh machine the touch lost the race to the mkdir.
      execute_process(COMMAND ${CMAKE_COMMAND} -E make_directory "${_popper_ccache_dir}" OUTPUT_QUIET ERROR_QUIET)
      execute_process(COMMAND ${CMAKE_COMMAND} -E touch "${_popper_probe}" OUTPUT_QUIET ERROR_QUIET)
    endif()
    if(_popper_ccache_dir AND EXISTS "${_popper_probe}")
      set(_popper_ccache_ok TRUE)
      file(REMOVE "${_popper_probe}")
    else()
      message(STATUS "ccache: found but its cache directory '${_popper_ccache_dir}' is not writable; compiling without it")
    endif()
  endif()
  if(_popper_ccache_ok)
    # pch_defines,time_macros: what ccache needs to cache a compile that uses a
    # precompiled header (the contract tests', falsify/CMakeLists.txt); no
    # source uses __DATE__ or __TIME__.
    set(_popper_launcher ${CMAKE_COMMAND} -E env CCACHE_BASEDIR=${PROJECT_SOURCE_DIR} CCACHE_NOHASHDIR=true
        CCACHE_SLOPPINESS=pch_defines,time_macros ${POPPER_CCACHE_PROGRAM})
    foreach(lang C CXX CUDA)
      if(NOT CMAKE_${lang}_COMPILER_LAUNCHER)
        set(CMAKE_${lang}_COMPILER_LAUNCHER ${_popper_launcher})
      endif()
    endforeach()
    message(STATUS "ccache: ${POPPER_CCACHE_PROGRAM} (base dir ${PROJECT_SOURCE_DIR})")
  endif()
endif()
