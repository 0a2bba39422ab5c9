// Wrapped tier: OpenBLAS through CBLAS.
//   C = alpha * op(A) * op(B) + beta * C
// Row-major is passed as CblasRowMajor (no copies, no transposition by hand);
// op(X) maps to CblasTrans. Arguments are checked before the library is called.
#include "impl/gemm/lib_blas.hpp"

#include "impl/common/cpu_features.hpp"
#include "popper/mutant.hpp"

#include <cblas.h>

#include <algorithm>
#include <cctype>
#include <optional>

#include "popper/error.hpp"

namespace popper::gemm {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return s;
}

CBLAS_ORDER order_of(Layout l) { return l == Layout::RowMajor ? CblasRowMajor : CblasColMajor; }
CBLAS_TRANSPOSE trans_of(Op o) { return o == Op::NoTrans ? CblasNoTrans : CblasTrans; }

}  // namespace

// What the CPU executes, not popper's ISA cap (POPPER_ISA_MAX caps popper's
// own kernels; a BLAS core type the CPU runs is still safe to load).
bool cpu_can_run_core_type(const std::string& core_type) {
  __builtin_cpu_init();
  const std::string c = lower(core_type);
  const popper::cpu::Isa cpu = popper::cpu::detected_isa();
  // OpenBLAS x86-64 core types whose kernels use AVX-512.
  if (c == "skylakex" || c == "cooperlake" || c == "sapphirerapids") {
    if (cpu != popper::cpu::Isa::Avx512) return false;
    if (c != "skylakex" && !__builtin_cpu_supports("avx512bf16")) return false;
    return true;
  }
  // AVX2+FMA kernels.
  if (c == "haswell" || c == "zen" || c == "skylake" || c == "excavator") {
    return cpu == popper::cpu::Isa::Avx2 || cpu == popper::cpu::Isa::Avx512;
  }
  if (c == "sandybridge" || c == "bulldozer" || c == "piledriver" || c == "steamroller") {
    return __builtin_cpu_supports("avx");
  }
  return true;
}

BlasHandle::BlasHandle(BlasOptions opts) : threads_(opts.threads), previous_threads_(openblas_get_num_threads()) {
  if (opts.threads < 1) throw InvalidArgument("BlasHandle: threads must be >= 1, got " + std::to_string(opts.threads));
  if (!opts.core_type.empty()) {
    if (!cpu_can_run_core_type(opts.core_type)) {
      throw Unsupported("BlasHandle: core type '" + opts.core_type +
                        "' needs instructions this CPU lacks; forcing it would fault with SIGILL");
    }
    const std::string loaded = core_name();
    if (lower(loaded) != lower(opts.core_type)) {
      throw Unsupported("BlasHandle: OpenBLAS loaded core '" + loaded + "', not '" + opts.core_type +
                        "'; the core type is chosen when the library loads: set OPENBLAS_CORETYPE=" + opts.core_type +
                        " before the process starts");
    }
  }
  openblas_set_num_threads(threads_);
}

BlasHandle::~BlasHandle() {
  if (POPPER_MUTANT("blas-handle-no-restore")) return;
  openblas_set_num_threads(previous_threads_);
}

std::string BlasHandle::core_name() const {
  const char* name = openblas_get_corename();
  return name ? std::string(name) : std::string();
}

int BlasHandle::threads() const { return threads_; }

namespace {

// One row of C (m = 1) is a GEMV, c = alpha op(B)^T x + beta c with x the one
// row of op(A); OpenBLAS's GEMM would pack all of B for it and run padded
// tiles (OpenBLAS 0.3.27 forwards such calls to its GEMV itself; Debian 12
// ships 0.3.21). k = 0 stays a GEMM: a BLAS GEMV with an empty dimension
// returns without scaling c by beta.
struct GemvCall {
  CBLAS_ORDER order;
  CBLAS_TRANSPOSE trans;  // of B as stored: c = B^T x for op(B) = B
  int rows, cols, ldb, incx, incy;
};
std::optional<GemvCall> as_gemv(const GemmShape& s) {
  if (s.m != 1 || s.k == 0) return std::nullopt;
  const bool row = s.layout == Layout::RowMajor;
  const bool b_as_stored = s.op_b == Op::NoTrans;  // B stored k x n, else n x k
  // op(A)'s row runs along A's stored rows when exactly one of row-major and NoTrans holds.
  // The mutant: x read as contiguous whatever op(A) and the layout.
  const bool contiguous = row == (s.op_a == Op::NoTrans) || POPPER_MUTANT("gemm-blas-gemv-x-stride");
  const int incx = contiguous ? 1 : static_cast<int>(s.lda);
  return GemvCall{order_of(s.layout),
                  b_as_stored ? CblasTrans : CblasNoTrans,
                  static_cast<int>(b_as_stored ? s.k : s.n),
                  static_cast<int>(b_as_stored ? s.n : s.k),
                  static_cast<int>(s.ldb),
                  incx,
                  row ? 1 : static_cast<int>(s.ldc)};
}

}  // namespace

void BlasHandle::gemm(const GemmShape& s0, float alpha, std::span<const float> a, std::span<const float> b, float beta,
                      std::span<float> c) const {
  check_gemm_args(s0, a.size(), b.size(), c.size());
  const GemmShape s = with_tight_ld(s0);
  if (s.m == 0 || s.n == 0) return;
  if (const auto g = as_gemv(s)) {
    cblas_sgemv(g->order, g->trans, g->rows, g->cols, alpha, b.data(), g->ldb, a.data(), g->incx, beta, c.data(),
                g->incy);
    return;
  }
  cblas_sgemm(order_of(s.layout), trans_of(s.op_a), trans_of(s.op_b), static_cast<int>(s.m), static_cast<int>(s.n),
              static_cast<int>(s.k), alpha, a.data(), static_cast<int>(s.lda), b.data(), static_cast<int>(s.ldb), beta,
              c.data(), static_cast<int>(s.ldc));
}

void BlasHandle::gemm(const GemmShape& s0, double alpha, std::span<const double> a, std::span<const double> b,
                      double beta, std::span<double> c) const {
  check_gemm_args(s0, a.size(), b.size(), c.size());
  const GemmShape s = with_tight_ld(s0);
  if (s.m == 0 || s.n == 0) return;
  if (const auto g = as_gemv(s)) {
    cblas_dgemv(g->order, g->trans, g->rows, g->cols, alpha, b.data(), g->ldb, a.data(), g->incx, beta, c.data(),
                g->incy);
    return;
  }
  cblas_dgemm(order_of(s.layout), trans_of(s.op_a), trans_of(s.op_b), static_cast<int>(s.m), static_cast<int>(s.n),
              static_cast<int>(s.k), alpha, a.data(), static_cast<int>(s.lda), b.data(), static_cast<int>(s.ldb), beta,
              c.data(), static_cast<int>(s.ldc));
}

}  // namespace popper::gemm
