// Which CPUs a timed process runs on. Every suite row and ceiling process of
// a run is pinned: a row with T threads to the first T CPUs of the run's CPU
// set. Unpinned, the scheduler puts a 1-thread row on whichever CPU is free,
// and the CPUs of a virtual machine need not be equal: on a 2-vCPU EPYC guest
// one vCPU ran the same process 13-50% slower than the other, so a row's
// trials, and the two sides of a comparison, measured different CPUs.
#pragma once
#include <string>
#include <vector>

namespace popper::bench {

// The CPUs this process may run on (sched_getaffinity), ascending.
std::vector<int> allowed_cpus();

// "0", "2,3", "0-3,6": ascending, without repeats. Throws popper::Error on
// anything else (an empty list, a reversed range, a negative or junk entry).
std::vector<int> parse_cpu_list(const std::string& text);

// "0,2-3".
std::string cpu_list_text(const std::vector<int>& cpus);

// The run's CPU set: POPPER_BENCH_CPUS when set (every CPU in it must be
// allowed, else popper::Error names the ones that are not), else allowed_cpus().
std::vector<int> bench_cpus();

// The CPUs of a row with `threads` threads: the first `threads` of `set`, or
// all of `set` when it has fewer (the row's threads then share them).
std::vector<int> cpus_for(const std::vector<int>& set, int threads);

}  // namespace popper::bench
