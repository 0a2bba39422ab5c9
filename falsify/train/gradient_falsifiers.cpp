// FALSIFY-TRAIN-001 (every gradient against the FP64 oracle within the
// derived bound) and -006 (libtorch as an external oracle, loaded at run time:
// dlopen of libpopper_train_torch.so beside the test binary, since linking
// libtorch into the test binary would cost every test process its seconds of loading).
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>

#include "impl/train/torch/torch_step.h"
#include "support.hpp"

namespace {

using namespace popper::train;
using namespace popper::train::testing;

struct TorchPeer {
  decltype(&popper_torch_create) create = nullptr;
  decltype(&popper_torch_step) step = nullptr;
  decltype(&popper_torch_destroy) destroy = nullptr;
  decltype(&popper_torch_describe) describe = nullptr;
  std::string missing;  // why it is unavailable ("" when loaded)
};
inline const TorchPeer& torch_peer() {
  static const TorchPeer peer = [] {
    TorchPeer p;
#if POPPER_HAVE_TORCH
    std::error_code ec;
    const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    const std::string lib = (ec ? std::filesystem::path(".") : exe.parent_path()) / "libpopper_train_torch.so";
    void* h = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char* e = dlerror();
      p.missing = "cannot load " + lib + ": " + (e ? e : "unknown error");
      return p;
    }
    p.create = reinterpret_cast<decltype(p.create)>(dlsym(h, "popper_torch_create"));
    p.step = reinterpret_cast<decltype(p.step)>(dlsym(h, "popper_torch_step"));
    p.destroy = reinterpret_cast<decltype(p.destroy)>(dlsym(h, "popper_torch_destroy"));
    p.describe = reinterpret_cast<decltype(p.describe)>(dlsym(h, "popper_torch_describe"));
    if (!p.create || !p.step || !p.destroy || !p.describe) p.missing = lib + " lacks the popper_torch_* entry points";
#else
    p.missing = POPPER_TORCH_MISSING;
#endif
    if (p.missing.empty() && !p.create) p.missing = "the libtorch peer was not built";
    return p;
  }();
  return peer;
}

inline popper_torch_config torch_config(const Config& c, const AdamWConfig& a, int threads) {
  popper_torch_config t{};
  t.vocab = c.vocab, t.hidden = c.hidden, t.layers = c.layers, t.q_heads = c.q_heads, t.kv_heads = c.kv_heads;
  t.head_dim = c.head_dim, t.intermediate = c.intermediate, t.seq = c.seq, t.batch = c.batch;
  t.rms_eps = c.rms_eps, t.rope_base = c.rope_base;
  t.lr = a.lr, t.beta1 = a.beta1, t.beta2 = a.beta2, t.eps = a.eps, t.weight_decay = a.weight_decay;
  t.threads = threads;
  return t;
}

POPPER_CAPABILITY("libtorch", [] {
  const TorchPeer& t = torch_peer();
  return popper::CapabilityStatus{t.missing.empty(), t.missing};
});

POPPER_FALSIFIER("FALSIFY-TRAIN-001", [](const popper::Params& p) {
  const int runs = static_cast<int>(p.integer("runs"));
  const double safety = p.number("safety");
  for (const auto& m : p.list("models")) {
    const Config c = model_of(m);
    const ParamLayout L(c);
    const auto params = init_params(c, p.seed());
    const Batch b = copy_task_batch(c, p.seed(), 0);
    const auto bound = testbed::gradient_bound(c, params, b.tokens, b.labels, runs, safety);
    const std::string vac = testbed::vacuous(L, bound);
    ASSERT_TRUE(vac.empty()) << vac;
    for (const Variant& v : variants())
      for (const auto threads : p.integers("threads")) {
        Step step(c, {v.backend, static_cast<int>(threads), v.isa});
        std::vector<float> g(L.total, 0.0f);
        const double loss = step.forward_backward(params, b.tokens, b.labels, g);
        const auto e = testbed::compare<float>(L, bound, g, loss);
        std::printf("  H=%lld V=%lld %s threads=%lld %s: %s\n", static_cast<long long>(c.hidden),
                    static_cast<long long>(c.vocab), to_string(v.backend), static_cast<long long>(threads),
                    step.backend_tag().c_str(), e.text().c_str());
        EXPECT_TRUE(e.ok()) << to_string(v.backend) << " " << step.backend_tag() << " threads " << threads << ": "
                            << e.text() << " (seed " << p.seed() << ")";
        if (::testing::Test::HasFailure()) return;
        record(step, v.isa);
      }
  }
});

POPPER_FALSIFIER("FALSIFY-TRAIN-006", [](const popper::Params& p) {
  const TorchPeer& torch = torch_peer();
  if (!torch.missing.empty()) GTEST_SKIP() << "requires libtorch: " << torch.missing;
  const Config c = testbed::preset("tiny");
  const ParamLayout L(c);
  const auto params = init_params(c, p.seed());
  const Batch b = copy_task_batch(c, p.seed(), 0);
  const auto bound =
      testbed::gradient_bound(c, params, b.tokens, b.labels, static_cast<int>(p.integer("runs")), p.number("safety"));

  char err[512] = "";
  const auto offs = testbed::offsets(L);
  const popper_torch_config tc = torch_config(c, AdamWConfig{}, 1);
  void* model = torch.create(&tc, params.data(), offs.data(), offs.size(), err, sizeof err);
  ASSERT_NE(model, nullptr) << "libtorch model: " << err;
  std::vector<float> g_torch(L.total, 0.0f);
  const double loss_torch = torch.step(model, b.tokens.data(), b.labels.data(), g_torch.data(), 0, err, sizeof err);
  torch.destroy(model);
  ASSERT_TRUE(std::isfinite(loss_torch)) << "libtorch step: " << err;

  Step step(c, {Backend::Hand, 1, popper::cpu::Isa::Auto});
  std::vector<float> g(L.total, 0.0f);
  const double loss = step.forward_backward(params, b.tokens, b.labels, g);

  const auto torch_vs_fp64 = testbed::compare<float>(L, bound, g_torch, loss_torch);
  const auto popper_vs_fp64 = testbed::compare<float>(L, bound, g, loss);
  // popper against libtorch: the bound's exact gradient replaced by libtorch's, twice the bound.
  testbed::GradientBound around_torch = bound;
  around_torch.exact.loss = loss_torch;
  around_torch.exact.grads.assign(g_torch.begin(), g_torch.end());
  const auto popper_vs_torch = testbed::compare<float>(L, around_torch, g, loss, 2.0);
  std::printf("  libtorch %s\n  libtorch vs FP64: %s\n  popper   vs FP64: %s\n  popper   vs libtorch (2x bound): %s\n",
              torch.describe(), torch_vs_fp64.text().c_str(), popper_vs_fp64.text().c_str(),
              popper_vs_torch.text().c_str());
  EXPECT_TRUE(torch_vs_fp64.ok()) << "libtorch against the FP64 oracle: " << torch_vs_fp64.text();
  EXPECT_TRUE(popper_vs_torch.ok()) << "popper against libtorch: " << popper_vs_torch.text() << " (seed " << p.seed()
                                    << ")";
  if (!::testing::Test::HasFailure()) {
    record(step, popper::cpu::Isa::Auto);
    popper::record_backend("libtorch");
  }
});

}  // namespace
