// Cross-entropy bodies over simd.inl (contract fused_ce_correctness, chunked_lse).
//
// Fused row: for each vocabulary chunk c (C values, the last one partial)
//   m_c = max x,  s_c = sum 2^((x - m_c) L2E)
// summed in 64 lanes (element i in lane i mod 64), blocks of 32 terms per lane
// added to the lane totals, lanes reduced pairwise: depth 32 + ceil(C / 2048) + 6.
// Chunks merge in FP64 (M = max m_c, s = sum s_c e^(m_c - M)); loss = (M - x_y) + ln s.
// Then grad_i = tau_i f_c with the same tau_i and f_c = scale e^(m_c - M) / s,
// minus scale at the label: the softmax is never stored.

constexpr int kLanes = 64;
constexpr int kNa = kLanes / W;  // accumulators of W lanes
constexpr int kBlockTerms = 32;  // terms per lane per block

static inline float lane_tree_sum(vf* acc) {
  for (int width = kNa; width > 1; width /= 2)
    for (int a = 0; a < width / 2; ++a) acc[a] = vadd(acc[a], acc[a + width / 2]);
  return vsum(acc[0]);
}

static float chunk_max(const float* x, std::int64_t n) {
  vf m = vset(kNegInf);
  std::int64_t i = 0;
  for (; i + W <= n; i += W) m = vmax(m, vload(x + i));
  if (i < n) m = vmax(m, vloadn(x + i, static_cast<int>(n - i), kNegInf));
  return vmaxr(m);
}

// The base-2 exponent of x_i e^-m: (x_i - m) L2E, exactly 0 at the max. The
// fused form fma(x_i, L2E, -m L2E) is off by the rounding of m L2E there,
// which passes 128 (2^e overflows) once |m| is past about 3e9 (the mutant).
// vm = m, vl = L2E, vnml = -(m L2E) rounded. A template argument, so the
// mutant's branch stays out of the loops.
template <bool RoundedMax>
static inline vf shifted_exp2(vf x, vf vm, vf vl, vf vnml) {
  if constexpr (RoundedMax) return vexp2(vfma(x, vl, vnml));
  else return vexp2(vmul(vsub(x, vm), vl));
}

// sum_i 2^((x_i - m) L2E) in the blocked 64-lane order.
template <bool RoundedMax = false>
static float chunk_sum_exp2(const float* x, std::int64_t n, float m, bool narrow) {
  vf total[kNa], blk[kNa];
  for (int a = 0; a < kNa; ++a) total[a] = vzero();
  const vf vl = vset(kLog2e), vm = vset(m), vnml = vset(-(m * kLog2e));
  const std::int64_t block = static_cast<std::int64_t>(kLanes) * kBlockTerms;
  for (std::int64_t b0 = 0; b0 < n; b0 += block) {
    const std::int64_t b1 = b0 + block < n ? b0 + block : n;
    for (int a = 0; a < kNa; ++a) blk[a] = vzero();
    std::int64_t i = b0;
    for (; i + kLanes <= b1; i += kLanes)
      for (int a = 0; a < kNa; ++a) blk[a] = vadd(blk[a], shifted_exp2<RoundedMax>(vload(x + i + a * W), vm, vl, vnml));
    for (int a = 0; a < kNa && i < b1; ++a, i += W) {
      const int cnt = b1 - i < W ? static_cast<int>(b1 - i) : W;
      const vf xv = cnt == W ? vload(x + i) : vloadn(x + i, cnt, kNegInf);
      blk[a] = vadd(blk[a], shifted_exp2<RoundedMax>(xv, vm, vl, vnml));
    }
    for (int a = 0; a < kNa; ++a) {
      total[a] = vadd(total[a], blk[a]);
      if (narrow) total[a] = vand_bits(total[a], 0xFFFF0000u);  // mutant: a BF16 accumulator
    }
  }
  return lane_tree_sum(total);
}

// grad[i] = 2^((x_i - m) L2E) * f for one chunk.
template <bool RoundedMax = false>
static void chunk_write_grad(const float* x, float* g, std::int64_t n, float m, float f) {
  const vf vl = vset(kLog2e), vm = vset(m), vnml = vset(-(m * kLog2e)), vfac = vset(f);
  std::int64_t i = 0;
  for (; i + W <= n; i += W) vstore(g + i, vmul(shifted_exp2<RoundedMax>(vload(x + i), vm, vl, vnml), vfac));
  if (i < n) {
    const int cnt = static_cast<int>(n - i);
    vstoren(g + i, vmul(shifted_exp2<RoundedMax>(vloadn(x + i, cnt, 0.0f), vm, vl, vnml), vfac), cnt);
  }
}

static void fill_row(float* g, std::int64_t n, float value) {
  for (std::int64_t i = 0; i < n; ++i) g[i] = value;
}

static void ce_rows_impl(const CeArgs& a, std::int64_t r0, std::int64_t r1, float* cmax, CeStats* st) {
  const std::int64_t V = a.vocab, C = a.chunk;
  std::int64_t nchunks = (V + C - 1) / C;
  const bool narrow = (a.mut & kMutCeNarrowAccumulation) != 0;
  const bool rounded_max = (a.mut & kMutCeShiftRoundedMax) != 0;
  if ((a.mut & kMutCeChunkDropsLast) && nchunks > 1) --nchunks;
  for (std::int64_t r = r0; r < r1; ++r) {
    const float* x = a.logits + r * V;
    float* g = a.grad + r * V;
    std::int64_t y = a.labels[r];
    if (y == a.ignore_index) {
      ++st->ignored;
      if (a.mut & kMutCeIgnoreIndexIgnored) {
        y = 0;
      } else {
        a.loss[r] = 0.0f;
        if (a.lse) a.lse[r] = 0.0f;
        if (!(a.mut & kMutCeIgnoredGradLeft)) fill_row(g, V, 0.0f);
        continue;
      }
    }
    const double xy = static_cast<double>(x[y]);
    // Pass 1: per chunk max and sum (the chunk stays in cache between the two reads).
    double M = -__builtin_inf(), s = 0;
    for (std::int64_t c = 0; c < nchunks; ++c) {
      const std::int64_t c0 = c * C, n = V - c0 < C ? V - c0 : C;
      float m = chunk_max(x + c0, n);
      if (a.mut & kMutCeUnstabilized) m = 0.0f;
      cmax[c] = m;
      const double sc = rounded_max ? chunk_sum_exp2<true>(x + c0, n, m, narrow) : chunk_sum_exp2(x + c0, n, m, narrow);
      const double mc = m;
      if (a.mut & kMutCeChunkMergeNoRescale) {
        M = mc > M ? mc : M;
        s += sc;
      } else if (mc > M) {
        s = s * __builtin_exp(M - mc) + sc;
        M = mc;
      } else {
        s += sc * __builtin_exp(mc - M);
      }
    }
    const double lse = M + __builtin_log(s);
    const double loss = (M - xy) + __builtin_log(s);
    if (!__builtin_isfinite(lse)) {  // NaN or +inf in the row (or every logit -inf): documented NaN row
      ++st->nonfinite;
      a.loss[r] = __builtin_nanf("");
      if (a.lse) a.lse[r] = __builtin_nanf("");
      fill_row(g, V, __builtin_nanf(""));
      continue;
    }
    a.loss[r] = static_cast<float>(loss);  // +inf when the label's logit is -inf
    if (a.lse) a.lse[r] = static_cast<float>(lse);
    if (__builtin_isfinite(loss)) st->loss_sum += static_cast<double>(a.loss[r]);
    else ++st->nonfinite;
    // Pass 2: gradient, chunk by chunk, with the same exp2 arguments as pass 1.
    for (std::int64_t c = 0; c < nchunks; ++c) {
      const std::int64_t c0 = c * C, n = V - c0 < C ? V - c0 : C;
      const double f = static_cast<double>(a.scale) * __builtin_exp(static_cast<double>(cmax[c]) - M) / s;
      if (rounded_max) chunk_write_grad<true>(x + c0, g + c0, n, cmax[c], static_cast<float>(f));
      else chunk_write_grad(x + c0, g + c0, n, cmax[c], static_cast<float>(f));
    }
    for (std::int64_t c = nchunks; c * C < V; ++c) {  // only under the drop-last mutant
      const std::int64_t c0 = c * C, n = V - c0 < C ? V - c0 : C;
      fill_row(g + c0, n, 0.0f);
    }
    std::int64_t at = y;
    if (a.mut & kMutCeOnehotWrongIndex) at = y + 1 < V ? y + 1 : y - 1;
    if (at >= 0) g[at] -= a.scale;
  }
}

// ---- separate path: softmax stored, then the gradient from it.
static void softmax_rows_impl(const float* x, float* p, std::int64_t n, std::int64_t r0, std::int64_t r1) {
  for (std::int64_t r = r0; r < r1; ++r) {
    const float* xr = x + r * n;
    float* pr = p + r * n;
    const float m = chunk_max(xr, n);
    const float s = chunk_sum_exp2(xr, n, m, false);
    chunk_write_grad(xr, pr, n, m, 1.0f / s);
  }
}

static void ce_grad_from_probs_impl(const float* p, const std::int64_t* labels, float* grad, std::int64_t vocab,
                                    std::int64_t ignore_index, float scale, std::int64_t r0, std::int64_t r1) {
  const vf vs = vset(scale);
  for (std::int64_t r = r0; r < r1; ++r) {
    const float* pr = p + r * vocab;
    float* g = grad + r * vocab;
    if (labels[r] == ignore_index) {
      fill_row(g, vocab, 0.0f);
      continue;
    }
    std::int64_t i = 0;
    for (; i + W <= vocab; i += W) vstore(g + i, vmul(vload(pr + i), vs));
    if (i < vocab) {
      const int cnt = static_cast<int>(vocab - i);
      vstoren(g + i, vmul(vloadn(pr + i, cnt, 0.0f), vs), cnt);
    }
    g[labels[r]] -= scale;
  }
}

static void exp2_array_impl(const float* x, float* out, std::int64_t n, std::uint32_t mut) {
  const bool trunc = (mut & kMutExp2Truncated) != 0;
  std::int64_t i = 0;
  for (; i + W <= n; i += W) vstore(out + i, vexp2_impl(vload(x + i), trunc));
  if (i < n) {
    const int cnt = static_cast<int>(n - i);
    vstoren(out + i, vexp2_impl(vloadn(x + i, cnt, 0.0f), trunc), cnt);
  }
}
