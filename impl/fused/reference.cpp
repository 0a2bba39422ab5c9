// FP64 reference of the fused kernels: each step separate, plain loops.
#include "impl/fused/reference.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "impl/fused/driver.hpp"

namespace popper::fused::reference {

using detail::require;
using detail::require_len;

void cross_entropy(const CrossEntropyShape& s, std::span<const float> logits, std::span<const std::int64_t> labels,
                   std::span<double> loss, std::span<double> lse, std::span<double> grad) {
  require(s.rows >= 0 && s.vocab >= 1, "reference::cross_entropy: rows >= 0, vocab >= 1");
  const std::int64_t V = s.vocab;
  require_len("logits", logits.size(), s.rows * V);
  require_len("labels", labels.size(), s.rows);
  require_len("loss", loss.size(), s.rows);
  require_len("lse", lse.size(), s.rows);
  require_len("grad", grad.size(), s.rows * V);
  for (std::int64_t r = 0; r < s.rows; ++r) {
    const float* x = logits.data() + r * V;
    double* g = grad.data() + r * V;
    const std::int64_t y = labels[static_cast<std::size_t>(r)];
    if (y == s.ignore_index) {
      loss[static_cast<std::size_t>(r)] = 0, lse[static_cast<std::size_t>(r)] = 0;
      std::fill(g, g + V, 0.0);
      continue;
    }
    require(y >= 0 && y < V, "reference::cross_entropy: label out of range");
    double m = -std::numeric_limits<double>::infinity();
    for (std::int64_t i = 0; i < V; ++i) m = std::max(m, static_cast<double>(x[i]));
    double sum = 0;  // step 1: softmax normalizer
    for (std::int64_t i = 0; i < V; ++i) sum += std::exp(static_cast<double>(x[i]) - m);
    const double l = m + std::log(sum);
    lse[static_cast<std::size_t>(r)] = l;
    loss[static_cast<std::size_t>(r)] = l - static_cast<double>(x[y]);  // step 2: loss
    for (std::int64_t i = 0; i < V; ++i)                                // step 3: gradient
      g[i] = static_cast<double>(s.grad_scale) * (std::exp(static_cast<double>(x[i]) - l) - (i == y ? 1.0 : 0.0));
  }
}

void rmsnorm_forward(const RmsNormShape& s, std::span<const float> x, std::span<const float> w, std::span<double> y,
                     std::span<double> inv_rms, std::span<double> normed) {
  const std::int64_t H = s.hidden;
  require(s.rows >= 0 && H >= 1, "reference::rmsnorm_forward: rows >= 0, hidden >= 1");
  require_len("x", x.size(), s.rows * H);
  require_len("weight", w.size(), H);
  require_len("y", y.size(), s.rows * H);
  require_len("inv_rms", inv_rms.size(), s.rows);
  require_len("normed", normed.size(), s.rows * H);
  for (std::int64_t r = 0; r < s.rows; ++r) {
    double ss = 0;
    for (std::int64_t i = 0; i < H; ++i) ss += static_cast<double>(x[r * H + i]) * static_cast<double>(x[r * H + i]);
    const double inv = 1.0 / std::sqrt(ss / static_cast<double>(H) + static_cast<double>(s.eps));
    inv_rms[static_cast<std::size_t>(r)] = inv;
    for (std::int64_t i = 0; i < H; ++i) {
      const double n = static_cast<double>(x[r * H + i]) * inv;
      normed[static_cast<std::size_t>(r * H + i)] = n;
      y[static_cast<std::size_t>(r * H + i)] = n * static_cast<double>(w[i]);
    }
  }
}

void rmsnorm_backward(const RmsNormShape& s, std::span<const float> x, std::span<const float> w,
                      std::span<const float> dy, std::span<double> d_input, std::span<double> d_weight) {
  const std::int64_t H = s.hidden;
  std::vector<double> y(static_cast<std::size_t>(s.rows * H)), inv(static_cast<std::size_t>(s.rows)),
      n(static_cast<std::size_t>(s.rows * H));
  rmsnorm_forward(s, x, w, y, inv, n);
  require_len("dy", dy.size(), s.rows * H);
  require_len("d_input", d_input.size(), s.rows * H);
  require_len("d_weight", d_weight.size(), H);
  std::fill(d_weight.begin(), d_weight.begin() + H, 0.0);
  for (std::int64_t r = 0; r < s.rows; ++r) {
    double c = 0;
    for (std::int64_t i = 0; i < H; ++i)
      c += static_cast<double>(dy[r * H + i]) * static_cast<double>(w[i]) * n[static_cast<std::size_t>(r * H + i)];
    c /= static_cast<double>(H);
    for (std::int64_t i = 0; i < H; ++i) {
      const std::size_t at = static_cast<std::size_t>(r * H + i);
      const double g = static_cast<double>(dy[at]) * static_cast<double>(w[i]);
      d_input[at] = inv[static_cast<std::size_t>(r)] * (g - n[at] * c);
      d_weight[static_cast<std::size_t>(i)] += static_cast<double>(dy[at]) * n[at];
    }
  }
}

namespace {
double sigmoid(double g) { return 1.0 / (1.0 + std::exp(-g)); }
}  // namespace

void swiglu_forward(std::span<const float> g, std::span<const float> u, std::span<double> h) {
  require(g.size() == u.size() && h.size() >= g.size(), "reference::swiglu_forward: sizes");
  for (std::size_t i = 0; i < g.size(); ++i) {
    const double gv = g[i];
    h[i] = gv * sigmoid(gv) * static_cast<double>(u[i]);
  }
}

void swiglu_backward(std::span<const float> dh, std::span<const float> g, std::span<const float> u,
                     std::span<double> d_gate, std::span<double> d_up) {
  require(g.size() == u.size() && dh.size() == g.size() && d_gate.size() >= g.size() && d_up.size() >= g.size(),
          "reference::swiglu_backward: sizes");
  for (std::size_t i = 0; i < g.size(); ++i) {
    const double gv = g[i], sg = sigmoid(gv), d = dh[i];
    d_up[i] = d * gv * sg;
    d_gate[i] = d * static_cast<double>(u[i]) * sg * (1.0 + gv * (1.0 - sg));
  }
}

void rope(std::int64_t batch, std::int64_t seq, std::int64_t heads, std::int64_t head_dim, std::int64_t pos_offset,
          double base, bool inverse, std::span<const float> x, std::span<double> y) {
  require(head_dim >= 2 && head_dim % 2 == 0, "reference::rope: even head_dim");
  const std::int64_t half = head_dim / 2, n = batch * seq * heads * head_dim;
  require_len("x", x.size(), n);
  require_len("y", y.size(), n);
  for (std::int64_t b = 0; b < batch; ++b)
    for (std::int64_t s = 0; s < seq; ++s)
      for (std::int64_t h = 0; h < heads; ++h)
        for (std::int64_t j = 0; j < half; ++j) {
          const double ang = static_cast<double>(pos_offset + s) *
                             std::pow(base, -2.0 * static_cast<double>(j) / static_cast<double>(head_dim));
          const double c = std::cos(ang), sn = inverse ? -std::sin(ang) : std::sin(ang);
          const std::int64_t at = ((b * seq + s) * heads + h) * head_dim + j;
          const double x1 = x[static_cast<std::size_t>(at)], x2 = x[static_cast<std::size_t>(at + half)];
          y[static_cast<std::size_t>(at)] = x1 * c - x2 * sn;
          y[static_cast<std::size_t>(at + half)] = x2 * c + x1 * sn;
        }
}

namespace {
struct Geo {
  std::int64_t B, Sq, Skv, Hq, Hkv, D, g, off;
  double scale;
  std::int64_t qi(std::int64_t b, std::int64_t i, std::int64_t h) const { return ((b * Sq + i) * Hq + h) * D; }
  std::int64_t ki(std::int64_t b, std::int64_t j, std::int64_t h) const { return ((b * Skv + j) * Hkv + h) * D; }
  bool visible(bool causal, std::int64_t i, std::int64_t j) const { return !causal || j <= i + off; }
};
Geo geo(const AttentionShape& s) {
  require(s.q_heads >= 1 && s.kv_heads >= 1 && s.q_heads % s.kv_heads == 0 && s.head_dim >= 1,
          "reference::attention: heads and head_dim");
  require(!s.causal || s.kv_len >= s.q_len, "reference::attention: causal needs kv_len >= q_len");
  const double scale = s.scale > 0 ? s.scale : 1.0 / std::sqrt(static_cast<double>(s.head_dim));
  return {s.batch, s.q_len, s.kv_len, s.q_heads, s.kv_heads, s.head_dim, s.q_heads / s.kv_heads, s.kv_len - s.q_len,
          scale};
}
// Row i of P for (b, h), FP64; returns lse.
double prob_row(const Geo& G, bool causal, std::span<const float> q, std::span<const float> k, std::int64_t b,
                std::int64_t h, std::int64_t i, std::vector<double>& p) {
  const std::int64_t hk = h / G.g;
  double m = -std::numeric_limits<double>::infinity();
  for (std::int64_t j = 0; j < G.Skv; ++j) {
    if (!G.visible(causal, i, j)) {
      p[static_cast<std::size_t>(j)] = -std::numeric_limits<double>::infinity();
      continue;
    }
    double dot = 0;
    for (std::int64_t c = 0; c < G.D; ++c)
      dot += static_cast<double>(q[static_cast<std::size_t>(G.qi(b, i, h) + c)]) *
             static_cast<double>(k[static_cast<std::size_t>(G.ki(b, j, hk) + c)]);
    p[static_cast<std::size_t>(j)] = dot * G.scale;
    m = std::max(m, p[static_cast<std::size_t>(j)]);
  }
  double sum = 0;
  for (std::int64_t j = 0; j < G.Skv; ++j) sum += std::exp(p[static_cast<std::size_t>(j)] - m);
  for (std::int64_t j = 0; j < G.Skv; ++j)
    p[static_cast<std::size_t>(j)] = std::exp(p[static_cast<std::size_t>(j)] - m) / sum;
  return m + std::log(sum);
}
}  // namespace

void attention_forward(const AttentionShape& s, std::span<const float> q, std::span<const float> k,
                       std::span<const float> v, std::span<double> o, std::span<double> lse, std::span<double> probs) {
  const Geo G = geo(s);
  require_len("o", o.size(), G.B * G.Sq * G.Hq * G.D);
  require_len("lse", lse.size(), G.B * G.Hq * G.Sq);
  if (!probs.empty()) require_len("probs", probs.size(), G.B * G.Hq * G.Sq * G.Skv);
  std::vector<double> p(static_cast<std::size_t>(G.Skv));
  for (std::int64_t b = 0; b < G.B; ++b)
    for (std::int64_t h = 0; h < G.Hq; ++h)
      for (std::int64_t i = 0; i < G.Sq; ++i) {
        lse[static_cast<std::size_t>((b * G.Hq + h) * G.Sq + i)] = prob_row(G, s.causal, q, k, b, h, i, p);
        if (!probs.empty()) std::copy(p.begin(), p.end(), probs.begin() + ((b * G.Hq + h) * G.Sq + i) * G.Skv);
        for (std::int64_t c = 0; c < G.D; ++c) {
          double acc = 0;
          for (std::int64_t j = 0; j < G.Skv; ++j)
            acc += p[static_cast<std::size_t>(j)] *
                   static_cast<double>(v[static_cast<std::size_t>(G.ki(b, j, h / G.g) + c)]);
          o[static_cast<std::size_t>(G.qi(b, i, h) + c)] = acc;
        }
      }
}

void attention_backward(const AttentionShape& s, std::span<const float> q, std::span<const float> k,
                        std::span<const float> v, std::span<const float> d_o, std::span<double> dq,
                        std::span<double> dk, std::span<double> dv) {
  const Geo G = geo(s);
  require_len("dq", dq.size(), G.B * G.Sq * G.Hq * G.D);
  require_len("dk", dk.size(), G.B * G.Skv * G.Hkv * G.D);
  require_len("dv", dv.size(), G.B * G.Skv * G.Hkv * G.D);
  std::fill(dq.begin(), dq.end(), 0.0);
  std::fill(dk.begin(), dk.end(), 0.0);
  std::fill(dv.begin(), dv.end(), 0.0);
  std::vector<double> p(static_cast<std::size_t>(G.Skv)), dp(static_cast<std::size_t>(G.Skv));
  for (std::int64_t b = 0; b < G.B; ++b)
    for (std::int64_t h = 0; h < G.Hq; ++h) {
      const std::int64_t hk = h / G.g;
      for (std::int64_t i = 0; i < G.Sq; ++i) {
        prob_row(G, s.causal, q, k, b, h, i, p);
        double delta = 0;  // D_i = sum_j P_ij dP_ij (= dO_i . O_i exactly)
        for (std::int64_t j = 0; j < G.Skv; ++j) {
          double acc = 0;
          for (std::int64_t c = 0; c < G.D; ++c)
            acc += static_cast<double>(d_o[static_cast<std::size_t>(G.qi(b, i, h) + c)]) *
                   static_cast<double>(v[static_cast<std::size_t>(G.ki(b, j, hk) + c)]);
          dp[static_cast<std::size_t>(j)] = acc;
          delta += p[static_cast<std::size_t>(j)] * acc;
        }
        for (std::int64_t j = 0; j < G.Skv; ++j) {
          const double pj = p[static_cast<std::size_t>(j)];
          if (pj == 0) continue;
          const double ds = pj * (dp[static_cast<std::size_t>(j)] - delta);
          for (std::int64_t c = 0; c < G.D; ++c) {
            const std::size_t qa = static_cast<std::size_t>(G.qi(b, i, h) + c),
                              ka = static_cast<std::size_t>(G.ki(b, j, hk) + c);
            dq[qa] += G.scale * ds * static_cast<double>(k[ka]);
            dk[ka] += G.scale * ds * static_cast<double>(q[qa]);
            dv[ka] += pj * static_cast<double>(d_o[qa]);
          }
        }
      }
    }
}

}  // namespace popper::fused::reference
