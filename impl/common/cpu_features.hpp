// The one CPU-feature probe of every hand kernel, and the dispatch override.
//
//   Avx2   = AVX2 + FMA
//   Avx512 = AVX-512 F + BW + DQ + VL
//   supports(X) = the CPU has X and X is within the cap
//   auto_isa()  = the widest supported ISA
//   cap         = POPPER_ISA_MAX (scalar | avx2 | avx512) at start-up, or
//                 set_isa_cap() at run time (tests); default: no cap
//
// The cap is the dispatch override: it makes this process behave as a CPU
// without the wider ISAs, so one machine runs (and refuses) what a narrower
// CPU would. A path chosen under a lowered cap is "forced" in the evidence.
// A request for an ISA outside supports() is refused, never attempted.
#pragma once
#include <string>
#include <vector>

namespace popper::cpu {

enum class Isa { Auto, Scalar, Avx2, Avx512 };

bool supports(Isa isa);      // Auto and Scalar: always true
bool has_avx512_bf16();      // AVX512-BF16 dot products (vdpbf16ps), within the cap
bool has_avx512_vnni();      // AVX512-VNNI integer dot products (vpdpwssd), within the cap
Isa detected_isa();          // the widest the CPU runs, ignoring the cap
Isa auto_isa();              // what Isa::Auto resolves to (cap applied)
bool auto_isa_overridden();  // the cap lowered auto_isa() below detected_isa()
void set_isa_cap(Isa cap);   // Auto: no cap. Process-wide; for tests and tools.
Isa isa_cap();
// false hides AVX512-VNNI and -BF16 (has_avx512_* report false): this CPU runs
// the AVX-512 kernels an AVX-512 CPU without them (Skylake-X) runs. Process-wide; tests.
void set_avx512_extensions(bool enabled);
const char* to_string(Isa isa);    // "auto" "scalar" "avx2" "avx512"
std::string backend_tag(Isa isa);  // "cpu:scalar" ... (Auto resolved first)
// Every concrete ISA this CPU supports, narrowest first.
std::vector<Isa> supported_isas();
// Resolves Auto; throws popper::Unsupported naming `who` for an ISA the CPU lacks.
Isa resolve(Isa requested, const char* who);

}  // namespace popper::cpu
