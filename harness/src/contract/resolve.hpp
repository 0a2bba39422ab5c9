// Resolving the names a contract uses for its own parts. Strict resolves ids
// only; pv also resolves what pv contracts write, since pv obligations have no
// ids: an obligation's property text (compared as a slug), its 1-based
// position, a derived id; a qa_gate check naming a test by its rule text, or
// an enforcement rule whose `check` names one test. `popper migrate` rewrites
// each such reference to the id it resolved to.
#pragma once
#include <cstddef>
#include <string>

#include "popper/contract.hpp"

namespace popper::resolve {

inline constexpr std::size_t npos = static_cast<std::size_t>(-1);

// "Output is finite" -> "output_is_finite": lower case, runs of other bytes -> '_'.
std::string slug(const std::string& text);

enum class How { None, Ambiguous, Id, Property, Position };
struct ObligationRef {
  How how = How::None;
  std::size_t index = npos;
};
ObligationRef obligation(const Contract& c, const std::string& text);

enum class CheckHow {
  None,
  Ambiguous,
  Equation,
  Test,
  Harness,
  Benchmark,
  ObligationId,
  ObligationProperty,
  TestRule,
  Enforcement
};
struct CheckRef {
  CheckHow how = CheckHow::None;
  std::string target;  // the id it resolved to (equations: the name)
};
CheckRef qa_check(const Contract& c, const std::string& text);

// The one test id of this contract that an enforcement rule's `check` names
// (e.g. "contract_tests::FALSIFY-RN-001"), or "".
std::string enforcement_test(const Contract& c, const EnforcementRule& e);

}  // namespace popper::resolve
