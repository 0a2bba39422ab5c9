// GEMM under contract (contracts/gemm/gemm-v1.yaml):
//
//   C = alpha * op(A) * op(B) + beta * C,   op(X) = X or X^T
//
// op(A) is m x k, op(B) is k x n, C is m x n. Matrices are dense with leading
// dimension ld (row stride for RowMajor, column stride for ColMajor). When
// beta == 0, C is written without being read (NaN in C does not propagate).
//
// Every entry point checks dimensions and buffer sizes (check_gemm_args)
// before touching memory or calling a library, and throws
// popper::BufferTooSmall naming the operand, or popper::InvalidArgument.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace popper::gemm {

enum class Layout { RowMajor, ColMajor };
enum class Op { NoTrans, Trans };

struct GemmShape {
  Layout layout = Layout::RowMajor;
  Op op_a = Op::NoTrans;
  Op op_b = Op::NoTrans;
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t lda = 0, ldb = 0, ldc = 0;  // 0 means "tight": the minimum legal value
};

// Fills zero leading dimensions with their tight values; returns the result.
// Inline, as every entry point calls it on every product, the checks once
// more: out of line, the 64-byte shape passed through memory in pieces that
// did not forward, ~11 ns a call on Zen 4, and the wrapped tier read 0.6%
// slower than OpenBLAS called directly on a 64^3 SGEMM.
inline GemmShape with_tight_ld(GemmShape s) {
  const bool row = s.layout == Layout::RowMajor;
  // The stored operand's inner extent (columns row-major, rows column-major), at least 1.
  auto tight = [row](std::int64_t rows, std::int64_t cols) {
    const std::int64_t inner = row ? cols : rows;
    return inner > 1 ? inner : std::int64_t{1};
  };
  const bool a_t = s.op_a != Op::NoTrans, b_t = s.op_b != Op::NoTrans;
  if (s.lda == 0) s.lda = a_t ? tight(s.k, s.m) : tight(s.m, s.k);
  if (s.ldb == 0) s.ldb = b_t ? tight(s.n, s.k) : tight(s.k, s.n);
  if (s.ldc == 0) s.ldc = tight(s.m, s.n);
  return s;
}

// Elements a matrix stored as `rows x cols` (as stored, i.e. before op) with
// leading dimension ld occupies in the given layout: (outer-1)*ld + inner.
// Zero when rows or cols is zero.
std::size_t required_elements(Layout layout, std::int64_t rows, std::int64_t cols, std::int64_t ld);

// Throws InvalidArgument for negative dims or too-small leading dimensions,
// BufferTooSmall("A"|"B"|"C", required, actual) for short buffers.
void check_gemm_args(const GemmShape& s, std::size_t a_len, std::size_t b_len, std::size_t c_len);

}  // namespace popper::gemm
