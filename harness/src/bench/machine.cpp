// Machine probe and fingerprint (see machine.hpp).
#include "bench/machine.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <set>
#include <sstream>

#include "common/text.hpp"

namespace popper::bench {

std::string cmake_cache_value(const std::string& build_dir, const std::string& key) {
  std::ifstream in(build_dir + "/CMakeCache.txt");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) != 0) continue;
    const auto eq = line.find('=');
    return eq == std::string::npos ? "" : line.substr(eq + 1);
  }
  return "";
}

std::string capture_command(const std::string& command) {
  FILE* p = ::popen((command + " 2>/dev/null").c_str(), "r");
  if (!p) return "";
  std::string out;
  std::array<char, 4096> buf{};
  std::size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  const int rc = ::pclose(p);
  if (rc != 0) return "";
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

namespace {

// OpenBLAS is probed through dlopen so the harness need not link it; the
// environment (OPENBLAS_CORETYPE) applies as it would to the bench programs.
void probe_blas(MachineInfo& m) {
  m.blas_core = "unknown";
  for (const char* lib : {"libopenblas.so.0", "libopenblas.so"}) {
    void* h = ::dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) continue;
    using Fn = char* (*)();
    auto core = reinterpret_cast<Fn>(::dlsym(h, "openblas_get_corename"));
    auto config = reinterpret_cast<Fn>(::dlsym(h, "openblas_get_config"));
    if (core) m.blas_core = core();
    if (config) m.blas_config = config();
    return;  // kept loaded: OpenBLAS does not like being unloaded with live threads
  }
}

}  // namespace

MachineInfo probe_machine() {
  MachineInfo m;
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  std::set<std::string> flags;
  bool flags_read = false;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    while (!key.empty() && std::isspace(static_cast<unsigned char>(key.back()))) key.pop_back();
    std::string value = line.substr(colon + 1);
    if (!value.empty() && value[0] == ' ') value.erase(0, 1);
    if (key == "model name" && m.cpu_model.empty()) m.cpu_model = value;
    if (key == "flags" && !flags_read) {
      std::istringstream fs(value);
      std::string f;
      while (fs >> f) flags.insert(f);
      flags_read = true;
    }
  }
  if (m.cpu_model.empty()) m.cpu_model = "unknown";
  m.cpu_flags.assign(flags.begin(), flags.end());
  for (const char* f :
       {"sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512_bf16", "amx_tile"})
    if (flags.count(f)) m.isa.emplace_back(f);
  const long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  m.cores = n > 0 ? static_cast<int>(n) : 1;
  probe_blas(m);
  const std::string smi = capture_command("nvidia-smi --query-gpu=name,driver_version --format=csv,noheader");
  if (!smi.empty()) m.gpu = smi;
  return m;
}

bool has_isa(const MachineInfo& m, const std::string& flag) {
  return std::find(m.isa.begin(), m.isa.end(), flag) != m.isa.end();
}

bool has_cpu_flag(const MachineInfo& m, const std::string& flag) {
  return std::find(m.cpu_flags.begin(), m.cpu_flags.end(), flag) != m.cpu_flags.end() || has_isa(m, flag);
}

std::string isa_string(const MachineInfo& m) {
  std::string s;
  for (const auto& f : m.isa) s += (s.empty() ? "" : " ") + f;
  return s;
}

std::string fingerprint(const MachineInfo& m) {
  const std::string top_isa = has_isa(m, "avx512f") ? "avx512" : has_isa(m, "avx2") ? "avx2" : "sse";
  const std::string full = m.cpu_model + "|" + std::to_string(m.cores) + "|" + isa_string(m) + "|" + m.blas_core;
  char hash[16];
  std::snprintf(hash, sizeof hash, "%08x", fnv1a(full));
  return slug(m.cpu_model) + "-" + std::to_string(m.cores) + "c-" + top_isa + "-" + slug(m.blas_core) + "-" + hash;
}

std::vector<std::pair<std::string, std::string>> machine_metadata(const MachineInfo& m, const std::string& source_dir) {
  std::vector<std::pair<std::string, std::string>> md;
  const std::string git = "git -C '" + source_dir + "' ";
  std::string commit = capture_command(git + "rev-parse HEAD");
  if (!commit.empty() && !capture_command(git + "status --porcelain --untracked-files=no").empty()) commit += "-dirty";
  md.emplace_back("commit", commit.empty() ? "unknown" : commit);
  const std::string branch = capture_command(git + "rev-parse --abbrev-ref HEAD");
  md.emplace_back("branch", branch.empty() ? "unknown" : branch);
  const std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  md.emplace_back("date", date);
  md.emplace_back("fingerprint", fingerprint(m));
  md.emplace_back("cpu_model", m.cpu_model);
  md.emplace_back("cores", std::to_string(m.cores));
  md.emplace_back("isa", isa_string(m));
  md.emplace_back("blas_vendor", "OpenBLAS");
  md.emplace_back("blas_core", m.blas_core);
  md.emplace_back("blas_config", m.blas_config);
  md.emplace_back("gpu", m.gpu);
  std::string load;
  if (std::ifstream la("/proc/loadavg"); la) std::getline(la, load);
  md.emplace_back("loadavg_at_start", load);
  return md;
}

std::vector<std::string> runnable_blas_core_types(const MachineInfo& m) {
  std::vector<std::string> types;
  if (has_isa(m, "avx2") && has_isa(m, "fma")) {
    types.emplace_back("Haswell");
    types.emplace_back("Zen");
  }
  if (has_isa(m, "avx512f") && has_isa(m, "avx512bw") && has_isa(m, "avx512dq") && has_isa(m, "avx512vl"))
    types.emplace_back("SkylakeX");
  return types;
}

}  // namespace popper::bench
