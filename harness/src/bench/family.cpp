// family.yaml reader (schema in family.hpp and baselines/README.md).
#include "bench/family.hpp"

#include <fmt/format.h>

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "bench/csv.hpp"
#include "popper/error.hpp"

namespace popper::bench {
namespace {

std::vector<std::string> string_list(const YAML::Node& n, const std::string& what, const std::string& path) {
  if (!n.IsSequence()) throw Error(path + ": '" + what + "' must be a list");
  std::vector<std::string> out;
  for (const auto& item : n) out.push_back(item.as<std::string>());
  return out;
}

const std::set<std::string>& peak_kinds() {
  static const std::set<std::string> k = {"fp32",        "fp64",       "bandwidth",   "roofline",
                                          "device_fp32", "device_f16", "device_bf16", "device_bandwidth"};
  return k;
}

std::map<std::string, std::string> peak_map(const YAML::Node& n, const std::string& what, const std::string& path) {
  if (!n.IsMap()) throw Error(path + ": '" + what + "' maps precision to a peak kind");
  std::map<std::string, std::string> out;
  for (const auto& kv : n) {
    const auto v = kv.second.as<std::string>();
    if (!peak_kinds().count(v))
      throw Error(fmt::format("{}: {} '{}' must be one of {}", path, what, v, fmt::join(peak_kinds(), ", ")));
    out[kv.first.as<std::string>()] = v;
  }
  return out;
}

}  // namespace

FamilyDescriptor parse_family_yaml(const std::string& text, const std::string& path) {
  FamilyDescriptor f;
  f.path = path;
  try {
    const YAML::Node root = YAML::Load(text);
    if (!root.IsMap()) throw Error(path + ": a family descriptor is a mapping");
    static const std::set<std::string> known = {
        "family", "executable", "ceilings",   "blas_core_types", "wrapped_vendor", "work_unit",     "peak",
        "gate",   "device",     "source_dir", "build_dir",       "contracts",      "cold_ceilings", "bench_mutants"};
    for (const auto& kv : root) {
      const auto key = kv.first.as<std::string>();
      if (!known.count(key)) throw Error(fmt::format("{}:{}: unknown key '{}'", path, kv.first.Mark().line + 1, key));
    }
    if (!root["family"]) throw Error(path + ": missing 'family'");
    f.family = root["family"].as<std::string>();
    f.executable = root["executable"] ? root["executable"].as<std::string>() : "bench_" + f.family;
    if (root["ceilings"]) f.ceilings = string_list(root["ceilings"], "ceilings", path);
    if (root["cold_ceilings"]) f.cold_ceilings = string_list(root["cold_ceilings"], "cold_ceilings", path);
    for (const auto& c : f.cold_ceilings)
      if (std::find(f.ceilings.begin(), f.ceilings.end(), c) == f.ceilings.end())
        throw Error(path + ": cold_ceilings names '" + c + "', which is not in 'ceilings'");
    if (root["blas_core_types"]) f.blas_core_types = root["blas_core_types"].as<bool>();
    if (root["wrapped_vendor"]) f.wrapped_vendor = root["wrapped_vendor"].as<std::string>();
    if (root["work_unit"]) f.work_unit = root["work_unit"].as<std::string>();
    if (f.work_unit != "flop" && f.work_unit != "items") throw Error(path + ": 'work_unit' must be flop or items");
    if (root["peak"]) f.peak = peak_map(root["peak"], "peak", path);
    if (const auto d = root["device"]) {
      DeviceSpec spec;
      if (d["env"]) {
        if (!d["env"].IsMap()) throw Error(path + ": 'device.env' maps variable names to values");
        for (const auto& kv : d["env"]) spec.env.emplace_back(kv.first.as<std::string>(), kv.second.as<std::string>());
      }
      if (d["ceilings"]) spec.ceilings = string_list(d["ceilings"], "device.ceilings", path);
      if (d["peak"]) spec.peak = peak_map(d["peak"], "device.peak", path);
      if (spec.peak.empty()) throw Error(path + ": 'device.peak' names the precisions the device tiers measure");
      f.device = std::move(spec);
    }
    if (const auto g = root["gate"]) {
      if (g["shapes"]) f.gate.shapes = string_list(g["shapes"], "gate.shapes", path);
      if (g["tiers"]) f.gate.tiers = tiers_from(string_list(g["tiers"], "gate.tiers", path), path + ": gate.tiers");
      if (g["precisions"]) f.gate.precisions = string_list(g["precisions"], "gate.precisions", path);
      if (g["iterations"]) f.gate.iterations = g["iterations"].as<int>();
      if (f.gate.iterations < 1) throw Error(path + ": gate.iterations must be >= 1");
    }
    if (const auto m = root["bench_mutants"]) {
      if (!m.IsMap() || !m["rows"])
        throw Error(path + ": 'bench_mutants' maps 'rows' (and optionally 'cold_rows') to benchmark filters");
      for (const auto& kv : m)
        if (const auto key = kv.first.as<std::string>(); key != "rows" && key != "cold_rows")
          throw Error(fmt::format("{}:{}: unknown key 'bench_mutants.{}'", path, kv.first.Mark().line + 1, key));
      f.bench_mutants.rows = m["rows"].as<std::string>();
      if (m["cold_rows"]) f.bench_mutants.cold_rows = m["cold_rows"].as<std::string>();
    }
    for (auto [key, field] :
         {std::pair{"source_dir", &f.source_dir}, {"build_dir", &f.build_dir}, {"contracts", &f.contracts}})
      if (root[key]) *field = root[key].as<std::string>();
  } catch (const YAML::Exception& e) {
    throw Error(path + ": " + e.what());
  }
  return f;
}

FamilyDescriptor load_family(const std::string& source_dir, const std::string& family, const std::string& build_dir) {
  namespace fs = std::filesystem;
  std::vector<std::string> looked;
  auto read = [&](const std::string& path, bool named_by_path) {
    std::ifstream in(path);
    std::ostringstream ss;
    ss << in.rdbuf();
    auto f = parse_family_yaml(ss.str(), path);
    if (!named_by_path && f.family != family)
      throw Error(path + ": 'family' says '" + f.family + "' but the folder is '" + family + "'");
    return f;
  };
  if (family.size() > 5 && family.ends_with(".yaml")) {
    if (!fs::is_regular_file(family)) throw Error("no family descriptor " + family);
    return read(family, true);
  }
  if (!build_dir.empty()) {
    const std::string path = build_dir + "/popper-bench/" + family + "/family.yaml";
    if (fs::is_regular_file(path)) return read(path, false);
    looked.push_back(path);
  }
  const std::string path = source_dir + "/bench/" + family + "/family.yaml";
  if (fs::is_regular_file(path)) return read(path, false);
  looked.push_back(path);
  const auto known = list_families(source_dir, build_dir);
  throw Error(fmt::format(
      "unknown bench family '{}': no descriptor at {} (families there: {}; a project's family is written into its "
      "build tree by popper_add_bench_family(), see baselines/README.md)",
      family, fmt::join(looked, ", "),
      known.empty() ? std::string("none") : fmt::format("{}", fmt::join(known, ", "))));
}

FamilyDescriptor on_device(const FamilyDescriptor& f) {
  if (!f.device) throw Error(f.path + ": family '" + f.family + "' has no device tiers (no 'device:' block)");
  FamilyDescriptor d = f;
  d.ceilings = f.device->ceilings;
  d.peak = f.device->peak;
  d.blas_core_types = false;
  d.device_tiers = true;
  return d;
}

bool host_timed(const FamilyDescriptor& f, Tier tier) { return !f.device_tiers && tier != Tier::Device; }

std::vector<std::string> list_families(const std::string& source_dir, const std::string& build_dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& dir : {source_dir + "/bench", build_dir.empty() ? std::string() : build_dir + "/popper-bench"}) {
    if (dir.empty()) continue;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec))
      if (e.is_directory() && std::filesystem::exists(e.path() / "family.yaml")) out.push_back(e.path().filename());
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace popper::bench
