// The fallback ("packed SDPA"): for every (row t, group g) gather the selected
// K and V rows into dense FP32 matrices and run ordinary dense attention
// through OpenBLAS SGEMM (popper::gemm::BlasHandle):
//
//   K_J = [k_j]_{j in J} (L x D), V_J (L x Dv), Q_g = the h_g query rows (h_g x D)
//   S = scale * Q_g K_J^T          (sgemm, NoTrans x Trans)
//   P = exp(S - lse) row-wise      (the hand kernel's vectorized softmax, FP32)
//   O_g = P V_J                    (sgemm), written straight into O's rows of group g
//
// Threads split the (row, group) items (parallel::run_weighted); OpenBLAS runs
// single-threaded inside each (BlasHandle{threads = 1}).
#include <algorithm>
#include <limits>
#include <vector>

#include "impl/common/parallel.hpp"
#include "impl/gemm/lib_blas.hpp"
#include "impl/nsa/cpu_selection_kernels.hpp"
#include "impl/nsa/nsa.hpp"
#include "popper/error.hpp"
#include "popper/mutant.hpp"

namespace popper::nsa {

namespace {

using SoftmaxFn = void (*)(float*, int, std::int64_t, std::int64_t, float*);

SoftmaxFn softmax_for_cpu() {
  switch (popper::cpu::auto_isa()) {
    case popper::cpu::Isa::Avx512: return detail::softmax_rows_avx512;
    case popper::cpu::Isa::Avx2: return detail::softmax_rows_avx2;
    default: return detail::softmax_rows_scalar;
  }
}

void widen(const bf16* src, float* dst, int n) {
  for (int i = 0; i < n; ++i) dst[i] = float_from_bf16(src[i]);
}

}  // namespace

RunInfo selection_attention_fallback(const SelectionProblem& p, SelectionOutput out, const FallbackOptions& opt) {
  check_problem(p, out);
  if (opt.threads < 1) throw InvalidArgument("nsa::selection_attention_fallback: threads must be >= 1");
  const HeadLayout& lay = p.layout;
  const int G = lay.groups, hg = lay.heads_per_group(), d = lay.dim, dv = lay.dim_v;
  const float scale = softmax_scale(d);
  const bool drop_last = POPPER_MUTANT("nsa-fallback-drop-last");
  const SoftmaxFn softmax = softmax_for_cpu();
  const popper::gemm::BlasHandle blas(popper::gemm::BlasOptions{1, ""});
  const std::int64_t rows = p.batch.rows();
  const auto seq = row_sequences(p.batch);
  const SpanPack& pack = *p.spans;
  std::vector<double> cost(static_cast<std::size_t>(rows * G));
  for (std::int64_t t = 0; t < rows; ++t)
    for (int g = 0; g < G; ++g)
      cost[static_cast<std::size_t>(t * G + g)] = static_cast<double>(pack.selected(t, g) + 1);

  popper::parallel::run_weighted(cost, opt.threads, [&](std::size_t begin, std::size_t end, int) {
    std::vector<float> kg, vg, qg(static_cast<std::size_t>(hg) * static_cast<std::size_t>(d)), s;
    std::vector<float> lse(static_cast<std::size_t>(hg));
    for (std::size_t item = begin; item < end; ++item) {
      const std::int64_t t = static_cast<std::int64_t>(item) / G;
      const int g = static_cast<int>(static_cast<std::int64_t>(item) % G);
      const std::int64_t key0 = p.batch.cu_seqlens_k[seq[static_cast<std::size_t>(t)]];
      float* o = out.o.data() + (t * lay.heads + static_cast<std::int64_t>(g) * hg) * dv;  // h_g consecutive rows
      float* lse_out = out.lse.empty() ? nullptr : out.lse.data() + t * lay.heads + static_cast<std::int64_t>(g) * hg;
      std::int64_t len = pack.selected(t, g);
      if (drop_last && len > 0) --len;
      if (len == 0) {
        std::fill(o, o + static_cast<std::ptrdiff_t>(hg) * dv, 0.0f);
        if (lse_out) std::fill(lse_out, lse_out + hg, -std::numeric_limits<float>::infinity());
        continue;
      }
      kg.resize(static_cast<std::size_t>(len * d));
      vg.resize(static_cast<std::size_t>(len * dv));
      s.resize(static_cast<std::size_t>(len * hg));
      std::int64_t r = 0;
      for (const Span& sp : pack.of(t, g))
        for (std::int32_t j = sp.begin; j < sp.end && r < len; ++j, ++r) {
          const std::int64_t u = (key0 + j) * G + g;
          widen(p.k.data() + u * d, kg.data() + r * d, d);
          widen(p.v.data() + u * dv, vg.data() + r * dv, dv);
        }
      widen(p.q.data() + (t * lay.heads + static_cast<std::int64_t>(g) * hg) * d, qg.data(), hg * d);
      using popper::gemm::GemmShape;
      using popper::gemm::Layout;
      using popper::gemm::Op;
      const GemmShape qk{Layout::RowMajor, Op::NoTrans, Op::Trans, hg, len, d, d, d, len};
      blas.gemm(qk, scale, qg, kg, 0.0f, s);
      softmax(s.data(), hg, len, len, lse.data());
      const GemmShape pv{Layout::RowMajor, Op::NoTrans, Op::NoTrans, hg, dv, len, len, dv, dv};
      blas.gemm(pv, 1.0f, s, vg, 0.0f,
                std::span<float>(o, static_cast<std::size_t>(hg) * static_cast<std::size_t>(dv)));
      if (lse_out) std::copy(lse.begin(), lse.end(), lse_out);
    }
  });
  return {"openblas:" + blas.core_name(), ""};
}

}  // namespace popper::nsa
