// Greedy first-fit coloring (coloring.hpp). For each row id we remember the
// classes already holding it, so an atom's forbidden classes are the union
// over its rows; cost is O(sum |S_a| * classes-per-row).
#include "impl/arrow/coloring.hpp"

#include <algorithm>
#include <unordered_map>
#include "popper/mutant.hpp"

namespace popper::arrow {

std::vector<std::vector<std::size_t>> color_by_support(std::span<const Support> supports) {
  std::unordered_map<std::int64_t, std::vector<std::size_t>> classes_of_row;
  std::vector<std::vector<std::size_t>> classes;
  std::vector<char> forbidden;
  for (std::size_t a = 0; a < supports.size(); ++a) {
    forbidden.assign(classes.size() + 1, 0);
    for (std::int64_t row : supports[a]) {
      auto it = classes_of_row.find(row);
      if (it == classes_of_row.end()) continue;
      for (std::size_t c : it->second) forbidden[c] = 1;
    }
    const std::size_t c =
        static_cast<std::size_t>(std::find(forbidden.begin(), forbidden.end(), 0) - forbidden.begin());
    if (c == classes.size()) classes.emplace_back();
    classes[c].push_back(a);
    const bool forget = POPPER_MUTANT("arrow-coloring-forgets-row");
    for (std::int64_t row : supports[a]) {
      if (forget && row == supports[a].back() && supports[a].size() > 1) continue;
      auto& list = classes_of_row[row];
      if (std::find(list.begin(), list.end(), c) == list.end()) list.push_back(c);
    }
  }
  return classes;
}

bool is_support_disjoint(std::span<const Support> supports, std::span<const std::size_t> atoms) {
  std::unordered_map<std::int64_t, std::size_t> owner;
  for (std::size_t a : atoms) {
    if (a >= supports.size()) return false;
    for (std::int64_t row : supports[a]) {
      auto [it, inserted] = owner.emplace(row, a);
      if (!inserted && it->second != a) return false;
    }
  }
  return true;
}

}  // namespace popper::arrow
