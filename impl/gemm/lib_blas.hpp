// Wrapped tier: GEMM through OpenBLAS (cblas_sgemm / cblas_dgemm), row- or
// column-major through the CBLAS layout flag, op via the transpose flags; a
// one-row product (m = 1, k > 0) through cblas_sgemv / cblas_dgemv.
//
//   C = alpha * op(A) * op(B) + beta * C
//
// BlasHandle is the one owner of the library's global thread setting: it sets
// openblas_set_num_threads(threads) on construction and restores the previous
// value on destruction. OpenBLAS reads OPENBLAS_CORETYPE only when the library
// loads, so a handle cannot switch kernels in-process: a non-empty
// BlasOptions::core_type must equal the loaded core (case-insensitive) or the
// constructor throws popper::Unsupported. Core types needing AVX-512
// (SkylakeX, Cooperlake, SapphireRapids) are refused outright on CPUs without
// it, because forcing them would fault with SIGILL.
#pragma once
#include <span>
#include <string>

#include "impl/gemm/gemm.hpp"

namespace popper::gemm {

struct BlasOptions {
  int threads = 1;        // >= 1
  std::string core_type;  // empty: accept whatever core OpenBLAS loaded
};

class BlasHandle {
 public:
  explicit BlasHandle(BlasOptions = {});
  ~BlasHandle();
  BlasHandle(const BlasHandle&) = delete;
  BlasHandle& operator=(const BlasHandle&) = delete;

  std::string core_name() const;  // openblas_get_corename()
  int threads() const;

  void gemm(const GemmShape&, float alpha, std::span<const float> a, std::span<const float> b, float beta,
            std::span<float> c) const;
  void gemm(const GemmShape&, double alpha, std::span<const double> a, std::span<const double> b, double beta,
            std::span<double> c) const;

 private:
  int threads_;
  int previous_threads_;
};

// True when the CPU can execute the named OpenBLAS core type (case-insensitive);
// false for core types that need AVX-512 on a CPU without it. Unknown names: true
// (OpenBLAS itself decides). Exposed for tests.
bool cpu_can_run_core_type(const std::string& core_type);

}  // namespace popper::gemm
