// FALSIFY-FUSED-002 (RMSNorm recompute bit-exact), -011 (RMSNorm vs the
// reference), -012 (saved bytes O(B*S)), -003 (SwiGLU in-place backward),
// -013 (the SwiGLU backward allocates nothing).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>

#include "impl/fused/fused.hpp"
#include "impl/fused/reference.hpp"
#include "support.hpp"
#include "testbed.hpp"

namespace {

using namespace popper::fused;
using namespace popper::fused::testing;
namespace tb = popper::fused::testbed;

POPPER_FALSIFIER("FALSIFY-FUSED-002", [](const popper::Params& p) {
  const std::int64_t rows = p.integer("rows");
  for (const auto H : p.integers("hidden")) {
    const RmsNormShape s{rows, H, 1e-6f};
    const auto x = tb::uniform(static_cast<std::size_t>(rows * H), -3, 3, p.seed() + static_cast<std::uint64_t>(H));
    const auto w = tb::uniform(static_cast<std::size_t>(H), 0.5, 1.5, p.seed() + 1);
    const auto dy = tb::uniform(x.size(), -1, 1, p.seed() + 2);
    for (const Isa isa : isas_to_test()) {
      std::vector<float> y(x.size()), n_fwd(x.size()), n_bwd(x.size(), -7.0f), dx(x.size()),
          dw(static_cast<std::size_t>(H));
      RunInfo run;
      const RmsNormSaved saved = rmsnorm_forward(s, x, w, y, opts(isa, 2), &run, n_fwd);
      rmsnorm_backward(s, x, w, saved.inv_rms.span(), dy, dx, dw, opts(isa, 2), n_bwd);
      std::size_t differ = 0, first = 0;
      for (std::size_t i = 0; i < x.size(); ++i)
        if (std::memcmp(&n_fwd[i], &n_bwd[i], sizeof(float)) != 0 && differ++ == 0) first = i;
      EXPECT_EQ(differ, 0u) << where(isa, 2) << " H=" << H << ": " << differ
                            << " recomputed normed values differ, first at " << first << ": " << n_fwd[first] << " vs "
                            << n_bwd[first];
      if (::testing::Test::HasFailure()) return;
      record(run, isa);
    }
  }
});

POPPER_FALSIFIER("FALSIFY-FUSED-011", [](const popper::Params& p) {
  const double f = p.number("tol_factor");
  for (const auto& sh : p.list("shapes")) {
    const RmsNormShape s{sh.integer("rows"), sh.integer("hidden"), 1e-6f};
    const std::int64_t H = s.hidden;
    const auto x = tb::uniform(static_cast<std::size_t>(s.rows * H), -3, 3, p.seed() + static_cast<std::uint64_t>(H));
    const auto w = tb::uniform(static_cast<std::size_t>(H), -1.5, 1.5, p.seed() + 1);
    const auto dy = tb::uniform(x.size(), -1, 1, p.seed() + 2);
    std::vector<double> yr(x.size()), invr(static_cast<std::size_t>(s.rows)), nr(x.size()), dxr(x.size()),
        dwr(static_cast<std::size_t>(H));
    reference::rmsnorm_forward(s, x, w, yr, invr, nr);
    reference::rmsnorm_backward(s, x, w, dy, dxr, dwr);
    const tb::RmsBound rb = tb::rms_bound(H);
    const double nblocks = std::ceil(static_cast<double>(s.rows) / 64.0);
    for (const Isa isa : isas_to_test())
      for (const auto t : p.integers("threads")) {
        std::vector<float> y(x.size()), dx(x.size()), dw(static_cast<std::size_t>(H));
        RunInfo run;
        const RmsNormSaved saved = rmsnorm_forward(s, x, w, y, opts(isa, static_cast<int>(t)), &run);
        rmsnorm_backward(s, x, w, saved.inv_rms.span(), dy, dx, dw, opts(isa, static_cast<int>(t)));
        tb::Worst wy, wi, wx, ww;
        for (std::int64_t r = 0; r < s.rows; ++r) {
          const std::size_t ru = static_cast<std::size_t>(r);
          wi.see(std::fabs(saved.inv_rms.data()[r] - invr[ru]), rb.e_inv * invr[ru], ru);
          double gn = 0;
          for (std::int64_t i = 0; i < H; ++i) {
            const std::size_t at = ru * static_cast<std::size_t>(H) + static_cast<std::size_t>(i);
            gn += std::fabs(static_cast<double>(dy[at]) * w[static_cast<std::size_t>(i)] * nr[at]);
          }
          for (std::int64_t i = 0; i < H; ++i) {
            const std::size_t at = ru * static_cast<std::size_t>(H) + static_cast<std::size_t>(i);
            wy.see(std::fabs(y[at] - yr[at]), f * (rb.e_n + 2 * tb::kU) * std::fabs(yr[at]) + 1e-300, at);
            const double g = std::fabs(static_cast<double>(dy[at]) * w[static_cast<std::size_t>(i)]);
            const double bound =
                f * invr[ru] *
                    ((2 * tb::kU + rb.e_n) * g + (tb::gamma(static_cast<double>(H)) + 2 * rb.e_n + 2 * tb::kU) *
                                                     std::fabs(nr[at]) * gn / static_cast<double>(H)) +
                rb.e_inv * std::fabs(dxr[at]);
            wx.see(std::fabs(dx[at] - dxr[at]), bound + 1e-300, at);
          }
        }
        for (std::int64_t i = 0; i < H; ++i) {
          double mag = 0;
          for (std::int64_t r = 0; r < s.rows; ++r) {
            const std::size_t at = static_cast<std::size_t>(r * H + i);
            mag += std::fabs(static_cast<double>(dy[at]) * nr[at]);
          }
          ww.see(std::fabs(dw[static_cast<std::size_t>(i)] - dwr[static_cast<std::size_t>(i)]),
                 f * (tb::gamma(64 + nblocks) + rb.e_n + tb::kU) * mag + 1e-300, static_cast<std::size_t>(i));
        }
        const std::string w_ =
            where(isa, static_cast<int>(t)) + " rows=" + std::to_string(s.rows) + " H=" + std::to_string(H);
        EXPECT_TRUE(wi.ok) << w_ << ": inv_rms " << wi.text();
        EXPECT_TRUE(wy.ok) << w_ << ": y " << wy.text();
        EXPECT_TRUE(wx.ok) << w_ << ": d_input " << wx.text();
        EXPECT_TRUE(ww.ok) << w_ << ": d_weight " << ww.text();
        if (::testing::Test::HasFailure()) return;
        record(run, isa);
      }
  }
});

POPPER_FALSIFIER("FALSIFY-FUSED-012", [](const popper::Params& p) {
  const RmsNormShape s{p.integer("rows"), p.integer("hidden"), 1e-6f};
  const auto x = tb::uniform(static_cast<std::size_t>(s.rows * s.hidden), -1, 1, 1);
  const auto w = tb::uniform(static_cast<std::size_t>(s.hidden), -1, 1, 2);
  std::vector<float> y(x.size());
  tb::CountingAllocator fa, sa;
  RunInfo run;
  {
    const RmsNormSaved saved = rmsnorm_forward(s, x, w, y, opts(Isa::Auto, 2, &fa), &run);
    EXPECT_EQ(fa.current, static_cast<std::size_t>(s.rows) * sizeof(float))
        << "bytes kept for the backward by the fused forward";
    const separate::RmsNormSaved ss = separate::rmsnorm_forward(s, x, w, y, opts(Isa::Auto, 2, &sa));
    EXPECT_EQ(sa.current, static_cast<std::size_t>(s.rows * s.hidden + s.rows) * sizeof(float))
        << "control: the separate path keeps normed";
    std::printf("  saved for backward: fused %zu bytes, separate %zu bytes (rows %lld, H %lld)\n", fa.current,
                sa.current, static_cast<long long>(s.rows), static_cast<long long>(s.hidden));
  }
  EXPECT_EQ(fa.current, 0u);
  record(run, Isa::Auto);
});

POPPER_FALSIFIER("FALSIFY-FUSED-003", [](const popper::Params& p) {
  const double f = p.number("tol_factor"), seed_tol = p.number("seed_tolerance");
  double test_worst = 0;
  for (const auto& sh : p.list("shapes")) {
    const SwigluShape s{sh.integer("rows"), sh.integer("width")};
    const std::size_t n = static_cast<std::size_t>(s.rows * s.width);
    const auto g = tb::uniform(n, -8, 8, p.seed() + n);
    const auto u = tb::uniform(n, -2, 2, p.seed() + 1);
    const auto dh = tb::uniform(n, -2, 2, p.seed() + 2);
    std::vector<double> hr(n), dgr(n), dur(n);
    reference::swiglu_forward(g, u, hr);
    reference::swiglu_backward(dh, g, u, dgr, dur);
    for (const Isa isa : isas_to_test())
      for (const auto t : p.integers("threads")) {
        std::vector<float> h(n), gg = g, uu = u;
        swiglu_forward(s, g, u, h, opts(isa, static_cast<int>(t)));
        const RunInfo run = swiglu_backward_inplace(s, dh, gg, uu, opts(isa, static_cast<int>(t)));
        tb::Worst wh, wg, wu;
        double seed_worst = 0;
        for (std::size_t i = 0; i < n; ++i) {
          const tb::SwigluBound b = tb::swiglu_bound(g[i], u[i], dh[i], f);
          wh.see(std::fabs(h[i] - hr[i]), b.h + 1e-300, i);
          wg.see(std::fabs(gg[i] - dgr[i]), b.d_gate + 1e-300, i);
          wu.see(std::fabs(uu[i] - dur[i]), b.d_up + 1e-300, i);
          seed_worst = std::max({seed_worst, std::fabs(gg[i] - dgr[i]), std::fabs(uu[i] - dur[i])});
        }
        const std::string w_ = where(isa, static_cast<int>(t)) + " n=" + std::to_string(n);
        EXPECT_TRUE(wh.ok) << w_ << ": h " << wh.text();
        EXPECT_TRUE(wg.ok) << w_ << ": d_gate " << wg.text();
        EXPECT_TRUE(wu.ok) << w_ << ": d_up " << wu.text();
        EXPECT_LT(seed_worst, seed_tol) << w_ << ": the seed's 1e-5";
        test_worst = std::max(test_worst, seed_worst);
        if (::testing::Test::HasFailure()) return;
        record(run, isa);
      }
  }
  std::printf("  SwiGLU worst |d_gate|,|d_up| error: %.3g (seed bound %g)\n", test_worst, seed_tol);
});

POPPER_FALSIFIER("FALSIFY-FUSED-013", [](const popper::Params& p) {
  const SwigluShape s{p.integer("rows"), p.integer("width")};
  const std::size_t n = static_cast<std::size_t>(s.rows * s.width);
  auto g = tb::uniform(n, -4, 4, 1), u = tb::uniform(n, -1, 1, 2);
  const auto dh = tb::uniform(n, -1, 1, 3);
  tb::CountingAllocator fa, sa;
  { separate::SwigluGrads sg = separate::swiglu_backward(s, dh, g, u, opts(Isa::Auto, 2, &sa)); }
  const RunInfo run = swiglu_backward_inplace(s, dh, g, u, opts(Isa::Auto, 2, &fa));
  std::printf("  SwiGLU backward bytes requested: in place %zu, separate %zu\n", fa.requested, sa.requested);
  EXPECT_EQ(fa.requested, 0u) << "the in-place backward allocated";
  EXPECT_EQ(fa.allocations, 0u);
  EXPECT_EQ(sa.requested, 3 * n * sizeof(float)) << "control: sigma, d_gate, d_up";
  record(run, Isa::Auto);
});

}  // namespace
