// The canary model: dimension rules, deterministic weights, faults (model.hpp).
#include "impl/decode/model.hpp"

#include <cmath>
#include <cstring>
#include <string>

#include "impl/common/parallel.hpp"
#include "popper/error.hpp"
#include "popper/mutant.hpp"

namespace popper::decode {

namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw InvalidArgument("decode model: " + what);
}

std::uint64_t splitmix(std::uint64_t& s) {
  std::uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
double uniform01(std::uint64_t& s) { return static_cast<double>(splitmix(s) >> 11) * 0x1p-53; }

// Every Q4_K matrix of the model, the embedding first when asked.
template <class M, class F>
void for_each_matrix(M& m, bool with_embedding, F f) {
  if (with_embedding) f(m.token_embd);
  for (auto& l : m.layers)
    for (auto* w : {&l.q, &l.k, &l.v, &l.o, &l.gate, &l.up, &l.down}) f(*w);
  f(m.output);
}

// Storage of a generated model: reserved once, so the spans never move.
struct Arena {
  std::vector<q4k::Block> blocks;
  std::vector<float> floats;
  std::shared_ptr<const void> base;  // storage the model still borrows from (with_fault)
};

// Blocks of a rows x cols matrix with weight standard deviation `sigma`:
// sub-block j has scale sc_j in 4..8 and min m_j = round(7.5 sc_j), with
// dmin = d, so w = d sc_j (q - 7.5) + d (7.5 sc_j - m_j) is centred; the codes
// q are uniform in 0..15, so Var w = d^2 E[sc^2] 255/12 = 807.5 d^2, and each
// block's d is sigma / sqrt(807.5) times a factor in [0.75, 1.25]. Row r draws
// from its own stream, so the result does not depend on the thread count.
void fill_matrix(std::span<q4k::Block> out, std::int64_t rows, std::int64_t cols, double sigma, std::uint64_t seed,
                 int threads) {
  const std::int64_t per_row = cols / q4k::kBlockWeights;
  parallel::run(static_cast<std::size_t>(rows), threads, [&](std::size_t begin, std::size_t end, int) {
    for (std::size_t r = begin; r < end; ++r) {
      std::uint64_t s = seed ^ (0xD1B54A32D192ED03ull * (r + 1));
      for (std::int64_t b = 0; b < per_row; ++b) {
        q4k::Block& blk = out[r * static_cast<std::size_t>(per_row) + static_cast<std::size_t>(b)];
        const double d = sigma / std::sqrt(807.5) * (0.75 + 0.5 * uniform01(s));
        blk.d = blk.dmin = q4k::float_to_fp16(static_cast<float>(d));
        std::uint8_t sc[q4k::kSubBlocks], mn[q4k::kSubBlocks];
        for (int j = 0; j < q4k::kSubBlocks; ++j) {
          sc[j] = static_cast<std::uint8_t>(4 + splitmix(s) % 5);
          mn[j] = static_cast<std::uint8_t>(std::lround(7.5 * sc[j]));
        }
        q4k::pack_scales_mins(sc, mn, blk.scales);
        for (int i = 0; i < q4k::kBlockWeights / 2; i += 8) {
          const std::uint64_t bits = splitmix(s);
          std::memcpy(blk.qs + i, &bits, 8);
        }
      }
    }
  });
}

}  // namespace

void Config::check() const {
  const auto name = [](const char* n, std::int64_t v) { return std::string(n) + " = " + std::to_string(v); };
  require(hidden > 0 && hidden % q4k::kBlockWeights == 0,
          name("hidden", hidden) + " must be a positive multiple of 256 (the Q4_K super-block)");
  require(layers >= 1, name("layers", layers) + " must be >= 1");
  require(q_heads >= 1 && kv_heads >= 1 && q_heads % kv_heads == 0,
          "q_heads = " + std::to_string(q_heads) + ", kv_heads = " + std::to_string(kv_heads) +
              ": both >= 1 and q_heads a multiple of kv_heads (GQA groups)");
  require(head_dim >= 2 && head_dim % 2 == 0, name("head_dim", head_dim) + " must be even (RoPE pairs)");
  require(q_width() % q4k::kBlockWeights == 0,
          "q_heads * head_dim = " + std::to_string(q_width()) + " must be a multiple of 256 (W_o's columns)");
  require(intermediate > 0 && intermediate % q4k::kBlockWeights == 0,
          name("intermediate", intermediate) + " must be a positive multiple of 256 (W_down's columns)");
  require(vocab >= 1, name("vocab", vocab) + " must be >= 1");
  require(context >= 1, name("context", context) + " must be >= 1");
  require(rms_eps > 0 && std::isfinite(rms_eps), "rms_eps must be positive and finite");
  require(rope_base > 1 && std::isfinite(rope_base), "rope_base must be > 1 and finite");
}

Config canary_config() { return Config{}; }

Config small_config() {
  Config c;
  c.hidden = 256;
  c.layers = 4;
  c.q_heads = 4;
  c.kv_heads = 2;
  c.head_dim = 64;
  c.intermediate = 768;
  c.vocab = 2048;
  c.context = 64;
  return c;
}

std::uint64_t Model::bytes_per_token() const {
  std::uint64_t bytes = 0;
  for_each_matrix(*this, false, [&](const Weight& w) { bytes += q4k::matrix_bytes(w.rows, w.cols); });
  bytes += q4k::matrix_bytes(1, token_embd.cols);
  std::uint64_t floats = output_norm.size();
  for (const auto& l : layers)
    floats += l.attn_norm.size() + l.ffn_norm.size() + l.q_bias.size() + l.k_bias.size() + l.v_bias.size();
  return bytes + floats * sizeof(float);
}

Model make_canary(const Config& c, std::uint64_t seed, int threads) {
  c.check();
  require(threads >= 1, "threads must be >= 1");
  const std::int64_t H = c.hidden, Q = c.q_width(), KV = c.kv_width(), I = c.intermediate, L = c.layers;
  const auto blocks_of = [](std::int64_t rows, std::int64_t cols) {
    return static_cast<std::size_t>(rows * (cols / 256));
  };
  auto arena = std::make_shared<Arena>();
  arena->blocks.reserve(blocks_of(c.vocab, H) * 2 +
                        static_cast<std::size_t>(L) * (blocks_of(Q, H) + 2 * blocks_of(KV, H) + blocks_of(H, Q) +
                                                       2 * blocks_of(I, H) + blocks_of(H, I)));
  arena->floats.reserve(static_cast<std::size_t>(H + L * (2 * H + Q + 2 * KV)));

  std::uint64_t stream = seed;
  const auto matrix = [&](std::int64_t rows, std::int64_t cols, double sigma) {
    const std::size_t at = arena->blocks.size();
    arena->blocks.resize(at + blocks_of(rows, cols));
    const std::span<q4k::Block> out(arena->blocks.data() + at, blocks_of(rows, cols));
    fill_matrix(out, rows, cols, sigma, splitmix(stream), threads);
    return Weight{rows, cols, out};
  };
  const auto floats = [&](std::int64_t n, double centre, double spread) {
    const std::size_t at = arena->floats.size();
    std::uint64_t s = splitmix(stream);
    for (std::int64_t i = 0; i < n; ++i)
      arena->floats.push_back(static_cast<float>(centre + spread * (2 * uniform01(s) - 1)));
    return std::span<const float>(arena->floats.data() + at, static_cast<std::size_t>(n));
  };

  Model m;
  m.config = c;
  m.source = "canary (seed " + std::to_string(seed) + ")";
  const double in_h = 1 / std::sqrt(static_cast<double>(H)), residual = 1 / std::sqrt(2.0 * static_cast<double>(L));
  m.token_embd = matrix(c.vocab, H, 1.0);
  for (std::int64_t l = 0; l < L; ++l) {
    Layer y;
    y.attn_norm = floats(H, 1.0, 0.1);
    y.q = matrix(Q, H, in_h);
    y.k = matrix(KV, H, in_h);
    y.v = matrix(KV, H, in_h);
    y.q_bias = floats(Q, 0, 0.02);
    y.k_bias = floats(KV, 0, 0.02);
    y.v_bias = floats(KV, 0, 0.02);
    y.o = matrix(H, Q, residual / std::sqrt(static_cast<double>(Q)));
    y.ffn_norm = floats(H, 1.0, 0.1);
    y.gate = matrix(I, H, in_h);
    y.up = matrix(I, H, in_h);
    y.down = matrix(H, I, residual / std::sqrt(static_cast<double>(I)));
    m.layers.push_back(y);
  }
  m.output_norm = floats(H, 1.0, 0.1);
  m.output = matrix(c.vocab, H, in_h);
  m.storage = arena;
  return m;
}

std::vector<std::int32_t> canary_tokens(const Config& c, int count, std::uint64_t seed) {
  require(count >= 1 && count <= c.context,
          "token count " + std::to_string(count) + " must be in [1, context = " + std::to_string(c.context) + "]");
  std::uint64_t s = seed ^ 0x7F4A7C15ull;
  std::vector<std::int32_t> t;
  for (int i = 0; i < count; ++i)
    t.push_back(static_cast<std::int32_t>(splitmix(s) % static_cast<std::uint64_t>(c.vocab)));
  return t;
}

const char* to_string(Fault f) {
  switch (f) {
    case Fault::None: return "none";
    case Fault::ZeroScale: return "zero-scale";
    case Fault::ReverseSubBlocks: return "reverse-subblocks";
  }
  return "?";
}

Fault parse_fault(const std::string& name) {
  for (Fault f : {Fault::None, Fault::ZeroScale, Fault::ReverseSubBlocks})
    if (name == to_string(f)) return f;
  throw InvalidArgument("unknown fault '" + name + "' (none, zero-scale, reverse-subblocks)");
}

Model with_fault(const Model& m, Fault f) {
  // Mutation point (decode-fault-not-applied): the switch that does nothing.
  if (f == Fault::None || POPPER_MUTANT("decode-fault-not-applied")) return m;
  auto arena = std::make_shared<Arena>();
  arena->base = m.storage;
  std::size_t total = 0;
  for_each_matrix(m, false, [&](const Weight& w) { total += w.blocks.size(); });
  arena->blocks.reserve(total);
  Model out = m;
  for_each_matrix(out, false, [&](Weight& w) {
    const std::size_t at = arena->blocks.size();
    arena->blocks.insert(arena->blocks.end(), w.blocks.begin(), w.blocks.end());
    for (std::size_t b = at; b < arena->blocks.size(); ++b) {
      q4k::Block& blk = arena->blocks[b];
      std::uint8_t sc[q4k::kSubBlocks], mn[q4k::kSubBlocks];
      for (int j = 0; j < q4k::kSubBlocks; ++j) {
        const auto sm = q4k::unpack_scale_min(blk.scales, j);
        sc[j] = sm.scale, mn[j] = sm.min;
      }
      if (f == Fault::ZeroScale) sc[0] = 0;
      else
        for (int j = 0; j < q4k::kSubBlocks / 2; ++j) std::swap(sc[j], sc[7 - j]), std::swap(mn[j], mn[7 - j]);
      q4k::pack_scales_mins(sc, mn, blk.scales);
    }
    w.blocks = std::span<const q4k::Block>(arena->blocks.data() + at, w.blocks.size());
  });
  out.storage = arena;
  out.source = m.source + " with fault " + to_string(f);
  out.file.clear();
  return out;
}

Model truncated(const Model& m, int layers) {
  require(layers >= 1 && layers <= static_cast<int>(m.layers.size()),
          "truncated: layers must be in [1, " + std::to_string(m.layers.size()) + "]");
  Model out = m;
  out.layers.resize(static_cast<std::size_t>(layers));
  out.config.layers = layers;
  out.source = m.source + " cut after " + std::to_string(layers) + " layers";
  out.file.clear();
  return out;
}

}  // namespace popper::decode
