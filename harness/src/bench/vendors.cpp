// Ceiling vendors, their configurations, the CPU check and the mis-detection
// check (vendors.hpp).
#include "bench/vendors.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "bench/ingest.hpp"
#include "bench/placement.hpp"
#include "common/process.hpp"
#include "common/text.hpp"
#include "popper/io.hpp"

namespace popper::bench {
namespace {

struct KernelSet {
  const char* name;
  int id;  // BLIS arch_t id; -1 for OpenBLAS core types
  std::vector<std::string> needs;
};

const std::vector<std::string> kAvx512 = {"avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"};

std::vector<std::string> plus(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// OpenBLAS x86-64 core types worth timing (DYNAMIC_ARCH builds), narrowest
// first, with the instructions their kernels use.
const std::vector<KernelSet>& openblas_core_types() {
  static const std::vector<KernelSet> t = {
      {"Nehalem", -1, {"sse4_2"}},
      {"Sandybridge", -1, {"avx"}},
      {"Haswell", -1, {"avx2", "fma"}},
      {"Zen", -1, {"avx2", "fma"}},
      {"SkylakeX", -1, kAvx512},
      {"Cooperlake", -1, plus(kAvx512, {"avx512_bf16"})},
      {"SapphireRapids", -1, plus(kAvx512, {"avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16"})},
  };
  return t;
}

// BLIS 0.9 x86-64 sub-configurations by arch_t id (BLIS_ARCH_TYPE takes the
// id; verified on the installed library by --probe). knc is the Knights
// Corner coprocessor ISA (IMCI), never a host CPU's; the Bulldozer family
// kernels use FMA4.
const std::vector<KernelSet>& blis_subconfigs() {
  static const std::vector<KernelSet> t = {
      {"skx", 0, {"avx512f", "avx512dq", "avx512bw", "avx512vl"}},
      {"knl", 1, {"avx512f", "avx512pf", "avx512er"}},
      {"knc", 2, {"imci"}},
      {"haswell", 3, {"avx2", "fma"}},
      {"sandybridge", 4, {"avx"}},
      {"penryn", 5, {"ssse3", "sse4_1"}},
      {"zen3", 6, {"avx2", "fma"}},
      {"zen2", 7, {"avx2", "fma"}},
      {"zen", 8, {"avx2", "fma"}},
      {"excavator", 9, {"fma4", "avx2"}},
      {"steamroller", 10, {"fma4", "avx"}},
      {"piledriver", 11, {"fma4", "avx"}},
      {"bulldozer", 12, {"fma4", "avx"}},
      {"generic", 25, {}},
  };
  return t;
}

std::string lower(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

std::optional<std::string> env_value(const std::string& name) {
  const char* v = std::getenv(name.c_str());
  if (!v) return std::nullopt;
  return std::string(v);
}

// libtorch (Debian's) runs its GEMMs on OpenBLAS: its kernel set is OpenBLAS's.
bool openblas_kernels(const std::string& vendor) { return vendor == "openblas" || vendor == "libtorch"; }

std::string variable_of(const std::string& vendor) {
  return vendor == "blis" ? "BLIS_ARCH_TYPE" : openblas_kernels(vendor) ? "OPENBLAS_CORETYPE" : "";
}

std::string vendor_title(const std::string& vendor) {
  return vendor == "blis" ? "BLIS" : vendor == "openblas" ? "OpenBLAS" : vendor;
}

// BLIS 0.9 reads BLIS_ARCH_TYPE with atoi: a name or an empty string is id 0.
int blis_id_of(const std::string& value) { return std::atoi(value.c_str()); }

const KernelSet* blis_by_id(int id) {
  for (const auto& k : blis_subconfigs())
    if (k.id == id) return &k;
  return nullptr;
}
const KernelSet* openblas_by_name(const std::string& name) {
  for (const auto& k : openblas_core_types())
    if (lower(k.name) == lower(name)) return &k;
  return nullptr;
}

std::string fmt_factor(double f) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2fx", f);
  return b;
}

// Best of the repetitions: on a shared machine interference only ever adds time.
double best_of(const std::vector<double>& v) { return v.empty() ? 0 : *std::min_element(v.begin(), v.end()); }

std::string first_line(const std::string& s) {
  const auto nl = s.find('\n');
  return nl == std::string::npos ? s : s.substr(0, nl);
}

// The stderr line a library prints before it dies (BLIS: "libblis: ...").
std::string last_meaningful_line(const std::string& err) {
  std::istringstream in(err);
  std::string line, keep;
  while (std::getline(in, line))
    if (line.find("Aborting") == std::string::npos && !line.empty()) keep = line;
  return keep;
}

}  // namespace

const char* to_string(ConfigStatus s) {
  switch (s) {
    case ConfigStatus::Run: return "run";
    case ConfigStatus::CpuLacks: return "cpu_lacks";
    case ConfigStatus::NotBuilt: return "not_built";
    case ConfigStatus::Duplicate: return "duplicate";
    case ConfigStatus::ScreenedOut: return "screened_out";
    case ConfigStatus::Failed: return "failed";
    case ConfigStatus::Missing: return "missing";
  }
  return "?";
}

std::string VendorConfig::backend() const {
  return vendor + ":" + (selected.empty() ? (requested.empty() ? std::string("default") : requested) : selected);
}

std::string VendorConfig::setting() const {
  if (variable.empty()) return "default";
  if (!value) return variable + " unset";
  return variable + "=" + *value;
}

std::vector<std::pair<std::string, std::string>> VendorConfig::env_set(int threads) const {
  std::vector<std::pair<std::string, std::string>> env;
  if (value && !inherited) env.emplace_back(variable, *value);
  if (vendor == "blis") env.emplace_back("BLIS_NUM_THREADS", std::to_string(threads));
  if (vendor == "openblas") env.emplace_back("OPENBLAS_NUM_THREADS", std::to_string(threads));
  return env;
}

std::vector<std::string> VendorConfig::env_unset() const {
  if (!value && !variable.empty()) return {variable};
  return {};
}

std::string vendor_of(const std::string& program) {
  if (program.rfind("blis_", 0) == 0) return "blis";
  if (program.rfind("cublas_", 0) == 0) return "cublas";
  if (program.rfind("ggml_", 0) == 0) return "ggml-cpu";   // llama.cpp's CPU backend; probes print its variant
  if (program.rfind("torch_", 0) == 0) return "libtorch";  // the train family's peer; probes print its version
  return "openblas";
}

std::vector<VendorConfig> candidate_configs(const std::string& program, bool enumerate) {
  const std::string vendor = vendor_of(program), variable = variable_of(vendor);
  std::vector<VendorConfig> out;
  VendorConfig base;
  base.vendor = vendor;
  base.program = program;
  base.variable = variable;

  // 1. The environment as inherited.
  VendorConfig inh = base;
  inh.inherited = true;
  inh.value = variable.empty() ? std::nullopt : env_value(variable);
  if (inh.value) {
    if (openblas_kernels(vendor)) {
      if (const KernelSet* k = openblas_by_name(*inh.value)) {
        inh.requested = k->name;
        inh.needs = k->needs;
      }  // an unknown name: OpenBLAS falls back to its own detection
    } else if (vendor == "blis") {
      const int id = blis_id_of(*inh.value);
      if (const KernelSet* k = blis_by_id(id)) {
        inh.requested = k->name;
        inh.needs = k->needs;
      } else {
        inh.requested = "arch id " + std::to_string(id);
      }
    }
  }
  out.push_back(inh);
  if (!enumerate || variable.empty()) return out;

  // 2. The library's own detection, when the inherited environment overrides it.
  if (inh.value) out.push_back(base);
  // 3. Every kernel set of the table.
  const auto& table = vendor == "blis" ? blis_subconfigs() : openblas_core_types();
  for (const auto& k : table) {
    VendorConfig c = base;
    c.requested = k.name;
    c.value = vendor == "blis" ? std::to_string(k.id) : std::string(k.name);
    c.needs = k.needs;
    out.push_back(c);
  }
  return out;
}

std::vector<std::string> missing_flags(const VendorConfig& cfg, const MachineInfo& m) {
  std::vector<std::string> out;
  for (const auto& f : cfg.needs)
    if (!has_cpu_flag(m, f)) out.push_back(f);
  return out;
}

void refuse_unexecutable(std::vector<VendorConfig>& configs, const MachineInfo& m) {
  for (auto& c : configs) {
    if (c.status != ConfigStatus::Run) continue;
    const auto lacks = missing_flags(c, m);
    if (lacks.empty()) continue;
    const std::string why =
        "its " + c.requested + " kernels need " + join(c.needs, ", ") + "; this CPU lacks " + join(lacks, ", ");
    if (c.inherited)
      throw ConfigRefused(
          c.setting() + " is set in this environment, but " + why + ": every " + vendor_title(c.vendor) +
          " call (ceiling and wrapped tiers, and any program linking it) would "
          "die with SIGILL. Fix: unset " +
          c.variable + " (" + vendor_title(c.vendor) + " then detects the CPU) or set it to kernels this CPU runs.");
    c.status = ConfigStatus::CpuLacks;
    c.reason = why;
  }
}

bool backend_of_configuration(const std::string& row_backend, const std::string& configuration_backend) {
  return row_backend == configuration_backend || row_backend.rfind(configuration_backend + "+", 0) == 0;
}

std::vector<const VendorConfig*> CeilingPlan::runnable(const std::string& program) const {
  std::vector<const VendorConfig*> out;
  for (const auto& c : configs)
    if (c.program == program && c.status == ConfigStatus::Run) out.push_back(&c);
  return out;
}

std::vector<std::string> CeilingPlan::tried_lines() const {
  std::vector<std::string> vendors, lines;
  for (const auto& c : configs)
    if (std::find(vendors.begin(), vendors.end(), c.vendor + "|" + c.program) == vendors.end())
      vendors.push_back(c.vendor + "|" + c.program);
  for (const auto& vp : vendors) {
    std::vector<std::string> parts;
    std::string vendor, program;
    for (const auto& c : configs) {
      if (c.vendor + "|" + c.program != vp) continue;
      vendor = c.vendor;
      program = c.program;
      if (c.status != ConfigStatus::Run && c.status != ConfigStatus::ScreenedOut) continue;
      std::string p = c.selected.empty() ? c.requested : c.selected;
      p += fmt::format(" ({}{}{})", c.setting(), c.inherited ? ", inherited" : "",
                       c.status == ConfigStatus::ScreenedOut ? ", screened out" : "");
      parts.push_back(p);
    }
    lines.push_back(fmt::format("{} [{}]: {}", vendor, program, parts.empty() ? "none runnable" : join(parts, "; ")));
  }
  return lines;
}

std::vector<CeilingSkip> CeilingPlan::not_run() const {
  std::vector<CeilingSkip> out;
  for (const auto& c : configs) {
    if (c.status == ConfigStatus::Run) continue;
    if (c.status == ConfigStatus::Duplicate) continue;  // same kernels: nothing lost
    out.push_back({c.vendor, c.requested, c.setting(), to_string(c.status), c.reason});
  }
  return out;
}

std::vector<Misdetection> find_misdetections(const std::vector<VendorConfig>& configs, const std::string& shape,
                                             double threshold) {
  std::vector<Misdetection> out;
  std::vector<std::string> programs;
  for (const auto& c : configs)
    if (std::find(programs.begin(), programs.end(), c.program) == programs.end()) programs.push_back(c.program);
  static const char* kPrec[2] = {"f32", "f64"};
  for (const auto& prog : programs) {
    const VendorConfig* inh = nullptr;
    for (const auto& c : configs)
      if (c.program == prog && c.inherited && c.status == ConfigStatus::Run) inh = &c;
    if (!inh) continue;
    // The worst precision decides; both factors go into the message.
    double factor[2] = {0, 0};
    const VendorConfig* best[2] = {nullptr, nullptr};
    for (int p = 0; p < 2; ++p) {
      if (inh->check_seconds[p] <= 0) continue;
      for (const auto& c : configs) {
        if (c.program != prog || c.check_seconds[p] <= 0) continue;
        if (c.status != ConfigStatus::Run && c.status != ConfigStatus::ScreenedOut) continue;
        if (!best[p] || c.check_seconds[p] < best[p]->check_seconds[p]) best[p] = &c;
      }
      if (best[p]) factor[p] = inh->check_seconds[p] / best[p]->check_seconds[p];
    }
    const int w = factor[1] >= factor[0] ? 1 : 0;
    if (!best[w] || factor[w] <= threshold) continue;
    Misdetection md;
    md.vendor = inh->vendor;
    md.variable = inh->variable;
    md.value = inh->value;
    md.selected = inh->selected;
    md.best = best[w]->selected;
    md.best_setting = best[w]->setting();
    md.shape = shape;
    md.precision = kPrec[w];
    md.factor = factor[w];
    const std::string title = vendor_title(md.vendor);
    std::string why;
    if (md.value)
      why = title + " runs its " + md.selected + " kernels because " + inh->setting() + " is set in this environment";
    else if (lower(md.selected) == "generic")
      why = title + " does not recognise this CPU and falls back to its 'generic' kernels (" + inh->setting() + ")";
    else why = title + " picks its " + md.selected + " kernels by itself (" + inh->setting() + ")";
    std::string faster = fmt_factor(factor[w]) + " faster in " + kPrec[w];
    if (factor[1 - w] > 0 && best[1 - w]) faster += " (" + fmt_factor(factor[1 - w]) + " in " + kPrec[1 - w] + ")";
    std::string fix;
    if (!best[w]->value) fix = fmt::format("unset {} ({} then picks {} itself)", md.variable, title, md.best);
    else fix = "export " + best[w]->setting() + (md.vendor == "blis" ? " (" + md.best + ")" : std::string());
    md.message = fmt::format("warning: {}; its {} kernels run {} {} on this machine. Fix: {}.", why, md.best, shape,
                             faster, fix);
    out.push_back(md);
  }
  return out;
}

std::vector<std::string> confirm_misdetections(CeilingPlan& plan, const BenchTable& table, double threshold) {
  std::vector<std::string> said;
  std::vector<Misdetection> confirmed;
  for (const auto& w : plan.warnings) {
    const auto inherited = std::find_if(plan.configs.begin(), plan.configs.end(), [&](const VendorConfig& c) {
      return c.inherited && c.status == ConfigStatus::Run && c.vendor == w.vendor && c.selected == w.selected;
    });
    if (inherited == plan.configs.end()) {
      confirmed.push_back(w);
      continue;
    }
    std::optional<Misdetection> worst;
    int groups = 0;  // warm groups with the inherited configuration's row and another's
    for (const auto& r : table.rows) {
      const int p = r.key.precision == "f32" ? 0 : r.key.precision == "f64" ? 1 : -1;
      if (r.key.tier != Tier::Ceiling || r.key.backend != inherited->backend() || r.key.cache_mode != "warm" || p < 0 ||
          r.samples.empty() || r.unit != kUnitSeconds)
        continue;
      // Each of the program's configurations as if screened on this group alone.
      std::vector<VendorConfig> here;
      int timed = 0;
      for (VendorConfig c : plan.configs) {
        if (c.program != inherited->program) continue;
        c.check_seconds[0] = c.check_seconds[1] = 0;
        BenchKey key = r.key;
        key.backend = c.backend();
        if (const BenchRow* o = table.find(key); o && !o->samples.empty() && o->unit == kUnitSeconds)
          c.check_seconds[p] = o->median(), ++timed;
        here.push_back(std::move(c));
      }
      if (timed < 2) continue;
      ++groups;
      const std::string where =
          fmt::format("{} at {} thread{}", r.key.shape, r.key.threads, r.key.threads == 1 ? "" : "s");
      for (auto& m : find_misdetections(here, where, threshold))
        if (!worst || m.factor > worst->factor) worst = std::move(m);
    }
    if (groups == 0) {
      confirmed.push_back(w);
    } else if (worst) {
      said.push_back(worst->message +
                     fmt::format(" (from the rows timed; the screening read {} {:.2f}x)", w.shape, w.factor));
      confirmed.push_back(std::move(*worst));
    } else {
      said.push_back(fmt::format(
          "the screening's advice for {} is withdrawn: on the {} group(s) timed, its {} kernels run within {:.2f}x "
          "of its fastest configuration timed (the screening read {} {:.2f}x)",
          vendor_title(w.vendor), groups, w.selected, threshold, w.shape, w.factor));
    }
  }
  plan.warnings = std::move(confirmed);
  return said;
}

namespace {

// Step 4's timing: every runnable configuration, one process per thread count
// over the program's screened shapes, best of `reps` in f32 and f64.
void time_screening(CeilingPlan& plan, const std::string& bin,
                    const std::map<std::string, std::vector<std::string>>& shapes, const PlanOptions& opt,
                    const std::function<void(const std::string&)>& say) {
  char min_time[32];
  std::snprintf(min_time, sizeof min_time, "%g", opt.screen_min_time);
  const auto cpus = bench_cpus();  // pinned as the run's rows are (placement.hpp)
  for (auto& c : plan.configs) {
    if (c.status != ConfigStatus::Run) continue;
    for (const int t : opt.screen_threads) {
      say("ceiling screening: " + c.backend() + " (" + c.setting() + ") on " + join(shapes.at(c.program), ", ") + ", " +
          std::to_string(t) + (t == 1 ? " thread" : " threads"));
      std::vector<std::string> argv = {bin + c.program, "--reps",          std::to_string(opt.check_reps),
                                       "--threads",     std::to_string(t), "--min-time",
                                       min_time};
      for (const auto& sh : shapes.at(c.program)) {
        argv.emplace_back("--shape");
        argv.push_back(sh);
      }
      const auto r = run_process(argv, c.env_set(t), c.env_unset(), 0, cpus_for(cpus, t));
      if (!r.ok()) {
        c.status = ConfigStatus::Failed;
        c.reason = "screening run " + r.describe() + ": " + last_meaningful_line(r.err);
        c.screen_seconds.clear();
        if (c.inherited) throw ConfigRefused("ceiling_" + c.program + " fails under " + c.setting() + ": " + c.reason);
        break;
      }
      // A program timing several layouts (ggml's plain and repacked) wins a row with its best one.
      for (const auto& row : rows_from_ceiling_csv(r.out, "ceiling_" + c.program)) {
        const double best = best_of(row.samples);
        if (best <= 0) continue;
        auto [it, fresh] = c.screen_seconds.emplace(screen_row(row.key.shape, row.key.precision, t), best);
        if (!fresh) it->second = std::min(it->second, best);
      }
    }
  }
}

// The check shape's 1-thread timings, which the mis-detection finding reads.
void set_check_seconds(CeilingPlan& plan) {
  for (auto& c : plan.configs)
    for (int p = 0; p < 2; ++p) {
      const auto it = c.screen_seconds.find(screen_row(plan.check_shape, p == 0 ? "f32" : "f64", 1));
      c.check_seconds[p] = it == c.screen_seconds.end() ? 0 : it->second;
    }
}

// What the screening's timings depend on besides the machine: the programs
// (their contents: a rebuild that changes nothing keeps the timings), every
// shared library they load (path, size, modification time: a library upgrade
// re-times), and the configurations timed with what each loads.
std::string file_identity(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) return path + ":missing";
  const auto t = std::filesystem::last_write_time(path, ec);
  return path + ":" + std::to_string(size) + ":" + std::to_string(ec ? 0 : t.time_since_epoch().count());
}

// A program by its name and contents, not its path: `--build-dir build` and
// the absolute default name the same programs.
std::string content_identity(const std::string& path) {
  const std::string name = std::filesystem::path(path).filename().string();
  std::ifstream in(path, std::ios::binary);
  if (!in) return name + ":missing";
  std::ostringstream bytes;
  bytes << in.rdbuf();
  const std::string b = bytes.str();
  return name + ":" + std::to_string(b.size()) + ":" + std::to_string(fnv1a(b));
}

std::string screening_key(const CeilingPlan& plan, const MachineInfo& m, const std::string& bin,
                          const std::map<std::string, std::vector<std::string>>& shapes, const PlanOptions& opt) {
  std::ostringstream key;
  key << "fingerprint=" << fingerprint(m) << ";check=" << plan.check_shape << ";reps=" << opt.check_reps
      << ";min_time=" << opt.screen_min_time << ";threads=";
  for (const int t : opt.screen_threads) key << t << ",";
  key << ";";
  std::vector<std::string> programs;
  for (const auto& c : plan.configs)
    if (c.status == ConfigStatus::Run) {
      key << c.backend() << "[" << c.setting() << "->" << c.selected << "];";
      if (std::find(programs.begin(), programs.end(), c.program) == programs.end()) programs.push_back(c.program);
    }
  for (const auto& prog : programs) {
    key << content_identity(bin + prog) << "{" << join(shapes.at(prog), ",") << "};";
    const auto r = run_process({"ldd", bin + prog});
    const bool is_static = (r.out + r.err).find("not a dynamic executable") != std::string::npos;
    if (!r.ok() && !is_static) return "";  // its libraries unknown: time it
    std::istringstream in(r.out);
    for (std::string line; std::getline(in, line);) {
      const auto arrow = line.find("=> /");
      if (arrow == std::string::npos) continue;
      const std::string lib = line.substr(arrow + 3, line.find(" (", arrow) - arrow - 3);
      std::error_code ec;
      const auto real = std::filesystem::weakly_canonical(lib, ec);
      key << file_identity(ec ? lib : real.string()) << ";";
    }
  }
  return key.str();
}

// The cache holds the latest screenings of different setups (thread counts,
// configurations: bench gate's and bench compare's differ), so that one does
// not evict the other: {"entries": [{"key", "check_shape", "configs"}, ...]}.
constexpr std::size_t kScreeningsKept = 8;

nlohmann::json read_screenings(const std::string& path) {
  std::ifstream in(path);
  if (!in) return nlohmann::json::array();
  try {
    auto j = nlohmann::json::parse(in);
    if (j.is_object() && j.contains("entries") && j.at("entries").is_array()) return j.at("entries");
  } catch (const std::exception&) {
    // unreadable or from another version: time it again
  }
  return nlohmann::json::array();
}

bool reuse_screening(const std::string& path, const std::string& key, CeilingPlan& plan) {
  try {
    const nlohmann::json* entry = nullptr;
    const auto entries = read_screenings(path);
    for (const auto& e : entries)
      if (e.at("key").get<std::string>() == key) entry = &e;
    if (!entry) return false;
    std::map<std::string, const nlohmann::json*> by_backend;
    for (const auto& c : entry->at("configs")) by_backend[c.at("backend").get<std::string>()] = &c;
    // Every configuration to screen must have a readable entry before any is applied.
    struct Entry {
      VendorConfig* config;
      std::map<std::string, double> seconds;
      bool failed;
      std::string reason;
    };
    std::vector<Entry> found;
    for (auto& c : plan.configs) {
      if (c.status != ConfigStatus::Run) continue;
      const auto it = by_backend.find(c.backend());
      if (it == by_backend.end()) return false;
      const auto& e = *it->second;
      found.push_back({&c, e.at("screen_seconds").get<std::map<std::string, double>>(), e.at("failed").get<bool>(),
                       e.at("reason").get<std::string>()});
    }
    for (auto& e : found) {
      e.config->screen_seconds = e.seconds;
      if (e.failed) {
        e.config->status = ConfigStatus::Failed;
        e.config->reason = e.reason;
      }
    }
    return true;
  } catch (const std::exception&) {
    return false;  // unreadable or from another version: time it again
  }
}

void save_screening(const std::string& path, const std::string& key, const CeilingPlan& plan) {
  nlohmann::json entry = {{"key", key}, {"check_shape", plan.check_shape}, {"configs", nlohmann::json::array()}};
  for (const auto& c : plan.configs)
    if (!c.screen_seconds.empty() || c.status == ConfigStatus::Failed)
      entry["configs"].push_back({{"backend", c.backend()},
                                  {"screen_seconds", c.screen_seconds},
                                  {"failed", c.status == ConfigStatus::Failed},
                                  {"reason", c.status == ConfigStatus::Failed ? c.reason : std::string()}});
  nlohmann::json entries = nlohmann::json::array();
  for (const auto& e : read_screenings(path))
    if (e.is_object() && e.value("key", std::string()) != key) entries.push_back(e);
  while (entries.size() >= kScreeningsKept) entries.erase(entries.begin());  // the oldest first
  entries.push_back(entry);
  try {
    write_file_atomic(path, nlohmann::json{{"entries", entries}}.dump(2) + "\n");
  } catch (const std::exception&) {
    // a cache that cannot be written costs the next run its timing, nothing else
  }
}

double geomean(const std::map<std::string, double>& seconds) {
  double sum = 0;
  for (const auto& [row, t] : seconds) sum += std::log(t);
  return seconds.empty() ? 0 : std::exp(sum / static_cast<double>(seconds.size()));
}

}  // namespace

std::string screen_row(const std::string& shape, const std::string& precision, int threads) {
  return shape + " " + precision + " " + std::to_string(threads) + "t";
}

void screen_for_wins(std::vector<VendorConfig>& configs, const std::string& wrapped_vendor, double margin) {
  std::vector<VendorConfig*> timed;
  for (auto& c : configs)
    if (c.status == ConfigStatus::Run && !c.screen_seconds.empty()) timed.push_back(&c);
  // Fastest first (geometric mean over its rows), ties in table order.
  std::stable_sort(timed.begin(), timed.end(), [](const VendorConfig* a, const VendorConfig* b) {
    return geomean(a->screen_seconds) < geomean(b->screen_seconds);
  });
  std::vector<const VendorConfig*> kept;
  std::set<std::string> vendors_kept;
  for (auto* c : timed)  // the wrapped tier's reference, then each vendor's fastest
    if (c->inherited && (wrapped_vendor.empty() || c->vendor == wrapped_vendor)) kept.push_back(c);
  for (auto* c : timed)
    if (vendors_kept.insert(c->vendor).second && std::find(kept.begin(), kept.end(), c) == kept.end())
      kept.push_back(c);
  auto best_kept = [&](const std::string& row) {
    double best = 0;
    for (const auto* k : kept) {
      const auto it = k->screen_seconds.find(row);
      if (it != k->screen_seconds.end() && (best == 0 || it->second < best)) best = it->second;
    }
    return best;
  };
  for (auto* c : timed) {
    if (std::find(kept.begin(), kept.end(), c) != kept.end()) continue;
    // Its closest showing: the row where it is fastest against the kept ones.
    double closest = 1e300;
    std::string where;
    for (const auto& [row, t] : c->screen_seconds) {
      const double best = best_kept(row);
      const double gap = best > 0 ? t / best : 0;  // a row no kept one has: it wins it
      if (gap < closest) closest = gap, where = row;
    }
    if (closest * margin < 1) {
      kept.push_back(c);
      continue;
    }
    c->status = ConfigStatus::ScreenedOut;
    c->reason = "cannot win a row: on none of its " + std::to_string(c->screen_seconds.size()) +
                " screened rows is it more than " + fmt_factor(margin) +
                " faster than the configurations kept (at best " + fmt_factor(closest) + " their time, on " + where +
                "; POPPER_CEILING_CONFIGS=all runs it)";
  }
}

CeilingPlan plan_ceiling(const FamilyDescriptor& fam, const MachineInfo& m, const std::string& build_dir,
                         const PlanOptions& opt, const std::string& check_shape_in) {
  auto say = [&](const std::string& s) {
    if (opt.progress) opt.progress(s);
  };
  CeilingPlan plan;
  const std::string bin = build_dir + "/bin/ceiling_";
  const std::vector<std::string>& programs = fam.ceilings;
  for (const auto& prog : programs) {
    auto cands = candidate_configs(prog, opt.enumerate && fam.blas_core_types);
    if (!std::filesystem::exists(bin + prog)) {
      VendorConfig miss = cands.front();
      miss.status = ConfigStatus::Missing;
      miss.reason = "ceiling_" + prog + " was not built" +
                    (vendor_of(prog) == "blis"
                         ? " (install libblis-openmp-dev through make setup, then reconfigure: POPPER_BLIS=AUTO|ON)"
                         : std::string());
      plan.configs.push_back(miss);
      continue;
    }
    refuse_unexecutable(cands, m);  // may throw ConfigRefused
    for (auto& c : cands) {
      if (c.status != ConfigStatus::Run) continue;
      const auto r = run_process({bin + prog, "--probe"}, c.env_set(1), c.env_unset());
      const std::string out = first_line(r.out);
      if (!r.ok() || out.rfind("# config: ", 0) != 0) {
        const std::string detail = last_meaningful_line(r.err);
        if (c.vendor == "blis" && r.signal == 6) {
          c.status = ConfigStatus::NotBuilt;
          c.reason = "this libblis has no " + c.requested + " sub-configuration (BLIS aborts: " + detail + ")";
        } else {
          c.status = ConfigStatus::Failed;
          c.reason = "--probe " + r.describe() + (detail.empty() ? "" : ": " + detail);
        }
        if (c.inherited)
          throw ConfigRefused("ceiling_" + prog + " cannot start under " + c.setting() + ": " + c.reason);
        continue;
      }
      c.selected = out.substr(10);
      if (!c.requested.empty() && lower(c.selected) != lower(c.requested) && !c.inherited) {
        c.status = ConfigStatus::NotBuilt;
        c.reason = "this " + vendor_title(c.vendor) + " has no " + c.requested + " kernels (it loaded " + c.selected +
                   " instead)";
      }
    }
    // Configurations that load the same kernels collapse into the first.
    for (std::size_t i = 0; i < cands.size(); ++i) {
      if (cands[i].status != ConfigStatus::Run) continue;
      for (std::size_t j = 0; j < i; ++j)
        if (cands[j].status == ConfigStatus::Run && lower(cands[j].selected) == lower(cands[i].selected)) {
          cands[i].status = ConfigStatus::Duplicate;
          cands[i].reason = "loads the same kernels as " + cands[j].setting();
          break;
        }
    }
    // The inherited entry keeps the name of what it loaded.
    for (auto& c : cands)
      if (c.inherited && c.requested.empty()) c.requested = c.selected;
    plan.configs.insert(plan.configs.end(), cands.begin(), cands.end());
  }

  // A row's backend, with its "+variant" or not, names the configuration.
  if (!opt.only.empty())
    std::erase_if(plan.configs, [&](const VendorConfig& c) {
      return c.status == ConfigStatus::Run && std::none_of(opt.only.begin(), opt.only.end(), [&](const std::string& o) {
               return backend_of_configuration(o, c.backend());
             });
    });
  // Step 4: screen when some vendor has a choice.
  bool choice = false;
  for (const auto& prog : programs) choice |= plan.runnable(prog).size() > 1;
  if (!choice || !opt.screen) {
    for (const auto& c : plan.configs)
      if (c.status == ConfigStatus::Run)
        say("ceiling: " + c.backend() + " (" + c.setting() + (c.inherited ? ", inherited" : "") + ")");
    return plan;
  }
  const std::string shape =
      !check_shape_in.empty() ? check_shape_in : (fam.gate.shapes.empty() ? std::string() : fam.gate.shapes.back());
  if (shape.empty()) return plan;
  plan.check_shape = shape;
  // The gate shapes each program has (--list-shapes: "name,..." a line), the check shape always.
  std::map<std::string, std::vector<std::string>> shapes;
  for (const auto& prog : programs) {
    if (plan.runnable(prog).empty()) continue;
    const auto listed = run_process({bin + prog, "--list-shapes"});
    std::set<std::string> names;
    std::istringstream in(listed.out);
    for (std::string line; std::getline(in, line);) names.insert(line.substr(0, line.find(',')));
    auto& mine = shapes[prog];
    for (const auto& g : fam.gate.shapes)
      if (g != shape && names.count(g)) mine.push_back(g);
    mine.push_back(shape);
  }
  const std::string key = opt.screening_cache.empty() ? std::string() : screening_key(plan, m, bin, shapes, opt);
  if (!key.empty() && reuse_screening(opt.screening_cache, key, plan)) {
    plan.check_reused_from = opt.screening_cache;
    say("ceiling screening: reusing the timings of " + opt.screening_cache +
        " (this machine, the same programs, libraries and configurations; bench compare --rescreen times them again)");
  } else {
    time_screening(plan, bin, shapes, opt, say);
    if (!key.empty()) save_screening(opt.screening_cache, key, plan);
  }
  set_check_seconds(plan);
  plan.warnings = find_misdetections(plan.configs, shape);
  screen_for_wins(plan.configs, fam.wrapped_vendor, opt.win_margin);
  return plan;
}

namespace {

std::string env_signature() {
  std::string s;
  for (const char* v : {"OPENBLAS_CORETYPE", "BLIS_ARCH_TYPE"}) {
    const auto val = env_value(v);
    s += std::string(v) + "=" + (val ? *val : std::string("<unset>")) + ";";
  }
  return s;
}

nlohmann::json to_json(const CeilingPlan& p) {
  nlohmann::json j = {
      {"check_shape", p.check_shape}, {"configs", nlohmann::json::array()}, {"warnings", nlohmann::json::array()}};
  for (const auto& c : p.configs)
    j["configs"].push_back({{"vendor", c.vendor},
                            {"program", c.program},
                            {"variable", c.variable},
                            {"value", c.value ? nlohmann::json(*c.value) : nlohmann::json(nullptr)},
                            {"inherited", c.inherited},
                            {"requested", c.requested},
                            {"needs", c.needs},
                            {"selected", c.selected},
                            {"status", to_string(c.status)},
                            {"reason", c.reason},
                            {"check_seconds", {c.check_seconds[0], c.check_seconds[1]}}});
  for (const auto& w : p.warnings)
    j["warnings"].push_back({{"vendor", w.vendor},
                             {"variable", w.variable},
                             {"value", w.value ? nlohmann::json(*w.value) : nlohmann::json(nullptr)},
                             {"selected", w.selected},
                             {"best", w.best},
                             {"best_setting", w.best_setting},
                             {"shape", w.shape},
                             {"precision", w.precision},
                             {"factor", w.factor},
                             {"message", w.message}});
  return j;
}

ConfigStatus status_from(const std::string& s) {
  for (auto st : {ConfigStatus::Run, ConfigStatus::CpuLacks, ConfigStatus::NotBuilt, ConfigStatus::Duplicate,
                  ConfigStatus::ScreenedOut, ConfigStatus::Failed, ConfigStatus::Missing})
    if (s == to_string(st)) return st;
  return ConfigStatus::Failed;
}

CeilingPlan from_json(const nlohmann::json& j) {
  CeilingPlan p;
  p.check_shape = j.at("check_shape").get<std::string>();
  for (const auto& c : j.at("configs")) {
    VendorConfig v;
    v.vendor = c.at("vendor");
    v.program = c.at("program");
    v.variable = c.at("variable");
    if (!c.at("value").is_null()) v.value = c.at("value").get<std::string>();
    v.inherited = c.at("inherited");
    v.requested = c.at("requested");
    v.needs = c.at("needs").get<std::vector<std::string>>();
    v.selected = c.at("selected");
    v.status = status_from(c.at("status"));
    v.reason = c.at("reason");
    v.check_seconds[0] = c.at("check_seconds").at(0);
    v.check_seconds[1] = c.at("check_seconds").at(1);
    p.configs.push_back(v);
  }
  for (const auto& w : j.at("warnings")) {
    Misdetection m;
    m.vendor = w.at("vendor");
    m.variable = w.at("variable");
    if (!w.at("value").is_null()) m.value = w.at("value").get<std::string>();
    m.selected = w.at("selected");
    m.best = w.at("best");
    m.best_setting = w.at("best_setting");
    m.shape = w.at("shape");
    m.precision = w.at("precision");
    m.factor = w.at("factor");
    m.message = w.at("message");
    p.warnings.push_back(m);
  }
  return p;
}

}  // namespace

CeilingPlan cached_vendor_check(const std::string& source_dir, const std::string& build_dir, const MachineInfo& m,
                                bool refresh, const std::function<void(const std::string&)>& progress) {
  const std::string path = build_dir + "/vendors.json";
  const std::string fp = fingerprint(m), sig = env_signature();
  if (!refresh) {
    std::ifstream in(path);
    if (in) {
      try {
        const auto j = nlohmann::json::parse(in);
        if (j.at("fingerprint") == fp && j.at("environment") == sig) return from_json(j.at("plan"));
      } catch (const std::exception&) {
        // a stale or unreadable cache is re-measured
      }
    }
  }
  FamilyDescriptor fam;
  try {
    fam = load_family(source_dir, "gemm");
  } catch (const Error&) {
    fam.family = "gemm";
    fam.ceilings = {"cblas_gemm_raw"};
    fam.blas_core_types = true;
    fam.gate.shapes = {"small_256"};
  }
  PlanOptions opt;
  opt.progress = progress;
  CeilingPlan plan = plan_ceiling(fam, m, build_dir, opt);
  nlohmann::json j = {{"fingerprint", fp}, {"environment", sig}, {"plan", to_json(plan)}};
  write_file_atomic(path, j.dump(2) + "\n");
  return plan;
}

void record_plan(const CeilingPlan& plan, BenchTable& table) {
  table.set_meta_list("ceiling_vendors", plan.tried_lines());
  table.set_ceiling_not_run(plan.not_run());
  if (!plan.check_shape.empty()) table.set_meta("ceiling_check_shape", plan.check_shape);
  if (!plan.check_reused_from.empty()) table.set_meta("ceiling_check_reused_from", plan.check_reused_from);
  std::vector<std::string> w;
  for (const auto& m : plan.warnings) w.push_back(m.message);
  table.set_meta_list("vendor_warnings", w);
}

std::optional<std::string> not_run_reason(const BenchTable& table, const std::string& backend) {
  const auto colon = backend.find(':');
  if (colon == std::string::npos) return std::nullopt;
  const std::string vendor = lower(backend.substr(0, colon)), kernels = lower(backend.substr(colon + 1));
  for (const auto& s : table.ceiling_not_run())
    if (!s.kernels.empty() && lower(s.vendor) == vendor && lower(s.kernels) == kernels)
      return s.status + ": " + s.reason;
  return std::nullopt;
}

std::string format_vendor_check(const CeilingPlan& plan) {
  std::ostringstream out;
  out << "ceiling vendors (GEMM" << (plan.check_shape.empty() ? "" : ", checked on " + plan.check_shape) << ")\n";
  for (const auto& c : plan.configs) {
    if (c.status == ConfigStatus::Duplicate) continue;
    char line[512];
    std::string timing;
    if (c.check_seconds[0] > 0 || c.check_seconds[1] > 0) {
      char t[96];
      std::snprintf(t, sizeof t, "  f32 %.3g ms, f64 %.3g ms", c.check_seconds[0] * 1e3, c.check_seconds[1] * 1e3);
      timing = t;
    }
    std::snprintf(line, sizeof line, "  %-8s %-16s %-30s %-12s%s", c.vendor.c_str(),
                  (c.selected.empty() ? c.requested : c.selected).c_str(), c.setting().c_str(), to_string(c.status),
                  timing.c_str());
    out << line << (c.inherited ? "  <- this environment" : "") << "\n";
    if (c.status != ConfigStatus::Run && !c.reason.empty()) out << "           " << c.reason << "\n";
  }
  for (const auto& w : plan.warnings) out << w.message << "\n";
  if (plan.warnings.empty() && !plan.check_shape.empty())
    out << "no vendor runs more than " << fmt_factor(kMisdetectionFactor) << " below its best configuration here\n";
  return out.str();
}

}  // namespace popper::bench
