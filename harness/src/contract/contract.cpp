#include "popper/contract.hpp"

#include <algorithm>

namespace popper {

template <class V, class F>
static auto find_in(const V& v, F pred) -> decltype(&v.front()) {
  auto it = std::find_if(v.begin(), v.end(), pred);
  return it == v.end() ? nullptr : &*it;
}

const FalsificationTest* Contract::find_test(const std::string& id) const {
  return find_in(falsification_tests, [&](const auto& t) { return t.id == id; });
}
const KaniHarness* Contract::find_harness(const std::string& id) const {
  return find_in(kani_harnesses, [&](const auto& h) { return h.id == id; });
}
const Obligation* Contract::find_obligation(const std::string& id) const {
  return find_in(obligations, [&](const auto& o) { return o.id == id; });
}
const Equation* Contract::find_equation(const std::string& name) const {
  return find_in(equations, [&](const auto& e) { return e.name == name; });
}

}  // namespace popper
