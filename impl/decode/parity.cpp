// The parity gate (parity.hpp): agreement of logits, the selection rule, and
// a gate run over the backends of forward.hpp.
#include "impl/decode/parity.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "impl/decode/forward.hpp"
#include "popper/error.hpp"
#include "popper/mutant.hpp"

namespace popper::decode {

namespace {

template <class R>
std::vector<std::size_t> top(std::span<const R> v, std::size_t k) {
  std::vector<std::size_t> idx(v.size());
  std::iota(idx.begin(), idx.end(), std::size_t{0});
  k = std::min(k, idx.size());
  // Ties to the lower index, so the order is a function of the values alone.
  std::partial_sort(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(k), idx.end(),
                    [&](std::size_t a, std::size_t b) { return v[a] > v[b] || (v[a] == v[b] && a < b); });
  idx.resize(k);
  return idx;
}

template <class R>
Agreement agreement(std::span<const float> got, std::span<const R> ref) {
  if (got.size() != ref.size() || got.empty())
    throw InvalidArgument("compare_logits: " + std::to_string(got.size()) + " logits against " +
                          std::to_string(ref.size()));
  Agreement a;
  double dot = 0, gg = 0, rr = 0, diff2 = 0, ref_max = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = got[i], r = static_cast<double>(ref[i]);
    dot += g * r, gg += g * g, rr += r * r, diff2 += (g - r) * (g - r);
    a.max_abs = std::max(a.max_abs, std::abs(g - r));
    if (std::isnan(g - r)) a.max_abs = NAN;
    ref_max = std::max(ref_max, std::abs(r));
  }
  a.cosine = gg > 0 && rr > 0 ? dot / std::sqrt(gg * rr) : NAN;
  a.max_rel = a.max_abs / ref_max;
  a.rel_l2 = std::sqrt(diff2 / rr);
  const auto tg = top(got, 5), tr = top(ref, 5);
  a.top1 = !tg.empty() && tg[0] == tr[0];
  for (auto i : tg) a.top5 += std::count(tr.begin(), tr.end(), i) > 0;
  return a;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

Agreement compare_logits(std::span<const float> got, std::span<const float> ref) { return agreement(got, ref); }
Agreement compare_logits(std::span<const float> got, std::span<const double> ref) { return agreement(got, ref); }

std::string select_backend(std::span<const Candidate> candidates) {
  // Mutation points: the gate that trusts availability alone, and the one
  // that takes the last passing candidate instead of the first.
  if (POPPER_MUTANT("mbp-select-ignores-parity")) {
    for (const auto& c : candidates)
      if (c.available) return c.name;
  } else if (POPPER_MUTANT("mbp-select-lowest-priority")) {
    for (auto it = candidates.rbegin(); it != candidates.rend(); ++it)
      if (it->available && it->passed) return it->name;
  } else {
    for (const auto& c : candidates)
      if (c.available && c.passed) return c.name;
  }
  return "cpu";
}

GateResult run_gate(const Model& m, const GateOptions& o) {
  if (!(o.min_cosine > -1 && o.min_cosine <= 1)) throw InvalidArgument("parity gate: min cosine must be in (-1, 1]");
  for (const auto& name : o.candidates)
    if (std::find(backend_names().begin(), backend_names().end(), name) == backend_names().end() || name == "cpu")
      throw InvalidArgument("parity gate: unknown candidate '" + name + "' (" + backend_list() +
                            "; cpu is the reference, always run, never a candidate)");
  for (const auto& [name, fault] : o.faults)
    if (std::find(o.candidates.begin(), o.candidates.end(), name) == o.candidates.end())
      throw InvalidArgument("parity gate: fault injected into '" + name + "', which is not a candidate");

  GateResult g;
  g.model = m.source;
  g.min_cosine = o.min_cosine;
  g.tokens = canary_tokens(m.config, o.tokens);
  std::vector<std::vector<double>> logits;  // in the order of g.names
  const auto keep = [&](const std::string& name, const auto& y) {
    g.names.push_back(name);
    logits.emplace_back(y.begin(), y.end());
  };
  auto t0 = std::chrono::steady_clock::now();
  std::vector<double> exact;
  if (o.fp64) {
    auto ops = reference_ops(m.config, o.threads);
    exact = forward<double>(m, g.tokens, *ops);
    g.fp64_seconds = seconds_since(t0);
    keep("fp64", exact);
  }
  auto cpu = make_backend("cpu", m, o.threads);
  t0 = std::chrono::steady_clock::now();
  const std::vector<float> ref = cpu->logits(g.tokens);
  g.cpu_seconds = seconds_since(t0);
  if (o.fp64) g.cpu_fp64 = compare_logits(ref, std::span<const double>(exact));
  keep("cpu", ref);

  std::vector<Candidate> candidates;
  for (const auto& name : o.candidates) {
    BackendRun run;
    run.name = name;
    Fault fault = Fault::None;
    for (const auto& [target, f] : o.faults)
      if (target == name) fault = f;
    run.fault = to_string(fault);
    const Model seen = with_fault(m, fault);
    try {
      auto b = make_backend(name, seen, o.threads);
      run.evidence = b->evidence();
      if (b->available()) {
        t0 = std::chrono::steady_clock::now();
        const std::vector<float> got = b->logits(g.tokens);
        run.seconds = seconds_since(t0);
        run.available = b->available();  // a call may have declined during the run
        run.evidence = b->evidence();    // a device backend names what ran once it ran
        if (run.available) {
          run.agreement = compare_logits(got, ref);
          if (o.fp64) run.fp64 = compare_logits(got, std::span<const double>(exact));
          run.passed = run.agreement.cosine >= o.min_cosine;
          if (!run.passed) {
            char buf[96];
            std::snprintf(buf, sizeof buf, "cosine %.6f < %.2f", run.agreement.cosine, o.min_cosine);
            run.reason = buf;
          }
          keep(fault == Fault::None ? name : name + "*", got);  // * : fault injected
        }
      }
      if (!run.available) run.reason = b->unavailable_reason();
    } catch (const InvalidArgument&) {
      throw;
    } catch (const Error& e) {
      // The runtime ran and failed: excluded, never unavailable.
      run.available = run.errored = true, run.passed = false;
      run.agreement.cosine = run.fp64.cosine = NAN;
      run.reason = std::string("error: ") + e.what();
    }
    candidates.push_back({name, run.available, run.passed});
    g.runs.push_back(std::move(run));
  }
  g.selected = select_backend(candidates);
  for (const auto& a : logits) {
    g.cosine.emplace_back();
    for (const auto& b : logits) {
      double ab = 0, aa = 0, bb = 0;
      for (std::size_t i = 0; i < a.size(); ++i) ab += a[i] * b[i], aa += a[i] * a[i], bb += b[i] * b[i];
      g.cosine.back().push_back(aa > 0 && bb > 0 ? ab / std::sqrt(aa * bb) : NAN);
    }
  }
  return g;
}

std::string format_gate(const GateResult& g) {
  std::string out;
  char line[640];
  std::snprintf(line, sizeof line,
                "parity gate: %s, %zu-token canary prompt, cpu reference %.3f s, threshold cos >= %.2f\n",
                g.model.c_str(), g.tokens.size(), g.cpu_seconds, g.min_cosine);
  out += line;
  const bool fp64 = !g.names.empty() && g.names.front() == "fp64";
  if (fp64) {
    std::snprintf(line, sizeof line, "fp64 oracle %.3f s; the cpu reference against it: cosine %.9f, max rel %.3g\n",
                  g.fp64_seconds, g.cpu_fp64.cosine, g.cpu_fp64.max_rel);
    out += line;
  }
  std::snprintf(line, sizeof line, "%-11s %-26s %-17s %10s %10s %10s %5s %5s %12s %8s  %s\n", "backend", "ran on",
                "fault", "cosine", "max abs", "max rel", "top1", "top5", "cos fp64", "seconds", "verdict");
  out += line;
  for (const auto& r : g.runs) {
    if (!r.available) {
      std::snprintf(line, sizeof line, "%-11s %-26s %-17s %10s %10s %10s %5s %5s %12s %8s  unavailable: %s\n",
                    r.name.c_str(), "-", r.fault.c_str(), "-", "-", "-", "-", "-", "-", "-", r.reason.c_str());
    } else if (r.errored) {
      std::snprintf(line, sizeof line, "%-11s %-26.26s %-17s %10s %10s %10s %5s %5s %12s %8s  EXCLUDED: %s\n",
                    r.name.c_str(), r.evidence.c_str(), r.fault.c_str(), "-", "-", "-", "-", "-", "-", "-",
                    r.reason.c_str());
    } else {
      const auto& a = r.agreement;
      char cos64[24] = "-";
      if (fp64) std::snprintf(cos64, sizeof cos64, "%.9f", r.fp64.cosine);
      std::snprintf(line, sizeof line, "%-11s %-26.26s %-17s %10.6f %10.3g %10.3g %5s %4d/5 %12s %8.3f  %s\n",
                    r.name.c_str(), r.evidence.c_str(), r.fault.c_str(), a.cosine, a.max_abs, a.max_rel,
                    a.top1 ? "yes" : "no", a.top5, cos64, r.seconds,
                    r.passed ? "pass" : ("EXCLUDED: " + r.reason).c_str());
    }
    out += line;
  }
  out += "selected: " + g.selected + (g.selected == "cpu" ? " (no candidate passed)" : "") + "\n";
  if (g.names.size() > 2) {
    out += "\n1 - cosine between the logits (0: identical; * fault injected):\n";
    std::snprintf(line, sizeof line, "%-12s", "");
    out += line;
    for (const auto& n : g.names) std::snprintf(line, sizeof line, " %12s", n.c_str()), out += line;
    out += "\n";
    for (std::size_t i = 0; i < g.names.size(); ++i) {
      std::snprintf(line, sizeof line, "%-12s", g.names[i].c_str());
      out += line;
      for (std::size_t j = 0; j < g.names.size(); ++j)
        std::snprintf(line, sizeof line, " %12.3g", 1 - g.cosine[i][j]), out += line;
      out += "\n";
    }
  }
  return out;
}

}  // namespace popper::decode
