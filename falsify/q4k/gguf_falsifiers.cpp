// GGUF: FALSIFY-Q4K-010 (popper's writer -> popper's reader), FALSIFY-Q4K-011
// (popper's writer -> ggml's gguf_init_from_file), FALSIFY-Q4K-012 (the
// reader on truncated and corrupted files).
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <random>

#include "impl/gguf/gguf.hpp"
#include "impl/gguf/llama_names.hpp"
#include "popper/binding.hpp"
#include "popper/runtime_paths.hpp"
#include "impl/q4k/lib_ggml.hpp"
#include "impl/q4k/reference.hpp"
#include "testbed.hpp"

namespace {

namespace gguf = popper::gguf;
namespace q4k = popper::q4k;
namespace llama = popper::gguf::llama;

struct TensorData {
  std::string name;
  std::uint32_t type;
  std::vector<std::uint64_t> ne;
  std::vector<std::byte> bytes;
};

struct Model {
  std::vector<std::pair<std::string, gguf::Value>> kv;
  std::vector<TensorData> tensors;
};

// Every value type, llama.cpp's key and tensor names, tensors of four types and 1-4 dims.
Model make_model(std::uint64_t seed, std::uint32_t alignment) {
  std::mt19937_64 rng(seed);
  Model m;
  const std::string arch = "qwen2";
  m.kv = {
      {llama::kArchitecture, gguf::Value::str(arch)},
      {llama::kName, gguf::Value::str("popper canary \xce\xbb")},
      {llama::kAlignment, gguf::Value::u32(alignment)},
      {llama::arch_key(arch, llama::kBlockCount), gguf::Value::u32(2)},
      {llama::arch_key(arch, llama::kEmbeddingLength), gguf::Value::u32(256)},
      {llama::arch_key(arch, llama::kRmsEpsilon), gguf::Value::f32(1e-6f)},
      {llama::arch_key(arch, llama::kRopeFreqBase), gguf::Value::f32(1000000.0f)},
      {llama::kFileType, gguf::Value::u32(llama::kFileTypeQ4KM)},
      {llama::kQuantizationVersion, gguf::Value::u32(llama::kQuantizationVersionK)},
      {"test.u8", gguf::Value::u8(250)},
      {"test.i8", gguf::Value::i8(-7)},
      {"test.u16", gguf::Value::u16(65000)},
      {"test.i16", gguf::Value::i16(-32000)},
      {"test.i32", gguf::Value::i32(-2000000000)},
      {"test.u64", gguf::Value::u64(0xFFFFFFFFFFFFFFFFull)},
      {"test.i64", gguf::Value::i64(-(std::int64_t{1} << 62))},
      {"test.f64", gguf::Value::f64(-0.1)},
      {"test.bool", gguf::Value::boolean(true)},
      {"test.empty_string", gguf::Value::str("")},
      {"test.empty_array", gguf::Value::array(gguf::ValueType::I32, {})},
      {"test.bools",
       gguf::Value::array(gguf::ValueType::Bool, {gguf::Value::boolean(false), gguf::Value::boolean(true)})},
      {"test.f32s", gguf::Value::f32s({1.5f, -0.0f, 3e38f})},
  };
  std::vector<std::string> tokens;
  for (int i = 0; i < 10000; ++i) tokens.push_back("tok" + std::to_string(i));
  m.kv.emplace_back(llama::kTokens, gguf::Value::strings(tokens));
  std::vector<std::int32_t> types(10000, 1);
  m.kv.emplace_back(llama::kTokenTypes, gguf::Value::i32s(types));

  auto add = [&](std::string name, std::uint32_t type, std::vector<std::uint64_t> ne, std::vector<std::byte> b) {
    m.tensors.push_back({std::move(name), type, std::move(ne), std::move(b)});
  };
  auto random_bytes = [&](std::size_t n) {
    std::vector<std::byte> b(n);
    for (auto& e : b) e = static_cast<std::byte>(rng());
    return b;
  };
  std::vector<float> dense(512 * 256);
  q4k::testbed::fill_lcg(dense, seed);
  const auto q = q4k::reference::quantize_matrix(512, 256, dense);
  std::vector<std::byte> qb(q.blocks.size() * sizeof(q4k::Block));
  std::memcpy(qb.data(), q.blocks.data(), qb.size());
  add(llama::kTokenEmbd, 12, {256, 512}, qb);
  add(llama::block_tensor(0, llama::kAttnNorm), 0, {256}, random_bytes(256 * 4));
  add(llama::block_tensor(0, llama::kAttnQ, "bias"), 0, {7}, random_bytes(7 * 4));  // odd size: padding follows
  add(llama::block_tensor(0, llama::kFfnDown), 14, {512, 3}, random_bytes(2 * 210 * 3));
  add(llama::block_tensor(1, llama::kFfnUp), 1, {3, 5, 2, 2}, random_bytes(3 * 5 * 2 * 2 * 2));
  add(llama::kOutputNorm, 0, {256}, random_bytes(256 * 4));
  add(llama::kOutput, 12, {256, 512}, qb);
  return m;
}

// The written file, removed when the test leaves its scope (an ASSERT that
// fails returns early, and a mutant run must not leave files behind).
struct WrittenModel {
  std::string path;
  ~WrittenModel() { std::remove(path.c_str()); }
};

WrittenModel write_model(const Model& m, const std::string& tag) {
  gguf::Writer w;
  for (const auto& [k, v] : m.kv) w.set(k, v);
  for (const auto& t : m.tensors) w.add_tensor(t.name, t.type, t.ne, t.bytes);
  const std::string path = popper::temp_path("popper-q4k-" + tag + "-" + std::to_string(::getpid()) + ".gguf");
  w.write(path);
  // The in-memory image is the file.
  std::ifstream in(path, std::ios::binary);
  const std::vector<char> file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto mem = w.bytes();
  EXPECT_TRUE(file.size() == mem.size() && std::memcmp(file.data(), mem.data(), mem.size()) == 0)
      << "Writer::bytes() differs from the written file";
  return {path};
}

POPPER_FALSIFIER("FALSIFY-Q4K-010", [](const popper::Params& p) {
  for (auto a : p.integers("alignments")) {
    const Model m = make_model(p.seed(), static_cast<std::uint32_t>(a));
    const WrittenModel written = write_model(m, "popper");
    const std::string& path = written.path;
    const auto f = gguf::File::open(path);
    popper::record_backend("reference");
    EXPECT_EQ(f.version(), gguf::kVersion);
    EXPECT_EQ(f.alignment(), static_cast<std::uint32_t>(a));
    EXPECT_EQ(f.data_offset() % static_cast<std::uint64_t>(a), 0u);
    ASSERT_EQ(f.metadata().size(), m.kv.size());
    for (std::size_t i = 0; i < m.kv.size(); ++i) {
      EXPECT_EQ(f.metadata()[i].first, m.kv[i].first);
      EXPECT_TRUE(f.metadata()[i].second == m.kv[i].second) << "value of " << m.kv[i].first;
    }
    ASSERT_EQ(f.tensors().size(), m.tensors.size());
    for (std::size_t i = 0; i < m.tensors.size(); ++i) {
      const auto& t = f.tensors()[i];
      EXPECT_EQ(t.name, m.tensors[i].name);
      EXPECT_EQ(t.type, m.tensors[i].type);
      EXPECT_EQ(t.ne, m.tensors[i].ne);
      EXPECT_EQ(t.offset % static_cast<std::uint64_t>(a), 0u) << t.name;
      ASSERT_EQ(t.data.size(), m.tensors[i].bytes.size()) << t.name;
      EXPECT_EQ(std::memcmp(t.data.data(), m.tensors[i].bytes.data(), t.data.size()), 0) << t.name << " data differs";
    }
  }
});

POPPER_FALSIFIER("FALSIFY-Q4K-011", [](const popper::Params& p) {
  for (auto a : p.integers("alignments")) {
    const Model m = make_model(p.seed(), static_cast<std::uint32_t>(a));
    const WrittenModel written = write_model(m, "ggml");
    const std::string& path = written.path;
    const auto g = q4k::ggml::read_gguf(path);
    popper::record_backend("ggml-gguf");
    EXPECT_EQ(g.version, gguf::kVersion);
    EXPECT_EQ(g.alignment, static_cast<std::size_t>(a));
    ASSERT_EQ(g.metadata.size(), m.kv.size());
    for (std::size_t i = 0; i < m.kv.size(); ++i) {
      EXPECT_EQ(g.metadata[i].first, m.kv[i].first);
      EXPECT_TRUE(g.metadata[i].second == m.kv[i].second) << "ggml reads a different value for " << m.kv[i].first;
    }
    ASSERT_EQ(g.tensors.size(), m.tensors.size());
    for (std::size_t i = 0; i < m.tensors.size(); ++i) {
      const auto& t = g.tensors[i];
      EXPECT_EQ(t.name, m.tensors[i].name);
      EXPECT_EQ(t.type, m.tensors[i].type);
      EXPECT_EQ(t.ne, m.tensors[i].ne) << t.name;
      ASSERT_EQ(t.data.size(), m.tensors[i].bytes.size()) << t.name;
      EXPECT_EQ(std::memcmp(t.data.data(), m.tensors[i].bytes.data(), t.data.size()), 0)
          << t.name << ": ggml reads different bytes";
    }
  }
});

POPPER_FALSIFIER("FALSIFY-Q4K-012", [](const popper::Params&) {
  // A small valid file (one key of each kind that has a count or length, three tensors).
  gguf::Writer w;
  w.set("k.str", gguf::Value::str("value"));
  w.set("k.arr", gguf::Value::strings({"a", "bc", ""}));
  w.set("k.u32", gguf::Value::u32(7));
  std::vector<std::byte> t0(16 * 4, std::byte{1}), t1(144, std::byte{2}), t2(3 * 2, std::byte{3});
  w.add_tensor("t0", 0, {16}, t0);
  w.add_tensor("t1", 12, {256}, t1);
  w.add_tensor("t2", 1, {3}, t2);
  const std::vector<std::byte> valid = w.bytes();
  auto parse_copy = [](const std::vector<std::byte>& bytes) {
    // An exact-size heap copy: any overread is outside the allocation (ASan reports it).
    std::unique_ptr<std::byte[]> copy(new std::byte[bytes.size() ? bytes.size() : 1]);
    if (!bytes.empty()) std::memcpy(copy.get(), bytes.data(), bytes.size());  // an empty vector's data() may be null
    const std::span<const std::byte> span(copy.get(), bytes.size());
    try {
      const auto f = gguf::File::parse(span);
      for (const auto& t : f.tensors()) {
        if (t.data.empty()) continue;
        if (t.data.data() < span.data() || t.data.data() + t.data.size() > span.data() + span.size()) return false;
      }
    } catch (const popper::Error&) {
    }
    return true;
  };
  ASSERT_NO_THROW(gguf::File::parse(valid));
  for (std::size_t n = 0; n < valid.size(); ++n) {
    std::vector<std::byte> cut(valid.begin(), valid.begin() + static_cast<std::ptrdiff_t>(n));
    EXPECT_TRUE(parse_copy(cut)) << "truncated to " << n << " bytes";
  }
  const bool ok = rc::check("corrupted GGUF files never read outside the buffer", [&] {
    std::vector<std::byte> bad = valid;
    const int edits = *rc::gen::inRange(1, 6);
    for (int e = 0; e < edits; ++e) {
      const auto at = *rc::gen::inRange<std::size_t>(0, bad.size());
      const int width = *rc::gen::element(1, 8);
      for (int k = 0; k < width && at + static_cast<std::size_t>(k) < bad.size(); ++k)
        bad[at + static_cast<std::size_t>(k)] = static_cast<std::byte>(*rc::gen::arbitrary<std::uint8_t>());
    }
    RC_ASSERT(parse_copy(bad));
  });
  EXPECT_TRUE(ok);
  // Huge counts and lengths at every count/length field position.
  for (std::size_t at = 8; at + 8 <= valid.size() && at < 256; ++at) {
    std::vector<std::byte> bad = valid;
    const std::uint64_t huge = 0x0FFFFFFFFFFFFFFFull;
    std::memcpy(bad.data() + at, &huge, sizeof huge);
    EXPECT_TRUE(parse_copy(bad)) << "a huge 64-bit value at byte " << at;
  }
  popper::record_backend("reference");
});

}  // namespace
