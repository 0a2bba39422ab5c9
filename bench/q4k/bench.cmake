# q4k bench: the suite shares the testbed of the falsifiers (falsify/q4k/testbed.hpp);
# the ggml ceiling links the pinned llama.cpp packages when cmake/PopperGgml.cmake
# found them, and reports "# skipped: requires ggml" otherwise.
target_include_directories(bench_q4k PRIVATE ${PROJECT_SOURCE_DIR}/falsify)
if(TARGET ceiling_ggml_q4k_raw)
  popper_use_ggml(ceiling_ggml_q4k_raw)
endif()
