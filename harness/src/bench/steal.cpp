#include "bench/steal.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <numeric>
#include <sstream>

namespace popper::bench {

namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::optional<std::map<int, long long>> read_steal_ticks() {
  std::ifstream in("/proc/stat");
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse_steal_ticks(ss.str());
}

}  // namespace

std::optional<std::map<int, long long>> parse_steal_ticks(const std::string& proc_stat) {
  std::map<int, long long> out;
  std::istringstream lines(proc_stat);
  for (std::string line; std::getline(lines, line);) {
    // "cpuN user nice system idle iowait irq softirq steal ..."; the "cpu" total line has no N.
    if (line.rfind("cpu", 0) != 0 || line.size() < 4 || line[3] < '0' || line[3] > '9') continue;
    std::istringstream f(line.substr(3));
    int cpu = -1;
    long long v[8];
    if (!(f >> cpu)) continue;
    int got = 0;
    while (got < 8 && f >> v[got]) ++got;
    if (got == 8) out[cpu] = v[7];
  }
  if (out.empty()) return std::nullopt;
  return out;
}

StealMeter::StealMeter(std::vector<int> cpus)
    : cpus_(std::move(cpus)), start_(read_steal_ticks()), t0_(now_seconds()) {}

double StealMeter::fraction() const {
  const double wall = now_seconds() - t0_;
  const long hz = ::sysconf(_SC_CLK_TCK);
  const auto end = read_steal_ticks();
  if (!start_ || !end || wall <= 0 || hz <= 0 || cpus_.empty()) return -1;
  long long ticks = 0;
  for (int c : cpus_) {
    const auto a = start_->find(c), b = end->find(c);
    if (a == start_->end() || b == end->end()) return -1;
    ticks += b->second - a->second;
  }
  return std::clamp(static_cast<double>(ticks) / static_cast<double>(hz) / (wall * static_cast<double>(cpus_.size())),
                    0.0, 1.0);
}

void StealLog::add(Tier tier, int threads, double fraction) {
  if (fraction >= 0) by_[{threads, tier}].push_back(fraction);
}

std::string StealLog::summary() const {
  std::string out;
  int threads = -1;
  for (const auto& [key, f] : by_) {
    const double mean = std::accumulate(f.begin(), f.end(), 0.0) / static_cast<double>(f.size());
    const auto over = std::count_if(f.begin(), f.end(), [](double x) { return x > 0.01; });
    const std::string part = fmt::format(
        "{} {:.1f}% (max {:.1f}%{})", tier_text(key.second), 100 * mean, 100 * *std::max_element(f.begin(), f.end()),
        over ? fmt::format(", {} of {} processes over 1%", over, f.size()) : std::string());
    if (key.first != threads) {
      out += (out.empty() ? "" : "; ") + fmt::format("{} thread{}: ", key.first, key.first == 1 ? "" : "s") + part;
      threads = key.first;
    } else {
      out += ", " + part;
    }
  }
  return out;
}

}  // namespace popper::bench
