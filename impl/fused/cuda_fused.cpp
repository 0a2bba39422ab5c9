// The fused CUDA entries (contract device_decline): the device when one is
// usable, otherwise the CPU kernel (identical bits) with RunInfo.declined set
// and the reason. A device that fails mid-call also declines.
#include <algorithm>
#include <vector>

#include "impl/common/device.hpp"
#include "impl/fused/cuda_launch.hpp"
#include "impl/fused/driver.hpp"
#include "impl/fused/reference.hpp"
#include "popper/mutant.hpp"

namespace popper::fused::cuda {
namespace {

RunInfo declined(RunInfo cpu, const std::string& why) {
  cpu.declined = true;
  cpu.decline_reason = why;
  return cpu;
}
std::string no_device_reason() {
  const auto& st = popper::device::cuda_status();
  return st.reason.empty() ? std::string("no usable CUDA device") : st.reason;
}
bool device_usable() { return popper::device::cuda_status().usable(); }
RunInfo on_device() { return RunInfo{"cuda", false, ""}; }

// Mutant: the decline path serves the reference (rounded to FP32) instead of the CPU kernel.
bool decline_uses_reference() { return POPPER_MUTANT("fused-decline-uses-reference"); }

}  // namespace

CrossEntropyResult cross_entropy(const CrossEntropyShape& s, std::span<const float> logits,
                                 std::span<const std::int64_t> labels, std::span<float> loss, std::span<float> lse,
                                 std::span<float> grad, const ExecOptions& o) {
  detail::check_cross_entropy(s, logits, labels, loss, grad, lse, o);
  const bool no_max = POPPER_MUTANT("cuda-ce-no-max-subtraction");
  if (device_usable() && s.rows > 0 &&
      cuda_launch::cross_entropy(logits.data(), labels.data(), loss.data(), lse.empty() ? nullptr : lse.data(),
                                 grad.data(), s.rows, s.vocab, s.ignore_index, s.grad_scale, no_max)) {
    CrossEntropyResult r;
    r.run = on_device();
    for (std::int64_t i = 0; i < s.rows; ++i) {
      if (labels[static_cast<std::size_t>(i)] == s.ignore_index) ++r.ignored_rows;
      else if (loss[static_cast<std::size_t>(i)] == loss[static_cast<std::size_t>(i)])
        r.loss_sum += loss[static_cast<std::size_t>(i)];
      else ++r.nonfinite_rows;
    }
    return r;
  }
  if (decline_uses_reference()) {
    std::vector<double> l(static_cast<std::size_t>(s.rows)), e(l.size()), g(static_cast<std::size_t>(s.rows * s.vocab));
    reference::cross_entropy(s, logits, labels, l, e, g);
    std::transform(l.begin(), l.end(), loss.begin(), [](double x) { return static_cast<float>(x); });
    std::transform(g.begin(), g.end(), grad.begin(), [](double x) { return static_cast<float>(x); });
    CrossEntropyResult r;
    r.run = declined(RunInfo{"reference", false, ""}, no_device_reason());
    return r;
  }
  CrossEntropyResult r = fused::cross_entropy(s, logits, labels, loss, lse, grad, o);
  r.run = declined(r.run, no_device_reason());
  return r;
}

RunInfo rmsnorm_forward(const RmsNormShape& s, std::span<const float> x, std::span<const float> weight,
                        std::span<float> y, std::span<float> inv_rms, const ExecOptions& o) {
  detail::check_rmsnorm(s, x.size(), weight.size(), y.size(), o);
  detail::require_len("inv_rms", inv_rms.size(), s.rows);
  if (device_usable() && s.rows > 0 &&
      cuda_launch::rmsnorm_forward(x.data(), weight.data(), y.data(), inv_rms.data(), s.rows, s.hidden, s.eps))
    return on_device();
  RunInfo run;
  const RmsNormSaved saved = fused::rmsnorm_forward(s, x, weight, y, o, &run);
  std::copy(saved.inv_rms.data(), saved.inv_rms.data() + s.rows, inv_rms.begin());
  return declined(run, no_device_reason());
}

RunInfo swiglu_forward(const SwigluShape& s, std::span<const float> gate, std::span<const float> up, std::span<float> h,
                       const ExecOptions& o) {
  detail::check_swiglu(s, gate.size(), up.size(), h.size(), o);
  if (device_usable() && s.rows > 0 && cuda_launch::swiglu_forward(gate.data(), up.data(), h.data(), s.rows * s.width))
    return on_device();
  return declined(fused::swiglu_forward(s, gate, up, h, o), no_device_reason());
}

RunInfo swiglu_backward_inplace(const SwigluShape& s, std::span<const float> dh, std::span<float> gate,
                                std::span<float> up, const ExecOptions& o) {
  detail::check_swiglu(s, gate.size(), up.size(), dh.size(), o);
  if (device_usable() && s.rows > 0 &&
      cuda_launch::swiglu_backward(dh.data(), gate.data(), up.data(), s.rows * s.width))
    return on_device();
  return declined(fused::swiglu_backward_inplace(s, dh, gate, up, o), no_device_reason());
}

RunInfo rope_forward(const RopeShape& s, const RopeTable& t, std::span<float> q, std::span<float> k,
                     const ExecOptions& o) {
  detail::check_rope(s, t, q.size(), k.size(), o);
  if (device_usable() && s.batch * s.seq > 0 &&
      cuda_launch::rope_forward(t.cos.data(), t.sin.data(), t.positions, q.data(), k.data(), s.batch, s.seq, s.q_heads,
                                s.kv_heads, s.head_dim, s.pos_offset))
    return on_device();
  return declined(fused::rope_forward(s, t, q, k, o), no_device_reason());
}

RunInfo attention_forward(const AttentionShape& s, std::span<const float> q, std::span<const float> k,
                          std::span<const float> v, std::span<float> o, std::span<float> lse, const ExecOptions& opt) {
  detail::check_attention(s, q.size(), k.size(), v.size(), o.size(), lse.size(), opt);
  if (device_usable() && s.batch * s.q_len > 0 &&
      cuda_launch::attention_forward(q.data(), k.data(), v.data(), o.data(), lse.data(), s.batch, s.q_len, s.kv_len,
                                     s.q_heads, s.kv_heads, s.head_dim, s.causal, detail::attention_scale(s)))
    return on_device();
  return declined(fused::attention_forward(s, q, k, v, o, lse, opt), no_device_reason());
}

}  // namespace popper::fused::cuda
