// popper_dispatch_probe: what decides a gate run's instruction counts, as the
// CPU this process sees (the gate runs it under valgrind): the CPU path the
// hand kernels dispatch to, the cache sizes their blocking is derived from, and
// the OpenBLAS kernel set. One JSON line:
//   {"cpu_isa":"avx2","avx512_bf16":false,"caches":"l1d=49152,l2=1048576,l3=33554432",
//    "openblas_core":"Haswell","openblas_config":"OpenBLAS 0.3.21 ..."}
#include <cstdio>
#include <string>

#include "impl/common/cpu_features.hpp"
#include "impl/gemm/cpu_gemm_blocking.hpp"

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

int main() {
  const auto& c = popper::gemm::cpu::reported_cache_sizes();
  std::printf("{\"cpu_isa\":%s,\"avx512_bf16\":%s,\"caches\":\"l1d=%zu,l2=%zu,l3=%zu\",\"openblas_core\":%s,"
              "\"openblas_config\":%s}\n",
              json_string(popper::cpu::to_string(popper::cpu::auto_isa())).c_str(),
              popper::cpu::has_avx512_bf16() ? "true" : "false", c.l1d, c.l2, c.l3,
              json_string(openblas_get_corename()).c_str(), json_string(openblas_get_config()).c_str());
  return 0;
}
