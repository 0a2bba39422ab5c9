# Warning and sanitizer flags applied to every popper target via popper_target_defaults().
add_library(popper_warnings INTERFACE)
target_compile_options(popper_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX,C>:-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion>
  $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CXX_COMPILER_ID:GNU>>:-Wno-restrict>  # GCC 12 false positive on std::string +
  $<$<AND:$<COMPILE_LANGUAGE:CXX,C>,$<BOOL:${POPPER_WERROR}>>:-Werror>)

if(POPPER_SANITIZE)
  # GCC 12 reports false maybe-uninitialized warnings inside libstdc++ (std::regex,
  # std::function) when sanitizers are on; with -Werror they would stop the build.
  add_compile_options($<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CXX_COMPILER_ID:GNU>>:-Wno-maybe-uninitialized>)
  add_compile_options($<$<COMPILE_LANGUAGE:CXX,C>:-fsanitize=${POPPER_SANITIZE}> $<$<COMPILE_LANGUAGE:CXX,C>:-fno-omit-frame-pointer> $<$<COMPILE_LANGUAGE:CXX,C>:-fno-sanitize-recover=all>)
  add_link_options(-fsanitize=${POPPER_SANITIZE})
endif()

# Under the sanitizers, the engine, its unit tests, the CLI, the tools and the
# falsifiers are compiled at -O0: under ASan + UBSan -O0 compiles the engine in
# about half the time of -O1 and a falsifier in 70% of it (with its precompiled
# header), and their tests spend little time in their own loops (the contract
# tests ran in 157 s instead of 134, one process). The kernels keep the build
# type's level.
function(popper_sanitized_at_o0)
  if(POPPER_SANITIZE)
    foreach(target IN LISTS ARGN)
      target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX,C>:-O0>)
    endforeach()
  endif()
endfunction()
