// RMSNorm, SwiGLU and RoPE bodies over simd.inl (contract rmsnorm_*, swiglu, rope).

// ---- RMSNorm
// inv_rms = 1 / sqrt(sum x^2 / H + eps): squares summed in 4 accumulators of W
// lanes, the root in FP64. normed = x * inv_rms is one FP32 multiply in the
// forward and in the backward's recompute, so the two agree bit for bit.
static float sum_squares(const float* x, std::int64_t n) {
  vf acc[4] = {vzero(), vzero(), vzero(), vzero()};
  std::int64_t i = 0;
  for (; i + 4 * W <= n; i += 4 * W)
    for (int a = 0; a < 4; ++a) {
      const vf v = vload(x + i + a * W);
      acc[a] = vfma(v, v, acc[a]);
    }
  for (; i + W <= n; i += W) {
    const vf v = vload(x + i);
    acc[0] = vfma(v, v, acc[0]);
  }
  if (i < n) {
    const vf v = vloadn(x + i, static_cast<int>(n - i), 0.0f);
    acc[1] = vfma(v, v, acc[1]);
  }
  return vsum(vadd(vadd(acc[0], acc[1]), vadd(acc[2], acc[3])));
}

static void rms_fwd_rows_impl(const RmsArgs& a, std::int64_t r0, std::int64_t r1) {
  const std::int64_t H = a.hidden;
  for (std::int64_t r = r0; r < r1; ++r) {
    const float* x = a.x + r * H;
    float* y = a.y + r * H;
    float* nrm = a.normed ? a.normed + r * H : nullptr;
    const double mean = static_cast<double>(sum_squares(x, H)) / static_cast<double>(H);
    const float inv = static_cast<float>(1.0 / __builtin_sqrt(mean + static_cast<double>(a.eps)));
    a.inv_rms[r] = inv;
    const vf vi = vset(inv);
    std::int64_t i = 0;
    for (; i + W <= H; i += W) {
      const vf n = vmul(vload(x + i), vi);
      if (nrm) vstore(nrm + i, n);
      vstore(y + i, vmul(n, vload(a.w + i)));
    }
    if (i < H) {
      const int c = static_cast<int>(H - i);
      const vf n = vmul(vloadn(x + i, c, 0.0f), vi);
      if (nrm) vstoren(nrm + i, n, c);
      vstoren(y + i, vmul(n, vloadn(a.w + i, c, 0.0f)), c);
    }
  }
}

// d_input = inv (g - normed c), c = sum(g normed) / H, g = dy w;  dw_block += dy normed.
static void rms_bwd_rows_impl(const RmsArgs& a, std::int64_t r0, std::int64_t r1, float* dw, bool from_saved) {
  const std::int64_t H = a.hidden;
  const bool reorder = (a.mut & kMutRmsRecomputeReordered) != 0;
  const bool no_proj = (a.mut & kMutRmsDxMissingProjection) != 0;
  for (std::int64_t r = r0; r < r1; ++r) {
    const float* x = a.x ? a.x + r * H : nullptr;
    const float* dy = a.dy + r * H;
    float* dx = a.dx + r * H;
    float* nrm = a.normed ? a.normed + r * H : nullptr;
    const float inv = a.inv_rms[r];
    const vf vi = vset(inv);
    const vf vrms = vset(1.0f / inv);
    // normed for element block i: recomputed (fused) or read (separate).
    auto normed_at = [&](std::int64_t i, int cnt) {
      if (from_saved) return cnt == W ? vload(nrm + i) : vloadn(nrm + i, cnt, 0.0f);
      const vf xv = cnt == W ? vload(x + i) : vloadn(x + i, cnt, 0.0f);
      return reorder ? vdiv(xv, vrms) : vmul(xv, vi);
    };
    vf acc[2] = {vzero(), vzero()};
    std::int64_t i = 0;
    for (; i < H; i += W) {
      const int cnt = H - i < W ? static_cast<int>(H - i) : W;
      const vf n = normed_at(i, cnt);
      if (!from_saved && nrm) {
        if (cnt == W) vstore(nrm + i, n);
        else vstoren(nrm + i, n, cnt);
      }
      const vf dyv = cnt == W ? vload(dy + i) : vloadn(dy + i, cnt, 0.0f);
      const vf g = vmul(dyv, cnt == W ? vload(a.w + i) : vloadn(a.w + i, cnt, 0.0f));
      acc[(i / W) & 1] = vfma(g, n, acc[(i / W) & 1]);
      const vf dwv = vfma(dyv, n, cnt == W ? vload(dw + i) : vloadn(dw + i, cnt, 0.0f));
      if (cnt == W) vstore(dw + i, dwv);
      else vstoren(dw + i, dwv, cnt);
    }
    const float c = vsum(vadd(acc[0], acc[1])) / static_cast<float>(H);
    const vf vc = vset(no_proj ? 0.0f : c), vinv = vset(inv);
    for (i = 0; i < H; i += W) {
      const int cnt = H - i < W ? static_cast<int>(H - i) : W;
      const vf n = normed_at(i, cnt);
      const vf g = vmul(cnt == W ? vload(dy + i) : vloadn(dy + i, cnt, 0.0f),
                        cnt == W ? vload(a.w + i) : vloadn(a.w + i, cnt, 0.0f));
      const vf d = vmul(vinv, vfnma(n, vc, g));
      if (cnt == W) vstore(dx + i, d);
      else vstoren(dx + i, d, cnt);
    }
  }
}

// ---- SwiGLU: sigma(g) = 1 / (1 + 2^(-g L2E))
static inline vf vsigmoid(vf g) { return vdiv(vset(1.0f), vadd(vset(1.0f), vexp2(vmul(g, vset(-kLog2e))))); }

static void swiglu_fwd_impl(const float* g, const float* u, float* h, std::int64_t n) {
  std::int64_t i = 0;
  for (; i + W <= n; i += W) {
    const vf gv = vload(g + i);
    vstore(h + i, vmul(vmul(gv, vsigmoid(gv)), vload(u + i)));
  }
  if (i < n) {
    const int c = static_cast<int>(n - i);
    const vf gv = vloadn(g + i, c, 0.0f);
    vstoren(h + i, vmul(vmul(gv, vsigmoid(gv)), vloadn(u + i, c, 0.0f)), c);
  }
}

// Both gradients from g, u, dh held in registers, then stored over g and u.
static inline void swiglu_bwd_vec(vf dh, vf gv, vf uv, vf& d_gate, vf& d_up, std::uint32_t mut) {
  const vf s = vsigmoid(gv);
  d_up = vmul(dh, vmul(gv, s));
  const vf one = vset(1.0f);
  const vf factor = (mut & kMutSwigluDgateMissingTerm) ? one : vfma(gv, vsub(one, s), one);
  if (mut & kMutSwigluInplaceOrder) uv = d_up;  // the up buffer already overwritten
  d_gate = vmul(vmul(dh, uv), vmul(s, factor));
}

static void swiglu_bwd_impl(const float* dh, float* g, float* u, std::int64_t n, std::uint32_t mut) {
  std::int64_t i = 0;
  vf dg, du;
  for (; i + W <= n; i += W) {
    swiglu_bwd_vec(vload(dh + i), vload(g + i), vload(u + i), dg, du, mut);
    vstore(u + i, du);
    vstore(g + i, dg);
  }
  if (i < n) {
    const int c = static_cast<int>(n - i);
    swiglu_bwd_vec(vloadn(dh + i, c, 0.0f), vloadn(g + i, c, 0.0f), vloadn(u + i, c, 0.0f), dg, du, mut);
    vstoren(u + i, du, c);
    vstoren(g + i, dg, c);
  }
}

static void sigmoid_impl(const float* g, float* s, std::int64_t n) {
  std::int64_t i = 0;
  for (; i + W <= n; i += W) vstore(s + i, vsigmoid(vload(g + i)));
  if (i < n) {
    const int c = static_cast<int>(n - i);
    vstoren(s + i, vsigmoid(vloadn(g + i, c, 0.0f)), c);
  }
}

// The separate backward's two passes (d_up, then d_gate) over a stored sigma.
static void swiglu_sep_impl(const float* dh, const float* g, const float* u, const float* s, float* d_gate, float* d_up,
                            std::int64_t n) {
  const vf one = vset(1.0f);
  if (d_up) {
    std::int64_t i = 0;
    for (; i + W <= n; i += W) vstore(d_up + i, vmul(vload(dh + i), vmul(vload(g + i), vload(s + i))));
    for (; i < n; ++i) d_up[i] = dh[i] * (g[i] * s[i]);
  }
  if (d_gate) {
    std::int64_t i = 0;
    for (; i + W <= n; i += W) {
      const vf sv = vload(s + i), gv = vload(g + i);
      vstore(d_gate + i, vmul(vmul(vload(dh + i), vload(u + i)), vmul(sv, vfma(gv, vsub(one, sv), one))));
    }
    for (; i < n; ++i) d_gate[i] = (dh[i] * u[i]) * (s[i] * (g[i] * (1.0f - s[i]) + 1.0f));
  }
}

// ---- RoPE (half-split pairs x1 = x[j], x2 = x[j + D/2])
//   forward  y1 = fma(x1, c, -(x2 s)),  y2 = fma(x2, c, x1 s)
//   inverse  y1 = fma(x1, c,  (x2 s)),  y2 = fma(x2, c, -(x1 s))
static void rope_heads_impl(const float* cs, const float* sn, float* x, std::int64_t heads, std::int64_t D,
                            bool inverse) {
  const std::int64_t half = D / 2;
  const vf neg = vset(-1.0f);
  for (std::int64_t j = 0; j < half; j += W) {
    const int cnt = half - j < W ? static_cast<int>(half - j) : W;
    const vf c = cnt == W ? vload(cs + j) : vloadn(cs + j, cnt, 0.0f);
    const vf s = cnt == W ? vload(sn + j) : vloadn(sn + j, cnt, 0.0f);
    for (std::int64_t h = 0; h < heads; ++h) {
      float* p1 = x + h * D + j;
      float* p2 = p1 + half;
      const vf x1 = cnt == W ? vload(p1) : vloadn(p1, cnt, 0.0f);
      const vf x2 = cnt == W ? vload(p2) : vloadn(p2, cnt, 0.0f);
      vf a = vmul(x2, s), b = vmul(x1, s);
      if (inverse) b = vmul(b, neg);
      else a = vmul(a, neg);
      const vf y1 = vfma(x1, c, a), y2 = vfma(x2, c, b);
      if (cnt == W) {
        vstore(p1, y1);
        vstore(p2, y2);
      } else {
        vstoren(p1, y1, cnt);
        vstoren(p2, y2, cnt);
      }
    }
  }
}
