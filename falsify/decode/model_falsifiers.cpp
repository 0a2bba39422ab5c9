// The canary model as a file and as input: FALSIFY-MBP-007 (GGUF round trip
// and rejection of bad files by name), FALSIFY-MBP-008 (argument checks).
#include <gtest/gtest.h>

#include <cstring>

#include "impl/decode/drift.hpp"
#include "impl/gguf/gguf.hpp"
#include "impl/gguf/llama_names.hpp"
#include "popper/error.hpp"
#include "testbed.hpp"

namespace {

using namespace popper::decode;
namespace tb = popper::decode::testbed;
using tb::rewrite;
using tb::TempFile;

void expect_rejected(const std::string& path, const std::string& mentions) {
  try {
    (void)load_gguf(path);
    ADD_FAILURE() << "a file with " << mentions << " loaded";
  } catch (const popper::InvalidArgument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(path), std::string::npos) << what;
    EXPECT_NE(what.find(mentions), std::string::npos) << "the message does not name " << mentions << ": " << what;
  }
}

POPPER_FALSIFIER("FALSIFY-MBP-007", [](const popper::Params& p) {
  const Model m = tb::small_model(p);
  const auto tokens = canary_tokens(m.config, static_cast<int>(p.integer("tokens")));
  auto cpu = make_backend("cpu", m);
  tb::record_cpu_reference();
  const auto expected = cpu->logits(tokens);
  TempFile good("good"), bad("bad");
  write_gguf(m, good.path);
  const Model loaded = load_gguf(good.path);
  EXPECT_EQ(loaded.config.layers, m.config.layers);
  EXPECT_EQ(loaded.config.vocab, m.config.vocab);
  EXPECT_EQ(loaded.config.rms_eps, m.config.rms_eps);
  EXPECT_EQ(loaded.config.rope_base, m.config.rope_base);
  auto cpu2 = make_backend("cpu", loaded);
  const auto got = cpu2->logits(tokens);
  ASSERT_EQ(got.size(), expected.size());
  EXPECT_EQ(std::memcmp(got.data(), expected.data(), got.size() * sizeof(float)), 0)
      << "the loaded model's logits differ from the generated model's";

  namespace ll = popper::gguf::llama;
  using popper::gguf::TensorInfo;
  using KV = std::vector<std::pair<std::string, popper::gguf::Value>>;
  const std::string q0 = ll::block_tensor(0, ll::kAttnQ);
  // A Q4_K matrix stored as F32 (same bytes reinterpreted: ne[0] scaled to keep the size).
  rewrite(good.path, bad.path, [&](KV&, std::vector<TensorInfo>& t) {
    for (auto& x : t)
      if (x.name == q0) x.type = 0, x.ne = {x.data.size() / 4};
  });
  expect_rejected(bad.path, q0);
  // A wrong shape: W_up with half its rows.
  const std::string up0 = ll::block_tensor(0, ll::kFfnUp);
  rewrite(good.path, bad.path, [&](KV&, std::vector<TensorInfo>& t) {
    for (auto& x : t)
      if (x.name == up0) x.ne[1] /= 2, x.data = x.data.first(x.data.size() / 2);
  });
  expect_rejected(bad.path, up0);
  // A missing tensor.
  const std::string down1 = ll::block_tensor(1, ll::kFfnDown);
  rewrite(good.path, bad.path, [&](KV&, std::vector<TensorInfo>& t) {
    std::erase_if(t, [&](const TensorInfo& x) { return x.name == down1; });
  });
  expect_rejected(bad.path, down1);
  // Another architecture.
  rewrite(good.path, bad.path, [&](KV& kv, std::vector<TensorInfo>&) {
    for (auto& [k, v] : kv)
      if (k == ll::kArchitecture) v = popper::gguf::Value::str("llama");
  });
  expect_rejected(bad.path, "llama");
  // No output.weight: tied embeddings, the LM head is token_embd.
  rewrite(good.path, bad.path, [&](KV&, std::vector<TensorInfo>& t) {
    std::erase_if(t, [&](const TensorInfo& x) { return x.name == ll::kOutput; });
  });
  const Model tied = load_gguf(bad.path);
  EXPECT_EQ(tied.output.blocks.data(), tied.token_embd.blocks.data());
});

template <class F>
void expect_invalid(const char* what, F f) {
  try {
    f();
    ADD_FAILURE() << what << ": accepted";
  } catch (const popper::InvalidArgument& e) {
    std::printf("[FALSIFY-MBP-008] %s: %s\n", what, e.what());
  }
}

POPPER_FALSIFIER("FALSIFY-MBP-008", [](const popper::Params& p) {
  const Model m = tb::small_model(2, p.seed());
  auto cpu = make_backend("cpu", m);
  tb::record_cpu_reference();
  const Config& c = m.config;
  const auto run = [&](std::vector<std::int32_t> t) { return cpu->logits(t); };
  expect_invalid("empty prompt", [&] { run({}); });
  expect_invalid("context + 1 tokens",
                 [&] { run(std::vector<std::int32_t>(static_cast<std::size_t>(c.context + 1), 1)); });
  expect_invalid("token = vocab", [&] { run({1, static_cast<std::int32_t>(c.vocab)}); });
  expect_invalid("negative token", [&] { run({-1}); });
  EXPECT_EQ(run({0, static_cast<std::int32_t>(c.vocab - 1)}).size(), static_cast<std::size_t>(c.vocab));
  const auto bad = [&](const char* what, auto mutate) {
    Config b = small_config();
    mutate(b);
    expect_invalid(what, [&] { b.check(); });
    expect_invalid(what, [&] { (void)make_canary(b); });
  };
  bad("hidden 300", [](Config& b) { b.hidden = 300; });
  bad("intermediate 700", [](Config& b) { b.intermediate = 700; });
  bad("q_heads 3 / kv_heads 2", [](Config& b) { b.q_heads = 3; });
  bad("head_dim 63", [](Config& b) { b.head_dim = 63; });
  bad("q_heads * head_dim 320", [](Config& b) { b.q_heads = 5, b.kv_heads = 1; });
  expect_invalid("unknown backend", [&] { (void)make_backend("metal", m); });
  expect_invalid("threads 0", [&] { (void)make_backend("cpu", m, 0); });
  GateOptions o;
  o.candidates = {"cpu-simd", "opencl"};
  expect_invalid("unknown candidate", [&] { (void)run_gate(m, o); });
  o.candidates = {"cpu-simd"};
  o.faults = {{"vulkan", Fault::ZeroScale}};
  expect_invalid("fault aimed at a non-candidate", [&] { (void)run_gate(m, o); });
  expect_invalid("unknown fault", [&] { (void)parse_fault("flip-bits"); });
  expect_invalid("unknown drift series", [&] { (void)measure_drift(m, canary_tokens(c, 2), {"pairwise", "bf16"}); });
});

}  // namespace
