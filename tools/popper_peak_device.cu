// popper_peak_device: the measured ceilings of a CUDA device, for `popper peak
// --device` (which caches them beside the CPU's in peak.json and puts GPU bench
// rows on a roofline). Printed as one JSON object on stdout; progress on stderr.
//
//   fp32_fma    sustained FP32 FMA rate: every thread runs 8 independent chains
//               a = a * b + c, FLOP = 2 per FMA, enough blocks to fill every SM
//               several times over
//   tf32/f16/bf16 tensor cores: cublasGemmEx on an n x n x n product of random
//               values (never zeros: they run faster than real data), FP32
//               accumulation (CUBLAS_COMPUTE_32F; TF32 only under its own key),
//               FLOP = 2 n^3
//   fp32_gemm   cublasSgemm with TF32 off (CUBLAS_DEFAULT_MATH): the f32
//               ceiling GPU rows are compared with
//   copy, triad device memory: b = a and a = b + s c over buffers far larger
//               than L2, 16-byte accesses, bytes = every byte read plus every
//               byte written
//
// Each figure is the median of `--reps` timed runs (CUDA events) after a
// warm-up. Without a usable device it prints {"available": false, "reason":
// ...} and exits 3, so the caller can say why rather than guess.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Failure {
  std::string what;
};

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Failure{std::string(what) + ": " + cudaGetErrorString(e)};
}
void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) throw Failure{std::string(what) + ": cuBLAS status " + std::to_string(int(s))};
}

// JSON string escaping for device names and reasons.
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\', out += c;
    else if (static_cast<unsigned char>(c) < 0x20) out += ' ';
    else out += c;
  }
  return out + "\"";
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// Seconds of one call of `f`, median over reps after one warm-up, by events.
template <class F>
double time_median(F f, int reps) {
  cudaEvent_t a, b;
  check(cudaEventCreate(&a), "cudaEventCreate");
  check(cudaEventCreate(&b), "cudaEventCreate");
  f();
  check(cudaGetLastError(), "warm-up launch");
  check(cudaDeviceSynchronize(), "warm-up");
  std::vector<double> s;
  for (int r = 0; r < reps; ++r) {
    check(cudaEventRecord(a), "cudaEventRecord");
    f();
    check(cudaEventRecord(b), "cudaEventRecord");
    check(cudaEventSynchronize(b), "cudaEventSynchronize");
    check(cudaGetLastError(), "timed launch");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime");
    s.push_back(ms * 1e-3);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return median(s);
}

constexpr int kChains = 8;

// 8 independent FMA chains per thread; the result is stored only when it is
// a value no input produces, so the compiler must keep every FMA.
__global__ void fma_kernel(float* out, int iters, float b, float c) {
  float a[kChains];
#pragma unroll
  for (int i = 0; i < kChains; ++i) a[i] = threadIdx.x * 1e-3f + i;
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int i = 0; i < kChains; ++i) a[i] = fmaf(a[i], b, c);
  }
  float s = 0;
#pragma unroll
  for (int i = 0; i < kChains; ++i) s += a[i];
  if (s == -12345.678f) out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

__global__ void copy_kernel(const float4* __restrict__ a, float4* __restrict__ b, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    b[i] = a[i];
}

__global__ void triad_kernel(float4* __restrict__ a, const float4* __restrict__ b, const float4* __restrict__ c,
                             float s, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    const float4 x = b[i], y = c[i];
    a[i] = make_float4(x.x + s * y.x, x.y + s * y.y, x.z + s * y.z, x.w + s * y.w);
  }
}

__global__ void fill_kernel(float* p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    unsigned x = unsigned(i) * 2654435761u + seed;
    x ^= x >> 13;
    x *= 0x5bd1e995u;
    x ^= x >> 15;
    p[i] = float(x & 0xffffff) / float(0x1000000) * 2.0f - 1.0f;  // [-1, 1)
  }
}

template <class T>
__global__ void convert_kernel(const float* in, T* out, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    out[i] = T(in[i]);
}

struct Options {
  int reps = 10;
  int gemm_n = 8192;
  double copy_gib = 2.0;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "popper_peak_device: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--reps") o.reps = std::max(3, std::atoi(next()));
    else if (a == "--gemm-n") o.gemm_n = std::max(256, std::atoi(next()));
    else if (a == "--copy-gib") o.copy_gib = std::max(0.0625, std::atof(next()));
    else if (a == "--help" || a == "-h") {
      std::printf("popper_peak_device [--reps N] [--gemm-n N] [--copy-gib G]\n");
      std::exit(0);
    } else {
      std::fprintf(stderr, "popper_peak_device: unknown option %s\n", a.c_str());
      std::exit(2);
    }
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("{\"available\": false, \"reason\": %s}\n",
                quoted(count == 0 ? "no CUDA device" : cudaGetErrorString(cudaGetLastError())).c_str());
    return 3;
  }
  try {
    cudaDeviceProp p{};
    check(cudaGetDeviceProperties(&p, 0), "cudaGetDeviceProperties");
    int runtime = 0, driver = 0;
    cudaRuntimeGetVersion(&runtime);
    cudaDriverGetVersion(&driver);
    std::fprintf(stderr, "popper_peak_device: %s, sm_%d%d, %d SMs\n", p.name, p.major, p.minor, p.multiProcessorCount);

    // FP32 FMA.
    float* sink = nullptr;
    const int threads = 256, blocks = p.multiProcessorCount * 8, iters = 1 << 16;
    check(cudaMalloc(&sink, size_t(threads) * blocks * sizeof(float)), "cudaMalloc");
    const double fma_s = time_median([&] { fma_kernel<<<blocks, threads>>>(sink, iters, 0.999f, 1e-3f); }, o.reps);
    const double fp32_fma = 2.0 * kChains * double(iters) * threads * blocks / fma_s;
    cudaFree(sink);
    std::fprintf(stderr, "  fp32 fma   %.1f TFLOP/s\n", fp32_fma * 1e-12);

    // Device memory: copy and triad over buffers of copy_gib each.
    const size_t n4 = size_t(o.copy_gib * (1ull << 30)) / sizeof(float4);
    float4 *a = nullptr, *b = nullptr, *c = nullptr;
    check(cudaMalloc(&a, n4 * sizeof(float4)), "cudaMalloc");
    check(cudaMalloc(&b, n4 * sizeof(float4)), "cudaMalloc");
    check(cudaMalloc(&c, n4 * sizeof(float4)), "cudaMalloc");
    const int grid = p.multiProcessorCount * 16;
    fill_kernel<<<grid, 256>>>(reinterpret_cast<float*>(b), n4 * 4, 1);
    fill_kernel<<<grid, 256>>>(reinterpret_cast<float*>(c), n4 * 4, 2);
    const double bytes = double(n4) * sizeof(float4);
    const double copy_s = time_median([&] { copy_kernel<<<grid, 256>>>(b, a, n4); }, o.reps);
    const double triad_s = time_median([&] { triad_kernel<<<grid, 256>>>(a, b, c, 1.5f, n4); }, o.reps);
    const double copy_bw = 2 * bytes / copy_s, triad_bw = 3 * bytes / triad_s;
    cudaFree(a), cudaFree(b), cudaFree(c);
    std::fprintf(stderr, "  copy %.0f GB/s, triad %.0f GB/s (bytes read + written)\n", copy_bw * 1e-9, triad_bw * 1e-9);

    // GEMMs through cuBLAS on random data.
    const int n = o.gemm_n;
    const size_t nn = size_t(n) * n;
    float *fa = nullptr, *fb = nullptr, *fc = nullptr;
    check(cudaMalloc(&fa, nn * sizeof(float)), "cudaMalloc");
    check(cudaMalloc(&fb, nn * sizeof(float)), "cudaMalloc");
    check(cudaMalloc(&fc, nn * sizeof(float)), "cudaMalloc");
    fill_kernel<<<grid, 256>>>(fa, nn, 3);
    fill_kernel<<<grid, 256>>>(fb, nn, 4);
    void *ha = nullptr, *hb = nullptr;  // 16-bit copies of A and B
    check(cudaMalloc(&ha, nn * 2), "cudaMalloc");
    check(cudaMalloc(&hb, nn * 2), "cudaMalloc");
    cublasHandle_t h;
    check(cublasCreate(&h), "cublasCreate");
    const float one = 1, zero = 0;
    const double flop = 2.0 * double(n) * n * n;
    check(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
    const double sgemm_s = time_median(
        [&] { check(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, fa, n, fb, n, &zero, fc, n), "sgemm"); },
        o.reps);
    check(cublasSetMathMode(h, CUBLAS_TF32_TENSOR_OP_MATH), "cublasSetMathMode");
    const double tf32_s = time_median(
        [&] {
          check(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, fa, CUDA_R_32F, n, fb, CUDA_R_32F, n, &zero,
                             fc, CUDA_R_32F, n, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT),
                "gemm tf32");
        },
        o.reps);
    check(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
    auto half_gemm = [&](cudaDataType t) {
      return time_median(
          [&] {
            check(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, ha, t, n, hb, t, n, &zero, fc, CUDA_R_32F, n,
                               CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                  "gemm 16-bit");
          },
          o.reps);
    };
    convert_kernel<__half><<<grid, 256>>>(fa, static_cast<__half*>(ha), nn);
    convert_kernel<__half><<<grid, 256>>>(fb, static_cast<__half*>(hb), nn);
    const double f16_s = half_gemm(CUDA_R_16F);
    convert_kernel<__nv_bfloat16><<<grid, 256>>>(fa, static_cast<__nv_bfloat16*>(ha), nn);
    convert_kernel<__nv_bfloat16><<<grid, 256>>>(fb, static_cast<__nv_bfloat16*>(hb), nn);
    const double bf16_s = half_gemm(CUDA_R_16BF);
    cublasDestroy(h);
    cudaFree(fa), cudaFree(fb), cudaFree(fc), cudaFree(ha), cudaFree(hb);
    std::fprintf(stderr, "  sgemm %.1f, tf32 %.1f, f16 %.1f, bf16 %.1f TFLOP/s (n = %d)\n", flop / sgemm_s * 1e-12,
                 flop / tf32_s * 1e-12, flop / f16_s * 1e-12, flop / bf16_s * 1e-12, n);

    std::printf(
        "{\"available\": true, \"name\": %s, \"sm\": \"sm_%d%d\", \"multiprocessors\": %d, \"memory_bytes\": %zu, "
        "\"l2_bytes\": %d, \"cuda_runtime\": %d, \"cuda_driver\": %d, \"reps\": %d, \"gemm_n\": %d, "
        "\"fp32_fma_flops\": %.6e, \"fp32_gemm_flops\": %.6e, \"tf32_gemm_flops\": %.6e, \"f16_gemm_flops\": %.6e, "
        "\"bf16_gemm_flops\": %.6e, \"copy_bytes_per_s\": %.6e, \"triad_bytes_per_s\": %.6e}\n",
        quoted(p.name).c_str(), p.major, p.minor, p.multiProcessorCount, size_t(p.totalGlobalMem), p.l2CacheSize,
        runtime, driver, o.reps, n, fp32_fma, flop / sgemm_s, flop / tf32_s, flop / f16_s, flop / bf16_s, copy_bw,
        triad_bw);
    return 0;
  } catch (const Failure& f) {
    std::printf("{\"available\": false, \"reason\": %s}\n", quoted(f.what).c_str());
    return 3;
  }
}
