// The model's shape rules, parameter layout and initialisation, the synthetic
// copy task, and the input checks every entry runs before writing anything.
#include <cmath>
#include <string>

#include "impl/common/parallel.hpp"
#include "impl/fused/fused.hpp"
#include "impl/train/train.hpp"
#include "popper/error.hpp"
#include "popper/mutant.hpp"

namespace popper::train {

namespace {
void require(bool ok, const std::string& what) {
  if (!ok) throw InvalidArgument(what);
}

// splitmix64: the one generator of parameters and batches (seeded, portable).
struct Rng {
  std::uint64_t z;
  std::uint64_t next() {
    std::uint64_t r = (z += 0x9E3779B97F4A7C15ull);
    r = (r ^ (r >> 30)) * 0xBF58476D1CE4E5B9ull;
    r = (r ^ (r >> 27)) * 0x94D049BB133111EBull;
    return r ^ (r >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
};
}  // namespace

void Config::check() const {
  for (const auto& [v, name] : {std::pair{vocab, "vocab"},
                                {hidden, "hidden"},
                                {layers, "layers"},
                                {q_heads, "q_heads"},
                                {kv_heads, "kv_heads"},
                                {head_dim, "head_dim"},
                                {intermediate, "intermediate"},
                                {seq, "seq"},
                                {batch, "batch"}})
    require(v >= 1, std::string("train: ") + name + " must be >= 1 (got " + std::to_string(v) + ")");
  require(q_heads % kv_heads == 0, "train: q_heads must be a multiple of kv_heads (GQA)");
  require(head_dim % 2 == 0, "train: head_dim must be even (half-split RoPE)");
  require(q_width() == hidden, "train: hidden must equal q_heads * head_dim");
  require(std::isfinite(rms_eps) && rms_eps > 0, "train: rms_eps must be finite and > 0");
  require(rope_base > 1, "train: rope_base must be > 1");
  const std::int64_t lim = std::int64_t{1} << 31;
  for (const std::int64_t width : {hidden, intermediate, vocab})
    require(tokens() <= lim / width && vocab <= lim / hidden && intermediate <= lim / hidden,
            "train: a tensor would exceed 2^31 elements");
}

const std::vector<std::string>& brick_names() {
  static const std::vector<std::string> n{"gemm_forward",  "gemm_backward", "attention", "elementwise",
                                          "cross_entropy", "embedding",     "optimizer", "overhead"};
  return n;
}

const char* to_string(Backend b) { return b == Backend::Hand ? "hand" : "wrapped"; }

ParamLayout::ParamLayout(const Config& c) {
  c.check();
  auto add = [&](std::string name, std::int64_t rows, std::int64_t cols, bool decay) {
    const std::size_t at = total;
    tensors.push_back(Tensor{std::move(name), at, rows, cols, decay});
    total += (static_cast<std::size_t>(rows * cols) + 15) / 16 * 16;
    if (rows > 1 && tensors.size() > 1) matmul_params += rows * cols;  // every matrix but the embedding
    return at;
  };
  embed = add("embed", c.vocab, c.hidden, true);
  const std::int64_t H = c.hidden, Q = c.q_width(), K = c.kv_width(), I = c.intermediate;
  for (std::int64_t l = 0; l < c.layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    LayerTensors t{};
    t.attn_norm = add(p + "attn_norm", 1, H, false);
    t.wq = add(p + "wq", Q, H, true), t.bq = add(p + "bq", 1, Q, false);
    t.wk = add(p + "wk", K, H, true), t.bk = add(p + "bk", 1, K, false);
    t.wv = add(p + "wv", K, H, true), t.bv = add(p + "bv", 1, K, false);
    t.wo = add(p + "wo", H, Q, true);
    t.ffn_norm = add(p + "ffn_norm", 1, H, false);
    t.w_gate = add(p + "w_gate", I, H, true), t.w_up = add(p + "w_up", I, H, true);
    t.w_down = add(p + "w_down", H, I, true);
    layers.push_back(t);
  }
  final_norm = add("final_norm", 1, H, false);
  lm_head = add("lm_head", c.vocab, H, true);
}

std::vector<float> init_params(const Config& c, std::uint64_t seed) {
  const ParamLayout layout(c);
  std::vector<float> p(layout.total, 0.0f);
  Rng rng{seed * 0x2545F4914F6CDD1Dull + 1};
  const double out_scale = 1.0 / std::sqrt(2.0 * static_cast<double>(c.layers));
  for (const Tensor& t : layout.tensors) {
    const bool is_norm = t.name.find("norm") != std::string::npos;
    const bool is_bias = t.rows == 1 && !is_norm;
    double half_width;  // of the uniform distribution
    if (is_norm) half_width = 0;
    else if (is_bias) half_width = 0.02;
    else if (t.name == "embed") half_width = 1.0;
    else half_width = std::sqrt(3.0 / static_cast<double>(t.cols));  // sd 1/sqrt(in)
    if (t.name.ends_with(".wo") || t.name.ends_with(".w_down")) half_width *= out_scale;
    for (std::size_t i = 0; i < t.size(); ++i)
      p[t.offset + i] = is_norm ? 1.0f : static_cast<float>(half_width * (2 * rng.uniform() - 1));
  }
  return p;
}

// Row r: positions [0, S/2) random tokens in [1, V), positions [S/2, S) a copy
// of them; position i predicts token i+1, labelled where that token is a copy
// (i >= S/2 - 1), so a model that learns to attend S/2 - 1 positions back can
// drive the loss to 0, while the unlabelled first half is unpredictable.
Batch copy_task_batch(const Config& c, std::uint64_t seed, std::int64_t index) {
  c.check();
  require(c.seq >= 2 && c.vocab >= 2, "train: the copy task needs seq >= 2 and vocab >= 2");
  Rng rng{(seed + 1) * 0x9E3779B97F4A7C15ull ^ static_cast<std::uint64_t>(index) * 0xD1B54A32D192ED03ull};
  Batch b;
  const std::int64_t S = c.seq, half = S / 2;
  b.tokens.resize(static_cast<std::size_t>(c.tokens()));
  b.labels.assign(b.tokens.size(), kIgnore);
  for (std::int64_t r = 0; r < c.batch; ++r) {
    std::int64_t* tok = b.tokens.data() + r * S;
    for (std::int64_t i = 0; i < half; ++i)
      tok[i] = 1 + static_cast<std::int64_t>(rng.next() % static_cast<std::uint64_t>(c.vocab - 1));
    for (std::int64_t i = half; i < S; ++i) tok[i] = tok[i - half];
    for (std::int64_t i = std::max<std::int64_t>(half - 1, 0); i + 1 < S; ++i)
      b.labels[static_cast<std::size_t>(r * S + i)] = tok[i + 1];
  }
  return b;
}

void check_batch(const Config& c, std::span<const std::int64_t> tokens, std::span<const std::int64_t> labels) {
  require(c.tokens() >= 1, "train: zero-length batch (batch * seq = 0)");
  require(!tokens.empty(), "train: zero-length batch (no tokens)");
  require(
      tokens.size() == static_cast<std::size_t>(c.tokens()),
      "train: tokens has " + std::to_string(tokens.size()) + " entries, batch * seq = " + std::to_string(c.tokens()));
  require(labels.size() == tokens.size(),
          "train: labels has " + std::to_string(labels.size()) + " entries, tokens " + std::to_string(tokens.size()));
  const std::int64_t vocab_limit = POPPER_MUTANT("train-token-check-off-by-one") ? c.vocab + 1 : c.vocab;
  for (std::size_t i = 0; i < tokens.size(); ++i)
    require(tokens[i] >= 0 && tokens[i] < vocab_limit, "train: token " + std::to_string(tokens[i]) + " at position " +
                                                           std::to_string(i) + " is outside the vocabulary [0, " +
                                                           std::to_string(c.vocab) + ")");
  bool any = false;
  for (std::size_t i = 0; i < labels.size(); ++i) {
    require(labels[i] == kIgnore || (labels[i] >= 0 && labels[i] < c.vocab),
            "train: label " + std::to_string(labels[i]) + " at position " + std::to_string(i) + " is neither in [0, " +
                std::to_string(c.vocab) + ") nor the ignore index " + std::to_string(kIgnore));
    any |= labels[i] != kIgnore;
  }
  require(any, "train: every label is the ignore index: nothing to learn from");
}

void check_finite(const ParamLayout& layout, std::span<const float> values, const char* what, int threads, cpu::Isa isa,
                  std::span<const char> skip) {
  require(values.size() >= layout.total, std::string("train: ") + what + " has " + std::to_string(values.size()) +
                                             " elements, the layout needs " + std::to_string(layout.total));
  require(skip.empty() || skip.size() == layout.tensors.size(),
          "train: check_finite's skip list has " + std::to_string(skip.size()) + " entries, the layout " +
              std::to_string(layout.tensors.size()) + " tensors");
  // A parallel scan for the first bad tensor; the message is built only on failure.
  const std::size_t n = layout.tensors.size();
  std::vector<char> bad(n, 0);
  // Threads only past 1M values (a scan of fewer is faster than waking a worker).
  parallel::run(n, values.size() > (1u << 20) ? threads : 1, [&](std::size_t b, std::size_t e, int) {
    for (std::size_t t = b; t < e; ++t)
      bad[t] = (skip.empty() || !skip[t]) &&
               !fused::all_finite(values.subspan(layout.tensors[t].offset, layout.tensors[t].size()), isa);
  });
  for (std::size_t t = 0; t < n; ++t)
    if (bad[t]) {
      const Tensor& T = layout.tensors[t];
      std::size_t i = 0;
      while (i < T.size() && std::isfinite(values[T.offset + i])) ++i;
      throw InvalidArgument(std::string("train: ") + what + " " + T.name + "[" + std::to_string(i) +
                            "] is not finite (" + std::to_string(values[T.offset + i]) + "): refused, nothing written");
    }
}

}  // namespace popper::train
