// Line diff (Myers' O(ND) greedy algorithm, keeping one frontier per edit
// distance d, so memory is O(D^2)) printed as a unified diff.
#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "popper/migrate.hpp"

namespace popper {

namespace {

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::size_t p = 0;
  while (p < s.size()) {
    const std::size_t e = s.find('\n', p);
    if (e == std::string::npos) {
      out.push_back(s.substr(p));  // last line without a newline
      break;
    }
    out.push_back(s.substr(p, e - p + 1));
    p = e + 1;
  }
  return out;
}

enum class Op { Keep, Del, Add };

// The edit script turning a into b, as (op, index into a or b).
std::vector<std::pair<Op, std::size_t>> script(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  const long n = static_cast<long>(a.size()), m = static_cast<long>(b.size());
  const long max = n + m;
  std::vector<std::vector<long>> trace;  // trace[d][k + d] = furthest x on diagonal k after d edits
  std::vector<long> v(static_cast<std::size_t>(2 * max + 3), 0);
  const long off = max + 1;
  long found_d = -1;
  for (long d = 0; d <= max && found_d < 0; ++d) {
    for (long k = -d; k <= d; k += 2) {
      long x = (k == -d || (k != d && v[off + k - 1] < v[off + k + 1])) ? v[off + k + 1] : v[off + k - 1] + 1;
      long y = x - k;
      while (x < n && y < m && a[x] == b[y]) ++x, ++y;
      v[off + k] = x;
      if (x >= n && y >= m) found_d = d;
    }
    trace.emplace_back(v.begin() + (off - d), v.begin() + (off + d + 1));
  }
  std::vector<std::pair<Op, std::size_t>> ops;
  long x = n, y = m;
  for (long d = found_d; d > 0; --d) {
    const auto& prev = trace[static_cast<std::size_t>(d - 1)];
    auto at = [&](long k) { return prev[static_cast<std::size_t>(k + d - 1)]; };
    const long k = x - y;
    const bool down = k == -d || (k != d && at(k - 1) < at(k + 1));
    const long pk = down ? k + 1 : k - 1;
    const long px = at(pk), py = px - pk;
    while (x > px + (down ? 0 : 1) && y > py + (down ? 1 : 0))
      ops.emplace_back(Op::Keep, static_cast<std::size_t>(--x)), --y;
    if (down) {
      ops.emplace_back(Op::Add, static_cast<std::size_t>(--y));
    } else {
      ops.emplace_back(Op::Del, static_cast<std::size_t>(--x));
    }
  }
  while (x > 0 && y > 0) ops.emplace_back(Op::Keep, static_cast<std::size_t>(--x)), --y;
  std::reverse(ops.begin(), ops.end());
  return ops;
}

std::string line_out(char mark, const std::string& line) {
  std::string s(1, mark);
  s += line;
  if (s.empty() || s.back() != '\n') s += "\n\\ No newline at end of file\n";
  return s;
}

}  // namespace

std::string unified_diff(const std::string& before, const std::string& after, const std::string& from_label,
                         const std::string& to_label) {
  if (before == after) return {};
  const auto a = lines_of(before), b = lines_of(after);
  const auto ops = script(a, b);
  constexpr std::size_t kContext = 3;
  std::string out = fmt::format("--- {}\n+++ {}\n", from_label, to_label);
  // Positions in a and b before each op.
  std::vector<std::size_t> ia(ops.size() + 1), ib(ops.size() + 1);
  for (std::size_t i = 0; i < ops.size(); ++i) {
    ia[i + 1] = ia[i] + (ops[i].first != Op::Add ? 1 : 0);
    ib[i + 1] = ib[i] + (ops[i].first != Op::Del ? 1 : 0);
  }
  std::size_t i = 0;
  while (i < ops.size()) {
    if (ops[i].first == Op::Keep) {
      ++i;
      continue;
    }
    // A hunk: from kContext keeps before this change to kContext keeps after
    // the last change that is within 2*kContext of the previous one.
    std::size_t start = i >= kContext ? i - kContext : 0;
    while (start < i && ops[start].first != Op::Keep) ++start;
    std::size_t end = i;
    for (std::size_t j = i; j < ops.size(); ++j) {
      if (ops[j].first != Op::Keep) {
        end = j + 1;
      } else if (j - end >= 2 * kContext) {
        break;
      }
    }
    const std::size_t stop = std::min(ops.size(), end + kContext);
    const std::size_t la = ia[stop] - ia[start], lb = ib[stop] - ib[start];
    out += fmt::format("@@ -{},{} +{},{} @@\n", la ? ia[start] + 1 : ia[start], la, lb ? ib[start] + 1 : ib[start], lb);
    for (std::size_t j = start; j < stop; ++j) {
      const auto& [op, idx] = ops[j];
      out += op == Op::Keep ? line_out(' ', a[idx]) : op == Op::Del ? line_out('-', a[idx]) : line_out('+', b[idx]);
    }
    i = stop;
  }
  return out;
}

}  // namespace popper
