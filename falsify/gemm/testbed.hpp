// GEMM testbed, shared by the falsifiers (falsify/gemm) and the bench
// (bench/gemm): operands, the Higham bound, and the elementwise comparison.
//
//   accept C_out iff |C_out - C_ref| <= f * gamma_{k+2} * (|alpha| (|op(A)||op(B)|) + |beta| |C_in|)
//   gamma_j = j*u / (1 - j*u),  u = eps/2 of the working precision
//
// and every element of C outside the m x n window (ld padding) is unchanged.
// The bench checks C = A B (row-major, NoTrans, alpha 1, beta 0) against the
// FP64 dot product instead of C_ref (check_product_entries, below).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "impl/common/cpu_features.hpp"
#include "impl/common/device.hpp"
#include "impl/common/parallel.hpp"
#include "impl/gemm/cpu_gemm.hpp"
#include "impl/gemm/cpu_gemm_blocking.hpp"
#include "impl/gemm/cuda_gemm.hpp"
#include "impl/gemm/gemm.hpp"
#include "impl/gemm/lib_blas.hpp"
#include "impl/gemm/reference.hpp"
#include "popper/binding.hpp"
#include "popper/mutant.hpp"
#include "workloads/gemm/product_check.h"

namespace popper::gemm::testbed {

template <class T>
constexpr double unit_roundoff() {
  return static_cast<double>(std::numeric_limits<T>::epsilon()) / 2.0;
}

inline double gamma(std::int64_t j, double u) {
  const double ju = static_cast<double>(j) * u;
  return ju / (1.0 - ju);
}

template <class T>
const char* precision_name() {
  return sizeof(T) == 4 ? "f32" : "f64";
}

inline const char* layout_name(Layout l) { return l == Layout::RowMajor ? "row" : "col"; }
inline const char* op_name(Op o) { return o == Op::NoTrans ? "N" : "T"; }

inline std::string describe(const GemmShape& s) {
  std::ostringstream os;
  os << layout_name(s.layout) << " op_a=" << op_name(s.op_a) << " op_b=" << op_name(s.op_b) << " m=" << s.m
     << " n=" << s.n << " k=" << s.k << " lda=" << s.lda << " ldb=" << s.ldb << " ldc=" << s.ldc;
  return os.str();
}

inline std::size_t c_index(const GemmShape& s, std::int64_t i, std::int64_t j) {
  return static_cast<std::size_t>(s.layout == Layout::RowMajor ? i * s.ldc + j : j * s.ldc + i);
}

// Shape with explicit leading dimensions: tight + pad.
inline GemmShape padded(Layout layout, Op op_a, Op op_b, std::int64_t m, std::int64_t n, std::int64_t k,
                        std::int64_t pad) {
  GemmShape s{layout, op_a, op_b, m, n, k, 0, 0, 0};
  s = with_tight_ld(s);
  s.lda += pad;
  s.ldb += pad;
  s.ldc += pad;
  return s;
}

inline std::size_t a_elements(const GemmShape& s) {
  return s.op_a == Op::NoTrans ? required_elements(s.layout, s.m, s.k, s.lda)
                               : required_elements(s.layout, s.k, s.m, s.lda);
}
inline std::size_t b_elements(const GemmShape& s) {
  return s.op_b == Op::NoTrans ? required_elements(s.layout, s.k, s.n, s.ldb)
                               : required_elements(s.layout, s.n, s.k, s.ldb);
}
inline std::size_t c_elements(const GemmShape& s) { return required_elements(s.layout, s.m, s.n, s.ldc); }

template <class T>
struct Operands {
  GemmShape s;
  std::vector<T> a, b, c;  // c = C_in
};

template <class T>
Operands<T> random_operands(const GemmShape& s, std::mt19937_64& rng, double lo = -1.0, double hi = 1.0) {
  std::uniform_real_distribution<double> u(lo, hi);
  Operands<T> o{s, std::vector<T>(a_elements(s)), std::vector<T>(b_elements(s)), std::vector<T>(c_elements(s))};
  for (auto& x : o.a) x = static_cast<T>(u(rng));
  for (auto& x : o.b) x = static_cast<T>(u(rng));
  for (auto& x : o.c) x = static_cast<T>(u(rng));
  return o;
}

// |op(A)||op(B)| in double (through the reference on absolute values).
template <class T>
std::vector<double> abs_product(const Operands<T>& o) {
  std::vector<double> a(o.a.size()), b(o.b.size()), c(o.c.size(), 0.0);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = std::fabs(static_cast<double>(o.a[i]));
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = std::fabs(static_cast<double>(o.b[i]));
  reference::gemm<double>(o.s, 1.0, a, b, 0.0, c);
  return c;
}

template <class T>
std::vector<T> reference_result(const Operands<T>& o, T alpha, T beta) {
  std::vector<T> c = o.c;
  reference::gemm<T>(o.s, alpha, o.a, o.b, beta, c);
  return c;
}

struct Verdict {
  bool ok = true;
  double worst_ratio = 0.0;  // max |err| / bound over the window (0 when all exact)
  std::string message;
};

// Elementwise check of `out` against `ref` with the Higham bound, plus
// padding untouched (bitwise) relative to `c_in`.
template <class T>
Verdict check_result(const GemmShape& s, std::span<const T> out, std::span<const T> ref, std::span<const T> c_in,
                     std::span<const double> absprod, double alpha, double beta, double factor) {
  Verdict v;
  const double g = gamma(s.k + 2, unit_roundoff<T>());
  std::vector<char> in_window(out.size(), 0);
  for (std::int64_t i = 0; i < s.m; ++i)
    for (std::int64_t j = 0; j < s.n; ++j) {
      const std::size_t idx = c_index(s, i, j);
      in_window[idx] = 1;
      // beta == 0: C_in is not part of the result (it may hold NaN).
      const double c_term = beta == 0.0 ? 0.0 : std::fabs(beta) * std::fabs(static_cast<double>(c_in[idx]));
      const double bound = factor * g * (std::fabs(alpha) * absprod[idx] + c_term);
      const double err = std::fabs(static_cast<double>(out[idx]) - static_cast<double>(ref[idx]));
      if (!(err <= bound)) {  // also catches NaN
        if (v.ok) {
          std::ostringstream os;
          os << precision_name<T>() << " " << describe(s) << " alpha=" << alpha << " beta=" << beta << ": C(" << i
             << "," << j << ") = " << static_cast<double>(out[idx]) << ", reference " << static_cast<double>(ref[idx])
             << ", |err| " << err << " > bound " << bound;
          v.message = os.str();
        }
        v.ok = false;
      }
      if (bound > 0) v.worst_ratio = std::max(v.worst_ratio, err / bound);
    }
  for (std::size_t idx = 0; idx < out.size(); ++idx) {
    if (!in_window[idx] && std::memcmp(&out[idx], &c_in[idx], sizeof(T)) != 0) {
      if (v.ok) v.message = std::string(precision_name<T>()) + " " + describe(s) + ": ld padding of C was written";
      v.ok = false;
      break;
    }
  }
  return v;
}

// The bench's check of C = A B (row-major NoTrans, alpha = 1, beta = 0),
// entry by entry against the FP64 dot product: workloads/gemm/product_check.h
// (its formula and sampling), shared with the ceiling programs.
struct EntryCheck {
  bool ok = true;
  double worst_err = 0.0, worst_bound = 0.0;  // the entry with the largest err / bound
  int samples = 0;
  // The bench row's verdict: "verified", "verified(sampled 256)" or "incorrect: max err E > bound B".
  std::string verdict() const {
    char msg[96];
    popper_gemm_check_label({ok ? 1 : 0, worst_err, worst_bound}, samples, msg, sizeof msg);
    return msg;
  }
};

template <class T>
EntryCheck check_product_entries(std::int64_t m, std::int64_t n, std::int64_t k, std::span<const T> a,
                                 std::span<const T> b, std::span<const T> c, int samples, double roundoff_scale = 1.0) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>);
  const auto r = popper_gemm_check_product(std::is_same_v<T, double>, long(m), long(n), long(k), a.data(), b.data(),
                                           c.data(), samples, roundoff_scale);
  return {r.ok != 0, r.worst_err, r.worst_bound, samples};
}

struct AlphaBeta {
  double alpha, beta;
};

inline std::vector<AlphaBeta> alpha_beta_list(const Params& p) {
  std::vector<AlphaBeta> out;
  for (const auto& pair : p.json().at("alpha_beta"))
    out.push_back({pair.at(0).get<double>(), pair.at(1).get<double>()});
  return out;
}

struct Dims {
  std::int64_t m, n, k;
};
inline std::vector<Dims> shape_list(const Params& p, const std::string& key = "shapes") {
  std::vector<Dims> out;
  for (const auto& s : p.list(key)) out.push_back({s.integer("m"), s.integer("n"), s.integer("k")});
  return out;
}

// ---- evidence: what each judged call ran on ----

// cpu::gemm with `isa`: Auto is the kernel's own choice (forced only when the
// ISA cap lowered it); an explicit ISA is a forced path.
inline void record_cpu_path(cpu::Isa isa) {
  const cpu::Isa ran = isa == cpu::Isa::Auto ? popper::cpu::auto_isa() : isa;
  const bool forced = isa != cpu::Isa::Auto || popper::cpu::auto_isa_overridden();
  popper::record_backend(popper::cpu::backend_tag(ran), forced ? popper::Dispatch::Forced : popper::Dispatch::Auto);
}

inline std::string openblas_tag(const BlasHandle& h) {
  std::string core = h.core_name();
  for (auto& ch : core) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return "openblas:" + core;
}

// A cuda:: entry's answer: device evidence, or a decline (the CPU path ran).
inline void record_cuda_entry(cuda::Backend b) {
  if (b == cuda::Backend::Cuda) {
    popper::record_backend(popper::device::cuda_status().backend_tag());
  } else {
    popper::record_decline("cuda", popper::device::cuda_status().reason);
    record_cpu_path(cpu::Isa::Auto);
  }
}

// The ISAs a falsifier runs cpu::gemm with: Auto always; every other ISA the
// CPU supports only when forced paths are allowed (a CPU-matrix leg proves
// just the path its CPU picks).
inline std::vector<cpu::Isa> isas_to_test() {
  std::vector<cpu::Isa> out{cpu::Isa::Auto};
  if (!popper::forced_paths_allowed()) return out;
  for (const auto isa : popper::cpu::supported_isas())
    if (isa != popper::cpu::auto_isa()) out.push_back(isa);
  return out;
}

// A multi-threaded call as a falsifier makes it: exactly the threads asked
// for (the size rule would run the small test shapes on one) and op(B)
// packed one way, forced (the Auto rule picks by cache size, so one machine
// takes only one of them).
inline std::vector<cpu::BSharing> b_sharings(std::int64_t threads) {
  if (threads == 1) return {cpu::BSharing::Auto};  // nothing to share
  return {cpu::BSharing::Shared, cpu::BSharing::PerWorker};
}
inline std::string to_string(cpu::BSharing m) {
  return m == cpu::BSharing::Shared ? " B shared" : m == cpu::BSharing::PerWorker ? " B per worker" : "";
}
class ScopedThreadedRun {
 public:
  explicit ScopedThreadedRun(cpu::BSharing mode) { cpu::set_b_sharing(mode); }
  ~ScopedThreadedRun() { cpu::set_b_sharing(cpu::BSharing::Auto); }
  ScopedThreadedRun(const ScopedThreadedRun&) = delete;
  ScopedThreadedRun& operator=(const ScopedThreadedRun&) = delete;

 private:
  popper::parallel::ScopedExactThreads exact_;
};

// The blocking's caches forced small for a scope (cpu::set_blocking_caches):
// L2 64 KiB gives KC <= 128 and MC of at most 64 (f32) or 32 (f64) rows, L3 1 MiB an NC
// of 256-512 columns, so a grid of small shapes runs several k, MC and NC
// blocks on any machine, whatever caches it reports.
inline constexpr cpu::CacheSizes kSmallCaches{std::size_t{32} << 10, std::size_t{64} << 10, std::size_t{1} << 20};
class ScopedBlockingCaches {
 public:
  explicit ScopedBlockingCaches(std::optional<cpu::CacheSizes> c) { cpu::set_blocking_caches(c); }
  ~ScopedBlockingCaches() { cpu::set_blocking_caches(std::nullopt); }
  ScopedBlockingCaches(const ScopedBlockingCaches&) = delete;
  ScopedBlockingCaches& operator=(const ScopedBlockingCaches&) = delete;
};

inline constexpr Layout kLayouts[] = {Layout::RowMajor, Layout::ColMajor};
inline constexpr Op kOps[] = {Op::NoTrans, Op::Trans};

}  // namespace popper::gemm::testbed
