// The two plain operation sets of the decode forward (forward.hpp):
//   reference_ops  FP64 everywhere, weights dequantized exactly; the oracle
//   ordered_ops    FP32, every reduction through accum:: in one order
// Both follow model.hpp's formula line by line; scores are q.k / sqrt(D), the
// softmax subtracts the row maximum, RoPE pairs (x_j, x_{j + D/2}) at angle
// pos * base^(-2j/D).
#include <cmath>
#include <vector>

#include "impl/common/parallel.hpp"
#include "impl/decode/forward.hpp"
#include "impl/fused/fused.hpp"
#include "popper/mutant.hpp"
#include "impl/q4k/reference.hpp"

namespace popper::decode {

namespace {

using accum::Order;

class ReferenceOps final : public Ops<double> {
 public:
  ReferenceOps(const Config& c, int threads) : c_(c), threads_(threads) {}

  void gemv(const Weight& w, std::span<const double> x, std::span<double> y) override {
    const auto per_row = static_cast<std::size_t>(w.cols / q4k::kBlockWeights);
    parallel::run(static_cast<std::size_t>(w.rows), threads_, [&](std::size_t begin, std::size_t end, int) {
      std::vector<float> row(static_cast<std::size_t>(w.cols));
      for (std::size_t r = begin; r < end; ++r) {
        q4k::reference::dequantize_row(w.blocks.subspan(r * per_row, per_row), row);
        double s = 0;
        for (std::size_t i = 0; i < row.size(); ++i) s += static_cast<double>(row[i]) * x[i];
        y[r] = s;
      }
    });
  }
  void rmsnorm(std::span<const double> x, std::span<const float> w, std::span<double> y) override {
    double ss = 0;
    for (double v : x) ss += v * v;
    const double inv = 1 / std::sqrt(ss / static_cast<double>(x.size()) + c_.rms_eps);
    for (std::size_t i = 0; i < x.size(); ++i) y[i] = x[i] * inv * static_cast<double>(w[i]);
  }
  void rope(std::span<double> q, std::span<double> k, std::int64_t pos) override {
    const auto half = static_cast<std::size_t>(c_.head_dim / 2);
    std::vector<double> cs(half), sn(half);  // the angles of this position, once for every head
    for (std::size_t j = 0; j < half; ++j) {
      const double ang = static_cast<double>(pos) *
                         std::pow(c_.rope_base, -2.0 * static_cast<double>(j) / static_cast<double>(c_.head_dim));
      cs[j] = std::cos(ang), sn[j] = std::sin(ang);
    }
    for (auto v : {q, k})
      for (std::size_t at = 0; at < v.size(); at += 2 * half)
        for (std::size_t j = 0; j < half; ++j) {
          const double x1 = v[at + j], x2 = v[at + j + half];
          v[at + j] = x1 * cs[j] - x2 * sn[j];
          v[at + j + half] = x2 * cs[j] + x1 * sn[j];
        }
  }
  void attention(std::span<const double> q, std::span<const double> kc, std::span<const double> vc, std::int64_t len,
                 std::span<double> out) override {
    const auto D = static_cast<std::size_t>(c_.head_dim), KV = static_cast<std::size_t>(c_.kv_width()),
               group = static_cast<std::size_t>(c_.q_heads / c_.kv_heads), n = static_cast<std::size_t>(len);
    std::vector<double> p(n);
    for (std::size_t h = 0; h < static_cast<std::size_t>(c_.q_heads); ++h) {
      const std::size_t g = h / group;
      double mx = -INFINITY;
      for (std::size_t j = 0; j < n; ++j) {
        double s = 0;
        for (std::size_t d = 0; d < D; ++d) s += q[h * D + d] * kc[j * KV + g * D + d];
        p[j] = s / std::sqrt(static_cast<double>(D));
        mx = std::max(mx, p[j]);
      }
      double sum = 0;
      for (auto& e : p) sum += (e = std::exp(e - mx));
      for (std::size_t d = 0; d < D; ++d) {
        double o = 0;
        for (std::size_t j = 0; j < n; ++j) o += p[j] * vc[j * KV + g * D + d];
        out[h * D + d] = o / sum;
      }
    }
  }
  void swiglu(std::span<const double> g, std::span<const double> u, std::span<double> h) override {
    for (std::size_t i = 0; i < h.size(); ++i) h[i] = g[i] / (1 + std::exp(-g[i])) * u[i];
  }

 private:
  Config c_;
  int threads_;
};

class OrderedOps final : public Ops<float> {
 public:
  OrderedOps(const Config& c, Order order, int threads)
      : c_(c), order_(order), threads_(threads), table_(fused::make_rope_table(c.context, c.head_dim, c.rope_base)) {}

  void gemv(const Weight& w, std::span<const float> x, std::span<float> y) override {
    accum::gemv_q4k(w.blocks, w.rows, w.cols, x, y, order_, threads_);
  }
  void rmsnorm(std::span<const float> x, std::span<const float> w, std::span<float> y) override {
    const float mean = accum::dot(x, x, order_) / static_cast<float>(x.size());
    const float inv = 1.0f / std::sqrt(mean + static_cast<float>(c_.rms_eps));
    for (std::size_t i = 0; i < x.size(); ++i) y[i] = x[i] * inv * w[i];
  }
  void rope(std::span<float> q, std::span<float> k, std::int64_t pos) override {
    const auto half = static_cast<std::size_t>(c_.head_dim / 2);
    const float* cs = table_.cos.data() + static_cast<std::size_t>(pos) * half;
    const float* sn = table_.sin.data() + static_cast<std::size_t>(pos) * half;
    // Mutation point (decode-rope-skip-k): k left unrotated.
    const bool skip_k = POPPER_MUTANT("decode-rope-skip-k");
    for (auto v : {q, k}) {
      if (skip_k && v.data() == k.data()) continue;
      for (std::size_t at = 0; at < v.size(); at += 2 * half)
        for (std::size_t j = 0; j < half; ++j) {
          const float x1 = v[at + j], x2 = v[at + j + half];
          v[at + j] = x1 * cs[j] - x2 * sn[j];
          v[at + j + half] = x2 * cs[j] + x1 * sn[j];
        }
    }
  }
  void attention(std::span<const float> q, std::span<const float> kc, std::span<const float> vc, std::int64_t len,
                 std::span<float> out) override {
    const auto D = static_cast<std::size_t>(c_.head_dim), KV = static_cast<std::size_t>(c_.kv_width()),
               group = static_cast<std::size_t>(c_.q_heads / c_.kv_heads), n = static_cast<std::size_t>(len);
    // Mutation points: the score scale omitted (decode-attention-no-scale); query
    // head h mapped to KV head h mod Hkv (decode-gqa-wrong-group).
    const float scale = POPPER_MUTANT("decode-attention-no-scale") ? 1.0f : 1.0f / std::sqrt(static_cast<float>(D));
    const bool wrong_group = POPPER_MUTANT("decode-gqa-wrong-group");
    std::vector<float> p(n), column(n);
    for (std::size_t h = 0; h < static_cast<std::size_t>(c_.q_heads); ++h) {
      const std::size_t g = wrong_group ? h % static_cast<std::size_t>(c_.kv_heads) : h / group;
      float mx = -INFINITY;
      for (std::size_t j = 0; j < n; ++j) {
        p[j] = accum::dot(q.subspan(h * D, D), kc.subspan(j * KV + g * D, D), order_) * scale;
        mx = std::max(mx, p[j]);
      }
      for (auto& e : p) e = std::exp(e - mx);
      const float sum = accum::sum(p, order_);
      for (std::size_t d = 0; d < D; ++d) {
        for (std::size_t j = 0; j < n; ++j) column[j] = vc[j * KV + g * D + d];
        out[h * D + d] = accum::dot(p, column, order_) / sum;
      }
    }
  }
  void swiglu(std::span<const float> g, std::span<const float> u, std::span<float> h) override {
    for (std::size_t i = 0; i < h.size(); ++i) h[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
  }

 private:
  Config c_;
  Order order_;
  int threads_;
  fused::RopeTable table_;
};

}  // namespace

std::unique_ptr<Ops<double>> reference_ops(const Config& c, int threads) {
  return std::make_unique<ReferenceOps>(c, threads);
}
std::unique_ptr<Ops<float>> ordered_ops(const Config& c, Order order, int threads) {
  return std::make_unique<OrderedOps>(c, order, threads);
}

}  // namespace popper::decode
