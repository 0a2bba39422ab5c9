// Device tiers of GEMM (declared whether or not CUDA is compiled in):
//
//   C = alpha * op(A) * op(B) + beta * C      (FP32 accumulation everywhere)
//
// Host-span entry points (gemm_f32, gemm_f16, gemm_f32_strided_batched,
// hand_gemm_f32, hand_gemm_f16, hand_gemm_bf16) run on the GPU when popper::device::cuda_status().usable(),
// copying operands to the device and back; otherwise they decline to the CPU
// path (cpu::gemm) and say so through the returned Backend. Arguments are
// checked before any memory is touched, on either path.
//
// Device-span entry points (suffix _device) take operands already resident on
// the GPU (used by the bench's wrapped tier); they throw popper::Unsupported
// when no device is usable, since there is nothing to decline to.
//
// CublasContext owns exactly one cuBLAS handle and one non-blocking stream.
// Before EVERY GEMM it calls cublasSetStream(handle, stream()); the number of
// such calls and the last stream bound are observable (set_stream_calls(),
// last_bound_stream()) so tests can assert the binding. Math mode is explicit
// (default: CUBLAS_DEFAULT_MATH, no TF32); compute type is CUBLAS_COMPUTE_32F.
#pragma once
#include <cstdint>
#include <span>

#include "impl/gemm/gemm.hpp"

namespace popper::gemm::cuda {

enum class Backend { Cuda, Cpu };
const char* to_string(Backend);

enum class MathMode {
  Default,   // CUBLAS_DEFAULT_MATH: FP32 stays FP32 (no TF32)
  Pedantic,  // CUBLAS_PEDANTIC_MATH: no reduced-precision shortcuts at all
  Tf32,      // CUBLAS_TF32_TENSOR_OP_MATH: only when explicitly asked
};

// cudaStream_t without the CUDA headers (it is a pointer type).
using StreamHandle = void*;

// FP16 values as IEEE binary16 bit patterns (host side has no half type in C++20).
using half_bits = std::uint16_t;
half_bits float_to_half(float);  // round to nearest even
float half_to_float(half_bits);
// BF16 values as bit patterns (the high half of a binary32).
using bf16_bits = std::uint16_t;
bf16_bits float_to_bf16(float);  // round to nearest even; NaN stays NaN
float bf16_to_float(bf16_bits);

// Operands resident in device memory: pointer plus length in elements.
template <class T>
struct DeviceSpan {
  T* data = nullptr;
  std::size_t size = 0;
};

// Batched layout: matrix i of X starts at x + i * stride_x (elements).
struct BatchStrides {
  std::int64_t count = 1;
  std::int64_t stride_a = 0, stride_b = 0, stride_c = 0;
};

class CublasContext {
 public:
  // With a usable device: cublasCreate + a non-blocking stream + math mode.
  // Without one: a declined context whose entry points run on the CPU.
  explicit CublasContext(MathMode mode = MathMode::Default);
  ~CublasContext();
  CublasContext(const CublasContext&) = delete;
  CublasContext& operator=(const CublasContext&) = delete;

  bool on_device() const;  // holds a live cuBLAS handle
  MathMode math_mode() const;
  StreamHandle stream() const;             // nullptr when declined
  StreamHandle last_bound_stream() const;  // stream of the last cublasSetStream
  std::uint64_t set_stream_calls() const;  // cublasSetStream calls so far
  std::uint64_t gemm_calls() const;        // GEMMs issued to cuBLAS so far
  static std::uint64_t handles_created();  // process-wide cublasCreate count

  Backend gemm_f32(const GemmShape&, float alpha, std::span<const float> a, std::span<const float> b, float beta,
                   std::span<float> c);
  // FP16 inputs, FP32 accumulation and FP32 output (cublasGemmEx, CUDA_R_16F in).
  Backend gemm_f16(const GemmShape&, float alpha, std::span<const half_bits> a, std::span<const half_bits> b,
                   float beta, std::span<float> c);
  Backend gemm_f32_strided_batched(const GemmShape&, const BatchStrides&, float alpha, std::span<const float> a,
                                   std::span<const float> b, float beta, std::span<float> c);

  // Device-resident operands (no copies); throws Unsupported without a device.
  void gemm_f32_device(const GemmShape&, float alpha, DeviceSpan<const float> a, DeviceSpan<const float> b, float beta,
                       DeviceSpan<float> c);
  // FP16 / BF16 inputs, FP32 accumulation and output (cublasGemmEx, compute 32F).
  void gemm_f16_device(const GemmShape&, float alpha, DeviceSpan<const half_bits> a, DeviceSpan<const half_bits> b,
                       float beta, DeviceSpan<float> c);
  void gemm_bf16_device(const GemmShape&, float alpha, DeviceSpan<const bf16_bits> a, DeviceSpan<const bf16_bits> b,
                        float beta, DeviceSpan<float> c);
  void synchronize() const;

 private:
  void bind_stream();  // cublasSetStream before every GEMM
  // One cublasGemmEx on resident operands of element type `type` (a cudaDataType_t).
  void gemm_ex_device(const GemmShape&, float alpha, const void* a, const void* b, int type, float beta, float* c,
                      const char* what);
  void* handle_ = nullptr;
  StreamHandle stream_ = nullptr;
  StreamHandle last_bound_ = nullptr;
  std::uint64_t set_stream_calls_ = 0;
  std::uint64_t gemm_calls_ = 0;
  MathMode mode_;
};

// popper's own kernels (impl/gemm/cuda/):
//   hand_gemm_f32    FP32 on the SIMT cores (hand_gemm.cu: 128 x 128 block
//                    tiles, 8 x 8 per thread, double-buffered shared memory)
//   hand_gemm_f16    FP16 or BF16 inputs on the tensor cores, FP32 accumulation
//   hand_gemm_bf16   and output (hand_gemm_tc.cu: WMMA 16 x 16 x 16, cp.async)
// Every layout and transpose, ragged shapes, alpha and beta (beta == 0: C
// not read). The host-span entries decline to cpu::gemm (16-bit inputs
// widened to FP32 exactly) without a device. m, n, k below 2^31 and m at most
// 65535 * 128, else InvalidArgument.
Backend hand_gemm_f32(const GemmShape&, float alpha, std::span<const float> a, std::span<const float> b, float beta,
                      std::span<float> c);
Backend hand_gemm_f16(const GemmShape&, float alpha, std::span<const half_bits> a, std::span<const half_bits> b,
                      float beta, std::span<float> c);
Backend hand_gemm_bf16(const GemmShape&, float alpha, std::span<const bf16_bits> a, std::span<const bf16_bits> b,
                       float beta, std::span<float> c);
// The same kernels on device-resident operands, launched on `stream` (must
// be a stream the caller created; never the legacy default stream). Throw
// Unsupported without a device.
void hand_gemm_f32_device(const GemmShape&, float alpha, DeviceSpan<const float> a, DeviceSpan<const float> b,
                          float beta, DeviceSpan<float> c, StreamHandle stream);
void hand_gemm_f16_device(const GemmShape&, float alpha, DeviceSpan<const half_bits> a, DeviceSpan<const half_bits> b,
                          float beta, DeviceSpan<float> c, StreamHandle stream);
void hand_gemm_bf16_device(const GemmShape&, float alpha, DeviceSpan<const bf16_bits> a, DeviceSpan<const bf16_bits> b,
                           float beta, DeviceSpan<float> c, StreamHandle stream);
// The tensor-core entries (f16, bf16) run a second kernel on compute
// capability 9.0 when the build has its sm_90a image (hand_gemm_wgmma_sm90a.cu:
// wgmma, 128 x 256 block tiles) and both operands allow 16-byte reads; every
// other call runs the WMMA kernel. POPPER_CUDA_TC_KERNEL=wmma forces the WMMA
// kernel; =wgmma takes wgmma for every call whose operands allow it and
// fails the call (cudaErrorNotSupported) on a device without it.
bool hand_gemm_tc_wgmma_available();       // the current device runs the wgmma kernel
std::uint64_t hand_gemm_tc_wgmma_calls();  // calls that took it so far (process-wide)

// RAII device allocation of `count` elements of T (cudaMalloc / cudaFree).
// Throws Unsupported when no device is usable.
class DeviceMemory {
 public:
  explicit DeviceMemory(std::size_t bytes);
  ~DeviceMemory();
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
  void* data() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }
  // Copies on `stream`, ordered with the kernels queued there (never the
  // legacy default stream, which a non-blocking stream does not wait for).
  // upload returns once the host buffer may be reused; download once the
  // data is on the host. A null stream means a synchronous copy.
  void upload(const void* host, std::size_t bytes, StreamHandle stream = nullptr);
  void download(void* host, std::size_t bytes, StreamHandle stream = nullptr) const;

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

template <class T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t count) : mem_(count * sizeof(T)), count_(count) {}
  void upload(std::span<const T> host, StreamHandle stream = nullptr) {
    mem_.upload(host.data(), host.size_bytes(), stream);
  }
  void download(std::span<T> host, StreamHandle stream = nullptr) const {
    mem_.download(host.data(), host.size_bytes(), stream);
  }
  DeviceSpan<T> span() { return {static_cast<T*>(mem_.data()), count_}; }
  DeviceSpan<const T> cspan() const { return {static_cast<const T*>(mem_.data()), count_}; }

 private:
  DeviceMemory mem_;
  std::size_t count_;
};

// Device time between start() and stop() on one stream (two CUDA events):
// what the GEMM bench's device tiers time. Throws Unsupported without a device.
class StreamTimer {
 public:
  explicit StreamTimer(StreamHandle stream);
  ~StreamTimer();
  StreamTimer(const StreamTimer&) = delete;
  StreamTimer& operator=(const StreamTimer&) = delete;
  void start();
  double stop_seconds();  // records the stop event and waits for it

 private:
  StreamHandle stream_;
  void* start_ = nullptr;
  void* stop_ = nullptr;
};

// Element count a strided batch needs for one operand: (count-1)*stride + one matrix.
std::size_t batched_required(std::size_t one_matrix, std::int64_t count, std::int64_t stride);

}  // namespace popper::gemm::cuda
