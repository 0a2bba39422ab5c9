// bench_decode: tokens/s of the parity gate's canary on each backend
// (bench producer protocol). Names decode/<tier>/<shape>/q4k/threads:<n>,
// shapes from workloads/decode/shapes.h:
//
//   hand       cpu-simd: popper's hand kernels (Q4_K GEMV, fused one-token kernels)
//   wrapped    ggml-cpu: llama.cpp's CPU backend through popper's C++ API
//   device     the resident decode (impl/decode/resident.hpp): cuda where a
//              device is present, else vulkan (lavapipe here);
//              POPPER_DECODE_DEVICE=cuda|vulkan picks one (a GPU host runs the
//              bench once with each to judge Vulkan against CUDA on one GPU)
//   reference  cpu: FP32, every sum sequential (gate shape, one thread)
//
// One iteration decodes the shape's prompt one token at a time from an empty
// KV cache (make_backend(...)->logits); per iteration items = tokens and
// bytes = tokens * Model::bytes_per_token(), the weights every step reads.
// Before timing, each tier's logits for a 2-token prompt are compared with
// the cpu backend's (the gate's judgement, cosine >= 0.98): label
// "verified(cos ...)", or the row is skipped "incorrect: ...". After timing,
// the hand, wrapped and device tiers decode a fresh prompt of the shape's
// length once more, judged the same way against the cpu backend's logits for
// it (popper::bench::Recheck); then a row faster than this machine can read
// the same bytes on the same threads is "invalid: ..."
// (q4k::bandwidth_verdict), as in bench_q4k; not the device tier, which reads
// device memory.
// The hand and wrapped tiers also have cold rows (…/cold): the caches are
// evicted before each decode of the prompt (popper/cache_evict.h), so its
// first token finds no weight, KV entry or activation in any cache. The
// canary's weights (253 MB a token) stream from memory at every token either
// way; the cold rows say so by measurement, and the contract's bandwidth and
// speed claims are judged on them.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/cold_row_pool.hpp"
#include "common/read_bandwidth.hpp"
#include "impl/common/cpu_features.hpp"
#include "impl/common/device.hpp"
#include "impl/common/vulkan_runtime.hpp"
#include "impl/decode/forward.hpp"
#include "impl/decode/parity.hpp"
#include "impl/q4k/bandwidth_bound.hpp"
#include "impl/q4k/lib_ggml.hpp"
#include "popper/bench.hpp"
#include "popper/error.hpp"
#include "workloads/decode/shapes.h"

namespace {

namespace suite = popper::suite;
namespace pb = popper::bench;
namespace dec = popper::decode;
using Clock = std::chrono::steady_clock;

using Tier = pb::Tier;

// The device tier's backend: POPPER_DECODE_DEVICE when set, else the first
// device in the gate's priority order (cuda, vulkan) that is present.
std::string device_backend() {
  if (const char* d = std::getenv("POPPER_DECODE_DEVICE"); d && *d) return d;
  return popper::device::cuda_status().usable() ? "cuda" : "vulkan";
}

// The backend a tier runs.
std::string backend_for(Tier t) {
  switch (t) {
    case Tier::Hand: return "cpu-simd";
    case Tier::Wrapped: return "ggml-cpu";
    case Tier::Reference: return "cpu";
    default: return device_backend();
  }
}

// The cpu backend's logits for a prompt the checks before and after timing
// decode, kept per shape and prompt, in the process and across the run's
// processes (pb::shared_reference): the canary's take seconds, and every row
// of a shape decodes the same two prompts.
const std::vector<float>& expected_logits(const popper_decode_shape& sh, const dec::Model& m,
                                          const std::vector<std::int32_t>& prompt, int threads) {
  static std::map<std::pair<std::string, std::vector<std::int32_t>>, std::vector<float>> kept;
  auto& e = kept[{sh.name, prompt}];
  if (e.empty()) {
    std::string key = fmt::format("decode/{}/threads:{}/prompt", sh.name, threads);
    for (const std::int32_t t : prompt) key += fmt::format(" {}", t);
    e = pb::shared_reference(key, [&] { return dec::make_backend("cpu", m, threads)->logits(prompt); });
  }
  return e;
}

// One model per process and shape (the canary takes about 2 s to generate).
const dec::Model& model_for(const popper_decode_shape& sh) {
  static std::string name;
  static std::unique_ptr<dec::Model> model;
  if (!model || name != sh.name) {
    model = std::make_unique<dec::Model>(dec::make_canary(sh.config(), POPPER_DECODE_SEED, 2));
    name = sh.name;
  }
  return *model;
}

void bench_decode(benchmark::State& state, const pb::Case& c) {
  const popper_decode_shape& sh = POPPER_DECODE_SHAPES[c.shape];
  const Tier tier = c.tier;
  const int threads = c.threads;
  pb::Verdict v;
  std::unique_ptr<dec::Backend> backend;
  std::vector<std::int32_t> prompt;
  double bytes = 0;
  std::vector<double> read;
  try {
    const dec::Model& m = model_for(sh);
    prompt = dec::canary_tokens(m.config, sh.tokens, POPPER_DECODE_SEED);
    bytes = double(m.bytes_per_token()) * sh.tokens;
    // The bound first, before the backend exists (as bench_q4k: its worker
    // threads must not run beside the probe, nor sit idle through it): a plain
    // read of one token's weights on the row's threads, from memory for a cold row.
    if (tier != Tier::Reference && tier != Tier::Device)
      read = suite::read_bandwidth(std::size_t(m.bytes_per_token()), threads, 5, c.cache);
    backend = dec::make_backend(backend_for(tier), m, threads);
    if (!backend->available()) return pb::skip(state, pb::Verdict::not_run(backend->unavailable_reason()));
    const auto check = dec::canary_tokens(m.config, 2, POPPER_DECODE_SEED + 1);
    const std::vector<float> got = backend->logits(check);
    // A device that declined a call ran the CPU's code under its name.
    if (!backend->available()) return pb::skip(state, pb::Verdict::not_run(backend->unavailable_reason()));
    if (tier == Tier::Reference) {
      v = pb::Verdict::not_verified("the reference is the oracle");
    } else {
      const auto a = dec::compare_logits(got, expected_logits(sh, m, check, threads));
      v = a.cosine >= dec::kMinCosine
              ? pb::Verdict::verified(fmt::format("cos {:.6f}", a.cosine))
              : pb::Verdict::incorrect(
                    fmt::format("cosine {:.6f} against the cpu backend (< {:.2f})", a.cosine, dec::kMinCosine));
      if (!pb::timeable(v)) return pb::skip(state, v);
    }
  } catch (const popper::Unsupported& e) {
    return pb::skip(state, pb::Verdict::not_run(e.what()));
  } catch (const std::exception& e) {
    return pb::skip(state, pb::Verdict::incorrect(std::string("threw ") + e.what()));
  }

  std::vector<float> out;
  auto timed = [&] {
    const std::span<const std::int32_t> tokens(prompt);
    // Under the skipped-work bench mutant: the first half of the prompt, the
    // logits after its last token instead of the prompt's.
    out = backend->logits(pb::skips_work(c) ? tokens.first(tokens.size() / 2) : tokens);
    benchmark::DoNotOptimize(out.data());
  };
  // After timing: a fresh prompt in the same buffer. The timed loop ends where the refill begins.
  std::optional<Clock::time_point> loop_end;
  pb::Recheck recheck;
  if (tier != Tier::Reference) {
    recheck.refill = [&](std::uint64_t seed) {
      loop_end = Clock::now();
      std::ranges::copy(dec::canary_tokens(model_for(sh).config, sh.tokens, POPPER_DECODE_SEED ^ seed), prompt.begin());
    };
    recheck.verify = [&] {
      const auto a = dec::compare_logits(out, expected_logits(sh, model_for(sh), prompt, threads));
      return a.cosine >= dec::kMinCosine
                 ? pb::Verdict::verified()
                 : pb::Verdict::incorrect(
                       fmt::format("cosine {:.6f} against the cpu backend (< {:.2f})", a.cosine, dec::kMinCosine));
    };
  }
  suite::ColdRowPool pool(c);
  const auto t0 = Clock::now();
  pb::measure(state, c, v, timed,
              {.work = double(sh.tokens), .bytes = bytes, .unit = "items", .wake = pool.wake(), .rest = pool.rest()},
              recheck);
  const auto t1 = loop_end.value_or(Clock::now());
  if (state.error_occurred() || read.empty()) return;
  // The report's bound for the row (the triad where no probe ran). A cold
  // row's wall time includes its evictions, so the check below could not
  // fail there.
  const auto report_bound = [&] { state.counters["read_bytes_per_second"] = std::ranges::max(read); };
  if (c.cache == pb::CacheMode::Cold) return report_bound();
  const double per_iter = std::chrono::duration<double>(t1 - t0).count() / double(state.iterations());
  const double sample[1] = {per_iter};
  const auto verdict = suite::judge_read_bound(bytes, sample, read, std::size_t(bytes / sh.tokens), threads);
  if (!verdict.valid) return pb::skip(state, pb::Verdict::parse(verdict.text, true));
  report_bound();
}

void register_all() {
  pb::Family("decode")
      .shapes(POPPER_DECODE_SHAPES, static_cast<int>(std::size(POPPER_DECODE_SHAPES)))
      .tiers({Tier::Hand, Tier::Wrapped, Tier::Device, Tier::Reference})
      .precisions({"q4k"})
      .threads({1, 2})
      .cache_modes({pb::CacheMode::Warm, pb::CacheMode::Cold})
      // The reference is sequential FP32: the gate's small model, one thread,
      // warm. Cold rows: the CPU tiers that serve a decode, hand and wrapped.
      .where([](const pb::Case& c) {
        if (c.cache == pb::CacheMode::Cold) return c.tier == Tier::Hand || c.tier == Tier::Wrapped;
        return c.tier != Tier::Reference ||
               (std::string(POPPER_DECODE_SHAPES[c.shape].set) == "gate" && c.threads == 1);
      })
      .add(bench_decode);
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  // Each tier's backend as it reports itself (forward.hpp evidence), without
  // loading a model: the gate runs this process under callgrind.
  const std::string device = device_backend();
  if (device != "cuda" && device != "vulkan") {
    std::fprintf(stderr, "bench_decode: POPPER_DECODE_DEVICE=%s: cuda or vulkan\n", device.c_str());
    return 2;
  }
  const auto& cu = popper::device::cuda_status();
  const auto& vk = popper::vulkan::status();
  return pb::run_suite(
      argc, argv,
      {{Tier::Hand, popper::cpu::backend_tag(popper::cpu::Isa::Auto)},
       {Tier::Wrapped, popper::q4k::ggml::status().usable() ? popper::q4k::ggml::cpu_backend_tag() : "ggml-cpu"},
       {Tier::Device, device == "cuda" ? (cu.usable() ? cu.backend_tag() : "cuda")
                      : vk.usable()    ? popper::vulkan::backend_tag()
                                       : "vulkan"},
       {Tier::Reference, popper::cpu::backend_tag(popper::cpu::Isa::Scalar)}});
}
