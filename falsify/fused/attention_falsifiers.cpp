// FALSIFY-FUSED-005 (fused attention forward vs separate, and its memory),
// -023 (one-token decode), -015 (BF16 inputs), -009 (backward), -006 (memory
// savings per block at the seed's shape).
#include <gtest/gtest.h>

#include <cstdio>

#include "impl/fused/fused.hpp"
#include "impl/fused/reference.hpp"
#include "support.hpp"
#include "testbed.hpp"

namespace {

using namespace popper::fused;
using namespace popper::fused::testing;
namespace tb = popper::fused::testbed;

AttentionShape attn_shape(const popper::Params& sh) {
  AttentionShape s;
  s.batch = sh.integer("batch"), s.q_len = sh.integer("q_len"), s.kv_len = sh.integer("kv_len");
  s.q_heads = sh.integer("q_heads"), s.kv_heads = sh.integer("kv_heads"), s.head_dim = sh.integer("head_dim");
  s.causal = sh.boolean("causal");
  return s;
}
std::size_t q_elems(const AttentionShape& s) {
  return static_cast<std::size_t>(s.batch * s.q_len * s.q_heads * s.head_dim);
}
std::size_t kv_elems(const AttentionShape& s) {
  return static_cast<std::size_t>(s.batch * s.kv_len * s.kv_heads * s.head_dim);
}
std::size_t rows(const AttentionShape& s) { return static_cast<std::size_t>(s.batch * s.q_heads * s.q_len); }

struct AttnCase {
  AttentionShape s;
  std::vector<float> q, k, v;
  std::vector<double> o, lse, probs;
};
AttnCase make_case(const AttentionShape& s, std::uint64_t seed) {
  AttnCase c{s,
             tb::uniform(q_elems(s), -1, 1, seed),
             tb::uniform(kv_elems(s), -1, 1, seed + 1),
             tb::uniform(kv_elems(s), -1, 1, seed + 2),
             std::vector<double>(q_elems(s)),
             std::vector<double>(rows(s)),
             std::vector<double>(rows(s) * static_cast<std::size_t>(s.kv_len))};
  reference::attention_forward(s, c.q, c.k, c.v, c.o, c.lse, c.probs);
  return c;
}

// Worst |O - reference| in the current test (printed as evidence).
double g_attention_seed_worst = 0;

// Forward O and lse within the derived bound (and the seed's absolute number when given).
void judge_forward(const AttnCase& c, const std::vector<float>& o, const std::vector<float>& lse, double f,
                   double seed_tol, const std::string& what) {
  const tb::AttnFwdBound b = tb::attention_forward_bound(c.s, c.q, c.k, c.v, c.o, c.lse, c.probs, f);
  tb::Worst wo, wl;
  double worst_abs = 0;
  for (std::size_t i = 0; i < o.size(); ++i) {
    wo.see(std::fabs(o[i] - c.o[i]), b.o[i] + 1e-300, i);
    worst_abs = std::max(worst_abs, std::fabs(o[i] - c.o[i]));
  }
  for (std::size_t i = 0; i < lse.size(); ++i) wl.see(std::fabs(lse[i] - c.lse[i]), b.lse[i], i);
  EXPECT_TRUE(wo.ok) << what << ": O " << wo.text();
  EXPECT_TRUE(wl.ok) << what << ": lse " << wl.text();
  g_attention_seed_worst = std::max(g_attention_seed_worst, worst_abs);
  if (seed_tol > 0) {
    EXPECT_LT(worst_abs, seed_tol) << what << ": the seed's absolute bound";
  }
}

POPPER_FALSIFIER("FALSIFY-FUSED-005", [](const popper::Params& p) {
  const double f = p.number("tol_factor"), seed_tol = p.number("seed_tolerance");
  int cases = 0;
  g_attention_seed_worst = 0;
  for (const auto& sh : p.list("shapes")) {
    const AttnCase c = make_case(attn_shape(sh), p.seed() + static_cast<std::uint64_t>(cases));
    for (const Isa isa : isas_to_test())
      for (const auto t : p.integers("threads")) {
        std::vector<float> o(q_elems(c.s)), lse(rows(c.s));
        const RunInfo run = attention_forward(c.s, c.q, c.k, c.v, o, lse, opts(isa, static_cast<int>(t)));
        judge_forward(c, o, lse, f, seed_tol,
                      where(isa, static_cast<int>(t)) + " Sq=" + std::to_string(c.s.q_len) +
                          " Skv=" + std::to_string(c.s.kv_len) + " D=" + std::to_string(c.s.head_dim) +
                          (c.s.causal ? " causal" : ""));
        if (::testing::Test::HasFailure()) return;
        record(run, isa);
      }
    ++cases;
  }
  std::printf("  attention FP32 worst |O| error: %.3g (seed bound %g)\n", g_attention_seed_worst, seed_tol);
  // Memory: peak bytes requested during the call (+ the saved lse) against the separate path's.
  const AttentionShape m = attn_shape(popper::Params("memory_shape", p.json()["memory_shape"]));
  const AttnCase c = make_case(m, 5);
  std::vector<float> o(q_elems(m)), lse(rows(m));
  tb::CountingAllocator fa, sa;
  attention_forward(m, c.q, c.k, c.v, o, lse, opts(Isa::Auto, 2, &fa));
  { const auto saved = separate::attention_forward(m, c.q, c.k, c.v, o, opts(Isa::Auto, 2, &sa)); }
  const std::size_t fused_peak = fa.peak + lse.size() * sizeof(float);
  std::printf("  attention peak: fused %zu bytes (workspace %zu + lse %zu), separate %zu bytes\n", fused_peak, fa.peak,
              lse.size() * sizeof(float), sa.peak);
  EXPECT_EQ(fa.peak, attention_forward_workspace_bytes(m, 2)) << "the workspace query disagrees with the kernel";
  EXPECT_LT(4 * fused_peak, sa.peak) << "peak(fused) < peak(separate) / 4";

  // Scores near 1e11 (a diverging model's), exact in FP32: q = 2^18 e_0 and
  // k_j = 2^16 (16 + j) e_0, D = 16 (scale 1/4), so scale s_ij = 2^32 (16 + j),
  // keys 2^32 apart; each row's softmax is one-hot at its last visible key.
  // Both paths must return that key's v exactly and lse = its scaled score:
  // the shift by the row max is exact there, wherever the max lies.
  AttentionShape h;
  h.batch = 1, h.q_len = h.kv_len = 16, h.q_heads = 2, h.kv_heads = 1, h.head_dim = 16, h.causal = true;
  std::vector<float> hq(q_elems(h), 0.0f), hk(kv_elems(h), 0.0f), hv = tb::uniform(kv_elems(h), -1, 1, 7);
  for (std::int64_t i = 0; i < h.q_len; ++i)
    for (std::int64_t hh = 0; hh < h.q_heads; ++hh) hq[static_cast<std::size_t>((i * h.q_heads + hh) * 16)] = 0x1p18f;
  for (std::int64_t j = 0; j < h.kv_len; ++j)
    hk[static_cast<std::size_t>(j * 16)] = 0x1p16f * static_cast<float>(16 + j);
  const auto one_hot = [&](const std::vector<float>& out, const std::string& who) {
    for (std::int64_t i = 0; i < h.q_len; ++i)
      for (std::int64_t hh = 0; hh < h.q_heads; ++hh)
        for (std::int64_t d = 0; d < 16; ++d) {
          const float got = out[static_cast<std::size_t>((i * h.q_heads + hh) * 16 + d)];
          const float want = hv[static_cast<std::size_t>(i * 16 + d)];
          ASSERT_EQ(got, want) << who << ": scores near 1e11, query " << i << " head " << hh << " dim " << d
                               << ": O is not v of the row's max key";
        }
  };
  for (const Isa isa : isas_to_test()) {
    std::vector<float> ho(q_elems(h)), hl(rows(h));
    const RunInfo run = attention_forward(h, hq, hk, hv, ho, hl, opts(isa, 1));
    one_hot(ho, run.backend + " fused");
    for (std::int64_t hh = 0; hh < h.q_heads; ++hh)
      for (std::int64_t i = 0; i < h.q_len; ++i) {
        const double want = 0x1p32 * static_cast<double>(16 + i);  // scale s_ii
        const double got = hl[static_cast<std::size_t>(hh * h.q_len + i)];
        EXPECT_LE(std::fabs(got - want), 4 * 0x1p-24 * want) << run.backend << ": lse of query " << i;
      }
    const auto saved = separate::attention_forward(h, hq, hk, hv, ho, opts(isa, 1));
    one_hot(ho, run.backend + " separate");
  }
  std::printf("  scores near 1e11: fused and separate return v of each row's max key exactly\n");
});

POPPER_FALSIFIER("FALSIFY-FUSED-023", [](const popper::Params& p) {
  const std::int64_t Hq = p.integer("q_heads"), Hkv = p.integer("kv_heads"), D = p.integer("head_dim"),
                     H = p.integer("hidden");
  for (const auto L : p.integers("kv_lens")) {
    AttentionShape s;
    s.batch = 1, s.q_len = 1, s.kv_len = L, s.q_heads = Hq, s.kv_heads = Hkv, s.head_dim = D, s.causal = true;
    const AttnCase c = make_case(s, p.seed() + static_cast<std::uint64_t>(L));
    std::vector<float> o(q_elems(s)), lse(rows(s));
    const RunInfo run = attention_forward(s, c.q, c.k, c.v, o, lse, opts(Isa::Auto, 2));
    judge_forward(c, o, lse, 2.0, 1e-3, "decode L=" + std::to_string(L));
    record(run, Isa::Auto);
    // RoPE of the new token at position L - 1 against the FP64 rotation.
    RopeShape rs;
    rs.batch = 1, rs.seq = 1, rs.q_heads = Hq, rs.kv_heads = Hkv, rs.head_dim = D, rs.pos_offset = L - 1;
    const RopeTable table = make_rope_table(L, D);
    auto q = c.q;
    std::vector<float> k(c.k.end() - static_cast<std::ptrdiff_t>(Hkv * D), c.k.end());
    const std::vector<float> q0 = q, k0 = k;
    record(rope_forward(rs, table, q, k, opts(Isa::Auto, 2)), Isa::Auto);
    std::vector<double> qr(q.size());
    reference::rope(1, 1, Hq, D, L - 1, 10000.0, false, q0, qr);
    for (std::size_t i = 0; i < q.size(); ++i) {
      const std::size_t base = i / static_cast<std::size_t>(D) * static_cast<std::size_t>(D),
                        j = i % static_cast<std::size_t>(D / 2);
      const double mag = std::fabs(q0[base + j]) + std::fabs(q0[base + j + static_cast<std::size_t>(D / 2)]);
      ASSERT_LE(std::fabs(q[i] - qr[i]), 2 * 3 * tb::kU * mag + 1e-300)
          << "decode RoPE at position " << L - 1 << " element " << i;
    }
    // RMSNorm and SwiGLU with one row.
    const RmsNormShape ns{1, H, 1e-6f};
    const auto x = tb::uniform(static_cast<std::size_t>(H), -2, 2, 11),
               w = tb::uniform(static_cast<std::size_t>(H), 0.5, 1.5, 12);
    std::vector<float> y(x.size());
    std::vector<double> yr(x.size()), ir(1), nr(x.size());
    RunInfo rr;
    rmsnorm_forward(ns, x, w, y, opts(Isa::Auto, 2), &rr);
    reference::rmsnorm_forward(ns, x, w, yr, ir, nr);
    const tb::RmsBound rb = tb::rms_bound(H);
    for (std::size_t i = 0; i < y.size(); ++i)
      ASSERT_LE(std::fabs(y[i] - yr[i]), 2 * (rb.e_n + 2 * tb::kU) * std::fabs(yr[i]) + 1e-300);
    record(rr, Isa::Auto);
    const SwigluShape ss{1, 4 * H};
    const auto g = tb::uniform(static_cast<std::size_t>(4 * H), -6, 6, 13),
               u = tb::uniform(static_cast<std::size_t>(4 * H), -2, 2, 14);
    std::vector<float> h(g.size());
    std::vector<double> hr(g.size());
    record(swiglu_forward(ss, g, u, h, opts(Isa::Auto, 2)), Isa::Auto);
    reference::swiglu_forward(g, u, hr);
    for (std::size_t i = 0; i < h.size(); ++i)
      ASSERT_LE(std::fabs(h[i] - hr[i]), tb::swiglu_bound(g[i], u[i], 1, 2).h + 1e-300);
  }
});

POPPER_FALSIFIER("FALSIFY-FUSED-015", [](const popper::Params& p) {
  const double f = p.number("tol_factor"), seed_tol = p.number("seed_tolerance");
  g_attention_seed_worst = 0;
  for (const auto& sh : p.list("shapes")) {
    const AttentionShape s = attn_shape(sh);
    AttnCase c{s,
               tb::uniform(q_elems(s), -1, 1, p.seed()),
               tb::uniform(kv_elems(s), -1, 1, p.seed() + 1),
               tb::uniform(kv_elems(s), -1, 1, p.seed() + 2),
               {},
               {},
               {}};
    std::vector<std::uint16_t> q16(c.q.size()), k16(c.k.size()), v16(c.v.size());
    to_bf16(c.q, q16), to_bf16(c.k, k16), to_bf16(c.v, v16);
    from_bf16(q16, c.q), from_bf16(k16, c.k), from_bf16(v16, c.v);  // the values the kernel sees
    c.o.resize(q_elems(s)), c.lse.resize(rows(s)), c.probs.resize(rows(s) * static_cast<std::size_t>(s.kv_len));
    reference::attention_forward(s, c.q, c.k, c.v, c.o, c.lse, c.probs);
    for (const Isa isa : isas_to_test()) {
      std::vector<float> o(q_elems(s)), lse(rows(s));
      const RunInfo run = attention_forward_bf16(s, q16, k16, v16, o, lse, opts(isa, 2));
      judge_forward(c, o, lse, f, seed_tol, "bf16 " + where(isa, 2));
      if (::testing::Test::HasFailure()) return;
      record(run, isa);
    }
  }
  std::printf("  attention BF16-input worst |O| error: %.3g (seed bound %g)\n", g_attention_seed_worst, seed_tol);
});

POPPER_FALSIFIER("FALSIFY-FUSED-009", [](const popper::Params& p) {
  const double f = p.number("tol_factor");
  int cases = 0;
  for (const auto& sh : p.list("shapes")) {
    const AttnCase c = make_case(attn_shape(sh), p.seed() + static_cast<std::uint64_t>(cases++));
    const AttentionShape& s = c.s;
    const auto d_o = tb::uniform(q_elems(s), -1, 1, p.seed() + 100);
    std::vector<double> dqr(q_elems(s)), dkr(kv_elems(s)), dvr(kv_elems(s));
    reference::attention_backward(s, c.q, c.k, c.v, d_o, dqr, dkr, dvr);
    const tb::AttnFwdBound fb = tb::attention_forward_bound(s, c.q, c.k, c.v, c.o, c.lse, c.probs, f);
    const tb::AttnBwdBound bb = tb::attention_backward_bound(s, c.q, c.k, c.v, d_o, c.o, c.probs, fb, f);
    for (const Isa isa : isas_to_test())
      for (const auto t : p.integers("threads")) {
        const auto o_ = opts(isa, static_cast<int>(t));
        std::vector<float> o(q_elems(s)), lse(rows(s)), dq(q_elems(s), 9.0f), dk(kv_elems(s), 9.0f),
            dv(kv_elems(s), 9.0f);
        attention_forward(s, c.q, c.k, c.v, o, lse, o_);
        const RunInfo run = attention_backward(s, c.q, c.k, c.v, o, lse, d_o, dq, dk, dv, o_);
        const std::string w_ = where(isa, static_cast<int>(t)) + " Sq=" + std::to_string(s.q_len) +
                               " Skv=" + std::to_string(s.kv_len) + " Hq/Hkv=" + std::to_string(s.q_heads) + "/" +
                               std::to_string(s.kv_heads);
        for (const auto& [name, got, want, bound] :
             {std::tuple{"dQ", &dq, &dqr, &bb.dq}, std::tuple{"dK", &dk, &dkr, &bb.dk},
              std::tuple{"dV", &dv, &dvr, &bb.dv}}) {
          tb::Worst w;
          double norm = 0;
          for (std::size_t i = 0; i < got->size(); ++i) {
            w.see(std::fabs((*got)[i] - (*want)[i]), (*bound)[i], i);
            norm += static_cast<double>((*got)[i]) * (*got)[i];
          }
          EXPECT_TRUE(w.ok) << w_ << ": " << name << " " << w.text();
          // With one visible key per row the softmax is constant: dQ and dK vanish identically.
          if (s.kv_len > 1 || std::string(name) == "dV") {
            EXPECT_GT(norm, 0.0) << w_ << ": " << name << " has no gradient";
          }
        }
        if (::testing::Test::HasFailure()) return;
        record(run, isa);
      }
  }
});

POPPER_FALSIFIER("FALSIFY-FUSED-006", [](const popper::Params& p) {
  const std::int64_t B = p.integer("batch"), S = p.integer("seq"), H = p.integer("hidden"),
                     I = p.integer("intermediate");
  const int threads = static_cast<int>(p.integer("threads"));
  const std::int64_t rows_ = B * S;
  // RMSNorm at the full shape: bytes kept for the backward.
  const RmsNormShape ns{rows_, H, 1e-6f};
  const auto x = tb::uniform(static_cast<std::size_t>(rows_ * H), -1, 1, 1),
             w = tb::uniform(static_cast<std::size_t>(H), 0.5, 1.5, 2);
  std::vector<float> y(x.size());
  tb::CountingAllocator rf, rs;
  std::size_t rms_fused = 0, rms_sep = 0;
  {
    const auto a = rmsnorm_forward(ns, x, w, y, opts(Isa::Auto, threads, &rf));
    rms_fused = rf.current;
    const auto b = separate::rmsnorm_forward(ns, x, w, y, opts(Isa::Auto, threads, &rs));
    rms_sep = rs.current;
  }
  // SwiGLU backward at the full shape: bytes requested.
  const SwigluShape ss{rows_, I};
  auto g = tb::uniform(static_cast<std::size_t>(rows_ * I), -2, 2, 3), u = tb::uniform(g.size(), -1, 1, 4);
  const auto dh = tb::uniform(g.size(), -1, 1, 5);
  tb::CountingAllocator sf, sp;
  { const auto grads = separate::swiglu_backward(ss, dh, g, u, opts(Isa::Auto, threads, &sp)); }
  record(swiglu_backward_inplace(ss, dh, g, u, opts(Isa::Auto, threads, &sf)), Isa::Auto);
  // Attention: the sizes the kernels allocate with, checked against a measured call at a small shape.
  AttentionShape as;
  as.batch = B, as.q_len = S, as.kv_len = S, as.q_heads = p.integer("q_heads"), as.kv_heads = p.integer("kv_heads");
  as.head_dim = p.integer("head_dim");
  AttentionShape small = as;
  small.batch = 1, small.q_len = small.kv_len = 96;
  {
    const AttnCase c = make_case(small, 9);
    std::vector<float> o(q_elems(small)), lse(rows(small));
    tb::CountingAllocator af, ap;
    attention_forward(small, c.q, c.k, c.v, o, lse, opts(Isa::Auto, threads, &af));
    { const auto sv = separate::attention_forward(small, c.q, c.k, c.v, o, opts(Isa::Auto, threads, &ap)); }
    ASSERT_EQ(af.peak, attention_forward_workspace_bytes(small, threads));
    ASSERT_EQ(ap.peak, separate::attention_probs_bytes(small));
  }
  const std::size_t attn_fused = attention_forward_workspace_bytes(as, threads) + rows(as) * sizeof(float);
  const std::size_t attn_sep = separate::attention_probs_bytes(as);
  const double saved = (static_cast<double>(rms_sep) - static_cast<double>(rms_fused)) +
                       (static_cast<double>(sp.peak) - static_cast<double>(sf.peak)) +
                       (static_cast<double>(attn_sep) - static_cast<double>(attn_fused));
  std::printf(
      "  per block: RMSNorm saved %zu vs %zu, SwiGLU bwd peak %zu vs %zu, attention %zu vs %zu bytes; savings %.1f "
      "MB\n",
      rms_fused, rms_sep, sf.peak, sp.peak, attn_fused, attn_sep, saved / 1e6);
  EXPECT_GE(saved, p.number("min_savings_bytes"));
});

}  // namespace
