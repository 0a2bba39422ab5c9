// The names of committed baseline folders are keys: the gate key
// (baselines/gate-*/) and the machine fingerprint are recomputed here from the
// metadata each committed CSV records, so a change to the slug or hash they
// are made of fails here, not as a gate that silently finds no baseline.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "bench/csv.hpp"
#include "bench/gate.hpp"
#include "bench/machine.hpp"

namespace {

namespace fs = std::filesystem;
namespace pb = popper::bench;

TEST(BenchKeys, CommittedBaselinesKeepTheirGateKeyAndFingerprint) {
  int checked = 0;
  for (const auto& dir : fs::directory_iterator(fs::path(POPPER_SOURCE_DIR) / "baselines")) {
    if (!dir.is_directory()) continue;
    for (const auto& f : fs::directory_iterator(dir.path())) {
      const std::string name = f.path().filename().string();
      if (f.path().extension() != ".csv" || name.find(".prev.") != std::string::npos) continue;
      const auto t = pb::read_bench_csv(f.path().string());
      if (const auto key = t.meta("gate_key")) {
        pb::GateKey k;
        k.cpu_isa = t.meta("gate_cpu_isa").value_or("");
        k.caches = t.meta("gate_caches").value_or("");
        k.openblas_core = t.meta("gate_openblas_core").value_or("");
        k.openblas_config = t.meta("gate_openblas_config").value_or("");
        k.compiler = t.meta("gate_compiler").value_or("");
        k.build_type = t.meta("gate_build_type").value_or("");
        k.flags = t.meta("gate_flags").value_or("");
        EXPECT_EQ(k.id(), *key) << f.path();
        EXPECT_EQ(*key, dir.path().filename().string()) << f.path();
      }
      pb::MachineInfo m;
      m.cpu_model = t.meta("cpu_model").value_or("");
      m.cores = std::stoi(t.meta("cores").value_or("0"));
      std::istringstream isa(t.meta("isa").value_or(""));
      for (std::string flag; isa >> flag;) m.isa.push_back(flag);
      m.blas_core = t.meta("blas_core").value_or("");
      EXPECT_EQ(pb::fingerprint(m), t.meta("fingerprint").value_or("")) << f.path();
      ++checked;
    }
  }
  if (checked == 0) GTEST_SKIP() << "no committed baseline under " << POPPER_SOURCE_DIR << "/baselines";
}

}  // namespace
