// The checks that follow the schema walk, on the contract model. Each reports
// through the rule table (rules.hpp), so one call serves both profiles.
#pragma once
#include "popper/contract.hpp"
#include "popper/diagnostics.hpp"

namespace popper::checks {

// References inside one contract: ids, applies_to, harness obligations,
// covers, requires, applies_to_phase, qa_gate checks, capabilities, mutants,
// benchmarks. Under pv, harness obligations resolved by property text or
// position are rewritten in the model to the obligation's id.
void references(Contract& c, Diagnostics& diags);

// pv's own rules (PV-SCHEMA-001..017, PV-PROVABILITY-001); off under strict.
void pv_rules(const Contract& c, Diagnostics& diags);

}  // namespace popper::checks
