// FALSIFY-FUSED-019 (thread-count determinism), -018 (bad input), -021
// (decline without a device), -020 (device parity, requires cuda), -022 (exp2
// accuracy) and KANI-FUSED-001 (BF16 round to nearest even, exhaustive over
// the upper halves).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

#include "impl/common/cpu_features.hpp"
#include "impl/common/device.hpp"
#include "impl/fused/cpu_kernels.hpp"
#include "impl/fused/fused.hpp"
#include "impl/fused/reference.hpp"
#include "popper/error.hpp"
#include "support.hpp"
#include "testbed.hpp"

namespace {

using namespace popper::fused;
using namespace popper::fused::testing;
namespace tb = popper::fused::testbed;

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Every fused kernel's outputs for one thread count, concatenated.
std::vector<float> all_outputs(int threads, std::uint64_t seed) {
  std::vector<float> out;
  auto add = [&](const std::vector<float>& v) { out.insert(out.end(), v.begin(), v.end()); };
  const auto o = opts(Isa::Auto, threads);
  {
    CrossEntropyShape s;
    s.rows = 37, s.vocab = 301, s.chunk = 128;
    const auto x = tb::uniform(static_cast<std::size_t>(s.rows * s.vocab), -5, 5, seed);
    const auto y = tb::labels(s.rows, s.vocab, seed + 1);
    std::vector<float> l(static_cast<std::size_t>(s.rows)), e(l.size()), g(x.size());
    cross_entropy(s, x, y, l, e, g, o);
    add(l), add(e), add(g);
  }
  {
    const RmsNormShape s{200, 129, 1e-6f};  // 4 row blocks of 64
    const auto x = tb::uniform(static_cast<std::size_t>(s.rows * s.hidden), -2, 2, seed + 2);
    const auto w = tb::uniform(static_cast<std::size_t>(s.hidden), -1, 1, seed + 3);
    const auto dy = tb::uniform(x.size(), -1, 1, seed + 4);
    std::vector<float> y(x.size()), dx(x.size()), dw(static_cast<std::size_t>(s.hidden));
    const auto saved = rmsnorm_forward(s, x, w, y, o);
    rmsnorm_backward(s, x, w, saved.inv_rms.span(), dy, dx, dw, o);
    add(y), add(dx), add(dw);
  }
  {
    const SwigluShape s{33, 70};
    auto g = tb::uniform(static_cast<std::size_t>(s.rows * s.width), -4, 4, seed + 5),
         u = tb::uniform(g.size(), -1, 1, seed + 6);
    const auto dh = tb::uniform(g.size(), -1, 1, seed + 7);
    std::vector<float> h(g.size());
    swiglu_forward(s, g, u, h, o);
    swiglu_backward_inplace(s, dh, g, u, o);
    add(h), add(g), add(u);
  }
  {
    RopeShape s;
    s.batch = 2, s.seq = 19, s.q_heads = 4, s.kv_heads = 2, s.head_dim = 16;
    const RopeTable t = make_rope_table(19, 16);
    auto q = tb::uniform(static_cast<std::size_t>(2 * 19 * 4 * 16), -1, 1, seed + 8),
         k = tb::uniform(static_cast<std::size_t>(2 * 19 * 2 * 16), -1, 1, seed + 9);
    rope_forward(s, t, q, k, o);
    add(q), add(k);
  }
  {
    AttentionShape s;
    s.batch = 2, s.q_len = 70, s.kv_len = 70, s.q_heads = 4, s.kv_heads = 2, s.head_dim = 16;
    const std::size_t nq = static_cast<std::size_t>(2 * 70 * 4 * 16), nk = static_cast<std::size_t>(2 * 70 * 2 * 16);
    const auto q = tb::uniform(nq, -1, 1, seed + 10), k = tb::uniform(nk, -1, 1, seed + 11),
               v = tb::uniform(nk, -1, 1, seed + 12);
    const auto d_o = tb::uniform(nq, -1, 1, seed + 13);
    std::vector<float> ao(nq), lse(static_cast<std::size_t>(2 * 4 * 70)), dq(nq), dk(nk), dv(nk);
    attention_forward(s, q, k, v, ao, lse, o);
    attention_backward(s, q, k, v, ao, lse, d_o, dq, dk, dv, o);
    add(ao), add(lse), add(dq), add(dk), add(dv);
  }
  return out;
}

POPPER_FALSIFIER("FALSIFY-FUSED-019", [](const popper::Params& p) {
  const auto one = all_outputs(1, p.seed());
  for (const auto t : p.integers("threads")) {
    const auto other = all_outputs(static_cast<int>(t), p.seed());
    EXPECT_TRUE(same_bits(one, other)) << "threads 1 vs " << t << " differ";
  }
  record(RunInfo{popper::cpu::backend_tag(Isa::Auto), false, ""}, Isa::Auto);
});

// Expects `f` to throw E and leave `sentinel` untouched.
template <class E>
void expect_rejected(const std::string& what, const std::function<void()>& f, const std::vector<float>& sentinel,
                     float value) {
  EXPECT_THROW(f(), E) << what;
  for (float x : sentinel)
    if (x != value) {
      ADD_FAILURE() << what << ": output touched before the check";
      break;
    }
}

POPPER_FALSIFIER("FALSIFY-FUSED-018", [](const popper::Params& p) {
  using popper::BufferTooSmall;
  using popper::InvalidArgument;
  const float S = 12345.0f;
  // Buffers one element short are sub-spans of larger vectors, so a missed check reads memory it owns.
  {
    CrossEntropyShape s;
    s.rows = 4, s.vocab = 50;
    const auto x = tb::uniform(250, -1, 1, p.seed());
    auto y = tb::labels(4, 50, 1);
    std::vector<float> loss(4, S), grad(250, S);
    std::vector<float> gout(250, S);
    expect_rejected<BufferTooSmall>(
        "CE short grad", [&] { cross_entropy(s, x, y, loss, {}, std::span<float>(gout).first(199)); }, gout, S);
    expect_rejected<BufferTooSmall>(
        "CE short logits", [&] { cross_entropy(s, std::span<const float>(x).first(199), y, loss, {}, grad); }, grad, S);
    y[2] = 50;  // == V: out of range
    expect_rejected<InvalidArgument>(
        "CE label == V", [&] { cross_entropy(s, x, y, loss, {}, grad); }, grad, S);
    y[2] = -5;
    expect_rejected<InvalidArgument>(
        "CE negative label", [&] { cross_entropy(s, x, y, loss, {}, grad); }, grad, S);
    y[2] = 3;
    expect_rejected<InvalidArgument>(
        "CE partial overlap",
        [&] {
          cross_entropy(s, std::span<const float>(grad).first(200), y, loss, {},
                        std::span<float>(grad).subspan(10, 200));
        },
        loss, S);
  }
  {
    const RmsNormShape s{3, 8, 1e-6f};
    std::vector<float> x(24, 1.0f), w(8, 1.0f), y(24, S);
    expect_rejected<BufferTooSmall>(
        "RMSNorm short y", [&] { rmsnorm_forward(s, x, w, std::span<float>(y).first(23)); }, y, S);
    expect_rejected<InvalidArgument>(
        "RMSNorm eps 0",
        [&] {
          rmsnorm_forward(RmsNormShape{3, 8, 0.0f}, x, w, y);
        },
        y, S);
  }
  {
    std::vector<float> g(10, 1.0f), u(10, 1.0f), h(10, S);
    expect_rejected<BufferTooSmall>(
        "SwiGLU short up",
        [&] {
          swiglu_forward(SwigluShape{2, 5}, g, std::span<const float>(u).first(9), h);
        },
        h, S);
  }
  {
    RopeShape s;
    s.batch = 1, s.seq = 4, s.q_heads = 2, s.kv_heads = 1, s.head_dim = 8;
    std::vector<float> q(64, S), k(32, S);
    const RopeTable t = make_rope_table(4, 8);
    s.pos_offset = 1;  // needs 5 positions
    expect_rejected<InvalidArgument>(
        "RoPE past the table", [&] { rope_forward(s, t, q, k); }, q, S);
    s.pos_offset = 0, s.head_dim = 7;
    expect_rejected<InvalidArgument>(
        "RoPE odd head_dim", [&] { rope_forward(s, t, q, k); }, q, S);
  }
  {
    AttentionShape s;
    s.batch = 1, s.q_len = 4, s.kv_len = 4, s.q_heads = 3, s.kv_heads = 2, s.head_dim = 8;
    std::vector<float> q(96, 0.5f), k(64, 0.5f), v(64, 0.5f), o(96, S), lse(12, S);
    expect_rejected<InvalidArgument>(
        "attention Hq % Hkv", [&] { attention_forward(s, q, k, v, o, lse); }, o, S);
    s.q_heads = 2, s.kv_len = 3;
    expect_rejected<InvalidArgument>(
        "attention causal Skv < Sq", [&] { attention_forward(s, q, k, v, o, lse); }, o, S);
    s.kv_len = 4;
    expect_rejected<BufferTooSmall>(
        "attention short o", [&] { attention_forward(s, q, k, v, std::span<float>(o).first(63), lse); }, o, S);
  }
  // Non-finite logits: the documented per-row result, other rows exact.
  {
    CrossEntropyShape s;
    s.rows = 4, s.vocab = 40;
    auto x = tb::uniform(160, -2, 2, 3);
    const auto y = tb::labels(4, 40, 4);
    x[1 * 40 + 7] = std::nanf("");
    x[2 * 40 + 3] = INFINITY;
    std::vector<float> loss(4), grad(160);
    const auto r = cross_entropy(s, x, y, loss, {}, grad);
    EXPECT_EQ(r.nonfinite_rows, 2);
    for (const int row : {1, 2}) {
      EXPECT_TRUE(std::isnan(loss[static_cast<std::size_t>(row)]))
          << "row " << row << " loss " << loss[static_cast<std::size_t>(row)];
      for (int i = 0; i < 40; ++i)
        EXPECT_TRUE(std::isnan(grad[static_cast<std::size_t>(row * 40 + i)])) << "row " << row;
    }
    for (const int row : {0, 3}) EXPECT_TRUE(std::isfinite(loss[static_cast<std::size_t>(row)]));
    record(r.run, Isa::Auto);
  }
});

POPPER_FALSIFIER("FALSIFY-FUSED-021", [](const popper::Params& p) {
  if (popper::device::cuda_status().usable()) GTEST_SKIP() << "a device is present: the decline path is not taken";
  CrossEntropyShape s;
  s.rows = 5, s.vocab = 333;
  const auto x = tb::uniform(static_cast<std::size_t>(5 * 333), -3, 3, p.seed());
  const auto y = tb::labels(5, 333, 2);
  std::vector<float> l1(5), e1(5), g1(x.size()), l2(5), e2(5), g2(x.size());
  const auto rc = cuda::cross_entropy(s, x, y, l1, e1, g1);
  cross_entropy(s, x, y, l2, e2, g2);
  EXPECT_TRUE(rc.run.declined);
  EXPECT_TRUE(same_bits(l1, l2) && same_bits(g1, g2)) << "declined CE differs from the CPU kernel";
  record(rc.run, Isa::Auto);

  const RmsNormShape ns{6, 70, 1e-6f};
  const auto xr = tb::uniform(420, -1, 1, 3), w = tb::uniform(70, -1, 1, 4);
  std::vector<float> y1(420), y2(420), inv1(6);
  const auto rr = cuda::rmsnorm_forward(ns, xr, w, y1, inv1);
  const auto saved = rmsnorm_forward(ns, xr, w, y2);
  EXPECT_TRUE(rr.declined);
  EXPECT_TRUE(same_bits(y1, y2) && std::memcmp(inv1.data(), saved.inv_rms.data(), 6 * sizeof(float)) == 0);
  record(rr, Isa::Auto);

  const SwigluShape ss{3, 50};
  auto g = tb::uniform(150, -3, 3, 5), u = tb::uniform(150, -1, 1, 6);
  const auto dh = tb::uniform(150, -1, 1, 7);
  std::vector<float> h1(150), h2(150);
  EXPECT_TRUE(cuda::swiglu_forward(ss, g, u, h1).declined);
  swiglu_forward(ss, g, u, h2);
  EXPECT_TRUE(same_bits(h1, h2));
  auto g1c = g, u1c = u;
  const auto rb = cuda::swiglu_backward_inplace(ss, dh, g1c, u1c);
  swiglu_backward_inplace(ss, dh, g, u);
  EXPECT_TRUE(rb.declined && same_bits(g1c, g) && same_bits(u1c, u));
  record(rb, Isa::Auto);

  RopeShape rs;
  rs.batch = 1, rs.seq = 9, rs.q_heads = 4, rs.kv_heads = 2, rs.head_dim = 16;
  const RopeTable t = make_rope_table(9, 16);
  auto q1 = tb::uniform(576, -1, 1, 8), k1 = tb::uniform(288, -1, 1, 9);
  auto q2 = q1, k2 = k1;
  const auto rp = cuda::rope_forward(rs, t, q1, k1);
  rope_forward(rs, t, q2, k2);
  EXPECT_TRUE(rp.declined && same_bits(q1, q2) && same_bits(k1, k2));
  record(rp, Isa::Auto);

  AttentionShape as;
  as.batch = 1, as.q_len = 33, as.kv_len = 33, as.q_heads = 4, as.kv_heads = 2, as.head_dim = 16;
  const auto q = tb::uniform(33 * 4 * 16, -1, 1, 10), k = tb::uniform(33 * 2 * 16, -1, 1, 11),
             v = tb::uniform(33 * 2 * 16, -1, 1, 12);
  std::vector<float> o1(q.size()), o2(q.size()), ls1(132), ls2(132);
  const auto ra = cuda::attention_forward(as, q, k, v, o1, ls1);
  attention_forward(as, q, k, v, o2, ls2);
  EXPECT_TRUE(ra.declined && same_bits(o1, o2) && same_bits(ls1, ls2));
  record(ra, Isa::Auto);
});

// The device kernels against the FP64 references with the CPU kernels'
// derived bounds, on inputs that make a device fault visible: CE rows whose
// logits reach +-100 (exp overflows FP32 without the row-max shift), a row
// with one dominant logit (loss ~ 0: a wrong max or label index shows), a
// vocabulary that is no multiple of the 256-thread block and spans many
// strides; RMSNorm, SwiGLU, RoPE and attention on ragged sizes. Runs only
// with a device (requires: [cuda]).
POPPER_FALSIFIER("FALSIFY-FUSED-020", [](const popper::Params& p) {
  auto note = [](const RunInfo& r) { record(r, Isa::Auto); };  // a decline is never device evidence
  {
    CrossEntropyShape s;
    s.rows = 5, s.vocab = 5003;  // 19 strides of 256 and a ragged tail
    const std::size_t V = static_cast<std::size_t>(s.vocab);
    std::vector<float> x = tb::uniform(5 * V, -100, 100, p.seed());
    const auto tail = tb::uniform(V, -2, 2, p.seed() + 1);
    std::copy(tail.begin(), tail.end(), x.begin() + static_cast<std::ptrdiff_t>(3 * V));  // row 3: dominant logit
    std::vector<std::int64_t> y = tb::labels(5, s.vocab, 2);
    y[3] = 4999;
    x[3 * V + 4999] = 120.0f;
    const auto moderate = tb::uniform(V, -8, 8, p.seed() + 2);  // row 4: the moderate case
    std::copy(moderate.begin(), moderate.end(), x.begin() + static_cast<std::ptrdiff_t>(4 * V));
    std::vector<float> l(5), e(5), g(5 * V);
    std::vector<double> lr(5), er(5), gr(5 * V);
    const auto r = cuda::cross_entropy(s, x, y, l, e, g);
    reference::cross_entropy(s, x, y, lr, er, gr);
    // A block tree of 256 threads over V/256 strided terms each: no deeper than
    // the CPU's chunked sum (ce_depth with chunk = V), so the CPU bound holds.
    for (std::size_t i = 0; i < 5; ++i) {
      const auto b = tb::ce_bound(x.data() + i * V, s.vocab, s.vocab, lr[i], er[i]);
      EXPECT_TRUE(std::isfinite(l[i]) && std::isfinite(e[i])) << "device CE row " << i << ": loss " << l[i];
      EXPECT_LE(std::fabs(l[i] - lr[i]), b.loss) << "device CE loss row " << i;
      EXPECT_LE(std::fabs(e[i] - er[i]), b.lse) << "device CE lse row " << i;
      // Probabilities below FP32's smallest normal (e^-120 in row 3, e^-200 in
      // rows 0-2) may be flushed to zero (the CPU's exp2 does): that much
      // absolute error is representation, not a fault.
      const double floor = std::numeric_limits<float>::min();
      tb::Worst wg;
      for (std::size_t j = 0; j < V; ++j) {
        const double pj = std::exp(static_cast<double>(x[i * V + j]) - er[i]);
        wg.see(std::fabs(g[i * V + j] - gr[i * V + j]), pj * b.grad_rel + tb::kU * std::fabs(gr[i * V + j]) + floor, j);
      }
      EXPECT_TRUE(wg.ok) << "device CE gradient row " << i << ": " << wg.text();
    }
    note(r.run);
  }
  {
    const RmsNormShape ns{3, 1029, 1e-6f};  // ragged hidden size: 4 strides and a tail
    const auto x = tb::uniform(static_cast<std::size_t>(3 * 1029), -2, 2, p.seed() + 3);
    const auto w = tb::uniform(1029, 0.5, 1.5, p.seed() + 4);
    std::vector<float> y(x.size()), inv(3);
    std::vector<double> yr(x.size()), ir(3), nr(x.size());
    note(cuda::rmsnorm_forward(ns, x, w, y, inv));
    reference::rmsnorm_forward(ns, x, w, yr, ir, nr);
    const tb::RmsBound rb = tb::rms_bound(1029);
    for (std::size_t i = 0; i < y.size(); ++i)
      ASSERT_LE(std::fabs(y[i] - yr[i]), 2 * (rb.e_n + 2 * tb::kU) * std::fabs(yr[i]) + 1e-300)
          << "device RMSNorm " << i;
    for (std::size_t r = 0; r < 3; ++r)
      ASSERT_LE(std::fabs(inv[r] - ir[r]), 2 * rb.e_inv * ir[r]) << "device RMSNorm inv_rms row " << r;
  }
  {
    const SwigluShape ss{3, 1001};
    const auto g = tb::uniform(3003, -6, 6, p.seed() + 5), u = tb::uniform(3003, -2, 2, p.seed() + 6);
    std::vector<float> h(g.size());
    std::vector<double> hr(g.size());
    note(cuda::swiglu_forward(ss, g, u, h));
    reference::swiglu_forward(g, u, hr);
    for (std::size_t i = 0; i < h.size(); ++i)
      ASSERT_LE(std::fabs(h[i] - hr[i]), tb::swiglu_bound(g[i], u[i], 1, 2).h + 1e-300) << "device SwiGLU " << i;
  }
  {
    const std::int64_t Hq = 6, Hkv = 2, D = 16, L = 37;
    RopeShape rs;
    rs.batch = 1, rs.seq = L, rs.q_heads = Hq, rs.kv_heads = Hkv, rs.head_dim = D, rs.pos_offset = 0;
    const RopeTable table = make_rope_table(L, D);
    auto q = tb::uniform(static_cast<std::size_t>(L * Hq * D), -1, 1, p.seed() + 7);
    auto k = tb::uniform(static_cast<std::size_t>(L * Hkv * D), -1, 1, p.seed() + 8);
    const auto q0 = q;
    note(cuda::rope_forward(rs, table, q, k));
    std::vector<double> qr(q.size());
    reference::rope(1, L, Hq, D, 0, 10000.0, false, q0, qr);
    for (std::size_t i = 0; i < q.size(); ++i) {
      const std::size_t base = i / static_cast<std::size_t>(D) * static_cast<std::size_t>(D),
                        j = i % static_cast<std::size_t>(D / 2);
      const double mag = std::fabs(q0[base + j]) + std::fabs(q0[base + j + static_cast<std::size_t>(D / 2)]);
      ASSERT_LE(std::fabs(q[i] - qr[i]), 2 * 3 * tb::kU * mag + 1e-300) << "device RoPE element " << i;
    }
  }
  {
    AttentionShape s;  // GQA 3:1, causal with kv_len > q_len (bottom-right), ragged lengths
    s.batch = 2, s.q_len = 19, s.kv_len = 45, s.q_heads = 6, s.kv_heads = 2, s.head_dim = 24, s.causal = true;
    const std::size_t nq = static_cast<std::size_t>(2 * 19 * 6 * 24), nk = static_cast<std::size_t>(2 * 45 * 2 * 24);
    const std::size_t nrows = static_cast<std::size_t>(2 * 6 * 19);
    const auto q = tb::uniform(nq, -1, 1, p.seed() + 9), k = tb::uniform(nk, -1, 1, p.seed() + 10),
               v = tb::uniform(nk, -1, 1, p.seed() + 11);
    std::vector<double> orf(nq), lr(nrows), probs(nrows * 45);
    reference::attention_forward(s, q, k, v, orf, lr, probs);
    std::vector<float> o(nq), lse(nrows);
    note(cuda::attention_forward(s, q, k, v, o, lse));
    // The device rescales its running sum at every key where the CPU does per
    // 64-key block: 64 times the rescale term of rho covers that.
    const tb::AttnFwdBound b = tb::attention_forward_bound(s, q, k, v, orf, lr, probs, 64);
    tb::Worst wo, wl;
    for (std::size_t i = 0; i < o.size(); ++i) wo.see(std::fabs(o[i] - orf[i]), b.o[i] + 1e-300, i);
    for (std::size_t i = 0; i < lse.size(); ++i) wl.see(std::fabs(lse[i] - lr[i]), b.lse[i], i);
    EXPECT_TRUE(wo.ok) << "device attention O " << wo.text();
    EXPECT_TRUE(wl.ok) << "device attention lse " << wl.text();
  }
});

POPPER_FALSIFIER("FALSIFY-FUSED-022", [](const popper::Params&) {
  using namespace popper::fused::detail;
  const std::uint32_t mut = popper::mutant::active("exp2-poly-truncated") ? kMutExp2Truncated : 0u;
  std::vector<float> xs;
  for (double x = -126; x <= 127; x += 1.0 / 4096 / 7) xs.push_back(static_cast<float>(x));
  for (double x = -1; x <= 1; x += 1e-6) xs.push_back(static_cast<float>(x));
  xs.push_back(-INFINITY);
  xs.push_back(std::nanf(""));
  std::vector<float> out(xs.size());
  std::vector<std::pair<const KernelTable*, Isa>> tables{{&scalar_table(), Isa::Scalar}};
  if (popper::cpu::supports(Isa::Avx2)) tables.push_back({&avx2_table(), Isa::Avx2});
  if (popper::cpu::supports(Isa::Avx512)) tables.push_back({&avx512_table(), Isa::Avx512});
  for (const auto& [t, isa] : tables) {
    if (isa != popper::cpu::auto_isa() && !popper::forced_paths_allowed()) continue;
    t->exp2_array(xs.data(), out.data(), static_cast<std::int64_t>(xs.size()), mut);
    double worst = 0;
    float at = 0;
    for (std::size_t i = 0; i + 2 < xs.size(); ++i) {
      const double want = std::exp2(static_cast<double>(xs[i]));
      const double rel = std::fabs(out[i] - want) / want;
      if (!(rel <= worst)) worst = rel, at = xs[i];
    }
    std::printf("  exp2 %s: max relative error %.3g = %.2f u (at %g)\n", t->tag, worst, worst / tb::kU,
                static_cast<double>(at));
    EXPECT_LE(worst, tb::kE2) << t->tag << " at x = " << at;
    EXPECT_EQ(out[xs.size() - 2], 0.0f) << t->tag << ": exp2(-inf)";
    EXPECT_TRUE(std::isnan(out.back())) << t->tag << ": exp2(NaN)";
    popper::record_backend(t->tag, isa == popper::cpu::auto_isa() ? popper::Dispatch::Auto : popper::Dispatch::Forced);
  }
});

// RNE on the integer bits: the reference definition the conversion must equal.
std::uint16_t rne_definition(std::uint32_t b) {
  if ((b & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((b >> 16) | 0x40u);
  const std::uint32_t hi = b >> 16, lo = b & 0xFFFFu;
  if (lo > 0x8000u || (lo == 0x8000u && (hi & 1u))) return static_cast<std::uint16_t>(hi + 1);
  return static_cast<std::uint16_t>(hi);
}

POPPER_HARNESS("KANI-FUSED-001", [](const popper::Params& p) {
  const std::int64_t bound = p.bound();
  const std::uint32_t lows[] = {0x0000u, 0x0001u, 0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu};
  std::vector<float> in;
  std::vector<std::uint32_t> bits;
  for (std::int64_t hi = 0; hi < bound; ++hi)
    for (const auto lo : lows) {
      const std::uint32_t b = (static_cast<std::uint32_t>(hi) << 16) | lo;
      float f;
      std::memcpy(&f, &b, sizeof f);
      in.push_back(f);
      bits.push_back(b);
    }
  std::vector<Isa> paths{Isa::Scalar};
  if (popper::cpu::has_avx512_bf16() && popper::forced_paths_allowed()) paths.push_back(Isa::Avx512);
  for (const Isa isa : paths) {
    std::vector<std::uint16_t> out(in.size());
    to_bf16(in, out, isa);
    std::size_t bad = 0, first = 0;
    for (std::size_t i = 0; i < in.size(); ++i)
      if (out[i] != rne_definition(bits[i]) && bad++ == 0) first = i;
    EXPECT_EQ(bad, 0u) << popper::cpu::to_string(isa) << ": " << bad << " conversions differ, first 0x" << std::hex
                       << bits[first] << " -> 0x" << out[first] << " (want 0x" << rne_definition(bits[first]) << ")";
    popper::record_backend(isa == Isa::Avx512 ? "cpu:avx512_bf16" : "cpu:scalar",
                           isa == Isa::Scalar ? popper::Dispatch::Auto : popper::Dispatch::Forced);
  }
});

}  // namespace
