// Contract `benchmarks` claims evaluated on a bench table (rules in claims.hpp).
#include "bench/claims.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "bench/interval.hpp"
#include "bench/pace.hpp"
#include "bench/report.hpp"
#include "popper/io.hpp"
#include "popper/version.hpp"

namespace popper::bench {
namespace {

bool holds(double v, const std::string& op, double threshold) {
  if (op == "<") return v < threshold;
  if (op == "<=") return v <= threshold;
  if (op == ">") return v > threshold;
  if (op == ">=") return v >= threshold;
  return false;
}

// Verified, and not an implausible vendor row (plausibility.hpp): no claim is judged from one.
bool verified(const BenchRow& r) { return r.verdict.is_verified() && r.valid(); }

// The verified rows of a tier for a group among backends starting with
// `prefix`, fastest (lowest median) first.
std::vector<const BenchRow*> verified_rows(const BenchTable& t, Tier tier, const std::string& shape,
                                           const std::string& precision, int threads, const std::string& prefix) {
  std::vector<const BenchRow*> out;
  for (const auto& r : t.rows)
    if (r.key.tier == tier && r.key.shape == shape && r.key.precision == precision && r.key.threads == threads &&
        !r.samples.empty() && r.unit == kUnitSeconds && verified(r) && r.key.backend.rfind(prefix, 0) == 0)
      out.push_back(&r);
  std::stable_sort(out.begin(), out.end(),
                   [](const BenchRow* a, const BenchRow* b) { return a->median() < b->median(); });
  return out;
}

// One group's entry in a claim's detail: the group, and what is said of it
// (starting with the group's name).
struct GroupNote {
  std::string group, text;
};

// "; LABEL: FIRST" for one group; for several, "; LABEL on N groups: FIRST;
// also NAMES and K more". FIRST is the worst group the detail opened with, by
// name and only what this list adds to its figure, when the list has it; else
// the list's first entry in full.
std::string group_list(const std::string& label, const std::vector<GroupNote>& notes, const std::string& worst_group,
                       const std::string& worst_text) {
  if (notes.empty()) return "";
  const auto worst = std::find_if(notes.begin(), notes.end(), [&](const GroupNote& n) {
    return !worst_text.empty() && n.group == worst_group && n.text.rfind(worst_text, 0) == 0;
  });
  const std::string first =
      worst == notes.end() ? notes.front().text : worst_group + " (the worst)" + worst->text.substr(worst_text.size());
  const std::string& first_group = worst == notes.end() ? notes.front().group : worst_group;
  std::vector<std::string> others;  // each group once
  for (const auto& n : notes)
    if (n.group != first_group && std::find(others.begin(), others.end(), n.group) == others.end())
      others.push_back(n.group);
  std::string out = others.empty() ? fmt::format("; {}: {}", label, first)
                                   : fmt::format("; {} on {} groups: {}", label, others.size() + 1, first);
  constexpr std::size_t kNamed = 6;  // every group's figure is in bench-claims.json
  const std::size_t named = std::min(others.size(), kNamed);
  if (named > 0)
    out += fmt::format("; also {}", fmt::join(others.begin(), others.begin() + static_cast<long>(named), ", "));
  if (others.size() > named) out += fmt::format(" and {} more", others.size() - named);
  return out;
}

// The seconds a row's bytes take at each trial's own read (BenchRow::read), one
// sample per trial; empty unless every trial of the row has one.
BenchRow read_time_row(const BenchRow& r) {
  BenchRow bound;
  if (r.bytes_per_iter <= 0) return bound;
  for (const int t : std::set<int>(r.trials.begin(), r.trials.end())) {
    const auto it = r.read.find(t);
    if (it == r.read.end() || it->second <= 0) return {};
    bound.samples.push_back(r.bytes_per_iter / it->second);
    bound.trials.push_back(t);
  }
  return bound;
}

// The trials' own ratios num/den times scale (interval.hpp, trial_ratio_span).
TrialRatioSpan scaled_trial_span(const TrialSamples& num, const TrialSamples& den, double scale, double alpha) {
  TrialRatioSpan span = trial_ratio_span(num, den, alpha);
  span.lo *= scale, span.hi *= scale;
  for (auto& r : span.ratios) r.ratio *= scale;
  return span;
}

// Widens [lo, hi] to the span, and says so; "" when it was inside.
std::string widen_to_trial_span(const TrialRatioSpan& span, double& lo, double& hi) {
  if (span.trials == 0 || (span.lo >= lo && span.hi <= hi)) return "";
  lo = std::min(lo, span.lo), hi = std::max(hi, span.hi);
  return fmt::format(" (its {} trials' own ratios span [{:.4g}, {:.4g}])", span.trials, span.lo, span.hi);
}

// A row's peak on `threads` threads by its precision's kind (family.yaml `peak`;
// roofline: the row's own min(FP32 peak, bandwidth x work / bytes)); no kind and 0 when none.
struct RowPeak {
  std::string kind;
  double value = 0;
};
RowPeak peak_of_row(const PeakResult* peak, const std::map<std::string, std::string>& peak_kind, const BenchRow& r,
                    int threads) {
  const auto it = peak_kind.find(r.key.precision);
  if (!peak || it == peak_kind.end()) return {};
  return {it->second, row_peak(*peak, it->second, threads, r.work_per_iter, r.bytes_per_iter)};
}

// Why a group is outside the claim's scope (contract.hpp ClaimScope): what the
// numerator would need of its peak `top`, `threshold` x the denominator's
// throughput, is over the attainable fraction; "" when inside; nullopt when
// there is no measured peak to check it against.
std::optional<std::string> outside_scope(const BenchmarkClaim& claim, const BenchRow& num, const BenchRow& den,
                                         const RowPeak& top) {
  if (top.value <= 0 || den.median() <= 0 || num.work_per_iter <= 0) return std::nullopt;
  // A bandwidth peak is in bytes per second: the numerator's bytes per unit of work convert.
  const bool bytes = top.kind == "bandwidth" || top.kind == "device_bandwidth";
  const double per_work = bytes ? num.bytes_per_iter / num.work_per_iter : 1;
  const double den_fraction = (bytes ? den.bytes_per_iter : den.work_per_iter) / den.median() / top.value;
  const double needed = claim.threshold * den.work_per_iter / den.median() * per_work / top.value;
  if (needed <= claim.scope->attainable_peak_fraction) return "";
  return fmt::format("the {} runs at {:.1f}% of the peak; {:g}x of it needs {:.1f}%, over the {:.0f}% attainable",
                     tier_text(den.key.tier), 100 * den_fraction, claim.threshold, 100 * needed,
                     100 * claim.scope->attainable_peak_fraction);
}

struct Group {
  std::string shape, precision;
  int threads;
  bool operator<(const Group& o) const {
    return std::tie(shape, precision, threads) < std::tie(o.shape, o.precision, o.threads);
  }
  std::string name() const { return claim_group_name(shape, precision, threads); }
};

bool worse(double value, double than, const std::string& op) {
  return (op == "<" || op == "<=") ? value > than : value < than;
}

// The rows a ratio's numerator is judged against, fastest median first: the
// numerator's own backend when the denominator tier has it (wrapped against
// ceiling on one OpenBLAS core), else every verified row of the tier (of the
// claim's denominator precision and backend prefix when it names them). A
// group meets "x times the best" only if it meets it against each: the
// fastest median alone would let a row with a few trials be the best by noise,
// and trials measured again against one row would not decide the group
// when another's median then came out lower.
std::vector<const BenchRow*> denominators(const BenchTable& t, const BenchmarkClaim& claim, Tier tier, const Group& g,
                                          const BenchRow& num) {
  const bool named = !claim.denominator_backend.empty() || !claim.denominator_precision.empty();
  const std::string& prec = claim.denominator_precision.empty() ? g.precision : claim.denominator_precision;
  auto out = verified_rows(t, tier, g.shape, prec, g.threads, claim.denominator_backend);
  for (const BenchRow* r : out)
    if (!named && r->key.backend == num.key.backend) return {r};
  return out;
}

struct Paces {
  std::map<int, double> fastest, closest;  // pace.hpp: fastest_pace, closest_link
};

// A group judged on one pair of rows (or one row, for a claim without a denominator).
struct Judged {
  enum class State { NoBound, NotMet, Undecided, Met } state = State::Undecided;  // most severe first
  bool has_value = false;
  double value = 0;
  std::string figure;  // "<group>: value [lo, hi] ..." or "<group>: disturbed (...)"
  std::string note;    // the detail's entry: the figure and how it misses the threshold
  std::vector<BenchKey> rows;
  // Undecided: what ClaimResult::Inconclusive says of it.
  int trials = 0, set_aside = 0;
  double trials_to_decide = 0;
};

Judged judge_pair(const BenchmarkClaim& claim, const Group& g, const BenchRow& num, const BenchRow* den,
                  const std::string& kind, double p, const Paces& paces, double alpha, const std::string& against) {
  Judged out;
  out.rows.push_back(num.key);
  if (den) out.rows.push_back(den->key);
  const bool ratio = den != nullptr;
  // value = scale / interval(time ratio) or scale * interval(time ratio).
  RatioInterval iv;
  TrialRatioSpan span;  // the trials' own ratios, for a ratio judged per process
  // Its two sides: value = scale x their paired ratio, a over b (what measuring again narrows).
  struct RatioSides {
    BenchRow a, b;
    double scale;
  };
  std::optional<RatioSides> sides;
  double lo = 0, hi = 0, value = 0;
  std::string spanned;    // the trials' own ratios, when they widened the interval
  std::string set_aside;  // the repetitions and trials left out: their CPU ran slow (pace.hpp)
  // A ratio is judged on the repetitions probed at a steady pace, then on the trials
  // whose two processes ran at one pace (both steady, where kSteadyTrials did) and
  // with their CPUs as close.
  const BenchRow num_steady = ratio ? steady_samples(num, paces.fastest) : num;
  const BenchRow den_steady = ratio ? steady_samples(*den, paces.fastest) : BenchRow{};
  if (const std::size_t slow_reps = num.samples.size() - num_steady.samples.size() +
                                    (ratio ? den->samples.size() - den_steady.samples.size() : 0))
    set_aside = fmt::format(" ({} repetitions set aside: their CPU ran slow)", slow_reps);
  std::set<int> slow = ratio ? mixed_pace_trials(num_steady, den_steady, paces.fastest) : std::set<int>{};
  const std::set<int> far = ratio ? mixed_link_trials(num_steady, den_steady) : std::set<int>{};
  std::set<int> mixed = slow;
  mixed.insert(far.begin(), far.end());
  bool both_slow_aside = false;
  if (ratio) {
    const std::set<int> both = both_slow_trials(num_steady, den_steady, paces.fastest);
    const std::set<int> shared = shared_trials(num_steady, den_steady);
    const auto steady =
        std::count_if(shared.begin(), shared.end(), [&](int t) { return !mixed.count(t) && !both.count(t); });
    if (!both.empty() && steady >= kSteadyTrials) {
      both_slow_aside = true;
      slow.insert(both.begin(), both.end());
      mixed.insert(both.begin(), both.end());
    }
  }
  const BenchRow num_kept = without_trials(num_steady, mixed);
  const BenchRow den_kept = ratio ? without_trials(den_steady, mixed) : BenchRow{};
  if (!mixed.empty()) {
    const int n = trial_count({&num.samples, &num.trials});
    std::string why = slow.empty() ? "" : both_slow_aside ? "a side ran on a slow CPU" : "one side ran on a slow CPU";
    if (!far.empty())
      why += (why.empty() ? "" : ", or ") + std::string("the two sides' CPUs were placed apart differently");
    set_aside += fmt::format(" ({} of {} trials set aside: {})", mixed.size(), n, why);
    if (trial_count({&num_kept.samples, &num_kept.trials}) < 2 ||
        trial_count({&den_kept.samples, &den_kept.trials}) < 2) {
      // Too few trials at one pace to judge: measuring it again may find some.
      out.figure = g.name() + ": disturbed" + against + set_aside;
      out.note = out.figure;
      out.trials = n, out.trials_to_decide = n + 2;
      return out;
    }
  }
  const TrialSamples tn{&num_kept.samples, &num_kept.trials};
  if (ratio) {
    // time_ratio: time(num) / time(den); throughput_ratio: time(den) / time(num) per unit of work.
    const TrialSamples td{&den_kept.samples, &den_kept.trials};
    const bool time = claim.metric == "time_ratio";
    iv = time ? paired_ratio_interval(tn, td, alpha) : paired_ratio_interval(td, tn, alpha);
    const double scale = time || den->work_per_iter <= 0 ? 1 : num.work_per_iter / den->work_per_iter;
    value = scale * iv.ratio, lo = scale * iv.lo, hi = scale * iv.hi;
    // The bootstrap of medians undercovers with a few trials; a trial disturbed on one
    // side shows in the per-trial span, which keeps the group inconclusive (interval.hpp).
    span = time ? scaled_trial_span(tn, td, scale, alpha) : scaled_trial_span(td, tn, scale, alpha);
    sides = time ? RatioSides{num_kept, den_kept, scale} : RatioSides{den_kept, num_kept, scale};
  } else if (claim.metric == "throughput") {  // work / time
    const std::vector<double> one{1.0};
    iv = ratio_interval(tn, {&one, nullptr}, alpha);
    value = num.work_per_iter / iv.ratio, lo = num.work_per_iter / iv.hi, hi = num.work_per_iter / iv.lo;
  } else if (const BenchRow bound = read_time_row(num_kept); kind == "bandwidth" && !bound.samples.empty()) {
    // peak_fraction of a bandwidth = time(read the bytes) / time(row), per process.
    const TrialSamples tb{&bound.samples, &bound.trials};
    iv = paired_ratio_interval(tb, tn, alpha);
    value = iv.ratio, lo = iv.lo, hi = iv.hi;
    span = scaled_trial_span(tb, tn, 1, alpha);
    sides = RatioSides{bound, num_kept, 1};
    // Near and far CPUs read memory at different speeds (one CCD's link, or two): say the mix.
    int linked = 0, far_apart = 0;
    for (const int t : bound.trials)
      if (num_kept.link.count(t)) ++linked, far_apart += ran_far(num_kept, t, paces.closest);
    spanned += linked
                   ? fmt::format(" (each process against its own read; CPUs far apart in {} of {})", far_apart, linked)
                   : std::string(" (each process against its own read)");
  } else {  // peak_fraction = work / (time * peak)
    const std::vector<double> one{1.0};
    iv = ratio_interval(tn, {&one, nullptr}, alpha);
    // A bandwidth peak is compared with bytes/s (as apply_peaks does), any other with work/s.
    const double scale =
        (kind == "bandwidth" || kind == "device_bandwidth" ? num.bytes_per_iter : num.work_per_iter) / p;
    value = scale / iv.ratio, lo = scale / iv.hi, hi = scale / iv.lo;
  }
  const double boot_lo = lo, boot_hi = hi;  // before the trials' own ratios widen them
  spanned = widen_to_trial_span(span, lo, hi) + spanned;
  if (claim.metric == "peak_fraction" && value > 1) {
    // No claim is judged against a bound the row beats (report.hpp, bound_invalid).
    out.state = Judged::State::NoBound;
    out.note = fmt::format("{} (its bound is invalid: measured at {:.1f}% of it)", g.name(), 100 * value);
    return out;
  }
  // Below sign_test_trials(0) trials even their [min, max] undercovers the median.
  const int fewest = sign_test_trials(0, alpha);
  const bool too_few = span.trials > 0 && span.trials < fewest;
  if (too_few) spanned += fmt::format(" (judged on {} trials: {} decide it)", span.trials, fewest);
  const bool all_hold = !too_few && holds(lo, claim.op, claim.threshold) && holds(hi, claim.op, claim.threshold);
  const bool none_hold = !too_few && !holds(lo, claim.op, claim.threshold) && !holds(hi, claim.op, claim.threshold);
  out.has_value = true, out.value = value;
  out.figure = fmt::format("{}: {:.4g} [{:.4g}, {:.4g}]{}{}{}{}", g.name(), value, lo, hi, against,
                           iv.df >= 1 ? "" : " (one trial: within-process noise only)", spanned, set_aside);
  if (none_hold) {
    out.state = Judged::State::NotMet;
    out.note = out.figure + fmt::format(" fails {} {:g}", claim.op, claim.threshold);
  } else if (!all_hold) {
    out.note = out.figure + (too_few ? "" : fmt::format(" straddles {} {:g}", claim.op, claim.threshold));
    // The trials that read across the threshold leave the span once enough others
    // outvote them (the sign test); the others' bootstrap half-width on the threshold's
    // side shrinks as 1/sqrt(trials).
    const bool value_holds = holds(value, claim.op, claim.threshold);
    std::set<int> across;
    for (const auto& r : span.ratios)
      if (holds(r.ratio, claim.op, claim.threshold) != value_holds) across.insert(r.trial);
    double in_lo = boot_lo, in_hi = boot_hi;
    if (sides && !across.empty()) {
      const BenchRow a = without_trials(sides->a, across), b = without_trials(sides->b, across);
      const RatioInterval in = paired_ratio_interval({&a.samples, &a.trials}, {&b.samples, &b.trials}, alpha);
      if (in.df >= 1) in_lo = sides->scale * in.lo, in_hi = sides->scale * in.hi;
    }
    const int n = iv.df + 1, m = static_cast<int>(across.size());
    const double dist = std::fabs(std::log(value / claim.threshold));
    const double half = value >= claim.threshold ? std::log(value / in_lo) : std::log(in_hi / value);
    const double need_in = half > dist ? std::ceil((n - m) * (half / dist) * (half / dist)) : n - m;
    const double need = dist <= 0 ? 1e9 : std::max(need_in + m, static_cast<double>(sign_test_trials(m, alpha)));
    out.trials = n, out.trials_to_decide = std::min(need, 1e9), out.set_aside = static_cast<int>(mixed.size());
  } else {
    out.state = Judged::State::Met;
  }
  return out;
}

// The pair a group is reported by: the worst of its most severe state (an
// undecided pair with a figure before one too disturbed to have one).
const Judged& representative(const std::vector<Judged>& judged, const std::string& op) {
  const Judged* rep = &judged.front();
  for (const auto& j : judged)
    if (j.state != rep->state           ? j.state < rep->state
        : j.has_value != rep->has_value ? j.has_value
                                        : j.has_value && worse(j.value, rep->value, op))
      rep = &j;
  return *rep;
}

// The rows of the pairs in `state`, each once, in order.
std::vector<BenchKey> rows_of(const std::vector<Judged>& judged, Judged::State state) {
  std::vector<BenchKey> out;
  for (const auto& j : judged)
    if (j.state == state)
      for (const auto& k : j.rows)
        if (std::find(out.begin(), out.end(), k) == out.end()) out.push_back(k);
  return out;
}

}  // namespace

std::string_view to_string(ClaimVerdict v) {
  switch (v) {
    case ClaimVerdict::Met: return "met";
    case ClaimVerdict::NotMet: return "not_met";
    case ClaimVerdict::Inconclusive: return "inconclusive";
    case ClaimVerdict::PartiallyMeasured: return "partially_measured";
    case ClaimVerdict::NotMeasured: break;
  }
  return "not_measured";
}

std::ostream& operator<<(std::ostream& o, ClaimVerdict v) { return o << to_string(v); }

std::vector<ClaimResult> evaluate_claims(const std::vector<Contract>& contracts, const std::string& family,
                                         const BenchTable& table, const PeakResult* peak,
                                         const std::map<std::string, std::string>& peak_kind,
                                         const std::vector<std::string>& family_shapes, double alpha) {
  std::vector<ClaimResult> out;
  const Paces paces{fastest_pace(table), closest_link(table)};
  std::set<std::string> precisions;
  std::set<int> threads;
  for (const auto& r : table.rows)
    if (r.key.family == family && r.unit == kUnitSeconds) {
      precisions.insert(r.key.precision);
      threads.insert(r.key.threads);
    }
  for (const auto& c : contracts)
    for (const auto& claim : c.benchmarks) {
      if (claim.family != family) continue;
      ClaimResult res;
      res.contract = c.stem, res.id = claim.id, res.family = family, res.alpha = alpha;
      // Only the rows of the claim's cache mode: a cold claim is never judged on warm rows.
      BenchTable mode;
      std::copy_if(table.rows.begin(), table.rows.end(), std::back_inserter(mode.rows),
                   [&](const BenchRow& r) { return r.key.cache_mode == claim.cache; });
      const Tier numerator = tier_from(claim.numerator, c.stem + ": " + claim.id + ": numerator");
      const Tier denominator = claim.denominator.empty()
                                   ? numerator
                                   : tier_from(claim.denominator, c.stem + ": " + claim.id + ": denominator");
      const std::vector<std::string> shapes = claim.shapes.empty() ? family_shapes : claim.shapes;
      std::vector<GroupNote> missing, failures, inconclusive;
      std::vector<std::string> out_of_scope;
      bool scope_unchecked = false;
      std::string worst_text, worst_group;
      double worst = 0;
      bool have_worst = false, any_met = false;
      for (const auto& shape : shapes)
        for (const auto& prec : precisions)
          for (int th : threads) {
            if (!claim.precision.empty() && claim.precision != prec) continue;
            if (claim.threads && *claim.threads != th) continue;
            const Group g{shape, prec, th};
            for (const auto& r : mode.rows)
              if (r.key.shape == shape && r.key.precision == prec && r.key.threads == th &&
                  (r.key.tier == numerator || r.key.tier == denominator) && r.verdict.failed()) {
                failures.push_back({g.name(), g.name() + ": " + tier_text(r.key.tier) + " " + r.verdict.label});
                res.failed_rows = true;
              }
            const auto nums = verified_rows(mode, numerator, shape, prec, th, claim.numerator_backend);
            const BenchRow* num = nums.empty() ? nullptr : nums.front();
            const bool ratio = claim.metric == "time_ratio" || claim.metric == "throughput_ratio";
            const std::vector<const BenchRow*> dens =
                ratio && num ? denominators(mode, claim, denominator, g, *num) : std::vector<const BenchRow*>{};
            double p = 0;
            std::string kind;
            if (claim.metric == "peak_fraction" && num && peak) {
              const RowPeak rp = peak_of_row(peak, peak_kind, *num, th);
              kind = rp.kind, p = rp.value;
              // A bandwidth claim is judged against the bandwidth the report bounds the row with:
              // the suite's read of the row's own footprint on its threads, where it probed one.
              if (const double read = table.footprint_read(shape, prec, th, claim.cache);
                  kind == "bandwidth" && read > 0)
                p = read;
            }
            if (!num || (ratio && dens.empty()) || (claim.metric == "peak_fraction" && p <= 0)) {
              // Say when the row that would have been used is an implausible vendor row.
              std::string why;
              for (const auto& r : mode.rows)
                if (!r.valid() && r.key.shape == shape && r.key.precision == prec && r.key.threads == th &&
                    (r.key.tier == numerator || r.key.tier == denominator) && why.empty())
                  why = " (" + r.key.backend + " invalid: " + r.invalid_reason + ")";
              missing.push_back({g.name(), g.name() + why});
              continue;
            }
            if (claim.scope && ratio) {  // the scope is the fastest denominator's
              const auto why = outside_scope(claim, *num, *dens.front(), peak_of_row(peak, peak_kind, *num, th));
              if (!why) {
                scope_unchecked = true;
              } else if (!why->empty()) {
                res.figures[g.name()] = "out of scope: " + *why;
                out_of_scope.push_back(g.name() + ": " + *why);
                continue;
              }
            }
            std::vector<Judged> judged;
            for (const BenchRow* den : ratio ? dens : std::vector<const BenchRow*>{nullptr})
              judged.push_back(judge_pair(claim, g, *num, den, kind, p, paces, alpha,
                                          dens.size() > 1 ? " against " + den->key.backend : ""));
            const Judged& rep = representative(judged, claim.op);
            if (rep.state == Judged::State::NoBound) {
              missing.push_back({g.name(), rep.note});
              continue;
            }
            res.figures[g.name()] = rep.figure.substr(g.name().size() + 2);
            if (rep.state == Judged::State::NotMet) {
              failures.push_back({g.name(), rep.note});
              res.failing_groups.push_back({shape, prec, th, rows_of(judged, Judged::State::NotMet)});
            } else if (rep.state == Judged::State::Undecided) {
              inconclusive.push_back({g.name(), rep.note});
              // Measured again as one: the numerator once a trial with every undecided row,
              // for the trials the least decided pair lacks.
              ClaimResult::Inconclusive u{
                  shape, prec, th, std::numeric_limits<int>::max(), 0, rows_of(judged, Judged::State::Undecided), 0};
              for (const auto& j : judged)
                if (j.state == Judged::State::Undecided) {
                  u.trials = std::min(u.trials, j.trials);
                  u.trials_to_decide = std::max(u.trials_to_decide, j.trials_to_decide);
                  u.set_aside = std::max(u.set_aside, j.set_aside);
                }
              res.inconclusive_groups.push_back(u);
            } else {
              any_met = true;
            }
            if (rep.has_value && (!have_worst || worse(rep.value, worst, claim.op))) {
              worst = rep.value;
              worst_text = rep.figure, worst_group = g.name();
              have_worst = true;
            }
          }
      std::string detail = have_worst                                   ? "worst " + worst_text
                           : !inconclusive.empty() || !failures.empty() ? "no group judged"
                           : !out_of_scope.empty()                      ? "no group in the claim's scope"
                                                                        : "no verified group measured";
      if (claim.cache != "warm") detail = claim.cache + " rows: " + detail;
      detail += group_list("not met", failures, worst_group, worst_text);
      detail += group_list("inconclusive", inconclusive, worst_group, worst_text);
      detail += group_list("not measured (or not verified)", missing, worst_group, worst_text);
      if (!out_of_scope.empty())
        detail += fmt::format("; out of scope: {} ({})", fmt::join(out_of_scope, "; "), claim.scope->reason);
      if (scope_unchecked) detail += "; scope not checked on some groups: no measured peak for them";
      if (!failures.empty()) res.verdict = ClaimVerdict::NotMet;
      else if (!inconclusive.empty()) res.verdict = ClaimVerdict::Inconclusive;
      else if (any_met && !missing.empty()) res.verdict = ClaimVerdict::PartiallyMeasured;
      else if (any_met) res.verdict = ClaimVerdict::Met;
      else res.verdict = ClaimVerdict::NotMeasured;
      res.detail = detail;
      out.push_back(res);
    }
  return out;
}

void write_claims_json(const std::string& path, const std::string& family, const std::vector<ClaimResult>& results) {
  nlohmann::json doc = {{"claims", nlohmann::json::array()}};
  if (std::ifstream in(path); in) {
    try {
      const auto old = nlohmann::json::parse(in);
      if (old.contains("claims") && old["claims"].is_array())
        for (const auto& c : old["claims"])
          if (c.value("family", "") != family) doc["claims"].push_back(c);
    } catch (const nlohmann::json::exception&) {
      // An unreadable old file is replaced.
    }
  }
  for (const auto& r : results)
    doc["claims"].push_back({{"contract", r.contract},
                             {"id", r.id},
                             {"family", r.family},
                             {"verdict", to_string(r.verdict)},
                             {"alpha", r.alpha},
                             {"detail", r.detail}});
  doc["popper"] = build_json();
  write_file_atomic(path, doc.dump(2) + "\n");
}

}  // namespace popper::bench
