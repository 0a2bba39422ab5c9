// Shared by the fused falsifiers and bench/fused: seeded inputs, the counting
// allocator of the memory claims, and the derived tolerances of
// contracts/fused/fused-kernels-v1.yaml (each function cites the invariant it evaluates).
// u = 2^-24, gamma(n) = n u / (1 - n u), e2 = 3u (the kernels' exp2 bound).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "impl/fused/fused.hpp"
#include "impl/fused/reference.hpp"

namespace popper::fused::testbed {

inline constexpr double kU = 5.9604644775390625e-08;  // 2^-24
inline constexpr double kE2 = 3 * kU;
inline constexpr double kLog2e = 1.4426950408889634;
inline double gamma(double n) { return n * kU / (1 - n * kU); }

// ---- inputs
// Uniform in [lo, hi) from splitmix64 (fast enough for the full shapes of FALSIFY-FUSED-006).
inline std::vector<float> uniform(std::size_t n, double lo, double hi, std::uint64_t seed) {
  std::vector<float> v(n);
  std::uint64_t z = seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
  for (auto& x : v) {
    z += 0x9E3779B97F4A7C15ull;
    std::uint64_t r = z;
    r = (r ^ (r >> 30)) * 0xBF58476D1CE4E5B9ull;
    r = (r ^ (r >> 27)) * 0x94D049BB133111EBull;
    r ^= r >> 31;
    x = static_cast<float>(lo + (hi - lo) * static_cast<double>(r >> 11) * 0x1.0p-53);
  }
  return v;
}
inline std::vector<std::int64_t> labels(std::int64_t rows, std::int64_t vocab, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::int64_t> d(0, vocab - 1);
  std::vector<std::int64_t> y(static_cast<std::size_t>(rows));
  for (auto& v : y) v = d(rng);
  return y;
}

// ---- counting allocator (contract ce_memory, rmsnorm_memory, attention_memory)
class CountingAllocator final : public Allocator {
 public:
  void* allocate(std::size_t bytes) override {
    requested += bytes;
    current += bytes;
    ++allocations;
    peak = std::max(peak, current);
    return heap_allocator().allocate(bytes);
  }
  void deallocate(void* p, std::size_t bytes) noexcept override {
    current -= bytes;
    heap_allocator().deallocate(p, bytes);
  }
  void reset_peak() { peak = current; }
  std::size_t requested = 0, current = 0, peak = 0, allocations = 0;
};

// A reusing allocator for the bench: frees go to a size-keyed list, so a
// separate path that allocates per call does not pay page faults a framework's
// caching allocator would not pay either.
class CachingAllocator final : public Allocator {
 public:
  ~CachingAllocator() override {
    for (auto& b : free_) heap_allocator().deallocate(b.p, b.bytes);
  }
  void* allocate(std::size_t bytes) override {
    for (auto it = free_.begin(); it != free_.end(); ++it)
      if (it->bytes == bytes) {
        void* p = it->p;
        free_.erase(it);
        return p;
      }
    return heap_allocator().allocate(bytes);
  }
  void deallocate(void* p, std::size_t bytes) noexcept override { free_.push_back({p, bytes}); }

 private:
  struct Block {
    void* p;
    std::size_t bytes;
  };
  std::vector<Block> free_;
};

// ---- cross-entropy (fused_ce_correctness)
struct CeBound {
  double theta;      // relative error of s
  double loss, lse;  // absolute bounds
  double grad_rel;   // grad_i bound = scale p_i grad_rel + u |grad_ref_i|
};
inline double ce_depth(std::int64_t vocab, std::int64_t chunk) {
  const double n = static_cast<double>(std::min(vocab, chunk));
  return 32.0 + std::ceil(n / 2048.0) + 6.0;
}
inline CeBound ce_bound(const float* row, std::int64_t vocab, std::int64_t chunk, double loss_ref, double lse_ref) {
  double X = 0;
  for (std::int64_t i = 0; i < vocab; ++i) X = std::max(X, std::fabs(static_cast<double>(row[i])));
  const double gd = gamma(ce_depth(vocab, chunk));
  // The exponent (x - m_c) L2E is off by <= 3u d for a term e^-d, and the
  // terms' softmax-weighted mean of d is <= ln n_c (the entropy bound).
  const double nc = static_cast<double>(std::min(vocab, chunk));
  const double theta = gd + kE2 + 4 * kU * (1 + std::log(nc));
  CeBound b;
  b.theta = theta;
  b.loss = theta / (1 - theta) + kU * std::fabs(loss_ref);
  b.lse = theta / (1 - theta) + kU * std::fabs(lse_ref);
  b.grad_rel = (2 * kE2 + 10 * kU * X + gd + 2 * kU) * (1 + theta);
  return b;
}

// ---- RMSNorm (rmsnorm_forward, rmsnorm_backward): conservative, any summation order.
struct RmsBound {
  double e_inv, e_n;  // relative errors of inv_rms and normed
};
inline RmsBound rms_bound(std::int64_t hidden) {
  const double e_inv = gamma(static_cast<double>(hidden)) / 2 + 2 * kU;
  return {e_inv, e_inv + kU};
}

// ---- SwiGLU (swiglu)
struct SwigluBound {
  double h, d_gate, d_up;
};
inline SwigluBound swiglu_bound(double g, double u, double dh, double f) {
  const double s = 1 / (1 + std::exp(-g));
  const double ds_rel = (1 - s) * (kE2 + 2 * kU * std::fabs(g)) + 2 * kU;
  const double ds = s * ds_rel;
  const double A = 1 + g * (1 - s);
  const double dA = std::fabs(g) * (ds + kU * std::fabs(1 - s)) + kU * std::fabs(g * (1 - s)) + kU * std::fabs(A);
  const double dgate = dh * u * s * A, dup = dh * g * s;
  SwigluBound b;
  b.d_up = f * (std::fabs(dh * g) * ds + 3 * kU * std::fabs(dup));
  b.d_gate = f * (std::fabs(dh * u) * (ds * std::fabs(A) + s * dA) + 4 * kU * std::fabs(dgate));
  b.h = f * (std::fabs(g * u) * ds + 3 * kU * std::fabs(g * s * u));
  return b;
}

// ---- attention (attention_forward, attention_backward)
struct AttnGeo {
  std::int64_t B, Sq, Skv, Hq, Hkv, D, g, off;
  double scale;
  bool causal;
  explicit AttnGeo(const AttentionShape& s)
      : B(s.batch),
        Sq(s.q_len),
        Skv(s.kv_len),
        Hq(s.q_heads),
        Hkv(s.kv_heads),
        D(s.head_dim),
        g(s.q_heads / s.kv_heads),
        off(s.kv_len - s.q_len),
        scale(s.scale > 0 ? s.scale : 1 / std::sqrt(static_cast<double>(s.head_dim))),
        causal(s.causal) {}
  std::size_t qi(std::int64_t b, std::int64_t i, std::int64_t h) const {
    return static_cast<std::size_t>(((b * Sq + i) * Hq + h) * D);
  }
  std::size_t ki(std::int64_t b, std::int64_t j, std::int64_t h) const {
    return static_cast<std::size_t>(((b * Skv + j) * Hkv + h) * D);
  }
  bool visible(std::int64_t i, std::int64_t j) const { return !causal || j <= i + off; }
};

// Per query row (b, h, i): rho of the contract, and the forward bounds of O and lse.
struct AttnFwdBound {
  std::vector<double> rho;  // [B, Hq, Sq]
  std::vector<double> o;    // [B, Sq, Hq, D]
  std::vector<double> lse;  // [B, Hq, Sq]
};
inline AttnFwdBound attention_forward_bound(const AttentionShape& s, std::span<const float> q, std::span<const float> k,
                                            std::span<const float> v, std::span<const double> o_ref,
                                            std::span<const double> lse_ref, std::span<const double> probs, double f) {
  const AttnGeo G(s);
  AttnFwdBound out;
  out.rho.assign(static_cast<std::size_t>(G.B * G.Hq * G.Sq), 0);
  out.o.assign(static_cast<std::size_t>(G.B * G.Sq * G.Hq * G.D), 0);
  out.lse.assign(out.rho.size(), 0);
  const double nb = std::ceil(static_cast<double>(G.Skv) / 64.0);
  for (std::int64_t b = 0; b < G.B; ++b)
    for (std::int64_t h = 0; h < G.Hq; ++h)
      for (std::int64_t i = 0; i < G.Sq; ++i) {
        const std::int64_t hk = h / G.g;
        const std::size_t row = static_cast<std::size_t>((b * G.Hq + h) * G.Sq + i);
        double eps_s = 0, spread = 0;
        for (std::int64_t j = 0; j < G.Skv; ++j) {
          if (!G.visible(i, j)) continue;
          double absdot = 0, dot = 0;
          for (std::int64_t c = 0; c < G.D; ++c) {
            const double a = q[G.qi(b, i, h) + static_cast<std::size_t>(c)],
                         bb = k[G.ki(b, j, hk) + static_cast<std::size_t>(c)];
            absdot += std::fabs(a * bb);
            dot += a * bb;
          }
          eps_s = std::max(eps_s, G.scale * gamma(static_cast<double>(G.D + 2)) * absdot);
          spread = std::max(spread, std::fabs(G.scale * dot - lse_ref[row]));
        }
        const double rho =
            2 * eps_s + (nb + 2) * (kE2 + 2 * kU) + kU * kLog2e * spread + gamma(static_cast<double>(G.Skv));
        out.rho[row] = rho;
        out.lse[row] = f * rho + kU * std::fabs(lse_ref[row]);
        for (std::int64_t c = 0; c < G.D; ++c) {
          double pv = 0;
          for (std::int64_t j = 0; j < G.Skv; ++j)
            pv += probs[row * static_cast<std::size_t>(G.Skv) + static_cast<std::size_t>(j)] *
                  std::fabs(static_cast<double>(v[G.ki(b, j, hk) + static_cast<std::size_t>(c)]));
          const std::size_t at = G.qi(b, i, h) + static_cast<std::size_t>(c);
          out.o[at] = f * rho * pv + kU * std::fabs(o_ref[at]);
        }
      }
  return out;
}

// Componentwise bounds of dQ, dK, dV (attention_backward), from the reference
// quantities: P (relative error 2 rho), dP (gamma_D), D_i (gamma_D and O's bound).
struct AttnBwdBound {
  std::vector<double> dq, dk, dv;
};
inline AttnBwdBound attention_backward_bound(const AttentionShape& s, std::span<const float> q,
                                             std::span<const float> k, std::span<const float> v,
                                             std::span<const float> d_o, std::span<const double> o_ref,
                                             std::span<const double> probs, const AttnFwdBound& fb, double f) {
  const AttnGeo G(s);
  AttnBwdBound out;
  out.dq.assign(static_cast<std::size_t>(G.B * G.Sq * G.Hq * G.D), 0);
  out.dk.assign(static_cast<std::size_t>(G.B * G.Skv * G.Hkv * G.D), 0);
  out.dv.assign(out.dk.size(), 0);
  std::vector<double> dsabs(static_cast<std::size_t>(G.Skv)), dserr(dsabs.size());
  const double gsum_q = gamma(static_cast<double>(G.g * G.Sq) + 2), gsum_k = gamma(static_cast<double>(G.Skv) + 2);
  for (std::int64_t b = 0; b < G.B; ++b)
    for (std::int64_t h = 0; h < G.Hq; ++h) {
      const std::int64_t hk = h / G.g;
      for (std::int64_t i = 0; i < G.Sq; ++i) {
        const std::size_t row = static_cast<std::size_t>((b * G.Hq + h) * G.Sq + i);
        const double rho_p = 2 * fb.rho[row];
        double Di = 0, dDi = 0;
        for (std::int64_t c = 0; c < G.D; ++c) {
          const std::size_t at = G.qi(b, i, h) + static_cast<std::size_t>(c);
          Di += static_cast<double>(d_o[at]) * o_ref[at];
          dDi += gamma(static_cast<double>(G.D)) * std::fabs(d_o[at] * o_ref[at]) + std::fabs(d_o[at]) * fb.o[at];
        }
        for (std::int64_t j = 0; j < G.Skv; ++j) {
          const double p = probs[row * static_cast<std::size_t>(G.Skv) + static_cast<std::size_t>(j)];
          double dp = 0, dpabs = 0;
          for (std::int64_t c = 0; c < G.D; ++c) {
            const double a = d_o[G.qi(b, i, h) + static_cast<std::size_t>(c)],
                         vv = v[G.ki(b, j, hk) + static_cast<std::size_t>(c)];
            dp += a * vv;
            dpabs += std::fabs(a * vv);
          }
          const double ds = p * (dp - Di);
          dsabs[static_cast<std::size_t>(j)] = std::fabs(ds);
          dserr[static_cast<std::size_t>(j)] = p * rho_p * std::fabs(dp - Di) +
                                               p * (gamma(static_cast<double>(G.D)) * dpabs + dDi) +
                                               2 * kU * std::fabs(ds);
          for (std::int64_t c = 0; c < G.D; ++c) {
            const std::size_t ka = G.ki(b, j, hk) + static_cast<std::size_t>(c),
                              qa = G.qi(b, i, h) + static_cast<std::size_t>(c);
            out.dv[ka] += f * (p * rho_p * std::fabs(d_o[qa]) + gsum_q * p * std::fabs(d_o[qa]));
            out.dk[ka] += f * G.scale *
                          (dserr[static_cast<std::size_t>(j)] + gsum_q * dsabs[static_cast<std::size_t>(j)]) *
                          std::fabs(q[qa]);
            out.dq[qa] += f * G.scale *
                          (dserr[static_cast<std::size_t>(j)] + gsum_k * dsabs[static_cast<std::size_t>(j)]) *
                          std::fabs(k[ka]);
          }
        }
      }
    }
  for (auto* vec : {&out.dq, &out.dk, &out.dv})
    for (auto& x : *vec) x += 1e-30;  // exact zeros compare equal
  return out;
}

// ---- comparison helpers
struct Worst {
  double err = 0, bound = 0, ratio = 0;
  std::size_t at = 0;
  bool ok = true;
  void see(double e, double b, std::size_t i) {
    if (!(e <= b)) ok = false;  // NaN fails too
    const double r = b > 0 ? e / b : (e > 0 ? 1e300 : 0.0);
    if (!(r <= ratio)) ratio = r, err = e, bound = b, at = i;
  }
  std::string text() const {
    return "max err " + std::to_string(err) + " vs bound " + std::to_string(bound) + " (ratio " +
           std::to_string(ratio) + ") at index " + std::to_string(at);
  }
};

inline double max_abs(std::span<const float> a) {
  double m = 0;
  for (float x : a) m = std::max(m, static_cast<double>(std::fabs(x)));
  return m;
}

}  // namespace popper::fused::testbed
