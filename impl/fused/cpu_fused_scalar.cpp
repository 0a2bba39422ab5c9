// Scalar table: the same bodies with one-lane vectors (plain float), compiled for the
// baseline x86-64 target; no FMA is assumed (vfma is a multiply and an add).
#include <cstdint>

#include "impl/fused/cpu_kernels.hpp"

namespace popper::fused::detail {
namespace {
#define POPPER_FUSED_ISA_LEVEL 0
#include "impl/fused/simd.inl"
#include "impl/fused/ce_body.inl"
#include "impl/fused/norm_body.inl"
#include "impl/fused/attention_body.inl"
#include "impl/fused/parameter_body.inl"
#undef POPPER_FUSED_ISA_LEVEL
}  // namespace

const KernelTable& scalar_table() {
  static const KernelTable t{"cpu:scalar",        &ce_rows_impl,
                             &softmax_rows_impl,  &ce_grad_from_probs_impl,
                             &rms_fwd_rows_impl,  &rms_bwd_rows_impl,
                             &swiglu_fwd_impl,    &swiglu_bwd_impl,
                             &sigmoid_impl,       &swiglu_sep_impl,
                             &rope_heads_impl,    &attn_fwd_unit_impl,
                             &attn_bwd_unit_impl, &softmax_scaled_rows_impl,
                             &exp2_array_impl,    &all_finite_impl,
                             &adamw_range_impl};
  return t;
}

}  // namespace popper::fused::detail
