/* The train family's ceiling tier: the training step of workloads/train/shapes.h in
 * libtorch eager (impl/train/torch/lib_torch.cpp: ATen ops, autograd,
 * torch::optim::AdamW), the peer popper's step is measured against; the same
 * model, parameters (popper's init) and batch. Timed: zero_grad, forward,
 * backward, AdamW step. at::set_num_threads and OpenBLAS's thread count are
 * --threads.
 *
 * OMP_WAIT_POLICY=PASSIVE unless the caller set it (the program re-executes
 * itself with it): Debian's libtorch runs its element-wise ops on libgomp
 * workers, which spin after each parallel region, and its SGEMM on OpenBLAS's
 * own pthreads; at 2 threads on a 2-core machine the spinning workers and
 * OpenBLAS's threads fought over the cores and a small-preset step took
 * 18-22 s instead of 6.3 s. The peer is measured in its best configuration.
 *
 * Verified before timing: libtorch's gradients on the tiny preset against the
 * FP64 oracle within the contract's derived bound (FALSIFY-TRAIN-006 holds the
 * same check against popper), and a finite loss on the timed shape.
 * Without libtorch at configure time it prints "# skipped: requires libtorch: <why>". */
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "popper/ceiling_cli.h"
#include "workloads/train/shapes.h"
#include "falsify/train/testbed.hpp"
#if POPPER_HAVE_TORCH
#include "impl/train/torch/torch_step.h"
#endif

extern "C" char* openblas_get_corename(void);

namespace {

using namespace popper::train;

#if POPPER_HAVE_TORCH
popper_torch_config torch_config(const Config& c, int threads) {
  const AdamWConfig a;
  popper_torch_config t{};
  t.vocab = c.vocab, t.hidden = c.hidden, t.layers = c.layers, t.q_heads = c.q_heads, t.kv_heads = c.kv_heads;
  t.head_dim = c.head_dim, t.intermediate = c.intermediate, t.seq = c.seq, t.batch = c.batch;
  t.rms_eps = c.rms_eps, t.rope_base = c.rope_base;
  t.lr = a.lr, t.beta1 = a.beta1, t.beta2 = a.beta2, t.eps = a.eps, t.weight_decay = a.weight_decay;
  t.threads = threads;
  return t;
}

struct Model {
  void* m = nullptr;
  Model(const Config& c, const std::vector<float>& params, int threads) {
    char err[512] = "";
    const auto offs = testbed::offsets(ParamLayout(c));
    const popper_torch_config tc = torch_config(c, threads);
    m = popper_torch_create(&tc, params.data(), offs.data(), offs.size(), err, sizeof err);
    if (!m) throw popper::Error(std::string("libtorch model: ") + err);
  }
  ~Model() { popper_torch_destroy(m); }
  double step(const Batch& b, float* grads, int update) {
    char err[512] = "";
    const double loss = popper_torch_step(m, b.tokens.data(), b.labels.data(), grads, update, err, sizeof err);
    if (std::isnan(loss)) throw popper::Error(std::string("libtorch step: ") + err);
    return loss;
  }
};

// "verified(...)" or "incorrect: ...".
std::string verify(const popper_train_shape& sh, int threads) {
  const Config tiny = popper_train_config(*popper_train_find_shape("tiny"));
  const ParamLayout L(tiny);
  const auto p = init_params(tiny, 7);
  const Batch b = copy_task_batch(tiny, 7, 0);
  const auto bound = testbed::gradient_bound(tiny, p, b.tokens, b.labels, 3, 3.0);
  std::vector<float> g(L.total, 0.0f);
  Model m(tiny, p, threads);
  const double loss = m.step(b, g.data(), 0);
  const auto e = testbed::compare<float>(L, bound, g, loss);
  if (!e.ok()) return "incorrect: tiny against FP64: " + e.text();
  const Config c = popper_train_config(sh);
  Model big(c, init_params(c, 1), threads);
  if (!std::isfinite(big.step(copy_task_batch(c, 1, 0), nullptr, 1))) return "incorrect: the loss is not finite";
  return "verified(tiny against FP64; this shape: finite loss)";
}
#endif

// The shapes a ceiling runs (set != "none"), for ceiling_open.
std::vector<const char*> g_names;
const char* train_shape_name(int i) { return g_names[static_cast<std::size_t>(i)]; }

// One training step (ceiling_time_calls' callback).
struct StepCall {
  Model* model;
  const Batch* batch;
  static void once(void* ctx) {
    auto* c = static_cast<StepCall*>(ctx);
    c->model->step(*c->batch, nullptr, 1);
  }
};

}  // namespace

int main(int argc, char** argv) {
#if POPPER_HAVE_TORCH
  if (!std::getenv("OMP_WAIT_POLICY")) {  // libgomp reads it when it loads: set it and start again
    setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
    execv("/proc/self/exe", argv);
    std::perror("ceiling_torch_train_raw: re-exec with OMP_WAIT_POLICY=PASSIVE");
    return 2;
  }
#endif
  for (int i = 0; i < POPPER_TRAIN_SHAPE_COUNT; ++i)
    if (std::strcmp(POPPER_TRAIN_SHAPES[i].set, "none") != 0) g_names.push_back(POPPER_TRAIN_SHAPES[i].name);
  ceiling_args a;
  const int opened = ceiling_open(argc, argv, "ceiling_torch_train_raw", static_cast<int>(g_names.size()),
                                  train_shape_name, nullptr, &a);
  if (opened >= 0) return opened;
  const std::vector<const char*>& names = g_names;
#if !POPPER_HAVE_TORCH
  std::printf("# skipped: requires libtorch: %s\n", POPPER_TORCH_MISSING);
  return 0;
#else
  // The configuration is the OpenBLAS kernel set libtorch's GEMMs run on (the
  // harness times it under each, as it does OpenBLAS itself).
  const std::string describe = popper_torch_describe();
  const std::string config =
      describe.find("+openblas") != std::string::npos ? std::string(openblas_get_corename()) : describe;
  if (a.probe) {
    std::printf("# config: %s\n", config.c_str());
    return 0;
  }
  if (!ceiling_precision_selected(&a, "f32")) return 0;
  try {
    ceiling_print_header();
    const std::string backend = "libtorch:" + config;
    for (const char* name : names) {
      if (!ceiling_shape_selected(&a, name)) continue;
      const popper_train_shape& sh = *popper_train_find_shape(name);
      const std::string verdict = verify(sh, a.threads);
      const Config c = popper_train_config(sh);
      const double flop = popper_train_flop(&sh);
      if (verdict.rfind("verified", 0) != 0) {
        ceiling_print_row("train", backend.c_str(), name, "f32", a.threads, 0, 0, 0.0, flop, 0.0, verdict.c_str());
        continue;
      }
      Model m(c, init_params(c, 1), a.threads);
      const Batch b = copy_task_batch(c, 1, 0);
      StepCall call{&m, &b};  // its first call warms the allocator caches and thread pools
      const long iters = ceiling_repetition_iterations(&a, StepCall::once, &call);
      for (int rep = 0; rep < a.reps; ++rep) {
        std::fprintf(stderr, "ceiling_torch_train_raw: %s threads %d rep %d (%ld steps)\n", name, a.threads, rep,
                     iters);
        const double per_step = ceiling_time_calls(&a, iters, StepCall::once, &call);
        ceiling_print_row("train", backend.c_str(), name, "f32", a.threads, rep, iters, per_step, flop, 0.0,
                          verdict.c_str());
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ceiling_torch_train_raw: %s\n", e.what());
    return 1;
  }
  return 0;
#endif
}
