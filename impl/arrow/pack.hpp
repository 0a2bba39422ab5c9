// BatchedK1Pack: the ragged CSR layout of a color class (seed section 3).
//
//   atom_offsets[B+1]  prefix sum of n_a           row_dims[B]   d_a
//   border_dims[B]     k_a                          D    sum n_a d_a^2   (column-major blocks)
//   B    sum n_a d_a k_a                            g_t  sum n_a d_a
//   hbb  sum k_a^2                                  g_b  sum k_a
//
// No padding: every buffer holds exactly the sum of its atoms' parts
// (bytes() is the sum of the parts; a falsifier asserts it). Per-atom offsets
// into the value buffers are derived by prefix sums (index_pack), never stored.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "impl/arrow/arrow.hpp"

namespace popper::arrow {

struct BatchedK1Pack {
  std::vector<std::int64_t> atom_offsets;
  std::vector<std::int32_t> row_dims;
  std::vector<std::int32_t> border_dims;
  std::vector<double> D, B, g_t, hbb, g_b;

  std::size_t atoms() const { return row_dims.size(); }
  std::size_t bytes() const;  // sum of size()*sizeof(element) over the nine buffers
};

// Where one atom lives inside the pack.
struct AtomSlice {
  std::size_t rows, d, k;
  std::size_t row_begin;                  // atom_offsets[a]
  std::size_t D, B, g_t, hbb, g_b, beta;  // element offsets (beta: into a sum-k output)
};

// A raw view of one atom, from a pack slice or an ArrowSystem.
struct AtomView {
  std::size_t rows, d, k;
  const double* D;
  const double* B;
  const double* g_t;
  const double* hbb;
  const double* g_b;
};

BatchedK1Pack pack_systems(std::span<const ArrowSystem> systems);  // checks dims first
// Checks the pack's internal consistency (sizes, dims in range) and returns the
// per-atom offsets; throws InvalidArgument naming the atom and field.
std::vector<AtomSlice> index_pack(const BatchedK1Pack& pack);
AtomView view_of(const BatchedK1Pack& pack, const AtomSlice& s);
AtomView view_of(const ArrowSystem& s);

}  // namespace popper::arrow
