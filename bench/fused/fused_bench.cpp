// bench_fused: the wrapped (popper's separate path: each step its own pass,
// intermediates stored, OpenBLAS for the attention products) and hand (the
// fused kernels) tiers over workloads/fused/shapes.h.
//
// Both tiers use the same SIMD primitives, the same caching allocator (a
// separate path pays no page faults a framework's caching allocator would not
// pay) and run in place where the fused kernel does (CE gradient over the
// logits, RoPE, the SwiGLU backward over gate/up). FTZ/DAZ is set so values
// that the in-place SwiGLU backward shrinks over iterations cannot hit
// denormal assists; the kernels have no data-dependent branches otherwise.
//
// Before timing, each tier's output is checked against the FP64 reference with
// the derived bounds of falsify/fused/testbed.hpp (sampled rows or heads for the
// full shapes): a violation skips the row as "incorrect: ...". After timing,
// the same check on fresh inputs (popper::bench::Recheck).
//
// The BLAS environment is the harness's to control (the CI gate pins
// OPENBLAS_CORETYPE=Haswell for deterministic counts; bench compare passes the
// caller's): the OpenBLAS core the separate attention path ran on is recorded
// as the wrapped tier's backend, so a ratio read from a forced weaker core is
// visible as such.
#include <benchmark/benchmark.h>
#include <xmmintrin.h>
#include <pmmintrin.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "common/fill.hpp"
#include "fused/testbed.hpp"
#include "impl/common/cpu_features.hpp"
#include "impl/fused/fused.hpp"
#include "impl/fused/reference.hpp"
#include "impl/gemm/lib_blas.hpp"
#include "popper/bench.hpp"
#include "workloads/fused/shapes.h"

namespace {

using namespace popper::fused;
namespace suite = popper::suite;
namespace pb = popper::bench;
namespace tb = popper::fused::testbed;

using Tier = pb::Tier;

std::vector<float> filled(std::size_t n, std::uint64_t seed, float scale = 1.0f) {
  std::vector<float> v(n);
  suite::fill_uniform(v, seed);
  if (scale != 1.0f)
    for (auto& x : v) x *= scale;
  return v;
}

bool is_full(const popper_fused_shape& s) { return std::strcmp(s.set, "full") == 0; }

// Sample of row indices (all for small n).
std::vector<std::int64_t> sample(std::int64_t n, int count) {
  std::vector<std::int64_t> out;
  if (n <= count) {
    for (std::int64_t i = 0; i < n; ++i) out.push_back(i);
    return out;
  }
  std::uint64_t x = 12345;
  for (int i = 0; i < count; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    out.push_back(static_cast<std::int64_t>((x >> 33) % static_cast<std::uint64_t>(n)));
  }
  out.push_back(n - 1);
  return out;
}

// ---- one benchmark case: inputs, the timed call, the verification
struct Case {
  virtual ~Case() = default;
  // One timed call. `half` (the skipped-work bench mutant's): the first half
  // of the rows (tokens), of the batch when there are two or more sequences.
  virtual void run(bool half) = 0;
  virtual void refill(std::uint64_t seed) = 0;  // fresh inputs, in-place buffers reset to them
  virtual std::string check() = 0;  // what the last run wrote: "" when correct, else "max err ... > bound ..."
  virtual void reset() {}           // in-place buffers back to the inputs
  std::string verify() {
    reset();
    run(false);
    std::string r = check();
    reset();
    return r;
  }
};

// Uniform [-1, 1) times `scale` into `v` (filled()'s draw).
void refilled(std::vector<float>& v, std::uint64_t seed, float scale = 1.0f) {
  suite::fill_uniform(v, seed);
  if (scale != 1.0f)
    for (auto& x : v) x *= scale;
}

std::string fail_text(const char* what, const tb::Worst& w) { return std::string(what) + " " + w.text(); }

struct CeCase final : Case {
  CrossEntropyShape s;
  Tier tier;
  ExecOptions o;
  std::vector<float> x, buf, loss;
  std::vector<std::int64_t> y;
  CeCase(const popper_fused_shape& sh, Tier t, ExecOptions opt) : tier(t), o(opt) {
    s.rows = static_cast<std::int64_t>(sh.batch) * sh.seq, s.vocab = sh.vocab;
    x = filled(static_cast<std::size_t>(s.rows * s.vocab), 1, 4.0f);
    buf = x;
    loss.resize(static_cast<std::size_t>(s.rows));
    y = tb::labels(s.rows, s.vocab, 2);
  }
  void run(bool half) override {
    CrossEntropyShape h = s;
    if (half) h.rows /= 2;
    if (tier == Tier::Hand) cross_entropy(h, buf, y, loss, {}, buf, o);
    else separate::cross_entropy(h, buf, y, loss, buf, o);
  }
  void reset() override { buf = x; }
  void refill(std::uint64_t seed) override {
    refilled(x, seed, 4.0f);
    y = tb::labels(s.rows, s.vocab, seed + 1);
    reset();
  }
  std::string check() override {
    tb::Worst wl, wg;
    CrossEntropyShape one = s;
    one.rows = 1;
    for (const auto r : sample(s.rows, 6)) {
      const std::size_t off = static_cast<std::size_t>(r * s.vocab);
      std::vector<double> l(1), e(1), g(static_cast<std::size_t>(s.vocab));
      reference::cross_entropy(one, std::span<const float>(x).subspan(off, static_cast<std::size_t>(s.vocab)),
                               std::span<const std::int64_t>(y).subspan(static_cast<std::size_t>(r), 1), l, e, g);
      const tb::CeBound b = tb::ce_bound(x.data() + off, s.vocab, s.chunk, l[0], e[0]);
      wl.see(std::fabs(loss[static_cast<std::size_t>(r)] - l[0]), b.loss, static_cast<std::size_t>(r));
      for (std::int64_t i = 0; i < s.vocab; ++i) {
        const double p = std::exp(static_cast<double>(x[off + static_cast<std::size_t>(i)]) - e[0]);
        wg.see(std::fabs(buf[off + static_cast<std::size_t>(i)] - g[static_cast<std::size_t>(i)]),
               p * b.grad_rel + tb::kU * std::fabs(g[static_cast<std::size_t>(i)]) + 1e-300,
               off + static_cast<std::size_t>(i));
      }
    }
    return !wl.ok ? fail_text("loss", wl) : !wg.ok ? fail_text("grad", wg) : "";
  }
};

struct RmsCase final : Case {
  RmsNormShape s;
  Tier tier;
  ExecOptions o;
  std::vector<float> x, w, dy, y, dx, dw;
  RmsCase(const popper_fused_shape& sh, Tier t, ExecOptions opt) : tier(t), o(opt) {
    s.rows = static_cast<std::int64_t>(sh.batch) * sh.seq, s.hidden = sh.hidden;
    const std::size_t n = static_cast<std::size_t>(s.rows * s.hidden);
    x = filled(n, 3, 2.0f), w = filled(static_cast<std::size_t>(s.hidden), 4), dy = filled(n, 5);
    y.resize(n), dx.resize(n), dw.resize(static_cast<std::size_t>(s.hidden));
  }
  void run(bool half) override {
    RmsNormShape h = s;
    if (half) h.rows /= 2;
    if (tier == Tier::Hand) {
      const RmsNormSaved saved = rmsnorm_forward(h, x, w, y, o);
      rmsnorm_backward(h, x, w, saved.inv_rms.span(), dy, dx, dw, o);
    } else {
      const separate::RmsNormSaved saved = separate::rmsnorm_forward(h, x, w, y, o);
      separate::rmsnorm_backward(h, saved, w, dy, dx, dw, o);
    }
  }
  void refill(std::uint64_t seed) override { refilled(x, seed, 2.0f), refilled(w, seed + 1), refilled(dy, seed + 2); }
  std::string check() override {
    const std::size_t n = x.size();
    std::vector<double> yr(n), ir(static_cast<std::size_t>(s.rows)), nr(n), dxr(n),
        dwr(static_cast<std::size_t>(s.hidden));
    reference::rmsnorm_forward(s, x, w, yr, ir, nr);
    reference::rmsnorm_backward(s, x, w, dy, dxr, dwr);
    const tb::RmsBound rb = tb::rms_bound(s.hidden);
    tb::Worst wy, wx, ww;
    std::vector<double> gn(static_cast<std::size_t>(s.rows)), mag(static_cast<std::size_t>(s.hidden));
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t r = i / static_cast<std::size_t>(s.hidden), c = i % static_cast<std::size_t>(s.hidden);
      gn[r] += std::fabs(static_cast<double>(dy[i]) * w[c] * nr[i]);
      mag[c] += std::fabs(static_cast<double>(dy[i]) * nr[i]);
    }
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t r = i / static_cast<std::size_t>(s.hidden), c = i % static_cast<std::size_t>(s.hidden);
      wy.see(std::fabs(y[i] - yr[i]), 2 * (rb.e_n + 2 * tb::kU) * std::fabs(yr[i]) + 1e-300, i);
      const double g = std::fabs(static_cast<double>(dy[i]) * w[c]);
      wx.see(std::fabs(dx[i] - dxr[i]),
             2 * ir[r] *
                     ((2 * tb::kU + rb.e_n) * g + (tb::gamma(static_cast<double>(s.hidden)) + 2 * rb.e_n + 2 * tb::kU) *
                                                      std::fabs(nr[i]) * gn[r] / static_cast<double>(s.hidden)) +
                 rb.e_inv * std::fabs(dxr[i]) + 1e-300,
             i);
    }
    const double nb = std::ceil(static_cast<double>(s.rows) / 64.0);
    for (std::size_t c = 0; c < mag.size(); ++c)
      ww.see(std::fabs(dw[c] - dwr[c]), 2 * (tb::gamma(64 + nb) + rb.e_n + tb::kU) * mag[c] + 1e-300, c);
    return !wy.ok ? fail_text("y", wy) : !wx.ok ? fail_text("d_input", wx) : !ww.ok ? fail_text("d_weight", ww) : "";
  }
};

struct SwigluCase final : Case {
  SwigluShape s;
  Tier tier;
  ExecOptions o;
  std::vector<float> g0, u0, g, u, dh, h;
  separate::SwigluGrads grads;  // the wrapped tier's d_gate and d_up
  SwigluCase(const popper_fused_shape& sh, Tier t, ExecOptions opt) : tier(t), o(opt) {
    s.rows = static_cast<std::int64_t>(sh.batch) * sh.seq, s.width = sh.intermediate;
    const std::size_t n = static_cast<std::size_t>(s.rows * s.width);
    g0 = filled(n, 6, 4.0f), u0 = filled(n, 7), dh = filled(n, 8);
    g = g0, u = u0, h.resize(n);
  }
  void run(bool half) override {
    SwigluShape r = s;
    if (half) r.rows /= 2;
    swiglu_forward(r, g, u, h, o);
    if (tier == Tier::Hand) swiglu_backward_inplace(r, dh, g, u, o);
    else grads = separate::swiglu_backward(r, dh, g, u, o);
  }
  void reset() override { g = g0, u = u0; }
  void refill(std::uint64_t seed) override {
    refilled(g0, seed, 4.0f), refilled(u0, seed + 1), refilled(dh, seed + 2);
    reset();
  }
  std::string check() override {
    const std::size_t n = g.size();
    std::vector<double> hr(n), dgr(n), dur(n);
    reference::swiglu_forward(g0, u0, hr);
    reference::swiglu_backward(dh, g0, u0, dgr, dur);
    // The hand tier's gradients are in gate and up (in place).
    const float* dg = tier == Tier::Hand ? g.data() : grads.d_gate.data();
    const float* du = tier == Tier::Hand ? u.data() : grads.d_up.data();
    tb::Worst wh, wg, wu;
    for (std::size_t i = 0; i < n; ++i) {
      const tb::SwigluBound b = tb::swiglu_bound(g0[i], u0[i], dh[i], 2);
      wh.see(std::fabs(h[i] - hr[i]), b.h + 1e-300, i);
      wg.see(std::fabs(dg[i] - dgr[i]), b.d_gate + 1e-300, i);
      wu.see(std::fabs(du[i] - dur[i]), b.d_up + 1e-300, i);
    }
    return !wh.ok ? fail_text("h", wh) : !wg.ok ? fail_text("d_gate", wg) : !wu.ok ? fail_text("d_up", wu) : "";
  }
};

struct RopeCase final : Case {
  RopeShape s;
  RopeTable table;
  Tier tier;
  ExecOptions o;
  std::vector<float> q0, k0, q, k;
  RopeCase(const popper_fused_shape& sh, Tier t, ExecOptions opt) : tier(t), o(opt) {
    s.batch = sh.batch, s.seq = sh.seq, s.q_heads = sh.q_heads, s.kv_heads = sh.kv_heads, s.head_dim = sh.head_dim;
    table = make_rope_table(s.seq, s.head_dim);
    q0 = filled(static_cast<std::size_t>(s.batch * s.seq * s.q_heads * s.head_dim), 9);
    k0 = filled(static_cast<std::size_t>(s.batch * s.seq * s.kv_heads * s.head_dim), 10);
    q = q0, k = k0;
  }
  void run(bool half) override {
    RopeShape h = s;
    if (half) (h.batch >= 2 ? h.batch : h.seq) /= 2;
    if (tier == Tier::Hand) rope_forward(h, table, q, k, o);
    else separate::rope_forward_per_head(h, table, q, k, o);
  }
  void reset() override { q = q0, k = k0; }
  void refill(std::uint64_t seed) override {
    refilled(q0, seed), refilled(k0, seed + 1);
    reset();
  }
  std::string check() override {
    std::vector<double> qr(q.size()), kr(k.size());
    reference::rope(s.batch, s.seq, s.q_heads, s.head_dim, 0, 10000.0, false, q0, qr);
    reference::rope(s.batch, s.seq, s.kv_heads, s.head_dim, 0, 10000.0, false, k0, kr);
    tb::Worst w;
    const std::size_t D = static_cast<std::size_t>(s.head_dim), half = D / 2;
    for (const auto& [in, got, want] : {std::tuple{&q0, &q, &qr}, std::tuple{&k0, &k, &kr}})
      for (std::size_t i = 0; i < in->size(); ++i) {
        const std::size_t base = i / D * D, j = i % half;
        w.see(std::fabs((*got)[i] - (*want)[i]),
              2 * 3 * tb::kU * (std::fabs((*in)[base + j]) + std::fabs((*in)[base + j + half])) + 1e-300, i);
      }
    return w.ok ? "" : fail_text("rotated", w);
  }
};

struct AttnCase final : Case {
  AttentionShape s;
  Tier tier;
  ExecOptions o;
  bool backward;
  std::vector<float> q, k, v, out, lse, d_o, dq, dk, dv;
  separate::AttentionSaved saved;  // the separate forward's P, for the separate backward
  AttnCase(const popper_fused_shape& sh, Tier t, ExecOptions opt, bool bwd) : tier(t), o(opt), backward(bwd) {
    s.batch = sh.batch, s.q_len = s.kv_len = sh.seq, s.q_heads = sh.q_heads, s.kv_heads = sh.kv_heads;
    s.head_dim = sh.head_dim, s.causal = true;
    const std::size_t nq = static_cast<std::size_t>(s.batch * s.q_len * s.q_heads * s.head_dim);
    const std::size_t nk = static_cast<std::size_t>(s.batch * s.kv_len * s.kv_heads * s.head_dim);
    q = filled(nq, 11), k = filled(nk, 12), v = filled(nk, 13), d_o = filled(nq, 14);
    out.resize(nq), lse.resize(static_cast<std::size_t>(s.batch * s.q_heads * s.q_len)), dq.resize(nq), dk.resize(nk),
        dv.resize(nk);
    forward_inputs();
  }
  void forward_inputs() {  // forward results the backward consumes
    if (!backward) return;
    attention_forward(s, q, k, v, out, lse, o);
    if (tier == Tier::Wrapped) {
      std::vector<float> o2(out.size());
      saved = separate::attention_forward(s, q, k, v, o2, o);
    }
  }
  void run(bool half) override {
    AttentionShape h = s;
    if (half && h.batch >= 2) h.batch /= 2;
    else if (half) h.q_len /= 2, h.kv_len /= 2;
    if (!backward) {
      if (tier == Tier::Hand) attention_forward(h, q, k, v, out, lse, o);
      else separate::AttentionSaved p = separate::attention_forward(h, q, k, v, out, o);
    } else {
      if (tier == Tier::Hand) attention_backward(h, q, k, v, out, lse, d_o, dq, dk, dv, o);
      else separate::attention_backward(h, saved, q, k, v, out, d_o, dq, dk, dv, o);
    }
  }
  void refill(std::uint64_t seed) override {
    refilled(q, seed), refilled(k, seed + 1), refilled(v, seed + 2), refilled(d_o, seed + 3);
    forward_inputs();
  }
  // Checks one (b, hkv) group: all its query heads, against the reference on that slice.
  std::string check() override {
    const std::int64_t g = s.q_heads / s.kv_heads, D = s.head_dim;
    AttentionShape sub = s;
    sub.batch = 1, sub.q_heads = g, sub.kv_heads = 1;
    tb::Worst wo, wq, wk, wv;
    for (const auto unit : sample(s.batch * s.kv_heads, is_full_shape ? 1 : 4)) {
      const std::int64_t b = unit / s.kv_heads, hk = unit % s.kv_heads;
      const std::size_t nq = static_cast<std::size_t>(s.q_len * g * D), nk = static_cast<std::size_t>(s.kv_len * D);
      std::vector<float> sq(nq), sk(nk), sv(nk), sdo(nq);
      auto qat = [&](std::int64_t i, std::int64_t h) {
        return static_cast<std::size_t>(((b * s.q_len + i) * s.q_heads + h) * D);
      };
      auto kat = [&](std::int64_t j) { return static_cast<std::size_t>(((b * s.kv_len + j) * s.kv_heads + hk) * D); };
      for (std::int64_t i = 0; i < s.q_len; ++i)
        for (std::int64_t gi = 0; gi < g; ++gi)
          for (std::int64_t c = 0; c < D; ++c) {
            const std::size_t dst = static_cast<std::size_t>((i * g + gi) * D + c);
            sq[dst] = q[qat(i, hk * g + gi) + static_cast<std::size_t>(c)];
            sdo[dst] = d_o[qat(i, hk * g + gi) + static_cast<std::size_t>(c)];
          }
      for (std::int64_t j = 0; j < s.kv_len; ++j)
        for (std::int64_t c = 0; c < D; ++c)
          sk[static_cast<std::size_t>(j * D + c)] = k[kat(j) + static_cast<std::size_t>(c)],
                                              sv[static_cast<std::size_t>(j * D + c)] =
                                                  v[kat(j) + static_cast<std::size_t>(c)];
      std::vector<double> ro(nq), rl(static_cast<std::size_t>(g * s.q_len)),
          rp(rl.size() * static_cast<std::size_t>(s.kv_len));
      reference::attention_forward(sub, sq, sk, sv, ro, rl, rp);
      const tb::AttnFwdBound fb = tb::attention_forward_bound(sub, sq, sk, sv, ro, rl, rp, 2.0);
      if (!backward) {
        for (std::int64_t i = 0; i < s.q_len; ++i)
          for (std::int64_t gi = 0; gi < g; ++gi)
            for (std::int64_t c = 0; c < D; ++c) {
              const std::size_t at = static_cast<std::size_t>((i * g + gi) * D + c);
              wo.see(std::fabs(out[qat(i, hk * g + gi) + static_cast<std::size_t>(c)] - ro[at]), fb.o[at], at);
            }
        continue;
      }
      std::vector<double> rdq(nq), rdk(nk), rdv(nk);
      reference::attention_backward(sub, sq, sk, sv, sdo, rdq, rdk, rdv);
      const tb::AttnBwdBound bb = tb::attention_backward_bound(sub, sq, sk, sv, sdo, ro, rp, fb, 2.0);
      for (std::int64_t i = 0; i < s.q_len; ++i)
        for (std::int64_t gi = 0; gi < g; ++gi)
          for (std::int64_t c = 0; c < D; ++c) {
            const std::size_t at = static_cast<std::size_t>((i * g + gi) * D + c);
            wq.see(std::fabs(dq[qat(i, hk * g + gi) + static_cast<std::size_t>(c)] - rdq[at]), bb.dq[at], at);
          }
      for (std::int64_t j = 0; j < s.kv_len; ++j)
        for (std::int64_t c = 0; c < D; ++c) {
          const std::size_t at = static_cast<std::size_t>(j * D + c);
          wk.see(std::fabs(dk[kat(j) + static_cast<std::size_t>(c)] - rdk[at]), bb.dk[at], at);
          wv.see(std::fabs(dv[kat(j) + static_cast<std::size_t>(c)] - rdv[at]), bb.dv[at], at);
        }
    }
    return !wo.ok   ? fail_text("O", wo)
           : !wq.ok ? fail_text("dQ", wq)
           : !wk.ok ? fail_text("dK", wk)
           : !wv.ok ? fail_text("dV", wv)
                    : "";
  }
  bool is_full_shape = false;
};

std::unique_ptr<Case> make_case(const popper_fused_shape& sh, Tier t, const ExecOptions& o) {
  switch (sh.kernel) {
    case POPPER_FUSED_CE: return std::make_unique<CeCase>(sh, t, o);
    case POPPER_FUSED_RMSNORM: return std::make_unique<RmsCase>(sh, t, o);
    case POPPER_FUSED_SWIGLU: return std::make_unique<SwigluCase>(sh, t, o);
    case POPPER_FUSED_ROPE: return std::make_unique<RopeCase>(sh, t, o);
    case POPPER_FUSED_ATTN_FWD:
    case POPPER_FUSED_ATTN_BWD: {
      auto c = std::make_unique<AttnCase>(sh, t, o, sh.kernel == POPPER_FUSED_ATTN_BWD);
      c->is_full_shape = is_full(sh);
      return c;
    }
  }
  return nullptr;
}

tb::CachingAllocator& bench_allocator() {
  static tb::CachingAllocator a;
  return a;
}

// Verdicts per (shape, tier, threads): a repetition re-enters the function, the check runs once.
std::map<std::string, std::string>& verdicts() {
  static std::map<std::string, std::string> m;
  return m;
}

void bench_fused(benchmark::State& state, const pb::Case& cs) {
  const popper_fused_shape& sh = POPPER_FUSED_SHAPES[cs.shape];
  ExecOptions o;
  o.threads = cs.threads;
  o.allocator = &bench_allocator();
  std::unique_ptr<Case> c;
  const std::string key = format_bench_name(cs.name());
  try {
    c = make_case(sh, cs.tier, o);
    auto it = verdicts().find(key);
    if (it == verdicts().end()) it = verdicts().emplace(key, c->verify()).first;
    if (!it->second.empty()) return pb::skip(state, pb::Verdict::incorrect(it->second));
  } catch (const std::exception& e) {
    return pb::skip(state, pb::Verdict::incorrect(std::string("threw ") + e.what()));
  }
  const bool sampled = is_full(sh) && (sh.kernel == POPPER_FUSED_CE || sh.kernel >= POPPER_FUSED_ATTN_FWD);
  // After timing: fresh inputs, one more call, the same check against the reference.
  const pb::Recheck recheck{[&](std::uint64_t seed) { c->refill(seed); },
                            [&] {
                              const std::string e = c->check();
                              return e.empty() ? pb::Verdict::verified() : pb::Verdict::incorrect(e);
                            }};
  pb::measure(
      state, cs, sampled ? pb::Verdict::verified("sampled") : pb::Verdict::verified(),
      [&] { c->run(pb::skips_work(cs)); }, {.work = popper_fused_flop(&sh), .bytes = popper_fused_bytes(&sh)}, recheck);
}

void register_all() {
  pb::Family("fused")
      .shapes(POPPER_FUSED_SHAPES, POPPER_FUSED_SHAPE_COUNT)
      .tiers({Tier::Wrapped, Tier::Hand})
      .precisions({"f32"})
      .threads({1, 2})
      .add(bench_fused);
}

}  // namespace

int main(int argc, char** argv) {
  _MM_SET_FLUSH_ZERO_MODE(_MM_FLUSH_ZERO_ON);
  _MM_SET_DENORMALS_ZERO_MODE(_MM_DENORMALS_ZERO_ON);
  register_all();
  std::string core = [] {  // the handle sets OpenBLAS's thread count until it goes
    popper::gemm::BlasHandle probe(popper::gemm::BlasOptions{1, ""});
    return probe.core_name();
  }();
  for (auto& ch : core) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return pb::run_suite(
      argc, argv,
      {{Tier::Wrapped, "cpu:" + std::string(popper::cpu::to_string(popper::cpu::auto_isa())) + "+openblas:" + core},
       {Tier::Hand, popper::cpu::backend_tag(popper::cpu::Isa::Auto)}});
}
