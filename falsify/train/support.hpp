// What only the training-step falsifiers need: the models a test names and
// the evidence of a step.
#pragma once
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "impl/common/cpu_features.hpp"
#include "popper/binding.hpp"
#include "testbed.hpp"

namespace popper::train::testing {

// A model from a params entry: {preset: tiny} or every Config field.
inline Config model_of(const Params& m) {
  if (m.has("preset")) return testbed::preset(m.string("preset").c_str());
  Config c;
  c.vocab = m.integer("vocab"), c.hidden = m.integer("hidden"), c.layers = m.integer("layers");
  c.q_heads = m.integer("q_heads"), c.kv_heads = m.integer("kv_heads"), c.head_dim = m.integer("head_dim");
  c.intermediate = m.integer("intermediate"), c.seq = m.integer("seq"), c.batch = m.integer("batch");
  return c;
}

// The hand step on every ISA this CPU runs (Auto first; the narrower ones when forced paths are
// allowed), the wrapped step on Auto.
struct Variant {
  Backend backend;
  cpu::Isa isa;
};
// The ISAs the hand kernels run here: Auto, then the narrower ones when forced paths are allowed.
inline std::vector<cpu::Isa> hand_isas() {
  std::vector<cpu::Isa> out{cpu::Isa::Auto};
  if (popper::forced_paths_allowed())
    for (const auto isa : cpu::supported_isas())
      if (isa != cpu::auto_isa()) out.push_back(isa);
  return out;
}
inline std::vector<Variant> variants() {
  std::vector<Variant> v{{Backend::Hand, cpu::Isa::Auto}, {Backend::Wrapped, cpu::Isa::Auto}};
  for (const auto isa : hand_isas())
    if (isa != cpu::Isa::Auto) v.push_back({Backend::Hand, isa});
  return v;
}
// Evidence of a judged call: what `tag` ran on, forced unless Auto chose it.
inline void record(const std::string& tag, cpu::Isa requested) {
  const bool forced = requested != cpu::Isa::Auto || cpu::auto_isa_overridden();
  popper::record_backend(tag, forced ? popper::Dispatch::Forced : popper::Dispatch::Auto);
}
inline void record(const Step& s, cpu::Isa requested) { record(s.backend_tag(), requested); }

}  // namespace popper::train::testing
