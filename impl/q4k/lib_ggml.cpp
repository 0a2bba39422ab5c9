// popper's C++ API over ggml (lib_ggml.hpp). Compiled as stubs that report
// "requires ggml" when cmake/PopperGgml.cmake did not find the packages.
#include "impl/q4k/lib_ggml.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "popper/error.hpp"

#if POPPER_HAVE_GGML
#include <ggml-alloc.h>
#include <ggml-backend.h>
#include <ggml.h>
#include <gguf.h>

// Exported by libggml-base.so (declared in ggml's internal ggml-quants.h).
extern "C" {
void dequantize_row_q4_K(const void* x, float* y, std::int64_t k);
void quantize_row_q4_K_ref(const float* x, void* y, std::int64_t k);
}
#endif

namespace popper::q4k::ggml {

#if !POPPER_HAVE_GGML

const Status& status() {
  static const Status s{
      false, false, "popper was built without ggml (run scripts/install-deps.sh, configure with POPPER_GGML=AUTO|ON)",
      "",    "",    ""};
  return s;
}
std::string cpu_backend_tag() { throw Unsupported(status().reason); }
void dequantize_row(std::span<const Block>, std::span<float>) { throw Unsupported(status().reason); }
void quantize_row_ref(std::span<const float>, std::span<Block>) { throw Unsupported(status().reason); }
GgufReadBack read_gguf(const std::string&) { throw Unsupported(status().reason); }
CpuThreadpool::CpuThreadpool(int) {}
CpuThreadpool::~CpuThreadpool() = default;
void CpuThreadpool::attach(void*) const {}
struct CpuMatVec::Impl {};
CpuMatVec::CpuMatVec(std::span<const Block>, std::int64_t, std::int64_t, int, bool) {
  throw Unsupported(status().reason);
}
CpuMatVec::~CpuMatVec() = default;
void CpuMatVec::run(std::span<const float>, std::span<float>) { throw Unsupported(status().reason); }
std::string CpuMatVec::backend() const { return ""; }

#else

namespace {

// Keeps ggml's warnings and errors, drops its info/debug chatter.
void quiet_log(enum ggml_log_level level, const char* text, void*) {
  if (level == GGML_LOG_LEVEL_WARN || level == GGML_LOG_LEVEL_ERROR) std::fputs(text, stderr);
}

struct Runtime {
  Status status;
  ggml_backend_reg_t cpu_reg = nullptr;
  ggml_backend_dev_t cpu_dev = nullptr;
  ggml_backend_set_n_threads_t set_threads = nullptr;
  ggml_backend_dev_get_extra_bufts_t extra_bufts = nullptr;
  // CpuThreadpool's entry points; null when the backend lacks them.
  ggml_threadpool* (*pool_new)(ggml_threadpool_params*) = nullptr;
  void (*pool_free)(ggml_threadpool*) = nullptr;
  void (*pool_attach)(ggml_backend_t, ggml_threadpool*) = nullptr;

  void probe() {
    status.compiled = true;
    status.version = POPPER_GGML_VERSION;
    const char* dir_env = std::getenv("POPPER_GGML_CPU_DIR");
    status.cpu_dir = dir_env && *dir_env ? dir_env : POPPER_GGML_CPU_DIR;
    ggml_log_set(&quiet_log, nullptr);
    std::vector<std::string> variants = {"zen4", "icelake", "skylakex", "haswell", "sse42", "x64"};
    if (const char* v = std::getenv("POPPER_GGML_CPU_VARIANT"); v && *v) variants = {v};
    for (const auto& v : variants) {
      const std::string path = status.cpu_dir + "/libggml-cpu-" + v + ".so";
      cpu_reg = ggml_backend_load(path.c_str());
      if (cpu_reg) {
        status.cpu_variant = v;
        break;
      }
    }
    if (!cpu_reg) {
      status.reason = "no ggml CPU backend variant loads from " + status.cpu_dir + " (tried";
      for (const auto& v : variants) status.reason += " " + v;
      status.reason += ")";
      return;
    }
    cpu_dev = ggml_backend_reg_dev_get(cpu_reg, 0);
    set_threads = reinterpret_cast<ggml_backend_set_n_threads_t>(
        ggml_backend_reg_get_proc_address(cpu_reg, "ggml_backend_set_n_threads"));
    extra_bufts = reinterpret_cast<ggml_backend_dev_get_extra_bufts_t>(
        ggml_backend_reg_get_proc_address(cpu_reg, "ggml_backend_dev_get_extra_bufts"));
    pool_new = reinterpret_cast<decltype(pool_new)>(ggml_backend_reg_get_proc_address(cpu_reg, "ggml_threadpool_new"));
    pool_free =
        reinterpret_cast<decltype(pool_free)>(ggml_backend_reg_get_proc_address(cpu_reg, "ggml_threadpool_free"));
    pool_attach = reinterpret_cast<decltype(pool_attach)>(
        ggml_backend_reg_get_proc_address(cpu_reg, "ggml_backend_cpu_set_threadpool"));
    if (!pool_new || !pool_free || !pool_attach) pool_new = nullptr;
    if (!cpu_dev || !set_threads) {
      status.reason = "the ggml CPU backend " + status.cpu_variant + " lacks a device or ggml_backend_set_n_threads";
      return;
    }
    status.usable_ = true;
  }
};

Runtime& runtime() {
  static Runtime* rt = [] {
    auto* r = new Runtime();  // never destroyed: ggml keeps the library loaded
    r->probe();
    return r;
  }();
  return *rt;
}

Runtime& usable_runtime() {
  Runtime& r = runtime();
  if (!r.status.usable()) throw Unsupported("ggml: " + r.status.reason);
  return r;
}

}  // namespace

const Status& status() { return runtime().status; }

std::string cpu_backend_tag() { return "ggml-cpu:" + usable_runtime().status.cpu_variant; }

void dequantize_row(std::span<const Block> blocks, std::span<float> out) {
  check_row_args(out.size(), blocks.size(), "ggml::dequantize_row");
  (void)usable_runtime();
  dequantize_row_q4_K(blocks.data(), out.data(), static_cast<std::int64_t>(out.size()));
}

void quantize_row_ref(std::span<const float> x, std::span<Block> out) {
  check_row_args(x.size(), out.size(), "ggml::quantize_row_ref");
  (void)usable_runtime();
  quantize_row_q4_K_ref(x.data(), out.data(), static_cast<std::int64_t>(x.size()));
}

GgufReadBack read_gguf(const std::string& path) {
  (void)usable_runtime();
  ggml_context* data_ctx = nullptr;
  gguf_init_params params{false, &data_ctx};
  gguf_context* g = gguf_init_from_file(path.c_str(), params);
  if (!g) throw Error("ggml: gguf_init_from_file rejected " + path);
  GgufReadBack out;
  out.version = gguf_get_version(g);
  out.alignment = gguf_get_alignment(g);
  out.data_offset = gguf_get_data_offset(g);
  auto scalar = [&](gguf_type t, std::int64_t id, std::size_t i, bool in_array) -> gguf::Value {
    // gguf_get_arr_data asserts (aborts) on string arrays: only numeric arrays use it.
    const void* arr = in_array && t != GGUF_TYPE_STRING ? gguf_get_arr_data(g, id) : nullptr;
    switch (t) {
#define POPPER_GGUF_CASE(GT, CT, MAKE, GETTER)                                                 \
  case GT: {                                                                                   \
    CT v;                                                                                      \
    if (in_array) std::memcpy(&v, static_cast<const char*>(arr) + i * sizeof(CT), sizeof(CT)); \
    else v = GETTER(g, id);                                                                    \
    return gguf::Value::MAKE(v);                                                               \
  }
      POPPER_GGUF_CASE(GGUF_TYPE_UINT8, std::uint8_t, u8, gguf_get_val_u8)
      POPPER_GGUF_CASE(GGUF_TYPE_INT8, std::int8_t, i8, gguf_get_val_i8)
      POPPER_GGUF_CASE(GGUF_TYPE_UINT16, std::uint16_t, u16, gguf_get_val_u16)
      POPPER_GGUF_CASE(GGUF_TYPE_INT16, std::int16_t, i16, gguf_get_val_i16)
      POPPER_GGUF_CASE(GGUF_TYPE_UINT32, std::uint32_t, u32, gguf_get_val_u32)
      POPPER_GGUF_CASE(GGUF_TYPE_INT32, std::int32_t, i32, gguf_get_val_i32)
      POPPER_GGUF_CASE(GGUF_TYPE_FLOAT32, float, f32, gguf_get_val_f32)
      POPPER_GGUF_CASE(GGUF_TYPE_UINT64, std::uint64_t, u64, gguf_get_val_u64)
      POPPER_GGUF_CASE(GGUF_TYPE_INT64, std::int64_t, i64, gguf_get_val_i64)
      POPPER_GGUF_CASE(GGUF_TYPE_FLOAT64, double, f64, gguf_get_val_f64)
#undef POPPER_GGUF_CASE
      case GGUF_TYPE_BOOL: {
        bool v;
        if (in_array) std::memcpy(&v, static_cast<const char*>(arr) + i, 1);
        else v = gguf_get_val_bool(g, id);
        return gguf::Value::boolean(v);
      }
      case GGUF_TYPE_STRING: return gguf::Value::str(in_array ? gguf_get_arr_str(g, id, i) : gguf_get_val_str(g, id));
      default: throw Error("ggml: unexpected GGUF value type " + std::to_string(static_cast<int>(t)));
    }
  };
  for (std::int64_t id = 0; id < gguf_get_n_kv(g); ++id) {
    const gguf_type t = gguf_get_kv_type(g, id);
    if (t == GGUF_TYPE_ARRAY) {
      const gguf_type et = gguf_get_arr_type(g, id);
      std::vector<gguf::Value> items;
      for (std::size_t i = 0; i < gguf_get_arr_n(g, id); ++i) items.push_back(scalar(et, id, i, true));
      out.metadata.emplace_back(gguf_get_key(g, id),
                                gguf::Value::array(static_cast<gguf::ValueType>(et), std::move(items)));
    } else {
      out.metadata.emplace_back(gguf_get_key(g, id), scalar(t, id, 0, false));
    }
  }
  for (std::int64_t id = 0; id < gguf_get_n_tensors(g); ++id) {
    GgufReadBack::Tensor t;
    t.name = gguf_get_tensor_name(g, id);
    t.type = static_cast<std::uint32_t>(gguf_get_tensor_type(g, id));
    t.offset = gguf_get_tensor_offset(g, id);
    const ggml_tensor* tensor = ggml_get_tensor(data_ctx, t.name.c_str());
    const int nd = tensor ? ggml_n_dims(tensor) : 0;
    const std::int64_t* ne = gguf_get_tensor_ne(g, id);
    for (int d = 0; d < std::max(nd, 1); ++d) t.ne.push_back(static_cast<std::uint64_t>(ne[d]));
    if (tensor) {
      const auto* p = static_cast<const std::byte*>(tensor->data);
      t.data.assign(p, p + ggml_nbytes(tensor));
    }
    out.tensors.push_back(std::move(t));
  }
  gguf_free(g);
  if (data_ctx) ggml_free(data_ctx);
  return out;
}

struct CpuMatVec::Impl {
  std::int64_t rows = 0, cols = 0;
  ggml_backend_t backend = nullptr;
  std::unique_ptr<CpuThreadpool> pool;  // outlives the backend (members go after the body)
  ggml_context* ctx_w = nullptr;
  ggml_context* ctx_io = nullptr;
  ggml_backend_buffer_t buf_w = nullptr, buf_io = nullptr;
  ggml_tensor *w = nullptr, *x = nullptr, *y = nullptr;
  ggml_cgraph* graph = nullptr;
  bool repacked = false;
  ~Impl() {
    if (buf_io) ggml_backend_buffer_free(buf_io);
    if (buf_w) ggml_backend_buffer_free(buf_w);
    if (ctx_io) ggml_free(ctx_io);
    if (ctx_w) ggml_free(ctx_w);
    if (backend) ggml_backend_free(backend);
  }
};

CpuThreadpool::CpuThreadpool(int threads) {
  const Runtime& rt = runtime();
  if (threads < 2 || !rt.status.usable() || !rt.pool_new) return;
  ggml_threadpool_params p = ggml_threadpool_params_default(threads);
  pool_ = rt.pool_new(&p);
}

CpuThreadpool::~CpuThreadpool() {
  if (pool_) runtime().pool_free(static_cast<ggml_threadpool*>(pool_));
}

void CpuThreadpool::attach(void* backend) const {
  if (pool_) runtime().pool_attach(static_cast<ggml_backend_t>(backend), static_cast<ggml_threadpool*>(pool_));
}

CpuMatVec::CpuMatVec(std::span<const Block> w, std::int64_t rows, std::int64_t cols, int threads, bool repack)
    : impl_(std::make_unique<Impl>()) {
  check_matrix(rows, cols, w.size());
  if (rows == 0 || cols == 0) throw InvalidArgument("ggml::CpuMatVec: ggml needs rows > 0 and cols > 0");
  if (threads < 1) throw InvalidArgument("ggml::CpuMatVec: threads must be >= 1");
  Runtime& rt = usable_runtime();
  Impl& m = *impl_;
  m.rows = rows;
  m.cols = cols;
  m.backend = ggml_backend_dev_init(rt.cpu_dev, nullptr);
  if (!m.backend) throw Error("ggml: the CPU backend did not initialize");
  rt.set_threads(m.backend, threads);
  m.pool = std::make_unique<CpuThreadpool>(threads);
  m.pool->attach(m.backend);

  ggml_init_params p{ggml_tensor_overhead() * 2, nullptr, true};
  m.ctx_w = ggml_init(p);
  m.w = ggml_new_tensor_2d(m.ctx_w, GGML_TYPE_Q4_K, cols, rows);
  ggml_init_params pio{ggml_tensor_overhead() * 8 + ggml_graph_overhead(), nullptr, true};
  m.ctx_io = ggml_init(pio);
  m.x = ggml_new_tensor_1d(m.ctx_io, GGML_TYPE_F32, cols);
  m.y = ggml_mul_mat(m.ctx_io, m.w, m.x);
  m.graph = ggml_new_graph(m.ctx_io);
  ggml_build_forward_expand(m.graph, m.y);

  ggml_backend_buffer_type_t wbuft = ggml_backend_get_default_buffer_type(m.backend);
  // ggml's CPU_REPACK layout for Q4_K (q4_K_8x8) needs AVX2 and rows in groups of 8; its
  // set_tensor dereferences a missing repack type otherwise, so ask only when it applies.
  const bool avx2_variant = rt.status.cpu_variant != "x64" && rt.status.cpu_variant != "sse42";
  repack = repack && avx2_variant && rows % 8 == 0;
  if (repack && rt.extra_bufts)
    for (ggml_backend_buffer_type_t* b = rt.extra_bufts(rt.cpu_dev); b && *b; ++b)
      if (std::strcmp(ggml_backend_buft_name(*b), "CPU_REPACK") == 0) wbuft = *b, m.repacked = true;
  m.buf_w = ggml_backend_alloc_ctx_tensors_from_buft(m.ctx_w, wbuft);
  m.buf_io = ggml_backend_alloc_ctx_tensors(m.ctx_io, m.backend);
  if (!m.buf_w || !m.buf_io) throw Error("ggml: buffer allocation failed");
  ggml_backend_tensor_set(m.w, w.data(), 0, matrix_bytes(rows, cols));
}

CpuMatVec::~CpuMatVec() = default;

void CpuMatVec::run(std::span<const float> x, std::span<float> y) {
  Impl& m = *impl_;
  if (x.size() < static_cast<std::size_t>(m.cols))
    throw BufferTooSmall("x", static_cast<std::size_t>(m.cols), x.size());
  if (y.size() < static_cast<std::size_t>(m.rows))
    throw BufferTooSmall("y", static_cast<std::size_t>(m.rows), y.size());
  ggml_backend_tensor_set(m.x, x.data(), 0, static_cast<std::size_t>(m.cols) * sizeof(float));
  if (ggml_backend_graph_compute(m.backend, m.graph) != GGML_STATUS_SUCCESS) throw Error("ggml: graph compute failed");
  ggml_backend_tensor_get(m.y, y.data(), 0, static_cast<std::size_t>(m.rows) * sizeof(float));
}

std::string CpuMatVec::backend() const { return cpu_backend_tag() + (impl_->repacked ? "+repack" : ""); }

#endif  // POPPER_HAVE_GGML

}  // namespace popper::q4k::ggml
