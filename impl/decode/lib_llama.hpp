// llama.cpp as a parity subject (contracts/decode/multi-backend-parity-v1.yaml):
// popper's C++ API over the pinned libllama (cmake/PopperGgml.cmake), which
// runs a qwen2 GGUF, unmodified, on one of ggml's devices.
//
//   Session(path, device).logits(tokens)
//     = llama.cpp's logits after the last token, the tokens decoded one at a
//       time from an empty KV cache (the same decode steps as popper's forward);
//       the session keeps its llama.cpp context between calls, as a server does
//
// llama.cpp runs as it serves by default: activations quantized to Q8_K
// before each Q4_K dot product on the CPU, an F16 KV cache, flash attention
// where the device has it. Those choices are the runtime's, and they are what
// the gate measures. llama.cpp's own log goes to stderr: errors only, or all
// of it with POPPER_LLAMA_LOG=1.
//
// Devices: ggml-cpu (the CPU variant q4k/lib_ggml.hpp loads), ggml-vulkan
// (libggml-vulkan.so of the vulkan package; ggml skips CPU-type Vulkan
// devices such as lavapipe unless GGML_VK_VISIBLE_DEVICES is set, so popper
// sets it to "0" when the user has not), ggml-cuda (libggml-cuda.so of the
// cuda package, where installed and a CUDA device is present).
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace popper::decode::llama {

enum class Device { Cpu, Vulkan, Cuda };
const char* to_string(Device d);  // "ggml-cpu" "ggml-vulkan" "ggml-cuda"

// Empty when llama.cpp can run on `d` here; otherwise why not ("requires
// ggml: ...", "requires vulkan: ...", "requires cuda: ..."). Probed once per
// device and process.
std::string unavailable_reason(Device d);

class Session {
 public:
  // Loads the GGUF at `path` with every layer on `d`. Throws Unsupported when
  // the device is unavailable, popper::Error when llama.cpp refuses the file
  // (its own message is on stderr).
  Session(const std::string& path, Device d, int threads);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  std::int64_t vocab() const;
  // Throws InvalidArgument for an empty prompt or an id outside [0, vocab),
  // popper::Error when a decode fails.
  std::vector<float> logits(std::span<const std::int32_t> tokens);
  // What ran: "ggml-cpu:zen4", "ggml-vulkan:llvmpipe".
  const std::string& evidence() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace popper::decode::llama
