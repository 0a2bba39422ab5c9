// The bench protocol between a family's suite and popper's harness: the tier
// set, the benchmark name, the verdict label, and the operand fill a suite
// shares with its raw-C ceiling (popper/ceiling_cli.h). Each is written and read
// here only: a suite formats names and verdicts with these functions (through
// popper/bench.hpp), and `popper bench` parses them back with the same ones.
// Header-only and free of Google Benchmark, so the harness, a suite and a
// consumer's tools share it.
#pragma once
#include <array>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace popper::bench {

// Every tier a row can belong to. Ceiling rows come from the raw-C vendor
// programs; the others from a family's suite. Pack times only an operand
// layout transform (nsa); Device is a family's own device path beside its
// CPU tiers (decode).
enum class Tier : unsigned char { Ceiling, Wrapped, Hand, Reference, Pack, Device };

inline constexpr std::array<Tier, 6> kTiers = {Tier::Ceiling,   Tier::Wrapped, Tier::Hand,
                                               Tier::Reference, Tier::Pack,    Tier::Device};

constexpr std::string_view to_string(Tier t) {
  switch (t) {
    case Tier::Ceiling: return "ceiling";
    case Tier::Wrapped: return "wrapped";
    case Tier::Hand: return "hand";
    case Tier::Reference: return "reference";
    case Tier::Pack: return "pack";
    case Tier::Device: return "device";
  }
  return "?";
}

constexpr std::optional<Tier> parse_tier(std::string_view s) {
  for (Tier t : kTiers)
    if (to_string(t) == s) return t;
  return std::nullopt;
}

// "ceiling, wrapped, ...": the tiers as an error message lists them.
inline std::string tier_names() {
  std::string out;
  for (Tier t : kTiers) out.append(out.empty() ? "" : ", ").append(to_string(t));
  return out;
}

// Where a row's operands are when each timed call starts. Warm: wherever
// the previous call left them (in cache when they fit). Cold: in memory only;
// the cache is evicted before every call, outside the timed interval, as a
// kernel that streams its operands once per use (a decode step's weights)
// meets them.
enum class CacheMode : unsigned char { Warm, Cold };

constexpr std::string_view to_string(CacheMode m) { return m == CacheMode::Cold ? "cold" : "warm"; }

constexpr std::optional<CacheMode> parse_cache_mode(std::string_view s) {
  if (s == "warm") return CacheMode::Warm;
  if (s == "cold") return CacheMode::Cold;
  return std::nullopt;
}

// <family>/<tier>/<shape>/<precision>/threads:<n>[/cold], as Google Benchmark
// reports it (parse also accepts the suffixes it appends: /real_time, ...).
// A warm row's name has no cache part, so the names of warm rows are the same
// as before cache modes existed.
struct BenchName {
  std::string family;
  Tier tier = Tier::Hand;
  std::string shape, precision;
  int threads = 1;
  CacheMode cache = CacheMode::Warm;
  bool operator==(const BenchName&) const = default;
};

inline std::string format_bench_name(const BenchName& n) {
  std::string s;
  s.reserve(n.family.size() + n.shape.size() + n.precision.size() + 40);
  s.append(n.family).append("/").append(to_string(n.tier)).append("/").append(n.shape).append("/");
  s.append(n.precision).append("/threads:").append(std::to_string(n.threads));
  if (n.cache == CacheMode::Cold) s.append("/cold");
  return s;
}

namespace detail {
inline std::vector<std::string_view> split_name(std::string_view s) {
  std::vector<std::string_view> parts;
  for (std::size_t start = 0;;) {
    const std::size_t slash = s.find('/', start);
    parts.push_back(s.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start));
    if (slash == std::string_view::npos) return parts;
    start = slash + 1;
  }
}
inline bool is_gbench_suffix(std::string_view p) {
  return p == "real_time" || p == "manual_time" || p.starts_with("repeats:") || p.starts_with("min_time:") ||
         p.starts_with("iterations:");
}
}  // namespace detail

// nullopt when the name does not follow the protocol: five non-empty parts
// and an optional cache mode, a known tier, threads a positive integer.
inline std::optional<BenchName> parse_bench_name(std::string_view name) {
  auto parts = detail::split_name(name);
  while (!parts.empty() && detail::is_gbench_suffix(parts.back())) parts.pop_back();
  CacheMode cache = CacheMode::Warm;
  if (parts.size() == 6) {
    const auto m = parse_cache_mode(parts[5]);
    if (!m) return std::nullopt;
    cache = *m;
    parts.pop_back();
  }
  if (parts.size() != 5 || !parts[4].starts_with("threads:")) return std::nullopt;
  for (std::string_view p : parts)
    if (p.empty()) return std::nullopt;
  const auto tier = parse_tier(parts[1]);
  if (!tier) return std::nullopt;
  const std::string_view t = parts[4].substr(8);
  int threads = 0;
  const auto res = std::from_chars(t.data(), t.data() + t.size(), threads);
  if (res.ec != std::errc() || res.ptr != t.data() + t.size() || threads < 1) return std::nullopt;
  return BenchName{std::string(parts[0]), *tier, std::string(parts[2]), std::string(parts[3]), threads, cache};
}

// What a row's checks found: before timing (the answer), or after it
// (Invalid: a timing no honest kernel can have, such as a read faster than
// the memory's bound). The label is the text a suite
// writes (Google Benchmark's label or skip message) and the CSV's verdict
// column keeps, so baselines written before this type still read.
enum class VerdictKind : unsigned char { Verified, Incorrect, Invalid, NotRun, NotVerified };

struct Verdict {
  VerdictKind kind = VerdictKind::NotVerified;
  std::string label = "not_verified";

  bool is_verified() const { return kind == VerdictKind::Verified; }
  bool is_incorrect() const { return kind == VerdictKind::Incorrect; }
  // A row whose figure must not be used: a wrong answer or an impossible timing.
  bool failed() const { return kind == VerdictKind::Incorrect || kind == VerdictKind::Invalid; }
  bool operator==(const Verdict&) const = default;

  // "verified", or "verified(<detail>)" when only part of the output was checked.
  static Verdict verified(std::string_view detail = {}) {
    std::string l = "verified";
    if (!detail.empty()) l.append("(").append(detail).append(")");
    return {VerdictKind::Verified, std::move(l)};
  }
  static Verdict incorrect(std::string_view what) {
    return {VerdictKind::Incorrect, std::string("incorrect: ").append(what)};
  }
  // "incorrect: <measure> <error> > <bound>".
  static Verdict incorrect(std::string_view measure, double error, double bound) {
    char num[64];
    std::snprintf(num, sizeof num, " %.3g > %.3g", error, bound);
    return incorrect(std::string(measure) + num);
  }
  static Verdict invalid(std::string_view why) { return {VerdictKind::Invalid, std::string("invalid: ").append(why)}; }
  // The tier did not run this row (a device that declined, memory it could not get).
  static Verdict not_run(std::string_view reason) {
    return {VerdictKind::NotRun, std::string("not_run: ").append(reason)};
  }
  // Timed but not checked (the reference tier is the oracle itself).
  static Verdict not_verified(std::string_view reason) {
    return {VerdictKind::NotVerified, std::string("not_verified: ").append(reason)};
  }

  // A label read back. A row a suite skipped with an error (`from_error`)
  // is not run when the message says so (CUTLASS's declines: not_supported,
  // invalid_problem), else a wrong answer, whatever its wording.
  static Verdict parse(std::string_view label, bool from_error = false) {
    if (label.starts_with("not_run") || label.starts_with("not_supported") || label.starts_with("invalid_problem"))
      return {VerdictKind::NotRun, std::string(label)};
    if (label.starts_with("incorrect")) return {VerdictKind::Incorrect, std::string(label)};
    if (label.starts_with("invalid")) return {VerdictKind::Invalid, std::string(label)};
    if (from_error) return incorrect(label);
    if (label.starts_with("verified")) return {VerdictKind::Verified, std::string(label)};
    return {VerdictKind::NotVerified, std::string(label)};
  }
};

// The bench mutants: faults in the bench path itself, injected by
// popper/bench.hpp under POPPER_BENCH_MUTANT=<name> into a suite's hand rows,
// which a family's self-test (`popper bench mutants`) must see caught. Each
// is caught on the rows of its cache mode by the check whose verdict label
// starts with `caught_by`:
//   cached-result: the tier computes on its first call only and keeps that
//                  output afterwards (verification after timing)
//   skipped-work:  timed calls do half the work, the first half of the output
//                  (verification after timing: the rest is stale)
//   unsynchronised-timing: each call is queued to a worker thread, which runs
//                  it at the next synchronisation, and returns at once, so the
//                  timer stops before the work is done (the wait for
//                  completion after the timed loop)
//   warm-under-cold: a cold row's calls run without the eviction, so its
//                  operands stay in cache (the eviction count)
//   workers-left-spinning: a cold row's pool workers spin on after its timed
//                  loop, on rows of 2 threads or more (the check that no thread
//                  of the process still runs before its turn ends)
enum class BenchMutant : unsigned char {
  None,
  CachedResult,
  SkippedWork,
  UnsynchronisedTiming,
  WarmUnderCold,
  WorkersLeftSpinning
};

struct BenchMutantSpec {
  BenchMutant id;
  std::string_view name;
  CacheMode rows;
  std::string_view caught_by;
  int min_threads = 1;  // the rows it runs on have at least this many threads
};

inline constexpr std::array<BenchMutantSpec, 5> kBenchMutants = {{
    {BenchMutant::CachedResult, "cached-result", CacheMode::Warm, "incorrect: after timing"},
    {BenchMutant::SkippedWork, "skipped-work", CacheMode::Warm, "incorrect: after timing"},
    {BenchMutant::UnsynchronisedTiming, "unsynchronised-timing", CacheMode::Warm,
     "invalid: the work outlived its timer"},
    {BenchMutant::WarmUnderCold, "warm-under-cold", CacheMode::Cold, "invalid: the caches were not evicted"},
    {BenchMutant::WorkersLeftSpinning, "workers-left-spinning", CacheMode::Cold,
     "invalid: a thread of this process still ran", 2},
}};

// None for "" and for a name no mutant has.
constexpr BenchMutant parse_bench_mutant(std::string_view s) {
  for (const auto& m : kBenchMutants)
    if (m.name == s) return m.id;
  return BenchMutant::None;
}

// One bench mutant run over one family's rows by `popper bench mutants`, as
// `popper audit` reads it: killed when every hand row it applies to was
// reported by the check that guards it (`caught_by`).
struct BenchMutantResult {
  std::string family, mutant;
  std::string outcome;  // killed | survived
  std::size_t rows = 0, caught = 0;
  std::string caught_by;  // the verdict label the guarding check writes
  std::string detail;     // what the rows that escaped reported
  bool killed() const { return outcome == "killed"; }
};

// The line a suite ends with on stderr (popper/bench.hpp run_suite), followed
// by seconds: what verification after timing took in that process, which
// `popper bench compare` sums over its processes.
inline constexpr const char* kRecheckSecondsLine = "popper-bench: verification after timing took ";

// The directory `popper bench compare` gives its suites' processes for the
// reference results they share (popper/bench_reference.hpp), for as long as
// the run lasts.
inline constexpr const char* kReferenceDirEnv = "POPPER_BENCH_REFERENCE_DIR";

// A repetition's pace (popper/pace.h), in seconds: the suites' Google
// Benchmark counter and the ceiling CSV's last column, on 1-thread rows.
inline constexpr const char* kPaceCounter = "pace_seconds";

// Uniform in [-1, 1) from a 64-bit LCG: ceiling_fill in popper/ceiling_cli.h
// draws the same values, so every tier of a row sees the same operands.
template <class Range>
void fill_uniform(Range& values, std::uint64_t seed) {
  std::uint64_t x = seed * 6364136223846793005ULL + 1442695040888963407ULL;
  for (auto& e : values) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    e = static_cast<std::remove_reference_t<decltype(e)>>(static_cast<double>(x >> 11) / 9007199254740992.0 * 2.0 -
                                                          1.0);
  }
}

}  // namespace popper::bench
