// cuBLAS, loaded on first use (dlopen of libcublas.so.<major>) instead of at
// process start. Linked, it made every process holding popper_impl run
// cuBLASLt's static initialisers — each contract test, each mutant run, each
// CPU bench step — about 0.35 s a process natively and 2.5 s under qemu-user,
// for a library only a device GEMM calls.
#pragma once
#if POPPER_HAVE_CUDA
#include <cublas_v2.h>

namespace popper::gemm::cuda {

// The entry points popper calls, typed as cublas_api.h declares them (the C
// functions, not the C++ overloads of cublasGemmEx that header adds).
struct CublasApi {
  cublasStatus_t (*create)(cublasHandle_t*);
  cublasStatus_t (*destroy)(cublasHandle_t);
  cublasStatus_t (*set_stream)(cublasHandle_t, cudaStream_t);
  cublasStatus_t (*set_math_mode)(cublasHandle_t, cublasMath_t);
  const char* (*status_string)(cublasStatus_t);
  cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                            const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                            cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
  cublasStatus_t (*gemm_strided_batched_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                            const void*, const void*, cudaDataType, int, long long, const void*,
                                            cudaDataType, int, long long, const void*, void*, cudaDataType, int,
                                            long long, int, cublasComputeType_t, cublasGemmAlgo_t);
};

// The library the build compiled against (libcublas.so.<CUBLAS_VER_MAJOR>),
// loaded once per process. Throws popper::Error naming the library and the
// loader's message when it or one of its symbols cannot be found.
const CublasApi& cublas_api();

}  // namespace popper::gemm::cuda
#endif
