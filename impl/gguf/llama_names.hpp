// Tensor names and metadata keys as llama.cpp writes and reads them
// (llama.cpp src/llama-arch.cpp at the pinned version), so a file popper writes
// loads in llama.cpp and a user's own model loads in popper.
#pragma once
#include <string>

namespace popper::gguf::llama {

inline constexpr const char* kArchitecture = "general.architecture";  // e.g. "qwen2", "llama"
inline constexpr const char* kName = "general.name";
inline constexpr const char* kAlignment = "general.alignment";
inline constexpr const char* kFileType = "general.file_type";                        // llama_ftype (u32)
inline constexpr const char* kQuantizationVersion = "general.quantization_version";  // u32, 2 for k-quants

// LLAMA_FTYPE_MOSTLY_Q4_K_S / _M in llama.h.
inline constexpr unsigned kFileTypeQ4KS = 14;
inline constexpr unsigned kFileTypeQ4KM = 15;
inline constexpr unsigned kQuantizationVersionK = 2;

// "<arch>.<suffix>" keys.
inline std::string arch_key(const std::string& arch, const char* suffix) { return arch + "." + suffix; }
inline constexpr const char* kContextLength = "context_length";
inline constexpr const char* kEmbeddingLength = "embedding_length";
inline constexpr const char* kBlockCount = "block_count";
inline constexpr const char* kFeedForwardLength = "feed_forward_length";
inline constexpr const char* kHeadCount = "attention.head_count";
inline constexpr const char* kHeadCountKv = "attention.head_count_kv";
inline constexpr const char* kRmsEpsilon = "attention.layer_norm_rms_epsilon";
inline constexpr const char* kRopeFreqBase = "rope.freq_base";
inline constexpr const char* kVocabSize = "vocab_size";  // read when the tokenizer model is "none"

// Tokenizer keys (llama-vocab).
inline constexpr const char* kTokenizerModel = "tokenizer.ggml.model";  // "gpt2", "llama", ... "none": ids only
inline constexpr const char* kTokenizerPre = "tokenizer.ggml.pre";
inline constexpr const char* kTokens = "tokenizer.ggml.tokens";
inline constexpr const char* kTokenTypes = "tokenizer.ggml.token_type";
inline constexpr const char* kMerges = "tokenizer.ggml.merges";
inline constexpr const char* kBosId = "tokenizer.ggml.bos_token_id";
inline constexpr const char* kEosId = "tokenizer.ggml.eos_token_id";

// Tensor names.
inline constexpr const char* kTokenEmbd = "token_embd.weight";
inline constexpr const char* kOutputNorm = "output_norm.weight";
inline constexpr const char* kOutput = "output.weight";
// "blk.<layer>.<part>.<kind>", part e.g. "attn_q", kind "weight" or "bias".
inline std::string block_tensor(int layer, const char* part, const char* kind = "weight") {
  return "blk." + std::to_string(layer) + "." + part + "." + kind;
}
inline constexpr const char* kAttnNorm = "attn_norm";
inline constexpr const char* kAttnQ = "attn_q";
inline constexpr const char* kAttnK = "attn_k";
inline constexpr const char* kAttnV = "attn_v";
inline constexpr const char* kAttnOut = "attn_output";
inline constexpr const char* kFfnNorm = "ffn_norm";
inline constexpr const char* kFfnGate = "ffn_gate";
inline constexpr const char* kFfnUp = "ffn_up";
inline constexpr const char* kFfnDown = "ffn_down";

}  // namespace popper::gguf::llama
