// Coloring atoms by support overlap (seed section 1): atoms whose supports
// (sets of data-row ids) share no row are independent, so each color class
// can be solved as one batch of independent K=1 systems.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace popper::arrow {

using Support = std::vector<std::int64_t>;  // row ids of one atom (any order, duplicates allowed)

// Greedy first-fit coloring in atom order: atom a gets the smallest class none
// of whose atoms shares a row with a. Every atom lands in exactly one class;
// classes list atom indices in ascending order.
std::vector<std::vector<std::size_t>> color_by_support(std::span<const Support> supports);

// True when no two atoms of `atoms` (indices into supports) share a row.
bool is_support_disjoint(std::span<const Support> supports, std::span<const std::size_t> atoms);

}  // namespace popper::arrow
