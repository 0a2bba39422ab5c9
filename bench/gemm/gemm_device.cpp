// bench_gemm's device tiers, registered instead of the CPU tiers when
// POPPER_BENCH_DEVICE=cuda:
//   wrapped  popper's cuBLAS wrapper (CublasContext::gemm_*_device; TF32 off)
//   hand     popper's hand CUDA kernels (hand_gemm_*_device: SIMT for f32,
//            WMMA tensor cores for f16 and bf16)
// The ceiling is ceiling/cublas_gemm_raw.cu (cuBLAS from C, the same calls).
//
//   C = A B   (row-major, NoTrans, alpha = 1, beta = 0), FLOP = 2 m n k,
//   bytes = (m k + k n) * sizeof(input) + m n * 4   (C is FP32 in every precision)
//
// Precisions: f32 (FP32 in and out), f16 and bf16 (16-bit inputs, FP32
// accumulation and output). Operands stay resident on the device. Before
// timing, C is copied back and checked against the FP64 dot products of the
// inputs as the device holds them (16-bit values widened exactly) with the
// testbed's bound: gamma_{k+2}(u) + gamma_k(2^-53) for f32, u doubled for the
// 16-bit inputs (the contract's tensor_core_bound). One iteration is a batch
// of kBatch back-to-back GEMMs on the tier's stream, timed with CUDA events
// (manual time; the counters count the whole batch), so a launch's latency is
// not charged to a GEMM the queue would have hidden, as in the ceiling.
// Without a usable device every row is skipped with the reason.
#include "gemm/gemm_device.hpp"

#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "common/fill.hpp"
#include "gemm/testbed.hpp"
#include "impl/common/device.hpp"
#include "impl/gemm/cuda_gemm.hpp"
#include "popper/bench.hpp"
#include "workloads/gemm/shapes.h"

namespace popper::gemm::bench_device {
namespace {

namespace cu = popper::gemm::cuda;
namespace suite = popper::suite;
namespace pb = popper::bench;

constexpr int kBatch = 8;

enum class Input { F32, F16, BF16 };

Input input_of(const std::string& precision) {
  return precision == "f32" ? Input::F32 : precision == "f16" ? Input::F16 : Input::BF16;
}

GemmShape row_major(const popper_gemm_shape& sh) {
  GemmShape s;
  s.m = sh.m, s.n = sh.n, s.k = sh.k;
  s.lda = sh.k, s.ldb = sh.n, s.ldc = sh.n;
  return s;
}

// One operand on the device, and on the host as the device holds it (widened).
struct Operand {
  std::vector<float> host;
  std::optional<cu::DeviceBuffer<float>> f32;
  std::optional<cu::DeviceBuffer<std::uint16_t>> bits;

  Operand(std::size_t count, std::uint64_t seed, Input in, cu::StreamHandle stream) : host(count) {
    suite::fill_uniform(host, seed);
    if (in == Input::F32) {
      f32.emplace(count);
      f32->upload(host, stream);
      return;
    }
    std::vector<std::uint16_t> narrow(count);
    for (std::size_t i = 0; i < count; ++i) {
      narrow[i] = in == Input::F16 ? cu::float_to_half(host[i]) : cu::float_to_bf16(host[i]);
      host[i] = in == Input::F16 ? cu::half_to_float(narrow[i]) : cu::bf16_to_float(narrow[i]);
    }
    bits.emplace(count);
    bits->upload(narrow, stream);
  }
};

void bench_gemm_device(benchmark::State& state, const pb::Case& cs) {
  const auto& status = popper::device::cuda_status();
  if (!status.usable()) return pb::skip(state, pb::Verdict::not_run("no usable CUDA device: " + status.reason));
  const popper_gemm_shape sh = POPPER_GEMM_SHAPES[cs.shape];
  const Input in = input_of(cs.precision);
  const bool wrapped = cs.tier == pb::Tier::Wrapped;
  const GemmShape s = row_major(sh);
  const std::size_t m = std::size_t(sh.m), n = std::size_t(sh.n), k = std::size_t(sh.k);
  std::string label;
  try {
    cu::CublasContext ctx;  // its stream carries both tiers
    const cu::StreamHandle stream = ctx.stream();
    Operand a(m * k, 1, in, stream), b(k * n, 2, in, stream);
    cu::DeviceBuffer<float> c(m * n);
    auto gemm = [&] {
      switch (in) {
        case Input::F32:
          if (wrapped) ctx.gemm_f32_device(s, 1.0f, a.f32->cspan(), b.f32->cspan(), 0.0f, c.span());
          else cu::hand_gemm_f32_device(s, 1.0f, a.f32->cspan(), b.f32->cspan(), 0.0f, c.span(), stream);
          break;
        case Input::F16:
          if (wrapped) ctx.gemm_f16_device(s, 1.0f, a.bits->cspan(), b.bits->cspan(), 0.0f, c.span());
          else cu::hand_gemm_f16_device(s, 1.0f, a.bits->cspan(), b.bits->cspan(), 0.0f, c.span(), stream);
          break;
        case Input::BF16:
          if (wrapped) ctx.gemm_bf16_device(s, 1.0f, a.bits->cspan(), b.bits->cspan(), 0.0f, c.span());
          else cu::hand_gemm_bf16_device(s, 1.0f, a.bits->cspan(), b.bits->cspan(), 0.0f, c.span(), stream);
          break;
      }
    };

    gemm();
    std::vector<float> out(m * n);
    c.download(out, stream);
    const auto chk = popper::gemm::testbed::check_product_entries<float>(sh.m, sh.n, sh.k, a.host, b.host, out,
                                                                         popper_gemm_check_samples(sh.m, sh.n, sh.k),
                                                                         in == Input::F32 ? 1.0 : 2.0);
    if (!chk.ok) return pb::skip(state, pb::Verdict::parse(chk.verdict()));
    label = chk.verdict();

    auto batch = [&] {
      for (int i = 0; i < kBatch; ++i) gemm();
    };
    cu::StreamTimer timer(stream);
    for (auto _ : state) {
      timer.start();
      pb::call_tier(cs.tier, batch);
      state.SetIterationTime(timer.stop_seconds());
    }
  } catch (const std::exception& e) {
    return pb::skip(state, pb::Verdict::incorrect(std::string("threw ") + e.what()));
  }
  const double in_bytes = in == Input::F32 ? 4.0 : 2.0;
  state.SetLabel(label + "; batch of " + std::to_string(kBatch) + " GEMMs an iteration");
  state.counters["flop"] = benchmark::Counter(kBatch * 2.0 * double(m) * double(n) * double(k));
  state.counters["bytes"] = benchmark::Counter(kBatch * (double(m * k + k * n) * in_bytes + double(m * n) * 4.0));
}

}  // namespace

std::string requested_device() {
  const char* v = std::getenv("POPPER_BENCH_DEVICE");
  return v ? std::string(v) : std::string();
}

void register_device_tiers() {
  pb::Family("gemm")
      .shapes(POPPER_GEMM_SHAPES, POPPER_GEMM_SHAPE_COUNT)
      .tiers({pb::Tier::Wrapped, pb::Tier::Hand})
      .precisions({"f32", "f16", "bf16"})
      .threads({1})
      .manual_time()
      .add(bench_gemm_device);
}

std::string hand_backend() { return popper::device::cuda_status().backend_tag(); }

std::string wrapped_backend() {
  const auto& st = popper::device::cuda_status();
  return st.usable() ? "cublas:" + st.arch : std::string("cublas");
}

}  // namespace popper::gemm::bench_device
