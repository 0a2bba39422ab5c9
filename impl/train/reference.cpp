// The FP64 oracle of the training step (reference.hpp): the forward, the
// hand-derived backward and AdamW in plain loops. Every operation ends in
// noise.add(y, bound, magnitude): nothing when Perturbation::scale = 0, the
// Monte Carlo perturbation of the contract's bound otherwise.
#include "impl/train/reference.hpp"

#include <algorithm>
#include <cmath>

#include "popper/error.hpp"

namespace popper::train::reference {

namespace {

constexpr double kU = 0x1p-24;
double gam(double k) { return k * kU / (1 - k * kU); }
using Vec = std::vector<double>;

struct Noise {
  double scale;
  std::uint64_t z;
  double sign() {  // uniform in [-1, 1] (splitmix64)
    std::uint64_t r = (z += 0x9E3779B97F4A7C15ull);
    r = (r ^ (r >> 30)) * 0xBF58476D1CE4E5B9ull;
    r = (r ^ (r >> 27)) * 0x94D049BB133111EBull;
    r ^= r >> 31;
    return static_cast<double>(r >> 11) * 0x1.0p-52 - 1.0;
  }
  // y_i += r_i * rel * mag_i (mag_i = |y_i| when no magnitude is given).
  void add(double* y, std::size_t n, double rel, const double* mag = nullptr) {
    if (scale == 0) return;
    for (std::size_t i = 0; i < n; ++i) y[i] += sign() * scale * rel * (mag ? mag[i] : std::fabs(y[i]));
  }
  void add(Vec& y, double rel, const Vec* mag = nullptr) { add(y.data(), y.size(), rel, mag ? mag->data() : nullptr); }
};

struct Net {
  const Config& c;
  const ParamLayout& L;
  const float* P;
  Noise& noise;
  std::int64_t T, H, Q, K, I, V, D;

  // Y[T, n] = X[T, k] W^T + b (W [n, k] at offset w, b optional), perturbed by gamma(k+1) |X||W|^T.
  Vec linear(const Vec& X, std::size_t w, const std::size_t* b, std::int64_t k, std::int64_t n) {
    Vec Y(static_cast<std::size_t>(T * n)), M(Y.size());
    for (std::int64_t t = 0; t < T; ++t)
      for (std::int64_t o = 0; o < n; ++o) {
        double s = b ? P[*b + static_cast<std::size_t>(o)] : 0.0, m = std::fabs(s);
        for (std::int64_t i = 0; i < k; ++i) {
          const double x = X[static_cast<std::size_t>(t * k + i)], wv = P[w + static_cast<std::size_t>(o * k + i)];
          s += x * wv, m += std::fabs(x * wv);
        }
        Y[static_cast<std::size_t>(t * n + o)] = s, M[static_cast<std::size_t>(t * n + o)] = m;
      }
    noise.add(Y, gam(static_cast<double>(k + 1)), &M);
    return Y;
  }
  // dX[T, k] += dY[T, n] W (W [n, k]); the sum of its contributions perturbed by gamma(n).
  void linear_dx(const Vec& dY, std::size_t w, std::int64_t k, std::int64_t n, Vec& dX) {
    Vec R(static_cast<std::size_t>(T * k)), M(R.size());
    for (std::int64_t t = 0; t < T; ++t)
      for (std::int64_t i = 0; i < k; ++i) {
        double s = 0, m = 0;
        for (std::int64_t o = 0; o < n; ++o) {
          const double p = dY[static_cast<std::size_t>(t * n + o)] * P[w + static_cast<std::size_t>(o * k + i)];
          s += p, m += std::fabs(p);
        }
        R[static_cast<std::size_t>(t * k + i)] = s, M[static_cast<std::size_t>(t * k + i)] = m;
      }
    noise.add(R, gam(static_cast<double>(n)), &M);
    for (std::size_t i = 0; i < R.size(); ++i) dX[i] += R[i];
  }
  // dW[n, k] = dY^T X, perturbed by gamma(T).
  void linear_dw(const Vec& dY, const Vec& X, std::int64_t k, std::int64_t n, double* dW) {
    Vec M(static_cast<std::size_t>(n * k));
    for (std::int64_t o = 0; o < n; ++o)
      for (std::int64_t i = 0; i < k; ++i) {
        double s = 0, m = 0;
        for (std::int64_t t = 0; t < T; ++t) {
          const double p = dY[static_cast<std::size_t>(t * n + o)] * X[static_cast<std::size_t>(t * k + i)];
          s += p, m += std::fabs(p);
        }
        dW[o * k + i] = s, M[static_cast<std::size_t>(o * k + i)] = m;
      }
    noise.add(dW, M.size(), gam(static_cast<double>(T)), M.data());
  }
  // db[n] = sum_t dY[t, :], perturbed by gamma(T).
  void bias_grad(const Vec& dY, std::int64_t n, double* db) {
    Vec M(static_cast<std::size_t>(n));
    for (std::int64_t o = 0; o < n; ++o) {
      double s = 0, m = 0;
      for (std::int64_t t = 0; t < T; ++t)
        s += dY[static_cast<std::size_t>(t * n + o)], m += std::fabs(dY[static_cast<std::size_t>(t * n + o)]);
      db[o] = s, M[static_cast<std::size_t>(o)] = m;
    }
    noise.add(db, M.size(), gam(static_cast<double>(T)), M.data());
  }

  // y = x r w, r = 1 / sqrt(mean(x^2) + eps) per row; returns r.
  Vec rmsnorm(const Vec& x, std::size_t w, Vec& y) {
    Vec r(static_cast<std::size_t>(T));
    y.assign(x.size(), 0.0);
    for (std::int64_t t = 0; t < T; ++t) {
      double ss = 0;
      for (std::int64_t i = 0; i < H; ++i)
        ss += x[static_cast<std::size_t>(t * H + i)] * x[static_cast<std::size_t>(t * H + i)];
      r[static_cast<std::size_t>(t)] = 1 / std::sqrt(ss / static_cast<double>(H) + static_cast<double>(c.rms_eps));
      for (std::int64_t i = 0; i < H; ++i)
        y[static_cast<std::size_t>(t * H + i)] = x[static_cast<std::size_t>(t * H + i)] *
                                                 r[static_cast<std::size_t>(t)] * P[w + static_cast<std::size_t>(i)];
    }
    noise.add(y, gam(static_cast<double>(H + 4)));
    return r;
  }
  // dx = r w dy - r^3 x (sum_j w_j dy_j x_j) / H;  dw = sum_t dy x r.
  void rmsnorm_backward(const Vec& x, const Vec& r, std::size_t w, const Vec& dy, Vec& dx, double* dw) {
    dx.assign(x.size(), 0.0);
    Vec M(x.size()), Mw(static_cast<std::size_t>(H));
    for (std::int64_t i = 0; i < H; ++i) dw[i] = 0;
    for (std::int64_t t = 0; t < T; ++t) {
      const double rt = r[static_cast<std::size_t>(t)];
      double dot = 0, adot = 0;
      for (std::int64_t j = 0; j < H; ++j) {
        const double p = P[w + static_cast<std::size_t>(j)] * dy[static_cast<std::size_t>(t * H + j)] *
                         x[static_cast<std::size_t>(t * H + j)];
        dot += p, adot += std::fabs(p);
      }
      for (std::int64_t i = 0; i < H; ++i) {
        const std::size_t at = static_cast<std::size_t>(t * H + i);
        const double a = rt * P[w + static_cast<std::size_t>(i)] * dy[at],
                     b = rt * rt * rt * x[at] * dot / static_cast<double>(H);
        dx[at] = a - b;
        M[at] = std::fabs(a) + rt * rt * rt * std::fabs(x[at]) * adot / static_cast<double>(H);
        dw[i] += dy[at] * x[at] * rt;
        Mw[static_cast<std::size_t>(i)] += std::fabs(dy[at] * x[at] * rt);
      }
    }
    noise.add(dx, gam(static_cast<double>(H + 8)), &M);
    noise.add(dw, Mw.size(), gam(static_cast<double>(T + 4)), Mw.data());
  }

  // Half-split RoPE of x [T, heads, D] in place at the exact angle s base^(-2j/D); inverse rotates back.
  void rope(Vec& x, std::int64_t heads, bool inverse) {
    const std::int64_t half = D / 2;
    Vec M(x.size());
    for (std::int64_t t = 0; t < T; ++t)
      for (std::int64_t h = 0; h < heads; ++h)
        for (std::int64_t j = 0; j < half; ++j) {
          const double ang = static_cast<double>(t % c.seq) *
                             std::pow(c.rope_base, -2.0 * static_cast<double>(j) / static_cast<double>(D));
          const double cs = std::cos(ang), sn = inverse ? -std::sin(ang) : std::sin(ang);
          const std::size_t at = static_cast<std::size_t>((t * heads + h) * D + j),
                            bt = at + static_cast<std::size_t>(half);
          const double x1 = x[at], x2 = x[bt];
          x[at] = x1 * cs - x2 * sn, x[bt] = x2 * cs + x1 * sn;
          M[at] = M[bt] = std::fabs(x1) + std::fabs(x2);
        }
    noise.add(x, 4 * kU, &M);
  }

  // Causal GQA attention per (batch, query head): p = softmax(q k^T / sqrt(D)), o = p v.
  struct AttnSaved {
    Vec p;  // [B, Hq, S, S], zero above the diagonal
  };
  Vec attention(const Vec& q, const Vec& k, const Vec& v, AttnSaved& sv) {
    const std::int64_t S = c.seq, B = c.batch, Hq = c.q_heads, Hkv = c.kv_heads, g = Hq / Hkv;
    const double scale = 1 / std::sqrt(static_cast<double>(D));
    Vec o(static_cast<std::size_t>(T * Q)), M(o.size());
    sv.p.assign(static_cast<std::size_t>(B * Hq * S * S), 0.0);
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t h = 0; h < Hq; ++h) {
        const std::int64_t hk = h / g;
        for (std::int64_t i = 0; i < S; ++i) {
          double* p = sv.p.data() + ((b * Hq + h) * S + i) * S;
          const double* qi = q.data() + ((b * S + i) * Hq + h) * D;
          double mx = -INFINITY;
          for (std::int64_t j = 0; j <= i; ++j) {
            const double* kj = k.data() + ((b * S + j) * Hkv + hk) * D;
            double s = 0;
            for (std::int64_t d = 0; d < D; ++d) s += qi[d] * kj[d];
            p[j] = s * scale, mx = std::max(mx, p[j]);
          }
          double sum = 0;
          for (std::int64_t j = 0; j <= i; ++j) sum += (p[j] = std::exp(p[j] - mx));
          for (std::int64_t j = 0; j <= i; ++j) p[j] /= sum;
          for (std::int64_t d = 0; d < D; ++d) {
            double s = 0, m = 0;
            for (std::int64_t j = 0; j <= i; ++j) {
              const double vv = v[static_cast<std::size_t>(((b * S + j) * Hkv + hk) * D + d)];
              s += p[j] * vv, m += p[j] * std::fabs(vv);
            }
            o[static_cast<std::size_t>(((b * S + i) * Hq + h) * D + d)] = s;
            M[static_cast<std::size_t>(((b * S + i) * Hq + h) * D + d)] = m;
          }
        }
      }
    noise.add(o, gam(static_cast<double>(S + D + 8)), &M);
    return o;
  }
  // dv_j = sum_i p_ij do_i;  ds_ij = p_ij (do_i.v_j - sum_j' p_ij' do_i.v_j');  dq = ds k / sqrt(D);  dk = ds^T q /
  // sqrt(D).
  void attention_backward(const Vec& q, const Vec& k, const Vec& v, const AttnSaved& sv, const Vec& d_o, Vec& dq,
                          Vec& dk, Vec& dv) {
    const std::int64_t S = c.seq, B = c.batch, Hq = c.q_heads, Hkv = c.kv_heads, g = Hq / Hkv;
    const double scale = 1 / std::sqrt(static_cast<double>(D));
    dq.assign(q.size(), 0.0), dk.assign(k.size(), 0.0), dv.assign(v.size(), 0.0);
    Vec Mq(q.size()), Mk(k.size()), Mv(v.size()), dp(static_cast<std::size_t>(S)), mdp(static_cast<std::size_t>(S));
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t h = 0; h < Hq; ++h) {
        const std::int64_t hk = h / g;
        for (std::int64_t i = 0; i < S; ++i) {
          const double* p = sv.p.data() + ((b * Hq + h) * S + i) * S;
          const std::size_t qi = static_cast<std::size_t>(((b * S + i) * Hq + h) * D);
          double Di = 0, mDi = 0;
          for (std::int64_t j = 0; j <= i; ++j) {
            const std::size_t kj = static_cast<std::size_t>(((b * S + j) * Hkv + hk) * D);
            double s = 0, m = 0;
            for (std::int64_t d = 0; d < D; ++d)
              s += d_o[qi + static_cast<std::size_t>(d)] * v[kj + static_cast<std::size_t>(d)],
                  m += std::fabs(d_o[qi + static_cast<std::size_t>(d)] * v[kj + static_cast<std::size_t>(d)]);
            dp[static_cast<std::size_t>(j)] = s, mdp[static_cast<std::size_t>(j)] = m;
            Di += p[j] * s, mDi += p[j] * m;
          }
          for (std::int64_t j = 0; j <= i; ++j) {
            const std::size_t kj = static_cast<std::size_t>(((b * S + j) * Hkv + hk) * D);
            const double ds = p[j] * (dp[static_cast<std::size_t>(j)] - Di),
                         mds = p[j] * (mdp[static_cast<std::size_t>(j)] + mDi);
            for (std::int64_t d = 0; d < D; ++d) {
              const std::size_t qd = qi + static_cast<std::size_t>(d), kd = kj + static_cast<std::size_t>(d);
              dv[kd] += p[j] * d_o[qd], Mv[kd] += p[j] * std::fabs(d_o[qd]);
              dq[qd] += scale * ds * k[kd], Mq[qd] += scale * mds * std::fabs(k[kd]);
              dk[kd] += scale * ds * q[qd], Mk[kd] += scale * mds * std::fabs(q[qd]);
            }
          }
        }
      }
    const double rel = gam(static_cast<double>(S + D + 8));
    noise.add(dq, rel, &Mq), noise.add(dk, rel, &Mk), noise.add(dv, rel, &Mv);
  }
};

std::size_t at(std::int64_t i) { return static_cast<std::size_t>(i); }

}  // namespace

StepResult step(const Config& c, std::span<const float> params, std::span<const std::int64_t> tokens,
                std::span<const std::int64_t> labels, const Perturbation& pert) {
  const ParamLayout L(c);
  check_batch(c, tokens, labels);
  if (params.size() < L.total) throw InvalidArgument("reference::step: params shorter than the layout");
  Noise noise{pert.scale, pert.seed * 0x9E3779B97F4A7C15ull + 7};
  Net net{c,       L,         params.data(), noise, c.tokens(), c.hidden, c.q_width(), c.kv_width(), c.intermediate,
          c.vocab, c.head_dim};
  const std::int64_t T = net.T, H = net.H, Q = net.Q, K = net.K, I = net.I, V = net.V;
  const float* P = params.data();

  struct LayerSaved {
    Vec x, r1, a, q, k, v, o, m, r2, f, g, u, h;
    Net::AttnSaved attn;
  };
  std::vector<LayerSaved> S(static_cast<std::size_t>(c.layers));
  Vec x(static_cast<std::size_t>(T * H));
  for (std::int64_t t = 0; t < T; ++t)
    for (std::int64_t i = 0; i < H; ++i) x[at(t * H + i)] = P[L.embed + at(tokens[at(t)] * H + i)];

  for (std::int64_t l = 0; l < c.layers; ++l) {
    const LayerTensors& w = L.layers[at(l)];
    LayerSaved& s = S[at(l)];
    s.x = x;
    s.r1 = net.rmsnorm(s.x, w.attn_norm, s.a);
    s.q = net.linear(s.a, w.wq, &w.bq, H, Q);
    s.k = net.linear(s.a, w.wk, &w.bk, H, K);
    s.v = net.linear(s.a, w.wv, &w.bv, H, K);
    net.rope(s.q, c.q_heads, false);
    net.rope(s.k, c.kv_heads, false);
    s.o = net.attention(s.q, s.k, s.v, s.attn);
    const Vec proj = net.linear(s.o, w.wo, nullptr, Q, H);
    s.m.resize(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) s.m[i] = s.x[i] + proj[i];
    noise.add(s.m, kU);
    s.r2 = net.rmsnorm(s.m, w.ffn_norm, s.f);
    s.g = net.linear(s.f, w.w_gate, nullptr, H, I);
    s.u = net.linear(s.f, w.w_up, nullptr, H, I);
    s.h.resize(s.g.size());
    for (std::size_t i = 0; i < s.g.size(); ++i) s.h[i] = s.g[i] / (1 + std::exp(-s.g[i])) * s.u[i];
    noise.add(s.h, 8 * kU);
    const Vec down = net.linear(s.h, w.w_down, nullptr, I, H);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = s.m[i] + down[i];
    noise.add(x, kU);
  }
  Vec n;
  const Vec rf = net.rmsnorm(x, L.final_norm, n);
  Vec z = net.linear(n, L.lm_head, nullptr, H, V);

  // Cross-entropy, mean over labelled rows; dz = (softmax(z) - onehot(y)) / count.
  StepResult res;
  res.grads.assign(L.total, 0.0);
  double* G = res.grads.data();
  std::int64_t count = 0;
  for (const auto y : labels) count += y != kIgnore;
  double loss = 0;
  Vec dz(z.size(), 0.0), Mz(z.size(), 0.0);
  for (std::int64_t t = 0; t < T; ++t) {
    const std::int64_t y = labels[at(t)];
    if (y == kIgnore) continue;
    const double* zr = z.data() + t * V;
    double mx = -INFINITY, sum = 0;
    for (std::int64_t i = 0; i < V; ++i) mx = std::max(mx, zr[i]);
    for (std::int64_t i = 0; i < V; ++i) sum += std::exp(zr[i] - mx);
    const double lse = mx + std::log(sum);
    double lr = lse - zr[y];
    noise.add(&lr, 1, gam(static_cast<double>(V + 8)), nullptr);
    loss += lr;
    for (std::int64_t i = 0; i < V; ++i) {
      const double p = std::exp(zr[i] - lse);
      dz[at(t * V + i)] = (p - (i == y ? 1.0 : 0.0)) / static_cast<double>(count);
      Mz[at(t * V + i)] = (p + (i == y ? 1.0 : 0.0)) / static_cast<double>(count);
    }
  }
  noise.add(dz, gam(static_cast<double>(V + 8)), &Mz);
  res.loss = loss / static_cast<double>(count);

  // ---- backward
  Vec dn(static_cast<std::size_t>(T * H), 0.0), dx;
  net.linear_dx(dz, L.lm_head, H, V, dn);
  net.linear_dw(dz, n, H, V, G + L.lm_head);
  net.rmsnorm_backward(x, rf, L.final_norm, dn, dx, G + L.final_norm);
  for (std::int64_t l = c.layers - 1; l >= 0; --l) {
    const LayerTensors& w = L.layers[at(l)];
    LayerSaved& s = S[at(l)];
    Vec dh(static_cast<std::size_t>(T * I), 0.0);
    net.linear_dx(dx, w.w_down, I, H, dh);
    net.linear_dw(dx, s.h, I, H, G + w.w_down);
    Vec dg(dh.size()), du(dh.size()), Mg(dh.size()), Mu(dh.size());
    for (std::size_t i = 0; i < dh.size(); ++i) {
      const double sg = 1 / (1 + std::exp(-s.g[i]));
      dg[i] = dh[i] * s.u[i] * sg * (1 + s.g[i] * (1 - sg)),
      Mg[i] = std::fabs(dh[i] * s.u[i]) * sg * (1 + std::fabs(s.g[i]) * (1 - sg));
      du[i] = dh[i] * s.g[i] * sg, Mu[i] = std::fabs(du[i]);
    }
    noise.add(dg, 10 * kU, &Mg), noise.add(du, 10 * kU, &Mu);
    Vec df(static_cast<std::size_t>(T * H), 0.0);
    net.linear_dx(dg, w.w_gate, H, I, df);
    net.linear_dx(du, w.w_up, H, I, df);
    net.linear_dw(dg, s.f, H, I, G + w.w_gate);
    net.linear_dw(du, s.f, H, I, G + w.w_up);
    Vec dm;
    net.rmsnorm_backward(s.m, s.r2, w.ffn_norm, df, dm, G + w.ffn_norm);
    for (std::size_t i = 0; i < dm.size(); ++i) dm[i] += dx[i];  // the residual
    noise.add(dm, kU);
    Vec d_o(static_cast<std::size_t>(T * Q), 0.0), dq, dk, dv;
    net.linear_dx(dm, w.wo, Q, H, d_o);
    net.linear_dw(dm, s.o, Q, H, G + w.wo);
    net.attention_backward(s.q, s.k, s.v, s.attn, d_o, dq, dk, dv);
    net.rope(dq, c.q_heads, true);
    net.rope(dk, c.kv_heads, true);
    net.bias_grad(dq, Q, G + w.bq), net.bias_grad(dk, K, G + w.bk), net.bias_grad(dv, K, G + w.bv);
    Vec da(static_cast<std::size_t>(T * H), 0.0);
    net.linear_dx(dq, w.wq, H, Q, da), net.linear_dx(dk, w.wk, H, K, da), net.linear_dx(dv, w.wv, H, K, da);
    net.linear_dw(dq, s.a, H, Q, G + w.wq), net.linear_dw(dk, s.a, H, K, G + w.wk),
        net.linear_dw(dv, s.a, H, K, G + w.wv);
    Vec dxn;
    net.rmsnorm_backward(s.x, s.r1, w.attn_norm, da, dxn, G + w.attn_norm);
    for (std::size_t i = 0; i < dxn.size(); ++i) dx[i] = dm[i] + dxn[i];
    noise.add(dx, kU);
  }
  Vec ME(static_cast<std::size_t>(V * H), 0.0);
  for (std::int64_t t = 0; t < T; ++t)
    for (std::int64_t i = 0; i < H; ++i) {
      G[L.embed + at(tokens[at(t)] * H + i)] += dx[at(t * H + i)];
      ME[at(tokens[at(t)] * H + i)] += std::fabs(dx[at(t * H + i)]);
    }
  noise.add(G + L.embed, ME.size(), gam(static_cast<double>(T)), ME.data());
  return res;
}

void adamw(const ParamLayout& layout, const AdamWConfig& a, std::int64_t t, std::span<const float> params,
           std::span<const float> grads, std::span<const float> m, std::span<const float> v, std::vector<double>& p_out,
           std::vector<double>& m_out, std::vector<double>& v_out) {
  if (t < 1) throw InvalidArgument("reference::adamw: t must be >= 1");
  p_out.assign(params.begin(), params.end()), m_out.assign(m.begin(), m.end()), v_out.assign(v.begin(), v.end());
  const double b1 = a.beta1, b2 = a.beta2;
  const double c1 = 1 - std::pow(b1, static_cast<double>(t)), c2 = 1 - std::pow(b2, static_cast<double>(t));
  for (const Tensor& T : layout.tensors)
    for (std::size_t i = T.offset; i < T.offset + T.size(); ++i) {
      const double g = grads[i];
      m_out[i] = b1 * m[i] + (1 - b1) * g;
      v_out[i] = b2 * v[i] + (1 - b2) * g * g;
      const double mh = m_out[i] / c1, vh = v_out[i] / c2;
      const double wd = T.decay ? static_cast<double>(a.weight_decay) : 0.0;
      p_out[i] = params[i] - static_cast<double>(a.lr) * (mh / (std::sqrt(vh) + a.eps) + wd * params[i]);
    }
}

}  // namespace popper::train::reference
