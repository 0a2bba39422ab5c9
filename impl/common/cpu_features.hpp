// The one CPU-feature probe of every hand kernel, and the dispatch override.
//
//   Avx2   = AVX2 + FMA
//   Avx512 = AVX-512 F + BW + DQ + VL
//   auto_isa() = the widest supported ISA, capped by POPPER_ISA_MAX
//                (scalar | avx2 | avx512) when that is set
//
// POPPER_ISA_MAX is the override that lets one machine run the narrower paths
// of every kernel (a path chosen through it is "forced" in the evidence);
// a request for an ISA the CPU lacks is refused, never attempted (SIGILL).
#pragma once
#include <string>
#include <vector>

namespace popper::cpu {

enum class Isa { Auto, Scalar, Avx2, Avx512 };

bool supports(Isa isa);     // Auto and Scalar: always true
bool has_avx512_bf16();     // AVX512-BF16 dot products (vdpbf16ps)
Isa detected_isa();         // the widest the CPU runs, ignoring the override
Isa auto_isa();             // what Isa::Auto resolves to (override applied)
bool auto_isa_overridden(); // POPPER_ISA_MAX lowered auto_isa() below detected_isa()
const char* to_string(Isa isa);     // "auto" "scalar" "avx2" "avx512"
std::string backend_tag(Isa isa);   // "cpu:scalar" ... (Auto resolved first)
// Every concrete ISA this CPU supports, narrowest first.
std::vector<Isa> supported_isas();
// Resolves Auto; throws popper::Unsupported naming `who` for an ISA the CPU lacks.
Isa resolve(Isa requested, const char* who);

}  // namespace popper::cpu
