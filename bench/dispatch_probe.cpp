// popper_dispatch_probe: what decides a gate run's instruction counts, as the
// CPU this process sees (the gate runs it under valgrind): the CPU path the
// hand kernels dispatch to, and the OpenBLAS kernel set. One JSON line:
//   {"cpu_isa":"avx2","avx512_bf16":false,"openblas_core":"Haswell","openblas_config":"OpenBLAS 0.3.21 ..."}
#include <cstdio>
#include <string>

#include "common/cpu_features.hpp"

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
  std::printf("{\"cpu_isa\":%s,\"avx512_bf16\":%s,\"openblas_core\":%s,\"openblas_config\":%s}\n",
              json_string(popper::cpu::to_string(popper::cpu::auto_isa())).c_str(),
              popper::cpu::has_avx512_bf16() ? "true" : "false", json_string(openblas_get_corename()).c_str(),
              json_string(openblas_get_config()).c_str());
  return 0;
}
