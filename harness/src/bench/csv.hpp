// The bench CSV: one schema for every family, tier and backend
// (documented in baselines/README.md).
//
//   # key: value                 metadata (commit, machine fingerprint, peaks, ...)
//   family,tier,...,samples      the header line (kBenchColumns, in that order)
//   gemm,hand,cpu:avx2,...       one row per (family, tier, backend, shape,
//                                precision, threads, cache_mode)
//   # end rows=N                 trailer: a file without it is truncated
//
// Writes are atomic (temp file in the same directory, fsync, rename). The
// reader rejects anything malformed with BenchFileError naming file:line.
#pragma once
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "popper/bench_protocol.hpp"
#include "popper/error.hpp"

namespace popper::bench {

class BenchFileError : public Error {
 public:
  using Error::Error;
};

// What a row measures: `seconds` (wall time per iteration) or `instructions`
// (callgrind instruction count per iteration, the deterministic CI gate unit).
inline constexpr const char* kUnitSeconds = "seconds";
inline constexpr const char* kUnitInstructions = "instructions";

// A tier named in a file or on the command line; throws InvalidArgument
// naming `where` and the tiers there are.
Tier tier_from(const std::string& name, const std::string& where);
std::vector<Tier> tiers_from(const std::vector<std::string>& names, const std::string& where);
// The tier's name as a std::string, for messages and keys built by concatenation.
inline std::string tier_text(Tier t) { return std::string(to_string(t)); }

struct BenchKey {
  std::string family;
  Tier tier = Tier::Hand;
  std::string backend, shape, precision;
  int threads = 1;
  std::string cache_mode = "warm";
  bool operator==(const BenchKey&) const = default;
  auto operator<=>(const BenchKey&) const = default;
  std::string to_string() const;  // family/tier/backend/shape/precision/threads:N/cache_mode
};

struct BenchRow {
  BenchKey key;
  std::string unit = kUnitSeconds;
  std::vector<double> samples;     // one value per repetition, per iteration, in `unit`
  std::vector<int> trials;         // the trial (process) of each sample; empty = all trial 0
  double work_per_iter = 0;        // FLOP or items per iteration
  std::string work_unit = "flop";  // flop | items
  double bytes_per_iter = 0;
  double pct_of_peak = -1;  // < 0: not applicable / peak unknown
  Verdict verdict;          // the CSV's verdict column, typed
  // Non-empty: an implausible vendor row (plausibility.hpp), never the operand
  // of a ratio. Not a CSV column: recomputed from the rows when a table is
  // read, and listed in its `invalid_vendor_rows` metadata.
  std::string invalid_reason;
  // Bytes/s: the fastest a suite's read probe read this row's footprint on its
  // threads (bench/common/read_bandwidth.hpp); 0 when none. Not a CSV column:
  // compare lists it in the table's `footprint_read_gbs` metadata.
  double read_bound = 0;
  // The probes travel with the row (CSV columns trial_read, trial_pace,
  // trial_link, sample_pace), so a table read back, shards merged, is judged
  // on the trials its run judged; a file of the older schema has none, and
  // its claims are judged on every trial.
  // The same probe's bytes/s in the process of each trial: a bandwidth claim
  // judges each process against its own read (claims.hpp).
  std::map<int, double> read;
  // Seconds of the pace probe around the process of each trial (pace.hpp); a
  // trial without one was not probed.
  std::map<int, double> pace;
  // Seconds of a cache line's round trip between the CPUs of the process of
  // each trial (pace.hpp, PaceMeter::link_seconds); only processes on several
  // CPUs have one.
  std::map<int, double> link;
  // Seconds of the pace probe around each sample's repetition, inside its
  // process (popper/pace.h; 1-thread rows); 0 where not probed.
  std::vector<double> sample_pace;

  // Derived from samples (what the CSV stores alongside them).
  double median() const;
  int trial_of(std::size_t sample) const { return sample < trials.size() ? trials[sample] : 0; }
  std::set<int> trials_ran() const;  // the trials of its samples
  double pace_of(std::size_t sample) const { return sample < sample_pace.size() ? sample_pace[sample] : 0; }
  double throughput() const;  // work_per_iter / median seconds; 0 for instruction rows
  bool valid() const { return invalid_reason.empty(); }
};

// Environment variables, in order: what a run's processes ran under.
using Environment = std::vector<std::pair<std::string, std::string>>;

// One ceiling configuration a run did not measure, and why (an entry of the
// `ceiling_not_run` metadata): "<vendor> <kernels> (<setting>): <status>:
// <reason>", or "<vendor> <setting>: <status>: <reason>" without a kernel set.
struct CeilingSkip {
  std::string vendor;   // blis
  std::string kernels;  // the kernel set asked for (zen); may be empty
  std::string setting;  // BLIS_ARCH_TYPE=8, OPENBLAS_CORETYPE unset, default
  std::string status;   // cpu_lacks, not_built, screened_out, failed, missing
  std::string reason;
  std::string to_string() const;
  static std::optional<CeilingSkip> parse(const std::string& text);  // nullopt: not of that form
};

struct BenchTable {
  std::vector<std::pair<std::string, std::string>> metadata;  // in file order
  std::vector<BenchRow> rows;

  std::optional<std::string> meta(const std::string& key) const;
  void set_meta(const std::string& key, const std::string& value);  // replaces or appends
  const BenchRow* find(const BenchKey& key) const;

  // Metadata that holds several facts, typed: one writer and one reader each.
  // The text is what popper has always written, so older CSVs read the same.
  // An environment (`environment`, `gate_environment`): "K=V K2=V2", or "none".
  Environment environment(const std::string& key = "environment") const;
  void set_environment(const Environment& env, const std::string& key = "environment");
  // A list (`ceiling_vendors`, `vendor_warnings`): entries joined by " | ", or
  // "none"; an absent key reads as an empty list.
  std::vector<std::string> meta_list(const std::string& key) const;
  void set_meta_list(const std::string& key, const std::vector<std::string>& entries);
  // `ceiling_not_run`, a list of CeilingSkip (an entry of another form is left out).
  std::vector<CeilingSkip> ceiling_not_run() const;
  void set_ceiling_not_run(const std::vector<CeilingSkip>& skips);
  // `footprint_read_gbs`: per shape, precision, thread count and cache mode,
  // the fastest read_bound of the rows ("<shape>/<precision>/threads:<n>[/cold]=<GB/s>"
  // entries: a cold row's probe read its footprint from memory; one precision's
  // footprint bounds no other's); footprint_read in bytes/s, 0 when the table
  // has none for them. An entry without the precision (written before it was
  // keyed) serves every precision.
  void set_footprint_reads();
  double footprint_read(const std::string& shape, const std::string& precision, int threads,
                        const std::string& cache_mode = "warm") const;
};

// Column names, in file order.
const std::vector<std::string>& bench_columns();

std::string format_bench_csv(const BenchTable& table);
// Parses text; `file` is used in error messages only.
BenchTable parse_bench_csv(const std::string& text, const std::string& file);

void write_bench_csv(const std::string& path, const BenchTable& table);
BenchTable read_bench_csv(const std::string& path);  // throws BenchFileError

}  // namespace popper::bench
