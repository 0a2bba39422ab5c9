// Causal GQA attention bodies over simd.inl (contract attention_forward, attention_backward).
//
// Forward unit (b, hkv, 64-row query block), for each query head of the group:
// Qs = Q * scale * L2E (so scores are in base 2), then for each 64-key block
// up to the causal limit (packed once for the group):
//   S = Qs K^T,  mask,  m' = max(m, rowmax S),  P = 2^(S - m'),
//   l = l 2^(m - m') + rowsum P,  O = O 2^(m - m') + P V
// and finally O / l, lse = ln2 (m + log2 l). Only lse is kept for backward.
// Backward unit (b, hkv): for each key block, for each query head of the group
// and each query block that sees it: P = 2^(Qs K^T - lse L2E), dV += P^T dO,
// dP = dO V^T, dS = P (dP - D), dQ += dS K, dK += dS^T Q (scale applied once at
// the end); D_i = sum_c dO_ic O_ic. A unit owns its dK, dV and the dQ of its
// query heads, so the result does not depend on how units meet threads.

#if POPPER_FUSED_ISA_LEVEL == 5
constexpr int kMR = 6, kNV = 4;
#elif POPPER_FUSED_ISA_LEVEL == 2
constexpr int kMR = 6, kNV = 2;
#else
constexpr int kMR = 4, kNV = 4;
#endif

// A's element (r, k): A[r lda + k], or with AT (A stored transposed) A[k lda + r].
template <bool AT>
static inline const float* a_at(const float* A, std::int64_t lda, std::int64_t r, std::int64_t k) {
  return AT ? A + k * lda + r : A + r * lda + k;
}

// C[MR x NV W] (+)= A[MR x K] * B[K x NV W] (row stride ldb).
template <int MR, int NV, bool AT>
static void tile_mk(std::int64_t K, const float* A, std::int64_t lda, const float* B, std::int64_t ldb, float* C,
                    std::int64_t ldc, bool accumulate) {
  vf c[MR][NV];
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v) c[r][v] = accumulate ? vload(C + r * ldc + v * W) : vzero();
  for (std::int64_t k = 0; k < K; ++k) {
    vf b[NV];
    for (int v = 0; v < NV; ++v) b[v] = vload(B + k * ldb + v * W);
    for (int r = 0; r < MR; ++r) {
      const vf a = vset(*a_at<AT>(A, lda, r, k));
      for (int v = 0; v < NV; ++v) c[r][v] = vfma(a, b[v], c[r][v]);
    }
  }
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v) vstore(C + r * ldc + v * W, c[r][v]);
}

template <int NV, bool AT, int R>
static void tile_tail(int rem, std::int64_t K, const float* A, std::int64_t lda, const float* B, std::int64_t ldb,
                      float* C, std::int64_t ldc, bool acc) {
  if constexpr (R >= 1) {
    if (rem == R) tile_mk<R, NV, AT>(K, A, lda, B, ldb, C, ldc, acc);
    else tile_tail<NV, AT, R - 1>(rem, K, A, lda, B, ldb, C, ldc, acc);
  }
}

template <int NV, bool AT>
static void tile_rows(int M, std::int64_t K, const float* A, std::int64_t lda, const float* B, std::int64_t ldb,
                      float* C, std::int64_t ldc, bool acc) {
  int m0 = 0;
  for (; m0 + kMR <= M; m0 += kMR)
    tile_mk<kMR, NV, AT>(K, a_at<AT>(A, lda, m0, 0), lda, B, ldb, C + m0 * ldc, ldc, acc);
  if (m0 < M) tile_tail<NV, AT, kMR - 1>(M - m0, K, a_at<AT>(A, lda, m0, 0), lda, B, ldb, C + m0 * ldc, ldc, acc);
}

// C[M x N] (+)= A[M x K] B[K x N]; N a multiple of W. With AT, A is given
// stored transposed (K x M, row stride lda): a broadcast reads it as cheaply
// either way, so no transposed copy is made.
template <bool AT = false>
static void tile_gemm(int M, int N, std::int64_t K, const float* A, std::int64_t lda, const float* B, std::int64_t ldb,
                      float* C, std::int64_t ldc, bool acc) {
  if (M <= 0) return;
  for (int n0 = 0; n0 < N; n0 += kNV * W) {
    const int nv = (N - n0) / W < kNV ? (N - n0) / W : kNV;
    if constexpr (kNV >= 4) {
      if (nv == 4) {
        tile_rows<4, AT>(M, K, A, lda, B + n0, ldb, C + n0, ldc, acc);
        continue;
      }
      if (nv == 3) {
        tile_rows<3, AT>(M, K, A, lda, B + n0, ldb, C + n0, ldc, acc);
        continue;
      }
    }
    if (nv == 2) tile_rows<2, AT>(M, K, A, lda, B + n0, ldb, C + n0, ldc, acc);
    else if (nv == 1) tile_rows<1, AT>(M, K, A, lda, B + n0, ldb, C + n0, ldc, acc);
  }
}

// Tiles of kMR rows over [0, n): f(first row, rows in the tile).
template <class F>
static void each_row_tile(std::int64_t n, F&& f) {
  for (std::int64_t m0 = 0; m0 < n; m0 += kMR) f(m0, static_cast<int>(n - m0 < kMR ? n - m0 : kMR));
}

static void zero_floats(float* p, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) p[i] = 0.0f;
}

static inline float widen_bf16(std::uint16_t h, bool drop_low_bit) {
  const std::uint32_t bits = static_cast<std::uint32_t>(drop_low_bit ? (h & 0xFFFEu) : h) << 16;
  float f;
  __builtin_memcpy(&f, &bits, sizeof f);
  return f;
}

// One head row (D values) of an input, widened from BF16 when given.
static inline float in_at(const float* f32, const std::uint16_t* b16, std::int64_t idx, bool drop) {
  return b16 ? widen_bf16(b16[idx], drop) : f32[idx];
}

struct AttnGeom {
  std::int64_t D, Dp, group, off;
  std::int64_t q_row(std::int64_t b, std::int64_t i, std::int64_t h, std::int64_t Sq, std::int64_t Hq) const {
    return ((b * Sq + i) * Hq + h) * D;
  }
};

// Number of visible keys of query i in the key block starting at j0 with nk keys.
static inline std::int64_t visible_keys(const AttnArgs& a, std::int64_t i, std::int64_t j0, std::int64_t nk,
                                        std::int64_t off) {
  if (!a.causal) return nk;
  std::int64_t vis = i + off - j0 + 1;
  if (a.mut & kMutAttnCausalOffByOne) vis -= 1;
  return vis < 0 ? 0 : (vis > nk ? nk : vis);
}

static void pack_kv_block(const AttnArgs& a, const AttnGeom& g, std::int64_t b, std::int64_t hk, std::int64_t j0,
                          std::int64_t nk, float* Kt, float* Kp, float* Vp, float* Vt) {
  const bool drop = (a.mut & kMutBf16WidenDropsLowBit) != 0;
  const std::int64_t D = g.D, Dp = g.Dp;
  for (std::int64_t j = 0; j < nk; ++j) {
    const std::int64_t base = ((b * a.kv_len + j0 + j) * a.kv_heads + hk) * D;
    for (std::int64_t c = 0; c < D; ++c) {
      const float kv = in_at(a.k, a.k16, base + c, drop), vv = in_at(a.v, a.v16, base + c, drop);
      if (Kt) Kt[c * kTileKv + j] = kv;
      if (Kp) Kp[j * Dp + c] = kv;
      if (Vp) Vp[j * Dp + c] = vv;
      if (Vt) Vt[c * kTileKv + j] = vv;
    }
    if (Kp) zero_floats(Kp + j * Dp + D, Dp - D);
    if (Vp) zero_floats(Vp + j * Dp + D, Dp - D);
  }
  // The keys past nk are zero, written apart from the copy so that a block of
  // a few keys (a decode step's) costs a few keys' copies, not 64.
  for (std::int64_t c = 0; c < D; ++c) {
    if (Kt) zero_floats(Kt + c * kTileKv + nk, kTileKv - nk);
    if (Vt) zero_floats(Vt + c * kTileKv + nk, kTileKv - nk);
  }
  if (Kp) zero_floats(Kp + nk * Dp, (kTileKv - nk) * Dp);
  if (Vp) zero_floats(Vp + nk * Dp, (kTileKv - nk) * Dp);
}

// The first `rows` rows x Dp (columns past D zero), values * mul. The tile's
// other rows are left as they are: every tile_gemm over them stops at `rows`.
static void pack_rows(const float* f32, const std::uint16_t* b16, bool drop, std::int64_t first_row_offset,
                      std::int64_t row_stride, std::int64_t rows, std::int64_t D, std::int64_t Dp, float mul,
                      float* out) {
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < D; ++c)
      out[r * Dp + c] = in_at(f32, b16, first_row_offset + r * row_stride + c, drop) * mul;
    zero_floats(out + r * Dp + D, Dp - D);
  }
}

// One query head's state in a forward unit: its scaled Q rows, score tile,
// O accumulator and running max / sum.
struct FwdHead {
  float *Qs, *S, *O, *m, *l;
};

// One key block for one query head: S = Qs K^T, mask, online softmax, O update.
static void attn_fwd_block(const AttnArgs& a, const AttnGeom& g, std::int64_t i0, std::int64_t rows, std::int64_t j0,
                           std::int64_t nk, const float* Kt, const float* Vp, const FwdHead& h) {
  const std::int64_t D = g.D, Dp = g.Dp;
  const bool no_rescale = (a.mut & kMutAttnNoRescale) != 0;
  float *S = h.S, *O = h.O, *m = h.m, *l = h.l;
  // A block across the causal diagonal: each tile of kMR rows is computed only
  // as far as its last row sees; the mask below covers the rest of S.
  const bool diagonal = visible_keys(a, i0, j0, nk, g.off) < nk;
  if (diagonal) {
    each_row_tile(rows, [&](std::int64_t m0, int mr) {
      std::int64_t cols = (visible_keys(a, i0 + m0 + mr - 1, j0, nk, g.off) + W - 1) / W * W;
      if (a.mut & kMutAttnDiagonalColumnsShort) cols -= W;
      tile_gemm(mr, static_cast<int>(cols), D, h.Qs + m0 * Dp, Dp, Kt, kTileKv, S + m0 * kTileKv, kTileKv, false);
    });
  } else {
    tile_gemm(static_cast<int>(rows), kTileKv, D, h.Qs, Dp, Kt, kTileKv, S, kTileKv, false);
  }
  for (std::int64_t r = 0; r < rows; ++r) {
    float* s = S + r * kTileKv;
    const std::int64_t vis = visible_keys(a, i0 + r, j0, nk, g.off);
    vf mx = vset(kNegInf);
    for (int c = 0; c < kTileKv; c += W) {
      vf x = vset(kNegInf);  // past the last visible key S may not have been computed
      if (c < vis) x = c + W > vis ? vkeep(vload(s + c), static_cast<int>(vis - c), kNegInf) : vload(s + c);
      vstore(s + c, x);
      mx = vmax(mx, x);
    }
    const float mt = vmaxr(mx);
    float mnew = mt > m[r] ? mt : m[r];
    if (no_rescale) mnew = mt;
    if (mnew == kNegInf) {  // nothing visible yet: P = 0
      for (int c = 0; c < kTileKv; c += W) vstore(s + c, vzero());
      continue;
    }
    const float alpha = no_rescale ? 1.0f : __builtin_exp2f(m[r] - mnew);
    const vf vm = vset(mnew);
    vf sum = vzero();
    for (int c = 0; c < kTileKv; c += W) {
      const vf p = vexp2(vsub(vload(s + c), vm));
      vstore(s + c, p);
      sum = vadd(sum, p);
    }
    l[r] = l[r] * alpha + vsum(sum);
    m[r] = no_rescale ? (mnew > m[r] ? mnew : m[r]) : mnew;
    if (alpha != 1.0f) {
      const vf va = vset(alpha);
      for (std::int64_t c = 0; c < Dp; c += W) vstore(O + r * Dp + c, vmul(vload(O + r * Dp + c), va));
    }
  }
  if (diagonal) {
    each_row_tile(rows, [&](std::int64_t m0, int mr) {
      const std::int64_t seen = visible_keys(a, i0 + m0 + mr - 1, j0, nk, g.off);
      tile_gemm(mr, static_cast<int>(Dp), seen, S + m0 * kTileKv, kTileKv, Vp, Dp, O + m0 * Dp, Dp, true);
    });
  } else {
    tile_gemm(static_cast<int>(rows), static_cast<int>(Dp), nk, S, kTileKv, Vp, Dp, O, Dp, true);
  }
}

// Forward unit (b, hkv, q block): every query head of the GQA group, so each
// key/value block is packed once for the group (the packing is a transpose,
// as costly as a sizeable part of the block's arithmetic). Each head's
// arithmetic is the same sequence as alone: results do not depend on grouping.
static void attn_fwd_unit_impl(const AttnArgs& a, std::int64_t unit, float* ws) {
  const std::int64_t Sq = a.q_len, Skv = a.kv_len, Hq = a.q_heads, Hkv = a.kv_heads;
  const std::int64_t nqb = (Sq + kTileQ - 1) / kTileQ;
  const std::int64_t qb = unit % nqb, hk = (unit / nqb) % Hkv, b = unit / nqb / Hkv;
  AttnGeom g{a.head_dim, padded_head_dim(a.head_dim), Hq / Hkv, 0};
  g.off = (a.mut & kMutAttnDecodeTopLeft) ? 0 : Skv - Sq;
  const std::int64_t D = g.D, Dp = g.Dp, group = g.group;
  const std::int64_t i0 = qb * kTileQ, rows = Sq - i0 < kTileQ ? Sq - i0 : kTileQ;
  const bool drop = (a.mut & kMutBf16WidenDropsLowBit) != 0;
  // The query heads of key/value head hk; the mutant pairs them as hq % Hkv == hk.
  auto head_of = [&](std::int64_t gi) { return (a.mut & kMutAttnGqaWrongKvHead) ? gi * Hkv + hk : hk * group + gi; };

  float* Kt = ws;
  float* Vp = Kt + Dp * kTileKv;
  const std::size_t head_floats = attn_fwd_head_ws_floats(D);
  auto head = [&](std::int64_t gi) {  // head gi's slice of the workspace
    float* h = Vp + kTileKv * Dp + static_cast<std::size_t>(gi) * head_floats;
    float* O = h + kTileQ * Dp + kTileQ * kTileKv;
    return FwdHead{h, h + kTileQ * Dp, O, O + kTileQ * Dp, O + kTileQ * Dp + kTileQ};
  };
  for (std::int64_t gi = 0; gi < group; ++gi) {
    const FwdHead h = head(gi);
    pack_rows(a.q, a.q16, drop, g.q_row(b, i0, head_of(gi), Sq, Hq), Hq * D, rows, D, Dp, a.scale * kLog2e, h.Qs);
    zero_floats(h.O, rows * Dp);
    for (int r = 0; r < kTileQ; ++r) h.m[r] = kNegInf, h.l[r] = 0.0f;
  }

  std::int64_t kv_end = Skv;
  if (a.causal) {
    const std::int64_t last = i0 + rows - 1 + g.off + 1;
    kv_end = last < Skv ? (last < 0 ? 0 : last) : Skv;
  }
  for (std::int64_t j0 = 0; j0 < kv_end; j0 += kTileKv) {
    const std::int64_t nk = Skv - j0 < kTileKv ? Skv - j0 : kTileKv;
    pack_kv_block(a, g, b, hk, j0, nk, Kt, nullptr, Vp, nullptr);
    for (std::int64_t gi = 0; gi < group; ++gi) attn_fwd_block(a, g, i0, rows, j0, nk, Kt, Vp, head(gi));
  }
  for (std::int64_t gi = 0; gi < group; ++gi) {
    const FwdHead h = head(gi);
    const std::int64_t hq = head_of(gi);
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::int64_t i = i0 + r;
      float* orow = a.o + g.q_row(b, i, hq, Sq, Hq);
      const float inv = h.l[r] > 0.0f ? 1.0f / h.l[r] : 0.0f;
      for (std::int64_t c = 0; c < D; ++c) orow[c] = h.O[r * Dp + c] * inv;
      a.lse[(b * Hq + hq) * Sq + i] =
          h.l[r] > 0.0f
              ? static_cast<float>((static_cast<double>(h.m[r]) + __builtin_log2(static_cast<double>(h.l[r]))) *
                                   0.69314718055994530942)
              : kNegInf;
    }
  }
}

static void attn_bwd_unit_impl(const AttnArgs& a, std::int64_t unit, float* ws) {
  const std::int64_t Sq = a.q_len, Skv = a.kv_len, Hq = a.q_heads, Hkv = a.kv_heads;
  const std::int64_t b = unit / Hkv, hk = unit % Hkv;
  AttnGeom g{a.head_dim, padded_head_dim(a.head_dim), Hq / Hkv, a.causal ? Skv - Sq : 0};
  const std::int64_t D = g.D, Dp = g.Dp, group = g.group;
  const bool no_delta = (a.mut & kMutAttnBwdMissingDelta) != 0;
  const bool overwrite = (a.mut & kMutAttnBwdGqaOverwrite) != 0;

  float* Kt = ws;
  float* Kp = Kt + Dp * kTileKv;
  float* Vt = Kp + kTileKv * Dp;
  float* dK = Vt + Dp * kTileKv;
  float* dV = dK + kTileKv * Dp;
  float* Qs = dV + kTileKv * Dp;
  float* Qr = Qs + kTileQ * Dp;
  float* dOp = Qr + kTileQ * Dp;
  float* P = dOp + kTileQ * Dp;
  float* dS = P + kTileQ * kTileKv;
  float* lse2 = dS + kTileQ * kTileKv;
  float* Dl = lse2 + group * Sq;
  float* dQ = Dl + group * Sq;

  for (std::int64_t gi = 0; gi < group; ++gi) {
    const std::int64_t hq = hk * group + gi;
    for (std::int64_t i = 0; i < Sq; ++i) {
      lse2[gi * Sq + i] = a.lse[(b * Hq + hq) * Sq + i] * kLog2e;
      const float* orow = a.o + g.q_row(b, i, hq, Sq, Hq);
      const float* drow = a.d_o + g.q_row(b, i, hq, Sq, Hq);
      float d = 0.0f;
      for (std::int64_t c = 0; c < D; ++c) d += drow[c] * orow[c];
      Dl[gi * Sq + i] = d;
    }
  }
  zero_floats(dQ, group * Sq * Dp);

  for (std::int64_t j0 = 0; j0 < Skv; j0 += kTileKv) {
    const std::int64_t nk = Skv - j0 < kTileKv ? Skv - j0 : kTileKv;
    zero_floats(dK, kTileKv * Dp);
    zero_floats(dV, kTileKv * Dp);
    // First query that sees key j0 (causal): i + off >= j0.
    std::int64_t i_first = a.causal ? j0 - g.off : 0;
    if (i_first < 0) i_first = 0;
    if (i_first < Sq) {
      pack_kv_block(a, g, b, hk, j0, nk, Kt, Kp, nullptr, Vt);
      for (std::int64_t gi = 0; gi < group; ++gi) {
        const std::int64_t hq = hk * group + gi;
        if (overwrite && gi > 0) zero_floats(dK, kTileKv * Dp), zero_floats(dV, kTileKv * Dp);
        for (std::int64_t i0 = i_first / kTileQ * kTileQ; i0 < Sq; i0 += kTileQ) {
          const std::int64_t rows = Sq - i0 < kTileQ ? Sq - i0 : kTileQ;
          const int R = static_cast<int>(rows);
          const std::int64_t q0 = g.q_row(b, i0, hq, Sq, Hq);
          pack_rows(a.q, nullptr, false, q0, Hq * D, rows, D, Dp, a.scale * kLog2e, Qs);
          pack_rows(a.q, nullptr, false, q0, Hq * D, rows, D, Dp, 1.0f, Qr);
          pack_rows(a.d_o, nullptr, false, q0, Hq * D, rows, D, Dp, 1.0f, dOp);
          float* dq = dQ + (gi * Sq + i0) * Dp;
          // A pair across the causal diagonal: each tile of kMR rows (queries)
          // is computed only as far as its last row sees, each tile of kMR
          // keys only from the first query that sees it; P and dS are zero
          // past that.
          const bool diagonal = visible_keys(a, i0, j0, nk, g.off) < nk;
          if (diagonal) {
            each_row_tile(R, [&](std::int64_t m0, int mr) {
              const std::int64_t cols = (visible_keys(a, i0 + m0 + mr - 1, j0, nk, g.off) + W - 1) / W * W;
              tile_gemm(mr, static_cast<int>(cols), D, Qs + m0 * Dp, Dp, Kt, kTileKv, P + m0 * kTileKv, kTileKv, false);
              tile_gemm(mr, static_cast<int>(cols), D, dOp + m0 * Dp, Dp, Vt, kTileKv, dS + m0 * kTileKv, kTileKv,
                        false);  // dP
            });
          } else {
            tile_gemm(R, kTileKv, D, Qs, Dp, Kt, kTileKv, P, kTileKv, false);
            tile_gemm(R, kTileKv, D, dOp, Dp, Vt, kTileKv, dS, kTileKv, false);  // dP
          }
          for (std::int64_t r = 0; r < rows; ++r) {
            const std::int64_t i = i0 + r;
            const std::int64_t vis = visible_keys(a, i, j0, nk, g.off);
            const vf vl = vset(lse2[gi * Sq + i]), vd = vset(no_delta ? 0.0f : Dl[gi * Sq + i]);
            float* p = P + r * kTileKv;
            float* ds = dS + r * kTileKv;
            for (int c = 0; c < kTileKv; c += W) {
              if (c >= vis) {  // nothing visible: P and dS zero (and perhaps not computed)
                vstore(p + c, vzero()), vstore(ds + c, vzero());
                continue;
              }
              vf s = vload(p + c);
              if (c + W > vis) s = vkeep(s, static_cast<int>(vis - c), kNegInf);
              const vf pv = vexp2(vsub(s, vl));
              vstore(p + c, pv);
              vstore(ds + c, vmul(pv, vsub(vload(ds + c), vd)));
            }
          }
          if (diagonal) {
            each_row_tile(nk, [&](std::int64_t m0, int mr) {  // tiles of kMR keys
              std::int64_t r0 = j0 + m0 - i0 - g.off;         // the first query that sees key j0 + m0
              if (a.mut & kMutAttnBwdDiagonalLate) r0 += 1;
              r0 = r0 < 0 ? 0 : (r0 > rows ? rows : r0);
              const float* pk = P + r0 * kTileKv + m0;
              const float* dsk = dS + r0 * kTileKv + m0;
              tile_gemm<true>(mr, static_cast<int>(Dp), rows - r0, pk, kTileKv, dOp + r0 * Dp, Dp, dV + m0 * Dp, Dp,
                              true);
              tile_gemm<true>(mr, static_cast<int>(Dp), rows - r0, dsk, kTileKv, Qr + r0 * Dp, Dp, dK + m0 * Dp, Dp,
                              true);
            });
            each_row_tile(R, [&](std::int64_t m0, int mr) {
              const std::int64_t seen = visible_keys(a, i0 + m0 + mr - 1, j0, nk, g.off);
              tile_gemm(mr, static_cast<int>(Dp), seen, dS + m0 * kTileKv, kTileKv, Kp, Dp, dq + m0 * Dp, Dp, true);
            });
          } else {
            tile_gemm<true>(static_cast<int>(nk), static_cast<int>(Dp), rows, P, kTileKv, dOp, Dp, dV, Dp, true);
            tile_gemm(R, static_cast<int>(Dp), nk, dS, kTileKv, Kp, Dp, dq, Dp, true);
            tile_gemm<true>(static_cast<int>(nk), static_cast<int>(Dp), rows, dS, kTileKv, Qr, Dp, dK, Dp, true);
          }
        }
      }
    }
    for (std::int64_t j = 0; j < nk; ++j) {
      const std::int64_t base = ((b * Skv + j0 + j) * Hkv + hk) * D;
      for (std::int64_t c = 0; c < D; ++c) {
        a.dk[base + c] = dK[j * Dp + c] * a.scale;
        a.dv[base + c] = dV[j * Dp + c];
      }
    }
  }
  for (std::int64_t gi = 0; gi < group; ++gi) {
    const std::int64_t hq = hk * group + gi;
    for (std::int64_t i = 0; i < Sq; ++i) {
      float* dqrow = a.dq + g.q_row(b, i, hq, Sq, Hq);
      for (std::int64_t c = 0; c < D; ++c) dqrow[c] = dQ[(gi * Sq + i) * Dp + c] * a.scale;
    }
  }
}

// Separate path's softmax pass over stored scores: rows [0, rows) of s (row
// stride ld, n keys), global query index row0 + r; p = softmax(scale s + mask).
// Rounded: the mutant's shift (below), a template argument so that the real
// path's loops carry no test of it.
template <bool Rounded>
static void softmax_scaled_rows_body(float* s, std::int64_t n, std::int64_t ld, std::int64_t rows, std::int64_t row0,
                                     std::int64_t off, bool causal, float scale, float* lse_out) {
  const vf vsl = vset(scale * kLog2e);
  for (std::int64_t r = 0; r < rows; ++r) {
    float* x = s + r * ld;
    std::int64_t vis = causal ? row0 + r + off + 1 : n;
    vis = vis < 0 ? 0 : (vis > n ? n : vis);
    vf mx = vset(kNegInf);
    std::int64_t c = 0;
    for (; c + W <= vis; c += W) mx = vmax(mx, vload(x + c));
    if (c < vis) mx = vmax(mx, vloadn(x + c, static_cast<int>(vis - c), kNegInf));
    const float m = vmaxr(mx), mL = m * scale * kLog2e;
    // 2^((s - m) scale log2 e): 0 at the max exactly, as in the fused path. A
    // shift by the rounded scaled max, fma(s, scale log2 e, -mL), left up to
    // half an ulp of mL in the exponent: 2^(> 128) past |s| ~ 3e9 / scale.
    const vf vm = vset(m), vmL = vset(-mL);
    const auto shifted = [&](vf v) {
      if constexpr (Rounded) return vfma(v, vsl, vmL);
      else return vmul(vsub(v, vm), vsl);
    };
    vf sum = vzero();
    for (c = 0; c + W <= vis; c += W) {
      const vf p = vexp2(shifted(vload(x + c)));
      vstore(x + c, p);
      sum = vadd(sum, p);
    }
    if (c < vis) {
      const int cnt = static_cast<int>(vis - c);
      const vf p = vkeep(vexp2(shifted(vloadn(x + c, cnt, 0.0f))), cnt, 0.0f);
      vstoren(x + c, p, cnt);
      sum = vadd(sum, p);
    }
    const float total = vsum(sum);
    const vf inv = vset(1.0f / total);
    std::int64_t e = 0;
    for (; e + W <= vis; e += W) vstore(x + e, vmul(vload(x + e), inv));
    for (; e < n; ++e) x[e] = e < vis ? x[e] / total : 0.0f;
    if (lse_out)
      lse_out[r] = static_cast<float>((static_cast<double>(mL) + __builtin_log2(static_cast<double>(total))) *
                                      0.69314718055994530942);
  }
}
static void softmax_scaled_rows_impl(float* s, std::int64_t n, std::int64_t ld, std::int64_t rows, std::int64_t row0,
                                     std::int64_t off, bool causal, float scale, float* lse_out, std::uint32_t mut) {
  if (mut & kMutAttnSepShiftRoundedMax)
    softmax_scaled_rows_body<true>(s, n, ld, rows, row0, off, causal, scale, lse_out);
  else softmax_scaled_rows_body<false>(s, n, ld, rows, row0, off, causal, scale, lse_out);
}
