// Shapes of the decode family: the parity gate's canary model
// (impl/decode/model.hpp) decoding a prompt of `tokens` tokens one at a time
// from an empty KV cache, as the gate runs it. "gate" shapes are small enough
// for the callgrind gate; "full" is the canary itself (253 MB of Q4_K weights
// read per token, far above any cache of a 2-core machine).
#pragma once
#include "impl/decode/model.hpp"

struct popper_decode_shape {
  const char* name;
  bool canary;  // canary_config(), else small_config()
  int tokens;
  const char* set;  // "gate" or "full"
  popper::decode::Config config() const {
    return canary ? popper::decode::canary_config() : popper::decode::small_config();
  }
};

inline constexpr popper_decode_shape POPPER_DECODE_SHAPES[] = {
    {"gate_small_t4", false, 4, "gate"},
    {"canary_t8", true, 8, "full"},
};
inline constexpr std::uint64_t POPPER_DECODE_SEED = 20261123;
