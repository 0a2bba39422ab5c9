// FALSIFY-FUSED-004 (grouped RoPE == per-head RoPE, bit for bit) and -014
// (RoPE against the FP64 rotation; backward inverts forward).
#include <gtest/gtest.h>

#include <cstring>

#include "impl/fused/fused.hpp"
#include "impl/fused/reference.hpp"
#include "support.hpp"
#include "testbed.hpp"

namespace {

using namespace popper::fused;
using namespace popper::fused::testing;
namespace tb = popper::fused::testbed;

std::size_t first_difference(const std::vector<float>& a, const std::vector<float>& b) {
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0) return i;
  return a.size();
}

POPPER_FALSIFIER("FALSIFY-FUSED-004", [](const popper::Params& p) {
  for (const auto D : p.integers("head_dims"))
    for (const auto pos : p.integers("pos_offsets")) {
      RopeShape s;
      s.batch = p.integer("batch"), s.seq = p.integer("seq"), s.q_heads = p.integer("q_heads");
      s.kv_heads = p.integer("kv_heads"), s.head_dim = D, s.pos_offset = pos;
      const RopeTable table = make_rope_table(s.seq + pos, D);
      const auto q = tb::uniform(static_cast<std::size_t>(s.batch * s.seq * s.q_heads * D), -2, 2,
                                 p.seed() + static_cast<std::uint64_t>(D));
      const auto k = tb::uniform(static_cast<std::size_t>(s.batch * s.seq * s.kv_heads * D), -2, 2, p.seed() + 1);
      for (const Isa isa : isas_to_test())
        for (const auto t : p.integers("threads"))
          for (const bool backward : {false, true}) {
            auto qg = q, kg = k, qh = q, kh = k;
            const auto o = opts(isa, static_cast<int>(t));
            const RunInfo rg = backward ? rope_backward(s, table, qg, kg, o) : rope_forward(s, table, qg, kg, o);
            const RunInfo rh = backward ? separate::rope_backward_per_head(s, table, qh, kh, o)
                                        : separate::rope_forward_per_head(s, table, qh, kh, o);
            const std::size_t dq = first_difference(qg, qh), dk = first_difference(kg, kh);
            const std::string w_ = where(isa, static_cast<int>(t)) + " D=" + std::to_string(D) +
                                   " pos0=" + std::to_string(pos) + (backward ? " backward" : " forward");
            EXPECT_EQ(dq, qg.size()) << w_ << ": Q head "
                                     << (dq / static_cast<std::size_t>(D)) % static_cast<std::size_t>(s.q_heads)
                                     << " differs: " << qg[std::min(dq, qg.size() - 1)] << " vs "
                                     << qh[std::min(dq, qh.size() - 1)];
            EXPECT_EQ(dk, kg.size()) << w_ << ": K differs at " << dk;
            if (::testing::Test::HasFailure()) return;
            record(rg, isa);
            record(rh, isa);
          }
    }
});

POPPER_FALSIFIER("FALSIFY-FUSED-014", [](const popper::Params& p) {
  const double f = p.number("tol_factor");
  RopeShape s;
  s.batch = p.integer("batch"), s.seq = p.integer("seq"), s.q_heads = p.integer("q_heads");
  s.kv_heads = p.integer("kv_heads"), s.head_dim = p.integer("head_dim"), s.pos_offset = p.integer("pos_offset");
  const std::int64_t D = s.head_dim, half = D / 2;
  const RopeTable table = make_rope_table(s.seq + s.pos_offset, D);
  const auto q = tb::uniform(static_cast<std::size_t>(s.batch * s.seq * s.q_heads * D), -2, 2, p.seed());
  const auto k = tb::uniform(static_cast<std::size_t>(s.batch * s.seq * s.kv_heads * D), -2, 2, p.seed() + 1);
  // Componentwise bound f 3u (|x1| + |x2|) on a tensor of pairs.
  auto judge = [&](const std::vector<float>& x_in, const std::vector<float>& got, const std::vector<double>& want,
                   double mult, const std::string& what) {
    tb::Worst w;
    for (std::size_t base = 0; base < x_in.size(); base += static_cast<std::size_t>(D))
      for (std::int64_t j = 0; j < D; ++j) {
        const std::size_t jj = static_cast<std::size_t>(j % half);
        const double mag = std::fabs(x_in[base + jj]) + std::fabs(x_in[base + jj + static_cast<std::size_t>(half)]);
        w.see(std::fabs(got[base + static_cast<std::size_t>(j)] - want[base + static_cast<std::size_t>(j)]),
              mult * f * 3 * tb::kU * mag + 1e-300, base + static_cast<std::size_t>(j));
      }
    EXPECT_TRUE(w.ok) << what << ": " << w.text();
  };
  for (const Isa isa : isas_to_test()) {
    for (const bool backward : {false, true}) {
      auto qq = q, kk = k;
      const RunInfo run =
          backward ? rope_backward(s, table, qq, kk, opts(isa, 2)) : rope_forward(s, table, qq, kk, opts(isa, 2));
      std::vector<double> qr(q.size()), kr(k.size());
      reference::rope(s.batch, s.seq, s.q_heads, D, s.pos_offset, 10000.0, backward, q, qr);
      reference::rope(s.batch, s.seq, s.kv_heads, D, s.pos_offset, 10000.0, backward, k, kr);
      judge(q, qq, qr, 1, where(isa, 2) + (backward ? " backward q" : " forward q"));
      judge(k, kk, kr, 1, where(isa, 2) + (backward ? " backward k" : " forward k"));
      record(run, isa);
    }
    auto qq = q, kk = k;  // backward(forward(x)) == x
    rope_forward(s, table, qq, kk, opts(isa, 1));
    rope_backward(s, table, qq, kk, opts(isa, 1));
    std::vector<double> qd(q.begin(), q.end()), kd(k.begin(), k.end());
    judge(q, qq, qd, 2.5, where(isa, 1) + " inverse of forward (q)");
    judge(k, kk, kd, 2.5, where(isa, 1) + " inverse of forward (k)");
    if (::testing::Test::HasFailure()) return;
  }
});

}  // namespace
