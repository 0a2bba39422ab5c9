// Argument and buffer checks shared by every GEMM entry point.
//
// Stored shapes: A is m x k (NoTrans) or k x m (Trans); B is k x n or n x k;
// C is m x n. A matrix stored rows x cols with leading dimension ld occupies
//   RowMajor: (rows-1)*ld + cols      ColMajor: (cols-1)*ld + rows
// elements, and needs ld >= max(1, cols) (RowMajor) or ld >= max(1, rows).
#include <algorithm>
#include <limits>
#include <string>

#include "impl/gemm/gemm.hpp"
#include "popper/error.hpp"
#include "popper/mutant.hpp"

namespace popper::gemm {
namespace {

struct Stored {
  std::int64_t rows, cols;
};

Stored stored_a(const GemmShape& s) { return s.op_a == Op::NoTrans ? Stored{s.m, s.k} : Stored{s.k, s.m}; }
Stored stored_b(const GemmShape& s) { return s.op_b == Op::NoTrans ? Stored{s.k, s.n} : Stored{s.n, s.k}; }

void check_ld(const char* name, std::int64_t ld, std::int64_t need) {
  if (ld < need) {
    throw InvalidArgument(std::string("gemm: ld") + name + " = " + std::to_string(ld) + " is below the minimum " +
                          std::to_string(need));
  }
}

// The shape with the smallest legal leading dimensions.
GemmShape tightest(GemmShape s) {
  s.lda = s.ldb = s.ldc = 0;
  return with_tight_ld(s);
}

// Whether every check of check_gemm_args passes, in a few integer operations
// and no message: the entry points check every product, and the full checks
// cost 14 ns a call, 0.3% of a 64^3 SGEMM, of the 2% BENCH-GEMM-001 allows
// the wrapped tier in all. False sends the call to the full checks, which
// decide and say why.
bool plainly_valid(const GemmShape& s0, std::size_t a_len, std::size_t b_len, std::size_t c_len) {
  if ((s0.m | s0.n | s0.k | s0.lda | s0.ldb | s0.ldc) < 0) return false;
  const GemmShape s = with_tight_ld(s0);
  if (std::max({s.m, s.n, s.k, s.lda, s.ldb, s.ldc}) > std::numeric_limits<int>::max()) return false;
  const GemmShape tight = tightest(s0);
  if (s.lda < tight.lda || s.ldb < tight.ldb || s.ldc < tight.ldc) return false;
  // Every extent and ld below 2^31: a footprint fits in 63 bits.
  const bool row = s.layout == Layout::RowMajor;
  auto footprint = [row](Stored st, std::int64_t ld) {
    if (st.rows == 0 || st.cols == 0) return std::size_t{0};
    return static_cast<std::size_t>(row ? (st.rows - 1) * ld + st.cols : (st.cols - 1) * ld + st.rows);
  };
  const bool reads_ab = s.m > 0 && s.n > 0 && s.k > 0;
  const std::size_t need_a = reads_ab ? footprint(stored_a(s), s.lda) : 0;
  const std::size_t need_b = reads_ab ? footprint(stored_b(s), s.ldb) : 0;
  // Mutant: the quick test lets a buffer one element short through.
  const std::size_t slack = POPPER_MUTANT("gemm-args-quick-test-off-by-one") ? 1 : 0;
  return a_len + slack >= need_a && b_len + slack >= need_b && c_len + slack >= footprint({s.m, s.n}, s.ldc);
}

}  // namespace

std::size_t required_elements(Layout layout, std::int64_t rows, std::int64_t cols, std::int64_t ld) {
  if (rows < 0 || cols < 0 || ld < 0) throw InvalidArgument("gemm: negative extent or leading dimension");
  if (rows == 0 || cols == 0) return 0;
  const std::int64_t outer = layout == Layout::RowMajor ? rows : cols;
  const std::int64_t inner = layout == Layout::RowMajor ? cols : rows;
  // (outer-1)*ld + inner, with overflow detection: a shape whose footprint
  // does not fit in size_t cannot be backed by any buffer.
  std::size_t total = 0;
  if (__builtin_mul_overflow(static_cast<std::size_t>(outer - 1), static_cast<std::size_t>(ld), &total) ||
      __builtin_add_overflow(total, static_cast<std::size_t>(inner), &total)) {
    throw InvalidArgument("gemm: matrix footprint overflows size_t");
  }
  if (POPPER_MUTANT("gemm-required-elements-off-by-one") && total > 1) return total - 1;
  return total;
}

void check_gemm_args(const GemmShape& s0, std::size_t a_len, std::size_t b_len, std::size_t c_len) {
  if (POPPER_MUTANT("gemm-args-unchecked")) return;
  if (plainly_valid(s0, a_len, b_len, c_len)) return;
  if (s0.m < 0 || s0.n < 0 || s0.k < 0) {
    throw InvalidArgument("gemm: negative dimension (m=" + std::to_string(s0.m) + ", n=" + std::to_string(s0.n) +
                          ", k=" + std::to_string(s0.k) + ")");
  }
  if (s0.lda < 0 || s0.ldb < 0 || s0.ldc < 0) throw InvalidArgument("gemm: negative leading dimension");
  const GemmShape s = with_tight_ld(s0);
  const GemmShape tight = tightest(s0);
  check_ld("a", s.lda, tight.lda);
  check_ld("b", s.ldb, tight.ldb);
  check_ld("c", s.ldc, tight.ldc);
  const Stored a = stored_a(s), b = stored_b(s), c{s.m, s.n};
  // BLAS interfaces take 32-bit ints; refuse what they cannot express.
  constexpr std::int64_t int_max = std::numeric_limits<int>::max();
  if (s.m > int_max || s.n > int_max || s.k > int_max || s.lda > int_max || s.ldb > int_max || s.ldc > int_max) {
    throw InvalidArgument("gemm: dimension or leading dimension exceeds INT_MAX");
  }
  // When m or n is zero nothing is read; when k is zero A and B are not read.
  const bool reads_ab = s.m > 0 && s.n > 0 && s.k > 0;
  const std::size_t need_a = reads_ab ? required_elements(s.layout, a.rows, a.cols, s.lda) : 0;
  const std::size_t need_b = reads_ab ? required_elements(s.layout, b.rows, b.cols, s.ldb) : 0;
  const std::size_t need_c = required_elements(s.layout, c.rows, c.cols, s.ldc);
  // Mutant: one element short is accepted (an off-by-one in the comparison).
  const std::size_t slack = POPPER_MUTANT("gemm-args-off-by-one") ? 1 : 0;
  if (a_len + slack < need_a) throw BufferTooSmall("A", need_a, a_len);
  if (b_len + slack < need_b) throw BufferTooSmall("B", need_b, b_len);
  if (c_len + slack < need_c) throw BufferTooSmall("C", need_c, c_len);
}

}  // namespace popper::gemm
