// Helpers of the Q4_K falsifiers: the independent block builder of the
// exhaustive harness, the ISA list a test may run, and evidence recording.
#pragma once
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "impl/common/cpu_features.hpp"
#include "impl/common/execution.hpp"
#include "popper/binding.hpp"
#include "impl/q4k/cpu_q4k.hpp"
#include "impl/q4k/q4k.hpp"

namespace popper::q4k::testing {

// The 12 scale bytes written straight from the bit layout of the format
// (q4k.hpp), independently of pack_scales_mins:
//   bytes 0..3:  sc_j (bits 0-5) and bits 4-5 of sc_{j+4} (bits 6-7)
//   bytes 4..7:  m_j  (bits 0-5) and bits 4-5 of m_{j+4}  (bits 6-7)
//   bytes 8..11: bits 0-3 of sc_{j+4} (bits 0-3), bits 0-3 of m_{j+4} (bits 4-7)
inline void spec_pack(const int (&sc)[8], const int (&m)[8], std::uint8_t (&s)[12]) {
  std::memset(s, 0, sizeof s);
  for (int j = 0; j < 4; ++j) {
    s[j] = static_cast<std::uint8_t>((sc[j] & 0x3F) | ((sc[j + 4] >> 4) & 0x3) << 6);
    s[4 + j] = static_cast<std::uint8_t>((m[j] & 0x3F) | ((m[j + 4] >> 4) & 0x3) << 6);
    s[8 + j] = static_cast<std::uint8_t>((sc[j + 4] & 0xF) | (m[j + 4] & 0xF) << 4);
  }
}

// A block whose sub-block `j` has scale `scj` and min `mj`, the others fixed
// distinct values, and codes cycling through all 16 values in every sub-block.
struct PatternBlock {
  Block block;
  int sc[8], m[8];
};
inline PatternBlock pattern_block(std::uint16_t d, std::uint16_t dmin, int j, int scj, int mj) {
  PatternBlock p{};
  for (int k = 0; k < 8; ++k) p.sc[k] = (k * 23 + 5) & 63, p.m[k] = (k * 41 + 17) & 63;
  p.sc[j] = scj;
  p.m[j] = mj;
  p.block.d = d;
  p.block.dmin = dmin;
  spec_pack(p.sc, p.m, p.block.scales);
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l) p.block.qs[32 * c + l] = static_cast<std::uint8_t>((l % 16) | ((15 - l % 16) << 4));
  return p;
}

// Weight i of a pattern block by the format's formula (FP32, separate roundings).
inline float spec_weight(const PatternBlock& p, int i) {
  const int c = i / 64, l = i % 64;
  const std::uint8_t byte = p.block.qs[32 * c + l % 32];
  const int q = l < 32 ? (byte & 15) : (byte >> 4);
  const int j = i / 32;
  const float d = fp16_to_float(p.block.d), dmin = fp16_to_float(p.block.dmin);
  volatile float scale = d * static_cast<float>(p.sc[j]);  // volatile: one rounding per operation
  volatile float offset = dmin * static_cast<float>(p.m[j]);
  volatile float prod = scale * static_cast<float>(q);
  return prod - offset;
}

// Random finite FP16 bits (any sign, subnormals included).
inline std::uint16_t random_finite_fp16(std::mt19937_64& rng) {
  for (;;) {
    const auto h = static_cast<std::uint16_t>(rng());
    if (((h >> 10) & 0x1F) != 0x1F) return h;
  }
}

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}
inline std::size_t first_difference(const std::vector<float>& a, const std::vector<float>& b) {
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    if (std::bit_cast<std::uint32_t>(a[i]) != std::bit_cast<std::uint32_t>(b[i])) return i;
  return a.size() == b.size() ? a.size() : std::min(a.size(), b.size());
}

// The ISAs a test runs: every supported one when forced paths are allowed,
// else only what Auto picks (the CPU-matrix legs).
inline std::vector<popper::cpu::Isa> isas_under_test() {
  if (popper::forced_paths_allowed()) return popper::cpu::supported_isas();
  return {popper::cpu::auto_isa()};
}

// f(isa) for every ISA under test, and, on a CPU with AVX512-VNNI when forced
// paths are allowed, once more on the AVX-512 kernel without VNNI (the one a
// Skylake-X runs), VNNI hidden for that call.
template <class F>
void for_each_cpu_path(F&& f) {
  for (popper::cpu::Isa isa : isas_under_test()) f(isa);
  if (!popper::forced_paths_allowed() || !popper::cpu::has_avx512_vnni()) return;
  struct Hide {
    Hide() { popper::cpu::set_avx512_extensions(false); }
    ~Hide() { popper::cpu::set_avx512_extensions(true); }
  } hide;
  f(popper::cpu::Isa::Avx512);
}

// The path an ISA request runs now, for messages: "avx512+vnni" when VNNI is in use.
inline std::string path_name(popper::cpu::Isa isa) {
  const bool vnni = popper::cpu::resolve(isa, "q4k test") == popper::cpu::Isa::Avx512 && popper::cpu::has_avx512_vnni();
  return std::string(popper::cpu::to_string(isa)) + (vnni ? "+vnni" : "");
}

inline void record_cpu(popper::cpu::Isa isa) {
  const auto resolved = popper::cpu::resolve(isa, "q4k test");
  popper::record_backend(cpu::backend_tag(resolved),
                         resolved == popper::cpu::auto_isa() ? popper::Dispatch::Auto : popper::Dispatch::Forced);
}

// Records what a device entry reports.
inline void record(const device::Execution& e) {
  if (e.declined()) popper::record_decline(e.declined_device, e.decline_reason);
  popper::record_backend(e.backend);
}

}  // namespace popper::q4k::testing
