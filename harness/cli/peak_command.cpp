// `popper peak`: measured FMA throughput and memory bandwidth of this machine,
// cached in <build>/peak.json (keyed by machine fingerprint) and written into
// every bench CSV header. Method in harness/src/bench/peak.hpp. Then the vendor
// check (harness/src/bench/vendors.hpp): which GEMM kernel sets OpenBLAS and BLIS
// load here, and a warning when the one a user gets by default runs more than
// 1.2x below the library's best (cached in <build>/vendors.json).
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>

#include "commands.hpp"
#include "bench/device_peak.hpp"
#include "popper/runtime_paths.hpp"
#include "bench/machine.hpp"
#include "bench/peak.hpp"
#include "bench/vendors.hpp"
#include "popper/error.hpp"

namespace popper::cli {

// <build>/bin/popper -> <build>
std::string default_build_dir() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "build";
  return exe.parent_path().parent_path().string();
}

void add_peak_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("peak", "Measure sustained FMA throughput and triad bandwidth (cached)");
  auto cache = std::make_shared<std::string>();
  auto refresh = std::make_shared<bool>(false);
  auto json = std::make_shared<bool>(false);
  auto no_vendors = std::make_shared<bool>(false);
  auto device = std::make_shared<bool>(false);
  auto source_dir = std::make_shared<std::string>(".");
  cmd->add_option("--cache", *cache, "cache file (default <build>/peak.json)");
  cmd->add_flag("--refresh", *refresh, "measure again even when the cache matches this machine");
  cmd->add_flag("--json", *json, "print the cached JSON instead of the table");
  cmd->add_flag("--no-vendors", *no_vendors,
                "skip the ceiling vendor check (OpenBLAS core types, BLIS sub-configurations)");
  cmd->add_flag("--device", *device,
                "also the CUDA device's ceilings: FP32 FMA, cuBLAS f32/tf32/f16/bf16 GEMM, copy and triad bandwidth "
                "(cached as peak-device.json beside the --cache file, measured by the popper_peak_device beside this "
                "popper; exit 2 without a device, with the reason)");
  cmd->add_option("--source-dir", *source_dir, "repository root (bench/gemm/family.yaml names the vendors)");
  cmd->callback([cache, refresh, json, no_vendors, device, source_dir, &exit_code] {
    try {
      const std::string path = cache->empty() ? default_build_dir() + "/peak.json" : *cache;
      const auto machine = bench::probe_machine();
      const auto p =
          bench::cached_or_measured_peak(path, machine, *refresh, [](const std::string& s) { std::cerr << s << "\n"; });
      if (*json) std::cout << bench::peak_to_json(p);
      else std::cout << bench::format_peak(p) << "cache        " << path << "\n";
      exit_code = 0;
      if (!*no_vendors && !*json) {
        const std::string build = std::filesystem::path(path).parent_path().string();
        const auto plan = bench::cached_vendor_check(*source_dir, build.empty() ? "." : build, machine, *refresh,
                                                     [](const std::string& s) { std::cerr << s << "\n"; });
        std::cout << "\n" << bench::format_vendor_check(plan);
      }
      if (*device) {
        const std::string build = std::filesystem::path(path).parent_path().string();
        const auto d = bench::cached_or_measured_device_peak(build.empty() ? "." : build,
                                                             popper::program_dir().string(), machine.gpu, *refresh,
                                                             [](const std::string& s) { std::cerr << s << "\n"; });
        std::cout << "\n" << bench::format_device_peak(d);
      }
    } catch (const Error& e) {
      std::cerr << "popper peak: " << e.what() << "\n";
      exit_code = 2;
    }
  });
}

}  // namespace popper::cli
