# GEMM extras: record ptxas resource usage of the hand CUDA kernel at build
# time (registers, shared memory) so FALSIFY-GEMM-011 can check the limits.
# The log lands in <build>/gemm/hand_gemm_ptxas.log.
if(POPPER_HAVE_CUDA)
  set(_gemm_ptxas_log ${PROJECT_BINARY_DIR}/gemm/hand_gemm_ptxas.log)
  set(_gemm_hand_cu ${CMAKE_CURRENT_SOURCE_DIR}/gemm/cuda/hand_gemm.cu)
  set(_gemm_archs ${CMAKE_CUDA_ARCHITECTURES})
  list(GET _gemm_archs 0 _gemm_arch)
  string(REGEX REPLACE "[^0-9].*$" "" _gemm_arch "${_gemm_arch}")
  if(NOT _gemm_arch)
    set(_gemm_arch 80)
  endif()
  add_custom_command(
    OUTPUT ${_gemm_ptxas_log}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/gemm
    COMMAND ${CMAKE_CUDA_COMPILER} -O3 -arch=sm_${_gemm_arch} -Xptxas -v
            -I${PROJECT_SOURCE_DIR} -I${PROJECT_SOURCE_DIR}/harness/include -DPOPPER_HAVE_CUDA=1
            -c ${_gemm_hand_cu} -o ${PROJECT_BINARY_DIR}/gemm/hand_gemm_ptxas.o
            > ${_gemm_ptxas_log} 2>&1
    DEPENDS ${_gemm_hand_cu} ${CMAKE_CURRENT_SOURCE_DIR}/gemm/cuda/hand_gemm_launch.hpp
            ${CMAKE_CURRENT_SOURCE_DIR}/gemm/cuda_gemm.hpp
    COMMENT "ptxas resource usage of the hand GEMM kernel (sm_${_gemm_arch})"
    VERBATIM)
  add_custom_target(popper_gemm_ptxas_log ALL DEPENDS ${_gemm_ptxas_log})
endif()
