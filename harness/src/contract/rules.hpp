// The table of differences between the strict and pv profiles, for the
// rules the loader applies after the schema walk. Each rule has a code and a
// severity per profile (Off: the profile does not apply it). Key-level
// differences (which keys are required, pv's aliases) are attributes of the
// schema table in schema.cpp. contracts/SCHEMA.md shows both tables.
//
// Beside it, the codes reported directly (reading, parsing, the schema walk,
// the set, migrate), each with its exit class: every command's exit status
// comes from these two tables through exit_code().
#pragma once
#include <string>
#include <string_view>

#include "popper/diagnostics.hpp"
#include "popper/profile.hpp"

namespace popper::rules {

enum class Sev { Off, Warning, Error };

enum class Rule {
  UnknownKey,           // a key the schema does not know
  PvAliasKey,           // a pv legacy alias (statement, fails_if, ...) instead of the key
  AliasWithKey,         // both an alias and its key in one mapping
  RequiredStringEmpty,  // a required string that is blank
  ObligationIdMissing,  // an obligation without id (pv: a derived id is given)
  ObligationIdFormat,   // an id not of the form <PREFIX>-PO-NNN
  AppliesToUnresolved,  // applies_to names no equation (nor all/scalar/simd/converter)
  HarnessObligationUnresolved,
  QaCheckUnresolved,
  CoversUnresolved,
  RequiresUnresolved,  // obligation `requires` names no obligation
  CapabilityUnknown,
  BenchmarkInconsistent,
  MutantDuplicate,
  PhaseUnresolved,        // applies_to_phase names no kernel_structure phase
  DuplicateId,            // an id used in two contracts of the set (pv scopes ids per contract)
  DuplicateIdInContract,  // an obligation or benchmark id used twice in one contract
  DuplicateTestId,        // a falsification test id used twice in one contract
  DuplicateHarnessId,     // a harness id used twice in one contract
  DependsOnMissing,
  DependsOnCycle,
  ParentContractMissing,  // parent_contract names a contract not in the set
  RequiresOnWrongType,    // `requires` on a type other than postcondition
  PhaseOnWrongType,       // `applies_to_phase` on a type other than loop_invariant / loop_variant
  ParentOnWrongType,      // `parent_contract` on a type other than subcontract
  ParentNotInDependsOn,
  ObligationUnbacked,
  TestWithoutMutant,
  // pv's own rules (provable-contracts schema/validator.rs), pv profile only.
  PvReferencesEmpty,         // SCHEMA-001
  PvVersionEmpty,            // SCHEMA-002
  PvNoEquations,             // SCHEMA-003 (kernel contracts)
  PvFormulaEmpty,            // SCHEMA-004 (kernel contracts)
  PvPropertyEmpty,           // SCHEMA-005
  PvDuplicateFormal,         // SCHEMA-006
  PvPredictionEmpty,         // SCHEMA-008
  PvIfFailsEmpty,            // SCHEMA-009
  PvHarnessObligationEmpty,  // SCHEMA-011
  PvBoundMissing,            // SCHEMA-012
  PvNoQaGate,                // SCHEMA-013 (kernel contracts)
  PvProvability,             // PROVABILITY-001 (kernel and competitive-parity contracts)
  Count_
};

struct Entry {
  Rule rule;
  const char* strict_code;
  Sev strict;
  const char* pv_code;
  Sev pv;
  const char* what;  // one line, for SCHEMA.md and `popper validate --rules`
};

const Entry& entry(Rule r);
Sev severity(Rule r, Profile p);
const char* code(Rule r, Profile p);
bool enabled(Rule r, Profile p);

// Reports `message` under the rule's code and severity for profile p (nothing when Off).
void report(Diagnostics& d, Profile p, Rule r, const SourcePos& pos, std::string message);

// The whole table, for documentation.
const Entry* table_begin();
const Entry* table_end();

// What an error means for the command that reported it.
enum class Exit {
  Contract = 1,  // a contract is defective
  Usage = 2,     // the command's input is: a path that cannot be read, a folder without contracts, a bad .popper.yaml
};

// A code reported directly, not through a Rule.
struct Code {
  const char* code;
  Exit exit;
  const char* what;  // one line, as in contracts/SCHEMA.md
};
const Code* codes_begin();
const Code* codes_end();

// The exit class of an error under `code`: the direct codes' table says; a
// rule's code (either table above) is a contract defect.
Exit exit_class(std::string_view code);

// The exit status of a command whose findings are `d`: 2 when an error is of
// class Usage, 1 when any other error is, 0 with warnings only or none.
int exit_code(const Diagnostics& d);

}  // namespace popper::rules
