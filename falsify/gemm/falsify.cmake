# GEMM falsifiers: FALSIFY-GEMM-011 reads the hand CUDA kernel's ptxas log,
# produced by impl/gemm/impl.cmake; build it before the tests.
if(TARGET popper_gemm_ptxas_log)
  add_dependencies(popper_contract_tests popper_gemm_ptxas_log)
endif()
