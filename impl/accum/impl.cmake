# Accumulation orders are specifications of an operation sequence: no
# contraction into fused multiply-add, whatever the compiler's default.
file(GLOB _accum_sources ${CMAKE_CURRENT_SOURCE_DIR}/accum/*.cpp)
set_property(SOURCE ${_accum_sources} APPEND PROPERTY COMPILE_OPTIONS -ffp-contract=off)
