// llama.cpp as a parity subject: FALSIFY-MBP-009 (ggml-cpu) and -010
// (ggml-vulkan) run popper's canary GGUF, unmodified, in the reference
// runtime and hold its logits to popper's FP64 oracle and to the gate.
#include <gtest/gtest.h>

#include "impl/decode/lib_llama.hpp"
#include "impl/gguf/llama_names.hpp"
#include "testbed.hpp"

namespace {

using namespace popper::decode;
namespace tb = popper::decode::testbed;

// The canary generated in memory is handed to llama.cpp as popper's GGUF of
// it; the FP64 oracle runs on the in-memory model, so a writer that stores
// another model than it was given is caught here.
void check_llama(const popper::Params& p, const char* id, llama::Device d) {
  const std::string name = llama::to_string(d);
  const Model m = tb::small_model(p);
  GateOptions o;
  o.candidates = {name};
  o.tokens = static_cast<int>(p.integer("tokens"));
  const GateResult g = run_gate(m, o);
  tb::record(g);
  tb::print(id, g);
  const BackendRun& r = g.runs.at(0);
  if (!r.available) {
    // Never a pass: skipped with the reason (a failure under POPPER_REQUIRE_DEVICE=1 for a device).
    if (d != llama::Device::Cpu) popper::record_decline(d == llama::Device::Vulkan ? "vulkan" : "cuda", r.reason);
    GTEST_SKIP() << r.reason;
  }
  ASSERT_EQ(r.reason.rfind("error: ", 0), std::string::npos) << name << " did not run popper's GGUF: " << r.reason;
  std::printf("[%s] %s against the FP64 oracle: cosine %.9f (1 - cos %.3g), rel_l2 %.3g, max rel %.3g, top1 %s\n", id,
              name.c_str(), r.fp64.cosine, 1 - r.fp64.cosine, r.fp64.rel_l2, r.fp64.max_rel,
              r.fp64.top1 ? "yes" : "no");
  EXPECT_GE(r.fp64.cosine, kMinCosine) << name << " against the FP64 oracle";
  EXPECT_TRUE(r.fp64.top1) << name << " changes the most likely token";
  EXPECT_TRUE(r.passed) << name << " against the cpu reference: " << r.reason;
  EXPECT_EQ(g.selected, name);
}

// A file llama.cpp refuses (no tokenizer model): the candidate ran and
// failed, so it is EXCLUDED with llama.cpp's error, never unavailable and
// never selected.
void check_refused_file(const popper::Params& p) {
  const Model m = tb::small_model(p);
  tb::TempFile good("llama-good"), bad("llama-bad");
  write_gguf(m, good.path);
  tb::rewrite(good.path, bad.path, [](auto& kv, auto&) {
    std::erase_if(kv, [](const auto& e) { return e.first == popper::gguf::llama::kTokenizerModel; });
  });
  const Model loaded = load_gguf(bad.path);  // popper needs no tokenizer; llama.cpp does
  GateOptions o;
  o.candidates = {"ggml-cpu", "cpu-simd"};
  o.tokens = 2;
  o.fp64 = false;
  const GateResult g = run_gate(loaded, o);
  tb::print("FALSIFY-MBP-009", g);
  const BackendRun& r = g.runs.at(0);
  EXPECT_TRUE(r.available) << "a runtime that fails is not 'unavailable': " << r.reason;
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.reason.rfind("error: ", 0), 0u) << r.reason;
  EXPECT_EQ(g.selected, "cpu-simd");
}

POPPER_FALSIFIER("FALSIFY-MBP-009", [](const popper::Params& p) {
  check_llama(p, "FALSIFY-MBP-009", llama::Device::Cpu);
  check_refused_file(p);
});
POPPER_FALSIFIER("FALSIFY-MBP-010",
                 [](const popper::Params& p) { check_llama(p, "FALSIFY-MBP-010", llama::Device::Vulkan); });

}  // namespace
