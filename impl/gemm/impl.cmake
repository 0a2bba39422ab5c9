# GEMM extras: record ptxas resource usage of the hand CUDA kernels (the SIMT
# FP32 kernel, the WMMA tensor-core kernel and, where built, the sm_90a wgmma
# kernel; every instantiation) at build time:
# registers, spills and shared memory, so FALSIFY-GEMM-011 can check the
# limits. Compiled for sm_90 (Hopper, where the kernels are judged) when it is
# among CMAKE_CUDA_ARCHITECTURES, else for the first of them. The log lands
# in <build>/gemm/hand_gemm_ptxas.log.
if(POPPER_HAVE_CUDA)
  set(_gemm_dir ${PROJECT_BINARY_DIR}/gemm)
  set(_gemm_ptxas_log ${_gemm_dir}/hand_gemm_ptxas.log)
  set(_gemm_archs ${CMAKE_CUDA_ARCHITECTURES})
  list(TRANSFORM _gemm_archs REPLACE "[^0-9].*$" "")
  if("90" IN_LIST _gemm_archs)
    set(_gemm_arch 90)
  else()
    list(GET _gemm_archs 0 _gemm_arch)
  endif()
  if(NOT _gemm_arch)
    set(_gemm_arch 80)
  endif()
  set(_gemm_commands)
  set(_gemm_parts)
  set(_gemm_kernels hand_gemm hand_gemm_tc)
  set(_gemm_sources ${CMAKE_CURRENT_SOURCE_DIR}/gemm/cuda/hand_gemm.cu ${CMAKE_CURRENT_SOURCE_DIR}/gemm/cuda/hand_gemm_tc.cu)
  if(POPPER_HAVE_SM90A)
    # The wgmma kernel exists for sm_90a only.
    list(APPEND _gemm_kernels hand_gemm_wgmma_sm90a)
    list(APPEND _gemm_sources ${CMAKE_CURRENT_SOURCE_DIR}/gemm/cuda/hand_gemm_wgmma_sm90a.cu)
  endif()
  foreach(kernel IN LISTS _gemm_kernels)
    set(_cu ${CMAKE_CURRENT_SOURCE_DIR}/gemm/cuda/${kernel}.cu)
    if(kernel MATCHES "_sm90a$")
      set(_gemm_gencode -gencode=arch=compute_90a,code=sm_90a)
    else()
      set(_gemm_gencode -arch=sm_${_gemm_arch})
    endif()
    list(APPEND _gemm_commands
      COMMAND ${CMAKE_CUDA_COMPILER} -std=c++20 -O3 ${_gemm_gencode} -Xptxas -v
              -I${PROJECT_SOURCE_DIR} -DPOPPER_HAVE_CUDA=1
              -c ${_cu} -o ${_gemm_dir}/${kernel}_ptxas.o > ${_gemm_dir}/${kernel}_ptxas.part 2>&1)
    list(APPEND _gemm_parts ${_gemm_dir}/${kernel}_ptxas.part)
  endforeach()
  add_custom_command(
    OUTPUT ${_gemm_ptxas_log}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${_gemm_dir}
    ${_gemm_commands}
    COMMAND ${CMAKE_COMMAND} -E cat ${_gemm_parts} > ${_gemm_ptxas_log}
    DEPENDS ${_gemm_sources} ${CMAKE_CURRENT_SOURCE_DIR}/gemm/cuda/hand_gemm_launch.hpp
            ${CMAKE_CURRENT_SOURCE_DIR}/gemm/cuda/cp_async.hpp
    COMMENT "ptxas resource usage of the hand GEMM kernels (sm_${_gemm_arch})"
    VERBATIM)
  add_custom_target(popper_gemm_ptxas_log ALL DEPENDS ${_gemm_ptxas_log})
endif()
