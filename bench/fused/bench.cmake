# bench_fused shares falsify/fused/testbed.hpp (inputs, derived bounds, allocators) with the falsifiers.
target_include_directories(bench_fused PRIVATE ${PROJECT_SOURCE_DIR}/falsify)
# The ceiling's separate loops are plain C: let the compiler use this machine's vector units,
# as a user building a raw C baseline would (-O3 -march=native, benchmark only).
if(TARGET ceiling_cblas_fused_raw)
  target_compile_options(ceiling_cblas_fused_raw PRIVATE -O3 -march=native)
endif()
