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
