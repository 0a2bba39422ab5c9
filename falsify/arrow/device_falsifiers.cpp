// The device seam: the CUDA entry declines to the CPU with identical results;
// the POPPER_HD per-atom body, run on the host, matches the dense oracle; the
// kernel's ptxas resource usage stays inside the per-block budget.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "impl/arrow/atom_body.hpp"
#include "testbed.hpp"
#include "impl/common/device.hpp"
#include "popper/binding.hpp"
#include "popper/mutant.hpp"
#include "popper/runtime_paths.hpp"

namespace {
using namespace popper::arrow;
namespace tb = popper::arrow::testbed;
}  // namespace

POPPER_FALSIFIER("FALSIFY-ARROW-008", [](const popper::Params& p) {
  const auto atoms = static_cast<std::size_t>(p.integer("atoms"));
  auto sys = tb::make_class(p.seed(), {0, 1, 20, 64, 7}, {2, 1, 4, 8}, {6, 1, 32}, atoms);
  sys[1].D[0] = -5.0;  // one failing atom travels through the decline too
  const BatchedK1Pack pack = pack_systems(sys);
  bool declined = false;
  const auto via_cuda = solve_pack_cuda(pack, 1e-3, 1e-3, 2, &declined);
  const bool usable = popper::device::cuda_status().usable();
  EXPECT_EQ(declined, !usable) << popper::device::cuda_status().reason;
  // Served on the CPU it must equal the CPU entry; on a device it must equal
  // the Structured body (same pieces, --fmad=false). Hand == Structured bitwise,
  // so both comparisons hold in either case.
  const auto cpu = solve_pack(pack, 1e-3, 1e-3, ArrowSolveOptions{ArrowKernel::Hand, 1});
  const auto structured = solve_pack(pack, 1e-3, 1e-3, ArrowSolveOptions{ArrowKernel::Structured, 1});
  ASSERT_EQ(via_cuda.size(), atoms);
  for (std::size_t a = 0; a < atoms; ++a) {
    EXPECT_TRUE(tb::bit_equal(via_cuda[a], cpu[a])) << "atom " << a;
    EXPECT_TRUE(tb::bit_equal(via_cuda[a], structured[a])) << "atom " << a;
  }
  EXPECT_FALSE(via_cuda[1].ok());
  EXPECT_TRUE(via_cuda[0].ok());
  if (!::testing::Test::HasFailure()) {
    if (declined) popper::record_decline("cuda", popper::device::cuda_status().reason);
    tb::record(declined ? ArrowKernel::Hand : ArrowKernel::Auto);
  }
});

POPPER_FALSIFIER("FALSIFY-ARROW-009", [](const popper::Params& p) {
  const double tol = p.number("rel_tol");
  const auto atoms = static_cast<std::size_t>(p.integer("atoms"));
  const auto sys = tb::make_class(p.seed(), {0, 1, 2, 33, 80}, {1, 2, 3, 4, 5, 8}, {1, 6, 32, 11}, atoms);
  const double rho_t = 1e-2, rho_beta = 1e-2;
  const BatchedK1Pack pack = pack_systems(sys);
  const auto slices = index_pack(pack);
  for (std::size_t a = 0; a < atoms; ++a) {
    const AtomSlice& s = slices[a];
    // The body exactly as the device kernel's pieces see it: generic d (DF = 0).
    std::vector<double> L(std::max<std::size_t>(1, s.rows * s.d * s.d)), S(s.k * s.k), r(s.k), dt(s.rows * s.d),
        dbeta(s.k);
    const ArrowAtomArgs<double> args{s.rows,
                                     s.d,
                                     s.k,
                                     pack.D.data() + s.D,
                                     pack.B.data() + s.B,
                                     pack.g_t.data() + s.g_t,
                                     pack.hbb.data() + s.hbb,
                                     pack.g_b.data() + s.g_b,
                                     static_cast<double>(s.rows),
                                     L.data(),
                                     S.data(),
                                     r.data(),
                                     dt.data(),
                                     dbeta.data()};
    const auto st = arrow_atom_solve<ScalarLane, 0>(args, rho_t, rho_beta);
    ASSERT_LT(st.fail_row, 0.0) << "atom " << a;
    ASSERT_EQ(st.schur_failed, 0.0) << "atom " << a;
    ArrowSolution body{dt, dbeta, std::log(st.det_mant) + st.det_exp * std::log(2.0)};
    const auto ref = reference::solve_dense(view_of(sys[a]), rho_t, rho_beta);
    ASSERT_TRUE(ref.ok());
    const tb::Errors e = tb::compare(body, ref.value());
    EXPECT_GT(e.ref_norm, 0.0);
    EXPECT_LE(e.delta, tol) << "atom " << a << " seed " << p.seed();
    EXPECT_LE(e.log_det, tol) << "atom " << a << " seed " << p.seed();
  }
  if (!::testing::Test::HasFailure()) popper::record_backend("cpu:scalar");  // the device body, run on the host
});

namespace {
void check_ptxas_log(const popper::Params& p) {
#if !POPPER_HAVE_CUDA
  (void)p;
  GTEST_SKIP() << "CUDA is off in this build: no ptxas log to check";
#else
  const std::string path = (popper::build_root() / "arrow" / "ptxas_batched_k1.log").string();
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << "missing " << path << " (built by target arrow_ptxas_log)";
  std::stringstream buf;
  buf << in.rdbuf();
  std::string log = buf.str();
  // Mutant (an input): the kernel was built with a body whose local arrays spill.
  if (popper::mutant::active("arrow-ptxas-log-spills"))
    log = std::regex_replace(log, std::regex(R"(0 bytes spill stores, 0 bytes spill loads)"),
                             "64 bytes spill stores, 64 bytes spill loads");
  const auto max_regs = p.integer("max_registers");
  const auto max_smem = p.integer("max_shared_bytes");
  const auto max_spill = p.integer("max_spill_bytes");
  const std::regex kernel_line(R"(Compiling entry function '([^']*batched_k1_kernel[^']*)')");
  const std::regex regs(R"(Used (\d+) registers)");
  const std::regex smem(R"((\d+) bytes smem)");
  const std::regex spill(R"((\d+) bytes spill stores, (\d+) bytes spill loads)");
  std::size_t kernels = 0;
  std::istringstream lines(log);
  std::string line;
  bool in_kernel = false;
  while (std::getline(lines, line)) {
    std::smatch m;
    if (std::regex_search(line, m, kernel_line)) {
      in_kernel = true;
      ++kernels;
      continue;
    }
    if (!in_kernel) continue;
    if (std::regex_search(line, m, spill)) {
      EXPECT_LE(std::stoll(m[1]), max_spill) << line;
      EXPECT_LE(std::stoll(m[2]), max_spill) << line;
    }
    if (std::regex_search(line, m, regs)) {
      EXPECT_LE(std::stoll(m[1]), max_regs) << line;
    }
    if (std::regex_search(line, m, smem)) {
      EXPECT_LE(std::stoll(m[1]), max_smem) << line;
      in_kernel = false;
    }
  }
  EXPECT_GE(kernels, 1u) << "no batched_k1_kernel entry in " << path << ":\n" << log;
#endif
}
}  // namespace

POPPER_FALSIFIER("FALSIFY-ARROW-010", check_ptxas_log);
