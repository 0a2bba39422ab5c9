#include "contract/rules.hpp"

#include <algorithm>

namespace popper::rules {

namespace {
using S = Sev;
// rule, strict code, strict severity, pv code, pv severity, what
const Entry kTable[] = {
    {Rule::UnknownKey, "POP-V010", S::Error, "POP-V043", S::Warning,
     "unknown key (pv: tolerated, except a likely typo of a known key, which stays POP-V010)"},
    {Rule::PvAliasKey, "POP-V017", S::Error, "", S::Off, "pv legacy alias used instead of the key"},
    {Rule::AliasWithKey, "POP-V016", S::Error, "POP-V016", S::Error, "a key and its pv alias in one mapping"},
    {Rule::RequiredStringEmpty, "POP-V013", S::Error, "", S::Off, "required string is blank"},
    {Rule::ObligationIdMissing, "POP-V011", S::Error, "", S::Off, "obligation without id (pv: derived id)"},
    {Rule::ObligationIdFormat, "POP-V025", S::Error, "", S::Off, "obligation id not <PREFIX>-PO-NNN"},
    {Rule::AppliesToUnresolved, "POP-V020", S::Error, "", S::Off,
     "applies_to names no equation and is not all | scalar | simd | converter (pv: free text)"},
    {Rule::HarnessObligationUnresolved, "POP-V021", S::Error, "POP-V044", S::Warning,
     "harness obligation names no obligation (pv: by id, derived id, property text or position)"},
    {Rule::QaCheckUnresolved, "POP-V022", S::Error, "POP-V044", S::Warning,
     "qa_gate check names nothing popper can evaluate"},
    {Rule::CoversUnresolved, "POP-V023", S::Error, "POP-V023", S::Error, "covers names no obligation"},
    {Rule::RequiresUnresolved, "POP-V024", S::Error, "POP-V044", S::Warning, "requires names no obligation"},
    {Rule::CapabilityUnknown, "POP-V026", S::Error, "POP-V026", S::Error, "unknown capability in requires"},
    {Rule::BenchmarkInconsistent, "POP-V027", S::Error, "POP-V027", S::Error,
     "benchmark metric and denominator disagree"},
    {Rule::MutantDuplicate, "POP-V028", S::Error, "POP-V028", S::Error, "mutant id declared twice by one test"},
    {Rule::PhaseUnresolved, "POP-V029", S::Error, "POP-V029", S::Error, "applies_to_phase names no kernel phase"},
    {Rule::DuplicateId, "POP-V030", S::Error, "POP-V030", S::Warning,
     "id used in two contracts of the set (pv scopes ids per contract; popper binds tests by id)"},
    {Rule::DuplicateIdInContract, "POP-V030", S::Error, "POP-V030", S::Error, "id used twice in one contract"},
    {Rule::DuplicateTestId, "POP-V030", S::Error, "PV-SCHEMA-007", S::Error, "falsification test id used twice"},
    {Rule::DuplicateHarnessId, "POP-V030", S::Error, "PV-SCHEMA-010", S::Error, "kani harness id used twice"},
    {Rule::DependsOnMissing, "POP-V031", S::Error, "POP-V031", S::Error, "depends_on names a contract not in the set"},
    {Rule::DependsOnCycle, "POP-V032", S::Error, "POP-V032", S::Error, "depends_on cycle"},
    {Rule::ParentContractMissing, "POP-V033", S::Error, "POP-V033", S::Error,
     "parent_contract names a contract not in the set"},
    {Rule::RequiresOnWrongType, "POP-V034", S::Error, "PV-SCHEMA-014", S::Error,
     "requires on an obligation that is not a postcondition"},
    {Rule::PhaseOnWrongType, "POP-V034", S::Error, "PV-SCHEMA-015", S::Error,
     "applies_to_phase on an obligation that is not loop_invariant or loop_variant"},
    {Rule::ParentOnWrongType, "POP-V034", S::Error, "PV-SCHEMA-016", S::Error,
     "parent_contract on an obligation that is not a subcontract"},
    {Rule::ParentNotInDependsOn, "POP-V035", S::Error, "PV-SCHEMA-017", S::Error,
     "parent_contract missing from metadata.depends_on"},
    {Rule::ObligationUnbacked, "POP-V041", S::Warning, "", S::Off, "obligation backed by no test"},
    {Rule::TestWithoutMutant, "POP-V042", S::Warning, "", S::Off, "falsification test declares no mutant"},
    {Rule::PvReferencesEmpty, "", S::Off, "PV-SCHEMA-001", S::Error, "metadata.references missing or empty"},
    {Rule::PvVersionEmpty, "", S::Off, "PV-SCHEMA-002", S::Error, "metadata.version empty"},
    {Rule::PvNoEquations, "", S::Off, "PV-SCHEMA-003", S::Error, "kernel contract without equations"},
    {Rule::PvFormulaEmpty, "", S::Off, "PV-SCHEMA-004", S::Error, "kernel contract equation without formula"},
    {Rule::PvPropertyEmpty, "", S::Off, "PV-SCHEMA-005", S::Error, "obligation property empty"},
    {Rule::PvDuplicateFormal, "", S::Off, "PV-SCHEMA-006", S::Warning, "two obligations with the same formal"},
    {Rule::PvPredictionEmpty, "", S::Off, "PV-SCHEMA-008", S::Error, "falsification test prediction empty"},
    {Rule::PvIfFailsEmpty, "", S::Off, "PV-SCHEMA-009", S::Warning, "falsification test if_fails empty"},
    {Rule::PvHarnessObligationEmpty, "", S::Off, "PV-SCHEMA-011", S::Error, "kani harness obligation empty"},
    {Rule::PvBoundMissing, "", S::Off, "PV-SCHEMA-012", S::Warning, "kani harness without bound"},
    {Rule::PvNoQaGate, "", S::Off, "PV-SCHEMA-013", S::Warning, "kernel contract without qa_gate"},
    {Rule::PvProvability, "", S::Off, "PV-PROVABILITY-001", S::Error,
     "kernel contract without obligations, tests or harnesses, or with fewer tests than obligations"},
};
static_assert(sizeof(kTable) / sizeof(kTable[0]) == static_cast<std::size_t>(Rule::Count_),
              "every rule has one row in the table");
}  // namespace

const Entry& entry(Rule r) { return kTable[static_cast<std::size_t>(r)]; }
Sev severity(Rule r, Profile p) { return p == Profile::Pv ? entry(r).pv : entry(r).strict; }
const char* code(Rule r, Profile p) { return p == Profile::Pv ? entry(r).pv_code : entry(r).strict_code; }
bool enabled(Rule r, Profile p) { return severity(r, p) != Sev::Off; }

void report(Diagnostics& d, Profile p, Rule r, const SourcePos& pos, std::string message) {
  switch (severity(r, p)) {
    case Sev::Off: return;
    case Sev::Warning: d.warning(code(r, p), pos, std::move(message)); return;
    case Sev::Error: d.error(code(r, p), pos, std::move(message)); return;
  }
}

const Entry* table_begin() { return kTable; }
const Entry* table_end() { return kTable + sizeof(kTable) / sizeof(kTable[0]); }

namespace {
using E = Exit;
const Code kCodes[] = {
    {"POP-V001", E::Usage, "file cannot be read / path does not exist"},
    {"POP-V002", E::Contract, "file over 4 MiB"},
    {"POP-V003", E::Contract, "not text (invalid UTF-8, NUL or control byte)"},
    {"POP-V004", E::Contract, "empty, or only comments"},
    {"POP-V005", E::Contract, "YAML syntax error"},
    {"POP-V006", E::Contract, "over a parsing bound (nesting, nodes, time)"},
    {"POP-V007", E::Contract, "top level is not a mapping"},
    {"POP-V008", E::Contract, "a second YAML document in one file, or more than 64"},
    {"POP-V009", E::Usage, ".popper.yaml unreadable or with an unknown profile"},
    {"POP-V011", E::Contract, "required key missing or without a value"},
    {"POP-V012", E::Contract, "wrong type"},
    {"POP-V014", E::Contract, "value not in the allowed set"},
    {"POP-V015", E::Contract, "duplicate key in one mapping"},
    {"POP-V036", E::Contract, "two contracts with one stem in the set"},
    {"POP-V040", E::Usage, "directory holds no contracts"},
    {"POP-V045", E::Contract, "a pv binding registry, skipped (a warning)"},
    {"POP-M001", E::Contract, "popper migrate: edit refused (file left alone)"},
    {"POP-M002", E::Contract, "popper migrate: reference left as it is"},
};
}  // namespace

const Code* codes_begin() { return kCodes; }
const Code* codes_end() { return kCodes + sizeof(kCodes) / sizeof(kCodes[0]); }

Exit exit_class(std::string_view code) {
  for (const Code* c = codes_begin(); c != codes_end(); ++c)
    if (code == c->code) return c->exit;
  return Exit::Contract;
}

int exit_code(const Diagnostics& d) {
  int worst = 0;
  for (const auto& x : d.all())
    if (x.severity == Severity::Error) worst = std::max(worst, static_cast<int>(exit_class(x.code)));
  return worst;
}

}  // namespace popper::rules
