// The CPU's pace: how long a fixed register-only FMA loop takes on a
// process's CPUs, right before and right after the process. On a 2-vCPU EPYC
// guest the host took part of the cores' FP throughput for tens of seconds at
// a time: the loop then ran 1.5x slower, and so did every GEMM timed in that
// period, whichever side of a ratio it belonged to, while the clock, steal
// and a latency-bound loop stayed the same. A ratio whose two sides drew
// different shares of such periods measured the host, not the kernels.
//
// A process on several CPUs also carries its link: the round trip of a cache
// line between its first CPU and each other one, before and after it. The
// same guest's two vCPUs sat on one CCD of the host (round trip 51-79 ns) or
// on two (312-382 ns), switching every few seconds; OpenBLAS's 2-thread GEMM
// of 128^3 f64, whose threads share their packed panels every call, took
// 51-61 us in the first placement and 92-106 us in the second, in each of 140
// processes, and so did its call from C or through popper, whichever drew it.
// A process ran far when its link is over kFarLink x the run's closest; a
// trial whose two sides' links differ by over kFarLink x drew two placements.
//
// So every timed process carries its pace (BenchRow::pace, by trial), and
// each repetition of a 1-thread row the pace around it inside its process
// (BenchRow::sample_pace, popper/pace.h); a process or a repetition ran slow
// when its pace is over kSlowPace x the fastest pace of the run on as many
// CPUs. A ratio claim sets aside the trials in which one side
// ran slow and the other did not, or the two sides' CPUs were placed apart
// differently (claims.hpp), and is judged on the rest.
#pragma once
#include <map>
#include <set>
#include <string>
#include <vector>

#include "bench/csv.hpp"

namespace popper::bench {

// Over this many times the run's fastest pace on as many CPUs: slow. The two
// periods seen read 1.45-1.6x apart; one period's own spread was under 10%.
inline constexpr double kSlowPace = 1.2;

// Over this many times the run's closest link on as many CPUs: far. The two
// placements seen read 4-7x apart; one placement's own spread was under 1.6x.
inline constexpr double kFarLink = 2.0;

// The loop (popper/pace.h): AVX2 FMA chains whose addends are loads from the
// L1, where the CPU has them (bound by the FP pipes' and the load ports'
// throughput: they see a sibling hyperthread's use of either), or the
// portable multiply-add chains every CPU runs (bound by their latency: they
// see a rival on the CPU, not a sibling's use of the pipes).
enum class PaceLoop { Widest, Portable };

// Seconds of the fixed loop on each of `cpus` at once (a thread pinned to
// each), on the slowest CPU; < 0 when a thread could not be pinned.
double measure_pace(const std::vector<int>& cpus, PaceLoop loop = PaceLoop::Widest);

// Seconds of a cache line's round trip between cpus[0] and each other CPU of
// `cpus` (two threads pinned there, handing it back and forth), the farthest
// pair's; the least of a few batches, so a preempted batch does not count.
// 0 for one CPU; < 0 when a thread could not be pinned or the other never ran.
double measure_link(const std::vector<int>& cpus);

// The pace and the link around one process: measured at construction and at
// seconds() and link_seconds(); a process is as slow, and as far, as the
// worse end. With `probe` false (a process the device times, family.hpp's
// host_timed) nothing is measured and both read as unknown.
class PaceMeter {
 public:
  explicit PaceMeter(std::vector<int> cpus, bool probe = true);
  double seconds() const;       // < 0 when unknown
  double link_seconds() const;  // 0 on one CPU, < 0 when unknown

 private:
  std::vector<int> cpus_;
  double before_, link_before_;  // < 0: not probed, or unknown
};

// The fastest pace of a table's rows, around processes and repetitions, by
// thread count (a row with T threads ran on T CPUs): the pace at rank
// (n - 1) / kFastestPaceRank of its n probes from the fastest, so the least
// of up to 100 and the 1% quantile of more. A host that ran faster for one
// burst does not set the pace of the run: in a main job on a Xeon the
// repetitions' paces read 6.71 ms least, 7.73 at 1% and 8.19 at the median;
// judged by the least, 4592 of 4736 ran slow (349 by the 1% quantile) and a
// wide_640 ratio was left 6 of 254 trials.
inline constexpr std::size_t kFastestPaceRank = 100;
std::map<int, double> fastest_pace(const BenchTable& t);

// `r` judged by the pace probed around each repetition inside its process
// (BenchRow::sample_pace): in a trial with a repetition at a steady pace, the
// slow repetitions are left out, and the trial's pace is that of the ones
// kept; in a trial whose every probed repetition ran slow, all are kept and
// the trial is slow. Trials without such probes are as they were. The host's
// share of a core changes within a process's second: the probes around the
// process alone miss it.
BenchRow steady_samples(const BenchRow& r, const std::map<int, double>& fastest);

// Whether row r's process of `trial` ran slow; false when its pace is unknown.
bool ran_slow(const BenchRow& r, int trial, const std::map<int, double>& fastest);

// The trials both rows measured.
std::set<int> shared_trials(const BenchRow& a, const BenchRow& b);

// The trials both rows measured in which exactly one of them ran slow.
std::set<int> mixed_pace_trials(const BenchRow& a, const BenchRow& b, const std::map<int, double>& fastest);

// The trials both rows measured in which both ran slow. A ratio sets them
// aside too when at least kSteadyTrials of its other trials ran steady on both
// sides: two slow processes meet the host's contention at different strengths
// (small_64 f64 at 2 threads, wrapped / ceiling, on a loaded host: sd 7.7%
// and median 1.014 over 35 trials both slow, 2.2% and 1.0045 over 12 both steady).
inline constexpr int kSteadyTrials = 6;
std::set<int> both_slow_trials(const BenchRow& a, const BenchRow& b, const std::map<int, double>& fastest);

// The closest link of a table's rows (BenchRow::link), by thread count.
std::map<int, double> closest_link(const BenchTable& t);

// Whether row r's process of `trial` ran far; false when its link is unknown.
bool ran_far(const BenchRow& r, int trial, const std::map<int, double>& closest);

// The trials both rows measured whose two links differ by over kFarLink x:
// the two processes drew different placements. Judged pairwise, not against
// the run's closest link: three placements were seen (about 25, 60 and 330 ns),
// and against the closest the second and third are both far.
std::set<int> mixed_link_trials(const BenchRow& a, const BenchRow& b);

// `r` without the samples of `trials`.
BenchRow without_trials(const BenchRow& r, const std::set<int>& trials);

// The run's pace by thread count and tier, for the report's header:
// "1 thread: fastest 7.05 ms; slow (over 1.2x) in ceiling 4 of 40, hand 1 of 16"
// (processes), and on more CPUs their link: "2 threads: ...; link closest
// 0.059 us; far (over 2x) in ceiling 9 of 20, hand 8 of 10"; "" when nothing
// was measured.
std::string pace_summary(const BenchTable& t);

// "row,trial,pace_seconds,median_seconds,slow,...,link_seconds,far,read_gbs"
// per row and trial: which processes ran on a slow CPU or far apart, and the
// read their suite probed (0: none), for the report folder.
std::string pace_csv(const BenchTable& t);

}  // namespace popper::bench
