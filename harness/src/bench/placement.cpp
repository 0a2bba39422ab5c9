#include "bench/placement.hpp"

#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <set>

#include "popper/error.hpp"

namespace popper::bench {

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

namespace {

int parse_cpu(const std::string& text, const std::string& whole) {
  const bool digits =
      !text.empty() && std::all_of(text.begin(), text.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
  if (!digits || text.size() > 4 || std::atoi(text.c_str()) >= CPU_SETSIZE)
    throw Error("CPU list '" + whole + "': '" + text + "' is not a CPU number (0 to " +
                std::to_string(CPU_SETSIZE - 1) + ")");
  return std::atoi(text.c_str());
}

}  // namespace

std::vector<int> parse_cpu_list(const std::string& text) {
  std::set<int> cpus;
  std::size_t at = 0;
  if (text.empty()) throw Error("CPU list is empty (expected e.g. 0 or 2,3 or 0-3)");
  while (at <= text.size()) {
    const auto comma = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, comma - at);
    const auto dash = item.find('-');
    const int lo = parse_cpu(item.substr(0, dash), text);
    const int hi = dash == std::string::npos ? lo : parse_cpu(item.substr(dash + 1), text);
    if (hi < lo) throw Error("CPU list '" + text + "': the range '" + item + "' runs backwards");
    for (int c = lo; c <= hi; ++c) cpus.insert(c);
    at = comma + 1;
  }
  return {cpus.begin(), cpus.end()};
}

std::string cpu_list_text(const std::vector<int>& cpus) {
  std::string out;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    out += (out.empty() ? "" : ",") + std::to_string(cpus[i]);
    if (j > i) out += "-" + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

std::vector<int> bench_cpus() {
  const auto allowed = allowed_cpus();
  const char* env = std::getenv("POPPER_BENCH_CPUS");
  if (!env || !*env) return allowed;
  std::vector<int> asked;
  try {
    asked = parse_cpu_list(env);
  } catch (const Error& e) {
    throw Error(std::string("POPPER_BENCH_CPUS: ") + e.what());
  }
  std::vector<int> missing;
  for (int c : asked)
    if (!std::binary_search(allowed.begin(), allowed.end(), c)) missing.push_back(c);
  if (!missing.empty())
    throw Error("POPPER_BENCH_CPUS=" + std::string(env) + ": CPU(s) " + cpu_list_text(missing) +
                " not available to this process (it may run on " + cpu_list_text(allowed) + ")");
  return asked;
}

std::vector<int> cpus_for(const std::vector<int>& set, int threads) {
  if (threads <= 0 || static_cast<std::size_t>(threads) >= set.size()) return set;
  return {set.begin(), set.begin() + threads};
}

}  // namespace popper::bench
