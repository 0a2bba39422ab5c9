// popper_dispatch_probe: what decides a gate run's instruction counts, as the
// CPU this process sees (the gate runs it under valgrind): the CPU path the
// hand kernels dispatch to, the cache sizes their blocking is derived from, and
// the OpenBLAS kernel set. One JSON line:
//   {"cpu_isa":"avx2","avx512_bf16":false,"caches":"l1d=49152,l2=1048576,l3=33554432",
//    "openblas_core":"Haswell","openblas_config":"OpenBLAS 0.3.21 ..."}
// With --cublas (CUDA builds): loads cuBLAS the way a device GEMM does on first
// use (impl/gemm/cublas_api.hpp), every entry point resolved, no device needed;
// exit 1 with the loader's message when it cannot.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "impl/common/cpu_features.hpp"
#include "impl/gemm/cpu_gemm_blocking.hpp"
#include "impl/gemm/cublas_api.hpp"

extern "C" {
char* openblas_get_corename(void);
char* openblas_get_config(void);
}

namespace {
std::string json_string(const char* s) {
  std::string out = "\"";
  for (const char* p = s ? s : ""; *p; ++p) {
    if (*p == '"' || *p == '\\') out += '\\';
    if (static_cast<unsigned char>(*p) >= 0x20) out += *p;
  }
  return out + "\"";
}
}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--cublas") == 0) {
#if POPPER_HAVE_CUDA
    try {
      (void)popper::gemm::cuda::cublas_api();
      std::printf("cuBLAS loaded: libcublas.so.%d, every entry point popper calls resolved\n", CUBLAS_VER_MAJOR);
      return 0;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "popper_dispatch_probe: %s\n", e.what());
      return 1;
    }
#else
    std::fprintf(stderr, "popper_dispatch_probe: built without CUDA\n");
    return 1;
#endif
  }
  const auto& c = popper::gemm::cpu::reported_cache_sizes();
  std::printf(
      "{\"cpu_isa\":%s,\"avx512_bf16\":%s,\"caches\":\"l1d=%zu,l2=%zu,l3=%zu\",\"openblas_core\":%s,"
      "\"openblas_config\":%s}\n",
      json_string(popper::cpu::to_string(popper::cpu::auto_isa())).c_str(),
      popper::cpu::has_avx512_bf16() ? "true" : "false", c.l1d, c.l2, c.l3,
      json_string(openblas_get_corename()).c_str(), json_string(openblas_get_config()).c_str());
  return 0;
}
