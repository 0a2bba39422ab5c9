// The contract model from a schema-checked YAML root, and the obligation ids
// popper derives for pv contracts (which have none).
#pragma once
#include <string>

#include <yaml-cpp/yaml.h>

#include "popper/contract.hpp"

namespace popper::model {

// Reads every key popper uses, through pv's aliases; under pv, a missing
// obligation `type` reads as invariant (pv's default) and obligations without
// an id get a derived one.
Contract build(const YAML::Node& root, const std::string& file, Profile profile);

// "rmsnorm-kernel-v1" -> "RMSNORM-KERNEL-V1": a valid id prefix from a file stem.
std::string stem_prefix(const std::string& stem);

// The prefix this contract's obligation ids use: the one all its explicit
// <PREFIX>-PO-NNN ids share, else the stem's.
std::string obligation_prefix(const Contract& c);

// The id popper gives (pv) or suggests (strict) for obligation `index`, which
// has none: <prefix>-PO-<index+1, 3 digits>, or the next free number when that
// one is taken. `popper migrate` writes exactly these ids.
std::string suggested_obligation_id(const Contract& c, std::size_t index);

// Fills in derived ids for every obligation without one (pv profile).
void assign_derived_ids(Contract& c);

}  // namespace popper::model
