# Q4_K extras: the VNNI translation units get -mavx512vnni on top of the
# AVX-512 flags every *_avx512.cpp receives (they run only after a CPU check);
# ggml (llama.cpp) is linked when cmake/PopperGgml.cmake found it.
set_property(SOURCE ${CMAKE_CURRENT_SOURCE_DIR}/q4k/cpu_gemv_vnni_avx512.cpp ${CMAKE_CURRENT_SOURCE_DIR}/q4k/cpu_gemv_packed_vnni_avx512.cpp
             APPEND PROPERTY COMPILE_OPTIONS -mavx512vnni)
foreach(lib IN LISTS POPPER_IMPL_LIBRARIES)
  popper_use_ggml(${lib})
endforeach()
# Dequantization is bit-exact against ggml only without fused multiply-add.
file(GLOB _q4k_sources ${CMAKE_CURRENT_SOURCE_DIR}/q4k/*.cpp)
set_property(SOURCE ${_q4k_sources} APPEND PROPERTY COMPILE_OPTIONS -ffp-contract=off)
