// Steal time: what the hypervisor gave a guest's CPUs to someone else
// (/proc/stat's 8th per-CPU field). A row on 2 threads waits at every join
// for a vCPU that is not running, so steal during one side of a ratio's
// trials moves the ratio while both sides ran the same code. `bench compare`
// measures it around every process and reports it by tier (metadata "steal").
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bench/csv.hpp"

namespace popper::bench {

// Per-CPU steal ticks from the text of /proc/stat; nullopt when no cpuN line
// has a steal field (not Linux, or a kernel without it).
std::optional<std::map<int, long long>> parse_steal_ticks(const std::string& proc_stat);

// Steal on a set of CPUs from construction to fraction().
class StealMeter {
 public:
  explicit StealMeter(std::vector<int> cpus);
  // Stolen time / (wall time x CPUs) since construction; < 0 when unknown.
  double fraction() const;

 private:
  std::vector<int> cpus_;
  std::optional<std::map<int, long long>> start_;
  double t0_;
};

// What the processes of a run lost to steal, by tier and thread count.
class StealLog {
 public:
  void add(Tier tier, int threads, double fraction);  // fraction < 0 (unknown) is ignored
  // "2 threads: ceiling 0.3% (max 1.2%), wrapped 4.1% (max 22.0%, 3 of 12 processes over 1%); ..."
  // "" when nothing was measured.
  std::string summary() const;

 private:
  std::map<std::pair<int, Tier>, std::vector<double>> by_;
};

}  // namespace popper::bench
