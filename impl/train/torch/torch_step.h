/* The libtorch peer of the training step (contracts/train/training-step-v1.yaml,
 * FALSIFY-TRAIN-006; bench family train, ceiling tier): the same model as
 * impl/train/train.hpp written as a PyTorch user writes it in C++ (eager ATen
 * ops, autograd, torch::optim::AdamW), behind a C ABI so the contract tests can
 * dlopen it (libtorch takes seconds to load; linking it into every test process
 * would cost that per test) and the ceiling program can link it directly.
 *
 * Parameters come in popper's flat layout: offsets[] in the order
 *   embed, per layer (attn_norm wq bq wk bk wv bv wo ffn_norm w_gate w_up w_down), final_norm, lm_head
 * (2 + 12 L + 1 entries), gradients go out in the same layout. */
#ifndef POPPER_TRAIN_TORCH_STEP_H
#define POPPER_TRAIN_TORCH_STEP_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct popper_torch_config {
  int64_t vocab, hidden, layers, q_heads, kv_heads, head_dim, intermediate, seq, batch;
  float rms_eps;
  double rope_base;
  float lr, beta1, beta2, eps, weight_decay; /* AdamW, decay on the matrices only */
  int threads;                               /* at::set_num_threads and OpenBLAS's threads */
};

/* NULL on failure, with the reason in err. */
void* popper_torch_create(const struct popper_torch_config* c, const float* params, const uint64_t* offsets,
                          size_t n_offsets, char* err, size_t err_len);
/* Forward and backward (and the AdamW update when update != 0) of one batch;
 * gradients copied into grads (flat layout) when grads != NULL. Returns the
 * mean loss, or NaN with the reason in err. */
double popper_torch_step(void* model, const int64_t* tokens, const int64_t* labels, float* grads, int update, char* err,
                         size_t err_len);
/* The library's version, threading and BLAS, e.g. "1.13.0+openmp+openblas" (no commas: a CSV field). */
const char* popper_torch_describe(void);
void popper_torch_destroy(void* model);

#ifdef __cplusplus
}
#endif
#endif
