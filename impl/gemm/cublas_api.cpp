// cuBLAS loaded on first use (cublas_api.hpp).
#include "impl/gemm/cublas_api.hpp"

#if POPPER_HAVE_CUDA
#include <dlfcn.h>

#include <mutex>
#include <string>

#include "popper/error.hpp"

namespace popper::gemm::cuda {
namespace {

const std::string kLibrary = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);

template <typename Fn>
void bind(void* lib, const char* symbol, Fn& out) {
  void* p = ::dlsym(lib, symbol);
  if (!p) {
    const char* why = ::dlerror();
    throw Error(kLibrary + " has no " + symbol + (why ? std::string(": ") + why : std::string()));
  }
  out = reinterpret_cast<Fn>(p);
}

CublasApi load() {
  // RTLD_LOCAL: nothing else in the process sees its symbols; never closed
  // (handles outlive any scope popper could close it in).
  void* lib = ::dlopen(kLibrary.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* why = ::dlerror();
    throw Error("cannot load cuBLAS (" + kLibrary + "): " + (why ? why : "unknown error") +
                "; the CUDA toolkit's lib folder must be on the loader's path (LD_LIBRARY_PATH)");
  }
  CublasApi api{};
  bind(lib, "cublasCreate_v2", api.create);
  bind(lib, "cublasDestroy_v2", api.destroy);
  bind(lib, "cublasSetStream_v2", api.set_stream);
  bind(lib, "cublasSetMathMode", api.set_math_mode);
  bind(lib, "cublasGetStatusString", api.status_string);
  bind(lib, "cublasGemmEx", api.gemm_ex);
  bind(lib, "cublasGemmStridedBatchedEx", api.gemm_strided_batched_ex);
  return api;
}

}  // namespace

const CublasApi& cublas_api() {
  // A failed load is retried on the next call (and throws again): call_once
  // re-runs a function that threw.
  static std::once_flag once;
  static CublasApi api{};
  std::call_once(once, [] { api = load(); });
  return api;
}

}  // namespace popper::gemm::cuda
#endif
