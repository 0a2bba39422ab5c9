// FALSIFY-TRAIN-002 (AdamW against its FP64 formula), -003 (the copy task is
// learned), -004 (determinism, no state between steps), -005 (bad input
// refused, nothing written).
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <functional>

#include "impl/fused/fused.hpp"
#include "support.hpp"

namespace {

using namespace popper::train;
using namespace popper::train::testing;

constexpr double kU = 0x1p-24;

std::vector<float> uniform(std::size_t n, double lo, double hi, std::uint64_t seed) {
  std::vector<float> v(n);
  std::uint64_t z = seed * 0x9E3779B97F4A7C15ull + 1;
  for (auto& x : v) {
    z = z * 6364136223846793005ull + 1442695040888963407ull;
    x = static_cast<float>(lo + (hi - lo) * static_cast<double>(z >> 11) * 0x1.0p-53);
  }
  return v;
}

POPPER_FALSIFIER("FALSIFY-TRAIN-002", [](const popper::Params& p) {
  const Config c = testbed::preset("tiny");
  const ParamLayout L(c);
  const AdamWConfig a;
  const double f = p.number("safety");
  for (const auto isa : hand_isas()) {
    const std::string path = popper::cpu::backend_tag(isa);
    for (const auto t : p.integers("steps")) {
      const auto p0 = init_params(c, p.seed());
      const auto g = uniform(L.total, -0.1, 0.1, p.seed() + 1), m0 = uniform(L.total, -0.05, 0.05, p.seed() + 2);
      auto v0 = uniform(L.total, 0, 0.01, p.seed() + 3);
      std::vector<float> pp = p0, mm = m0, vv = v0;
      adamw_update(L, a, t, pp, g, mm, vv, 2, isa);
      std::vector<double> pr, mr, vr;
      reference::adamw(L, a, t, p0, g, m0, v0, pr, mr, vr);
      const double b1 = a.beta1, b2 = a.beta2, lr = a.lr;
      const double c1 = 1 - std::pow(b1, static_cast<double>(t)), c2 = 1 - std::pow(b2, static_cast<double>(t));
      double worst = 0;
      std::string where;
      for (const Tensor& T : L.tensors)
        for (std::size_t i = T.offset; i < T.offset + T.size(); ++i) {
          const double gi = g[i];
          const double em = 3 * kU * (std::fabs(b1 * m0[i]) + std::fabs((1 - b1) * gi));
          const double ev = 4 * kU * (std::fabs(b2 * v0[i]) + std::fabs((1 - b2) * gi * gi));
          const double den = std::sqrt(vr[i] / c2) + a.eps;
          const double dden = (std::sqrt(vr[i] + ev) - std::sqrt(vr[i])) / std::sqrt(c2) + 3 * kU * den;
          const double U = lr * (mr[i] / c1) / den;
          const double ep = 3 * kU * std::fabs(p0[i]) + (lr / c1) * (em / den + std::fabs(mr[i]) * dden / (den * den)) +
                            8 * kU * std::fabs(U);
          for (const auto& [got, want, bound, what] : {std::tuple{static_cast<double>(mm[i]), mr[i], em, "m"},
                                                       std::tuple{static_cast<double>(vv[i]), vr[i], ev, "v"},
                                                       std::tuple{static_cast<double>(pp[i]), pr[i], ep, "p"}}) {
            const double ratio = std::fabs(got - want) / (f * bound + 1e-300);
            if (!(ratio <= worst)) worst = ratio, where = T.name + "[" + std::to_string(i - T.offset) + "]." + what;
          }
        }
      std::printf("  %-12s t=%lld: worst %s at %.3f of the bound\n", path.c_str(), static_cast<long long>(t),
                  where.c_str(), worst);
      EXPECT_LE(worst, 1.0) << path << " t=" << t << ": " << where << " outside its bound (" << worst << " x)";
    }
    record(path, isa);
  }
});

POPPER_FALSIFIER("FALSIFY-TRAIN-003", [](const popper::Params& p) {
  const Config c = testbed::preset("tiny");
  Trainer tr(c, {Backend::Hand, 1, popper::cpu::Isa::Auto}, AdamWConfig{}, p.seed());
  const std::int64_t steps = p.integer("steps");
  std::vector<double> loss;
  for (std::int64_t i = 0; i < steps; ++i) {
    const Batch b = copy_task_batch(c, p.seed(), i);
    loss.push_back(tr.train_step(b.tokens, b.labels));
  }
  double tail = 0;
  for (std::int64_t i = steps - 5; i < steps; ++i) tail += loss[static_cast<std::size_t>(i)] / 5;
  std::printf("  loss: step 0 %.3f, 100 %.3f, 200 %.3f, 300 %.3f, mean of the last 5 %.4f\n", loss[0],
              loss[std::min<std::size_t>(100, loss.size() - 1)], loss[std::min<std::size_t>(200, loss.size() - 1)],
              loss[std::min<std::size_t>(300, loss.size() - 1)], tail);
  EXPECT_GT(loss[0], p.number("initial_above")) << "the first loss is not near chance: the task is not what it claims";
  EXPECT_LT(tail, p.number("below")) << "the copy task was not learned in " << steps << " steps (seed " << p.seed()
                                     << ")";
  record(tr.step(), popper::cpu::Isa::Auto);
});

POPPER_FALSIFIER("FALSIFY-TRAIN-004", [](const popper::Params& p) {
  const Config c = testbed::preset("tiny");
  const std::int64_t steps = p.integer("steps");
  for (const Backend backend : {Backend::Hand, Backend::Wrapped})
    for (const auto threads : p.integers("threads")) {
      const StepOptions o{backend, static_cast<int>(threads), popper::cpu::Isa::Auto};
      Trainer used(c, o, AdamWConfig{}, p.seed());
      for (std::int64_t i = 0; i < 3; ++i) {  // the step object computes other batches first
        const Batch b = copy_task_batch(c, p.seed(), 100 + i);
        used.train_step(b.tokens, b.labels);
      }
      const std::vector<float> p0 = used.params(), m0 = used.m(), v0 = used.v();
      Trainer fresh(c, o, AdamWConfig{}, p.seed() + 1);
      fresh.load_state(p0, m0, v0, used.steps_done());
      for (std::int64_t i = 0; i < steps; ++i) {
        const Batch b = copy_task_batch(c, p.seed(), i);
        const double la = used.train_step(b.tokens, b.labels), lb = fresh.train_step(b.tokens, b.labels);
        EXPECT_EQ(std::memcmp(&la, &lb, sizeof la), 0)
            << to_string(backend) << " threads " << threads << " step " << i << ": loss " << la << " vs " << lb;
      }
      const auto same = [](const std::vector<float>& x, const std::vector<float>& y) {
        return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
      };
      EXPECT_TRUE(same(used.params(), fresh.params()) && same(used.m(), fresh.m()) && same(used.v(), fresh.v()))
          << to_string(backend) << " threads " << threads << ": parameters or moments differ after " << steps
          << " steps";
      if (::testing::Test::HasFailure()) return;
      record(used.step(), popper::cpu::Isa::Auto);
    }
});

POPPER_FALSIFIER("FALSIFY-TRAIN-005", [](const popper::Params& p) {
  const Config c = testbed::preset("tiny");
  EXPECT_THROW(
      {
        Config z = c;
        z.batch = 0;
        Trainer bad(z, {}, AdamWConfig{}, 1);
      },
      popper::InvalidArgument)
      << "a model with a zero-length batch must be refused";
  Trainer tr(c, {Backend::Hand, 2, popper::cpu::Isa::Auto}, AdamWConfig{}, p.seed());
  const Batch good = copy_task_batch(c, p.seed(), 0);
  tr.train_step(good.tokens, good.labels);  // non-zero gradients and moments to protect
  const ParamLayout& L = tr.layout();
  // A token that is not in the batch: its embedding row is read by nothing.
  std::int64_t unused = 1;
  while (std::find(good.tokens.begin(), good.tokens.end(), unused) != good.tokens.end()) ++unused;

  struct Case {
    const char* what;
    const char* message;  // the error must contain this
    std::function<void(Batch&, std::vector<float>&)> spoil;
    bool runs_backward = false;  // refused after the step wrote its gradients
  };
  const std::size_t w_up = L.layers[1].w_up;
  // Finite parameters whose weight gradient dW_down = dx^T h of layer 1 overflows: a column of
  // W_up at 3e37 makes h ~1e37 (|u| <= sqrt(H) 3e37 < FLT_MAX), W_down = 0 keeps it out of the
  // forward, and a final norm weight of 1e10 makes the residual's gradient ~1e8 (the loss
  // stays finite, ~1e10). The product of the two overflows; the check must find it whether
  // the scan or the product's probe looks at it.
  const auto overflow_w_down = [&](Batch&, std::vector<float>& P) {
    const auto H = static_cast<std::size_t>(c.hidden), I = static_cast<std::size_t>(c.intermediate);
    for (std::size_t i = 0; i < I; ++i) P[w_up + i * H + 5] = 3e37f;
    std::fill(P.begin() + static_cast<std::ptrdiff_t>(L.layers[1].w_down),
              P.begin() + static_cast<std::ptrdiff_t>(L.layers[1].w_down + H * I), 0.0f);
    std::fill(P.begin() + static_cast<std::ptrdiff_t>(L.final_norm),
              P.begin() + static_cast<std::ptrdiff_t>(L.final_norm + H), 1e10f);
  };
  const std::vector<Case> cases{
      {"token = V", "outside the vocabulary", [&](Batch& b, auto&) { b.tokens[5] = c.vocab; }},
      {"token = -1", "outside the vocabulary", [&](Batch& b, auto&) { b.tokens[0] = -1; }},
      {"label = V", "label", [&](Batch& b, auto&) { b.labels[c.seq - 2] = c.vocab; }},
      {"every label ignored", "ignore", [&](Batch& b, auto&) { std::fill(b.labels.begin(), b.labels.end(), kIgnore); }},
      {"zero-length batch", "zero-length", [&](Batch& b, auto&) { b.tokens.clear(), b.labels.clear(); }},
      {"short labels", "labels has", [&](Batch& b, auto&) { b.labels.pop_back(); }},
      {"NaN in an unused embedding row", "embed[",
       [&](Batch&, auto& P) { P[L.embed + static_cast<std::size_t>(unused * c.hidden + 3)] = std::nanf(""); }},
      {"+inf in a layer weight", "layers.1.w_up[", [&](Batch&, auto& P) { P[w_up + 17] = INFINITY; }},
      {"a weight gradient overflows", "gradient layers.1.w_down[", overflow_w_down, true},
  };
  const auto bits = [](std::span<const float> v) {
    return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4);
  };
  for (const Case& k : cases) {
    Batch b = good;
    std::vector<float> saved_params = tr.params();
    k.spoil(b, tr.params());
    const std::string p_before = bits(tr.params()), g_before = bits(tr.grads()), m_before = bits(tr.m()),
                      v_before = bits(tr.v());
    const std::int64_t t_before = tr.steps_done();
    std::string message = "(no exception)";
    try {
      tr.train_step(b.tokens, b.labels);
    } catch (const popper::InvalidArgument& e) {
      message = e.what();
    }
    EXPECT_NE(message.find(k.message), std::string::npos)
        << k.what << ": expected an InvalidArgument naming '" << k.message << "', got: " << message;
    EXPECT_TRUE(bits(tr.params()) == p_before && (k.runs_backward || bits(tr.grads()) == g_before) &&
                bits(tr.m()) == m_before && bits(tr.v()) == v_before && tr.steps_done() == t_before)
        << k.what << ": the refused step wrote to the parameters, " << (k.runs_backward ? "" : "gradients, ")
        << "moments or step count";
    std::printf("  %-32s -> %s\n", k.what, message.c_str());
    tr.params() = saved_params;
    if (::testing::Test::HasFailure()) return;
  }
  {
    // An update that overflows the parameters (a step size beyond FLT_MAX):
    // the step after it must find them, though no caller touched them.
    AdamWConfig huge;
    huge.lr = 3e38f;
    Trainer over(c, {Backend::Hand, 2, popper::cpu::Isa::Auto}, huge, p.seed());
    over.train_step(good.tokens, good.labels);
    const Trainer& seen = over;  // read only: a write access would make the next step scan anyway
    const std::string p_before = bits(seen.params()), m_before = bits(over.m()), v_before = bits(over.v());
    std::string message = "(no exception)";
    try {
      over.train_step(good.tokens, good.labels);
    } catch (const popper::InvalidArgument& e) {
      message = e.what();
    }
    EXPECT_NE(message.find("train: parameter "), std::string::npos)
        << "the step after an update that overflowed: expected an InvalidArgument naming a parameter, got: " << message;
    EXPECT_TRUE(bits(seen.params()) == p_before && bits(over.m()) == m_before && bits(over.v()) == v_before &&
                over.steps_done() == 1)
        << "the refused step after an overflowing update wrote to the parameters, moments or step count";
    std::printf("  %-32s -> %s\n", "update overflowed a parameter", message.c_str());
  }
  record(tr.step(), popper::cpu::Isa::Auto);

  // The scan under both checks, on every ISA path: a NaN or an infinity at
  // every position of spans of every length up to five 16-lane vectors (the
  // unrolled body, the single vectors and the masked tail of each path); the
  // finite extremes around it must not read as non-finite.
  const float extremes[] = {FLT_MAX, -FLT_MAX, 0x1p-149f, -0.0f, 1.0f};
  const float bad_values[] = {std::nanf(""), INFINITY, -INFINITY};
  for (const auto isa : hand_isas()) {
    const std::string path = popper::cpu::backend_tag(isa);
    for (std::size_t n = 0; n <= 80; ++n) {
      std::vector<float> x(n);
      for (std::size_t i = 0; i < n; ++i) x[i] = extremes[i % std::size(extremes)];
      ASSERT_TRUE(popper::fused::all_finite(x, isa)) << path << ": " << n << " finite values read as non-finite";
      for (std::size_t at = 0; at < n; ++at)
        for (const float bad : bad_values) {
          const float keep = x[at];
          x[at] = bad;
          ASSERT_FALSE(popper::fused::all_finite(x, isa))
              << path << ": " << bad << " at " << at << " of " << n << " values not found";
          x[at] = keep;
        }
    }
    record(path, isa);
    std::printf("  finiteness scan on %-13s -> every NaN and infinity found, lengths 0..80\n", path.c_str());
  }
});

}  // namespace
