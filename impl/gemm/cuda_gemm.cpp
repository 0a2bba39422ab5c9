// Device tiers of GEMM, host side. Every entry checks its arguments first,
// then runs on the GPU when one is usable, else declines to cpu::gemm.
//
// Row-major operands are handed to column-major cuBLAS as the transposed
// problem over the same memory:  C^T = op(B)^T op(A)^T, i.e.
//   cublas(op_b, op_a, n, m, k, alpha, B, ldb, A, lda, beta, C, ldc).
#include "impl/gemm/cuda_gemm.hpp"

#include <atomic>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "impl/common/device.hpp"
#include "impl/gemm/cpu_gemm.hpp"
#include "impl/gemm/reference.hpp"
#include "popper/error.hpp"
#include "popper/mutant.hpp"

#if POPPER_HAVE_CUDA
#include <cuda_runtime.h>

#include "impl/gemm/cublas_api.hpp"

#include "impl/gemm/cuda/hand_gemm_launch.hpp"
#endif

namespace popper::gemm::cuda {
namespace {

std::atomic<std::uint64_t> g_handles_created{0};

bool device_usable() { return popper::device::cuda_status().usable(); }

[[noreturn]] void no_device(const char* what) {
  throw Unsupported(std::string(what) + ": no usable CUDA device (" + popper::device::cuda_status().reason + ")");
}

struct BatchNeed {
  std::size_t a, b, c;
};

BatchNeed check_batched(const GemmShape& s0, const BatchStrides& bs, std::size_t a_len, std::size_t b_len,
                        std::size_t c_len) {
  // Shape and ld validity first (lengths of one matrix are checked below).
  check_gemm_args(s0, static_cast<std::size_t>(-1), static_cast<std::size_t>(-1), static_cast<std::size_t>(-1));
  if (bs.count < 0 || bs.stride_a < 0 || bs.stride_b < 0 || bs.stride_c < 0) {
    throw InvalidArgument("gemm_f32_strided_batched: negative batch count or stride");
  }
  const GemmShape s = with_tight_ld(s0);
  const bool reads_ab = s.m > 0 && s.n > 0 && s.k > 0;
  const auto ra = s.op_a == Op::NoTrans ? required_elements(s.layout, s.m, s.k, s.lda)
                                        : required_elements(s.layout, s.k, s.m, s.lda);
  const auto rb = s.op_b == Op::NoTrans ? required_elements(s.layout, s.k, s.n, s.ldb)
                                        : required_elements(s.layout, s.n, s.k, s.ldb);
  const auto rc = required_elements(s.layout, s.m, s.n, s.ldc);
  if (bs.count > 1 && rc > 0 && static_cast<std::size_t>(bs.stride_c) < rc) {
    throw InvalidArgument("gemm_f32_strided_batched: stride_c " + std::to_string(bs.stride_c) +
                          " makes the C matrices overlap (one needs " + std::to_string(rc) + ")");
  }
  const BatchNeed need{reads_ab ? batched_required(ra, bs.count, bs.stride_a) : 0,
                       reads_ab ? batched_required(rb, bs.count, bs.stride_b) : 0,
                       batched_required(rc, bs.count, bs.stride_c)};
  if (a_len < need.a) throw BufferTooSmall("A", need.a, a_len);
  if (b_len < need.b) throw BufferTooSmall("B", need.b, b_len);
  if (c_len < need.c) throw BufferTooSmall("C", need.c, c_len);
  return need;
}

#if POPPER_HAVE_CUDA
void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Error(std::string(what) + ": " + cudaGetErrorString(e));
}
void check_cublas(cublasStatus_t st, const char* what) {
  if (st != CUBLAS_STATUS_SUCCESS) throw Error(std::string(what) + ": " + cublas_api().status_string(st));
}
cublasOperation_t op_of(Op o) { return o == Op::NoTrans ? CUBLAS_OP_N : CUBLAS_OP_T; }
cublasMath_t math_of(MathMode m) {
  if (POPPER_MUTANT("cublas-tf32-math")) return CUBLAS_TF32_TENSOR_OP_MATH;
  switch (m) {
    case MathMode::Pedantic: return CUBLAS_PEDANTIC_MATH;
    case MathMode::Tf32: return CUBLAS_TF32_TENSOR_OP_MATH;
    default: return CUBLAS_DEFAULT_MATH;
  }
}

// Column-major arguments of one cuBLAS call for a (possibly row-major) shape.
struct ColMajorCall {
  cublasOperation_t ta, tb;
  int m, n, k, lda, ldb, ldc;
  bool swap;  // operands A and B exchange places (row-major)
};
ColMajorCall to_col_major(const GemmShape& s) {
  const int m = static_cast<int>(s.m), n = static_cast<int>(s.n), k = static_cast<int>(s.k);
  if (s.layout == Layout::ColMajor) {
    return {op_of(s.op_a),           op_of(s.op_b),           m,    n, k, static_cast<int>(s.lda),
            static_cast<int>(s.ldb), static_cast<int>(s.ldc), false};
  }
  return {op_of(s.op_b),           op_of(s.op_a),           n,   m, k, static_cast<int>(s.ldb),
          static_cast<int>(s.lda), static_cast<int>(s.ldc), true};
}

// Device copy of a host span (RAII), used by the host-span entry points.
template <class T>
struct Staged {
  DeviceBuffer<T> buf;
  Staged(std::span<const T> host, StreamHandle stream) : buf(host.size() == 0 ? 1 : host.size()) {
    if (!host.empty()) buf.upload(host, stream);
  }
};

// Folds layout and op into (row, col) strides for the hand kernels, and
// allows 16-byte reads of an operand along its contiguous dimension when its
// other stride and base address are multiples of 16 bytes (elem_bytes each).
// Mutation points (wrappers of a right kernel that the device tests must
// catch): op(B) taken as NoTrans, the ragged last block rows dropped, beta
// dropped, 16-byte reads allowed whatever the alignment.
detail::StridedOperands strided(const GemmShape& s, float alpha, const void* a, const void* b, float beta, float* c,
                                std::size_t elem_bytes) {
  const bool row = s.layout == Layout::RowMajor;
  detail::StridedOperands o{};
  o.m = s.m;
  o.n = s.n;
  o.k = s.k;
  o.alpha = alpha;
  o.beta = POPPER_MUTANT("gemm-hand-cuda-beta-dropped") ? 0.0f : beta;
  o.a = a;
  o.b = b;
  o.c = c;
  const bool a_rowlike = (s.op_a == Op::NoTrans) == row;
  o.a_rs = a_rowlike ? s.lda : 1;
  o.a_cs = a_rowlike ? 1 : s.lda;
  const Op op_b = POPPER_MUTANT("gemm-hand-cuda-ignores-op-b") ? Op::NoTrans : s.op_b;
  const bool b_rowlike = (op_b == Op::NoTrans) == row;
  o.b_rs = b_rowlike ? s.ldb : 1;
  o.b_cs = b_rowlike ? 1 : s.ldb;
  o.c_rs = row ? s.ldc : 1;
  o.c_cs = row ? 1 : s.ldc;
  if (POPPER_MUTANT("gemm-hand-cuda-drops-edge") && o.m > detail::kSimtTileM) o.m -= o.m % detail::kSimtTileM;
  // The kernels read A along its columns when a_cs == 1, else along its rows;
  // B along its rows (op(B)'s k) when b_rs == 1, else along its columns.
  const std::int64_t a_other = o.a_cs == 1 ? o.a_rs : o.a_rs == 1 ? o.a_cs : 0;
  const std::int64_t b_other = o.b_rs == 1 ? o.b_cs : o.b_cs == 1 ? o.b_rs : 0;
  const auto vector = [&](const void* base, std::int64_t other) {
    return POPPER_MUTANT("gemm-hand-cuda-unaligned-vector") ||
           (other > 1 && other * static_cast<std::int64_t>(elem_bytes) % 16 == 0 &&
            reinterpret_cast<std::uintptr_t>(base) % 16 == 0);
  };
  o.a_vector = vector(a, a_other);
  o.b_vector = vector(b, b_other);
  return o;
}
#endif

}  // namespace

const char* to_string(Backend b) { return b == Backend::Cuda ? "cuda" : "cpu"; }

// IEEE binary16 <-> binary32, round to nearest even (host side, no half type in C++20).
half_bits float_to_half(float f) {
  std::uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const std::uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) {  // Inf or NaN
    return static_cast<half_bits>(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0u));
  }
  if (absx >= 0x477ff000u) return static_cast<half_bits>(sign | 0x7c00u);  // rounds to >= 65520: Inf
  if (absx < 0x38800000u) {                                                // result is subnormal or zero
    if (absx < 0x33000000u) return static_cast<half_bits>(sign);           // < 2^-25: rounds to 0
    const std::uint32_t mant = (absx & 0x7fffffu) | 0x800000u;
    const int shift = 126 - static_cast<int>(absx >> 23);  // 14 + (113 - exp)
    const std::uint32_t q = mant >> shift;
    const std::uint32_t rem = mant & ((1u << shift) - 1u);
    const std::uint32_t half = 1u << (shift - 1);
    const std::uint32_t r = q + ((rem > half || (rem == half && (q & 1u))) ? 1u : 0u);
    return static_cast<half_bits>(sign | r);
  }
  // Normal: rebias exponent (127 -> 15) and round 23 -> 10 mantissa bits.
  const std::uint32_t rebased = absx - 0x38000000u;
  const std::uint32_t q = rebased >> 13;
  const std::uint32_t rem = rebased & 0x1fffu;
  const std::uint32_t r = q + ((rem > 0x1000u || (rem == 0x1000u && (q & 1u))) ? 1u : 0u);
  return static_cast<half_bits>(sign | r);
}

float half_to_float(half_bits h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  std::uint32_t mant = h & 0x3ffu;
  std::uint32_t x;
  if (exp == 0) {
    if (mant == 0) {
      x = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        mant <<= 1;
        ++e;
      } while ((mant & 0x400u) == 0);
      x = sign | (static_cast<std::uint32_t>(112 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
  } else if (exp == 0x1f) {
    x = sign | 0x7f800000u | (mant << 13);
  } else {
    x = sign | ((exp + 112u) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &x, sizeof f);
  return f;
}

// bfloat16 is the high half of binary32: round to nearest even on the low half.
bf16_bits float_to_bf16(float f) {
  std::uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<bf16_bits>((x >> 16) | 0x40u);  // NaN stays NaN
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<bf16_bits>(x >> 16);
}

float bf16_to_float(bf16_bits h) {
  const std::uint32_t x = static_cast<std::uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &x, sizeof f);
  return f;
}

std::size_t batched_required(std::size_t one_matrix, std::int64_t count, std::int64_t stride) {
  if (count <= 0 || one_matrix == 0) return 0;
  std::size_t total = 0;
  if (__builtin_mul_overflow(static_cast<std::size_t>(count - 1), static_cast<std::size_t>(stride), &total) ||
      __builtin_add_overflow(total, one_matrix, &total)) {
    throw InvalidArgument("gemm: batched footprint overflows size_t");
  }
  return total;
}

// ---------------------------------------------------------------- DeviceMemory
DeviceMemory::DeviceMemory(std::size_t bytes) : bytes_(bytes) {
  if (!device_usable()) no_device("DeviceMemory");
#if POPPER_HAVE_CUDA
  check_cuda(cudaMalloc(&ptr_, bytes == 0 ? 1 : bytes), "cudaMalloc");
#endif
}

DeviceMemory::~DeviceMemory() {
#if POPPER_HAVE_CUDA
  if (ptr_ != nullptr) cudaFree(ptr_);
#endif
}

void DeviceMemory::upload(const void* host, std::size_t bytes, StreamHandle stream) {
  if (bytes > bytes_) throw BufferTooSmall("device", bytes, bytes_);
#if POPPER_HAVE_CUDA
  if (stream != nullptr)
    check_cuda(cudaMemcpyAsync(ptr_, host, bytes, cudaMemcpyHostToDevice, static_cast<cudaStream_t>(stream)),
               "cudaMemcpyAsync H2D");
  else check_cuda(cudaMemcpy(ptr_, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy H2D");
#else
  (void)host;
  (void)stream;
#endif
}

void DeviceMemory::download(void* host, std::size_t bytes, StreamHandle stream) const {
  if (bytes > bytes_) throw BufferTooSmall("device", bytes, bytes_);
#if POPPER_HAVE_CUDA
  if (stream != nullptr) {
    auto st = static_cast<cudaStream_t>(stream);
    check_cuda(cudaMemcpyAsync(host, ptr_, bytes, cudaMemcpyDeviceToHost, st), "cudaMemcpyAsync D2H");
    check_cuda(cudaStreamSynchronize(st), "cudaStreamSynchronize after D2H");
  } else {
    check_cuda(cudaMemcpy(host, ptr_, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy D2H");
  }
#else
  (void)host;
  (void)stream;
#endif
}

// ----------------------------------------------------------------- StreamTimer
StreamTimer::StreamTimer(StreamHandle stream) : stream_(stream) {
  if (!device_usable()) no_device("StreamTimer");
#if POPPER_HAVE_CUDA
  cudaEvent_t a = nullptr, b = nullptr;
  check_cuda(cudaEventCreate(&a), "cudaEventCreate");
  if (const cudaError_t e = cudaEventCreate(&b); e != cudaSuccess) {
    cudaEventDestroy(a);
    check_cuda(e, "cudaEventCreate");
  }
  start_ = a, stop_ = b;
#endif
}

StreamTimer::~StreamTimer() {
#if POPPER_HAVE_CUDA
  if (start_ != nullptr) cudaEventDestroy(static_cast<cudaEvent_t>(start_));
  if (stop_ != nullptr) cudaEventDestroy(static_cast<cudaEvent_t>(stop_));
#endif
}

void StreamTimer::start() {
#if POPPER_HAVE_CUDA
  check_cuda(cudaEventRecord(static_cast<cudaEvent_t>(start_), static_cast<cudaStream_t>(stream_)), "cudaEventRecord");
#endif
}

double StreamTimer::stop_seconds() {
  float ms = 0.0f;
#if POPPER_HAVE_CUDA
  const auto stop = static_cast<cudaEvent_t>(stop_);
  check_cuda(cudaEventRecord(stop, static_cast<cudaStream_t>(stream_)), "cudaEventRecord");
  check_cuda(cudaEventSynchronize(stop), "cudaEventSynchronize");
  check_cuda(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(start_), stop), "cudaEventElapsedTime");
#endif
  return static_cast<double>(ms) * 1e-3;
}

// The CPU path every entry declines to: exactly cpu::gemm with its defaults.
template <class T>
void decline_to_cpu(const GemmShape& s, T alpha, std::span<const T> a, std::span<const T> b, T beta, std::span<T> c) {
  if (POPPER_MUTANT("gemm-decline-uses-reference")) return reference::gemm<T>(s, alpha, a, b, beta, c);
  cpu::gemm(s, alpha, a, b, beta, c);
}

// --------------------------------------------------------------- CublasContext
CublasContext::CublasContext(MathMode mode) : mode_(mode) {
#if POPPER_HAVE_CUDA
  if (!device_usable()) return;  // declined context: every entry runs on the CPU
  cublasHandle_t h = nullptr;
  check_cublas(cublas_api().create(&h), "cublasCreate");
  handle_ = h;
  ++g_handles_created;
  cudaStream_t st = nullptr;
  if (cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking) != cudaSuccess ||
      cublas_api().set_math_mode(h, math_of(mode)) != CUBLAS_STATUS_SUCCESS) {
    if (st != nullptr) cudaStreamDestroy(st);
    cublas_api().destroy(h);
    throw Error("CublasContext: stream creation or cublasSetMathMode failed");
  }
  stream_ = st;
#endif
}

CublasContext::~CublasContext() {
#if POPPER_HAVE_CUDA
  if (handle_ != nullptr) {
    cudaStreamSynchronize(static_cast<cudaStream_t>(stream_));
    cublas_api().destroy(static_cast<cublasHandle_t>(handle_));
    cudaStreamDestroy(static_cast<cudaStream_t>(stream_));
  }
#endif
}

bool CublasContext::on_device() const { return handle_ != nullptr; }
MathMode CublasContext::math_mode() const { return mode_; }
StreamHandle CublasContext::stream() const { return stream_; }
StreamHandle CublasContext::last_bound_stream() const { return last_bound_; }
std::uint64_t CublasContext::set_stream_calls() const { return set_stream_calls_; }
std::uint64_t CublasContext::gemm_calls() const { return gemm_calls_; }
std::uint64_t CublasContext::handles_created() { return g_handles_created.load(); }

void CublasContext::bind_stream() {
#if POPPER_HAVE_CUDA
  if (POPPER_MUTANT("cublas-skip-set-stream")) return;
  check_cublas(cublas_api().set_stream(static_cast<cublasHandle_t>(handle_), static_cast<cudaStream_t>(stream_)),
               "cublasSetStream");
  last_bound_ = stream_;
  ++set_stream_calls_;
#endif
}

void CublasContext::synchronize() const {
#if POPPER_HAVE_CUDA
  if (handle_ != nullptr)
    check_cuda(cudaStreamSynchronize(static_cast<cudaStream_t>(stream_)), "cudaStreamSynchronize");
#endif
}

void CublasContext::gemm_ex_device(const GemmShape& s0, float alpha, const void* a, const void* b, int type, float beta,
                                   float* c, const char* what) {
  if (!on_device()) no_device(what);
#if POPPER_HAVE_CUDA
  const GemmShape s = with_tight_ld(s0);
  if (s.m == 0 || s.n == 0) return;
  const ColMajorCall cm = to_col_major(s);
  const auto in = static_cast<cudaDataType_t>(type);
  const bool f16_compute = POPPER_MUTANT("cublas-f16-compute") && in == CUDA_R_16F;
  bind_stream();
  check_cublas(cublas_api().gemm_ex(static_cast<cublasHandle_t>(handle_), cm.ta, cm.tb, cm.m, cm.n, cm.k, &alpha,
                                    cm.swap ? b : a, in, cm.lda, cm.swap ? a : b, in, cm.ldb, &beta, c, CUDA_R_32F,
                                    cm.ldc, f16_compute ? CUBLAS_COMPUTE_16F : CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
               what);
  ++gemm_calls_;
#else
  (void)s0, (void)alpha, (void)a, (void)b, (void)type, (void)beta, (void)c;
#endif
}

#if POPPER_HAVE_CUDA
constexpr int kF32 = CUDA_R_32F, kF16 = CUDA_R_16F, kBF16 = CUDA_R_16BF;
#else
constexpr int kF32 = 0, kF16 = 2, kBF16 = 14;  // never used without CUDA (no device)
#endif

void CublasContext::gemm_f32_device(const GemmShape& s, float alpha, DeviceSpan<const float> a,
                                    DeviceSpan<const float> b, float beta, DeviceSpan<float> c) {
  check_gemm_args(s, a.size, b.size, c.size);
  gemm_ex_device(s, alpha, a.data, b.data, kF32, beta, c.data, "CublasContext::gemm_f32_device (cublasGemmEx f32)");
}

void CublasContext::gemm_f16_device(const GemmShape& s, float alpha, DeviceSpan<const half_bits> a,
                                    DeviceSpan<const half_bits> b, float beta, DeviceSpan<float> c) {
  check_gemm_args(s, a.size, b.size, c.size);
  gemm_ex_device(s, alpha, a.data, b.data, kF16, beta, c.data, "CublasContext::gemm_f16_device (cublasGemmEx f16)");
}

void CublasContext::gemm_bf16_device(const GemmShape& s, float alpha, DeviceSpan<const bf16_bits> a,
                                     DeviceSpan<const bf16_bits> b, float beta, DeviceSpan<float> c) {
  check_gemm_args(s, a.size, b.size, c.size);
  gemm_ex_device(s, alpha, a.data, b.data, kBF16, beta, c.data, "CublasContext::gemm_bf16_device (cublasGemmEx bf16)");
}

Backend CublasContext::gemm_f32(const GemmShape& s, float alpha, std::span<const float> a, std::span<const float> b,
                                float beta, std::span<float> c) {
  check_gemm_args(s, a.size(), b.size(), c.size());
  if (!on_device()) {
    decline_to_cpu(s, alpha, a, b, beta, c);
    return Backend::Cpu;
  }
#if POPPER_HAVE_CUDA
  Staged<float> da(a, stream_), db(b, stream_), dc(std::span<const float>(c.data(), c.size()), stream_);
  gemm_f32_device(s, alpha, {da.buf.cspan().data, a.size()}, {db.buf.cspan().data, b.size()}, beta,
                  {dc.buf.span().data, c.size()});
  if (!c.empty()) dc.buf.download(c, stream_);
  synchronize();
#endif
  return Backend::Cuda;
}

Backend CublasContext::gemm_f16(const GemmShape& s0, float alpha, std::span<const half_bits> a,
                                std::span<const half_bits> b, float beta, std::span<float> c) {
  check_gemm_args(s0, a.size(), b.size(), c.size());
  if (!on_device()) {
    std::vector<float> af(a.size()), bf(b.size());
    for (std::size_t i = 0; i < a.size(); ++i) af[i] = half_to_float(a[i]);
    for (std::size_t i = 0; i < b.size(); ++i) bf[i] = half_to_float(b[i]);
    decline_to_cpu(s0, alpha, std::span<const float>(af), std::span<const float>(bf), beta, c);
    return Backend::Cpu;
  }
#if POPPER_HAVE_CUDA
  Staged<half_bits> da(a, stream_), db(b, stream_);
  Staged<float> dc(std::span<const float>(c.data(), c.size()), stream_);
  gemm_f16_device(s0, alpha, {da.buf.cspan().data, a.size()}, {db.buf.cspan().data, b.size()}, beta,
                  {dc.buf.span().data, c.size()});
  if (!c.empty()) dc.buf.download(c, stream_);
  synchronize();
#endif
  return Backend::Cuda;
}

Backend CublasContext::gemm_f32_strided_batched(const GemmShape& s0, const BatchStrides& bs, float alpha,
                                                std::span<const float> a, std::span<const float> b, float beta,
                                                std::span<float> c) {
  check_batched(s0, bs, a.size(), b.size(), c.size());
  const GemmShape s = with_tight_ld(s0);
  if (!on_device()) {
    for (std::int64_t i = 0; i < bs.count; ++i) {
      const auto sub = [&](auto span, std::int64_t stride) {
        const auto off = static_cast<std::size_t>(i * stride);
        return span.subspan(off < span.size() ? off : span.size());
      };
      decline_to_cpu(s, alpha, sub(a, bs.stride_a), sub(b, bs.stride_b), beta, sub(c, bs.stride_c));
    }
    return Backend::Cpu;
  }
#if POPPER_HAVE_CUDA
  Staged<float> da(a, stream_), db(b, stream_), dc(std::span<const float>(c.data(), c.size()), stream_);
  if (s.m > 0 && s.n > 0 && bs.count > 0) {
    const ColMajorCall cm = to_col_major(s);
    const float* pa = da.buf.cspan().data;
    const float* pb = db.buf.cspan().data;
    bind_stream();
    check_cublas(cublas_api().gemm_strided_batched_ex(
                     static_cast<cublasHandle_t>(handle_), cm.ta, cm.tb, cm.m, cm.n, cm.k, &alpha, cm.swap ? pb : pa,
                     CUDA_R_32F, cm.lda, cm.swap ? bs.stride_b : bs.stride_a, cm.swap ? pa : pb, CUDA_R_32F, cm.ldb,
                     cm.swap ? bs.stride_a : bs.stride_b, &beta, dc.buf.span().data, CUDA_R_32F, cm.ldc, bs.stride_c,
                     static_cast<int>(bs.count), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                 "cublasGemmStridedBatchedEx");
    ++gemm_calls_;
  }
  if (!c.empty()) dc.buf.download(c, stream_);
  synchronize();
#endif
  return Backend::Cuda;
}

// ------------------------------------------------------------------ hand kernels
namespace {

// The hand kernels index m, n, k in 31 bits and put the row blocks on the grid's y.
void check_hand_shape(const GemmShape& s, const char* what) {
  constexpr std::int64_t kMax = (std::int64_t{1} << 31) - 1;
  if (s.m > kMax || s.n > kMax || s.k > kMax || (s.m + 127) / 128 > 65535)
    throw InvalidArgument(std::string(what) + ": m, n, k must be below 2^31 and m at most 65535 * 128");
}

enum class HandKernel { F32, F16, Bf16 };

// Checks the arguments and queues the kernel on `stream`.
template <class T>
void hand_device(const char* what, HandKernel kernel, const GemmShape& s0, float alpha, DeviceSpan<const T> a,
                 DeviceSpan<const T> b, float beta, DeviceSpan<float> c, StreamHandle stream) {
  check_gemm_args(s0, a.size, b.size, c.size);
  check_hand_shape(s0, what);
  if (!device_usable()) no_device(what);
  if (stream == nullptr) throw InvalidArgument(std::string(what) + ": pass an explicit stream, not the default stream");
#if POPPER_HAVE_CUDA
  const detail::StridedOperands o = strided(with_tight_ld(s0), alpha, a.data, b.data, beta, c.data, sizeof(T));
  const int launched =
      kernel == HandKernel::F32
          ? detail::launch_hand_gemm_f32(o, stream)
          : detail::launch_hand_gemm_tc(kernel == HandKernel::Bf16 ? detail::HalfType::Bf16 : detail::HalfType::F16, o,
                                        stream);
  check_cuda(static_cast<cudaError_t>(launched), what);
#else
  (void)kernel, (void)alpha, (void)beta;
#endif
}

// Host operands: staged on a stream of its own, or declined to cpu::gemm on
// the inputs widened to FP32 (`widen`) when no device is usable.
template <class T, class Device, class Widen>
Backend hand_host(const char* what, const GemmShape& s, float alpha, std::span<const T> a, std::span<const T> b,
                  float beta, std::span<float> c, Device device, Widen widen) {
  check_gemm_args(s, a.size(), b.size(), c.size());
  check_hand_shape(s, what);
  if (!device_usable()) {
    if constexpr (std::is_same_v<T, float>) {
      decline_to_cpu(s, alpha, a, b, beta, c);
    } else {
      std::vector<float> af(a.size()), bf(b.size());
      for (std::size_t i = 0; i < a.size(); ++i) af[i] = widen(a[i]);
      for (std::size_t i = 0; i < b.size(); ++i) bf[i] = widen(b[i]);
      decline_to_cpu(s, alpha, std::span<const float>(af), std::span<const float>(bf), beta, c);
    }
    return Backend::Cpu;
  }
#if POPPER_HAVE_CUDA
  cudaStream_t st = nullptr;
  check_cuda(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  struct StreamGuard {
    cudaStream_t s;
    ~StreamGuard() { cudaStreamDestroy(s); }
  } guard{st};
  Staged<T> da(a, st), db(b, st);
  Staged<float> dc(std::span<const float>(c.data(), c.size()), st);
  device(s, alpha, DeviceSpan<const T>{da.buf.cspan().data, a.size()},
         DeviceSpan<const T>{db.buf.cspan().data, b.size()}, beta, DeviceSpan<float>{dc.buf.span().data, c.size()}, st);
  if (!c.empty()) dc.buf.download(c, st);
#else
  (void)device;
#endif
  return Backend::Cuda;
}

float identity(float x) { return x; }

}  // namespace

void hand_gemm_f32_device(const GemmShape& s, float alpha, DeviceSpan<const float> a, DeviceSpan<const float> b,
                          float beta, DeviceSpan<float> c, StreamHandle stream) {
  hand_device("hand_gemm_f32_device", HandKernel::F32, s, alpha, a, b, beta, c, stream);
}
void hand_gemm_f16_device(const GemmShape& s, float alpha, DeviceSpan<const half_bits> a, DeviceSpan<const half_bits> b,
                          float beta, DeviceSpan<float> c, StreamHandle stream) {
  hand_device("hand_gemm_f16_device", HandKernel::F16, s, alpha, a, b, beta, c, stream);
}
void hand_gemm_bf16_device(const GemmShape& s, float alpha, DeviceSpan<const bf16_bits> a,
                           DeviceSpan<const bf16_bits> b, float beta, DeviceSpan<float> c, StreamHandle stream) {
  hand_device("hand_gemm_bf16_device", HandKernel::Bf16, s, alpha, a, b, beta, c, stream);
}

bool hand_gemm_tc_wgmma_available() {
#if POPPER_HAVE_CUDA
  return device_usable() && detail::tc_wgmma_available();
#else
  return false;
#endif
}

std::uint64_t hand_gemm_tc_wgmma_calls() {
#if POPPER_HAVE_CUDA
  return detail::tc_wgmma_launches();
#else
  return 0;
#endif
}

Backend hand_gemm_f32(const GemmShape& s, float alpha, std::span<const float> a, std::span<const float> b, float beta,
                      std::span<float> c) {
  return hand_host("hand_gemm_f32", s, alpha, a, b, beta, c, hand_gemm_f32_device, identity);
}
Backend hand_gemm_f16(const GemmShape& s, float alpha, std::span<const half_bits> a, std::span<const half_bits> b,
                      float beta, std::span<float> c) {
  return hand_host("hand_gemm_f16", s, alpha, a, b, beta, c, hand_gemm_f16_device, half_to_float);
}
Backend hand_gemm_bf16(const GemmShape& s, float alpha, std::span<const bf16_bits> a, std::span<const bf16_bits> b,
                       float beta, std::span<float> c) {
  const Backend ran = hand_host("hand_gemm_bf16", s, alpha, a, b, beta, c, hand_gemm_bf16_device, bf16_to_float);
  // Mutation point (gemm-tc-output-bf16): the device result as if accumulated or stored in BF16.
  if (ran == Backend::Cuda && POPPER_MUTANT("gemm-tc-output-bf16"))
    for (float& v : c) v = bf16_to_float(float_to_bf16(v));
  return ran;
}

}  // namespace popper::gemm::cuda
