#include "contract/resolve.hpp"

#include <algorithm>
#include <cctype>

namespace popper::resolve {

std::string slug(const std::string& text) {
  std::string out;
  for (char ch : text) {
    const auto u = static_cast<unsigned char>(ch);
    if (u >= 0x80 || std::isalnum(u)) {
      out += u < 0x80 ? static_cast<char>(std::tolower(u)) : ch;
    } else if (!out.empty() && out.back() != '_') {
      out += '_';
    }
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  return out;
}

namespace {
template <class V, class Key>
ObligationRef unique_match(const V& items, Key key, const std::string& want, How how) {
  ObligationRef r;
  if (want.empty()) return r;
  for (std::size_t i = 0; i < items.size(); ++i)
    if (key(items[i]) == want) {
      if (r.index != npos) return {How::Ambiguous, npos};
      r = {how, i};
    }
  return r;
}
}  // namespace

ObligationRef obligation(const Contract& c, const std::string& text) {
  if (text.empty()) return {};
  for (std::size_t i = 0; i < c.obligations.size(); ++i)
    if (c.obligations[i].id == text) return {How::Id, i};
  if (c.profile != Profile::Pv) return {};
  if (std::all_of(text.begin(), text.end(), [](char ch) { return ch >= '0' && ch <= '9'; }) && text.size() < 7) {
    const std::size_t n = std::stoul(text);
    if (n >= 1 && n <= c.obligations.size()) return {How::Position, n - 1};
    return {};
  }
  return unique_match(
      c.obligations, [](const Obligation& o) { return slug(o.property); }, slug(text), How::Property);
}

std::string enforcement_test(const Contract& c, const EnforcementRule& e) {
  std::string found;
  for (const auto& t : c.falsification_tests) {
    if (t.id.empty()) continue;
    for (std::size_t at = e.check.find(t.id); at != std::string::npos; at = e.check.find(t.id, at + 1)) {
      const auto is_id_char = [](char ch) {
        return std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_';
      };
      const bool starts = at == 0 || !is_id_char(e.check[at - 1]);
      const std::size_t end = at + t.id.size();
      const bool ends = end == e.check.size() || !is_id_char(e.check[end]);
      if (starts && ends) {
        if (!found.empty() && found != t.id) return {};
        found = t.id;
      }
    }
  }
  return found;
}

CheckRef qa_check(const Contract& c, const std::string& text) {
  if (text.empty()) return {};
  if (c.find_equation(text)) return {CheckHow::Equation, text};
  if (c.find_test(text)) return {CheckHow::Test, text};
  if (c.find_harness(text)) return {CheckHow::Harness, text};
  if (std::any_of(c.benchmarks.begin(), c.benchmarks.end(), [&](const BenchmarkClaim& b) { return b.id == text; }))
    return {CheckHow::Benchmark, text};
  if (c.find_obligation(text)) return {CheckHow::ObligationId, text};
  if (c.profile != Profile::Pv) return {};
  const std::string want = slug(text);
  const ObligationRef o = unique_match(
      c.obligations, [](const Obligation& x) { return slug(x.property); }, want, How::Property);
  const ObligationRef t = unique_match(
      c.falsification_tests, [](const FalsificationTest& x) { return slug(x.rule); }, want, How::Property);
  std::string enforced;
  for (const auto& e : c.enforcement)
    if (e.name == text) enforced = enforcement_test(c, e);
  // A test is what the audit can judge, so a rule-text or enforcement match
  // wins over a property match; two ways that disagree are ambiguous.
  if (t.how == How::Ambiguous) return {CheckHow::Ambiguous, {}};
  if (t.index != npos) {
    const std::string& id = c.falsification_tests[t.index].id;
    if (!enforced.empty() && enforced != id) return {CheckHow::Ambiguous, {}};
    return {CheckHow::TestRule, id};
  }
  if (!enforced.empty()) return {CheckHow::Enforcement, enforced};
  if (o.how == How::Ambiguous) return {CheckHow::Ambiguous, {}};
  if (o.index != npos) return {CheckHow::ObligationProperty, c.obligations[o.index].id};
  return {};
}

}  // namespace popper::resolve
