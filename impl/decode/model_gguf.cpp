// The canary model as a GGUF file, in llama.cpp's qwen2 layout (model.hpp):
// matrices Q4_K with ne = {cols, rows}, norms and biases F32; the dimensions
// in the qwen2.* metadata. A user's own qwen2 Q4_K model loads the same way.
#include <cstdint>
#include <cstring>
#include <string>

#include "impl/decode/model.hpp"
#include "impl/gguf/gguf.hpp"
#include "impl/gguf/llama_names.hpp"
#include "popper/error.hpp"
#include "popper/mutant.hpp"

namespace popper::decode {

namespace {

namespace ll = gguf::llama;
constexpr const char* kArch = "qwen2";
constexpr const char* kSeedKey = "popper.canary.source";

std::span<const std::byte> bytes_of(std::span<const float> v) { return std::as_bytes(v); }
std::span<const std::byte> bytes_of(const Weight& w) { return std::as_bytes(w.blocks); }

// The tensor names of layer l, paired with their place in a Layer.
struct Names {
  std::string attn_norm, ffn_norm, q_bias, k_bias, v_bias, q, k, v, o, gate, up, down;
};
Names names(int l) {
  const auto b = [l](const char* part, const char* kind = "weight") { return ll::block_tensor(l, part, kind); };
  return {b(ll::kAttnNorm),      b(ll::kFfnNorm), b(ll::kAttnQ, "bias"), b(ll::kAttnK, "bias"),
          b(ll::kAttnV, "bias"), b(ll::kAttnQ),   b(ll::kAttnK),         b(ll::kAttnV),
          b(ll::kAttnOut),       b(ll::kFfnGate), b(ll::kFfnUp),         b(ll::kFfnDown)};
}

class Reader {
 public:
  Reader(const gguf::File& f, std::string path) : f_(f), path_(std::move(path)) {}

  [[noreturn]] void fail(const std::string& what) const { throw InvalidArgument(path_ + ": " + what); }

  const gguf::Value& key(const std::string& k) const {
    const gguf::Value* v = f_.find(k);
    if (!v) fail("metadata key '" + k + "' is missing");
    return *v;
  }
  std::int64_t integer(const char* suffix) const {
    const auto k = ll::arch_key(kArch, suffix);
    try {
      return key(k).as_i64();
    } catch (const InvalidArgument&) {
      throw;
    } catch (const Error& e) {
      fail("metadata key '" + k + "': " + e.what());
    }
  }
  double real(const char* suffix, double fallback) const {
    const auto* v = f_.find(ll::arch_key(kArch, suffix));
    return v ? v->as_f64() : fallback;
  }

  const gguf::TensorInfo& tensor(const std::string& name) const {
    const auto* t = f_.tensor(name);
    if (!t) fail("tensor '" + name + "' is missing");
    return *t;
  }
  Weight matrix(const std::string& name, std::int64_t rows, std::int64_t cols) const {
    const auto& t = tensor(name);
    if (t.type != static_cast<std::uint32_t>(gguf::TensorType::Q4_K)) {
      const auto* tr = gguf::traits(t.type);
      fail("tensor '" + name + "' is " + (tr ? tr->name : "type " + std::to_string(t.type)) +
           "; popper's decode forward reads Q4_K matrices only");
    }
    expect_shape(t, {static_cast<std::uint64_t>(cols), static_cast<std::uint64_t>(rows)});
    return {rows, cols,
            std::span<const q4k::Block>(reinterpret_cast<const q4k::Block*>(t.data.data()),
                                        t.data.size() / sizeof(q4k::Block))};
  }
  std::span<const float> vec(const std::string& name, std::int64_t n) const {
    const auto& t = tensor(name);
    if (t.type != static_cast<std::uint32_t>(gguf::TensorType::F32))
      fail("tensor '" + name + "' must be F32 (type " + std::to_string(t.type) + ")");
    expect_shape(t, {static_cast<std::uint64_t>(n)});
    return {reinterpret_cast<const float*>(t.data.data()), static_cast<std::size_t>(n)};
  }

 private:
  void expect_shape(const gguf::TensorInfo& t, const std::vector<std::uint64_t>& ne) const {
    if (reinterpret_cast<std::uintptr_t>(t.data.data()) % alignof(float) != 0)
      fail("tensor '" + t.name + "' is not 4-byte aligned in the file (general.alignment " +
           std::to_string(f_.alignment()) + ")");
    if (t.ne != ne) {
      const auto show = [](const std::vector<std::uint64_t>& v) {
        std::string s = "{";
        for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
        return s + "}";
      };
      fail("tensor '" + t.name + "' has ne " + show(t.ne) + ", the metadata implies " + show(ne));
    }
  }
  const gguf::File& f_;
  std::string path_;
};

}  // namespace

void write_gguf(const Model& m, const std::string& path) {
  const Config& c = m.config;
  gguf::Writer w;
  w.set(ll::kArchitecture, gguf::Value::str(kArch));
  w.set(ll::kName, gguf::Value::str("popper decode canary"));
  w.set(ll::kFileType, gguf::Value::u32(ll::kFileTypeQ4KS));
  w.set(ll::kQuantizationVersion, gguf::Value::u32(ll::kQuantizationVersionK));
  const auto u32 = [](std::int64_t v) { return gguf::Value::u32(static_cast<std::uint32_t>(v)); };
  w.set(ll::arch_key(kArch, ll::kContextLength), u32(c.context));
  w.set(ll::arch_key(kArch, ll::kEmbeddingLength), u32(c.hidden));
  w.set(ll::arch_key(kArch, ll::kBlockCount), u32(c.layers));
  w.set(ll::arch_key(kArch, ll::kFeedForwardLength), u32(c.intermediate));
  w.set(ll::arch_key(kArch, ll::kHeadCount), u32(c.q_heads));
  w.set(ll::arch_key(kArch, ll::kHeadCountKv), u32(c.kv_heads));
  w.set(ll::arch_key(kArch, "attention.key_length"), u32(c.head_dim));
  w.set(ll::arch_key(kArch, "attention.value_length"), u32(c.head_dim));
  w.set(ll::arch_key(kArch, ll::kRmsEpsilon), gguf::Value::f32(static_cast<float>(c.rms_eps)));
  // Mutation point (decode-gguf-write-no-rope-base): the key left out, so a reader assumes 10000.
  if (!POPPER_MUTANT("decode-gguf-write-no-rope-base"))
    w.set(ll::arch_key(kArch, ll::kRopeFreqBase), gguf::Value::f32(static_cast<float>(c.rope_base)));
  // No tokenizer: the canary is driven by token ids. llama.cpp reads
  // tokenizer model "none" as a vocabulary of <arch>.vocab_size ids.
  w.set(ll::kTokenizerModel, gguf::Value::str("none"));
  w.set(ll::arch_key(kArch, ll::kVocabSize), u32(c.vocab));
  w.set(kSeedKey, gguf::Value::str(m.source));

  const auto q4 = static_cast<std::uint32_t>(gguf::TensorType::Q4_K),
             f32 = static_cast<std::uint32_t>(gguf::TensorType::F32);
  const auto mat = [&](const std::string& name, const Weight& x) {
    w.add_tensor(name, q4, {static_cast<std::uint64_t>(x.cols), static_cast<std::uint64_t>(x.rows)}, bytes_of(x));
  };
  const auto vec = [&](const std::string& name, std::span<const float> v) {
    w.add_tensor(name, f32, {static_cast<std::uint64_t>(v.size())}, bytes_of(v));
  };
  mat(ll::kTokenEmbd, m.token_embd);
  for (int l = 0; l < static_cast<int>(m.layers.size()); ++l) {
    const Layer& y = m.layers[static_cast<std::size_t>(l)];
    const Names n = names(l);
    vec(n.attn_norm, y.attn_norm);
    mat(n.q, y.q), vec(n.q_bias, y.q_bias);
    // Mutation point (decode-gguf-write-swap-kv): W_k stored under attn_v and W_v under attn_k.
    const bool swap_kv = POPPER_MUTANT("decode-gguf-write-swap-kv");
    mat(swap_kv ? n.v : n.k, y.k), vec(n.k_bias, y.k_bias);
    mat(swap_kv ? n.k : n.v, y.v), vec(n.v_bias, y.v_bias);
    mat(n.o, y.o);
    vec(n.ffn_norm, y.ffn_norm);
    mat(n.gate, y.gate), mat(n.up, y.up), mat(n.down, y.down);
  }
  vec(ll::kOutputNorm, m.output_norm);
  mat(ll::kOutput, m.output);
  w.write(path);
}

Model load_gguf(const std::string& path) {
  auto file = std::make_shared<gguf::File>(gguf::File::open(path));
  const Reader r(*file, path);
  const auto& arch = r.key(ll::kArchitecture);
  if (arch.type != gguf::ValueType::String || arch.as_str() != kArch)
    r.fail("architecture '" + (arch.type == gguf::ValueType::String ? arch.as_str() : std::string("?")) +
           "' is not supported: popper's decode forward implements qwen2 (QKV bias, half-split RoPE)");
  Config c;
  c.hidden = r.integer(ll::kEmbeddingLength);
  c.layers = r.integer(ll::kBlockCount);
  c.q_heads = r.integer(ll::kHeadCount);
  c.kv_heads = r.integer(ll::kHeadCountKv);
  c.intermediate = r.integer(ll::kFeedForwardLength);
  c.context = r.integer(ll::kContextLength);
  c.head_dim = c.q_heads > 0 ? c.hidden / c.q_heads : 0;
  if (file->find(ll::arch_key(kArch, "attention.key_length"))) c.head_dim = r.integer("attention.key_length");
  c.rms_eps = r.real(ll::kRmsEpsilon, c.rms_eps);
  c.rope_base = r.real(ll::kRopeFreqBase, 10000.0);
  const auto& embd = r.tensor(ll::kTokenEmbd);
  if (embd.ne.size() != 2) r.fail("tensor 'token_embd.weight' must have 2 dimensions");
  c.vocab = static_cast<std::int64_t>(embd.ne[1]);
  try {
    c.check();
  } catch (const InvalidArgument& e) {
    r.fail(e.what());
  }

  Model m;
  m.config = c;
  m.source = m.file = path;
  const std::int64_t H = c.hidden, Q = c.q_width(), KV = c.kv_width(), I = c.intermediate;
  m.token_embd = r.matrix(ll::kTokenEmbd, c.vocab, H);
  for (int l = 0; l < c.layers; ++l) {
    const Names n = names(l);
    Layer y;
    y.attn_norm = r.vec(n.attn_norm, H);
    y.q = r.matrix(n.q, Q, H), y.k = r.matrix(n.k, KV, H), y.v = r.matrix(n.v, KV, H);
    y.q_bias = r.vec(n.q_bias, Q), y.k_bias = r.vec(n.k_bias, KV), y.v_bias = r.vec(n.v_bias, KV);
    y.o = r.matrix(n.o, H, Q);
    y.ffn_norm = r.vec(n.ffn_norm, H);
    y.gate = r.matrix(n.gate, I, H), y.up = r.matrix(n.up, I, H), y.down = r.matrix(n.down, H, I);
    if (POPPER_MUTANT("decode-gguf-swap-gate-up")) std::swap(y.gate, y.up);  // mutation point
    m.layers.push_back(y);
  }
  m.output_norm = r.vec(ll::kOutputNorm, H);
  // Tied embeddings (Qwen2.5-0.5B has no output.weight): the LM head is token_embd.
  m.output = file->tensor(ll::kOutput) ? r.matrix(ll::kOutput, c.vocab, H) : m.token_embd;
  m.storage = file;
  return m;
}

}  // namespace popper::decode
