// llama.cpp (ggml) as Q4_K oracle and vendor library (contracts/q4k/q4k-gemv-v1.yaml):
// popper's C++ API over the pinned ggml packages (cmake/PopperGgml.cmake).
//
//   dequantize_row    = ggml's dequantize_row_q4_K            (libggml-base)
//   quantize_row_ref  = ggml's quantize_row_q4_K_ref          (libggml-base)
//   read_gguf         = gguf_init_from_file, every key, tensor and byte
//   CpuMatVec         = y = W x through ggml's graph API on its CPU backend
//                       (ggml_mul_mat; ggml quantizes x to Q8_K internally)
//
// ggml ships one CPU backend library per micro-architecture and popper loads
// one by path, deliberately: POPPER_GGML_CPU_VARIANT (e.g. "zen4", "haswell")
// when set, else the first of zen4, icelake, skylakex, haswell, sse42, x64
// whose library loads on this CPU (ggml_backend_load refuses a variant whose
// ggml_backend_score is 0). On an AVX-512 VNNI/BF16 CPU that is zen4.
//
// Without ggml (not compiled in, libraries missing) status().usable() is
// false with the reason; the entries then throw popper::Unsupported, and the
// tests that need them report "skipped: requires ggml".
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "impl/gguf/gguf.hpp"
#include "impl/q4k/q4k.hpp"

namespace popper::q4k::ggml {

struct Status {
  bool compiled = false;
  bool usable_ = false;
  std::string reason;       // why not usable
  std::string version;      // "3.22.1" (the npm packages), "" when not compiled
  std::string cpu_dir;      // where the CPU backend libraries are
  std::string cpu_variant;  // "zen4", ...
  bool usable() const { return compiled && usable_; }
};
// Probed once per process: loads the chosen CPU backend variant.
const Status& status();

// "ggml-cpu:<variant>".
std::string cpu_backend_tag();

void dequantize_row(std::span<const Block> blocks, std::span<float> out);
void quantize_row_ref(std::span<const float> x, std::span<Block> out);

// What gguf_init_from_file reads from a file (tensor data copied out).
struct GgufReadBack {
  std::uint32_t version = 0;
  std::size_t alignment = 0;
  std::size_t data_offset = 0;
  std::vector<std::pair<std::string, gguf::Value>> metadata;
  struct Tensor {
    std::string name;
    std::vector<std::uint64_t> ne;  // n_dims entries
    std::uint32_t type = 0;
    std::uint64_t offset = 0;
    std::vector<std::byte> data;
  };
  std::vector<Tensor> tensors;
};
// Throws popper::Error when ggml rejects the file.
GgufReadBack read_gguf(const std::string& path);

// A ggml CPU threadpool of `threads` workers that lives as long as this
// object, as llama.cpp's tools attach one to their contexts: without one every
// graph compute creates and joins its worker threads, which at 2 threads cost
// more than a small mat-vec itself (0.1 ms against 0.01 on a 2-vCPU host).
// handle() is the ggml_threadpool*, or nullptr (one thread, no ggml, or a
// backend without the entry points: then the per-call threads). Destroy it
// after everything it was attached to.
class CpuThreadpool {
 public:
  explicit CpuThreadpool(int threads);
  ~CpuThreadpool();
  CpuThreadpool(const CpuThreadpool&) = delete;
  CpuThreadpool& operator=(const CpuThreadpool&) = delete;
  void* handle() const { return pool_; }
  // Makes `backend` (a ggml_backend_t of the CPU backend) compute on this pool.
  void attach(void* backend) const;

 private:
  void* pool_ = nullptr;
};

// y = W x on ggml's CPU backend through its graph API, on a CpuThreadpool. With `repack`, W is
// placed in the backend's CPU_REPACK buffer type (the interleaved layout
// llama.cpp uses for weights) when it applies to the shape (an AVX2 variant,
// rows % 8 == 0); backend() says which layout W got.
class CpuMatVec {
 public:
  CpuMatVec(std::span<const Block> w, std::int64_t rows, std::int64_t cols, int threads, bool repack);
  ~CpuMatVec();
  CpuMatVec(const CpuMatVec&) = delete;
  CpuMatVec& operator=(const CpuMatVec&) = delete;
  void run(std::span<const float> x, std::span<float> y);
  // "ggml-cpu:zen4" or "ggml-cpu:zen4+repack" (what W's buffer actually is).
  std::string backend() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace popper::q4k::ggml
