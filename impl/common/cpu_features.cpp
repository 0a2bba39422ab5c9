// CPU features through the compiler's cpuid builtins (cpu_features.hpp).
#include "impl/common/cpu_features.hpp"

#include <atomic>
#include <cstdlib>
#include <string>

#include "popper/error.hpp"
#include "popper/mutant.hpp"

namespace popper::cpu {
namespace {

struct Probe {
  bool avx2 = false, avx512 = false, bf16 = false, vnni = false;
  Probe() {
    __builtin_cpu_init();
    avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
    bf16 = avx512 && __builtin_cpu_supports("avx512bf16");
    vnni = avx512 && __builtin_cpu_supports("avx512vnni");
  }
};
const Probe& probe() {
  static const Probe p;
  return p;
}

Isa cap_from_env() {
  const char* v = std::getenv("POPPER_ISA_MAX");
  if (!v || !*v) return Isa::Auto;
  const std::string s(v);
  if (s == "scalar") return Isa::Scalar;
  if (s == "avx2") return Isa::Avx2;
  if (s == "avx512") return Isa::Avx512;
  throw InvalidArgument("POPPER_ISA_MAX='" + s + "': use scalar, avx2 or avx512");
}

std::atomic<Isa>& cap_slot() {
  static std::atomic<Isa> cap{cap_from_env()};
  return cap;
}

std::atomic<bool>& extensions_slot() {
  static std::atomic<bool> on{true};
  return on;
}

bool within_cap(Isa isa) {
  const Isa cap = cap_slot().load(std::memory_order_relaxed);
  return cap == Isa::Auto || static_cast<int>(isa) <= static_cast<int>(cap);
}

}  // namespace

void set_isa_cap(Isa cap) { cap_slot().store(cap); }
Isa isa_cap() { return cap_slot().load(); }

bool supports(Isa isa) {
  switch (isa) {
    case Isa::Auto:
    case Isa::Scalar: return true;
    case Isa::Avx2: return probe().avx2 && within_cap(isa);
    case Isa::Avx512: return probe().avx512 && within_cap(isa);
  }
  return false;
}

void set_avx512_extensions(bool enabled) { extensions_slot().store(enabled); }

// AVX-512 extensions count only within the cap and while not hidden.
bool extensions_on() { return within_cap(Isa::Avx512) && extensions_slot().load(std::memory_order_relaxed); }
bool has_avx512_bf16() { return probe().bf16 && extensions_on(); }
bool has_avx512_vnni() { return probe().vnni && extensions_on(); }

Isa detected_isa() { return probe().avx512 ? Isa::Avx512 : probe().avx2 ? Isa::Avx2 : Isa::Scalar; }

Isa auto_isa() { return supports(Isa::Avx512) ? Isa::Avx512 : supports(Isa::Avx2) ? Isa::Avx2 : Isa::Scalar; }

bool auto_isa_overridden() { return auto_isa() != detected_isa(); }

const char* to_string(Isa isa) {
  switch (isa) {
    case Isa::Auto: return "auto";
    case Isa::Scalar: return "scalar";
    case Isa::Avx2: return "avx2";
    case Isa::Avx512: return "avx512";
  }
  return "?";
}

std::string backend_tag(Isa isa) { return std::string("cpu:") + to_string(isa == Isa::Auto ? auto_isa() : isa); }

std::vector<Isa> supported_isas() {
  std::vector<Isa> out{Isa::Scalar};
  if (supports(Isa::Avx2)) out.push_back(Isa::Avx2);
  if (supports(Isa::Avx512)) out.push_back(Isa::Avx512);
  return out;
}

Isa resolve(Isa requested, const char* who) {
  if (requested == Isa::Auto) return auto_isa();
  if (POPPER_MUTANT("dispatch-ignores-cpu-check")) return requested;
  if (!supports(requested))
    throw Unsupported(std::string(who) + ": ISA " + to_string(requested) + " is not supported by this CPU");
  return requested;
}

}  // namespace popper::cpu
