// Reference results shared by the processes of one `popper bench compare`
// run (part of popper/bench.hpp's surface). Each step of a run is its own
// process, and each verifies its tier against the reference. Where the
// reference takes seconds (the decode's FP32 backend: 61% of a decode
// compare's wall time went to it), shared_reference computes each result
// once per run instead of once per process: the run names a directory that
// lives as long as it does (kReferenceDirEnv); without one, every call
// computes. An entry is keyed by the caller's key and by the identity of the
// executable (device, inode, size, modification time), so a rebuilt suite,
// or another build's suite in the same run (bench check --rerun), never reads
// another's results. A missing, short or corrupt entry is computed again; a
// failed write only costs the next process the computation.
#pragma once
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "popper/bench_protocol.hpp"

namespace popper::bench {
namespace detail {

inline std::uint64_t fnv1a(const void* data, std::size_t n, std::uint64_t h = 0xcbf29ce484222325ULL) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ULL;
  return h;
}

// "" when the executable cannot be identified: then nothing is shared.
inline std::string executable_identity() {
  struct stat st {};
  if (::stat("/proc/self/exe", &st) != 0) return "";
  return std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + ":" + std::to_string(st.st_size) + ":" +
         std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
}

inline constexpr char kReferenceMagic[8] = {'p', 'o', 'p', 'r', 'e', 'f', '1', '\n'};

inline bool read_reference(const std::string& path, const std::string& id, std::vector<float>& out) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return false;
  char magic[sizeof kReferenceMagic];
  std::uint64_t id_size = 0, count = 0, sum = 0;
  std::string stored_id;
  bool ok = std::fread(magic, 1, sizeof magic, f) == sizeof magic &&
            std::memcmp(magic, kReferenceMagic, sizeof magic) == 0 && std::fread(&id_size, 8, 1, f) == 1 &&
            id_size == id.size();
  if (ok) {
    stored_id.resize(id_size);
    ok = std::fread(stored_id.data(), 1, id_size, f) == id_size && stored_id == id &&
         std::fread(&count, 8, 1, f) == 1 && count < (std::uint64_t(1) << 32);
  }
  if (ok) {
    out.resize(count);
    ok = std::fread(out.data(), sizeof(float), count, f) == count && std::fread(&sum, 8, 1, f) == 1 &&
         sum == fnv1a(out.data(), count * sizeof(float)) && std::fgetc(f) == EOF;
  }
  std::fclose(f);
  if (!ok) out.clear();
  return ok;
}

// Written beside the entry, then renamed over it: a reader sees a whole entry or none.
inline void write_reference(const std::string& path, const std::string& id, const std::vector<float>& v) {
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return;
  const std::uint64_t id_size = id.size(), count = v.size(), sum = fnv1a(v.data(), v.size() * sizeof(float));
  bool ok = std::fwrite(kReferenceMagic, 1, sizeof kReferenceMagic, f) == sizeof kReferenceMagic &&
            std::fwrite(&id_size, 8, 1, f) == 1 && std::fwrite(id.data(), 1, id.size(), f) == id.size() &&
            std::fwrite(&count, 8, 1, f) == 1 && std::fwrite(v.data(), sizeof(float), v.size(), f) == v.size() &&
            std::fwrite(&sum, 8, 1, f) == 1;
  ok = std::fclose(f) == 0 && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) std::remove(tmp.c_str());
}

}  // namespace detail

// compute() once per run for `key` (which must name everything the result
// depends on besides the executable: shape, threads, inputs), or every call
// outside a run.
inline std::vector<float> shared_reference(const std::string& key, const std::function<std::vector<float>()>& compute) {
  const char* dir = std::getenv(kReferenceDirEnv);
  const std::string exe = detail::executable_identity();
  if (!dir || !*dir || exe.empty()) return compute();
  const std::string id = exe + "\n" + key;
  char name[32];
  std::snprintf(name, sizeof name, "/%016llx.ref",
                static_cast<unsigned long long>(detail::fnv1a(id.data(), id.size())));
  const std::string path = std::string(dir) + name;
  std::vector<float> v;
  if (detail::read_reference(path, id, v)) return v;
  v = compute();
  detail::write_reference(path, id, v);
  return v;
}

}  // namespace popper::bench
