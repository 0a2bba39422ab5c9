# Arrow: bit parity between the Structured body, the Hand (AVX2) kernel and the
# CUDA kernel needs the same operation order everywhere, so no mul+add
# contraction anywhere: -ffp-contract=off on the host, --fmad=false on nvcc.
file(GLOB POPPER_ARROW_HOST_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*.cpp)
set_property(SOURCE ${POPPER_ARROW_HOST_SOURCES} APPEND PROPERTY COMPILE_OPTIONS -ffp-contract=off)

if(POPPER_HAVE_CUDA)
  file(GLOB POPPER_ARROW_CUDA_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/cuda/*.cu)
  set_property(SOURCE ${POPPER_ARROW_CUDA_SOURCES} APPEND PROPERTY COMPILE_OPTIONS
    --fmad=false --prec-div=true --prec-sqrt=true)

  # Build-time resource report: ptxas -v for the batched kernel, logged in the
  # build tree and parsed by FALSIFY-ARROW-008 (registers, spills, shared memory).
  list(GET CMAKE_CUDA_ARCHITECTURES 0 POPPER_ARROW_PTXAS_ARCH)
  string(REGEX REPLACE "[^0-9].*$" "" POPPER_ARROW_PTXAS_ARCH "${POPPER_ARROW_PTXAS_ARCH}")
  set(POPPER_ARROW_PTXAS_LOG ${PROJECT_BINARY_DIR}/arrow/ptxas_batched_k1.log)
  add_custom_command(
    OUTPUT ${POPPER_ARROW_PTXAS_LOG}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/arrow
    COMMAND sh -c "'${CMAKE_CUDA_COMPILER}' -std=c++20 -O3 --fmad=false -arch=sm_${POPPER_ARROW_PTXAS_ARCH} -I'${PROJECT_SOURCE_DIR}' -I'${PROJECT_SOURCE_DIR}/harness/include' -DPOPPER_HAVE_CUDA=1 -Xptxas -v -c '${CMAKE_CURRENT_LIST_DIR}/cuda/batched_k1.cu' -o '${PROJECT_BINARY_DIR}/arrow/ptxas_batched_k1.o' > '${POPPER_ARROW_PTXAS_LOG}' 2>&1"
    DEPENDS ${CMAKE_CURRENT_LIST_DIR}/cuda/batched_k1.cu ${CMAKE_CURRENT_LIST_DIR}/atom_body.hpp
    COMMENT "ptxas -v resource usage of the arrow batched K=1 kernel"
    VERBATIM)
  add_custom_target(arrow_ptxas_log ALL DEPENDS ${POPPER_ARROW_PTXAS_LOG})
  add_dependencies(popper_impl arrow_ptxas_log)
endif()
